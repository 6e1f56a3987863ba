//===- lib/ir/Type.cpp - Tensor, sequence and optional types ---------------===//
//
// Type queries and the textual spelling of types used by the printer, the
// parser and error messages.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Type.h"

#include "kiln/ir/Printer.h"

namespace kiln::ir {

bool TensorType::isStatic() const {
  if (!ranked_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

std::optional<int64_t> TensorType::numElements() const {
  if (!isStatic()) return std::nullopt;
  return checkedNumElements(dims_);
}

bool TensorType::accepts(const Dims& concrete) const {
  if (!ranked_) return true;
  if (concrete.size() != dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] >= 0 && dims_[i] != concrete[i]) return false;
  return true;
}

namespace {
bool isSymbolBare(const std::string& s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
      return false;
  return s != "seq" && s != "opt";
}
}  // namespace

std::string TensorType::str() const {
  std::string s = dtypeName(dtype_);
  if (!ranked_) return s + "[*]";
  s += "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    if (dims_[i] >= 0)
      s += std::to_string(dims_[i]);
    else if (i < symbols_.size() && !symbols_[i].empty())
      s += isSymbolBare(symbols_[i]) ? symbols_[i] : quoteString(symbols_[i]);
    else
      s += "?";
  }
  return s + "]";
}

Type Type::sequence(Type element) {
  Type t;
  t.kind_ = Kind::Sequence;
  t.element_ = std::make_shared<const Type>(std::move(element));
  return t;
}

Type Type::optional(Type element) {
  Type t;
  t.kind_ = Kind::Optional;
  t.element_ = std::make_shared<const Type>(std::move(element));
  return t;
}

const TensorType& Type::tensor() const {
  KILN_CHECK(kind_ == Kind::Tensor, "tensor() of non-tensor type ", str());
  return tensor_;
}

const Type& Type::element() const {
  KILN_CHECK(kind_ != Kind::Tensor && element_, "element() of tensor type ", str());
  return *element_;
}

bool Type::operator==(const Type& o) const {
  if (kind_ != o.kind_) return false;
  if (kind_ == Kind::Tensor) return tensor_ == o.tensor_;
  return *element_ == *o.element_;
}

std::string Type::str() const {
  switch (kind_) {
    case Kind::Tensor: return tensor_.str();
    case Kind::Sequence: return "seq<" + element_->str() + ">";
    case Kind::Optional: return "opt<" + element_->str() + ">";
  }
  return "?";
}

}  // namespace kiln::ir
