//===- kiln/codegen/Compiler.h - Graph to Executable --------------*- C++ -*-===//
//
// The CPU target's compile driver: lowerModel (ModelLowering.h), then the
// kernels through LLVM, JIT-compiled in this process with entry points ready
// for runtime::CpuExecutor (compileForCpu) or compiled to object code that
// completes the executable an artifact stores (compileCpuArtifact).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kiln/codegen/cpu/CpuJit.h"
#include "kiln/codegen/ModelLowering.h"
#include "kiln/runtime/CpuExecutor.h"

namespace kiln::codegen {

struct CpuModel {
  LoweredModel lowered;
  std::unique_ptr<CpuJit> jit;  ///< owns the code
  std::unique_ptr<runtime::CpuExecutor> executor;
};

/// Lowers and JIT-compiles for this machine's CPU.
Expected<CpuModel> compileForCpu(ir::Graph& graph, const CompileOptions& options = {});

/// Lowers and compiles to object code: the executable is complete (what
/// runtime::saveArtifact writes and kiln::Model loads).
Expected<LoweredModel> compileCpuArtifact(ir::Graph& graph, const CompileOptions& options = {});

}  // namespace kiln::codegen
