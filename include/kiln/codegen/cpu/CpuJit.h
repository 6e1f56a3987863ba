//===- kiln/codegen/cpu/CpuJit.h - Kernel IR to native code --------*- C++ -*-===//
//
// The CPU target: kernels are emitted as LLVM IR (lib/codegen/cpu), optimized
// at O3 for the host CPU and either JIT-compiled with ORC (compile-time
// measurement, kiln run on a model) or compiled to a relocatable object for
// an artifact. Entry points have the signature `void(void* const* args)`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {

using CpuKernelFn = void (*)(void* const* args);

class CpuJit {
 public:
  static Expected<std::unique_ptr<CpuJit>> create();
  ~CpuJit();
  /// Compiles the kernels (in parts, on one thread per core) and links them;
  /// entry points in the kernels' order.
  Expected<std::vector<CpuKernelFn>> compile(const std::vector<const Kernel*>& kernels);
  /// The host CPU the code is tuned for (e.g. "skylake-avx512").
  std::string hostCpu() const;

 private:
  CpuJit();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A relocatable ELF object holding the kernels (position-independent, O3 for
/// the host CPU), what an artifact stores; runtime::loadObjectCode links it.
struct CpuObject {
  std::vector<uint8_t> bytes;
  std::string cpu;                        ///< e.g. "cascadelake"
  std::vector<std::string> requiredFeatures;  ///< ISA extensions the code uses (avx2, avx512f, fma, ...)
};
Expected<CpuObject> compileToObject(const std::vector<const Kernel*>& kernels);
/// Threads compiling CPU kernels: $KILN_COMPILE_THREADS when a positive
/// number, else one per core.
size_t compileThreads();
/// The kernels compiled in parts (one object each, two per thread at most;
/// one part on one thread) on compileThreads() threads: what the JIT links
/// and an artifact stores.
Expected<std::vector<CpuObject>> compileToObjects(const std::vector<const Kernel*>& kernels);

/// The LLVM version kiln's CPU code generator links ("19.1.7").
std::string llvmVersion();

/// LLVM IR of the kernels, after O3 for the host when `optimize`.
Expected<std::string> emitLlvmText(const std::vector<const Kernel*>& kernels, bool optimize);

}  // namespace kiln::codegen
