#!/usr/bin/env bash
# tests/cli/embed_examples_test.sh - the embedding examples as a user runs them.
#
# Compiles a tiny model with `kiln compile`, runs examples/embed's C++ and C
# applications on the artifact, and checks that (1) both print the outputs
# `kiln run` computes for the same inputs, (2) concurrent runs agree, (3) a
# corrupt artifact is refused with its error code, and (4) the applications
# link no LLVM, protobuf or ONNX library.
# Usage: embed_examples_test.sh KILN EMBED_CPP EMBED_C SOURCE_DIR WORK_DIR
set -euo pipefail
KILN=$1 CPP=$2 C=$3 SRC=$4 WORK=$5
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }

"$KILN" compile "$SRC/models/tiny/resnet_tiny-raw.onnx" -o "$WORK/model.kiln" --quiet > "$WORK/compile.txt"
grep -q "distinct kernels" "$WORK/compile.txt" || fail "kiln compile printed no summary"

"$CPP" "$WORK/model.kiln" > "$WORK/cpp.txt" || fail "embed_cpp exited $?"
"$C" "$WORK/model.kiln" > "$WORK/c.txt" || fail "embed_c exited $?"
grep -q "concurrent runs agree" "$WORK/cpp.txt" || fail "concurrent runs"
grep -q "missing artifact: code 4001" "$WORK/c.txt" || fail "C API error code for a missing file"

# The same inputs through `kiln run` (x[i] = sin(i) / 2).
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy as np
work = sys.argv[1]
x = (np.sin(np.arange(1 * 3 * 64 * 64, dtype=np.float64)) / 2).astype(np.float32).reshape(1, 3, 64, 64)
np.save(f"{work}/input.npy", x)
PY
"$KILN" run "$WORK/model.kiln" --input "input=$WORK/input.npy" --output-dir "$WORK/out" > /dev/null
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy as np
work = sys.argv[1]
want = np.load(f"{work}/out/logits.npy").reshape(-1)[:8]
for app in ("cpp", "c"):
    line = [l for l in open(f"{work}/{app}.txt") if l.startswith("output logits")][0]
    got = np.array([float(v) for v in line.split(":")[1].split()])
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-7):
        sys.exit(f"FAILED: {app} printed {got}, kiln run gives {want}")
print("embedding examples match kiln run:", want[:3])
PY

# A corrupt artifact: one byte flipped in the middle.
cp "$WORK/model.kiln" "$WORK/corrupt.kiln"
size=$(stat -c %s "$WORK/corrupt.kiln")
printf '\xff' | dd of="$WORK/corrupt.kiln" bs=1 seek=$((size / 2)) conv=notrunc status=none
if "$C" "$WORK/corrupt.kiln" 2> "$WORK/corrupt.err"; then fail "a corrupt artifact loaded"; fi
grep -q "KE5003" "$WORK/corrupt.err" || fail "corrupt artifact: $(cat "$WORK/corrupt.err")"

for app in "$CPP" "$C"; do
  if ldd "$app" | grep -Ei "llvm|protobuf|onnx"; then fail "$app links compiler libraries"; fi
done
echo "embed examples: ok"
