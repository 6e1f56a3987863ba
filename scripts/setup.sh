#!/usr/bin/env bash
# scripts/setup.sh - installs what kiln needs on Debian 12, skipping what is there.
#
# Debian packages: compilers and CMake/Ninja, protobuf + ONNX (C++), CLI11,
# nlohmann-json, Catch2, XGBoost (the tuner's cost model), RE2
# (RegexFullMatch), libpng and libjpeg (ImageDecoder), LLVM 19 (libraries for
# the CPU code generator, and FileCheck, lit), Python's onnx/numpy/Pillow/
# torch/torchvision (test data and model export), scikit-learn (the digits
# that kiln evolve is tested on), pybind11 with Python's headers, venv, pip,
# setuptools and wheel (the Python package), Graphviz (rendering the DOT
# pictures in a test), Node.js; and ONNX Runtime
# (npm onnxruntime-node, the reference for outputs) into <repo>/.deps/ort.
# The CUDA toolkit is expected at /usr/local/cuda (NVRTC compiles the CUDA target's kernels).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

PACKAGES=(
  build-essential cmake ninja-build git
  libprotobuf-dev protobuf-compiler libonnx-dev
  libcli11-dev nlohmann-json3-dev catch2 llvm-19-tools llvm-19-dev libzstd-dev libxgboost-dev
  libre2-dev pkg-config libpng-dev libjpeg-dev
  python3 python3-numpy python3-onnx python3-pil python3-torch python3-torchvision python3-sklearn
  pybind11-dev python3-dev python3-venv python3-pip python3-setuptools python3-wheel graphviz
)
command -v node > /dev/null || PACKAGES+=(nodejs)
command -v npm > /dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

ORT_DIR=$ROOT/.deps/ort
if [ ! -f "$ORT_DIR/node_modules/onnxruntime-node/package.json" ]; then
  echo "setup: installing onnxruntime-node 1.30.0 into $ORT_DIR"
  mkdir -p "$ORT_DIR"
  # --ignore-scripts: the package's install script downloads GPU binaries; the
  # CPU library ships inside the package.
  (cd "$ORT_DIR" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error onnxruntime-node@1.30.0 > /dev/null)
fi
echo "setup: all dependencies present"
