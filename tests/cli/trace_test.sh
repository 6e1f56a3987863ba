#!/usr/bin/env bash
# tests/cli/trace_test.sh - profiles as Chrome traces, as a user makes them.
#
# `kiln bench --trace` on a model (cpu backend) and on a compiled detector
# artifact (host steps), each checked by check_trace.py: one event per kernel
# launch (as many as `kiln compile` reports), host steps with their ops, and
# every run's events adding up to the run within 5%. Backends without steps
# to trace refuse --trace with KE4003.
# Usage: trace_test.sh KILN SOURCE_DIR WORK_DIR
set -euo pipefail
KILN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }
CHECK="/usr/bin/python3 $SRC/tests/cli/check_trace.py"
M=$SRC/models/tiny/resnet_tiny-raw.onnx

"$KILN" compile "$M" -o "$WORK/resnet.kiln" --quiet > "$WORK/compile.txt"
launches=$(sed -n 's/^  kernels *\([0-9]*\) launches.*/\1/p' "$WORK/compile.txt")
"$KILN" bench "$M" --backend cpu --warmup 5 --runs 20 --trace "$WORK/model.json" --trace-runs 4 > /dev/null 2> "$WORK/bench.err"
grep -q "4 traced runs in $WORK/model.json" "$WORK/bench.err" || fail "bench did not say where the trace is: $(cat "$WORK/bench.err")"
$CHECK "$WORK/model.json" --runs 4 --kernels "$launches"
"$KILN" bench "$WORK/resnet.kiln" --warmup 5 --runs 20 --trace "$WORK/artifact.json" --quiet > /dev/null
$CHECK "$WORK/artifact.json" --runs 3 --kernels "$launches"

"$KILN" compile "$SRC/models/tiny/ssdlite_tiny-raw.onnx" -o "$WORK/ssd.kiln" --quiet > /dev/null
"$KILN" bench "$WORK/ssd.kiln" --warmup 2 --runs 5 --trace "$WORK/ssd.json" --quiet > /dev/null
$CHECK "$WORK/ssd.json" --runs 3
grep -q '"cat":"host","ts":[0-9.e+-]*,"dur":[0-9.e+-]*,"args":{"bytes":[0-9]*,"ops":"NonZero' "$WORK/ssd.json" ||
  fail "no host step with its ops in the detector's trace"

if "$KILN" bench "$M" --backend interpreter --runs 2 --trace "$WORK/x.json" --quiet > /dev/null 2> "$WORK/interp.err"; then
  fail "--trace on the interpreter succeeded"
fi
grep -q "KE4003" "$WORK/interp.err" || fail "--trace on the interpreter: $(cat "$WORK/interp.err")"
echo "traces: ok"
