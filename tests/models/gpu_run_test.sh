#!/usr/bin/env bash
# tests/models/gpu_run_test.sh - bench/gpu-run end to end without a GPU: the
# relocatable bundle (size, RUNPATH, the unpacked kiln starts), then its run
# step on the CPU emulation of the CUDA kernels with tiny zoo models (ONNX
# Runtime comparison, kiln bench --backend cuda, PyTorch eager as the peer).
# Usage: gpu_run_test.sh <build dir> <source dir> <work dir> <kiln-emulation-kernels> <emulated libcuda>
set -euo pipefail
BUILD=$1; SRC=$2; WORK=$3; TOOL=$4; DRIVER=$5
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
source "$SRC/tests/cli/expect.sh"

/usr/bin/python3 "$SRC/bench/gpu-run" --help > help.txt
expect_in "bench/gpu-run bundle" help.txt
/usr/bin/python3 "$SRC/bench/gpu-run" bundle --build "$BUILD" --out bundle.tar.xz > bundle.txt
expect_in "bin/kiln + " bundle.txt
[ "$(stat -c %s bundle.tar.xz)" -lt $((64 << 20)) ] || fail "bundle over 64 MiB"
mkdir unpacked && tar xJf bundle.tar.xz -C unpacked
readelf -d unpacked/kiln-gpu/bin/kiln | grep -q 'RUNPATH.*\[\$ORIGIN/../lib\]' || fail "bundle kiln RUNPATH"
LD_DEBUG=libs unpacked/kiln-gpu/bin/kiln --version > version.txt 2> ld.txt
expect_in "kiln 0.1.0" version.txt
grep -q "calling init: .*unpacked/kiln-gpu/bin/../lib/libonnx.so.1" ld.txt || fail "libonnx not loaded from the bundle"

# A model that does not match must fail the run: here every one must match.
/usr/bin/python3 "$SRC/bench/gpu-run" run --bundle bundle.tar.xz --out results --models resnet_tiny,ssdlite_tiny \
  --bench-models mobilenet_tiny --batches 1,2 --warmup 1 --runs 2 --tune-trials 4 --emulate "$TOOL" "$DRIVER" > run.txt 2>&1 \
  || { cat run.txt; fail "gpu-run run"; }
expect_in "2 of 2 models match ONNX Runtime" run.txt
expect_in "tuning skipped: the emulated driver" run.txt  # GPU tuning needs a GPU
expect_in "| resnet_tiny | ok |" results/gpu-run.md
expect_in "| ssdlite_tiny | ok |" results/gpu-run.md
expect_in "matched 300" results/gpu-run.md
expect_in "**Emulated**" results/gpu-run.md
expect_in "| mobilenet_tiny | 2 |" results/gpu-run.md
/usr/bin/python3 - <<'PY' || fail "gpu-run.jsonl records"
import json
records = [json.loads(l) for l in open("results/gpu-run.jsonl")]
kiln = [r for r in records if r["backend"] == "cuda"]
torch = [r for r in records if r["backend"] == "torch-eager"]
assert sorted(r["config"]["batch"] for r in kiln) == [1, 2], kiln
assert sorted(r["config"]["batch"] for r in torch) == [1, 2], torch
assert all(r["latency_ms"]["p50"] > 0 and r["runs_completed"] == 2 for r in kiln + torch)
assert kiln[1]["config"]["inputs"]["input"][0] == 2 or kiln[0]["config"]["inputs"]["input"][0] == 2
PY
# 16-bit: kiln bench --precision bf16 (tensor-core kernels, emulated) against the bf16
# module (bf16, as PyTorch on the CPU here has no f16 convolution).
/usr/bin/python3 "$SRC/bench/gpu-run" run --bundle bundle.tar.xz --out results-bf16 --models '' \
  --bench-models resnet_tiny --batches 1 --warmup 1 --runs 2 --precision bf16 --emulate "$TOOL" "$DRIVER" > run-bf16.txt 2>&1 \
  || { cat run-bf16.txt; fail "gpu-run run --precision bf16"; }
expect_in "Latency: kiln vs PyTorch (bf16)" results-bf16/gpu-run.md
expect_in "| resnet_tiny | 1 |" results-bf16/gpu-run.md
/usr/bin/python3 - <<'PY' || fail "gpu-run.jsonl bf16 records"
import json
records = [json.loads(l) for l in open("results-bf16/gpu-run.jsonl")]
assert [r["config"]["options"] for r in records if r["backend"] == "cuda"] == ["-O3 --precision bf16"], records
assert [r["config"]["options"] for r in records if r["backend"] == "torch-eager"] == ["eager bf16"], records
PY
echo "gpu-run tests passed"
