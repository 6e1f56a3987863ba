//===- kiln/fuse/KernelCache.h - Kernels compiled once per code -----*- C++ -*-===//
//
// Searches lower many variants of one model (fusion configurations, evolved
// graphs) whose kernels are mostly the same code. The cache lowers a graph
// for this CPU and JIT-compiles only the kernels whose code it has not seen
// (kernelBodyKey: a kernel's group and schedule as code), all new ones in
// one JIT, which it keeps; a variant that regroups one or two kernels
// compiles one or two. Entry points are named by the code's hash, so that
// kernels of different variants never clash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/Compiler.h"
#include "kiln/runtime/CpuExecutor.h"

namespace kiln::fuse {

/// A variant lowered and ready to run (its kernels' code lives in the cache,
/// which must outlive it).
struct CachedModel {
  codegen::LoweredModel lowered;
  std::unique_ptr<runtime::CpuExecutor> executor;
};

class KernelCache {
 public:
  /// Lowers `graph` with `options` and makes it runnable, compiling the
  /// kernels the cache lacks; `compiled` (when given) is set to their count.
  Expected<CachedModel> lower(ir::Graph& graph, const codegen::CompileOptions& options, size_t* compiled = nullptr);
  /// Kernels compiled so far.
  size_t compiledCount() const { return compiledCount_; }

 private:
  std::map<std::string, runtime::KernelEntry> kernels_;  ///< by kernelBodyKey
  std::vector<std::unique_ptr<codegen::CpuJit>> jits_;   ///< own the kernels' code
  size_t compiledCount_ = 0;
};

}  // namespace kiln::fuse
