//===- kiln/ir/Attribute.h - Node attributes ---------------------*- C++ -*-===//
//
// A node attribute is one of ONNX's attribute kinds: int, float, string, tensor,
// graph, or a list of one of them. Attributes that hold graphs own them (If/Loop/
// Scan bodies); copying such an attribute clones the graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kiln/support/Tensor.h"

namespace kiln::ir {

class Graph;

enum class AttrKind { Int, Float, String, Tensor, Graph, Ints, Floats, Strings, Tensors, Graphs };

/// "int", "float", ..., "ints", "graphs".
const char* attrKindName(AttrKind kind);

class Attribute {
 public:
  Attribute(int64_t v);  // NOLINT: implicit
  Attribute(int v);  // NOLINT: implicit
  Attribute(float v);  // NOLINT: implicit
  Attribute(std::string v);  // NOLINT: implicit
  Attribute(const char* v);  // NOLINT: implicit
  Attribute(Tensor v);  // NOLINT: implicit
  Attribute(std::unique_ptr<Graph> v);  // NOLINT: implicit
  Attribute(std::vector<int64_t> v);  // NOLINT: implicit
  Attribute(std::vector<float> v);  // NOLINT: implicit
  Attribute(std::vector<std::string> v);  // NOLINT: implicit
  Attribute(std::vector<Tensor> v);  // NOLINT: implicit
  Attribute(std::vector<std::unique_ptr<Graph>> v);  // NOLINT: implicit
  /// An empty list of the given list kind.
  static Attribute emptyList(AttrKind kind);

  Attribute(const Attribute& other);
  Attribute& operator=(const Attribute& other);
  Attribute(Attribute&&) noexcept;
  Attribute& operator=(Attribute&&) noexcept;
  ~Attribute();

  AttrKind kind() const { return AttrKind(value_.index()); }
  bool isList() const { return kind() >= AttrKind::Ints; }

  int64_t i() const { return std::get<0>(value_); }
  float f() const { return std::get<1>(value_); }
  const std::string& s() const { return std::get<2>(value_); }
  const Tensor& t() const { return std::get<3>(value_); }
  Graph* g() const { return std::get<4>(value_).get(); }
  const std::vector<int64_t>& ints() const { return std::get<5>(value_); }
  const std::vector<float>& floats() const { return std::get<6>(value_); }
  const std::vector<std::string>& strings() const { return std::get<7>(value_); }
  const std::vector<Tensor>& tensors() const { return std::get<8>(value_); }
  const std::vector<std::unique_ptr<Graph>>& graphs() const { return std::get<9>(value_); }

  /// Graphs held by this attribute (none, one, or a list).
  std::vector<Graph*> subgraphs() const;

 private:
  using Storage = std::variant<int64_t, float, std::string, Tensor, std::unique_ptr<Graph>,
                               std::vector<int64_t>, std::vector<float>, std::vector<std::string>,
                               std::vector<Tensor>, std::vector<std::unique_ptr<Graph>>>;
  Storage value_;
};

}  // namespace kiln::ir
