"""Checks a Chrome trace that kiln wrote (kiln bench --trace, Model.run(trace=...)).

    check_trace.py TRACE.json [--runs N] [--kernels K]

Loads it as Perfetto and chrome://tracing do (JSON, "traceEvents" of complete
"X" events in microseconds); checks that every run's events lie inside it, in
order and without overlapping, and add up to the run's time within 5%; with
--runs, that there are N runs; with --kernels, that each run launched K
kernels. Exit status 1 with the reason otherwise.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--kernels", type=int)
    args = ap.parse_args()
    events = [e for e in json.load(open(args.trace))["traceEvents"] if e.get("ph") == "X"]
    runs = [e for e in events if e["cat"] == "run"]
    if not runs or (args.runs is not None and len(runs) != args.runs):
        sys.exit(f"FAILED: {len(runs)} runs in the trace")
    for run in runs:
        start, end = run["ts"], run["ts"] + run["dur"]
        inside = [e for e in events if e["cat"] != "run" and start <= e["ts"] < end]
        if not inside or any(e["ts"] + e["dur"] > end + 1e-3 for e in inside):
            sys.exit(f"FAILED: {run['name']}: events outside the run")
        for a, b in zip(inside, inside[1:]):
            if b["ts"] < a["ts"] + a["dur"] - 1e-3:
                sys.exit(f"FAILED: {run['name']}: {a['name']} and {b['name']} overlap")
        total = sum(e["dur"] for e in inside)
        if abs(total - run["dur"]) > 0.05 * run["dur"]:
            sys.exit(f"FAILED: {run['name']}: its events add up to {total:.1f} us of {run['dur']:.1f} us")
        kernels = sum(e["cat"] == "kernel" for e in inside)
        if args.kernels is not None and kernels != args.kernels:
            sys.exit(f"FAILED: {run['name']}: {kernels} kernel launches, expected {args.kernels}")
        if any(not e["name"] or "bytes" not in e["args"] for e in inside):
            sys.exit(f"FAILED: {run['name']}: an event without a name or bytes")
    print(f"{args.trace}: {len(runs)} runs, {len(inside)} events each, within 5% of the run")


if __name__ == "__main__":
    main()
