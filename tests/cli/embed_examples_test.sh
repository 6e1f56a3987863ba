#!/usr/bin/env bash
# tests/cli/embed_examples_test.sh - the embedding examples as a user runs them.
#
# Compiles a classifier (static shapes) and a detector (post-processing in
# host steps, outputs whose shapes depend on the data) with `kiln compile`,
# runs examples/embed's C++ and C applications on each artifact, and checks
# that (1) both print the shapes and values `kiln run` computes for the same
# inputs, (2) concurrent runs agree, (3) a corrupt artifact is refused with
# its error code, and (4) the applications link no LLVM, protobuf or ONNX
# library.
# Usage: embed_examples_test.sh KILN EMBED_CPP EMBED_C SOURCE_DIR WORK_DIR
set -euo pipefail
KILN=$1 CPP=$2 C=$3 SRC=$4 WORK=$5
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }

for name in resnet_tiny ssdlite_tiny; do
  "$KILN" compile "$SRC/models/tiny/$name-raw.onnx" -o "$WORK/$name.kiln" --quiet > "$WORK/$name.compile.txt"
  grep -q "distinct kernels" "$WORK/$name.compile.txt" || fail "kiln compile printed no summary"
  "$CPP" "$WORK/$name.kiln" > "$WORK/$name.cpp.txt" || fail "embed_cpp $name exited $?"
  "$C" "$WORK/$name.kiln" > "$WORK/$name.c.txt" || fail "embed_c $name exited $?"
  grep -q "concurrent runs agree" "$WORK/$name.cpp.txt" || fail "concurrent runs ($name)"
  grep -q "missing artifact: code 4001" "$WORK/$name.c.txt" || fail "C API error code for a missing file"
  # The same inputs (x[i] = sin(i) / 2, shapes as embed_cpp reports them) through `kiln run`.
  args=$(/usr/bin/python3 - "$WORK" "$name" <<'PY'
import re, sys, numpy as np
work, name = sys.argv[1:]
args = []
for line in open(f"{work}/{name}.cpp.txt"):
    m = re.match(r"input (\S+) f32\[([0-9,x]*)\]", line)
    if m:
        dims = [int(d) for d in re.split("[,x]", m.group(2)) if d]
        x = (np.sin(np.arange(int(np.prod(dims)), dtype=np.float64)) / 2).astype(np.float32).reshape(dims)
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
        got = np.array([float(v) for v in m.group(3).split()])
        if len(got) and not np.allclose(got, want.reshape(-1)[:len(got)].astype(np.float64), rtol=1e-6, atol=1e-7):
            sys.exit(f"FAILED: {app} printed {got} for {m.group(1)}, kiln run gives {want.reshape(-1)[:8]}")
        checked += 1
if checked < 2:
    sys.exit(f"FAILED: {name}: no outputs printed")
print(f"{name}: embedding examples match kiln run ({checked} outputs)")
PY
done
grep -q "host steps" "$WORK/ssdlite_tiny.compile.txt" || fail "the detector's post-processing is not reported as host steps"

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
