//===- kiln/codegen/LibraryTactics.h - Kernel groups as library calls -*- C++ -*-===//
//
// A library tactic runs a kernel group with a vendor library instead of
// generated code (issue 6 item 4):
//  - cuBLASLt for a MatMul or Gemm group whose epilogue cuBLASLt fuses (a
//    bias over the output's columns, ReLU, or both; Gemm's alpha);
//  - cuDNN for a 2-D Conv group (symmetric padding, any strides, dilations
//    and groups) whose epilogue is a bias per channel, a residual (an Add of
//    a tensor of the result's shape), a ReLU last, or any of them together:
//    cudnnConvolutionBiasActivationForward's y = relu(conv(x) + z + bias).
// Both in f32, f16 or bf16. Which groups use them is
// CompileOptions::libraryTactics: `off` (the default until library steps
// have run on a GPU), `auto` (the heuristic below) or `all` (every group
// that can). The heuristic: the library where the product has at least
// kLibraryMinFlops multiply-adds x 2 (matmul: 2 * batch * m * n * k; conv:
// 2 * outputs * C/groups * R * S), and for convolutions only ungrouped ones
// (kiln's direct depthwise kernels beat cuDNN's on an H100 at batch 1:
// MobileNetV2 0.52 ms vs 3.4 ms in PyTorch eager); smaller products stay
// generated, where launch overhead, not the arithmetic, is what costs.
// Measured choice per kernel belongs to the tuner (issue 8).
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

/// Products smaller than this stay generated under `auto`.
inline constexpr double kLibraryMinFlops = double(1 << 24);

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

}  // namespace kiln::codegen
