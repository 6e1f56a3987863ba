#!/usr/bin/env bash
# tests/cli/cli_test.sh - drives the kiln CLI as a user would and checks what
# it prints, writes and returns. Usage:
#   cli_test.sh <kiln> <source dir> <work dir> <kiln-emulation-kernels> <emulated libcuda> <emulated libcublasLt>
#               <emulated libcudnn>
# (the last three run CUDA artifacts and the cuda backend on the CPU emulation).
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
EMULATION_KERNELS=$4
EMULATED_DRIVER=$5
EMULATED_CUBLASLT=$6
EMULATED_CUDNN=$7
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
TINY=$SRC/models/tiny/tiny_cnn.onnx
source "$SRC/tests/cli/expect.sh"

# Help on every command.
"$KILN" --help > help.txt
for cmd in inspect run generate bench passes convert ops compile; do
  expect_in "$cmd" help.txt
  "$KILN" "$cmd" --help > "help_$cmd.txt"
  expect_in "Usage:" "help_$cmd.txt"
done
"$KILN" --version | grep -q "kiln 0.1.0" || fail "--version"

# inspect: inputs, outputs, op histogram, parameters; JSON; IR.
"$KILN" inspect "$TINY" > inspect.txt
expect_in "input: f32[batch,3,32,32]" inspect.txt
expect_in "probabilities: f32[batch,10]" inspect.txt
expect_in "parameters: 1482" inspect.txt
expect_in "3  Conv" inspect.txt
"$KILN" inspect "$TINY" --json > inspect.json
/usr/bin/python3 -c "import json,sys; j=json.load(open('inspect.json')); assert j['ops']['Conv']==3 and j['parameters']==1482, j"
"$KILN" inspect "$TINY" --ir > inspect_ir.txt
expect_in "graph @main(%input: f32[batch,3,32,32])" inspect_ir.txt

# Shape ranges: a dim whose min and max differ stays symbolic through inference.
"$KILN" inspect "$TINY" --ir --min-shapes input:1x3x32x32 --opt-shapes input:4x3x32x32 --max-shapes input:16x3x32x32 > ranged.txt
expect_in "batch: 1..16 (opt 4)" ranged.txt
expect_in ": f32[batch,8,32,32] loc(\"/stem/stem.0/Conv\")" ranged.txt
"$KILN" inspect "$TINY" --json --min-shapes input:1x3x32x32,input2:1 --max-shapes input:16x3x32x32 > /dev/null 2> ranged.err && fail "a range for a missing input"
expect_in "a shape range names 'input2', which is not a graph input (inputs: input)" ranged.err
/usr/bin/python3 - <<'PY'
# Attention's head split over a dynamic batch and sequence: Shape -> Gather -> Concat -> Reshape.
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
consts = {"i0": np.array([0]), "i1": np.array([1]), "split": np.array([2, 4])}
inits = [numpy_helper.from_array(v.astype(np.int64), k) for k, v in consts.items()]
inits.append(numpy_helper.from_array(np.ones((8, 8), np.float32), "w"))
nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Shape", ["xw"], ["shape"]),
         helper.make_node("Gather", ["shape", "i0"], ["b"]), helper.make_node("Gather", ["shape", "i1"], ["s"]),
         helper.make_node("Concat", ["b", "s", "split"], ["target"], axis=0),
         helper.make_node("Reshape", ["xw", "target"], ["r"]),
         helper.make_node("Transpose", ["r"], ["heads"], perm=[0, 2, 1, 3])]
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", 8]),
          helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])]
nodes.append(helper.make_node("ReduceSum", ["mask"], ["count"], keepdims=0))
graph = helper.make_graph(nodes, "heads", inputs,
                          [helper.make_tensor_value_info("heads", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("count", TensorProto.FLOAT, None)], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "heads.onnx")
PY
"$KILN" inspect heads.onnx --min-shapes x:1x1x8,mask:1x1 --opt-shapes x:1x64x8,mask:1x64 --max-shapes x:4x128x8,mask:4x128 > heads.txt
expect_in "heads: f32[batch,2,tokens,4]" heads.txt
expect_in "count: f32[]" heads.txt
expect_in "tokens: 1..128 (opt 64)" heads.txt
"$KILN" inspect heads.onnx --min-shapes x:1x1x8 --max-shapes x:1x128x8 --min-shapes mask:1x1 --max-shapes mask:1x128 > heads_b1.txt
expect_in "heads: f32[1,2,tokens,4]" heads_b1.txt
expect_fail "error KE1010 (shape-binding): input 'mask' dim 0 ('batch') is dynamic and has no range" \
  "$KILN" inspect heads.onnx --min-shapes x:1x1x8 --max-shapes x:1x128x8
expect_fail "input 'mask' dim 1 ('tokens') is given 1..64 (opt 64), but another input's 'tokens' is given 1..128 (opt 128)" \
  "$KILN" inspect heads.onnx --min-shapes x:1x1x8,mask:1x1 --max-shapes x:1x128x8,mask:1x64
expect_fail "input 'x' has both --shape and a shape range" \
  "$KILN" inspect heads.onnx --min-shapes x:1x1x8 --max-shapes x:1x128x8 --shape x:1x4x8
expect_fail "input 'x' has rank 3 (f32[batch,tokens,8]); a range gives 1x128" "$KILN" inspect heads.onnx --min-shapes x:1x1x8 --max-shapes x:1x128
expect_fail "input 'x' dim 2 is fixed at 8 in the model" "$KILN" inspect heads.onnx --min-shapes x:1x1x4 --max-shapes x:1x128x8
expect_fail "input 'x' dim 1: min 64, opt 32, max 128" \
  "$KILN" inspect heads.onnx --min-shapes x:1x64x8 --opt-shapes x:1x32x8 --max-shapes x:1x128x8
expect_fail "input 'x' has --min-shapes but no --max-shapes" "$KILN" inspect heads.onnx --min-shapes x:1x1x8
expect_fail "--max-shapes 'x:1xax8': 'a' is not a dim" "$KILN" inspect heads.onnx --min-shapes x:1x1x8 --max-shapes x:1xax8
# compile with ranges: one artifact serves every shape in them, as the interpreter computes it.
"$KILN" compile heads.onnx --min-shapes x:1x1x8,mask:1x1 --opt-shapes x:2x64x8,mask:2x64 \
  --max-shapes x:4x128x8,mask:4x128 -o heads.kiln > heads_compile.txt
for shape in 1x1 2x64 3x17 4x128; do
  /usr/bin/python3 -c "
import numpy as np; b, t = map(int, '$shape'.split('x')); r = np.random.default_rng(b * 1000 + t)
np.save('hx.npy', r.standard_normal((b, t, 8)).astype(np.float32)); np.save('hm.npy', r.standard_normal((b, t)).astype(np.float32))"
  "$KILN" run heads.kiln --input x=hx.npy --input mask=hm.npy --output-dir "heads_k$shape" > /dev/null
  "$KILN" run heads.onnx --input x=hx.npy --input mask=hm.npy --output-dir "heads_i$shape" > /dev/null
  /usr/bin/python3 -c "
import numpy as np
for name in ('heads', 'count'):
    got, want = np.load('heads_k$shape/' + name + '.npy'), np.load('heads_i$shape/' + name + '.npy')
    assert got.shape == want.shape and np.allclose(got, want, atol=1e-5), ('$shape', name, got.shape, want.shape)"
done
/usr/bin/python3 -c "import numpy as np; np.save('hx.npy', np.zeros((1, 129, 8), np.float32)); np.save('hm.npy', np.zeros((1, 129), np.float32))"
expect_fail "error KE3001 (bad-input): input 'x' dim 1 ('tokens') is 129; this executable serves 1..128" \
  "$KILN" run heads.kiln --input x=hx.npy --input mask=hm.npy
# The same ranges on the CUDA target, run on the emulated driver at two shapes.
HEADS_RANGES=(--min-shapes x:1x1x8,mask:1x1 --max-shapes x:4x128x8,mask:4x128)
"$KILN" compile heads.onnx "${HEADS_RANGES[@]}" --target cuda:sm_90 --library-tactics off -o heads_cuda.kiln > /dev/null
"$KILN" inspect heads_cuda.kiln > heads_cuda.txt
expect_in "target:     cuda (sm_90)" heads_cuda.txt
expect_in "tokens: 1..128 (opt 128), read from input 'x' dim 1" heads_cuda.txt
HEADS_EMU=$("$EMULATION_KERNELS" heads.onnx heads_emulation f32 off "${HEADS_RANGES[@]}" | tail -1)
for shape in 1x1 3x17; do
  /usr/bin/python3 -c "
import numpy as np; b, t = map(int, '$shape'.split('x')); r = np.random.default_rng(b * 1000 + t)
np.save('hx.npy', r.standard_normal((b, t, 8)).astype(np.float32)); np.save('hm.npy', r.standard_normal((b, t)).astype(np.float32))"
  KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$HEADS_EMU "$KILN" run heads_cuda.kiln --input x=hx.npy --input mask=hm.npy \
    --output-dir "heads_g$shape" > /dev/null
  "$KILN" run heads.onnx --input x=hx.npy --input mask=hm.npy --output-dir "heads_gi$shape" > /dev/null
  same_outputs "heads_g$shape" "heads_gi$shape"
done
# A CNN over a dynamic batch: one artifact, inspected from its file, run at three batch sizes.
"$KILN" compile "$TINY" --min-shapes input:1x3x32x32 --opt-shapes input:2x3x32x32 --max-shapes input:4x3x32x32 \
  -o ranged_cnn.kiln > /dev/null
"$KILN" inspect ranged_cnn.kiln > ranged_cnn.txt
expect_in "input: f32[batch,3,32,32]" ranged_cnn.txt
expect_in "probabilities: f32[batch,10]" ranged_cnn.txt
expect_in "batch: 1..4 (opt 2), read from input 'input' dim 0" ranged_cnn.txt
"$KILN" inspect ranged_cnn.kiln --json > ranged_cnn.json
/usr/bin/python3 -c "import json; j=json.load(open('ranged_cnn.json')); assert j['dynamic_dims']['batch']=={'min':1,'opt':2,'max':4}, j"
expect_fail "--ir needs a model (.onnx, .kir), not an artifact" "$KILN" inspect ranged_cnn.kiln --ir
for b in 1 3 4; do
  /usr/bin/python3 -c "import numpy as np; np.save('cx.npy', np.random.default_rng($b).standard_normal(($b, 3, 32, 32)).astype(np.float32))"
  "$KILN" run ranged_cnn.kiln --input input=cx.npy --output-dir "cnn_k$b" > /dev/null
  "$KILN" run "$TINY" --input input=cx.npy --output-dir "cnn_i$b" > /dev/null
  same_outputs "cnn_k$b" "cnn_i$b"
done

# A string input with a dynamic dim, compiled for a range: `kiln run` makes
# random words at the opt dims and prints the strings, not their ids.
/usr/bin/python3 - <<'PY'
from onnx import helper, TensorProto
nodes = [helper.make_node("Constant", [], ["end"], value=helper.make_tensor("end", TensorProto.STRING, [1, 1], [b"end"])),
         helper.make_node("Concat", ["words", "end"], ["joined"], axis=1)]
graph = helper.make_graph(nodes, "words", [helper.make_tensor_value_info("words", TensorProto.STRING, [1, "n"])],
                          [helper.make_tensor_value_info("joined", TensorProto.STRING, [1, None])])
open("ranged_words.onnx", "wb").write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PY
"$KILN" compile ranged_words.onnx --min-shapes words:1x1 --opt-shapes words:1x4 --max-shapes words:1x9 \
  -o ranged_words.kiln > /dev/null
"$KILN" run ranged_words.kiln --output-dir words_out > ranged_words.txt
expect_in "joined: string[1x5]" ranged_words.txt
/usr/bin/python3 -c "
import numpy as np; j = np.load('words_out/joined.npy')
assert j.dtype.kind == 'U' and j.shape == (1, 5) and j[0, -1] == 'end' and all(w.isalpha() for w in j[0]), j"

# run: random inputs are seeded; the same seed gives the same bytes.
"$KILN" run "$TINY" --shape input:2x3x32x32 --output-dir out1 > run1.txt
"$KILN" run "$TINY" --shape input:2x3x32x32 --output-dir out2 --seed 0 > run2.txt
cmp out1/probabilities.npy out2/probabilities.npy || fail "same seed, different outputs"
"$KILN" run "$TINY" --shape input:2x3x32x32 --output-dir out3 --seed 7 > run3.txt
cmp -s out1/probabilities.npy out3/probabilities.npy && fail "different seeds, same outputs"
expect_in "probabilities: f32[2,10]" run1.txt
expect_in "wrote out1/probabilities.npy" run1.txt
# A dynamic dim without --shape runs with 1 and says so.
"$KILN" run "$TINY" > run_default.txt 2> run_default.err
expect_in "random data uses dims 1x3x32x32" run_default.err
expect_in "probabilities: f32[1,10]" run_default.txt

# run with .npy and .pb inputs; dynamic dims bind from the file.
/usr/bin/python3 - <<'PY'
import numpy as np
from onnx import numpy_helper
x = np.random.RandomState(1).randn(3, 3, 32, 32).astype(np.float32)
np.save("x.npy", x)
open("x.pb", "wb").write(numpy_helper.from_array(x, "input").SerializeToString())
PY
"$KILN" run "$TINY" --input input=x.npy --output-dir npy > run_npy.txt
"$KILN" run "$TINY" --input input=x.pb --output-dir pb > run_pb.txt
expect_in "probabilities: f32[3,10]" run_npy.txt
cmp npy/probabilities.npy pb/probabilities.npy || fail ".npy and .pb inputs disagree"
/usr/bin/python3 -c "
import numpy as np
p = np.load('npy/probabilities.npy'); assert p.shape == (3, 10) and np.allclose(p.sum(1), 1, atol=1e-5), p"

# run --backend names the backend; an unknown one is refused.
"$KILN" run "$TINY" --backend interpreter --input input=x.npy --output-dir backend > run_backend.txt
expect_in "on interpreter" run_backend.txt
cmp npy/probabilities.npy backend/probabilities.npy || fail "--backend interpreter computes differently"

# bench: a table by default, the kiln-bench/1 record with --format json, and
# --json appends one record per benchmark.
"$KILN" bench "$TINY" --warmup 2 --runs 20 > bench.txt 2> bench.err
expect_in "latency ms   mean" bench.txt
expect_in "20 timed after 2 warm-up" bench.txt
expect_in "inferences/s" bench.txt
expect_in "kiln bench: 2 warm-up and 20 timed runs" bench.err
"$KILN" bench "$TINY" --warmup 1 --runs 5 --batch 2 --input input=x.npy --format json --quiet --json bench.jsonl > bench.json
"$KILN" bench "$TINY" --warmup 0 --runs 7 --quiet --json bench.jsonl > /dev/null
/usr/bin/python3 - <<'PY'
import json
lines = [json.loads(l) for l in open("bench.jsonl")]
assert len(lines) == 2, lines
first, second = lines
assert json.load(open("bench.json")) == first
assert first["schema"] == "kiln-bench/1" and first["backend"] == "interpreter", first
assert first["config"]["runs"] == 5 and first["runs_completed"] == 5 and first["config"]["batch"] == 2, first
assert first["config"]["inputs"] == {"input": [3, 3, 32, 32]}, first["config"]
assert abs(first["throughput_per_s"] - 2000 / first["latency_ms"]["mean"]) < 1e-6 * first["throughput_per_s"]
assert second["config"]["warmup"] == 0 and second["runs_completed"] == 7, second
assert set(first) == set(second)
assert first["compile_ms"]["import"] > 0 and first["compile_ms"]["codegen"] is None
PY
"$KILN" bench "$TINY" --runs 1000000 --warmup 0 --max-seconds 0.2 --quiet --format json > bench_limited.json
/usr/bin/python3 -c "
import json; r = json.load(open('bench_limited.json')); assert 1 <= r['runs_completed'] < 1000000, r"

# passes: the catalogue (docs/passes.md is generated from it and must be current),
# a pipeline's per-pass report, and the optimised model.
"$KILN" passes list > passes.txt
expect_in "dead-code-elimination" passes.txt
"$KILN" passes list --markdown | diff "$SRC/docs/passes.md" - || fail "docs/passes.md is stale: kiln passes list --markdown > docs/passes.md"
"$KILN" passes list --json | /usr/bin/python3 -c "
import json, sys; c = json.load(sys.stdin); assert all(p['classes'] and p['summary'] for p in c), c"
cat > dead.kir <<'KIR'
module @dead {
  graph @main(%x: f32[3]) {
    %a = Exp(%x) : f32[3]
    %b = Neg(%a) : f32[3]
    %y = Relu(%x) : f32[3]
    return %y
  }
}
KIR
"$KILN" passes run dead.kir --pipeline dead-code-elimination -o dead_opt.kir > passes_run.txt
expect_in "dead-code-elimination" passes_run.txt
expect_in "yes       3       1" passes_run.txt
grep -q "Exp" dead_opt.kir && fail "dead-code-elimination left Exp"
"$KILN" passes run dead.kir --pipeline dead-code-elimination --json | /usr/bin/python3 -c "
import json, sys; r = json.load(sys.stdin); p = r['passes'][0]
assert r['schema'] == 'kiln-pass-report/1' and p['changed'] and p['nodes_after'] == 1, r"
# -O3 for the cpu target ends with alter-op-layout (blocked convolutions); for no target it does not.
RESNET_TINY=$SRC/models/tiny/resnet_tiny-raw.onnx
"$KILN" passes run "$RESNET_TINY" --target cpu --json -o o3_cpu.kir | /usr/bin/python3 -c "
import json, sys; r = json.load(sys.stdin); p = [p for p in r['passes'] if p['pass'] == 'alter-op-layout']
assert len(p) == 1 and p[0]['changed'], r['passes']"
grep -q "kiln::ConvNCHWc" o3_cpu.kir || fail "-O3 for cpu left no blocked conv"
"$KILN" passes run "$RESNET_TINY" > o3_none.txt
grep -q "alter-op-layout" o3_none.txt && fail "-O3 without a target ran alter-op-layout"
expect_fail "--target" "$KILN" passes run "$RESNET_TINY" --target tpu
# passes classify: features and classes with reasons; --json lists the classes by score.
"$KILN" passes classify "$SRC/models/tiny/ssdlite_tiny-raw.onnx" > classify.txt
expect_in "ssdlite_tiny-raw.onnx: SSD,MN" classify.txt
expect_in "NMS ops (detection post-processing)" classify.txt
"$KILN" passes classify "$SRC/models/tiny/bert_tiny-default.onnx" --json | /usr/bin/python3 -c "
import json, sys; r = json.load(sys.stdin)
assert r['schema'] == 'kiln-classify/1' and r['classes'] == ['BR'], r['classes']
assert [s['score'] for s in r['scores']] == sorted((s['score'] for s in r['scores']), reverse=True)
assert r['features']['attention_blocks'] == 2 and r['features']['convolutions'] == 0, r['features']"
if "$KILN" passes classify "$SRC/tests/errors/op_unknown.onnx" > /dev/null 2> classify_err.txt; then fail "classify of a bad model succeeded"; fi
expect_in "error KE1003 (unsupported-op): node 'frob'" classify_err.txt

# run --pipeline / -O: outputs are unchanged by the passes (interpreter against
# interpreter) on a model with dead code and on every committed zoo model:
# bit for bit with an exact pass, within the documented tolerance at -O3.
"$KILN" run dead.kir --seed 3 -O0 --output-dir dead_plain > /dev/null
"$KILN" run dead.kir --seed 3 --pipeline dead-code-elimination --output-dir dead_dce > dead_dce.txt
expect_in "passes " dead_dce.txt
cmp dead_plain/y.npy dead_dce/y.npy || fail "dead-code-elimination changed an output"
for model in "$SRC"/models/tiny/*.onnx; do
  name=$(basename "$model" .onnx)
  "$KILN" run "$model" -O0 --output-dir "eq_$name/plain" > /dev/null 2>&1
  "$KILN" run "$model" --pipeline dead-code-elimination --output-dir "eq_$name/dce" > /dev/null 2>&1
  "$KILN" run "$model" --output-dir "eq_$name/o3" > "eq_$name/o3.txt" 2>&1
  for out in "eq_$name"/plain/*.npy; do
    cmp "$out" "eq_$name/dce/$(basename "$out")" || fail "$name: --pipeline dead-code-elimination changed $(basename "$out")"
  done
  /usr/bin/python3 - "eq_$name" <<'PY' || fail "$name: -O3 (the default) changed the outputs beyond 2.1e-5"
import glob, os, sys
import numpy as np
for a in glob.glob(os.path.join(sys.argv[1], "plain", "*.npy")):
    x = np.load(a).astype(np.float64)
    y = np.load(a.replace("/plain/", "/o3/")).astype(np.float64)
    assert x.shape == y.shape, (a, x.shape, y.shape)
    scale = max(np.abs(x).max(), 1e-30) if x.size else 1.0
    err = np.abs(x - y).max() / scale if x.size else 0.0
    assert err <= 2.1e-5, (a, err)  # the sum of the -O3 passes' tolerances (docs/passes.md)
PY
done
expect_in "passes " eq_resnet_tiny-raw/o3.txt

# Output names are sanitised into file names.
cat > named.kir <<'KIR'
module @named {
  opset "" = 17
  graph @main(%x: f32[2]) {
    %"out/put:0" = Neg(%x) : f32[2]
    return %"out/put:0"
  }
}
KIR
"$KILN" run named.kir --output-dir named > named.txt
[ -f named/out_put_0.npy ] || fail "sanitised output file missing"

# convert: ONNX -> text IR -> ONNX gives the same results.
"$KILN" convert "$TINY" -o tiny.kir > /dev/null
"$KILN" convert tiny.kir -o tiny_again.onnx > /dev/null
"$KILN" run tiny_again.onnx --input input=x.npy --output-dir again > /dev/null
cmp npy/probabilities.npy again/probabilities.npy || fail "converted model computes differently"
"$KILN" run tiny.kir --input input=x.npy --output-dir kir > /dev/null
cmp npy/probabilities.npy kir/probabilities.npy || fail "text IR model computes differently"

# ops lists the op table.
"$KILN" ops > ops.txt
expect_in "NonMaxSuppression" ops.txt
[ "$(tail -1 ops.txt | cut -d' ' -f1)" -gt 170 ] || fail "too few ops listed"

# Errors: exit status 1, the code and the node on stderr.
expect_fail "error KE1003 (unsupported-op): node 'frob' (FrobnicateTensor, opset 13)" "$KILN" inspect "$SRC/tests/errors/op_unknown.onnx"
expect_fail "give either -O2 or --pipeline, not both" "$KILN" run "$TINY" -O2 --pipeline fold-constant
expect_fail "-O: Value 4 not in range" "$KILN" run "$TINY" -O4
expect_fail "--disable-pass: unknown pass 'fold-all'" "$KILN" run "$TINY" --disable-pass fold-all
expect_fail "must look like name=file.npy" "$KILN" run "$TINY" --input oops
expect_fail "--input names 'nope', which is not a model input" "$KILN" run "$TINY" --input nope=x.npy
expect_fail "must end in .kir (text IR) or .onnx" "$KILN" convert "$TINY" -o out.txt
expect_fail "error KE1010 (shape-binding)" "$KILN" run "$TINY" --shape input:1x4x32x32
expect_fail "backend: tpu not in" "$KILN" bench "$TINY" --backend tpu
expect_fail "runs on one thread" "$KILN" bench "$TINY" --threads 2
expect_fail "runs: Value 0 not in range" "$KILN" bench "$TINY" --runs 0
expect_fail "format: csv not in" "$KILN" bench "$TINY" --format csv
expect_fail "error KE1001 (malformed-model)" "$KILN" bench "$SRC/tests/errors/malformed_truncated.onnx"
expect_fail "unknown pass 'fold-everything'" "$KILN" passes run dead.kir --pipeline fold-everything
expect_fail "unknown pass 'fold-everything'" "$KILN" run dead.kir --pipeline dead-code-elimination,fold-everything
# compile: ops no template lowers are host steps (reported), or an error when refused.
SSD=$SRC/models/tiny/ssdlite_tiny-raw.onnx
"$KILN" compile "$SSD" -o ssd.kiln --quiet > compile_ssd.txt
expect_in "host steps" compile_ssd.txt
expect_in "NonZero x" compile_ssd.txt
"$KILN" run ssd.kiln --output-dir ssd_out > /dev/null
[ -f ssd_out/scores.npy ] || fail "kiln run of a compiled detector wrote no scores"
# The kernels are compiled in parts on KILN_COMPILE_THREADS threads (two parts per thread); the code, and so the
# outputs, are the same however they were split.
KILN_COMPILE_THREADS=1 "$KILN" compile "$SSD" -o ssd_1.kiln > compile_1.txt
expect_in "in 1 part (KILN_COMPILE_THREADS=1)" compile_1.txt
KILN_COMPILE_THREADS=3 "$KILN" compile "$SSD" -o ssd_3.kiln > compile_3.txt
expect_in "in 6 parts (KILN_COMPILE_THREADS=3)" compile_3.txt
for t in 1 3; do "$KILN" run ssd_$t.kiln --seed 5 --output-dir ssd_out_$t > /dev/null; done
for f in ssd_out_1/*.npy; do cmp -s "$f" "ssd_out_3/$(basename "$f")" || fail "$f differs between 1 and 6 object parts"; done
expect_fail "error KE5001 (codegen-unsupported)" "$KILN" compile "$SSD" -o ssd2.kiln --no-host-steps
expect_in "host steps are disabled" err.txt
expect_fail "unknown target 'tpu'" "$KILN" compile "$TINY" --target tpu -o x.kiln
# compile for CUDA: CUDA C per kernel, NVRTC cubins and PTX (no GPU needed).
MOBILE=$SRC/models/tiny/mobilenet_tiny-raw.onnx
export KILN_CACHE_DIR=$WORK/cache  # the NVRTC cache, here rather than in ~/.cache
"$KILN" compile "$MOBILE" --target cuda:sm_80,sm_90 --emit-cuda cuda_out -o mobile_emit.kiln --quiet > compile_cuda.txt
expect_in "for cuda (sm_80,sm_90) -> mobile_emit.kiln" compile_cuda.txt
expect_in "distinct kernels" compile_cuda.txt
expect_in "steps may run beside the step before them" compile_cuda.txt
expect_in "tiled GEMM" compile_cuda.txt
expect_in ", 0 from the cache in $WORK/cache/nvrtc" compile_cuda.txt
# The same model again: every cubin and PTX comes from the cache, byte for byte the same artifact.
"$KILN" compile "$MOBILE" --target cuda:sm_80,sm_90 -o mobile_cached.kiln --quiet > compile_cached.txt
expect_in "  nvrtc          0 compiled," compile_cached.txt
cmp -s mobile_emit.kiln mobile_cached.kiln || fail "a CUDA artifact from the NVRTC cache differs from the compiled one"
"$KILN" compile "$MOBILE" --target cuda:sm_90 --no-cache -o mobile_nocache.kiln --quiet > compile_nocache.txt
expect_in "0 from the cache (off)" compile_nocache.txt
CU=$(ls cuda_out/*.cu | head -1)
[ -n "$CU" ] || fail "--emit-cuda wrote no .cu files"
grep -q 'extern "C" __global__' "$CU" || fail "$CU has no kernel entry"
for f in cuda_out/*.cu; do
  base=${f%.cu}
  [ -s "$base.sm_80.cubin" ] && [ -s "$base.sm_90.cubin" ] && [ -s "$base.ptx" ] || fail "missing cubin or PTX for $f"
done
# The CUDA artifact: where there is no NVIDIA driver or GPU, loading it is KE5005.
"$KILN" compile "$MOBILE" --target cuda:sm_90 -o mobile_cuda.kiln --quiet > compile_cuda_artifact.txt
expect_in "for cuda (sm_90) -> mobile_cuda.kiln" compile_cuda_artifact.txt
if ! "$KILN" run mobile_cuda.kiln > cuda_run.txt 2> err.txt; then  # no GPU here: a clear error, not a crash
  expect_in "error KE5005 (device-unavailable)" err.txt
fi
KILN_CUDA_DRIVER=/nonexistent/libcuda.so.1 expect_fail "/nonexistent/libcuda.so.1 not found" "$KILN" run mobile_cuda.kiln
# The same artifact, and the cuda backend of run/bench, on the emulated driver: same outputs as the interpreter.
EMU_LIB=$("$EMULATION_KERNELS" "$MOBILE" emulation | tail -1)
"$KILN" run "$MOBILE" --backend interpreter --output-dir mobile_ref > /dev/null
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB "$KILN" run mobile_cuda.kiln --output-dir mobile_gpu > /dev/null
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB "$KILN" run "$MOBILE" --backend cuda --output-dir mobile_gpu2 > /dev/null
/usr/bin/python3 - <<'PY' || fail "CUDA outputs on the emulated driver differ from the interpreter's"
import glob, os, numpy as np
refs = sorted(glob.glob("mobile_ref/*.npy"))
assert refs
for ref in refs:
    want = np.load(ref)
    for d in ("mobile_gpu", "mobile_gpu2"):
        got = np.load(os.path.join(d, os.path.basename(ref)))
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        assert got.shape == want.shape and err < 1e-4, (d, ref, err)
PY
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB "$KILN" bench "$MOBILE" --backend cuda --warmup 1 --runs 3 \
  --format json --quiet > bench_cuda.json
/usr/bin/python3 -c "import json; r=json.loads(open('bench_cuda.json').read().splitlines()[-1]); assert r['backend']=='cuda' and r['runs_completed']==3 and r['memory']['peak_device_bytes']>0, r" \
  || fail "kiln bench --backend cuda record"
# --profile: every kernel timed (events) on the device, summed per kernel, slowest first;
# with --format json the table goes to stderr and stdout stays one record.
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB "$KILN" bench "$MOBILE" --backend cuda --warmup 1 --runs 2 \
  --profile 2 --quiet > bench_profile.txt
expect_in "kernel profile: " bench_profile.txt
expect_in "(mean of 2 runs, each launch timed by CUDA events" bench_profile.txt
/usr/bin/python3 - <<'PY' || fail "kiln bench --profile table"
import re
text = open("bench_profile.txt").read()
head = re.search(r"kernel profile: (\d+) kernels, (\d+) launches per run, ([0-9.]+) ms", text)
kernels, launches = int(head.group(1)), int(head.group(2))
rows = [l for l in text.splitlines() if re.match(r"\s+[0-9.]+\s+[0-9.]+%\s+\d+%\s+\d+\s+\d+,\d+,\d+ x \d+\s+k\w+", l)]
assert kernels > 0 and launches >= kernels, (kernels, launches)
assert len(rows) == min(kernels, 25), (len(rows), kernels)
ms = [float(l.split()[0]) for l in rows]
assert ms == sorted(ms, reverse=True), ms
assert all("[" in l and "]" in l for l in rows), "every kernel names its schedule"
assert sum(int(l.split()[3]) for l in rows) <= launches
PY
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB "$KILN" bench "$MOBILE" --backend cuda --warmup 1 --runs 2 \
  --profile 1 --format json --quiet > bench_profile.json 2> bench_profile_err.txt
[ "$(wc -l < bench_profile.json)" = 1 ] || fail "--profile with --format json: stdout is not one record"
expect_in "kernel profile: " bench_profile_err.txt
expect_fail "--profile times GPU kernels: backend 'interpreter' has none" "$KILN" bench "$MOBILE" --backend interpreter --profile 2
# --library-tactics all: the classifier's Gemm as a cuBLASLt library step and every convolution as a cuDNN one
# (the emulated libraries here), same outputs as the interpreter; profiled as library steps; no cuBLASLt or
# no cuDNN is a clear error; CPU targets refuse it.
EMU_LIBT=$("$EMULATION_KERNELS" "$MOBILE" emulation_lib f32 all | tail -1)
"$KILN" compile "$MOBILE" --target cuda:sm_90 --library-tactics all -o mobile_lib.kiln --quiet > compile_lib.txt
grep -qE "library steps  [0-9]+ \(1 cuBLASLt matmuls, [1-9][0-9]* cuDNN convolutions; --library-tactics\)" compile_lib.txt \
  || { cat compile_lib.txt; fail "compile --library-tactics all does not report its cuBLASLt and cuDNN steps"; }
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=$EMULATED_CUBLASLT KILN_CUDNN=$EMULATED_CUDNN \
  "$KILN" run mobile_lib.kiln --output-dir mobile_lib > /dev/null
/usr/bin/python3 - <<'PY2' || fail "--library-tactics all on the emulated driver and cuBLASLt differs from the interpreter"
import numpy as np, glob, os
for ref in glob.glob("mobile_ref/*.npy"):
    want, got = np.load(ref), np.load(os.path.join("mobile_lib", os.path.basename(ref)))
    assert got.shape == want.shape and float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)) < 1e-4, ref
PY2
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=$EMULATED_CUBLASLT KILN_CUDNN=$EMULATED_CUDNN \
  "$KILN" bench "$MOBILE" --backend cuda --library-tactics all --warmup 1 --runs 1 --profile 1 --quiet > bench_lib.txt
expect_in "(library)" bench_lib.txt
expect_in "[cuBLASLt f32 1x1x10x" bench_lib.txt
expect_in "[cuDNN f32 conv 1x" bench_lib.txt
# The library calls are captured into the CUDA graph (one launch per run); a library refusing capture
# leaves them between the graphs, and the bench says why (table and record).
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=$EMULATED_CUBLASLT KILN_CUDNN=$EMULATED_CUDNN \
  "$KILN" bench "$MOBILE" --backend cuda --library-tactics all --warmup 1 --runs 1 --quiet > bench_lib_graphs.txt
grep -qE "^launch       1 CUDA graph per run \([1-9][0-9]* library calls captured in them\)$" bench_lib_graphs.txt \
  || { cat bench_lib_graphs.txt; fail "kiln bench does not report the library calls captured in one CUDA graph"; }
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=$EMULATED_CUBLASLT KILN_CUDNN=$EMULATED_CUDNN \
  KILN_EMULATED_LIBRARY_CAPTURE=0 "$KILN" bench "$MOBILE" --backend cuda --library-tactics all --warmup 1 --runs 1 \
  --format json --quiet > bench_lib_refused.json
/usr/bin/python3 -c "import json,sys; r=json.loads(open('bench_lib_refused.json').read().splitlines()[-1]); l=r['launch']; assert 'library calls run between them (capture refused: ' in l and 'CUDNN_STATUS_EXECUTION_FAILED' in l, l" \
  || fail "kiln bench's record does not say the library calls were not captured, and why"
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=/nonexistent/libcublasLt.so.13 \
  KILN_CUDNN=$EMULATED_CUDNN \
  expect_fail "cuBLASLt (/nonexistent/libcublasLt.so.13) not found: the artifact has library steps" "$KILN" run mobile_lib.kiln
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIBT KILN_CUBLASLT=$EMULATED_CUBLASLT \
  KILN_CUDNN=/nonexistent/libcudnn.so.9 \
  expect_fail "cuDNN (/nonexistent/libcudnn.so.9) not found: the artifact has cuDNN convolution steps" "$KILN" run mobile_lib.kiln
expect_fail "--library-tactics chooses cuBLASLt/cuDNN for GPU matmuls and convolutions: it needs --target cuda" \
  "$KILN" compile "$MOBILE" --library-tactics auto -o never.kiln
expect_fail "an artifact runs as it was compiled" "$KILN" run mobile_lib.kiln --library-tactics all
# The default for cuda is auto: a classifier-sized product (1 x 2048 x 1000) goes to cuBLASLt, a 4 x 4 x 4 one stays
# generated; --library-tactics off keeps both generated; the CPU target takes no library steps by default.
cat > classifier.kir <<'KIR'
module @m {
  graph @main(%x: f32[1,2048], %w: f32[2048,1000], %s: f32[4,4], %t: f32[4,4]) {
    %y = MatMul(%x, %w) : f32[1,1000]
    %z = MatMul(%s, %t) : f32[4,4]
    return %y, %z
  }
}
KIR
"$KILN" compile classifier.kir --target cuda:sm_90 -o classifier.kiln --quiet > compile_default.txt
expect_in "library steps  1 (1 cuBLASLt matmuls, 0 cuDNN convolutions; --library-tactics)" compile_default.txt
"$KILN" compile classifier.kir --target cuda:sm_90 --library-tactics off -o classifier_off.kiln --quiet > compile_off.txt
if grep -q "^  library steps" compile_off.txt; then fail "--library-tactics off made library steps"; fi
"$KILN" compile classifier.kir -o classifier_cpu.kiln --quiet > compile_cpu.txt
if grep -q "^  library steps" compile_cpu.txt; then fail "the cpu target made library steps"; fi
# --precision f16: the interpreter runs the mixed-precision graph, the cuda backend its f16 kernels
# (tensor-core convs) on the emulated driver; the two agree to f16 rounding, and both stay near f32.
EMU_LIB16=$("$EMULATION_KERNELS" "$MOBILE" emulation16 f16 | tail -1)
"$KILN" run "$MOBILE" --backend interpreter --precision f16 --output-dir mobile_ref16 > /dev/null
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB16 "$KILN" run "$MOBILE" --backend cuda --precision f16 \
  --output-dir mobile_gpu16 > /dev/null
/usr/bin/python3 - <<'PY' || fail "--precision f16 on the emulated driver"
import glob, os, numpy as np
for ref in sorted(glob.glob("mobile_ref16/*.npy")):
    want, f32 = np.load(ref), np.load(os.path.join("mobile_ref", os.path.basename(ref)))
    got = np.load(os.path.join("mobile_gpu16", os.path.basename(ref)))
    scale = max(np.abs(f32).max(), 1e-30)
    assert got.shape == want.shape and float(np.abs(got - want).max() / scale) < 1e-2, ref
    assert float(np.abs(want - f32).max() / scale) < 5e-2, ref
PY
"$KILN" compile "$MOBILE" --precision f16 --target cuda:sm_80 --emit-cuda cuda_f16 -o mobile_f16.kiln --quiet > /dev/null
grep -lq "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" cuda_f16/*.cu || fail "--precision f16 emitted no tensor-core kernel"
expect_fail "--precision: f64 not in" "$KILN" bench "$MOBILE" --precision f64
# --precision tf32: the f32 convs on TF32 tensor cores (cuda only), within 1e-2 of the f32 interpreter.
expect_fail "--precision tf32 is a GPU tensor-core mode" "$KILN" run "$MOBILE" --precision tf32
expect_fail "--precision tf32 is a GPU tensor-core mode" "$KILN" compile "$MOBILE" --precision tf32 -o tf32_cpu.kiln
EMU_LIB32=$("$EMULATION_KERNELS" "$MOBILE" emulation32 tf32 | tail -1)
KILN_CUDA_DRIVER=$EMULATED_DRIVER KILN_EMULATED_KERNELS=$EMU_LIB32 "$KILN" run "$MOBILE" --backend cuda --precision tf32 \
  --output-dir mobile_gpu32 > /dev/null
/usr/bin/python3 - <<'PY' || fail "--precision tf32 on the emulated driver"
import glob, os, numpy as np
for ref in sorted(glob.glob("mobile_ref/*.npy")):
    want, got = np.load(ref), np.load(os.path.join("mobile_gpu32", os.path.basename(ref)))
    assert got.shape == want.shape and float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)) < 1e-2, ref
PY
"$KILN" compile "$MOBILE" --precision tf32 --target cuda:sm_80 --emit-cuda cuda_tf32 -o mobile_tf32.kiln --quiet > compile_tf32.txt
expect_in "tensor-core GEMM" compile_tf32.txt
grep -lq "kiln_mma_m16n8k8_tf32(&" cuda_tf32/*.cu || fail "--precision tf32 emitted no TF32 kernel"
expect_fail "an artifact runs as it was compiled" "$KILN" run mobile_tf32.kiln --precision tf32
expect_fail "does not apply" "$KILN" bench "$MOBILE" --backend cuda --threads 4
expect_fail "bad CUDA architecture 'sm_9x'" "$KILN" compile "$MOBILE" --target cuda:sm_9x --emit-cuda cuda_bad
expect_fail "--emit-cuda needs --target cuda" "$KILN" compile "$MOBILE" --emit-cuda cuda_bad
head -c 100 ssd.kiln > truncated.kiln
expect_fail "error KE5003 (artifact-corrupt)" "$KILN" run truncated.kiln
echo "cli tests passed"
