#!/usr/bin/env bash
# tests/cli/embed_examples_test.sh - the embedding examples as a user runs them.
#
# Compiles a classifier (static shapes), a detector (post-processing in
# host steps, outputs whose shapes depend on the data), a small
# transformer-style block with shape ranges (dynamic batch and sequence)
# and a text model with string inputs and outputs with `kiln compile`,
# runs examples/embed's C++ and C applications on each artifact, and checks
# that (1) both print the shapes and values `kiln run` computes for the same
# inputs, (2) concurrent runs agree, (3) a corrupt artifact is refused with
# its error code, (4) the ranged artifact runs at its smallest and largest
# shapes too, and (5) the applications link no LLVM, protobuf or ONNX
# library.
# Usage: embed_examples_test.sh KILN EMBED_CPP EMBED_C SOURCE_DIR WORK_DIR
set -euo pipefail
KILN=$1 CPP=$2 C=$3 SRC=$4 WORK=$5
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }

/usr/bin/python3 - "$WORK/ranged.onnx" <<'PY'
# y = softmax(x @ w + b) over x: f32[batch, tokens, 16], and a mean over the tokens.
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
r = np.random.default_rng(0)
inits = [numpy_helper.from_array((r.standard_normal((16, 8)) * 0.3).astype(np.float32), "w"),
         numpy_helper.from_array(r.standard_normal(8).astype(np.float32), "b")]
nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
         helper.make_node("ReduceMean", ["y"], ["pooled"], axes=[1], keepdims=0)]
graph = helper.make_graph(nodes, "ranged", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("pooled", TensorProto.FLOAT, None)], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
/usr/bin/python3 - "$WORK/strings.onnx" <<'PY'
# Lower-cases words, appends "!" and asks which are "onnx": string in, string and bool out.
import sys
from onnx import helper, TensorProto
nodes = [helper.make_node("StringNormalizer", ["words"], ["lower"], case_change_action="LOWER"),
         helper.make_node("Constant", [], ["bang"], value=helper.make_tensor("bang", TensorProto.STRING, [], [b"!"])),
         helper.make_node("Constant", [], ["onnx"], value=helper.make_tensor("onnx", TensorProto.STRING, [], [b"onnx"])),
         helper.make_node("StringConcat", ["lower", "bang"], ["shout"]),
         helper.make_node("Equal", ["lower", "onnx"], ["is_onnx"])]
graph = helper.make_graph(nodes, "strings", [helper.make_tensor_value_info("words", TensorProto.STRING, [1, 7])],
                          [helper.make_tensor_value_info("shout", TensorProto.STRING, [1, 7]),
                           helper.make_tensor_value_info("is_onnx", TensorProto.BOOL, [1, 7])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
model.ir_version = 9
open(sys.argv[1], "wb").write(model.SerializeToString())  # opset 20: past this onnx's checker
PY
for name in resnet_tiny ssdlite_tiny ranged strings; do
  if [ "$name" = ranged ]; then
    "$KILN" compile "$WORK/ranged.onnx" --min-shapes x:1x1x16 --opt-shapes x:2x12x16 --max-shapes x:4x40x16 \
      -o "$WORK/$name.kiln" --quiet > "$WORK/$name.compile.txt"
  elif [ "$name" = strings ]; then
    "$KILN" compile "$WORK/strings.onnx" -o "$WORK/$name.kiln" --quiet > "$WORK/$name.compile.txt"
  else
    "$KILN" compile "$SRC/models/tiny/$name-raw.onnx" -o "$WORK/$name.kiln" --quiet > "$WORK/$name.compile.txt"
  fi
  grep -q "distinct kernels" "$WORK/$name.compile.txt" || fail "kiln compile printed no summary"
  "$CPP" "$WORK/$name.kiln" > "$WORK/$name.cpp.txt" || fail "embed_cpp $name exited $?"
  "$C" "$WORK/$name.kiln" > "$WORK/$name.c.txt" || fail "embed_c $name exited $?"
  grep -q "concurrent runs agree" "$WORK/$name.cpp.txt" || fail "concurrent runs ($name)"
  grep -q "missing artifact: code 4001" "$WORK/$name.c.txt" || fail "C API error code for a missing file"
  # The same inputs (x[i] = sin(i) / 2 or words[i % 5], shapes as embed_cpp reports them) through `kiln run`.
  args=$(/usr/bin/python3 - "$WORK" "$name" <<'PY'
import re, sys, numpy as np
work, name = sys.argv[1:]
args = []
for line in open(f"{work}/{name}.cpp.txt"):
    m = re.match(r"input (\S+) (f32|string)\[([0-9,x]*)\]", line)
    if m:
        dims = [int(d) for d in re.split("[,x]", m.group(3)) if d]
        k = np.arange(int(np.prod(dims)))
        if m.group(2) == "string":
            x = np.array(["Kiln", "compiles", "ONNX", "models", "Fast"])[k % 5].reshape(dims)
        else:
            x = (np.sin(k.astype(np.float64)) / 2).astype(np.float32).reshape(dims)
        np.save(f"{work}/{name}.{m.group(1)}.npy", x)
        args.append(f"--input {m.group(1)}={work}/{name}.{m.group(1)}.npy")
print(" ".join(args))
PY
)
  # shellcheck disable=SC2086
  "$KILN" run "$WORK/$name.kiln" $args --output-dir "$WORK/$name.out" > /dev/null
  /usr/bin/python3 - "$WORK" "$name" <<'PY'
import re, sys, numpy as np
work, name = sys.argv[1:]
checked = 0
for app in ("cpp", "c"):
    for line in open(f"{work}/{name}.{app}.txt"):
        m = re.match(r"output (\S+) (?:[a-z0-9]+)?\[([0-9,x]*)\]:(.*)", line)
        if not m:
            continue
        want = np.load(f"{work}/{name}.out/{m.group(1)}.npy")
        dims = [int(d) for d in re.split("[,x]", m.group(2)) if d]
        if list(want.shape) != dims:
            sys.exit(f"FAILED: {app} printed {m.group(1)} as {dims}, kiln run gives {list(want.shape)}")
        if want.dtype.kind == "U":
            got = re.findall(r'"([^"]*)"', m.group(3))
            if got != list(want.reshape(-1)[:8]):
                sys.exit(f"FAILED: {app} printed {got} for {m.group(1)}, kiln run gives {want.reshape(-1)[:8]}")
            checked += 1
            continue
        got = np.array([float(v) for v in m.group(3).split()])
        if len(got) and not np.allclose(got, want.reshape(-1)[:len(got)].astype(np.float64), rtol=1e-6, atol=1e-7):
            sys.exit(f"FAILED: {app} printed {got} for {m.group(1)}, kiln run gives {want.reshape(-1)[:8]}")
        checked += 1
if checked < 2:
    sys.exit(f"FAILED: {name}: no outputs printed")
print(f"{name}: embedding examples match kiln run ({checked} outputs)")
PY
done
grep -q 'output shout \[1,7\]: "kiln!" "compiles!" "onnx!" "models!" "fast!" "kiln!" "compiles!"' "$WORK/strings.c.txt" ||
  fail "the C API's string output: $(cat "$WORK/strings.c.txt")"
grep -q "input words string\[1x7\]" "$WORK/strings.cpp.txt" || fail "the string input: $(cat "$WORK/strings.cpp.txt")"
grep -q "host steps" "$WORK/ssdlite_tiny.compile.txt" || fail "the detector's post-processing is not reported as host steps"
grep -q "input x f32\[2x12x16\] (dims from \[1x1x16\] to \[4x40x16\])" "$WORK/ranged.cpp.txt" || fail "the ranged input: $(cat "$WORK/ranged.cpp.txt")"
grep -q "at the min dims: output y \[1x1x8\]" "$WORK/ranged.cpp.txt" || fail "the ranged artifact at its min dims"
grep -q "at the max dims: output pooled \[4x8\]" "$WORK/ranged.cpp.txt" || fail "the ranged artifact at its max dims"

# A corrupt artifact: one byte flipped in the middle.
cp "$WORK/resnet_tiny.kiln" "$WORK/corrupt.kiln"
size=$(stat -c %s "$WORK/corrupt.kiln")
printf '\xff' | dd of="$WORK/corrupt.kiln" bs=1 seek=$((size / 2)) conv=notrunc status=none
if "$C" "$WORK/corrupt.kiln" 2> "$WORK/corrupt.err"; then fail "a corrupt artifact loaded"; fi
grep -q "KE5003" "$WORK/corrupt.err" || fail "corrupt artifact: $(cat "$WORK/corrupt.err")"

for app in "$CPP" "$C"; do
  if ldd "$app" | grep -Ei "llvm|protobuf|onnx"; then fail "$app links compiler libraries"; fi
done
echo "embed examples: ok"
