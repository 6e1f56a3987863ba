//===- kiln/ir/Type.h - Value types: tensors, sequences, optionals -*- C++ -*-===//
//
// A TensorType is a dtype plus a shape that may be unranked or have unknown dims
// (-1), each optionally named by a symbol ("batch") as ONNX inputs declare them.
// A dim may also be symbolic: unknown as an int64 but known as a DimExpr over
// the model's dynamic dims (an input dim compiled for a range of values, and
// whatever shape inference derives from it: "seq", "2*seq + 1").
// Dynamic input dims are otherwise bound at import, and only data-dependent
// results (NonZero, NonMaxSuppression, ...) stay unknown.
// A Type is a tensor, a sequence of tensors or an optional value (ONNX's types).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/DimExpr.h"
#include "kiln/support/Tensor.h"

namespace kiln::ir {

inline constexpr int64_t kUnknownDim = -1;

class TensorType {
 public:
  /// Undefined dtype, unknown rank.
  TensorType() = default;
  TensorType(DType dtype, Dims dims) : dtype_(dtype), dims_(std::move(dims)), ranked_(true) {}
  static TensorType unranked(DType dtype) {
    TensorType t;
    t.dtype_ = dtype;
    return t;
  }
  /// Type of a concrete tensor.
  static TensorType of(const Tensor& t) { return TensorType(t.dtype(), t.dims()); }

  DType dtype() const { return dtype_; }
  bool hasRank() const { return ranked_; }
  /// Dims (kUnknownDim where unknown); empty for rank 0 and for unranked.
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return int64_t(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[size_t(i)]; }
  /// True when ranked and every dim is known.
  bool isStatic() const;
  /// Dim i as an expression: its value when known, its DimExpr when it is
  /// symbolic, nullopt when unknown.
  std::optional<DimExpr> dimExpr(int64_t i) const;
  /// Every dim as an expression, or nullopt when some dim (or the rank) is unknown.
  std::optional<std::vector<DimExpr>> dimExprs() const;
  /// Sets dim i: a constant makes it static, any other expression symbolic
  /// (dims()[i] is then kUnknownDim); an overflowed expression makes it unknown.
  void setDimExpr(int64_t i, const DimExpr& e);
  /// A ranked type whose dims are these expressions.
  static TensorType ofExprs(DType dtype, const std::vector<DimExpr>& dims);
  /// True when some dim is symbolic.
  bool hasSymbolicDims() const;
  /// Element count when static.
  std::optional<int64_t> numElements() const;

  /// Symbolic names of dims (empty, or one entry per dim with "" for unnamed).
  const std::vector<std::string>& dimSymbols() const { return symbols_; }
  void setDimSymbols(std::vector<std::string> symbols) { symbols_ = std::move(symbols); }

  TensorType withDType(DType dtype) const {
    TensorType t = *this;
    t.dtype_ = dtype;
    return t;
  }

  /// True when a concrete shape agrees with this type (unknown dims match anything).
  bool accepts(const Dims& concrete) const;
  bool operator==(const TensorType& o) const = default;
  /// "f32[1,3,?,224]", "f32[batch,3]", "f32[*]" (unranked), "i64[]" (scalar)
  std::string str() const;

 private:
  DType dtype_ = DType::Undefined;
  Dims dims_;
  bool ranked_ = false;
  std::vector<std::string> symbols_;
  /// Empty, or one entry per dim: set exactly where the dim is symbolic.
  std::vector<std::optional<DimExpr>> exprs_;
};

class Type {
 public:
  enum class Kind { Tensor, Sequence, Optional };

  Type() = default;  ///< undefined tensor type
  Type(TensorType t) : tensor_(std::move(t)) {}  // NOLINT: a tensor type is a type
  static Type sequence(Type element);
  static Type optional(Type element);

  Kind kind() const { return kind_; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isSequence() const { return kind_ == Kind::Sequence; }
  bool isOptional() const { return kind_ == Kind::Optional; }
  /// The tensor type; only for Kind::Tensor (checked).
  const TensorType& tensor() const;
  /// Element type of a sequence or optional (checked).
  const Type& element() const;

  bool operator==(const Type& o) const;
  /// "f32[2,3]", "seq<f32[*]>", "opt<seq<i64[2]>>"
  std::string str() const;

 private:
  Kind kind_ = Kind::Tensor;
  TensorType tensor_;
  std::shared_ptr<const Type> element_;
};

}  // namespace kiln::ir
