//===- lib/codegen/TensorExpr.h - Element expressions of graph values -----===//
//
// What lets templates fuse: for any value computed inside a kernel group,
// ElementBuilder::at(value, index) returns the kernel IR expression of one
// element, inlining the producing ops (elementwise math, broadcasting, and
// index remapping: reshape, transpose, slice, concat, pad, gather, expand,
// split, tile). Values read from memory become global buffer parameters the
// first time they are read; values a template computes itself (an anchor's
// accumulator) are supplied with setSource. Expressions are cached per
// (value, index) so diamonds in a group stay DAGs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <map>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/codegen/KernelIR.h"
#include "kiln/codegen/ScheduleTemplate.h"

namespace kiln::codegen {

using Index = std::vector<Expr>;

/// True when the op can be computed element by element (ElementBuilder supports it).
bool hasElementExpr(const ir::Node& n);

/// The static dims of a value; an error naming the producer when unknown.
Expected<Dims> staticDims(const ir::Value* v);
/// The dims of a ranked tensor value whose other dims are all dynamic dims
/// (symbolic): static dims as they are, -1 at the dynamic ones (never 1, so
/// broadcasting passes their index through); staticDims' error otherwise.
Expected<Dims> elementDims(const ir::Value* v);
/// Whether the value's type has dynamic (symbolic) dims.
bool hasDynamicDims(const ir::Value* v);
/// Whether any value a group reads or writes inside has dynamic dims.
bool hasDynamicDims(const KernelGroup& g);
/// Where in their ranges dynamic dims are taken: at the opt values (what
/// knob spaces are sized for), at their lower bounds (what a schedule may
/// assume every run has) or at their upper bounds (a buffer's capacity).
enum class DimPoint : uint8_t { Opt, Min, Max };
/// A value's dims with each dynamic dim at `point` of the group's ranges;
/// its static dims when it has no dynamic ones (the ranges may then be null).
Expected<Dims> dimsAt(const ir::Value* v, const ir::DimRanges* ranges, DimPoint point);
/// The kernel scalar type of a tensor value.
Expected<ScalarType> valueScalarType(const ir::Value* v);
/// Row-major flat index of `idx` in `dims`.
Expr flatIndex(const Index& idx, const Dims& dims);
/// The multi-index of `flat` in `dims` (floordiv/floormod per dim).
Index unflatten(const Expr& flat, const Dims& dims);
/// Dims as kernel expressions (dynamic dims over the run-time extents).
using ExprDims = std::vector<Expr>;
/// flatIndex and unflatten over dims that may be run-time expressions.
Expr flatIndex(const Index& idx, const ExprDims& dims);
Index unflatten(const Expr& flat, const ExprDims& dims);
/// The product of dims[begin, end) as an expression.
Expr productOf(const ExprDims& dims, size_t begin = 0, size_t end = SIZE_MAX);
/// Index expressions for loop variables.
Index indexOf(const std::vector<Var>& vars);
/// The single element of `value` as a constant of type t: exact for integer
/// tensors (through a double, i64 values beyond 2^53 would round), else as a double.
Expr scalarConstant(ScalarType t, const Tensor& value);
/// Clamps an index expression into [0, extent-1].
Expr clampIndex(const Expr& i, int64_t extent);
/// Clamps an index expression into [0, extent-1] for a run-time extent (at least 1).
Expr clampIndex(const Expr& i, const Expr& extent);
/// A small identifier made of a value's name (for buffers and variables).
std::string identifierOf(const std::string& name);

class ElementBuilder {
 public:
  explicit ElementBuilder(const KernelGroup& group) : group_(group) {}

  /// Element `idx` of `v` in v's compute type.
  Expected<Expr> at(const ir::Value* v, const Index& idx);
  /// Element `flat` (row-major) of `v`: a direct load when v is read from
  /// memory (so a flat index that advances by one stays a vector load).
  Expected<Expr> atFlat(const ir::Value* v, const Expr& flat);
  /// The template computes `v` itself; `f` gives its element at an index.
  void setSource(const ir::Value* v, std::function<Expr(const Index&)> f) { sources_[v] = std::move(f); }
  /// The buffer parameter that holds `v` (created on first request).
  Expected<Buffer> bufferFor(const ir::Value* v);
  /// A parameter holding constant `v` rearranged by `pack` at compile time.
  Expected<Buffer> packedBuffer(const ir::Value* v, const PackSpec& pack, int64_t size);
  /// A parameter holding a table computed at compile time (placed with the weights).
  Buffer tableBuffer(const std::string& name, Tensor data);
  /// A scratch buffer for this kernel alone (e.g. a padded or im2col copy); the
  /// runtime places it in the arena. Its parameter holds no graph value.
  Buffer workspace(const std::string& name, ScalarType type, int64_t size);
  /// A value's dims as kernel expressions: its constants, and each dynamic
  /// dim over the kernel's run-time extents (extent()).
  Expected<ExprDims> dims(const ir::Value* v);
  /// Dynamic dim `d` as a kernel expression: each symbol it names becomes a
  /// run-time extent of the kernel (made on first use, bounded by the
  /// symbol's range in the group's ranges; an error for a symbol without one).
  Expected<Expr> extent(const DimExpr& d);
  /// The run-time extents the kernel takes, in parameter order, with the symbol each holds.
  const std::vector<std::pair<std::string, RunTimeExtent>>& extents() const { return extents_; }
  /// Stores element `idx` of every group output in `values` (the same index
  /// space, e.g. an anchor and its epilogue outputs).
  Expected<std::vector<Stmt>> storeOutputs(const std::vector<ir::Value*>& values, const Index& idx);

  const std::vector<Buffer>& params() const { return params_; }
  const std::vector<const ir::Value*>& paramValues() const { return paramValues_; }
  std::vector<PackSpec> paramPacks() const {
    std::vector<PackSpec> p = packs_;
    p.resize(params_.size());
    return p;
  }
  const KernelGroup& group() const { return group_; }

 private:
  /// `name`, suffixed when a parameter or a kernel-local buffer (acc, As, ...) already has it.
  std::string uniqueParamName(std::string name) const;
  bool inGroup(const ir::Node* n) const;
  Expected<Expr> compute(const ir::Node& n, size_t result, const Index& idx);

  const KernelGroup& group_;
  std::map<const ir::Value*, std::function<Expr(const Index&)>> sources_;
  std::map<const ir::Value*, Buffer> buffers_;
  std::vector<Buffer> params_;
  std::vector<const ir::Value*> paramValues_;
  std::vector<PackSpec> packs_;  ///< by parameter position (shorter when the last ones are plain)
  std::vector<std::pair<std::string, RunTimeExtent>> extents_;
  /// (value, index node identities) -> (the index, kept alive so its nodes'
  /// addresses cannot be reused by other expressions, and the element).
  std::map<std::pair<const ir::Value*, std::vector<const ExprNode*>>, std::pair<Index, Expr>> cache_;
};

}  // namespace kiln::codegen
