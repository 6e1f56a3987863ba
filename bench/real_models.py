#!/usr/bin/python3
"""bench/real_models.py - kiln's CPU target against ONNX Runtime on the real
pretrained models of models/real.json, side by side in one run.

  bench/real_models.py [--models-dir DIR] [--rounds 3] [--warmup 20] [--runs 200]
                       [--only NAME]... [--json FILE] [--kiln PATH]

Each model gets the seeded inputs its real.json entry describes ("shapes",
"ranges"; the tests' inputs), then `--rounds` rounds that alternate
`kiln bench --backend cpu` (-O3, compile included in the record, not in the
latency) and ONNX Runtime (scripts/ort_reference.js, CPU, all graph
optimisations), each with its default threads. Prints one markdown row per
model: the p50 latencies of the round with the median ratio and the range of
the rounds' ratios (kiln / ONNX Runtime; below 1 means kiln is faster).
--json appends every record. Models come from --models-dir (what
models/fetch_real_models.py --out DIR wrote; the tests fetch into
build/real-models).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import zoo  # noqa: E402


def input_paths(entry, model, work):
    shapes = {s.split(":")[0]: [int(d) for d in s.split(":")[1].split("x")] for s in entry.get("shapes", [])}
    specs = zoo.input_specs(model, shapes)
    for r in entry.get("ranges", []):
        name, low, high = r.rsplit(":", 2)
        specs[name] = dict(specs[name], low=float(low), high=float(high))
    return zoo.make_inputs(specs, work)


def bench_model(args, entry, model, work):
    paths = input_paths(entry, model, work)
    extra = ["--warmup", str(args.warmup), "--runs", str(args.runs)]
    rounds = []
    for _ in range(args.rounds):
        kiln = zoo.run_kiln_bench(args.kiln, model, paths, "cpu", extra)
        ort = zoo.run_ort(model, paths, extra=extra)
        rounds.append((kiln, ort, kiln["latency_ms"]["p50"] / ort["latency_ms"]["p50"]))
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(kiln) + "\n" + json.dumps(ort) + "\n")
    return rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default=os.path.join(zoo.ROOT, "build", "real-models"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--only", action="append", default=[], help="bench this model of real.json only (repeatable)")
    ap.add_argument("--json", help="append every kiln-bench/1 record to this file")
    ap.add_argument("--kiln", default=os.path.join(zoo.ROOT, "build", "tools", "kiln", "kiln"))
    args = ap.parse_args()
    if args.rounds < 1:
        raise SystemExit("real_models: --rounds must be at least 1")
    if not os.path.exists(args.kiln):
        raise SystemExit(f"real_models: no kiln executable at {args.kiln} (build first or pass --kiln)")
    entries = json.load(open(os.path.join(zoo.ROOT, "models", "real.json")))["models"]
    unknown = set(args.only) - {e["name"] for e in entries}
    if unknown:
        raise SystemExit(f"real_models: not in models/real.json: {', '.join(sorted(unknown))}")
    print(f"{zoo.describe_machine()}; {args.rounds} alternating rounds of {args.warmup} warm-up and {args.runs} timed "
          "runs each")
    print("| model | kiln p50 ms | ONNX Runtime p50 ms | kiln / ORT (median round) | rounds' range |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="kiln-real-bench-") as work:
        for entry in entries:
            if args.only and entry["name"] not in args.only:
                continue
            model = os.path.join(args.models_dir, entry["name"] + ".onnx")
            if not os.path.exists(model):
                raise SystemExit(f"real_models: {model} is missing (models/fetch_real_models.py --out "
                                 f"{args.models_dir})")
            print(f"real_models: {entry['name']}", file=sys.stderr, flush=True)
            rounds = bench_model(args, entry, model, os.path.join(work, entry["name"]))
            ratios = sorted(r[2] for r in rounds)
            median = statistics.median_low(ratios)
            kiln, ort, _ = next(r for r in rounds if r[2] == median)
            print(f"| {entry['name']} | {kiln['latency_ms']['p50']:.3f} | {ort['latency_ms']['p50']:.3f} | "
                  f"{median:.2f}x | {ratios[0]:.2f}..{ratios[-1]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
