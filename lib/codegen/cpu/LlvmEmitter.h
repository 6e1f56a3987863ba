//===- lib/codegen/cpu/LlvmEmitter.h - Kernel IR to LLVM IR ---------------===//
//
// Emits a CPU kernel as an LLVM function `void name(ptr args)` where args[i]
// points at parameter buffer i. A parallel outermost loop is outlined into
// `name.par(ptr args, i64 begin, i64 end)` and run through
// kiln_rt_parallel_for. Local buffers become entry-block allocas (promoted to
// registers by SROA), vectorized/unrolled loops carry llvm.loop hints, and
// exp/erf/tanh/sigmoid use the fast-math formulas of support/FastMath.h
// emitted inline so they vectorize.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen::cpu {

/// Adds the kernel's function (and its outlined parallel body) to `module`.
Expected<llvm::Function*> emitKernel(const Kernel& kernel, llvm::Module& module);

}  // namespace kiln::codegen::cpu
