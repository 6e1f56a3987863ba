#!/usr/bin/env bash
# scripts/test.sh - installs what is missing, builds kiln with its tests and runs
# every test through ctest (unit, text IR, CLI, diagnostics, ONNX conformance,
# tiny zoo models and bench/compare against ONNX Runtime, importer fuzz smoke).
# The full zoo is the `long` suite: ctest --preset long (see docs/models.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh
cmake --preset default
cmake --build --preset default
ctest --preset default -j "$(nproc)" "$@"
