#!/usr/bin/python3
"""End-to-end effect of tuning (issue 8, docs/tuning.md): for ResNet-50 and
BERT-base (default forms) on the CPU target it runs `kiln tune` with one
budget and strategy, then benchmarks the model untuned (`kiln bench
--backend cpu`), tuned (`--tuning-db`) and on ONNX Runtime (CPU, all graph
optimisations) on the same inputs, in interleaved rounds (untuned, tuned,
ORT, repeated) so machine drift hits all three alike; the median of the
rounds' p50 latencies is reported with the ratios. Results go to --out and
the table into docs/tuning.md between the e2e markers.

    bench/tuned_models.py [--kiln build/tools/kiln/kiln] [--zoo DIR] [--out build/tuned]
                          [--trials 1000] [--strategy sa-as] [--rounds 3] [--skip-tune] [--skip-run]
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
               "--quiet"] + passes
        print("bench/tuned_models.py:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    work = os.path.join(a.out, name + "-inputs")
    os.makedirs(work, exist_ok=True)
    paths = zoo.make_inputs(zoo.input_specs(model), work, 0)
    runs = ["--warmup", "10", "--runs", str(a.runs)]
    kiln_runs = runs + passes
    p50 = {"untuned": [], "tuned": [], "ort": []}
    for r in range(a.rounds):
        print(f"bench/tuned_models.py: {name} round {r + 1}/{a.rounds}", file=sys.stderr, flush=True)
        p50["untuned"].append(zoo.run_kiln_bench(a.kiln, model, paths, "cpu", kiln_runs)["latency_ms"]["p50"])
        p50["tuned"].append(zoo.run_kiln_bench(a.kiln, model, paths, "cpu", kiln_runs + ["--tuning-db", db])["latency_ms"]["p50"])
        p50["ort"].append(zoo.run_ort(model, paths, extra=runs)["latency_ms"]["p50"])
    tune = json.load(open(report))
    applied = subprocess.run([a.kiln, "compile", model, "--tuning-db", db, "-o", os.path.join(a.out, key + ".kiln"), "--quiet"]
                             + passes, check=True, capture_output=True, text=True).stdout
    summary = [l.strip() for l in applied.splitlines() if "tuning db:" in l][0]
    result = {"model": name, "tag": a.tag, "pipeline": a.pipeline, "date": datetime.date.today().isoformat(), "p50": p50, "trials": tune["trials"], "strategy": tune["strategy"], "tune_seconds": tune["seconds"],
              "default_kernel_ms": tune["default_kernel_ms"], "tuned_kernel_ms": tune["tuned_kernel_ms"], "applied": summary}
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


def render(results, doc, a):
    lines = [BEGIN, "",
             "Measured on %s (`kiln bench --backend cpu`, default threads; ONNX Runtime 1.30 CPU through "
             "onnxruntime-node); p50 latency, median of %d interleaved rounds of %d runs each; the date of each "
             "row's run in its first column. Rows with a pass list after the model ran `--pipeline` (-O3's passes "
             "and that one) for tuning and both kiln benchmarks; the others -O3 (which on the cpu target runs "
             "alter-op-layout since 2026-11-24: the earlier -O3 rows have NCHW convolutions)." %
             (zoo.describe_machine(), a.rounds, a.runs), "",
             "| date | model | tuning | kiln untuned ms | kiln tuned ms | tuned / untuned | ONNX Runtime ms | untuned / ORT | tuned / ORT |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        u, t, o = median(r["p50"]["untuned"]), median(r["p50"]["tuned"]), median(r["p50"]["ort"])
        lines.append("| %s | %s | %s, %d trials, %.0f s | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f |" % (
            r.get("date", "2026-11-23"), label(r), r["strategy"], r["trials"], r["tune_seconds"], u, t, t / u, o, u / o,
            t / o))
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
