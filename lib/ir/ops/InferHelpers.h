//===- lib/ir/ops/InferHelpers.h - Building blocks of inference functions -===//
//
// Shared pieces of the per-op inference functions: reading input types and
// known values, setting results, common inference rules (same as input,
// broadcast, compare), and value propagation for small shape computations.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::ir::infer {

inline void setOut(InferenceContext& ctx, size_t i, DType dtype, Dims dims) {
  ctx.setOutputType(i, TensorType(dtype, std::move(dims)));
}
inline void setUnranked(InferenceContext& ctx, size_t i, DType dtype) {
  ctx.setOutputType(i, TensorType::unranked(dtype));
}
/// Known value of input i (null when absent or unknown).
inline const Tensor* known(const InferenceContext& ctx, size_t i) {
  return ctx.hasInput(i) ? ctx.inputValue(i) : nullptr;
}
/// Known integer values of input i.
std::optional<std::vector<int64_t>> knownInts(const InferenceContext& ctx, size_t i);
/// Known single-element integer value of input i (exact for integers,
/// saturating for floats); nullopt when unknown. An error when the known
/// value does not hold exactly one element.
Expected<std::optional<int64_t>> knownScalarInt(const InferenceContext& ctx, size_t i, const char* what);
/// True when static inference should record a computed value of these dims.
bool shouldPropagate(const InferenceContext& ctx, const Dims& dims);

/// Requires inputs `indices` to share input `indices[0]`'s dtype.
Status requireSameDType(const InferenceContext& ctx, std::initializer_list<size_t> indices);
/// Requires a ranked input of exactly `rank` dims (when its rank is known).
Status requireRank(const TensorType& t, int64_t rank, const char* what);

/// Result 0 has input 0's type.
Status sameAsInput0(InferenceContext& ctx);
/// Result 0: input 0's dtype, all inputs broadcast; inputs must share the dtype.
Status broadcastAll(InferenceContext& ctx);
/// Result 0: bool, inputs 0 and 1 broadcast.
Status broadcastCompare(InferenceContext& ctx);

/// The most specific type that both `a` and `b` are instances of (dims that
/// differ become unknown; different ranks become unranked). Kinds must match.
Expected<Type> mergeTypes(const Type& a, const Type& b);

/// Computes and records result 0 of an elementwise op whose inputs are all known
/// and small (Add, Sub, Mul, Div, Mod, Neg, Abs, Min, Max, Equal, Less, Greater,
/// Not, And, Or, Where, Cast, Floor, Ceil, Sqrt, ...). No-op otherwise.
void propagateElementwise(InferenceContext& ctx, DType resultDType, const Dims& resultDims);

}  // namespace kiln::ir::infer
