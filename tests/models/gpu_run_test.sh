#!/usr/bin/env bash
# tests/models/gpu_run_test.sh - bench/gpu-run end to end without a GPU: the
# relocatable bundle (size, RUNPATH, the unpacked kiln starts), then its run
# step on the CPU emulation of the CUDA kernels with tiny zoo models (ONNX
# Runtime comparison, kiln bench --backend cuda, PyTorch eager as the peer;
# library steps on the emulated cuBLASLt and cuDNN against generated kernels).
# Usage: gpu_run_test.sh <build dir> <source dir> <work dir> <kiln-emulation-kernels> <emulated libcuda>
#                        <emulated libcublasLt> <emulated libcudnn>
set -euo pipefail
BUILD=$1; SRC=$2; WORK=$3; TOOL=$4; DRIVER=$5; CUBLASLT=$6; CUDNN=$7
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
# Library tactics off and all side by side, each kernel profiled: every model is checked
# with both, and each library step is set against the generated kernel of its group.
KILN_CUBLASLT="$CUBLASLT" KILN_CUDNN="$CUDNN" /usr/bin/python3 "$SRC/bench/gpu-run" run --bundle bundle.tar.xz \
  --out results-lib --models-dir models --models resnet_tiny --bench-models resnet_tiny --batches 1 --warmup 1 --runs 2 \
  --library-tactics off,all --profile 2 --peers '' --emulate "$TOOL" "$DRIVER" > run-lib.txt 2>&1 \
  || { cat run-lib.txt; fail "gpu-run run --library-tactics off,all"; }
expect_in "resnet_tiny (library tactics all): matches ONNX Runtime" run-lib.txt
expect_in "| resnet_tiny (library tactics off) | ok |" results-lib/gpu-run.md
expect_in "| model | batch | kiln off ms | kiln all ms |" results-lib/gpu-run.md
expect_in "Library steps against generated kernels" results-lib/gpu-run.md
expect_in "resnet_tiny, batch 1, f32, library tactics all**: 18 library steps (18 kernels)" results-lib/gpu-run.md
expect_in "- resnet_tiny, batch 1, library tactics all: 1 CUDA graph per run (18 library calls captured in them)" results-lib/gpu-run.md
grep -q "(library)  *l0__stem_stem_0_Conv" results-lib/profile/resnet_tiny-b1-f32-all.txt || fail "library step in the profile"
[ ! -e results-lib/models ] || fail "models exported into the results despite --models-dir"
/usr/bin/python3 - <<'PY' || fail "library-pairs.jsonl"
import json
pairs = [json.loads(l) for l in open("results-lib/library-pairs.jsonl")]
assert len(pairs) == 18 and all(p["generated_ms"] > 0 and p["library_ms"] > 0 for p in pairs), pairs
assert {p["group"] for p in pairs} >= {"0__stem_stem_0_Conv", "20__fc_Gemm_matmul"}, pairs
PY
/usr/bin/python3 "$SRC/bench/library_pairs.py" results-lib/profile/resnet_tiny-b1-f32-off.txt \
  results-lib/profile/resnet_tiny-b1-f32-all.txt > pairs.txt
expect_in "18 library steps (18 kernels)" pairs.txt
# Layers that share one generated kernel (k1, launched twice) are set against all their library steps (l1, l4: the
# same call) together; a kernel whose groups did not all become steps of one call (k2: two launches, one step) is left out.
cat > gen.txt <<'TXT'
kernel profile: 3 kernels, 5 launches per run, 1.000 ms per run on the device (mean of 2 runs)
      ms    share  cumul  launches  grid x block        kernel  [schedule]
   0.600   60.0%    60%         2  12,2,32 x 256       k1__layers_0_q_MatMul  [matmul block=64]
   0.300   30.0%    90%         2  4,1,1 x 128         k2__layers_0_k_MatMul  [matmul block=32]
   0.100   10.0%   100%         1  4,1,1 x 128         k3__Softmax  [softmax threads=128]
TXT
cat > lib.txt <<'TXT'
kernel profile: 4 kernels, 4 launches per run, 0.500 ms per run on the device (mean of 2 runs)
      ms    share  cumul  launches  grid x block        kernel  [schedule]
   0.150   30.0%    30%         1  (library)           l1__layers_0_q_MatMul  [cuBLASLt f32 1x128x768x768 bias]
   0.150   30.0%    60%         1  (library)           l4__layers_1_q_MatMul  [cuBLASLt f32 1x128x768x768 bias]
   0.100   20.0%    80%         1  (library)           l2__layers_0_k_MatMul  [cuBLASLt f32 1x128x768x64 bias]
   0.100   20.0%   100%         1  4,1,1 x 128         k3__Softmax  [softmax threads=128]
TXT
/usr/bin/python3 - "$SRC/bench" <<'PY' || fail "library_pairs: shared kernels"
import sys
sys.path.insert(0, sys.argv[1])
import library_pairs as lp
pairs = lp.pair(lp.parse_profile(open("gen.txt").read()), lp.parse_profile(open("lib.txt").read()))
assert len(pairs) == 1, pairs
q = pairs[0]
assert q["group"] == "1__layers_0_q_MatMul", q
assert q["launches"] == 2 and abs(q["generated_ms"] - 0.6) < 1e-9 and abs(q["library_ms"] - 0.3) < 1e-9, q
PY
# A kiln tune --json report: each tuned kernel against the library call measured beside it.
/usr/bin/python3 - "$SRC/bench" <<'PY' || fail "library_pairs: tuned kernels against library calls"
import sys
sys.path.insert(0, sys.argv[1])
import library_pairs as lp
task = lambda d, uses, default, best, lib, ms, faster: {"description": d, "uses": uses, "default_ms": default, "best_ms": best,
                                                       "library": lib, "library_ms": ms, "library_faster": faster,
                                                       "library_error": "" if ms else "run-error: refused", "skipped": ""}
report = {"tasks": [task("Conv a", 1, 0.5, 0.4, "cuDNN", 0.2, True), task("MatMul b", 12, 0.1, 0.08, "cuBLASLt", 0.09, False),
                    task("Softmax c", 12, 0.05, 0.05, "", 0, False), task("Conv d", 2, 0.3, 0.3, "cuDNN", 0, False)]}
lines = lp.tuned_markdown("m", report)
text = "\n".join(lines)
assert "3 kernels with a library call, 1 faster as the call" in text, text
assert "1.960 ms tuned -> 1.760 ms" in text, text   # 0.4 + 12 x 0.08 + 2 x 0.3 -> 0.2 + 0.96 + 0.6
rows = [l for l in lines if l.startswith("| ") and "---" not in l][1:]
assert [r.split(" | ")[0] for r in rows] == ["| MatMul b", "| Conv d", "| Conv a"], rows   # heaviest first
assert rows[2].endswith("| 2.00 | cuDNN |") and rows[0].endswith("| generated |") and "failed: run-error" in rows[1], rows
assert "no kernel with a measured library call" in lp.tuned_markdown("cpu", {"tasks": [report["tasks"][2]]})[0]
PY
if /usr/bin/python3 "$SRC/bench/gpu-run" run --bundle bundle.tar.xz --out bad --library-tactics off,most > bad.txt 2>&1; then
  fail "gpu-run accepted --library-tactics most"
fi
expect_in "expected off, auto, all or a list of them" bad.txt

echo "gpu-run tests passed"
