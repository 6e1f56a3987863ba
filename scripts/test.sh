#!/usr/bin/env bash
# scripts/test.sh - installs what is missing, builds kiln with its tests and runs
# every test through ctest (unit, text IR, CLI, diagnostics, ONNX conformance,
# tiny zoo models and bench/compare against ONNX Runtime, importer fuzz smoke,
# the style check), then the sanitizer job: the unit tests, the text-IR tests
# and the tiny zoo on the interpreter and the CPU target, built with ASan and
# UBSan (the `sanitize` presets). The full zoo is the `long` suite: ctest
# --preset long (see docs/models.md). KILN_SKIP_SANITIZE=1 skips the job.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh
cmake --preset default
cmake --build --preset default
ctest --preset default -j "$(nproc)" "$@"
if [ "${KILN_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== sanitizer job (ASan + UBSan)"
  cmake --preset sanitize > /dev/null
  cmake --build --preset sanitize
  ctest --preset sanitize -j "$(nproc)"
fi
