//===- lib/ir/SymbolicShapes.h - Shape inference over symbolic dims -*- C++ -*-===//
//
// The static inference rules see a symbolic dim as unknown (-1). After a
// node's static rule has typed its results, its symbolic rule (one per op or
// op family, SymbolicShapeRules.cpp and SymbolicValueRules.cpp) refines them:
// it computes the result dims as DimExprs of the operands' dims, and for the
// small integer tensors that shape arithmetic passes around (Shape, Gather,
// Concat, ... on shapes) their elements as DimExprs ("dim values"). A dim
// value that is constant becomes a known value, so the static rules
// downstream (Reshape's target, Expand's shape) see it as they see a constant.
// A rule refines only what it can prove; a dim it cannot express stays unknown.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/support/DimExpr.h"
#include "kiln/support/Tensor.h"

namespace kiln::ir::symbolic {

using DimValues = std::vector<DimExpr>;
using KnownValues = std::unordered_map<const Value*, Tensor>;
using KnownDimValues = std::unordered_map<const Value*, DimValues>;
/// Each dynamic dim's [min, max], as DimExpr::bounds takes them.
using SymbolRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

/// Tensors of more elements than this carry no dim values (shapes are short).
inline constexpr size_t kMaxDimValues = 64;

/// The value of `v` if a Constant node produces it or `known` holds it; else null.
const Tensor* lookupKnown(const Value* v, const KnownValues& known);
/// The values as integers when every one is constant.
std::optional<std::vector<int64_t>> constantValues(const DimValues& values);

/// What a symbolic rule sees of its node: operand types, known values and dim
/// values, and the results the static rule typed (which it may refine).
class RuleContext {
 public:
  RuleContext(const Node& node, std::vector<std::optional<Type>>& results, const KnownValues& known,
              const KnownDimValues& dimValues, const SymbolRanges& ranges);

  const Node& node() const { return node_; }
  size_t numInputs() const { return node_.numInputs(); }
  /// Operand i's tensor type; null when omitted or not a tensor.
  const TensorType* input(size_t i) const;
  /// Every dim of operand i as an expression; nullopt when one is unknown.
  std::optional<std::vector<DimExpr>> inputDims(size_t i) const;
  /// Operand i's elements as dim expressions (symbolic, or a known integer
  /// tensor of at most kMaxDimValues elements); null otherwise.
  const DimValues* inputValues(size_t i) const;
  /// Operand i's value when it is known (a constant or propagated); else null.
  const Tensor* inputTensor(size_t i) const;
  /// Operand i's elements when they are all known integers.
  std::optional<std::vector<int64_t>> inputInts(size_t i) const;
  /// Result i's type from the static rule; null when it is not a tensor.
  const TensorType* output(size_t i) const;
  /// Sets result i's dims (its dtype stays); dims the static rule knew stay.
  void setOutputDims(size_t i, const std::vector<DimExpr>& dims);
  /// The same where a nullopt entry leaves the dim as the static rule typed it.
  void setSomeOutputDims(size_t i, const std::vector<std::optional<DimExpr>>& dims);
  /// Records result i's elements as dim expressions.
  void setOutputValues(size_t i, DimValues values);
  /// min and max of two dims, decided by the symbols' ranges where they
  /// decide it (min(seq, 512) is seq when seq is at most 512).
  DimExpr min(const DimExpr& a, const DimExpr& b) const;
  DimExpr max(const DimExpr& a, const DimExpr& b) const;
  /// The dim values the rule set, by result index.
  const std::unordered_map<size_t, DimValues>& outputValues() const { return outputValues_; }

 private:
  const Node& node_;
  std::vector<std::optional<Type>>& results_;
  const KnownValues& known_;
  const KnownDimValues& dimValues_;
  const SymbolRanges& ranges_;
  mutable std::unordered_map<size_t, DimValues> constantValues_;  ///< known operands as dim values
  std::unordered_map<size_t, DimValues> outputValues_;
};

/// True when some operand of `node` has symbolic dims or symbolic dim values:
/// only then does its symbolic rule have anything to refine.
bool needsSymbolicRule(const Node& node, const KnownDimValues& dimValues);

/// Runs the node's symbolic rules (if its op has them) over the statically
/// inferred `results`, then records the dim values they derived in
/// `dimValues` and the constant ones as known values in `known`.
void refine(const Node& node, std::vector<std::optional<Type>>& results, KnownValues& known,
            KnownDimValues& dimValues, const SymbolRanges& ranges);

// The rule tables, one function per op or op family; an op without a rule
// keeps its static result.
void applyShapeRule(RuleContext& ctx);
void applyValueRule(RuleContext& ctx);

/// Numpy broadcasting of expression shapes, dim by dim: nullopt where two
/// dims cannot be shown to agree (two different symbolic dims, neither 1).
std::vector<std::optional<DimExpr>> broadcastDimByDim(const std::vector<std::optional<DimExpr>>& a,
                                                      const std::vector<std::optional<DimExpr>>& b);
/// The same, nullopt unless every dim is decided.
std::optional<std::vector<DimExpr>> broadcastExprs(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b);

}  // namespace kiln::ir::symbolic
