#!/usr/bin/python3
"""bench/fusion_search.py - the fusion-search study of docs/fusion-search.md
(issue 68; shared/seeds/004): train the advantage model on training graphs,
then compare random, guided and ranked search on unseen graphs.

  bench/fusion_search.py train [--kiln PATH] [--out DIR] [--sweeps 2] [--install]
  bench/fusion_search.py score [--kiln PATH] [--out DIR] [--only NAME]... [--model F]
  bench/fusion_search.py study [--kiln PATH] [--out DIR] [--trials 60] [--seeds 2]
                               [--starts default,random] [--only NAME]... [--model F]
  bench/fusion_search.py report [--out DIR] [--doc docs/fusion-search.md]

train: Gibbs-sampling datasets of every TRAIN graph (DIR/data/) and the
advantage model trained on them (DIR/cpu.json; --install: kiln's own).
score: the model's ranking of the edges of every TEST graph, which it has
not seen (DIR/score.json).
study: every strategy from each start and seed on every TEST graph, each
kept plan confirmed against the default (DIR/study/).
report: the study's tables and charts into --doc and docs/fusion-search/.
Each mode's function says how.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TINY = os.path.join(ROOT, "models", "tiny")

# name: (model path relative to a models dir, extra arguments); {tiny}, {real} and {zoo} are the dirs.
TRAIN = {
    "resnet_tiny": ("{tiny}/resnet_tiny-raw.onnx", []),
    "tiny_cnn": ("{tiny}/tiny_cnn.onnx", []),
    "ssdlite_tiny": ("{tiny}/ssdlite_tiny-raw.onnx", []),
    "oww_embedding": ("{real}/oww_embedding.onnx", ["--shape", "input_1:1x76x32x1"]),
    "oww_melspectrogram": ("{real}/oww_melspectrogram.onnx", ["--shape", "input:1x1280"]),
    "oww_alexa": ("{real}/oww_alexa.onnx", []),
    "ppocr_mobile_cls": ("{real}/ppocr_mobile_cls.onnx", ["--shape", "x:1x3x48x192"]),
    "resnet50": ("{zoo}/resnet50-default.onnx", []),
    "ssdlite320": ("{zoo}/ssdlite320-default.onnx", []),
}
# Training graphs at full size: their sizes span the test graphs'; one sweep each, cut at
# FULL_SIZE_SECONDS (in which SSDLite320's covers 1455 of its edges on 2 cores).
FULL_SIZE = {"resnet50", "ssdlite320"}
FULL_SIZE_SECONDS = 1300
TEST = {
    "mobilenet_v2": ("{zoo}/mobilenet_v2-default.onnx", []),
    "bert_base": ("{zoo}/bert_base-default.onnx", []),
    "gpt_small": ("{zoo}/gpt_small-default.onnx", ["--shape", "input_ids:1x1"] + [
        "--shape=past_key_values.%d.%s:1x8x7x64" % (i, kv) for i in range(6) for kv in ("key", "value")]),
    "ppocr_v4_det": ("{real}/ppocr_v4_det.onnx", ["--shape", "x:1x3x320x320"]),
    "ppocr_v4_rec": ("{real}/ppocr_v4_rec.onnx", ["--shape", "x:1x3x48x320"]),
}
STRATEGIES = ["random", "guided", "ranked"]
COLORS = {"random": "#777777", "guided": "#1f77b4", "ranked": "#d62728"}
# shared/seeds/004's Table 1 (XLA on TPU, from the default configuration): improvement and samples.
SEED_TABLE = [("GraphNets", 1532, "18%", 1400, "18%", 3500), ("Unet", 2626, "5%", 300, "5%", 4500),
              ("DeepRank", 532, "5%", 2000, "5%", 4500), ("MNasNet", 5713, "2%", 2100, "2.8%", 3000),
              ("SSDMobileNet", 22176, "2.3%", 400, "0.5%", 100)]


def model_path(spec, out):
    return spec[0].format(tiny=TINY, real=os.path.join(out, "real"), zoo=os.path.join(out, "zoo"))


def fetch_models(out, names):
    if any("{real}" in (TRAIN.get(n) or TEST[n])[0] for n in names):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "models", "fetch_real_models.py"), "--out",
                        os.path.join(out, "real")], check=True)
    zoo = sorted({n for n in names if "{zoo}" in (TRAIN.get(n) or TEST[n])[0]})
    missing = [n for n in zoo if not os.path.exists(model_path((TRAIN.get(n) or TEST[n]), out))]
    if missing:
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "models", "export_models.py"), "--out",
                        os.path.join(out, "zoo"), "--forms", "default", "--size", "full"] + missing, check=True)


def train(a):
    """`kiln fuse --collect` on every TRAIN graph into DIR/data/ (the small ones: --sweeps sweeps from
    the default configuration and one from a random one; the full-size ones, FULL_SIZE: one sweep from
    the default, cut at FULL_SIZE_SECONDS), `kiln fuse --train` into DIR/cpu.json; --install copies it
    to data/advantage/cpu.json. Datasets already in DIR/data/ are kept."""
    fetch_models(a.out, list(TRAIN))
    data = os.path.join(a.out, "data")
    os.makedirs(data, exist_ok=True)
    sets = []
    for name, spec in TRAIN.items():
        runs = [("", ["--sweeps", "1", "--max-seconds", str(FULL_SIZE_SECONDS)])] if name in FULL_SIZE else \
            [("", ["--sweeps", str(a.sweeps)]), ("-random", ["--sweeps", "1", "--from", "random"])]
        for suffix, how in runs:
            path = os.path.join(data, name + suffix + ".jsonl")
            sets.append(path)
            if os.path.exists(path):
                continue
            print("fusion_search: collecting %s%s" % (name, suffix), file=sys.stderr)
            subprocess.run([a.kiln, "fuse", model_path(spec, a.out)] + spec[1] + how +
                           ["--collect", path + ".part", "--quiet"], check=True)
            os.rename(path + ".part", path)
    model = os.path.join(a.out, "cpu.json")
    subprocess.run([a.kiln, "fuse", "--train"] + sets + ["-o", model], check=True)
    if a.install:
        shutil.copy(model, os.path.join(ROOT, "data", "advantage", "cpu.json"))
        print("fusion_search: installed data/advantage/cpu.json", file=sys.stderr)


# A held-out graph's sweep is cut here (BERT-base's after 590 of its 663 edges on 2 cores): a few
# hundred decisions are enough to score a model, and the score step stays under half an hour.
HELDOUT_SECONDS = 420


def score(a):
    """One Gibbs sweep from the default on every TEST graph, cut at HELDOUT_SECONDS, into DIR/heldout/
    (kept for later runs), and `kiln fuse --score` of the model on them into DIR/score.json."""
    names = a.only or list(TEST)
    fetch_models(a.out, names)
    heldout = os.path.join(a.out, "heldout")
    os.makedirs(heldout, exist_ok=True)
    sets = []
    for name in names:
        path = os.path.join(heldout, name + ".jsonl")
        sets.append(path)
        if os.path.exists(path):
            continue
        print("fusion_search: collecting held-out %s" % name, file=sys.stderr)
        subprocess.run([a.kiln, "fuse", model_path(TEST[name], a.out)] + TEST[name][1] +
                       ["--collect", path + ".part", "--sweeps", "1", "--max-seconds", str(HELDOUT_SECONDS),
                        "--quiet"], check=True)
        os.rename(path + ".part", path)
    cmd = [a.kiln, "fuse", "--score"] + sets + ["--json", os.path.join(a.out, "score.json")]
    subprocess.run(cmd + (["--advantage-model", a.model] if a.model else []), check=True)


def study(a):
    """On every TEST graph (none of TRAIN's architectures), per start and seed, each strategy runs
    --trials measurements, sharing one --db per graph; every configuration a search keeps is confirmed
    against the default by 30 paired runs (--confirm-kept), and each plan kept as faster is confirmed
    again in 3 fresh processes (--from PLAN --trials 0)."""
    names = a.only or list(TEST)
    fetch_models(a.out, names)
    runs = os.path.join(a.out, "study")
    os.makedirs(runs, exist_ok=True)
    for name in names:
        spec = TEST[name]
        db = os.path.join(runs, name + ".db.jsonl")
        for start in a.starts.split(","):
            for seed in range(a.seeds):
                for strategy in STRATEGIES:
                    record = os.path.join(runs, "%s-%s-%d-%s.json" % (name, start, seed, strategy))
                    plan = record[:-len(".json")] + ".plan.txt"
                    if os.path.exists(record):
                        recheck(a, spec, record, plan)
                        continue
                    print("fusion_search: %s from %s, seed %d, %s" % (name, start, seed, strategy), file=sys.stderr)
                    cmd = [a.kiln, "fuse", model_path(spec, a.out)] + spec[1] + [
                        "--strategy", strategy, "--trials", str(a.trials), "--seed", str(seed), "--from", start,
                        "--confirm-pairs", "30", "--confirm-kept", "--db", db, "--json", record, "-o", plan, "--quiet"]
                    if a.model and strategy != "random":
                        cmd += ["--advantage-model", a.model]
                    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                    recheck(a, spec, record, plan)


RECHECKS = 3


def recheck(a, spec, record, plan):
    """A kept plan confirmed again against the default in RECHECKS fresh processes: where a process's
    memory lands moves a partition's time by a few percent, so one process's confirmation is not enough."""
    r = json.load(open(record))
    if r["kept"] != "searched" or "rechecks" in r:
        return
    ratios = []
    for k in range(RECHECKS):
        out = record[:-len(".json")] + ".recheck.json"
        subprocess.run([a.kiln, "fuse", r["model"]] + spec[1] + ["--from", plan, "--trials", "0", "--confirm-pairs", "30",
                                                                   "--json", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
        ratios.append(json.load(open(out))["confirmed_ratio"])
        os.remove(out)
    r["rechecks"] = ratios
    with open(record, "w") as f:
        json.dump(r, f, indent=1)


# How close to random's final confirmed improvement counts as reaching it: half of how far one
# configuration's confirmations in separate processes differ (docs/fusion-search.md, the study).
REACH_TOLERANCE = 0.01


def curve(record):
    """After each measurement (index 0: the start), the confirmed ratio to the default of the
    configuration the search holds; the default itself is 1."""
    held, out = 1.0, []
    for t in record["trials"]:
        if t["kept"]:
            held = t["confirmed_ratio"] if t["confirmed_ratio"] is not None else 1.0
        out.append(held)
    return out


def progress(record):
    """curve(record) relative to its start: every confirmation of one search runs in one process, and
    dividing by the start's cancels what that process's placement of weights and code adds to all."""
    c = curve(record)
    return [v / c[0] for v in c]


def reach(c, target):
    """The first measurement at which curve `c` is within REACH_TOLERANCE of `target` (None: never)."""
    return next((i for i, v in enumerate(c) if v <= target + REACH_TOLERANCE), None)


def summarize(out):
    records = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "study", "*.json")))]
    groups = {}
    for r in records:
        name = os.path.basename(r["model"]).rsplit(".", 1)[0]
        groups.setdefault((name, r["from"]), {}).setdefault(r["strategy"], {})[r["seed"]] = r
    rows = []
    for (name, start), by in sorted(groups.items()):
        if any(s not in by for s in STRATEGIES):
            continue
        seeds = sorted(set.intersection(*(set(by[s]) for s in STRATEGIES)))
        row = {"model": name, "from": start, "seeds": len(seeds), "strategies": {}}
        for s in STRATEGIES:
            curves = [curve(by[s][k]) for k in seeds]
            row["strategies"][s] = {
                "start": statistics.mean(c[0] for c in curves),
                "end": statistics.mean(c[-1] for c in curves),
                "confirmed": [by[s][k]["confirmed_ratio"] for k in seeds],
                "kept": [by[s][k]["kept"] for k in seeds],
                "rechecks": [by[s][k].get("rechecks") for k in seeds],
                "mean_curve": [statistics.mean(c[i] for c in curves) for i in range(min(len(c) for c in curves))]}
        for s in STRATEGIES:
            shares = []
            for k in seeds:
                target = progress(by["random"][k])[-1]
                needed_random = reach(progress(by["random"][k]), target)
                needed = reach(progress(by[s][k]), target)
                if not needed_random:
                    continue  # random ended where it started, within the tolerance: nothing to reach
                shares.append(None if needed is None else needed / needed_random)
            row["strategies"][s]["reached"] = sum(x is not None for x in shares)
            row["strategies"][s]["runs"] = len(shares)
            got = [x for x in shares if x is not None]
            row["strategies"][s]["share"] = statistics.median(got) if got else None
        rows.append(row)
    return rows


def chart(row, path):
    W, H, L, B = 560, 280, 60, 40
    curves = {s: row["strategies"][s]["mean_curve"] for s in STRATEGIES}
    top = max(max(c) for c in curves.values())
    low = min(min(c) for c in curves.values())
    span = max(top - low, 1e-3)
    n = max(len(c) for c in curves.values()) - 1
    ys = lambda v: 20 + (H - B - 20) * (1 - (v - low) / span)
    xs = lambda i: L + (W - L - 110) * i / max(n, 1)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="12">%s from the %s configuration: confirmed ratio to the default vs measurements (mean of %d seeds)</text>'
           % (4, row["model"], row["from"], row["seeds"]),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - 110, H - B),
           '<line x1="%d" y1="20" x2="%d" y2="%d" stroke="black"/>' % (L, L, H - B)]
    for frac in (0, 0.5, 1):
        v = low + span * frac
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3f</text>' % (L - 4, ys(v) + 4, v))
    for i in range(0, n + 1, max(n // 4, 1)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xs(i), H - B + 14, i))
    out.append('<text x="%d" y="%d">measurements</text>' % ((W - 110) // 2, H - 8))
    for k, (s, c) in enumerate(curves.items()):
        pts = " ".join("%.1f,%.1f" % (xs(i), ys(v)) for i, v in enumerate(c))
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>' % (COLORS[s], pts))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - 100, 40 + 16 * k, COLORS[s], s))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def pct(x):
    return "%.1f%%" % (100 * x)


def share_text(s):
    if s["runs"] == 0:
        return "-"
    if s["share"] is None:
        return "not reached (0/%d)" % s["runs"]
    return "%s (%d/%d)" % (pct(s["share"]), s["reached"], s["runs"])


def replace_between(text, marker, lines, doc):
    begin, end = "<!-- %s:begin -->" % marker, "<!-- %s:end -->" % marker
    if begin not in text or end not in text:
        sys.exit("fusion_search: %s lacks the %s / %s markers" % (doc, begin, end))
    head, rest = text.split(begin, 1)
    return head + begin + "\n" + "\n".join(lines) + "\n" + end + rest.split(end, 1)[1]


def score_lines(record):
    lines = ["| unseen graph | samples | rank correlation | top 10% recall (chance: 10%) | "
             "top 10% sign right |", "|---|---|---|---|---|"]
    for d in record["datasets"]:
        lines.append("| %s | %d | %.2f | %s | %s |" % (d["model"].rsplit(".", 1)[0], d["samples"],
                                                      d["rank_correlation"], pct(d["top_recall"]),
                                                      pct(d["top_sign_agreement"])))
    return lines


def report(a):
    """Per graph and start, the confirmed ratio to the default at the start and the end of each
    strategy, the measurements guided and ranked need to come within REACH_TOLERANCE of random's final
    progress (a share of random's), the seed's Table 1, and SVG charts of the confirmed ratio held after
    each measurement (docs/fusion-search/); the tables go into --doc."""
    rows = summarize(a.out)
    if not rows:
        sys.exit("fusion_search: no complete study records in %s/study" % a.out)
    charts = os.path.join(os.path.dirname(a.doc), "fusion-search")
    os.makedirs(charts, exist_ok=True)
    lines = ["| graph | from | start | random: end | guided: end | guided: measurements vs random | "
             "ranked: end | ranked: measurements vs random | kept plans faster in 3 fresh processes (best median ratio) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        st = row["strategies"]
        rechecked = [statistics.median(x) for s in STRATEGIES for x in st[s]["rechecks"] if x]
        held = [r for r in rechecked if r < 1]
        lines.append("| %s | %s | %.3f | %.3f | %.3f | %s | %.3f | %s | %s |" % (
            row["model"], row["from"], statistics.mean(st[s]["start"] for s in STRATEGIES), st["random"]["end"],
            st["guided"]["end"], share_text(st["guided"]), st["ranked"]["end"], share_text(st["ranked"]),
            "%d of %d (best %.3f)" % (len(held), len(rechecked), min(held)) if held else "0 of %d" % len(rechecked)))
        chart(row, os.path.join(charts, "%s-%s.svg" % (row["model"], row["from"])))
    lines += ["", "The seed's Table 1 (XLA on TPU, from the default configuration):", "",
              "| graph | configurable nodes | guided | samples | random | samples |", "|---|---|---|---|---|---|"]
    lines += ["| %s | %d | %s | %d | %s | %d |" % r for r in SEED_TABLE]
    lines += [""] + ["![%s from %s](fusion-search/%s-%s.svg)" % (r["model"], r["from"], r["model"], r["from"]) for r in rows]
    text = replace_between(open(a.doc).read(), "study", lines, a.doc)
    scores = os.path.join(a.out, "score.json")
    if os.path.exists(scores):
        text = replace_between(text, "score", score_lines(json.load(open(scores))), a.doc)
    with open(a.doc, "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("fusion_search: wrote %s and %s/" % (a.doc, charts), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["train", "score", "study", "report"])
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "tools", "kiln", "kiln"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "fusion-search"))
    ap.add_argument("--sweeps", type=int, default=2)
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--starts", default="default,random")
    ap.add_argument("--only", action="append", default=[], choices=list(TEST))
    ap.add_argument("--model", help="the advantage model (default: the one kiln ships)")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "fusion-search.md"))
    a = ap.parse_args()
    {"train": train, "score": score, "study": study, "report": report}[a.mode](a)


if __name__ == "__main__":
    main()
