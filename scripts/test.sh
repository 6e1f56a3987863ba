#!/usr/bin/env bash
# scripts/test.sh - installs what is missing, builds kiln with its tests and runs
# every test through ctest (unit, text IR, CLI, diagnostics, ONNX conformance,
# models against ONNX Runtime, importer fuzz smoke).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh
cmake --preset default
cmake --build --preset default
ctest --preset default -j "$(nproc)" "$@"
