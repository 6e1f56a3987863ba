#!/usr/bin/python3
"""bench/generate_speed.py - greedy decoding with a KV cache: `kiln generate`
through one ranged artifact against ONNX Runtime's loop, in one run.

  bench/generate_speed.py DECODER.onnx --min-shapes S --opt-shapes S --max-shapes S
                          [--prompt 5,17,42] [--tokens 128] [--repeat 5] [--threads N]
                          [--json FILE] [--kiln PATH]

Compiles the decoder once with the ranges (the cache axis from 0), then
alternates `kiln generate --json` and scripts/ort_generate.js (the same loop
on ONNX Runtime, CPU, all graph optimisations) --repeat times each. Prints
the median tokens per second of each over the steps after the prompt's,
their ratio (above 1: kiln is faster), the median prompt step, and whether
every run's tokens were equal. --json FILE appends each run's record.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import zoo  # noqa: E402


def run_json(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"generate_speed: {' '.join(cmd[:2])} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    for point in ("min", "opt", "max"):
        ap.add_argument(f"--{point}-shapes", required=point != "opt")
    ap.add_argument("--prompt", default="5,17,42")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="append every run's record to this file")
    ap.add_argument("--kiln", default=os.path.join(zoo.ROOT, "build", "tools", "kiln", "kiln"))
    args = ap.parse_args()
    threads = ["--threads", str(args.threads)] if args.threads else []
    loop = ["--prompt", args.prompt, "--tokens", str(args.tokens)] + threads
    with tempfile.TemporaryDirectory(prefix="kiln-generate-") as work:
        artifact = os.path.join(work, "decoder.kiln")
        ranges = [a for p in ("min", "opt", "max") if getattr(args, f"{p}_shapes")
                  for a in (f"--{p}-shapes", getattr(args, f"{p}_shapes"))]
        built = subprocess.run([args.kiln, "compile", args.model, "-o", artifact, "--quiet"] + ranges,
                               capture_output=True, text=True)
        if built.returncode != 0:
            raise SystemExit(f"generate_speed: kiln compile failed:\n{built.stderr}")
        kiln_runs, ort_runs = [], []
        for _ in range(args.repeat):
            kiln_runs.append(run_json([args.kiln, "generate", artifact, "--json"] + loop))
            ort_runs.append(run_json(["node", os.path.join(zoo.ROOT, "scripts", "ort_generate.js"), args.model] + loop))
    same = all(r["tokens"] == ort_runs[0]["tokens"] for r in kiln_runs + ort_runs)
    k = statistics.median(r["tokens_per_s"] for r in kiln_runs)
    o = statistics.median(r["tokens_per_s"] for r in ort_runs)
    kp = statistics.median(r["prompt_ms"] for r in kiln_runs)
    op = statistics.median(r["prompt_ms"] for r in ort_runs)
    print(f"{os.path.basename(args.model)} on {zoo.describe_machine()}: prompt {args.prompt}, {args.tokens} tokens, "
          f"median of {args.repeat} runs each")
    print(f"kiln generate        {k:10.1f} tokens/s   prompt step {kp:8.3f} ms")
    print(f"onnxruntime loop     {o:10.1f} tokens/s   prompt step {op:8.3f} ms")
    print(f"ratio kiln/onnxruntime: {k / o:.2f}x tokens/s; tokens {'equal in every run' if same else 'DIFFER'}")
    if args.json:
        with open(args.json, "a") as f:
            for r in kiln_runs + ort_runs:
                f.write(json.dumps(dict(r, machine=zoo.describe_machine())) + "\n")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
