//===- kiln/codegen/LibraryTactics.h - Kernel groups as library calls -*- C++ -*-===//
//
// A library tactic runs a kernel group with a vendor library instead of
// generated code: cuBLASLt for a MatMul or Gemm group whose epilogue it fuses
// (bias, residual as C, ReLU; Gemm's alpha), cuDNN for a 2-D Conv group
// whose epilogue is cudnnConvolutionBiasActivationForward's
// y = relu(conv(x) + z + bias); f32, f16 or bf16. CompileOptions::
// libraryTactics picks which groups: `off` (the library API's default),
// `auto` (`kiln compile --target cuda`'s default: the size heuristic of
// useLibrary, fitted to each call timed against the kernel it replaces,
// docs/cuda-target.md, "Library tactics") or `all`. With a tuning database
// `auto` follows the measurement instead (CompileOptions::
// libraryMeasuredFaster). A matmul group whose epilogue goes past what
// cuBLASLt fuses is split (splitForLibrary).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/runtime/Executable.h"

namespace kiln::codegen {

enum class LibraryTactics { Off, Auto, All };
/// "off" | "auto" | "all"; KE4003 (InvalidArgument) otherwise.
Expected<LibraryTactics> parseLibraryTactics(const std::string& text);

/// `auto`'s thresholds (see above).
inline constexpr double kLibraryMinMatmulFlops = double(1 << 20);
inline constexpr double kLibraryMinBatchedMatmulFlops = 64e6;
inline constexpr int64_t kLibraryThroughputBatch = 8;
inline constexpr double kLibraryMinFlops = double(1 << 24);  ///< convolutions at kLibraryThroughputBatch or more,
                                                             ///< and those with a kernel over 1 x 1 below it
inline constexpr double kLibraryMinSmallBatchConvFlops = 8e6;
inline constexpr int64_t kLibraryMinSmallBatchConvReduction = 256;  ///< input channels (per group) x kernel taps
inline constexpr double kLibraryMinSmallBatchF32ConvFlops = 100e6;

/// A group as one library call, with the values its operands are (in LibraryCall's order).
struct LibraryMatch {
  runtime::LibraryCall call;
  std::vector<const ir::Value*> operands;
};

/// The cuBLASLt call that computes `group`, if one can.
std::optional<LibraryMatch> cublasLtCallFor(const KernelGroup& group, bool allowTf32);
/// The cuDNN convolution that computes `group`, if one can.
std::optional<LibraryMatch> cudnnConvCallFor(const KernelGroup& group, bool allowTf32);
/// The library call that computes `group` (by its role), if one can.
std::optional<LibraryMatch> libraryCallFor(const KernelGroup& group, bool allowTf32);

/// Floating-point operations of a call (2 per multiply-add).
double libraryCallFlops(const runtime::LibraryCall& call);

/// Whether `tactics` runs `match` in the library. Under `auto` (flops = 2 x
/// multiply-adds): a matmul from 1 MFLOP, a strided batch of products from
/// 64 MFLOP (below it the generated kernel is as fast or faster); an
/// ungrouped convolution at a batch of 8 or more from 16 MFLOP, below that
/// batch from 8 MFLOP where its reduction (input channels x taps) is 256 or
/// more, from 16 MFLOP with a kernel larger than 1 x 1, or in f32 from 100
/// MFLOP; grouped convolutions stay generated (kiln's depthwise kernels win).
/// The thresholds and the timings behind them: docs/cuda-target.md, "Library tactics".
bool useLibrary(LibraryTactics tactics, const LibraryMatch& match);

/// A matmul group cut in two: a head cuBLASLt computes (the product and the
/// bias, residual and ReLU right after it) and the rest of the epilogue as an
/// injective group reading the head's result.
struct LibrarySplit {
  LibraryMatch head;
  KernelGroup tail;  ///< same id as the group (named after its first op)
};

/// The split of a matmul group whose epilogue cuBLASLt cannot fuse whole
/// (BERT's FFN up projection ends in an exact, erf-based GELU, and
/// cuBLASLt's GELU epilogues use the tanh approximation), when `tactics`
/// takes the head: the product then runs in cuBLASLt and the rest costs one
/// elementwise pass. None when the group fuses whole or not at all, or when
/// the tail would need more of the head than its result.
std::optional<LibrarySplit> splitForLibrary(const FusionPlan& plan, const KernelGroup& group, LibraryTactics tactics,
                                           bool allowTf32);

}  // namespace kiln::codegen
