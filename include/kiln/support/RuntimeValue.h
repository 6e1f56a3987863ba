//===- kiln/support/RuntimeValue.h - Tensors, sequences, optionals -*- C++ -*-===//
//
// A value as programs see it at run time: a tensor, a sequence of tensors (with
// its element type, so empty sequences are typed) or an optional that is empty
// or holds one of the other two. Used for model inputs and outputs and inside
// the reference interpreter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Tensor.h"

namespace kiln {

class RuntimeValue {
 public:
  enum class Kind { Tensor, Sequence, Optional };

  RuntimeValue() = default;  ///< an undefined tensor
  RuntimeValue(Tensor t) : tensor_(std::move(t)) {}  // NOLINT: a tensor is a value
  static RuntimeValue sequence(DType elementType, std::vector<Tensor> elements);
  /// An empty optional.
  static RuntimeValue none();
  /// An optional holding `value` (a tensor or a sequence).
  static RuntimeValue some(RuntimeValue value);

  Kind kind() const { return kind_; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isSequence() const { return kind_ == Kind::Sequence; }
  bool isOptional() const { return kind_ == Kind::Optional; }

  const Tensor& tensor() const;
  const std::vector<Tensor>& elements() const;
  DType sequenceElementType() const { return elementType_; }
  bool hasValue() const { return payload_ != nullptr; }
  const RuntimeValue& value() const;

  /// "f32[2,3]", "seq<f32>(3 elements)", "opt<none>", "opt<f32[2]>"
  std::string describe() const;

 private:
  Kind kind_ = Kind::Tensor;
  Tensor tensor_;
  DType elementType_ = DType::Undefined;
  std::vector<Tensor> elements_;
  std::shared_ptr<const RuntimeValue> payload_;
};

}  // namespace kiln
