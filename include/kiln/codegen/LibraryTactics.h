//===- kiln/codegen/LibraryTactics.h - Kernel groups as library calls -*- C++ -*-===//
//
// A library tactic runs a kernel group with a vendor library instead of
// generated code (issue 6 item 4):
//  - cuBLASLt for a MatMul or Gemm group whose epilogue cuBLASLt fuses (a
//    bias over the output's columns, a residual as its C, ReLU last, or any
//    of them together; Gemm's alpha);
//  - cuDNN for a 2-D Conv group (symmetric padding, any strides, dilations
//    and groups) whose epilogue is a bias per channel, a residual (an Add of
//    a tensor of the result's shape), a ReLU last, or any of them together:
//    cudnnConvolutionBiasActivationForward's y = relu(conv(x) + z + bias).
// Both in f32, f16 or bf16. Which groups use them is
// CompileOptions::libraryTactics: `off` (CompileOptions' default, so that
// the library API asks for vendor libraries explicitly; `kiln compile
// --target cuda` defaults to `auto`), `auto` (the heuristic below) or
// `all` (every group that can). The heuristic, fitted to each library call
// timed against the generated kernel it replaces (flops = 2 x multiply-adds;
// docs/cuda-target.md, "Library tactics"):
//  - a matmul goes to cuBLASLt from 1 MFLOP (a batch-1 classifier's
//    1 x 2048 x 1000 product: 0.004 ms against 0.054 on an H200), except a
//    strided batch of small products under 64 MFLOP (BERT's per-head
//    attention products at batch 1, where the generated kernel is as fast
//    or up to 1.4x faster in f32);
//  - a convolution goes to cuDNN only ungrouped (kiln's depthwise kernels
//    win), and at a batch of 8 or more from 16 MFLOP (cuDNN won 23 of
//    ResNet-50's 25 distinct convolutions at batch 32 on an H100); below a
//    batch of 8 from 8 MFLOP where its reduction (input channels x kernel
//    taps) is 256 or more, or its kernel is larger than 1 x 1 (from
//    16 MFLOP), or, in f32, from 100 MFLOP. Fitted on an H200 at batch 1
//    (2026-11-27: each call timed as a graph replay, as models run it):
//    cuDNN won 22 of ResNet-50's 24 f32 convolutions (0.44-0.83x), every
//    3 x 3 and the stem in f16 (0.10-0.43x), and MobileNetV2's 1 x 1
//    convolutions from 384 input channels (0.31-0.92x); on 1 x 1
//    convolutions reducing over 32-192 channels it mostly lost (up to
//    2.3x; a few within 5% either way), except f32 ones from 100 MFLOP. (An earlier rule, fitted to per-launch profiles that timed
//    each cuDNN call's host-side cost as device time, kept 56 x 56 and
//    28 x 28 maps generated at batch 1.)
// A matmul group whose epilogue goes on past what cuBLASLt fuses is split
// (splitForLibrary) when its head qualifies; convolution groups are not
// (cuDNN's losses at batch 1 would only grow by the extra pass).
// With a tuning database (kiln tune --target cuda measures each group's
// library call, or its split, beside its kernels), `auto` follows the
// measurement instead (CompileOptions::libraryMeasuredFaster).
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

/// Whether `tactics` runs `match` in the library.
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
