#!/usr/bin/env bash
# tests/cli/pass_selection_test.sh - `kiln passes space` and `kiln passes
# compare` driven as a user would (issue 7): the pruned space and its counts,
# a study with O3, arch, random, exhaustive and evolve on tiny models on the
# cpu backend (table, kiln-pass-study/1 JSON, SVG chart, experiment
# database), `learned` from that database on another model, and the errors.
# Usage: pass_selection_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
TINY=$SRC/models/tiny
source "$SRC/tests/cli/expect.sh"
for cmd in space compare; do
  "$KILN" passes "$cmd" --help > "help_$cmd.txt"
  expect_in "Usage:" "help_$cmd.txt"
done

# space: classes, kept passes in rule order, dropped ones with the reason, counts.
"$KILN" passes space "$TINY/resnet_tiny-raw.onnx" > space.txt
expect_in "classes RN; 3 of 28 passes kept for the cpu backend" space.txt
expect_in "before pruning, 16 after" space.txt
expect_in "combine-parallel-conv2d     not applicable" space.txt  # 4 + 16 channels: not a multiple of 8
expect_in "  alter-op-layout               82" space.txt  # kiln::ConvNCHWc compiles on the cpu
"$KILN" passes space "$TINY/resnet_tiny-raw.onnx" --backend cuda > space_cuda.txt
expect_in "alter-op-layout             the cuda backend has no kernel template for kiln::ConvNCHWc" space_cuda.txt
expect_in "recognize-gelu              class" space.txt
expect_in "fuse-ops                    the cpu backend plans its own fusion" space.txt
"$KILN" passes space "$TINY/bert_tiny-raw.onnx" --backend interpreter --json | /usr/bin/python3 -c "
import json, sys; r = json.load(sys.stdin)
assert r['schema'] == 'kiln-space/1' and r['classes'] == ['BR'], r
assert 'fuse-attention' in r['passes'] and 'fuse-ops' in r['passes'], r['passes']  # the interpreter runs groups
assert r['sequences_after'] < r['sequences_before'] / 1e9, r
assert all(d['reason'] for d in r['dropped']), r['dropped']
assert len(r['passes']) + len(r['dropped']) == r['catalogue']"

# compare: a study on the cpu backend, files and database.
"$KILN" passes compare "$TINY/mobilenet_tiny-raw.onnx" --strategies O3,arch,random:3,exhaustive:2 --runs 5 --warmup 1 \
  --compile-repeats 1 --out study --seed 4 > compare.txt 2> compare_err.txt
expect_in "mobilenet_tiny-raw.onnx on cpu: classes MN; pruned space" compare.txt
expect_in "kiln passes compare: arch" compare_err.txt
for label in O3 arch random-1 random-3 exhaustive-1 exhaustive-2; do grep -q "^$label " compare.txt || fail "no row $label"; done
expect_in "x lat, x optimise: relative to O3" compare.txt
expect_in "wrote study/mobilenet_tiny-raw.json and study/mobilenet_tiny-raw.svg; 7 records appended to study/experiments.jsonl" compare.txt
/usr/bin/python3 - <<'PY' || fail "study JSON, records or chart wrong"
import json
import xml.etree.ElementTree as ET
s = json.load(open("study/mobilenet_tiny-raw.json"))
assert s["schema"] == "kiln-pass-study/1" and s["backend"] == "cpu" and s["classes"] == ["MN"], s["classes"]
labels = [r["label"] for r in s["records"]]
assert labels == ["O3", "arch", "random-1", "random-2", "random-3", "exhaustive-1", "exhaustive-2"], labels
for r in s["records"]:
    assert r["error"] is None, r
    assert r["latency_ms"]["median"] > 0 and r["compile_ms"]["codegen"] > 0 and r["compile_ms"]["passes"] >= 0, r
    assert r["max_rel_error"] <= 1e-3 and r["selection_agreement"] == 1, r
    rounds = r["latency_ms"]["rounds"]  # four rounds by default; the latency is the median of rounds 2..4
    assert len(rounds) == 4 and r["latency_ms"]["median"] == sorted(rounds[1:])[1], r
    assert [p["pass"] for p in r["passes"]] == r["pipeline"].split(",") if r["pipeline"] else [], r
# Identical IR shares a letter and the measurement of the first pipeline that produced it.
first = {}
for r in s["records"]:
    if r["ir_hash"] in first:
        f = first[r["ir_hash"]]
        assert r["ir"] == f["ir"] and r["measured_as"] == f["label"] and r["latency_ms"] == f["latency_ms"], r
    else:
        first[r["ir_hash"]] = r
        assert r["measured_as"] == r["label"], r
assert len({r["ir"] for r in s["records"]}) == len(first)
db = [json.loads(l) for l in open("study/experiments.jsonl")]
assert len(db) == 7 and all(d["schema"] == "kiln-experiment/1" for d in db)
assert db[0]["model"]["hash"] and len(db[0]["feature_vector"]) == 15 and db[0]["features"]["depthwise_convolutions"] > 0
svg = ET.parse("study/mobilenet_tiny-raw.svg").getroot()
texts = "".join(svg.itertext())
assert "exhaustive-2 [" in texts and "random:3" in texts and "latency, ms" in texts, texts[:300]
PY
# --pipeline arch is the study's arch pipeline, for kiln passes run, compile and bench.
"$KILN" passes run "$TINY/mobilenet_tiny-raw.onnx" --pipeline arch --target cpu --json > arch_run.json
/usr/bin/python3 -c "
import json
study = [r for r in json.load(open('study/mobilenet_tiny-raw.json'))['records'] if r['label'] == 'arch'][0]
run = json.load(open('arch_run.json'))
assert [p['pass'] for p in run['passes']] == [p['pass'] for p in study['passes']], (run['passes'], study['passes'])
assert len(run['passes']) >= 3" || fail "--pipeline arch is not the study's arch pipeline"
"$KILN" compile "$TINY/bert_tiny-raw.onnx" --pipeline arch -o arch.kiln --quiet > /dev/null
"$KILN" run arch.kiln --output-dir out_arch > /dev/null
"$KILN" run "$TINY/bert_tiny-raw.onnx" --output-dir out_ref > /dev/null
same_outputs out_ref out_arch
# --versus-pipeline alternates two pipelines of one model run by run.
"$KILN" bench "$TINY/bert_tiny-raw.onnx" --backend cpu --pipeline arch --versus-pipeline O3 --runs 12 --warmup 2 \
  > versus.txt 2> versus_err.txt
expect_in "12 alternating pairs with O3: p50 ratio" versus.txt
expect_in "alternating with the baseline 'O3'" versus_err.txt
expect_in "(--pipeline arch (" versus.txt
"$KILN" bench "$TINY/bert_tiny-raw.onnx" --backend cpu -O1 --versus-pipeline O1 --baseline-first --runs 6 --warmup 0 \
  --format json > same.json
/usr/bin/python3 -c "
import json
r = json.load(open('same.json'))
v = r['versus']
assert v['baseline'] == 'O1' and v['pairs'] == 6 and 0 <= v['pairs_faster'] <= 6, v
assert 0.2 < v['median_pair_ratio'] < 5 and v['baseline_latency_ms']['p50'] > 0, v" || fail "--versus-pipeline JSON wrong"
expect_fail "unknown pass 'no-such-pass'" "$KILN" bench "$TINY/bert_tiny-raw.onnx" --backend cpu --versus-pipeline no-such-pass
expect_fail "give either -O2 or --pipeline, not both" "$KILN" passes run "$TINY/bert_tiny-raw.onnx" --pipeline arch -O2
expect_fail "--disable-pass: unknown pass 'nope'" "$KILN" compile "$TINY/bert_tiny-raw.onnx" --pipeline arch --disable-pass nope

# bench/arch_versus_o3.py: paired rounds, the A/A control and compile pairs, rendered between the markers.
printf '# doc\n<!-- paired:begin (bench/arch_versus_o3.py) -->\n<!-- paired:end -->\ntail\n' > paired.md
/usr/bin/python3 "$SRC/bench/arch_versus_o3.py" --kiln "$KILN" --zoo "$TINY" --models bert_tiny-raw --rounds 2 --runs 5 \
  --compile-pairs 1 --out arch_vs --doc paired.md 2> arch_vs.err || { cat arch_vs.err; fail "arch_versus_o3.py failed"; }
expect_in "| bert_tiny-raw | 2 x 5 |" paired.md
expect_in "of 10 pairs |" paired.md
expect_in "- bert_tiny-raw: \`--pipeline arch (simplify-fc-transpose,fold-constant," paired.md
expect_in "tail" paired.md
/usr/bin/python3 -c "
import json
r = json.load(open('arch_vs/bert_tiny-raw.json'))
assert len(r['median_pair_ratio']) == 2 and len(r['control_median_pair_ratio']) == 2, r
assert len(r['compile_ms']['O3']) == 2 and len(r['compile_ms']['arch']) == 2 and min(r['compile_ms']['arch']) > 0, r
assert r['pairs'] == 10 and 0 <= r['pairs_faster'] <= 10, r" || fail "arch_versus_o3.py record wrong"

# bench/arch_compile.py: -O3 and arch compiled for the cpu (LLVM) and for a GPU (NVRTC, no GPU needed), each
# target's table rendered between its own markers.
printf '# doc\n<!-- cpu-compile:begin (bench/arch_compile.py) -->\n<!-- cpu-compile:end -->\nmiddle\n<!-- cuda-compile:begin (bench/arch_compile.py) -->\n<!-- cuda-compile:end -->\ntail\n' > arch_compile.md
for target in cpu cuda:sm_90; do
  /usr/bin/python3 "$SRC/bench/arch_compile.py" --kiln "$KILN" --zoo "$TINY" --models bert_tiny-raw --pairs 2 \
    --target "$target" --out "arch_compile_${target%%:*}" --doc arch_compile.md 2> arch_compile.err ||
    { cat arch_compile.err; fail "arch_compile.py --target $target failed"; }
done
expect_in "--target cpu\`: \`kiln compile MODEL --target cpu\` with -O3" arch_compile.md
expect_in "--target cuda:sm_90 --no-cache\` with -O3" arch_compile.md
expect_in "| O3 ms (passes / llvm, kernels) |" arch_compile.md
expect_in "| O3 ms (passes / nvrtc, kernels) |" arch_compile.md
expect_in "middle" arch_compile.md
expect_in "tail" arch_compile.md
[ "$(grep -c '| bert_tiny-raw | ' arch_compile.md)" = 2 ] || fail "arch_compile.py: not one bert_tiny-raw row per target"
/usr/bin/python3 -c "
import json
for target, phase in (('cpu', 'llvm'), ('cuda', 'nvrtc')):
    r = json.load(open('arch_compile_%s/bert_tiny-raw.json' % target))
    assert r['backend_phase'] == phase, r
    assert len(r['after_import_ms']['O3']) == 2 and len(r['after_import_ms']['arch']) == 2, r
    assert min(r['backend_ms']['O3'] + r['backend_ms']['arch'] + r['passes_ms']['O3'] + r['passes_ms']['arch']) > 0, r
    # arch fuses bert_tiny's layer norms and GELUs: fewer distinct kernels than -O3's on both targets.
    assert 0 < r['kernels']['arch'] < r['kernels']['O3'], (target, r['kernels'])" || fail "arch_compile.py record wrong"

# The same seed proposes the same random pipelines.
"$KILN" passes compare "$TINY/mobilenet_tiny-raw.onnx" --strategies random:3 --runs 2 --warmup 0 --compile-repeats 1 \
  --out again --seed 4 --quiet > again.txt
/usr/bin/python3 -c "
import json
a = [r['pipeline'] for r in json.load(open('study/mobilenet_tiny-raw.json'))['records'] if r['strategy'] == 'random:3']
b = [r['pipeline'] for r in json.load(open('again/mobilenet_tiny-raw.json'))['records']]
assert a == b, (a, b)" || fail "random:3 with one seed proposed different pipelines"

# evolve reports its Pareto front; learned takes the nearest other model's best pipeline.
"$KILN" passes compare "$TINY/resnet_tiny-raw.onnx" --strategies evolve:3x2,learned:1 --runs 3 --warmup 0 \
  --compile-repeats 1 --rounds 1 --out study --quiet > evolve.txt
expect_in "evolve:3x2: " evolve.txt
expect_in "Pareto" evolve.txt
expect_in "learned:1: learned-1 from mobilenet_tiny-raw.onnx" evolve.txt
/usr/bin/python3 -c "
import json
s = json.load(open('study/resnet_tiny-raw.json'))
front = [r for r in s['records'] if r['pareto']]
assert front and all(r['strategy'] == 'evolve:3x2' for r in front)
assert [r['label'] for r in front] == s['strategies'][0]['pareto_front']
def point(r): return (r['latency_ms']['median'], r['compile_ms']['passes'] + r['compile_ms']['codegen'])
for p in front:  # the front is non-dominated within itself
    for q in front:
        (lp, cp), (lq, cq) = point(p), point(q)
        assert not (lq <= lp and cq <= cp and (lq < lp or cq < cp)), (p['label'], q['label'])
learned = [r for r in s['records'] if r['strategy'] == 'learned:1'][0]
assert learned['note'].startswith('from mobilenet_tiny-raw.onnx'), learned['note']" || fail "evolve/learned records wrong"

# Errors: bad strategies, learned without a database, a corrupt database line.
expect_fail "strategy 'random:0': random needs a count of pipelines" "$KILN" passes compare "$TINY/resnet_tiny-raw.onnx" --strategies random:0
expect_fail "strategy 'learned' needs successful records of other models" \
  "$KILN" passes compare "$TINY/bert_tiny-raw.onnx" --strategies learned --out empty --quiet
# A pipeline whose outputs leave the tolerance is reported as wrong, and the study fails.
if "$KILN" passes compare "$TINY/bert_tiny-raw.onnx" --strategies O3 --runs 2 --warmup 0 --compile-repeats 1 --no-db \
  --out strict --tolerance 1e-12 --quiet > strict.txt; then fail "outputs beyond --tolerance were accepted"; fi
expect_in "failed: wrong outputs: output 0 differs from the reference by" strict.txt
# Detection outputs behind NMS are compared by agreement, so SSDLite's pipelines pass.
"$KILN" passes compare "$TINY/ssdlite_tiny-raw.onnx" --strategies O3,arch --runs 2 --warmup 0 --compile-repeats 1 \
  --no-db --out ssd --quiet > ssd.txt || { cat ssd.txt; fail "ssdlite_tiny study failed"; }
echo "{torn line" >> study/experiments.jsonl
"$KILN" passes compare "$TINY/bert_tiny-raw.onnx" --strategies O1 --runs 2 --warmup 0 --compile-repeats 1 --out study \
  --quiet > corrupt.txt 2> corrupt_err.txt
expect_in "warning: study/experiments.jsonl:" corrupt_err.txt
expect_in "not a JSON object (skipped)" corrupt_err.txt
echo "pass selection CLI: all checks passed"
