//===- lib/ir/Attribute.cpp - Attribute kinds, copies and subgraphs --------===//
//
// Attribute copy semantics: graphs are deep-cloned, everything else is copied
// (tensors share their buffers).
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Attribute.h"

#include "kiln/ir/Graph.h"

namespace kiln::ir {

const char* attrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Tensor: return "tensor";
    case AttrKind::Graph: return "graph";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
    case AttrKind::Strings: return "strings";
    case AttrKind::Tensors: return "tensors";
    case AttrKind::Graphs: return "graphs";
  }
  return "?";
}

Attribute::Attribute(int64_t v) : value_(v) {}
Attribute::Attribute(int v) : value_(int64_t(v)) {}
Attribute::Attribute(float v) : value_(v) {}
Attribute::Attribute(std::string v) : value_(std::move(v)) {}
Attribute::Attribute(const char* v) : value_(std::string(v)) {}
Attribute::Attribute(Tensor v) : value_(std::move(v)) {}
Attribute::Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}
Attribute::Attribute(std::vector<float> v) : value_(std::move(v)) {}
Attribute::Attribute(std::vector<std::string> v) : value_(std::move(v)) {}
Attribute::Attribute(std::vector<Tensor> v) : value_(std::move(v)) {}
Attribute::Attribute(std::unique_ptr<Graph> v) : value_(std::move(v)) {}
Attribute::Attribute(std::vector<std::unique_ptr<Graph>> v) : value_(std::move(v)) {}
Attribute::Attribute(Attribute&&) noexcept = default;
Attribute& Attribute::operator=(Attribute&&) noexcept = default;
Attribute::~Attribute() = default;

Attribute Attribute::emptyList(AttrKind kind) {
  switch (kind) {
    case AttrKind::Ints: return Attribute(std::vector<int64_t>{});
    case AttrKind::Floats: return Attribute(std::vector<float>{});
    case AttrKind::Strings: return Attribute(std::vector<std::string>{});
    case AttrKind::Tensors: return Attribute(std::vector<Tensor>{});
    case AttrKind::Graphs: return Attribute(std::vector<std::unique_ptr<Graph>>{});
    default: break;
  }
  KILN_CHECK(false, "emptyList of scalar kind ", attrKindName(kind));
  return Attribute(int64_t(0));
}

Attribute::Attribute(const Attribute& other) : value_(int64_t(0)) { *this = other; }

Attribute& Attribute::operator=(const Attribute& other) {
  if (this == &other) return *this;
  switch (other.kind()) {
    case AttrKind::Graph:
      value_ = cloneGraph(*other.g());
      break;
    case AttrKind::Graphs: {
      std::vector<std::unique_ptr<Graph>> copies;
      for (const auto& g : other.graphs()) copies.push_back(cloneGraph(*g));
      value_ = std::move(copies);
      break;
    }
    case AttrKind::Int: value_ = other.i(); break;
    case AttrKind::Float: value_ = other.f(); break;
    case AttrKind::String: value_ = other.s(); break;
    case AttrKind::Tensor: value_ = other.t(); break;
    case AttrKind::Ints: value_ = other.ints(); break;
    case AttrKind::Floats: value_ = other.floats(); break;
    case AttrKind::Strings: value_ = other.strings(); break;
    case AttrKind::Tensors: value_ = other.tensors(); break;
  }
  return *this;
}

std::vector<Graph*> Attribute::subgraphs() const {
  if (kind() == AttrKind::Graph) return {g()};
  std::vector<Graph*> out;
  if (kind() == AttrKind::Graphs)
    for (const auto& gr : graphs()) out.push_back(gr.get());
  return out;
}

}  // namespace kiln::ir
