#!/usr/bin/env bash
# tests/cli/dot_test.sh - graph pictures as a user makes them.
#
# `kiln inspect --dot` on a CNN and `kiln compile --dot-fusion` on a detector
# whose post-processing runs as host steps; both rendered to SVG with
# Graphviz's `dot`, which must accept them. The SVGs must show the model's ops,
# kernel clusters and host steps. A node named with quotes, backslashes and a
# terminal escape must still give a DOT file that renders, with the escape
# written out. --dot on an artifact is refused.
# Usage: dot_test.sh KILN SOURCE_DIR WORK_DIR
set -euo pipefail
KILN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }
command -v dot > /dev/null || fail "Graphviz's dot is not installed (scripts/setup.sh installs graphviz)"

"$KILN" inspect "$SRC/models/tiny/resnet_tiny-raw.onnx" --dot "$WORK/resnet.dot" > /dev/null
dot -Tsvg "$WORK/resnet.dot" -o "$WORK/resnet.svg" || fail "dot refused the graph of inspect --dot"
grep -q ">Conv<" "$WORK/resnet.svg" || fail "the graph shows no Conv"
grep -q ">f32\[1,3,64,64\]<" "$WORK/resnet.svg" || fail "the graph does not show the input's type"

"$KILN" compile "$SRC/models/tiny/ssdlite_tiny-raw.onnx" -o "$WORK/ssd.kiln" --quiet --dot-fusion "$WORK/ssd.dot" > "$WORK/ssd.txt"
dot -Tsvg "$WORK/ssd.dot" -o "$WORK/ssd.svg" || fail "dot refused the fusion plan of compile --dot-fusion"
kernels=$(grep -c "subgraph cluster_" "$WORK/ssd.dot")
hosts=$(grep -c 'label="host step' "$WORK/ssd.dot")
reported=$(sed -n 's/^  host steps *\([0-9]*\) .*/\1/p' "$WORK/ssd.txt")
[ "$hosts" = "$reported" ] || fail "the picture marks $hosts host steps; kiln compile reported $reported"
[ "$kernels" -gt "$hosts" ] || fail "the picture has no kernel clusters"
grep -q ">k[0-9]*_.* (conv)<" "$WORK/ssd.svg" || fail "no conv kernel cluster in the SVG"

/usr/bin/python3 - "$WORK/hostile.onnx" <<'PY'
import sys
from onnx import helper, TensorProto
node = helper.make_node("Relu", ["x"], ["y"], name='evil "node" \\ \x1b[31mred')
graph = helper.make_graph([node], 'g"raph', [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
open(sys.argv[1], "wb").write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PY
"$KILN" inspect "$WORK/hostile.onnx" --dot "$WORK/hostile.dot" > /dev/null
dot -Tsvg "$WORK/hostile.dot" -o "$WORK/hostile.svg" || fail "dot refused the hostile names"
if grep -q $'\x1b' "$WORK/hostile.dot"; then fail "a terminal escape reached the DOT file"; fi
grep -q 'evil \\"node\\" \\\\ \\\\x1b\[31mred' "$WORK/hostile.dot" || fail "the name is not escaped: $(grep evil "$WORK/hostile.dot")"

if "$KILN" inspect "$WORK/ssd.kiln" --dot "$WORK/x.dot" 2> "$WORK/artifact.err"; then fail "--dot on an artifact succeeded"; fi
grep -q "KE4003" "$WORK/artifact.err" || fail "--dot on an artifact: $(cat "$WORK/artifact.err")"
echo "dot pictures: ok"
