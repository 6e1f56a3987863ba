//===- kiln/codegen/cuda/Nvrtc.h - CUDA C to cubin and PTX ---------*- C++ -*-===//
//
// NVRTC, linked: compiles the CUDA C that CudaEmitter prints to a cubin for
// one architecture or to PTX (what a newer GPU JIT-compiles). A source NVRTC
// refuses is a kiln bug; the error carries NVRTC's log.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/support/Status.h"

namespace kiln::codegen {

/// NVRTC's output for one architecture.
struct CudaBinary {
  int sm = 0;
  std::vector<uint8_t> cubin;
  std::string log;  ///< NVRTC's warnings, if any
};

/// Compiles `source` with NVRTC to a cubin for sm_<sm>. On failure the error
/// carries NVRTC's log and `sourceName` (a kiln bug: generated code must compile).
Expected<CudaBinary> compileCubin(const std::string& source, const std::string& sourceName, int sm);
/// Compiles `source` to PTX for compute_<sm> (what a newer GPU JIT-compiles).
Expected<std::string> compilePtx(const std::string& source, const std::string& sourceName, int sm);
/// The options every compile passes besides -arch (part of NvrtcCache keys).
const std::vector<std::string>& nvrtcOptions();
/// NVRTC's version, e.g. "13.0".
std::string nvrtcVersion();

}  // namespace kiln::codegen
