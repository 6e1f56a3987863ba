//===- kiln/ir/Printer.h - Textual form of the IR ----------------*- C++ -*-===//
//
// Prints modules and graphs in kiln's text IR (.kir), which the parser reads
// back; print -> parse -> print is the identity. Small tensors are printed
// inline; larger ones are referenced by name (@name) and their bytes follow in a
// trailing `resources` section as hex, unless elided for display.
//
//   module @tiny {
//     opset "" = 17
//     graph @main(%x: f32[1,4]) {
//       %w = Constant() {value = tensor<f32[4,2]: @w>} : f32[4,2]
//       %y = MatMul(%x, %w) : f32[1,2] loc("matmul_0")
//       return %y
//     }
//   }
//   resources {
//     "w": "0x0000803f..."
//   }
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/ir/Module.h"

namespace kiln::ir {

struct PrintOptions {
  /// Tensors with at most this many elements are printed inline.
  int64_t inlineTensorLimit = 16;
  /// Omit the resources section (display only; such text does not parse back).
  bool elideResources = false;
};

std::string printModule(const Module& module, const PrintOptions& options = {});
/// A graph on its own (`graph @name(...) { ... }`), resources elided.
std::string printGraph(const Graph& graph, const PrintOptions& options = {});

/// Shortest text that reads back to exactly `v` (always with '.', 'e', "inf" or "nan").
std::string formatFloat(float v);
/// `name` as a bare identifier if it is one ([A-Za-z0-9_.]+), else quoted.
std::string formatName(const std::string& name);
/// Quoted and escaped string literal.
std::string quoteString(const std::string& s);

}  // namespace kiln::ir
