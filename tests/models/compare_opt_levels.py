#!/usr/bin/python3
"""Checks that an optimisation level keeps a model's outputs: runs `kiln run -O0`
and `kiln run -O<level>` on the same seeded inputs (interpreter against
interpreter) and compares every output within the tolerance the level's
passes document (the sum of their PassInfo tolerances). Prints the per-pass
report first, so the log shows which passes changed the IR.

    compare_opt_levels.py --kiln KILN --model M.onnx [--level 3] [--work DIR]

Detector outputs (boxes/scores/labels) use the same matching rule as the
ONNX Runtime comparison (compare_with_ort.py). Exits 1 on a mismatch.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zoo  # noqa: E402
from compare_with_ort import match_detections, relative_error  # noqa: E402


def kiln_json(kiln, *args):
    out = subprocess.run([kiln, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kiln {' '.join(args)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--level", type=int, default=3)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    name = os.path.splitext(os.path.basename(args.model))[0]
    work = args.work or os.path.join(os.getcwd(), f"opt_{name}")
    spec = zoo.zoo_spec_for(args.model) or {}

    catalogue = {p["name"]: p for p in kiln_json(args.kiln, "passes", "list", "--json")}
    report = kiln_json(args.kiln, "passes", "run", args.model, f"-O{args.level}", "--json")
    tolerance = sum(catalogue[p["pass"]]["tolerance"] for p in report["passes"])
    changed = [p["pass"] for p in report["passes"] if p["changed"]]
    print(f"{name}: -O{args.level} = {report['pipeline']} ({report['total_ms']:.1f} ms)")
    print(f"{name}: changed the IR: {', '.join(changed) if changed else 'nothing'}; "
          f"nodes {report['passes'][0]['nodes_before']} -> {report['passes'][-1]['nodes_after']}")

    paths = zoo.make_inputs(zoo.input_specs(args.model, {}), work, 0)
    dirs = {}
    for level in (0, args.level):
        dirs[level] = os.path.join(work, f"O{level}")
        run = subprocess.run([args.kiln, "run", args.model, f"-O{level}", "--output-dir", dirs[level]] +
                             zoo.input_args(paths), capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{name}: kiln run -O{level} failed:\n{run.stderr}")

    import onnx
    outputs = [o.name for o in onnx.load(args.model, load_external_data=False).graph.output]
    detections = spec.get("detections")
    det_names = [detections["boxes"], detections["scores"], detections["labels"]] if detections else []
    ok = True
    for out in outputs:
        a, b = zoo.load_output(dirs[args.level], out), zoo.load_output(dirs[0], out)
        if a.dtype != b.dtype or (a.shape != b.shape and out not in det_names):
            print(f"{name}/{out}: {a.dtype}{list(a.shape)} vs -O0 {b.dtype}{list(b.shape)} FAILED")
            ok = False
        elif out not in det_names:
            err, scale, rel = relative_error(a, b)
            good = rel <= tolerance
            ok &= good
            print(f"{name}/{out}: relative {rel:.3g} (tolerance {tolerance:g}) {'ok' if good else 'FAILED'}")
    if detections:
        det = {lv: [zoo.load_output(dirs[lv], n) for n in det_names] for lv in dirs}
        matched, total = match_detections(det[args.level], det[0], max(tolerance, 1e-6))
        share = matched / total if total else 1.0
        good = share >= detections["min_matched"]
        ok &= good
        print(f"{name}/detections: matched {matched} of {total} {'ok' if good else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
