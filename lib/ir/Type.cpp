//===- lib/ir/Type.cpp - Tensor, sequence and optional types ---------------===//
//
// Type queries and the textual spelling of types used by the printer, the
// parser and error messages.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Type.h"

#include <set>

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

std::optional<DimExpr> TensorType::dimExpr(int64_t i) const {
  if (dims_[size_t(i)] >= 0) return DimExpr(dims_[size_t(i)]);
  if (size_t(i) < exprs_.size()) return exprs_[size_t(i)];
  return std::nullopt;
}

std::optional<std::vector<DimExpr>> TensorType::dimExprs() const {
  if (!ranked_) return std::nullopt;
  std::vector<DimExpr> out;
  for (int64_t i = 0; i < rank(); ++i) {
    std::optional<DimExpr> e = dimExpr(i);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

void TensorType::setDimExpr(int64_t i, const DimExpr& e) {
  std::optional<int64_t> c = e.constant();
  bool symbolic = !e.overflowed() && !c;
  dims_[size_t(i)] = c && *c >= 0 && !e.overflowed() ? *c : kUnknownDim;  // a negative dim is no dim
  if (symbolic) {
    exprs_.resize(dims_.size());
    exprs_[size_t(i)] = e;
  } else if (size_t(i) < exprs_.size()) {
    exprs_[size_t(i)].reset();
  }
  while (!exprs_.empty() && !exprs_.back()) exprs_.pop_back();
}

TensorType TensorType::ofExprs(DType dtype, const std::vector<DimExpr>& dims) {
  TensorType t(dtype, Dims(dims.size(), kUnknownDim));
  for (size_t i = 0; i < dims.size(); ++i) t.setDimExpr(int64_t(i), dims[i]);
  return t;
}

bool TensorType::hasSymbolicDims() const { return !exprs_.empty(); }

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

/// A symbolic dim as the type prints it: a bare symbol as itself, anything
/// else in parentheses ("(2*seq + 1)") so the dims stay comma-separated.
std::string exprString(const DimExpr& e) {
  std::string text = e.str();
  std::set<std::string> symbols = e.symbols();
  if (symbols.size() == 1 && *symbols.begin() == text) return isSymbolBare(text) ? text : quoteString(text);
  return "(" + text + ")";
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
    else if (i < exprs_.size() && exprs_[i])
      s += exprString(*exprs_[i]);
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
