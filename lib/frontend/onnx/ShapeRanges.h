//===- lib/frontend/onnx/ShapeRanges.h - Input shape ranges at import -*- C++ -*-===//
//
// ImportOptions' min, opt and max shapes applied to the root graph's inputs:
// a dim whose min and max differ becomes a symbol (its dim_param name, or
// "<input>.<axis>") with that range in Module::dimRanges, the rest are fixed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>

#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Graph.h"

namespace kiln::onnx {

/// Input `name`'s type under the range options (`declared` when no range
/// names it); each dynamic dim's range goes into `ranges`. KE1010
/// (ShapeBinding) naming the input and dim on a missing min or max, a
/// rank that differs, min > opt > max, a range over a fixed dim, or one
/// dim name given two ranges.
Expected<ir::Type> rangedInputType(const std::string& name, const ir::Type& declared, const ImportOptions& options,
                                   std::map<std::string, ir::DimRange>& ranges);

/// Checks, once the inputs are typed, that every input a range names exists
/// and has no --shape too, and, when any range is given, that no input dim
/// is left dynamic without one (KE1010 naming the input, dim and dim name).
Status checkRangeCoverage(const ir::Graph& graph, const ImportOptions& options);

}  // namespace kiln::onnx
