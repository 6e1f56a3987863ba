#!/usr/bin/python3
"""The tuning-strategy comparison (docs/tuning.md, "Strategy comparison", which gives the method in full).

For each benchmark kernel (two ResNet-50 convolutions, two BERT-base matmuls) it measures the whole knob
space with `kiln tune --strategy grid --interleave` (the reference table), then runs every strategy with the
same budget and seeds: replayed on the table (`kiln tune --replay`, many seeds, with and without transfer
data, plus the batch-size and incumbent-start ablations) and live (`kiln tune --no-transfer`, for wall time).
Reported per kernel and strategy: best-so-far curves (SVG), trials (and seconds) to 95% of the table's best,
and the speedup over the default schedule, beside ONNX Runtime's and kiln's one-kernel baselines. Results go
to --out as JSON and the tables and charts into docs/tuning.md between the markers.
--held-out, --fresh and --replicate replay eight held-out kernels, six fresh ones and a second measurement
of each benchmark table the same way.

    bench/tuning.py [--kiln build/tools/kiln/kiln] [--zoo DIR] [--out build/tuning]
                    [--trials 48] [--seeds 4] [--replay-seeds 48] [--skip-run] [--baseline-only]
                    [--replay-only [--replay-strategies 'VARIANT;...']] [--remeasure-tables]
                    [--rerun STRATEGY,...] [--held-out] [--fresh] [--replicate]
"""
import collections
import datetime
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zoo  # noqa: E402

# (model, description pattern, label, one-kernel baseline): the heaviest task whose description matches the
# pattern (a regular expression; -O3 blocks convolutions in channel blocks of the machine's vector width,
# 16 with AVX-512, 8 with AVX2); the baseline spec names the same ops and shapes.
KERNELS = [
    ("resnet50", r"kiln::ConvNCHWc 1x\d+x56x56x\d+ -> 1x\d+x56x56x\d+\+Relu$", "ResNet-50 conv 3x3, 64 ch, 56x56",
     ("conv_relu", 64, 56)),
    ("resnet50", r"kiln::ConvNCHWc 1x\d+x14x14x\d+ -> 1x\d+x14x14x\d+\+Relu$", "ResNet-50 conv 3x3, 256 ch, 14x14",
     ("conv_relu", 256, 14)),
    ("bert_base", r"MatMul 1x128x768 -> 1x128x3072", "BERT-base FFN up, 768->3072 (+GELU)", ("matmul_gelu", 768, 3072)),
    ("bert_base", r"MatMul 1x128x3072 -> 1x128x768", "BERT-base FFN down, 3072->768 (+residual)", ("matmul_residual", 3072, 768)),
]
STRATEGIES = ["random", "grid", "sa", "rl", "sa-as", "rl-as"]
BATCH = 8
CHAMELEON = ["rl", "sa-as", "rl-as"]  # the strategies the criterion compares with sa
# Replayed only: sa with other batch sizes (name, strategy, batch), and adaptive sampling over AutoTVM's plan
# size (the explorer proposes 64, clustering measures the knee's k of them: CHAMELEON's own setting).
# (name, strategy, batch, extra kiln tune arguments)
CONTEXT = [("sa, batch 1", "sa", 1, []), ("sa, batch 64", "sa", 64, []), ("sa-as, batch 64", "sa-as", 64, []),
           ("sa, incumbent start", "sa", BATCH, ["--start", "incumbent"]),
           ("sa-as, random start", "sa-as", BATCH, ["--start", "random"])]
ABLATIONS = ["sa, incumbent start", "sa-as, random start"]


def conv_is(cin, size, cout, out_size, epilogue):
    """A predicate on task descriptions: the channel-blocked convolution with these
    channels, map sizes and fused epilogue (whatever the channel block)."""
    def match(description):
        m = re.match(r"kiln::ConvNCHWc 1x(\d+)x(\d+)x\d+x(\d+) -> 1x(\d+)x(\d+)x\d+x(\d+)(.*)$", description)
        return bool(m) and (int(m[1]) * int(m[3]), int(m[2]), int(m[4]) * int(m[6]), int(m[5]), m[7]) == (
            cin, size, cout, out_size, epilogue)
    return match


# Held out (--held-out): (model, leading text of the description, predicate, label).
HELD_OUT = [
    ("resnet50", "kiln::ConvNCHWc", conv_is(128, 28, 128, 28, "+Relu"), "ResNet-50 conv 3x3, 128 ch, 28x28"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(512, 7, 512, 7, "+Relu"), "ResNet-50 conv 3x3, 512 ch, 7x7"),
    ("bert_base", "MatMul 1x128x768 -> 1x128x768", lambda d: d == "MatMul 1x128x768 -> 1x128x768+Add",
     "BERT-base Q/K/V projection, 768->768"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(256, 56, 64, 56, "+Relu"), "ResNet-50 conv 1x1, 256->64, 56x56"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(256, 56, 512, 28, ""), "ResNet-50 conv 1x1 stride 2, 256->512"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(128, 56, 128, 28, "+Relu"), "ResNet-50 conv 3x3 stride 2, 128 ch"),
    ("resnet50", "MatMul 1x2048", lambda d: d == "MatMul 1x2048 -> 1x1000+Add", "ResNet-50 classifier, 2048->1000"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(64, 56, 256, 56, "+Add+Relu"), "ResNet-50 conv 1x1, 64->256 (+residual)"),
]
# Fresh (--fresh): kernels none of the strategies were developed on: their tables are the first the
# strategies, as they stand, meet.
FRESH = [
    ("resnet50", "kiln::ConvNCHWc", conv_is(256, 28, 256, 14, "+Relu"), "ResNet-50 conv 3x3 stride 2, 256 ch"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(512, 14, 512, 7, "+Relu"), "ResNet-50 conv 3x3 stride 2, 512 ch"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(1024, 14, 256, 14, "+Relu"), "ResNet-50 conv 1x1, 1024->256, 14x14"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(128, 28, 512, 28, "+Add+Relu"), "ResNet-50 conv 1x1, 128->512 (+residual)"),
    ("resnet50", "kiln::ConvNCHWc", conv_is(2048, 7, 512, 7, "+Relu"), "ResNet-50 conv 1x1, 2048->512, 7x7"),
    ("bert_base", "MatMul 1x128x768 -> 1x128x768", lambda d: d == "MatMul 1x128x768 -> 1x128x768+Add+Add",
     "BERT-base attention output, 768->768 (+residual)"),
]
HELD_OUT_STRATEGIES = [(s, s, []) for s in ("sa", "sa-as", "rl-as")] + [
    (name, strategy, extra) for name, strategy, _, extra in CONTEXT if name in ABLATIONS]
HELD_BEGIN, HELD_END = "<!-- tuning-held-out:begin (bench/tuning.py --held-out) -->", "<!-- tuning-held-out:end -->"
FRESH_BEGIN, FRESH_END = "<!-- tuning-fresh:begin (bench/tuning.py --fresh) -->", "<!-- tuning-fresh:end -->"
# A section of kernels outside the comparison: its kernels, work folder prefix, results file, doc markers, noun.
HeldSection = collections.namedtuple("HeldSection", "kernels prefix results begin end noun")
HELD_SECTIONS = {"held_out": HeldSection(HELD_OUT, "held", "held_out.json", HELD_BEGIN, HELD_END, "Held-out kernels"),
                 "fresh": HeldSection(FRESH, "fresh", "fresh.json", FRESH_BEGIN, FRESH_END, "Fresh kernels")}
REPLICA_STRATEGIES = [(s, s, []) for s in ("sa", "sa-as", "rl-as")]
REPLICA_BEGIN = "<!-- tuning-replication:begin (bench/tuning.py --replicate) -->"
REPLICA_END = "<!-- tuning-replication:end -->"
SIBLING = {0: 1, 1: 0, 2: 3, 3: 2}  # the other kernel of the same template: transfer data
COLORS = {"random": "#888888", "grid": "#bbbbbb", "sa": "#1f77b4", "rl": "#2ca02c", "sa-as": "#ff7f0e", "rl-as": "#d62728"}
BEGIN, END = "<!-- tuning:begin (bench/tuning.py) -->", "<!-- tuning:end -->"
MEASURE = ["--repeats", "3", "--min-sample-ms", "1", "--quiet"]


def kiln_tune(kiln, model, args, db, report=None, log=True, measure=MEASURE):
    cmd = [kiln, "tune", model, "--db", db] + args + measure + (["--json", report] if report else [])
    if log:
        print("bench/tuning.py:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def records(db):
    return [json.loads(line) for line in open(db) if line.strip()]


def key(config):
    return json.dumps(config, sort_keys=True)


def pick_task(kiln, model, pattern, work, literal=None):
    """The signature and description of the heaviest task whose description matches pattern (a regular
    expression, or a predicate with `literal`, the descriptions' leading text)."""
    report = os.path.join(work, "tasks.json")
    if literal is None:
        literal = re.split(r"[\\^$.|?*+()\[\]{}]", pattern)[0]  # the pattern's leading plain text narrows the listing
    matches = pattern if callable(pattern) else (lambda d: re.match(pattern, d))
    kiln_tune(kiln, model, ["--trials", "1", "--kernel", literal], os.path.join(work, "tasks.jsonl"), report)
    tasks = [t for t in json.load(open(report))["tasks"] if matches(t["description"])]
    if not tasks:
        sys.exit("bench/tuning.py: no task of %s matches %r" % (model, pattern))
    best = max(tasks, key=lambda t: t["uses"] * t["default_ms"])
    return best["signature"], best["description"]


def proposals_of(db, signature):
    """The configurations a run measured for the kernel, in order: not the
    default, not the confirmation round, not copies of code measured already
    (transfer rows are other kernels')."""
    return [key(r["config"]) for r in records(db) if r["signature"] == signature and not r["default"]
            and r["strategy"] not in ("confirm", "same-code")]


def load_table(result, table_db):
    """The reference table into `result`, as `kiln tune --replay` takes it: a
    configuration's time is the median of its valid records; where every one
    carries an anchor (measured with --interleave), the median of its
    time / anchor ratios times the median anchor (the drift divided out)."""
    table, default = anchored_medians([r for r in records(table_db) if r["signature"] == result["signature"]])
    result.update({"space": len(table), "default_ms": table[default], "best_ms": min(table.values()), "table": table})


def anchored_medians(recs):
    """Per configuration key, its time as --replay computes it from `recs` (one kernel's records); and the default's key."""
    ok = [r for r in recs if r["status"] == "ok"]
    anchored = all(r.get("anchor_ms", 0) > 0 for r in ok)
    scale = statistics.median_high([r["anchor_ms"] for r in ok]) if anchored else 1.0
    times = collections.defaultdict(list)
    for r in ok:
        times[key(r["config"])].append(r["ms"] / r["anchor_ms"] if anchored else r["ms"])
    default = next(key(r["config"]) for r in ok if r["default"])
    return {k: statistics.median_high(v) * scale for k, v in times.items()}, default


def table_agreement(work, signature):
    """How far the reference table can be trusted: the table of the first half
    of its passes against the second half's (tables_agreement)."""
    passes = [[r for r in records(os.path.join(work, "table-pass%d.jsonl" % n)) if r["signature"] == signature]
              for n in range(TABLE_PASSES)]
    half = TABLE_PASSES // 2
    return tables_agreement([r for p in passes[:half] for r in p], [r for p in passes[half:] for r in p])


def tables_agreement(first, second):
    """How well two tables of one kernel (their records) agree: the share of
    the first's configurations within 95% of its best that are within 95% in
    the second (and the other way round, the lower of the two), and the
    5th..95th percentiles of the ratio of a configuration's time relative to
    its table's best, first over second, over the configurations within 1.25x
    of the best in either table."""
    a, _ = anchored_medians(first)
    b, _ = anchored_medians(second)
    relative = [{k: v / min(t.values()) for k, v in t.items()} for t in (a, b)]  # each table's times over its best
    near = lambda t, factor: {k for k, v in t.items() if v <= factor}
    target_a, target_b = (near(t, 1 / 0.95) for t in relative)
    ratios = sorted(relative[0][k] / relative[1][k] for k in near(relative[0], 1.25) | near(relative[1], 1.25)
                    if k in a and k in b)
    pct = lambda q: ratios[int(q * (len(ratios) - 1))]
    return {"targets_kept": min(len(target_a & target_b) / len(target_a), len(target_a & target_b) / len(target_b)),
            "targets": [len(target_a), len(target_b)],
            "near_ratio_p5": pct(0.05), "near_ratio_p95": pct(0.95), "near": len(ratios)}


def live_runs(kiln, model, signature, work, strategies, trials, seeds):
    """Each strategy measured on this machine, `seeds` runs, no transfer."""
    runs = []
    for strategy in strategies:
        for seed in range(seeds):
            db = os.path.join(work, "%s-%d.jsonl" % (strategy, seed))
            report = os.path.join(work, "%s-%d.json" % (strategy, seed))
            if os.path.exists(db):
                os.remove(db)
            kiln_tune(kiln, model, ["--strategy", strategy, "--trials", str(trials), "--kernel", signature,
                                    "--seed", str(seed), "--batch", str(BATCH), "--no-transfer"], db, report)
            task = [t for t in json.load(open(report))["tasks"] if t["signature"] == signature][0]
            runs.append({"mode": "live", "strategy": strategy, "seed": seed, "proposals": proposals_of(db, signature),
                         "seconds": task["seconds"], "measured_best_ms": task["best_ms"],
                         "measured_default_ms": task["default_ms"]})
    return runs


def rerun_live(kiln, zoo_dir, out, index, result, strategies, trials, seeds):
    """The live runs of `strategies` again, the others kept."""
    model = os.path.join(zoo_dir, result["model"] + "-default.onnx")
    fresh = live_runs(kiln, model, result["signature"], os.path.join(out, "k%d" % index), strategies, trials, seeds)
    result["runs"] = [r for r in result["runs"] if not (r["mode"] == "live" and r["strategy"] in strategies)] + fresh
    result["rerun"] = {"date": datetime.date.today().isoformat(), "strategies": strategies}
    return result


TABLE_PASSES = 6
# Each pass's batches timed in interleaved rounds beside the default (its time kept as each record's anchor), 9
# samples each: the drift between batches divides out (load_table, kiln tune --replay).
TABLE_BATCH, TABLE_REPEATS = 16, 9
TABLE_MEASURE = ["--interleave", "--repeats", str(TABLE_REPEATS), "--batch", str(TABLE_BATCH), "--min-sample-ms", "1",
                 "--quiet"]


def measure_table(kiln, model, signature, work, result, measure=True):
    """The reference table, loaded into `result` (load_table): the kernel's
    whole space measured TABLE_PASSES times, one `grid` pass after another,
    each batch timed in interleaved rounds next to the default (the anchor).
    On a shared VM a configuration's plain time drifts: back-to-back passes
    disagreed by 0.5x to 1.8x per configuration (5th to 95th percentiles,
    2026-11-27), and a table's best was often a configuration measured in a
    fast moment; anchored, the drift between batches divides out. The
    table's agreement with itself (table_agreement) goes into `result`.
    Without `measure`, the table and passes measured before in `work` are
    loaded instead."""
    table_db = os.path.join(work, "table.jsonl")
    if measure:
        with open(table_db, "w") as table:
            for n in range(TABLE_PASSES):
                pass_db = os.path.join(work, "table-pass%d.jsonl" % n)
                if os.path.exists(pass_db):
                    os.remove(pass_db)
                kiln_tune(kiln, model, ["--strategy", "grid", "--trials", "100000", "--kernel", signature,
                                        "--no-transfer"], pass_db, measure=TABLE_MEASURE)
                with open(pass_db) as f:
                    table.write(f.read())
    result["table_passes"] = TABLE_PASSES
    result["table_timing"] = "interleaved"
    result["table_agreement"] = table_agreement(work, signature)
    load_table(result, table_db)
    return table_db


def replayed_run(kiln, model, table, signature, name, strategy, batch, extra, seed, trials, db, transfer):
    """One strategy run answered from `table` into `db` (which, with transfer, already holds the transfer data)."""
    kiln_tune(kiln, model, ["--replay", table, "--strategy", strategy, "--trials", str(trials), "--kernel", signature,
                            "--seed", str(seed), "--batch", str(batch)] + extra + ([] if transfer else ["--no-transfer"]),
              db, log=False)
    return {"mode": "transfer" if transfer else "replay", "strategy": name, "seed": seed,
            "proposals": proposals_of(db, signature)}


def replay_without_transfer(kiln, model, table, signature, work, strategies, trials, seeds):
    """`strategies` ((name, strategy, extra kiln tune arguments)) replayed on
    `table`, `seeds` seeds each, batches of BATCH, no transfer; each run's
    database in `work`. Returns the runs."""
    def run(job):
        name, strategy, extra, seed = job
        db = os.path.join(work, "%s-%d.jsonl" % (zoo.sanitize(name), seed))
        if os.path.exists(db):
            os.remove(db)
        return replayed_run(kiln, model, table, signature, name, strategy, BATCH, extra, seed, trials, db, False)

    jobs = [(name, strategy, extra, seed) for name, strategy, extra in strategies for seed in range(seeds)]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        return list(pool.map(run, jobs))


def run_kernel(kiln, zoo_dir, out, index, trials, seeds):
    """The reference table and the live runs of one kernel."""
    model_name, pattern, label, _ = KERNELS[index]
    model = os.path.join(zoo_dir, model_name + "-default.onnx")
    work = os.path.join(out, "k%d" % index)
    os.makedirs(work, exist_ok=True)
    signature, description = pick_task(kiln, model, pattern, work)
    result = {"model": model_name, "label": label, "signature": signature, "description": description,
              "trials": trials, "date": datetime.date.today().isoformat()}
    measure_table(kiln, model, signature, work, result)
    result["runs"] = live_runs(kiln, model, signature, work, STRATEGIES, trials, seeds)
    with open(os.path.join(out, "kernel%d.json" % index), "w") as f:
        json.dump(result, f)
    return result


def replay_kernel(kiln, zoo_dir, out, index, result, trials, seeds, only=None):
    """Every strategy (and sa with other batch sizes) replayed on the
    kernel's table, without and with transfer from the sibling kernel's table
    (with `only`: just those strategies, the other replayed runs kept)."""
    model = os.path.join(zoo_dir, result["model"] + "-default.onnx")
    work = os.path.join(out, "k%d" % index, "replay")
    os.makedirs(work, exist_ok=True)
    table = os.path.join(out, "k%d" % index, "table.jsonl")
    load_table(result, table)
    transfer_table = os.path.join(out, "k%d" % SIBLING[index], "table.jsonl")
    variants = [v for v in [(s, s, BATCH, []) for s in STRATEGIES] + CONTEXT if not only or v[0] in only]
    jobs = [(mode, name, strategy, batch, extra, seed) for mode in ("replay", "transfer")
            for name, strategy, batch, extra in variants
            for seed in range(seeds) if mode == "replay" or os.path.exists(transfer_table)]
    print("bench/tuning.py: kernel %d: %d replayed runs" % (index, len(jobs)), file=sys.stderr, flush=True)

    def run(job):
        mode, name, strategy, batch, extra, seed = job
        db = os.path.join(work, "%s-%s-%d-%d.jsonl" % (mode, zoo.sanitize(name), batch, seed))
        if mode == "transfer":
            shutil.copy(transfer_table, db)
        elif os.path.exists(db):
            os.remove(db)
        return replayed_run(kiln, model, table, result["signature"], name, strategy, batch, extra, seed, trials, db,
                            mode == "transfer")

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        replayed = list(pool.map(run, jobs))
    result["runs"] = [r for r in result["runs"] if r["mode"] == "live" or (only and r["strategy"] not in only)] + replayed
    result["replay_seeds"] = seeds
    result["replayed"] = datetime.date.today().isoformat()
    with open(os.path.join(out, "kernel%d.json" % index), "w") as f:
        json.dump(result, f)
    return result


def baseline_model(spec, path):
    """A one-kernel ONNX model with the benchmark kernel's ops and shapes
    (random weights), as exported by PyTorch."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    kind, a, b = spec
    const = lambda name, shape, scale: numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32), name)
    if kind == "conv_relu":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, a, b, b])]
        inits = [const("w", [a, a, 3, 3], (9 * a) ** -0.5), const("bias", [a], 0.1)]
        nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                 helper.make_node("Relu", ["c"], ["y"])]
        out = [1, a, b, b]
    else:
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, a])]
        inits = [const("w", [a, b], a ** -0.5), const("bias", [b], 0.1)]
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["bias", "m"], ["h"])]
        if kind == "matmul_gelu":  # h * (1 + erf(h / sqrt 2)) * 0.5
            inits += [scalar("sqrt2", 1.4142135), scalar("one", 1.0), scalar("half", 0.5)]
            nodes += [helper.make_node("Div", ["h", "sqrt2"], ["t"]), helper.make_node("Erf", ["t"], ["e"]),
                      helper.make_node("Add", ["e", "one"], ["p"]), helper.make_node("Mul", ["h", "p"], ["q"]),
                      helper.make_node("Mul", ["q", "half"], ["y"])]
        else:  # residual + h
            inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 128, b]))
            nodes.append(helper.make_node("Add", ["r", "h"], ["y"]))
        out = [1, 128, b]
    graph = helper.make_graph(nodes, kind, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def measure_baseline(kiln, out, index, result, rounds=3):
    """p50 latency of the kernel as a one-kernel model: ONNX Runtime (CPU,
    2 threads like kiln on this VM), kiln untuned, kiln with the reference
    table as tuning database (its best configuration applied)."""
    work = os.path.join(out, "k%d" % index)
    model = os.path.join(work, "baseline.onnx")
    baseline_model(KERNELS[index][3], model)
    paths = zoo.make_inputs(zoo.input_specs(model), os.path.join(work, "baseline-inputs"), 0)
    runs = ["--warmup", "20", "--runs", "200"]
    threads = str(os.cpu_count())
    p50 = {"ort": [], "kiln": [], "kiln_tuned": []}
    for r in range(rounds):
        print("bench/tuning.py: baseline %d round %d/%d" % (index, r + 1, rounds), file=sys.stderr, flush=True)
        p50["ort"].append(zoo.run_ort(model, paths, extra=runs + ["--threads", threads])["latency_ms"]["p50"])
        p50["kiln"].append(zoo.run_kiln_bench(kiln, model, paths, "cpu", runs)["latency_ms"]["p50"])
        tuned = zoo.run_kiln_bench(kiln, model, paths, "cpu", runs + ["--tuning-db", os.path.join(work, "table.jsonl")])
        p50["kiln_tuned"].append(tuned["latency_ms"]["p50"])
    median = lambda v: sorted(v)[len(v) // 2]
    result["baseline"] = {k: median(v) for k, v in p50.items()}
    compiled = subprocess.run([kiln, "compile", model, "--tuning-db", os.path.join(work, "table.jsonl"), "-o",
                               os.path.join(work, "baseline.kiln"), "--quiet"], check=True, capture_output=True, text=True).stdout
    result["baseline"]["tuning"] = [l.strip() for l in compiled.splitlines() if "tuning db:" in l][0]
    with open(os.path.join(out, "kernel%d.json" % index), "w") as f:
        json.dump(result, f)
    return result


def curve(result, run):
    """Best-so-far reference time after each trial (index 0: the default)."""
    best = result["default_ms"]
    out = [best]
    for p in run["proposals"][:result["trials"]]:
        best = min(best, result["table"].get(p, best))
        out.append(best)
    return out


def within_95(result):
    """How many configurations of the result's table are within 95% of its best."""
    return sum(1 for ms in result["table"].values() if result["best_ms"] / ms >= 0.95)


def to_95(result, run):
    """Trials until the search measures a configuration within 95% of the
    table's best. The default, measured before the search, does not count:
    on a kernel whose default is already that good every run would reach it
    at trial 0, and the strategies' searches would not be compared at all."""
    target = result["best_ms"] / 0.95
    for i, p in enumerate(run["proposals"][:result["trials"]]):
        if result["table"].get(p, float("inf")) <= target:
            return i + 1
    return None


def ratio_interval(numerator, denominator, resamples=2000):
    """A 90% bootstrap interval of mean(numerator) / mean(denominator), the
    two lists of trials to 95% resampled independently (their seeds are not
    paired); seeded, so a re-render gives the same interval."""
    rng = random.Random(0)
    ratios = sorted(statistics.fmean(rng.choices(numerator, k=len(numerator))) /
                    statistics.fmean(rng.choices(denominator, k=len(denominator))) for _ in range(resamples))
    return ratios[int(0.05 * resamples)], ratios[int(0.95 * resamples) - 1]


def criterion(summary):
    """The issue's comparison on one kernel (a summarize() of its replayed
    runs): the CHAMELEON-style strategy with the fewest mean trials to 95%,
    that mean over sa's, and the ratio's 90% bootstrap interval."""
    best = min((n for n in CHAMELEON if n in summary), key=lambda n: summary[n]["mean"])
    low, high = ratio_interval(summary[best]["counted"], summary["sa"]["counted"])
    return best, summary[best]["mean"] / summary["sa"]["mean"], low, high


def summarize(result, mode, names):
    """Per strategy name: runs reaching 95%, mean and median trials to 95%
    (a run that never reaches it counts as budget + 1; `counted` keeps each
    run's), seconds to 95% (live)."""
    rows = {}
    for name in names:
        runs = [r for r in result["runs"] if r["mode"] == mode and r["strategy"] == name]
        if not runs:
            continue
        reached = [to_95(result, r) for r in runs]
        counted = [x if x is not None else result["trials"] + 1 for x in reached]
        finals = [curve(result, r)[-1] for r in runs]
        secs = [r["seconds"] * (x / max(len(r["proposals"]), 1)) for r, x in zip(runs, reached)
                if x is not None and "seconds" in r]
        rows[name] = {"reached": sum(x is not None for x in reached), "runs": len(runs),
                      "mean": sum(counted) / len(counted), "median": statistics.median(counted), "counted": counted,
                      "seconds_to_95": sum(secs) / len(secs) if secs else None,
                      "final_ms": sum(finals) / len(finals),
                      "seconds": sum(r.get("seconds", 0) for r in runs) / len(runs)}
    return rows


def chart(result, path):
    W, H, L, B = 560, 300, 60, 40
    curves = {}
    for strategy in STRATEGIES:
        runs = [curve(result, r) for r in result["runs"] if r["mode"] == "replay" and r["strategy"] == strategy]
        n = min(len(c) for c in runs)
        curves[strategy] = [sum(c[i] for c in runs) / len(runs) for i in range(n)]
    top = max(max(c) for c in curves.values())
    low = result["best_ms"] * 0.97
    ys = lambda v: 15 + (H - B - 15) * (1 - (v - low) / max(top - low, 1e-12))
    xs = lambda i: L + (W - L - 130) * i / max(result["trials"], 1)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="12">%s: best-so-far time (replayed, mean of seeds) vs trials</text>' % (L, result["label"])]
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - 130, H - B))
    out.append('<line x1="%d" y1="15" x2="%d" y2="%d" stroke="black"/>' % (L, L, H - B))
    for frac in (0, 0.25, 0.5, 0.75, 1):
        v = low + (top - low) * frac
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3f</text>' % (L - 4, ys(v) + 4, v))
    for i in range(0, result["trials"] + 1, max(result["trials"] // 4, 1)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xs(i), H - B + 14, i))
    out.append('<text x="%d" y="%d">trials</text>' % ((W - 130) // 2, H - 8))
    out.append('<text x="4" y="%d">ms</text>' % (H // 2))
    target = result["best_ms"] / 0.95
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>' % (L, ys(target), W - 130, ys(target)))
    out.append('<text x="%d" y="%.1f" fill="#666">95%% of best</text>' % (W - 126, ys(target) + 4))
    for n, (strategy, c) in enumerate(curves.items()):
        pts = " ".join("%.1f,%.1f" % (xs(i), ys(v)) for i, v in enumerate(c))
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>' % (COLORS[strategy], pts))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - 100, 40 + 16 * n, COLORS[strategy], strategy))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def passes_text(result):
    """How the result's reference table was measured, for the rendered text."""
    passes = result.get("table_passes", 1)
    if result.get("table_timing") == "interleaved":
        return ("in %d passes, one after another, each batch of %d timed in interleaved rounds (%d samples each) "
                "beside the default configuration, the anchor; a configuration's time is the median of its time / "
                "anchor ratios times the median anchor, so the machine's drift between batches divides out" % (
                    passes, TABLE_BATCH, TABLE_REPEATS))
    return "once (each a median of 3 samples)" if passes == 1 else (
        "in %d passes, one after another, its time the median of the passes (each a median of 3 samples)" % passes)


def agreement_text(result):
    """How well the table's two halves agree (table_agreement), for the rendered text; "" if not measured."""
    a = result.get("table_agreement")
    if not a:
        return ""
    return ("The table against itself (its first %d passes against the last %d): %d and %d configurations within 95%% "
            "of each half's best, at least %.0f%% of either half's within 95%% in the other; near-best configurations' times "
            "relative to the best agree within %.2f..%.2f (5th..95th percentiles, %d configurations)." % (
                result["table_passes"] // 2, result["table_passes"] - result["table_passes"] // 2, a["targets"][0],
                a["targets"][1], 100 * a["targets_kept"], a["near_ratio_p5"], a["near_ratio_p95"], a["near"]))


def measured_when(result):
    """The date of the measurements, and of any later rerun of some strategies or replay of the tables."""
    date = result.get("date", datetime.date.today().isoformat())
    later = []
    if result.get("rerun"):
        later.append("%s measured again on %s" % (" and ".join(result["rerun"]["strategies"]), result["rerun"]["date"]))
    if result.get("replayed", date) != date:
        later.append("replayed again on %s" % result["replayed"])
    return date + (" (%s)" % "; ".join(later) if later else "")


def render(results, doc, charts_dir, trials, seeds):
    replay_seeds = results[0].get("replay_seeds", 0)
    lines = [BEGIN, "",
             "Measured %s on %s; budget %d trials per run, batches of %d. Replayed: %d seeds per strategy, each "
             "proposal's time read from the reference table (`kiln tune --replay`), without transfer and with the "
             "other kernel of the same template's table as transfer data. Live: %d seeds, measured, `--no-transfer`, "
             "proposals scored against the table. The reference table: every configuration of the space measured "
             "by `grid` %s. Trials to 95%%: configurations the search measured "
             "until one is within 95%% of the table's best (the default, measured first, is not the search's find); "
             "a run that never gets there counts as %d." % (
                 measured_when(results[0]), zoo.describe_machine(), trials, BATCH, replay_seeds, seeds,
                 passes_text(results[0]), trials + 1), ""]
    fmt = lambda v, f: "-" if v is None else f % v
    verdicts, clear, plan_verdicts = [], [], []
    for i, r in enumerate(results):
        name = "kernel%d.svg" % i
        chart(r, os.path.join(charts_dir, name))
        names = STRATEGIES + [c[0] for c in CONTEXT]
        replay, transfer, live = (summarize(r, m, names) for m in ("replay", "transfer", "live"))
        lines += ["### %s" % r["label"], "",
                  "`%s` (`%s`), %d configurations; default %.3f ms, best known %.3f ms (%.2fx)." %
                  (r["description"], r["signature"], r["space"], r["default_ms"], r["best_ms"], r["default_ms"] / r["best_ms"]),
                  ""] + ([agreement_text(r), ""] if agreement_text(r) else []) + [
                  "![%s](tuning/%s)" % (r["label"], name), "",
                  "| strategy | replayed: reaching 95% | mean trials | median | with transfer: reaching | mean trials "
                  "| live: reaching | mean trials | seconds to 95% | final best ms |",
                  "|---|---|---:|---:|---|---:|---|---:|---:|---:|"]
        for n in names:
            a, t, l = replay.get(n), transfer.get(n), live.get(n)
            cells = [n]
            cells += ["%d/%d" % (a["reached"], a["runs"]), "%.1f" % a["mean"], "%.1f" % a["median"]] if a else ["-"] * 3
            cells += ["%d/%d" % (t["reached"], t["runs"]), "%.1f" % t["mean"]] if t else ["-"] * 2
            cells += (["%d/%d" % (l["reached"], l["runs"]), "%.1f" % l["mean"], fmt(l["seconds_to_95"], "%.1f"),
                       "%.3f" % l["final_ms"]] if l else ["-"] * 4)
            lines.append("| " + " | ".join(cells) + " |")
        sa = replay["sa"]["mean"]
        best, ratio, low, high = criterion(replay)
        verdicts.append(ratio <= 0.5)
        clear.append(high <= 0.5)
        lines += ["", "Replayed, best CHAMELEON-style strategy vs sa (mean trials to 95%%): %s %.1f vs %.1f "
                  "(%.2fx, 90%% bootstrap interval %.2f-%.2f) -> %s." % (
                      best, replay[best]["mean"], sa, ratio, low, high,
                      "not at most half" if ratio > 0.5 else "at most half" if high <= 0.5 else
                      "at most half, but the interval reaches past 0.5")]
        inc, rand = (replay.get(n) for n in ABLATIONS)
        if inc and rand:
            lines += ["Where it comes from: sa starting from the incumbent %.1f (%.2fx of sa), sa-as starting at random "
                      "%.1f (%.2fx)." % (inc["mean"], inc["mean"] / sa, rand["mean"], rand["mean"] / sa)]
        wide, wide_as = replay.get("sa, batch 64"), replay.get("sa-as, batch 64")
        if wide and wide_as:
            plan_ratio = wide_as["mean"] / wide["mean"]
            plan_verdicts.append(plan_ratio <= 0.5)
            lines += ["In CHAMELEON's setting (AutoTVM's plan size of 64 for both): sa-as %.1f vs sa %.1f (%.2fx)." % (
                wide_as["mean"], wide["mean"], plan_ratio)]
        lines += [""]
    lines += ["Kernels where a CHAMELEON-style strategy needed at most half of sa's trials (replayed, both with "
              "batches of %d): %d of %d (%d with the whole 90%% interval at most half)." % (
                  BATCH, sum(verdicts), len(results), sum(clear))]
    if plan_verdicts:
        lines += ["In CHAMELEON's setting (plan size 64, adaptive sampling measuring the knee's k of the explorer's "
                  "64 where sa measures all of them): %d of %d; but with this budget `sa, batch 64`'s first round, "
                  "random, is the whole run, so that baseline is random search, not a model-guided one, and kiln "
                  "does not count it." % (sum(plan_verdicts), len(plan_verdicts))]
    lines += [""]
    lines += ["### Tuned kernels vs the library", "",
              "Each kernel alone as a one-kernel ONNX model (same ops and shapes, random weights), p50 of 200 runs, "
              "median of 3 rounds, each runtime with %d threads: ONNX Runtime (CPU execution provider, MLAS), kiln "
              "with its default schedule, kiln with the reference table as tuning database (its best configuration "
              "applied). Ratios above 1: kiln slower." % os.cpu_count(), "",
              "| kernel | ONNX Runtime ms | kiln default ms | kiln tuned ms | default / ORT | tuned / ORT | tuning db |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        b = r.get("baseline")
        if b:
            lines.append("| %s | %.3f | %.3f | %.3f | %.2f | %.2f | %s |" % (
                r["label"], b["ort"], b["kiln"], b["kiln_tuned"], b["kiln"] / b["ort"], b["kiln_tuned"] / b["ort"],
                b["tuning"].replace("tuning db: ", "").split(",")[0]))
    lines += ["", END]
    zoo.replace_section(doc, BEGIN, END, lines)


def held_out(kiln, zoo_dir, out, trials, seeds, section, measure=True):
    """The kernels of a HELD_SECTIONS section: a reference table each, then
    sa, sa-as, rl-as and the ablations replayed on it without transfer;
    results to the section's file. Without `measure`, the tables measured
    before are replayed again."""
    sect = HELD_SECTIONS[section]
    rows = []
    for i, (model_name, literal, predicate, label) in enumerate(sect.kernels):
        model = os.path.join(zoo_dir, model_name + "-default.onnx")
        work = os.path.join(out, "%s%d" % (sect.prefix, i))
        os.makedirs(work, exist_ok=True)
        signature, description = pick_task(kiln, model, predicate, work, literal)
        result = {"model": model_name, "label": label, "signature": signature, "description": description,
                  "trials": trials, "runs": []}
        table = measure_table(kiln, model, signature, work, result, measure)
        result["written"] = passes_written(work)
        result["runs"] = replay_without_transfer(kiln, model, table, signature, work, HELD_OUT_STRATEGIES, trials, seeds)
        rows.append(result)
    return save_section(os.path.join(out, sect.results), rows, seeds)


def save_section(path, rows, seeds):
    """The results of a section of its own (held-out kernels, replication) to
    `path` with the date and seeds, for --skip-run; returns `rows`."""
    with open(path, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "seeds": seeds, "kernels": rows}, f)
    return rows


def render_held_out(rows, doc, seeds, date, section="held_out"):
    sect = HELD_SECTIONS[section]
    names = [n for n, _, _ in HELD_OUT_STRATEGIES]
    if all("written" in r for r in rows):  # the tables' times, and the replays' date where it is another day
        first, last = min(r["written"][0] for r in rows), max(r["written"][1] for r in rows)
        span = written_span(first, last)
        date = span if date == first[:10] else "%s (replayed %s)" % (span, date)
    lines = [sect.begin, "", "Measured %s on %s; each kernel's whole space measured by `grid` %s, then %d seeds per "
             "strategy replayed on it (`--no-transfer`, budget %d, batches of %d). Mean trials to 95%% of the "
             "table's best (a run that never gets there counts as %d); in brackets, the ratio to sa; the last column "
             "the better of sa-as and rl-as over sa with its 90%% bootstrap interval.%s" % (
                 date, zoo.describe_machine(), passes_text(rows[0]), seeds, rows[0]["trials"], BATCH,
                 rows[0]["trials"] + 1, " Halves: of the configurations within 95% of the best in the table of "
                 "the first half of the passes, and in the last half's, the lower share within 95% in the other."
                 if "table_agreement" in rows[0] else ""), "",
             "| kernel | configurations | default / best | within 95% of the best | halves | " + " | ".join(names) +
             " | best vs sa |", "|---|---:|---:|---:|---:|" + "---:|" * len(names) + "---|"]
    halved, clear, to_find, halved_to_find = 0, 0, 0, 0
    for r in rows:
        summary = summarize(r, "replay", names)
        sa = summary["sa"]["mean"]
        good = within_95(r)
        agreement = r.get("table_agreement")
        cells = [r["label"], str(r["space"]), "%.2f" % (r["default_ms"] / r["best_ms"]), str(good),
                 "%.0f%%" % (100 * agreement["targets_kept"]) if agreement else "-"]
        cells += ["%.1f" % sa] + ["%.1f (%.2f)" % (summary[n]["mean"], summary[n]["mean"] / sa) for n in names[1:]]
        best, ratio, low, high = criterion(summary)
        cells.append("%s %.2f (%.2f-%.2f)" % (best, ratio, low, high))
        half = ratio <= 0.5
        halved += half
        clear += high <= 0.5
        if r["default_ms"] / r["best_ms"] > 1 / 0.95:  # the default is not within 95%: something to find
            to_find += 1
            halved_to_find += half
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", sect.noun + " where sa-as or rl-as needed at most half of sa's trials: %d of %d (%d with the whole "
              "interval below 0.5); of the %d whose default is not within 95%% of the best (the others' search finds a "
              "second configuration that good, which the tuned model hardly needs): %d." % (
                  halved, len(rows), clear, to_find, halved_to_find), "", sect.end]
    zoo.replace_section(doc, sect.begin, sect.end, lines)


def written_span(first, last):
    """Two passes_written times as one span: 'YYYY-MM-DD HH:MM..HH:MM', the
    last one's date repeated only when it is another day."""
    return "%s..%s" % (first, last[11:] if last[:10] == first[:10] else last)


def passes_written(work):
    """When a table's passes were written: the first and last pass file's times."""
    times = sorted(os.path.getmtime(os.path.join(work, f)) for f in os.listdir(work) if f.startswith("table-pass"))
    return [time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) for t in (times[0], times[-1])]


def replicate(kiln, zoo_dir, out, kernels, trials, seeds, measure=True):
    """Each benchmark kernel's reference table measured a second time as the
    first was (measure_table, into k<i>/replica), all four before anything is
    replayed (the replays would only slow the machine between them); then the
    two tables' agreement, and sa, sa-as and rl-as replayed without transfer
    on the first table, the second and the two together; results to
    replication.json. Without `measure`, the second tables measured before
    are replayed again."""
    firsts = [json.load(open(os.path.join(out, "kernel%d.json" % i))) for i in kernels]
    model = lambda first: os.path.join(zoo_dir, first["model"] + "-default.onnx")
    works = [os.path.join(out, "k%d" % i, "replica") for i in kernels]
    for first, work in zip(firsts, works if measure else []):
        os.makedirs(work, exist_ok=True)
        measure_table(kiln, model(first), first["signature"], work, {"signature": first["signature"]})
    rows = []
    for i, first, work in zip(kernels, firsts, works):
        first_table, second_table = os.path.join(out, "k%d" % i, "table.jsonl"), os.path.join(work, "table.jsonl")
        both_table = os.path.join(work, "both.jsonl")
        with open(both_table, "w") as f:
            for table in (first_table, second_table):
                with open(table) as t:
                    f.write(t.read())
        own = lambda table: [r for r in records(table) if r["signature"] == first["signature"]]
        row = {"label": first["label"], "passes": TABLE_PASSES,
               "written": [passes_written(os.path.dirname(first_table)), passes_written(work)],
               "agreement": tables_agreement(own(first_table), own(second_table)), "tables": {}}
        for name, table in (("first", first_table), ("second", second_table), ("both", both_table)):
            result = {"signature": first["signature"], "trials": trials}
            load_table(result, table)
            replays = os.path.join(work, "replay-" + name)
            os.makedirs(replays, exist_ok=True)
            result["runs"] = replay_without_transfer(kiln, model(first), table, first["signature"], replays,
                                                     REPLICA_STRATEGIES, trials, seeds)
            row["tables"][name] = result
        print("bench/tuning.py: replicated %s" % first["label"], file=sys.stderr, flush=True)
        rows.append(row)
    return save_section(os.path.join(out, "replication.json"), rows, seeds)


def render_replication(rows, doc, seeds, date):
    names = [n for n, _, _ in REPLICA_STRATEGIES]
    lines = [REPLICA_BEGIN, "",
             "Replayed %s on %s: each benchmark kernel's table measured a second time as the first was (%d passes, "
             "interleaved) later, at the times in the table; sa, sa-as and rl-as replayed on the first table, the "
             "second and both together (%d seeds, `--no-transfer`, budget %d, batches of %d). Cells: the better of sa-as and rl-as, "
             "mean trials to 95%% of that table's best over sa's, with the 90%% bootstrap interval. Agreement: of "
             "each table's configurations within 95%% of its best, the lower share within 95%% in the other; near-best "
             "configurations' times relative to the best, first table over second, 5th..95th percentiles." % (
                 date, zoo.describe_machine(), rows[0]["passes"], seeds, rows[0]["tables"]["first"]["trials"], BATCH),
             "", "| kernel | first table written | second table written | within 95% (first / second / both) | "
             "kept | near-best agreement | first table | second table | both |", "|---|---|---|---|---:|---|---|---|---|"]
    counts = {name: [0, 0] for name in ("first", "second", "both")}  # at most half; with the interval too
    for row in rows:
        cells = [row["label"]] + [written_span(*w) for w in row["written"]]
        cells.append(" / ".join(str(within_95(t)) for t in row["tables"].values()))
        a = row["agreement"]
        cells += ["%.0f%%" % (100 * a["targets_kept"]), "%.2f..%.2f" % (a["near_ratio_p5"], a["near_ratio_p95"])]
        for name, table in row["tables"].items():
            best, ratio, low, high = criterion(summarize(table, "replay", names))
            counts[name][0] += ratio <= 0.5
            counts[name][1] += high <= 0.5
            cells.append("%s %.2f (%.2f-%.2f)" % (best, ratio, low, high))
        lines.append("| " + " | ".join(cells) + " |")
    where = {"first": "on the first table", "second": "on the second", "both": "on both together"}
    lines += ["", "Kernels where sa-as or rl-as needed at most half of sa's trials: " + ", ".join(
        "%s %d of %d (%d with the whole interval below 0.5)" % (
            where[name], n, len(rows), clear) for name, (n, clear) in counts.items()) + ".", "", REPLICA_END]
    zoo.replace_section(doc, REPLICA_BEGIN, REPLICA_END, lines)


def main():
    ap = zoo.bench_parser(__doc__, "tuning")
    ap.add_argument("--trials", type=int, default=48)
    ap.add_argument("--seeds", type=int, default=4, help="seeds of the live (measured) runs")
    ap.add_argument("--replay-seeds", type=int, default=48,
                    help="seeds of the replayed runs (sa's trials to 95%% spread widely: 16 seeds' means were up to 1.45x off 48 seeds')")
    ap.add_argument("--kernels", default="0,1,2,3", help="indices into the kernel list")
    ap.add_argument("--skip-run", action="store_true", help="re-render from the JSON in --out")
    ap.add_argument("--replay-only", action="store_true",
                    help="keep the tables and live runs in --out, replay the strategies again, re-render")
    ap.add_argument("--baseline-only", action="store_true",
                    help="keep the strategy runs in --out, measure the library baseline again, re-render")
    ap.add_argument("--remeasure-tables", action="store_true",
                    help="keep the live runs in --out, measure the reference tables again (the live runs are scored "
                         "against the new ones), then the baseline and the replayed runs, re-render")
    ap.add_argument("--rerun", default="",
                    help="comma-separated strategies whose live and replayed runs to redo (the tables and other runs kept)")
    ap.add_argument("--replay-strategies", default="",
                    help="with --replay-only: replay only these variants, named as in the tables and separated by "
                         "semicolons (e.g. 'sa-as;rl-as;sa, incumbent start'), the other replayed runs kept")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/tuning.md"))
    ap.add_argument("--held-out", action="store_true",
                    help="only the held-out kernels: their tables and replayed runs, rendered into their own section "
                         "(with --replay-only the tables measured before are replayed again)")
    ap.add_argument("--replicate", action="store_true",
                    help="measure the benchmark kernels' tables a second time and replay sa, sa-as and rl-as on each "
                         "and on both together, rendered into their own section (needs a finished run in --out; with "
                         "--replay-only the second tables measured before are replayed again)")
    ap.add_argument("--fresh", action="store_true",
                    help="as --held-out, for the kernels chosen after the first round's ordering landed (FRESH), "
                         "rendered into their own section")
    a = ap.parse_args()
    if a.replicate or a.held_out or a.fresh:
        section = "fresh" if a.fresh else "held_out"
        name, render_section = ("replication.json", render_replication) if a.replicate else (
            HELD_SECTIONS[section].results, lambda rows, doc, seeds, date: render_held_out(rows, doc, seeds, date, section))
        if a.skip_run:
            saved = json.load(open(os.path.join(a.out, name)))
            render_section(saved["kernels"], a.doc, saved["seeds"], saved["date"])
            return
        os.makedirs(a.out, exist_ok=True)
        if a.replicate:
            rows = replicate(a.kiln, a.zoo, a.out, [int(x) for x in a.kernels.split(",")], a.trials, a.replay_seeds,
                             measure=not a.replay_only)
        else:
            rows = held_out(a.kiln, a.zoo, a.out, a.trials, a.replay_seeds, section, measure=not a.replay_only)
        render_section(rows, a.doc, a.replay_seeds, datetime.date.today().isoformat())
        return
    rerun = [x for x in a.rerun.split(",") if x]
    if any(x not in STRATEGIES for x in rerun):
        sys.exit("bench/tuning.py: --rerun takes strategies of %s" % ",".join(STRATEGIES))
    variants = STRATEGIES + [c[0] for c in CONTEXT]
    replay_only = [x.strip() for x in a.replay_strategies.split(";") if x.strip()]
    if replay_only and (not a.replay_only or any(x not in variants for x in replay_only)):
        sys.exit("bench/tuning.py: --replay-strategies goes with --replay-only and takes variants of %s" %
                 ";".join(variants))
    os.makedirs(a.out, exist_ok=True)
    results = []
    kernels = [int(x) for x in a.kernels.split(",")]
    for i in kernels:
        path = os.path.join(a.out, "kernel%d.json" % i)
        reuse = a.skip_run or a.baseline_only or a.replay_only or a.remeasure_tables or rerun
        result = json.load(open(path)) if reuse else run_kernel(a.kiln, a.zoo, a.out, i, a.trials, a.seeds)
        if a.remeasure_tables:
            model = os.path.join(a.zoo, result["model"] + "-default.onnx")
            measure_table(a.kiln, model, result["signature"], os.path.join(a.out, "k%d" % i), result)
            result["date"] = datetime.date.today().isoformat()
        if rerun:
            result = rerun_live(a.kiln, a.zoo, a.out, i, result, rerun, a.trials, a.seeds)
        elif not (a.skip_run or a.replay_only):
            result = measure_baseline(a.kiln, a.out, i, result)
        results.append(result)
    if not (a.skip_run or a.baseline_only):  # every table exists now: the transfer runs need the sibling's
        results = [replay_kernel(a.kiln, a.zoo, a.out, i, r, a.trials, a.replay_seeds, rerun or replay_only)
                   for i, r in zip(kernels, results)]
    render(results, a.doc, os.path.join(os.path.dirname(a.doc), "tuning"), a.trials, a.seeds)


if __name__ == "__main__":
    main()
