//===- lib/ir/Op.cpp - Ops as enum values, and back to names --------------===//
//
// The Ops.def table as (domain, name) pairs indexed by Op, with a map for
// the reverse lookup the registry does once per schema.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Op.h"

#include <map>
#include <string>
#include <utility>

namespace kiln::ir {
namespace {

struct OpNames {
  std::string_view domain, name, qualified;
};

constexpr OpNames kNames[] = {
#define KILN_OP(id, domain, name) {domain, name, std::string_view(domain).empty() ? name : domain "::" name},
#include "kiln/ir/Ops.def"
#undef KILN_OP
};
static_assert(std::size(kNames) == kNumOps);

}  // namespace

std::optional<Op> findOp(std::string_view domain, std::string_view name) {
  static const auto* byName = [] {
    auto* m = new std::map<std::pair<std::string_view, std::string_view>, Op>();
    for (size_t i = 0; i < kNumOps; ++i) m->emplace(std::pair(kNames[i].domain, kNames[i].name), Op(i));
    return m;
  }();
  if (domain == "ai.onnx") domain = "";
  auto it = byName->find({domain, name});
  return it == byName->end() ? std::nullopt : std::optional<Op>(it->second);
}

std::optional<Op> findOp(std::string_view qualifiedName) {
  const size_t sep = qualifiedName.rfind("::");
  if (sep == std::string_view::npos) return findOp("", qualifiedName);
  return findOp(qualifiedName.substr(0, sep), qualifiedName.substr(sep + 2));
}

std::string_view qualifiedOpName(Op op) { return kNames[size_t(op)].qualified; }

}  // namespace kiln::ir
