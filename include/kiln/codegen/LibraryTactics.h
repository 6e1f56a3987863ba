//===- kiln/codegen/LibraryTactics.h - Kernel groups as library calls -*- C++ -*-===//
//
// A library tactic runs a kernel group with a vendor library instead of
// generated code (issue 6 item 4). Today: cuBLASLt for a MatMul or Gemm
// group whose epilogue cuBLASLt fuses (a bias over the output's columns,
// ReLU, or both; Gemm's alpha), in f32, f16 or bf16. Which groups use it is
// CompileOptions::libraryTactics: `off` (the default until library steps
// have run on a GPU), `auto` (the heuristic below) or `all` (every group
// that can). The heuristic: cuBLASLt where the product has at least
// kLibraryMinFlops (2 * batch * m * n * k); smaller products stay generated,
// where launch overhead, not the GEMM, is what costs.
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

/// A group as one library call, with the values its operands are (A, B, [bias], D).
struct LibraryMatch {
  runtime::LibraryCall call;
  std::vector<const ir::Value*> operands;
};

/// The cuBLASLt call that computes `group`, if one can.
std::optional<LibraryMatch> cublasLtCallFor(const KernelGroup& group, bool allowTf32);

/// Whether `tactics` runs `match` in the library.
bool useLibrary(LibraryTactics tactics, const LibraryMatch& match);

}  // namespace kiln::codegen
