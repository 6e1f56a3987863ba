#!/usr/bin/python3
"""End-to-end effect of tuning (issue 8, docs/tuning.md): for ResNet-50 and
BERT-base (default forms) on the CPU target it runs `kiln tune` with one
budget and strategy, then benchmarks the model tuned and untuned (`kiln
bench --backend cpu --tuning-db DB --versus-untuned`: one process whose
tuned and untuned runs alternate one by one, so the machine's drift hits
both alike) and on ONNX Runtime (CPU, all graph optimisations) on the same
inputs, in rounds (kiln, ORT, repeated); the median of the rounds' p50
latencies is reported with the ratios, and the paired comparison (the
median of the rounds' median pair ratios, the pairs the tuned run won).
Results go to --out and the table into docs/tuning.md between the e2e
markers.

    bench/tuned_models.py [--kiln build/tools/kiln/kiln] [--zoo DIR] [--out build/tuned]
                          [--trials 1000] [--strategy sa-as] [--interleave] [--rounds 3] [--skip-tune] [--skip-run]
                          [--pipeline PASSES --tag NAME]

--pipeline runs kiln's passes instead of -O3 for tuning, compiling and both
kiln benchmarks (e.g. -O3's list plus alter-op-layout); its results are
stored under <model>-<tag> and shown as their own row. The table shows every
result in --out (rows of earlier runs keep their date).
"""
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zoo  # noqa: E402

MODELS = ["resnet50", "bert_base"]
BEGIN, END = "<!-- e2e:begin (bench/tuned_models.py) -->", "<!-- e2e:end -->"


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def measure(a, name):
    model = os.path.join(a.zoo, name + "-default.onnx")
    key = name + ("-" + a.tag if a.tag else "")
    db = os.path.join(a.out, key + ".tune.jsonl")
    report = os.path.join(a.out, key + ".tune.json")
    passes = ["--pipeline", a.pipeline] if a.pipeline else []
    if not a.skip_tune:
        if os.path.exists(db):
            os.remove(db)
        cmd = [a.kiln, "tune", model, "--trials", str(a.trials), "--strategy", a.strategy, "--db", db, "--json", report,
               "--quiet"] + passes + (["--interleave"] if a.interleave else [])
        print("bench/tuned_models.py:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    work = os.path.join(a.out, name + "-inputs")
    os.makedirs(work, exist_ok=True)
    paths = zoo.make_inputs(zoo.input_specs(model), work, 0)
    runs = ["--warmup", "10", "--runs", str(a.runs)]
    kiln_runs = runs + passes
    # The A/A control: the same comparison against an empty database (both sides untuned) shows the
    # comparison's own bias and spread, e.g. where each import lands in memory.
    empty = os.path.join(a.out, "empty.tune.jsonl")
    open(empty, "w").close()
    p50 = {"untuned": [], "tuned": [], "ort": []}
    paired = {"median_pair_ratio": [], "pairs_faster": 0, "pairs": 0, "control_median_pair_ratio": []}
    for r in range(a.rounds):
        print(f"bench/tuned_models.py: {name} round {r + 1}/{a.rounds}", file=sys.stderr, flush=True)
        # one process, the tuned and untuned runs alternating; every other round imports the untuned copy first
        versus = ["--versus-untuned"] + (["--untuned-first"] if r % 2 else [])
        rec = zoo.run_kiln_bench(a.kiln, model, paths, "cpu", kiln_runs + ["--tuning-db", db] + versus)
        p50["untuned"].append(rec["versus"]["baseline_latency_ms"]["p50"])
        p50["tuned"].append(rec["latency_ms"]["p50"])
        paired["median_pair_ratio"].append(rec["versus"]["median_pair_ratio"])
        paired["pairs_faster"] += rec["versus"]["pairs_faster"]
        paired["pairs"] += rec["versus"]["pairs"]
        p50["ort"].append(zoo.run_ort(model, paths, extra=runs)["latency_ms"]["p50"])
        control = zoo.run_kiln_bench(a.kiln, model, paths, "cpu", kiln_runs + ["--tuning-db", empty] + versus)
        paired["control_median_pair_ratio"].append(control["versus"]["median_pair_ratio"])
    tune = json.load(open(report))
    previous = os.path.join(a.out, key + ".json")
    # --skip-tune keeps how the database was tuned
    interleave = a.interleave
    if a.skip_tune and os.path.exists(previous):
        interleave = json.load(open(previous)).get("interleave", False)
    applied = subprocess.run([a.kiln, "compile", model, "--tuning-db", db, "-o", os.path.join(a.out, key + ".kiln"), "--quiet"]
                             + passes, check=True, capture_output=True, text=True).stdout
    summary = [l.strip() for l in applied.splitlines() if "tuning db:" in l][0]
    result = {"model": name, "tag": a.tag, "pipeline": a.pipeline, "date": datetime.date.today().isoformat(), "p50": p50,
              "paired": paired, "trials": tune["trials"], "strategy": tune["strategy"], "interleave": interleave,
              "runs": a.runs, "tune_seconds": tune["seconds"], "default_kernel_ms": tune["default_kernel_ms"], "tuned_kernel_ms": tune["tuned_kernel_ms"], "applied": summary}
    with open(os.path.join(a.out, key + ".json"), "w") as f:
        json.dump(result, f)
    return result


def label(r):
    return r["model"] + (" + " + r["tag"] if r.get("tag") else "")


def stored_results(out):
    """Every result in --out: the models in MODELS order, untagged first."""
    found = []
    for f in sorted(os.listdir(out)):
        if f.endswith(".json") and not f.endswith(".tune.json"):
            r = json.load(open(os.path.join(out, f)))
            if "model" in r and "p50" in r:
                found.append(r)
    order = {m: i for i, m in enumerate(MODELS)}
    return sorted(found, key=lambda r: (order.get(r["model"], len(order)), r.get("tag") or ""))


def paired_cell(r):
    """The paired comparison: the median over rounds of each round's median
    pair ratio and the pairs the tuned run won; for a result measured before
    --versus-untuned (separate processes, one after the other in each round),
    the rounds the tuned model was faster in."""
    if "paired" not in r:
        faster = sum(t < u for u, t in zip(r["p50"]["untuned"], r["p50"]["tuned"]))
        return "(separate runs) %d of %d rounds" % (faster, len(r["p50"]["tuned"]))
    p = r["paired"]
    return "%.3f (rounds %.3f..%.3f), %d of %d pairs" % (
        median(p["median_pair_ratio"]), min(p["median_pair_ratio"]), max(p["median_pair_ratio"]), p["pairs_faster"],
        p["pairs"])


def control_cell(r):
    """The A/A control's median over rounds and its range, or - where it was not run."""
    c = r.get("paired", {}).get("control_median_pair_ratio")
    return "%.3f (%.3f..%.3f)" % (median(c), min(c), max(c)) if c else "-"


def render(results, doc, a):
    lines = [BEGIN, "",
             "Measured on %s (`kiln bench --backend cpu`, default threads; ONNX Runtime 1.30 CPU through "
             "onnxruntime-node); p50 latency, median of the rounds (their number and runs in the tuning column; in each round one "
             "`kiln bench --tuning-db DB --versus-untuned`, whose tuned and untuned runs alternate one by one, then "
             "ONNX Runtime); *paired*: the median over rounds of the round's median ratio of a tuned run to the mean "
             "of the untuned runs on either side of it (with the range of the rounds' medians), and how many of those pairs the tuned run won; "
             "every other round imports the untuned copy first (`--untuned-first`); *A/A control*: the same "
             "comparison with an empty database, both sides untuned, which shows the comparison's own bias "
             "(where each copy lands in memory shifts a round by up to 2.5%%); the date of each "
             "row's run in its first column. Rows with a pass list after the model ran `--pipeline` (-O3's passes "
             "and that one) for tuning and both kiln benchmarks; the others -O3 (which on the cpu target runs "
             "alter-op-layout since 2026-11-24: the earlier -O3 rows have NCHW convolutions)." %
             zoo.describe_machine(), "",
             "| date | model | tuning | kiln untuned ms | kiln tuned ms | tuned / untuned | paired: tuned / untuned, tuned faster | A/A control | ONNX Runtime ms | untuned / ORT | tuned / ORT |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        u, t, o = median(r["p50"]["untuned"]), median(r["p50"]["tuned"]), median(r["p50"]["ort"])
        rounds = "; %d rounds of %d runs" % (len(r["p50"]["tuned"]), r["runs"]) if "runs" in r else ""
        lines.append("| %s | %s | %s%s, %d trials, %.0f s%s | %.2f | %.2f | %.3f | %s | %s | %.2f | %.2f | %.2f |" % (
            r.get("date", "2026-11-23"), label(r), r["strategy"], " --interleave" if r.get("interleave") else "",
            r["trials"], r["tune_seconds"], rounds, u, t, t / u, paired_cell(r), control_cell(r), o, u / o, t / o))
    lines += [""] + ["- %s: %s; kernel time estimate (uses x measured kernel time) %.1f -> %.1f ms." % (
        label(r), r["applied"], r["default_kernel_ms"], r["tuned_kernel_ms"]) for r in results] + ["", END]
    zoo.replace_section(doc, BEGIN, END, lines)


def main():
    ap = zoo.bench_parser(__doc__, "tuned")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--strategy", default="sa-as")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--interleave", action="store_true",
                    help="tune with kiln tune --interleave (each batch timed in rounds beside the default, so drift cancels)")
    ap.add_argument("--skip-tune", action="store_true", help="reuse the tuning databases in --out")
    ap.add_argument("--skip-run", action="store_true", help="re-render from the JSON in --out")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/tuning.md"))
    ap.add_argument("--pipeline", help="kiln's passes instead of -O3 (kiln tune/bench/compile --pipeline); needs --tag")
    ap.add_argument("--tag", default="", help="name of the --pipeline rows (e.g. alter-op-layout)")
    a = ap.parse_args()
    if bool(a.pipeline) != bool(a.tag):
        raise SystemExit("tuned_models: --pipeline and --tag go together")
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_run:
        for m in a.models.split(","):
            measure(a, m)
    render(stored_results(a.out), a.doc, a)


if __name__ == "__main__":
    main()
