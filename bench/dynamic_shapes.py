#!/usr/bin/python3
"""bench/dynamic_shapes.py - one artifact compiled for shape ranges, measured
at shapes across them against an artifact compiled for each shape alone and
against ONNX Runtime, in one run.

  bench/dynamic_shapes.py MODEL.onnx --min-shapes S [--opt-shapes S] --max-shapes S
                          --at SHAPES [--at SHAPES ...] [--runs 50] [--warmup 10] [--rounds 3]
                          [--target cpu|cuda[:sm_XX]] [--threads N] [--no-static] [--json FILE]
                          [--kiln PATH] [--label TEXT]

S and SHAPES are in `kiln compile`'s form (name:1x3x224x224,name2:1x17);
each --at binds every dynamic input. For every --at: seeded inputs (from the
zoo manifest's ranges for zoo models, else the file's types) are written
once; `kiln bench` measures the ranged artifact against (unless
--no-static) an artifact compiled with --shape for exactly that shape, the
two alternating run by run (--versus-artifact), and scripts/ort_reference.js
measures ONNX Runtime (CPU, all graph optimisations), all on those inputs,
in --rounds rounds, so that a VM's drift between minutes hits each alike.
Prints one row per shape, medians over the rounds: each p50, dynamic /
static as the median ratio of paired runs (1.00: the range costs nothing at
that shape) and kiln (dynamic) / ONNX Runtime p50 (below 1: kiln is
faster). --target cuda compiles both artifacts for the GPU present (ONNX
Runtime stays the CPU peer). --json FILE appends every kiln-bench/1 record
with a "sweep" field naming the artifact kind, shape and round.
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


def compile_artifact(args, out, options):
    cmd = [args.kiln, "compile", args.model, "--target", args.target, "-o", out, "--quiet"] + options
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"dynamic_shapes: kiln compile failed:\n{result.stderr}")


def measure(args, artifact, paths, versus=None):
    extra = ["--warmup", str(args.warmup), "--runs", str(args.runs)] + (["--threads", str(args.threads)] if args.threads else [])
    extra += ["--versus-artifact", versus] if versus else []
    try:
        return zoo.run_kiln_bench(args.kiln, artifact, paths, "cpu", extra)
    except RuntimeError as e:
        raise SystemExit(f"dynamic_shapes: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    for point in ("min", "opt", "max"):
        ap.add_argument(f"--{point}-shapes", required=point != "opt")
    ap.add_argument("--at", action="append", required=True, metavar="SHAPES")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target", default="cpu", help="kiln compile's target (cpu, cuda[:sm_XX])")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-static", action="store_true", help="skip the per-shape static artifacts")
    ap.add_argument("--json", help="append the kiln-bench/1 records to this file")
    ap.add_argument("--label", help="the row label's prefix (default: the model's name)")
    ap.add_argument("--kiln", default=os.path.join(zoo.ROOT, "build", "tools", "kiln", "kiln"))
    args = ap.parse_args()
    name = args.label or os.path.splitext(os.path.basename(args.model))[0]
    ranges = []
    for point in ("min", "opt", "max"):
        if getattr(args, f"{point}_shapes"):
            ranges += [f"--{point}-shapes", getattr(args, f"{point}_shapes")]
    records = []
    with tempfile.TemporaryDirectory(prefix="kiln-dynamic-") as work:
        ranged = os.path.join(work, "ranged.kiln")
        print(f"dynamic_shapes: compiling {name} once for {' '.join(ranges[1::2])}", file=sys.stderr, flush=True)
        compile_artifact(args, ranged, ranges)
        print(f"{name} on {zoo.describe_machine()}; median of {args.rounds} rounds' p50 ms over {args.runs} runs")
        print(f"{'shape':<34} {'static':>9} {'dynamic':>9} {'dyn/static':>10} {'onnxruntime':>11} {'kiln/ort':>9}")
        for i, at in enumerate(args.at):
            shapes = zoo.parse_shapes(at)
            specs = {n: dict(s) for n, s in zoo.input_specs(args.model).items()}
            for n, dims in shapes.items():
                specs[n]["shape"] = dims
            paths = zoo.make_inputs(specs, os.path.join(work, f"at{i}"), seed=i)
            fixed = None
            if not args.no_static:
                fixed = os.path.join(work, f"static{i}.kiln")
                compile_artifact(args, fixed, [a for n, d in shapes.items() for a in ("--shape", f"{n}:{'x'.join(map(str, d))}")])
            ort_extra = ["--warmup", str(args.warmup), "--runs", str(args.runs)] + (["--threads", str(args.threads)] if args.threads else [])
            p50s = {"dynamic": [], "static": [], "onnxruntime": [], "pairs": []}
            for r in range(args.rounds):
                kiln = measure(args, ranged, paths, fixed)
                ort = zoo.run_ort(args.model, paths, extra=ort_extra)
                p50s["dynamic"].append(kiln["latency_ms"]["p50"])
                p50s["onnxruntime"].append(ort["latency_ms"]["p50"])
                if kiln.get("versus"):
                    p50s["static"].append(kiln["versus"]["baseline_latency_ms"]["p50"])
                    p50s["pairs"].append(kiln["versus"]["median_pair_ratio"])
                for kind, rec in (("dynamic", kiln), ("onnxruntime", ort)):
                    records.append(dict(rec, sweep={"artifact": kind, "at": at, "round": r, "ranges": " ".join(ranges)}))
            med = {k: statistics.median(v) if v else None for k, v in p50s.items()}
            label = " ".join("x".join(map(str, d)) for d in list(shapes.values())[:2])
            s_ms = f"{med['static']:9.3f}" if fixed else f"{'-':>9}"
            ratio = f"{med['pairs']:10.2f}" if fixed else f"{'-':>10}"
            print(f"{label:<34} {s_ms} {med['dynamic']:9.3f} {ratio} {med['onnxruntime']:11.3f} "
                  f"{med['dynamic'] / med['onnxruntime']:9.2f}", flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
