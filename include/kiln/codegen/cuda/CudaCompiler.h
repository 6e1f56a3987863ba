//===- kiln/codegen/cuda/CudaCompiler.h - Graph to a CUDA executable ---*- C++ -*-===//
//
// The CUDA target's driver: lowers the graph with the templates' GPU
// schedules (Compiler.h's lowerModel), prints every kernel as CUDA C and
// compiles it with NVRTC, in parallel, to a cubin per requested
// architecture and PTX for the oldest (which the driver JIT-compiles on any
// newer GPU without a matching cubin), so the executable is complete (what
// runtime::saveArtifact writes and the CUDA runtime loads). Optionally the
// sources, cubins and PTX are also written to a directory for reading, and
// NVRTC outputs are reused from a cache keyed by source (NvrtcCache.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/ModelLowering.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"

namespace kiln::codegen {

struct CudaCompileOptions {
  std::vector<int> archs = defaultCudaArchitectures();  ///< sm numbers; PTX for the smallest
  std::string emitDir;  ///< non-empty: write KERNEL.cu, KERNEL.sm_XX.cubin and KERNEL.ptx there
  std::string cacheDir;  ///< non-empty: reuse NVRTC outputs cached there (NvrtcCache; the CLI passes its default)
};

/// The ops a kernel group fuses, "Conv + Relu", which head its CUDA C file.
std::string fusedOpsOf(const KernelGroup& group);

/// Lowers for the GPU and compiles every kernel; the executable's target is
/// "cuda" and its `cpu` field lists the architectures ("sm_80,sm_90").
Expected<LoweredModel> compileCudaArtifact(ir::Graph& graph, const CompileOptions& options,
                                           const CudaCompileOptions& cuda);

}  // namespace kiln::codegen
