//===- lib/support/RuntimeValue.cpp - Run-time values ----------------------===//
//
// Constructors and accessors of RuntimeValue.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/RuntimeValue.h"

namespace kiln {

RuntimeValue RuntimeValue::sequence(DType elementType, std::vector<Tensor> elements) {
  RuntimeValue v;
  v.kind_ = Kind::Sequence;
  v.elementType_ = elementType;
  v.elements_ = std::move(elements);
  return v;
}

RuntimeValue RuntimeValue::none() {
  RuntimeValue v;
  v.kind_ = Kind::Optional;
  return v;
}

RuntimeValue RuntimeValue::some(RuntimeValue value) {
  KILN_CHECK(!value.isOptional(), "an optional cannot hold an optional");
  RuntimeValue v;
  v.kind_ = Kind::Optional;
  v.payload_ = std::make_shared<const RuntimeValue>(std::move(value));
  return v;
}

const Tensor& RuntimeValue::tensor() const {
  KILN_CHECK(kind_ == Kind::Tensor, "tensor() of ", describe());
  return tensor_;
}

const std::vector<Tensor>& RuntimeValue::elements() const {
  KILN_CHECK(kind_ == Kind::Sequence, "elements() of ", describe());
  return elements_;
}

const RuntimeValue& RuntimeValue::value() const {
  KILN_CHECK(kind_ == Kind::Optional && payload_, "value() of ", describe());
  return *payload_;
}

std::string RuntimeValue::describe() const {
  switch (kind_) {
    case Kind::Tensor: return tensor_.defined() ? tensor_.typeString() : "undefined";
    case Kind::Sequence:
      return std::string("seq<") + dtypeName(elementType_) + ">(" + std::to_string(elements_.size()) + " elements)";
    case Kind::Optional: return payload_ ? "opt<" + payload_->describe() + ">" : "opt<none>";
  }
  return "?";
}

}  // namespace kiln
