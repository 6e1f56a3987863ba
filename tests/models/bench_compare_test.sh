#!/usr/bin/env bash
# tests/models/bench_compare_test.sh - drives bench/compare like a user: kiln
# and ONNX Runtime on one tiny zoo model, a table with the ratio on stdout and
# two kiln-bench/1 records with the same fields in the --json file.
# Usage: bench_compare_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
"$SRC/bench/compare" "$SRC/models/tiny/mobilenet_tiny-default.onnx" --kiln "$KILN" --warmup 2 --runs 15 \
  --json records.jsonl > compare.txt
cat compare.txt
grep -q "kiln/interpreter" compare.txt
grep -q "onnxruntime/onnxruntime-cpu" compare.txt
grep -Eq "ratio kiln/onnxruntime: latency p50 [0-9.]+x, mean [0-9.]+x; throughput [0-9.]+x" compare.txt
/usr/bin/python3 - <<'PY'
import json
kiln, ort = [json.loads(line) for line in open("records.jsonl")]
assert kiln["schema"] == ort["schema"] == "kiln-bench/1"
assert (kiln["runtime"], ort["runtime"]) == ("kiln", "onnxruntime")
assert set(kiln) == set(ort) and set(kiln["latency_ms"]) == set(ort["latency_ms"])
assert set(kiln["config"]) == set(ort["config"]) and set(kiln["compile_ms"]) == set(ort["compile_ms"])
for r in (kiln, ort):
    assert r["config"]["runs"] == 15 and r["runs_completed"] == 15 and r["config"]["warmup"] == 2, r
    assert r["samples"] + r["outliers"] == 15, r
    assert r["config"]["inputs"] == {"input": [1, 3, 64, 64]}, r["config"]
    l = r["latency_ms"]
    assert 0 < l["min"] <= l["p50"] <= l["p90"] <= l["p99"] <= l["max"], l
print("bench/compare records ok")
PY
