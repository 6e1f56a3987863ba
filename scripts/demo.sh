#!/usr/bin/env bash
# scripts/demo.sh - installs what is missing, builds the kiln CLI and runs its
# main job on the bundled model: import it, print its summary, compile it for
# this CPU into a .kiln artifact, run the artifact (printing and saving the
# outputs) and the reference interpreter, and benchmark the compiled code.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh
cmake --preset default > /dev/null
cmake --build --preset default --target kiln
MODEL=models/tiny/tiny_cnn.onnx
echo
echo "== kiln inspect $MODEL"
build/tools/kiln/kiln inspect "$MODEL"
echo
echo "== kiln compile $MODEL --shape input:2x3x32x32 -o build/tiny_cnn.kiln"
build/tools/kiln/kiln compile "$MODEL" --shape input:2x3x32x32 -o build/tiny_cnn.kiln
echo
echo "== kiln run build/tiny_cnn.kiln --output-dir build/demo-outputs"
build/tools/kiln/kiln run build/tiny_cnn.kiln --output-dir build/demo-outputs
echo
echo "== kiln run $MODEL --shape input:2x3x32x32   (the reference interpreter, for comparison)"
build/tools/kiln/kiln run "$MODEL" --shape input:2x3x32x32
echo
echo "== kiln bench $MODEL --backend cpu --shape input:1x3x32x32 --warmup 10 --runs 200"
build/tools/kiln/kiln bench "$MODEL" --backend cpu --shape input:1x3x32x32 --warmup 10 --runs 200 --quiet
