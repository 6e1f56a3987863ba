#!/usr/bin/python3
"""The pass-selection study of issue 7 on kiln's zoo: runs
`kiln passes compare MODEL --strategies O3,arch,random:8` for every model and
form, copies the charts to docs/pass-selection/ and rewrites the study tables
of docs/pass-selection.md (between the study markers).

    bench/pass_study.py [--kiln build/tools/kiln/kiln] [--zoo build/models]
                        [--out build/pass-study] [--skip-run] [--only MODEL-FORM,...]
                        [--extra] [--doc docs/pass-selection.md]

--zoo holds the full models as <model>-<form>.onnx (export them with
models/export_models.py --size full or `ctest --preset long`); the tiny ones
come from models/tiny. --skip-run re-renders from the JSON already in --out;
--only runs just the named studies (e.g. bert_base-default) and re-renders
the others from --out.

--extra also runs `learned` and `evolve` on the raw full models (O3, arch,
learned:1, evolve:6x3; fewer timed runs) into --out/extra and writes their
table between the study-extra markers. `learned` reads an experiment
database holding --out's records minus those of the model itself (both
forms), so it has to learn from other architectures (and the tiny models).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zoo  # noqa: E402

FULL = ["resnet50", "mobilenet_v2", "ssdlite320", "bert_base"]
TINY = ["resnet_tiny", "mobilenet_tiny", "ssdlite_tiny", "bert_tiny"]
FORMS = ["raw", "default"]
CLASS = {"resnet50": "RN", "mobilenet_v2": "MN", "ssdlite320": "SSD", "bert_base": "BR"}
BEGIN, END = "<!-- study:begin (bench/pass_study.py) -->", "<!-- study:end -->"
EXTRA_BEGIN, EXTRA_END = "<!-- study-extra:begin (bench/pass_study.py --extra) -->", "<!-- study-extra:end -->"
EXTRA_STRATEGIES = "O3,arch,learned:1,evolve:6x3"


def run(kiln, path, out, tiny):
    runs = ["--runs", "1000", "--warmup", "100", "--compile-repeats", "9"] if tiny else \
           ["--runs", "100", "--warmup", "5", "--compile-repeats", "5"]
    cmd = [kiln, "passes", "compare", path, "--strategies", "O3,arch,random:8", "--out", out,
           "--max-seconds", "15", "--rounds", "4", "--quiet"] + runs
    print("bench/pass_study.py:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)


def spread(record):
    """(max - min) / median of the interleaved rounds 2..R: the run-to-run noise."""
    rounds = record["latency_ms"]["rounds"][1:] or record["latency_ms"]["rounds"]
    return (max(rounds) - min(rounds)) / record["latency_ms"]["median"]


def row(study):
    recs = {r["label"]: r for r in study["records"]}
    o3, arch = recs["O3"], recs["arch"]
    randoms = [r for r in study["records"] if r["strategy"].startswith("random") and r["error"] is None]
    failed = [r["label"] for r in study["records"] if r["error"] is not None]

    def compile_ms(r):
        return r["compile_ms"]["passes"] + r["compile_ms"]["codegen"]

    best = min(randoms, key=lambda r: r["latency_ms"]["median"]) if randoms else None
    return {
        "o3": o3, "arch": arch, "best": best, "failed": failed,
        "lat": arch["latency_ms"]["median"] / o3["latency_ms"]["median"],
        "opt": arch["compile_ms"]["passes"] / o3["compile_ms"]["passes"],
        "comp": compile_ms(arch) / compile_ms(o3),
        "best_lat": best["latency_ms"]["median"] / o3["latency_ms"]["median"] if best else None,
        "irs": len({r["ir_hash"] for r in study["records"] if r["ir_hash"]}),
        "noise": max(spread(o3), spread(arch)),
        "same": arch["ir_hash"] == o3["ir_hash"],
    }


def table(studies, names):
    lines = ["| model | form | classes | passes kept | orderings before -> after | O3 latency ms | arch / O3 latency | "
             "round spread | best random:8 / O3 | O3 optimise ms | arch / O3 optimise | O3 compile ms | arch / O3 compile | "
             "distinct IR of 10 |",
             "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        for form in FORMS:
            s = studies.get((name, form))
            if not s:
                continue
            r = row(s)
            sp = s["space"]
            lines.append("| %s | %s | %s | %d of %d | %.2g -> %.3g | %.3f | %.3f%s | %.1f%% | %s | %.2f | %.2f | %.0f | %.2f | %d%s |" % (
                name, form, ",".join(s["classes"]), len(sp["passes"]), sp["catalogue"], sp["sequences_before"],
                sp["sequences_after"], r["o3"]["latency_ms"]["median"], r["lat"], " (same IR)" if r["same"] else "",
                r["noise"] * 100,
                "%.3f" % r["best_lat"] if r["best_lat"] else "-", r["o3"]["compile_ms"]["passes"], r["opt"],
                r["o3"]["compile_ms"]["passes"] + r["o3"]["compile_ms"]["codegen"], r["comp"], r["irs"],
                (" (failed: %s)" % ", ".join(r["failed"])) if r["failed"] else ""))
    return lines


def by_class(studies):
    lines = ["| class | models (raw and default forms) | arch vs O3 optimise time (sum of forms) | arch vs O3 compile time (sum of forms) | arch vs O3 throughput (mean of forms) | research (AS vs BL) |",
             "|---|---|---:|---:|---:|---|"]
    research = {"RN": "compile -15%, throughput +24..32%", "MN": "compile -45%, throughput about +5%",
                "SSD": "compile -54%, throughput about +5%", "BR": "compile -92%, throughput unchanged"}
    for name in FULL:
        cls = CLASS[name]
        rows = [row(studies[(name, f)]) for f in FORMS if (name, f) in studies]
        if not rows:
            continue
        # Times as ratios of sums over the forms (a form where O3's passes take ~nothing would dominate a mean of ratios).
        total = lambda key, phases: sum(r[key]["compile_ms"][p] for r in rows for p in phases)
        opt = total("arch", ["passes"]) / total("o3", ["passes"])
        comp = total("arch", ["passes", "codegen"]) / total("o3", ["passes", "codegen"])
        thr = sum(1 / r["lat"] for r in rows) / len(rows)
        lines.append("| %s | %s | %+.0f%% | %+.0f%% | %+.1f%% | %s |" % (cls, name, (opt - 1) * 100, (comp - 1) * 100,
                                                                    (thr - 1) * 100, research[cls]))
    return lines


def run_extra(kiln, zoo_dir, out):
    """learned and evolve on the raw full models; learned from the other models' records only."""
    extra = os.path.join(out, "extra")
    os.makedirs(extra, exist_ok=True)
    for name in FULL:
        path = os.path.join(zoo_dir, "%s-raw.onnx" % name)
        if not os.path.exists(path):
            continue
        db = os.path.join(extra, "db-%s.jsonl" % name)
        with open(os.path.join(out, "experiments.jsonl")) as src, open(db, "w") as dst:
            for line in src:
                if not json.loads(line)["model"]["name"].startswith(name + "-"):
                    dst.write(line)
        cmd = [kiln, "passes", "compare", path, "--strategies", EXTRA_STRATEGIES, "--out", extra, "--db", db,
               "--max-seconds", "8", "--rounds", "3", "--quiet", "--runs", "50", "--warmup", "5", "--compile-repeats", "3"]
        print("bench/pass_study.py:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)


def date_range(studies):
    """The day the studies were measured, or the first and last day."""
    dates = sorted(s["date"][:10] for s in studies)
    return dates[0] if dates[0] == dates[-1] else "%s to %s" % (dates[0], dates[-1])


def extra_table(out):
    """The --extra table's rows and the studies they come from (none: no rows)."""
    studies = []
    lines = ["| model (raw) | O3 latency ms | arch / O3 | learned / O3 | learned from | evolve: best / O3 | "
             "evolve: Pareto front (latency / O3, compile / O3) | evolve: distinct IR of genomes | O3 compile ms |",
             "|---|---:|---:|---:|---|---:|---|---|---:|"]
    for name in FULL:
        path = os.path.join(out, "extra", "%s-raw.json" % name)
        if not os.path.exists(path):
            continue
        studies.append(json.load(open(path)))
        recs = studies[-1]["records"]
        by = {r["label"]: r for r in recs}
        o3 = by["O3"]
        lat = lambda r: r["latency_ms"]["median"]
        comp = lambda r: r["compile_ms"]["passes"] + r["compile_ms"]["codegen"]
        learned = [r for r in recs if r["strategy"].startswith("learned") and r["error"] is None]
        evolved = [r for r in recs if r["strategy"].startswith("evolve") and r["error"] is None]
        front = sorted((r for r in evolved if r["pareto"]), key=lat)
        best = min(evolved, key=lat) if evolved else None
        source = learned[0]["note"].replace("from ", "").split(" (")[0] if learned else "-"
        lines.append("| %s | %.3f | %.3f | %s | %s | %s | %s | %d of %d | %.0f |" % (
            name, lat(o3), lat(by["arch"]) / lat(o3),
            "%.3f" % (lat(learned[0]) / lat(o3)) if learned else "-", source,
            "%.3f" % (lat(best) / lat(o3)) if best else "-",
            ", ".join("%.3f / %.2f" % (lat(r) / lat(o3), comp(r) / comp(o3)) for r in front) or "-",
            len({r["ir_hash"] for r in evolved}), len(evolved), comp(o3)))
    return lines, studies


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build/tools/kiln/kiln"))
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build/models"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/pass-study"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/pass-selection.md"))
    ap.add_argument("--skip-run", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated MODEL-FORM studies to run; the rest from --out")
    ap.add_argument("--extra", action="store_true", help="also run learned and evolve on the raw full models")
    a = ap.parse_args()
    studies = {}
    for names, folder, tiny in ((FULL, a.zoo, False), (TINY, os.path.join(ROOT, "models/tiny"), True)):
        for name in names:
            for form in FORMS:
                path = os.path.join(folder, "%s-%s.onnx" % (name, form))
                result = os.path.join(a.out, "%s-%s.json" % (name, form))
                wanted = not a.only or "%s-%s" % (name, form) in a.only.split(",")
                if not a.skip_run and wanted and os.path.exists(path):
                    run(a.kiln, path, a.out, tiny)
                if os.path.exists(result):
                    studies[(name, form)] = json.load(open(result))
    if not studies:
        sys.exit("bench/pass_study.py: no studies (export the zoo into --zoo first)")
    if a.extra and not a.skip_run:
        run_extra(a.kiln, a.zoo, a.out)
    charts = os.path.join(os.path.dirname(a.doc), "pass-selection")
    os.makedirs(charts, exist_ok=True)
    for name in FULL:
        svg = os.path.join(a.out, "%s-raw.svg" % name)
        if os.path.exists(svg):
            shutil.copy(svg, os.path.join(charts, "%s-raw.svg" % name))
    any_study = next(iter(studies.values()))
    text = [BEGIN, "",
            "Measured %s on %s with kiln's cpu backend (%s threads), `kiln passes compare MODEL "
            "--strategies O3,arch,random:8 --rounds 4` per model (full models: 100 timed runs per distinct IR in each of 3 interleaved rounds after a first, pass pipelines "
            "timed 5 times; tiny models: 1000 runs, 9 times; medians). Ratios below 1 favour arch. *optimise* is the "
            "pass pipeline alone (the research's compile time); *compile* adds code generation." % (
                date_range(studies.values()), zoo.describe_machine(), any_study["records"][0].get("threads")),
            "", "### Full models", ""] + table(studies, FULL) + \
        (["", "### Tiny models (CI's zoo)", ""] + table(studies, TINY) if any(k[0] in TINY for k in studies) else []) + \
        ["", "### By class, next to the research", ""] + by_class(studies) + \
        ["", "Charts (raw forms; latency with p90 whisker, compile time split into passes and code generation, "
             "identical IR lettered):", ""] + \
        ["![%s](pass-selection/%s-raw.svg)" % (n, n) for n in FULL if os.path.exists(os.path.join(charts, n + "-raw.svg"))] + \
        ["", END]
    doc = open(a.doc).read()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + "\n".join(text) + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + "\n".join(text) + "\n"
    open(a.doc, "w").write(doc)
    extra, extra_studies = extra_table(a.out)
    if extra_studies and EXTRA_BEGIN in doc:
        zoo.replace_section(a.doc, EXTRA_BEGIN, EXTRA_END, [
            EXTRA_BEGIN, "",
            "Measured %s on %s, `kiln passes compare MODEL-raw.onnx --strategies %s --rounds 3 --runs 50` "
            "(medians; ratios below 1 favour the strategy). `learned` used an experiment database of the other "
            "models' records (this study's, both forms, tiny models included), never the model's own; `evolve` "
            "ran NSGA-II with 6 genomes for 3 generations." % (date_range(extra_studies), zoo.describe_machine(),
                                                              EXTRA_STRATEGIES),
            ""] + extra + ["", EXTRA_END])
    print("bench/pass_study.py: wrote %s and %s/" % (a.doc, charts), file=sys.stderr)


if __name__ == "__main__":
    main()
