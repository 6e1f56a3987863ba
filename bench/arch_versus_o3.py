#!/usr/bin/python3
"""arch against -O3, paired (issue 7's "arch never loses to O3 by more than
2%", docs/pass-selection.md): per model and round one `kiln bench --backend
cpu --pipeline arch --versus-pipeline O3` (one process, arch's and -O3's runs
alternating one by one, so the machine's drift hits both alike; every other
round imports -O3's copy first) and one A/A control `-O3 --versus-pipeline
O3` (both sides the same IR: the comparison's own bias, e.g. where each copy
lands in memory). Reports per model the median over rounds of each round's
median pair ratio (arch run / mean of the -O3 runs beside it) with the
rounds' range, the pairs arch won and the control. Each round also compiles
the model --compile-pairs times with `kiln compile -O3` and `kiln compile
--pipeline arch` (in alternating order) and reads the compile time after import (passes, with
arch's selection, plus code generation) from its summary. Results go to
--out and the table into docs/pass-selection.md between the paired markers.

    bench/arch_versus_o3.py [--kiln build/tools/kiln/kiln] [--zoo DIR] [--out build/arch-vs-o3]
                            [--models resnet50-default,...] [--rounds 8] [--runs 60] [--compile-pairs 3] [--skip-run]

The tiny zoo: --zoo models/tiny --models resnet_tiny-raw,... (TINY; rows join the table).
"""
import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zoo  # noqa: E402

MODELS = ["resnet50-raw", "resnet50-default", "mobilenet_v2-raw", "mobilenet_v2-default", "ssdlite320-raw",
          "ssdlite320-default", "bert_base-raw", "bert_base-default"]
TINY = ["resnet_tiny-raw", "resnet_tiny-default", "mobilenet_tiny-raw", "mobilenet_tiny-default", "ssdlite_tiny-raw",
        "ssdlite_tiny-default", "bert_tiny-raw", "bert_tiny-default"]  # --zoo models/tiny
BEGIN, END = "<!-- paired:begin (bench/arch_versus_o3.py) -->", "<!-- paired:end -->"


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def compile_phases(kiln, out_dir, model, pipeline, extra=()):
    """`kiln compile` with -O3 or --pipeline arch (and `extra` flags): its summary's phases in ms and its summary."""
    flags = ["-O3"] if pipeline == "O3" else ["--pipeline", pipeline]
    out = subprocess.run([kiln, "compile", model, "-o", os.path.join(out_dir, "compiled.kiln"), "--quiet"] + flags +
                         list(extra), check=True, capture_output=True, text=True).stdout
    phases = dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+)", out.split("time ms", 1)[1].splitlines()[0]))
    return phases, out


def compile_ms(a, model, pipeline):
    """The phases after import (passes, plan, lower, llvm) of a cpu compile, in ms, and the passes' share."""
    phases, _ = compile_phases(a.kiln, a.out, model, pipeline)
    return sum(v for k, v in phases.items() if k != "import"), phases["passes"]


def measure(a, name):
    model = os.path.join(a.zoo, name + ".onnx")
    work = os.path.join(a.out, name + "-inputs")
    os.makedirs(work, exist_ok=True)
    paths = zoo.make_inputs(zoo.input_specs(model), work, 0)
    runs = ["--warmup", "10", "--runs", str(a.runs)]
    result = {"model": name, "date": datetime.date.today().isoformat(), "machine": zoo.describe_machine(),
              "runs": a.runs, "o3_p50": [], "arch_p50": [], "median_pair_ratio": [], "pairs_faster": 0, "pairs": 0,
              "control_median_pair_ratio": [], "arch_pipeline": "", "compile_ms": {"O3": [], "arch": []},
              "passes_ms": {"O3": [], "arch": []}}
    for r in range(a.rounds):
        print(f"bench/arch_versus_o3.py: {name} round {r + 1}/{a.rounds}", file=sys.stderr, flush=True)
        first = ["--baseline-first"] if r % 2 else []
        rec = zoo.run_kiln_bench(a.kiln, model, paths, "cpu", runs + ["--pipeline", "arch", "--versus-pipeline", "O3"] + first)
        v = rec["versus"]
        result["o3_p50"].append(v["baseline_latency_ms"]["p50"])
        result["arch_p50"].append(rec["latency_ms"]["p50"])
        result["median_pair_ratio"].append(v["median_pair_ratio"])
        result["pairs_faster"] += v["pairs_faster"]
        result["pairs"] += v["pairs"]
        result["arch_pipeline"] = rec["config"]["options"]
        control = zoo.run_kiln_bench(a.kiln, model, paths, "cpu", runs + ["-O3", "--versus-pipeline", "O3"] + first)
        result["control_median_pair_ratio"].append(control["versus"]["median_pair_ratio"])
        for pair in range(a.compile_pairs):
            for pipeline in (["arch", "O3"] if (r + pair) % 2 else ["O3", "arch"]):
                total, passes = compile_ms(a, model, pipeline)
                result["compile_ms"][pipeline].append(total)
                result["passes_ms"][pipeline].append(passes)
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(result, f)
    return result


def stored_results(out, key="median_pair_ratio"):
    """The records in --out that have `key`, one per model, in the zoo's order."""
    found = {}
    for f in os.listdir(out):
        if f.endswith(".json"):
            r = json.load(open(os.path.join(out, f)))
            if key in r:
                found[r["model"]] = r
    order = {m: i for i, m in enumerate(MODELS + TINY)}
    return sorted(found.values(), key=lambda r: (order.get(r["model"], len(order)), r["model"]))


def cell(values):
    return "%.3f (%.3f..%.3f)" % (median(values), min(values), max(values))


def render(results, doc):
    machines = sorted({r["machine"] for r in results})
    pairs = sorted({str(len(r["compile_ms"]["O3"]) // len(r["median_pair_ratio"])) for r in results})
    lines = [BEGIN, "",
             "Measured on %s with `bench/arch_versus_o3.py` (kiln's cpu backend, default threads): per round one "
             "`kiln bench MODEL --backend cpu --pipeline arch --versus-pipeline O3`, whose arch and -O3 runs alternate "
             "one by one (every other round imports -O3's copy first), and one A/A control `-O3 --versus-pipeline O3`. "
             "*arch / O3*: the median over rounds of the round's median ratio of an arch run to the mean of the -O3 "
             "runs on either side of it (the rounds' range in brackets); *p50*: the medians over rounds of each "
             "side's p50 latency; *control*: the same for the A/A comparison, whose distance from 1 is the "
             "comparison's own bias; *compile*: `kiln compile` after import (passes, for arch with its selection: "
             "classification and the two rounds on the model, plus code generation), median over every compile "
             "(%s pairs per round, order alternating), and the ratio of the medians with the range of the pairs' ratios." % ("; ".join(machines), "/".join(pairs)), "",
             "| date | model | rounds x runs | O3 p50 ms | arch p50 ms | arch / O3, paired | arch faster in | A/A control "
             "| O3 compile ms (passes) | arch compile ms (passes) | arch / O3 compile |",
             "|---|---|---|---:|---:|---|---|---|---:|---:|---|"]
    for r in results:
        c, p = r["compile_ms"], r["passes_ms"]
        ratios = [x / o for x, o in zip(c["arch"], c["O3"])]
        lines.append("| %s | %s | %d x %d | %.4g | %.4g | %s | %d of %d pairs | %s | %.0f (%.0f) | %.0f (%.0f) | %.2f (%.2f..%.2f) |" % (
            r["date"], r["model"], len(r["median_pair_ratio"]), r["runs"], median(r["o3_p50"]), median(r["arch_p50"]),
            cell(r["median_pair_ratio"]), r["pairs_faster"], r["pairs"], cell(r["control_median_pair_ratio"]),
            median(c["O3"]), median(p["O3"]), median(c["arch"]), median(p["arch"]), median(c["arch"]) / median(c["O3"]),
            min(ratios), max(ratios)))
    lines += ["", "arch's pipelines (the record's options):", ""]
    lines += ["- %s: `%s`" % (r["model"], r["arch_pipeline"]) for r in results]
    lines += ["", END]
    zoo.replace_section(doc, BEGIN, END, lines)


def arch_parser(doc, out_name):
    """zoo.bench_parser with the options of both arch-against-O3 scripts: --models, --skip-run, --doc."""
    ap = zoo.bench_parser(doc, out_name)
    ap.add_argument("--models", default=",".join(MODELS), help="zoo files without .onnx, comma-separated")
    ap.add_argument("--skip-run", action="store_true", help="re-render from the JSON in --out")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/pass-selection.md"))
    return ap


def main():
    ap = arch_parser(__doc__, "arch-vs-o3")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--compile-pairs", type=int, default=3, help="pairs of -O3 and arch compiles per round")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_run:
        for m in a.models.split(","):
            measure(a, m)
    render(stored_results(a.out), a.doc)


if __name__ == "__main__":
    main()
