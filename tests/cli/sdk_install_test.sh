#!/usr/bin/env bash
# tests/cli/sdk_install_test.sh - the installed SDK as an application developer uses it.
#
# Installs the build into a fresh prefix (`cmake --install --strip`), checks
# what it holds (the runtime's soname and exported symbols, the CMake package
# and its version check, kiln.pc), builds examples/embed out of tree against
# it twice, with CMake's find_package(kiln) and with pkg-config, and runs
# embed_examples_test.sh with the installed `kiln` and each pair of apps.
# Usage: sdk_install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
BUILD=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAILED: $*" >&2; exit 1; }
P=$WORK/prefix
cmake --install "$BUILD" --prefix "$P" --strip > "$WORK/install.log"

format=$(sed -n 's/.*kArtifactFormatVersion = \([0-9]*\);.*/\1/p' "$SRC/include/kiln/runtime/Artifact.h")
for f in bin/kiln bin/kiln-opt bin/kiln-measure include/kiln/kiln.h include/kiln/c_api.h lib/libkiln_compiler.so \
         lib/libkiln_runtime.so "lib/libkiln_runtime.so.$format" lib/cmake/kiln/kilnConfig.cmake \
         lib/cmake/kiln/kilnConfigVersion.cmake lib/pkgconfig/kiln.pc; do
  [ -e "$P/$f" ] || fail "the install has no $f"
done
readelf -d "$P/lib/libkiln_runtime.so" | grep -q "SONAME.*libkiln_runtime.so.$format\]" ||
  fail "the runtime's soname does not carry artifact format $format"
if ldd "$P/lib/libkiln_runtime.so" | grep -Ei "llvm|protobuf|onnx|nvrtc"; then fail "the runtime links compiler libraries"; fi
# Exported: the C API and namespace kiln's embedding API, nothing else.
nm -D --defined-only "$P/lib/libkiln_runtime.so" | awk '$2 ~ /[TDBRVW]/ {print $3}' | c++filt | sed 's/@.*//' > "$WORK/exports.txt"
grep -q "^kiln_model_run$" "$WORK/exports.txt" || fail "kiln_model_run is not exported"
grep -q "^kiln::Model::load(" "$WORK/exports.txt" || fail "kiln::Model::load is not exported"
if grep -v -E "^(kiln_(model|outputs)_|kiln_set_threads$|kiln_last_error$|kiln::|typeinfo (name )?for kiln::|vtable for kiln::|KILN_RUNTIME_)" \
     "$WORK/exports.txt"; then fail "the runtime exports symbols outside its API (above)"; fi
if grep -q -E "^kiln::(ir|codegen|runtime|passes)::" "$WORK/exports.txt"; then fail "the runtime exports internals"; fi
"$P/bin/kiln" --version > /dev/null || fail "the installed kiln does not run"

# Out of tree with CMake: find_package(kiln) and kiln::runtime; a version newer than installed is refused.
cmake -S "$SRC/examples/embed" -B "$WORK/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$P" > "$WORK/cmake.log" ||
  fail "configuring examples/embed against the SDK: $(cat "$WORK/cmake.log")"
cmake --build "$WORK/cmake-build" > "$WORK/cmake-build.log" || fail "building examples/embed: $(cat "$WORK/cmake-build.log")"
mkdir -p "$WORK/newer" && printf 'cmake_minimum_required(VERSION 3.25)\nproject(p CXX)\nfind_package(kiln 99.0 REQUIRED)\n' > "$WORK/newer/CMakeLists.txt"
if cmake -S "$WORK/newer" -B "$WORK/newer/build" -DCMAKE_PREFIX_PATH="$P" > /dev/null 2>&1; then fail "find_package(kiln 99.0) succeeded"; fi

# kiln::compiler: import, compile and run in one application.
mkdir -p "$WORK/compiler-app"
cat > "$WORK/compiler-app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(compiler_app CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(kiln 0.1 REQUIRED)
add_executable(compile_and_run main.cpp)
target_link_libraries(compile_and_run PRIVATE kiln::compiler)
CMAKE
cat > "$WORK/compiler-app/main.cpp" <<'CPP'
#include <cstdio>
#include "kiln/codegen/Compiler.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/kiln.h"
int main(int argc, char** argv) {
  auto module = kiln::onnx::importOnnxFile(argv[1]);
  if (!module) return std::printf("%s\n", module.error().str().c_str()), 1;
  auto lowered = kiln::codegen::compileCpuArtifact((*module)->graph());
  if (!lowered) return std::printf("%s\n", lowered.error().str().c_str()), 1;
  auto bytes = kiln::runtime::serializeExecutable(*lowered->executable);
  auto model = kiln::Model::loadFromMemory(bytes.data(), bytes.size());
  if (!model) return std::printf("%s\n", model.error().str().c_str()), 1;
  auto out = (*model)->run({kiln::Tensor::zeros(kiln::DType::F32, (*model)->inputs()[0].dims)});
  if (!out) return std::printf("%s\n", out.error().str().c_str()), 1;
  std::printf("%zu nodes, output %s\n", (*module)->graph().numNodes(), (*out)[0].typeString().c_str());
}
CPP
cmake -S "$WORK/compiler-app" -B "$WORK/compiler-app/build" -G Ninja -DCMAKE_PREFIX_PATH="$P" > "$WORK/compiler-app.log" &&
  cmake --build "$WORK/compiler-app/build" >> "$WORK/compiler-app.log" || fail "an application of kiln::compiler: $(cat "$WORK/compiler-app.log")"
"$WORK/compiler-app/build/compile_and_run" "$SRC/models/tiny/resnet_tiny-raw.onnx" | grep -q "nodes, output f32\[1,10\]" ||
  fail "kiln::compiler's application: $("$WORK/compiler-app/build/compile_and_run" "$SRC/models/tiny/resnet_tiny-raw.onnx" 2>&1)"

# Out of tree with pkg-config.
export PKG_CONFIG_PATH=$P/lib/pkgconfig
mkdir -p "$WORK/pc-build"
# shellcheck disable=SC2046
c++ -std=c++20 -O1 "$SRC/examples/embed/embed.cpp" -o "$WORK/pc-build/embed_cpp" $(pkg-config --cflags --libs kiln) ||
  fail "embed.cpp with pkg-config"
# shellcheck disable=SC2046
cc -O1 "$SRC/examples/embed/embed.c" -o "$WORK/pc-build/embed_c" $(pkg-config --cflags --libs kiln) -lm || fail "embed.c with pkg-config"

for build in cmake-build pc-build; do
  loaded=$(ldd "$WORK/$build/embed_c" | awk -v so="libkiln_runtime.so.$format" '$1 == so {print $3}')
  [ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$P/lib/libkiln_runtime.so.$format")" ] ||
    fail "$build/embed_c does not load the installed runtime ($loaded)"
  "$SRC/tests/cli/embed_examples_test.sh" "$P/bin/kiln" "$WORK/$build/embed_cpp" "$WORK/$build/embed_c" "$SRC" "$WORK/$build/run" ||
    fail "the embedding examples built by $build"
done
echo "sdk install: ok"
