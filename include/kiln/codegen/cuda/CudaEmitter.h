//===- kiln/codegen/cuda/CudaEmitter.h - Kernel IR to CUDA C -------*- C++ -*-===//
//
// A GPU-scheduled kernel (block/thread bound loops, shared buffers, barriers)
// printed as one self-contained CUDA C translation unit whose `extern "C"
// __global__` entry takes the kernel's buffers in parameter order; the launch
// shape is read off the bound loops. NVRTC compiles that source (Nvrtc.h); the
// same source runs on the CPU under the emulation harness in tests/emulation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {

/// One kernel as CUDA C.
struct CudaKernel {
  std::string name;                     ///< the entry point (the kernel's name)
  std::string source;                   ///< a whole translation unit
  std::vector<std::string> paramTypes;  ///< C parameter types, e.g. "const float*"
  std::array<int64_t, 3> grid{1, 1, 1};   ///< blocks (x, y, z)
  std::array<int64_t, 3> block{1, 1, 1};  ///< threads per block (x, y, z)
  int64_t sharedBytes = 0;                ///< static shared memory per block
};

/// Prints a GPU kernel as CUDA C. `description` (e.g. the fused ops) heads
/// the file as a comment. Errors name the kernel: a CPU kernel, a store
/// outside the thread-bound loops, a barrier that not every thread reaches,
/// two extents for one block binding, a block over 1024 threads.
Expected<CudaKernel> emitCuda(const Kernel& kernel, const std::string& description = "");

/// The architectures compiled by default (sm_80, sm_86, sm_89, sm_90).
const std::vector<int>& defaultCudaArchitectures();

}  // namespace kiln::codegen
