//===- tests/unit/OpTableTest.cpp - ir::Op and the registered schemas agree -===//
//
// Every schema the registry holds has its Ops.def entry and every entry a
// schema, names and enum values map both ways, and a node's op() is its
// schema's: passes compare ops as these values.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <set>

#include "kiln/ir/Graph.h"
#include "kiln/ir/Op.h"
#include "kiln/ir/OpSchema.h"

using namespace kiln;

TEST_CASE("every registered schema has an Op and every Op a schema") {
  const std::vector<const ir::OpSchema*> schemas = ir::OpRegistry::global().all();
  REQUIRE(schemas.size() == ir::kNumOps);
  std::set<ir::Op> seen;
  for (const ir::OpSchema* s : schemas) {
    INFO(s->qualifiedName());
    CHECK(ir::findOp(s->domain, s->name) == s->op);
    CHECK(ir::findOp(s->qualifiedName()) == s->op);
    CHECK(ir::qualifiedOpName(s->op) == s->qualifiedName());
    CHECK(seen.insert(s->op).second);
  }
  CHECK(seen.size() == ir::kNumOps);
}

TEST_CASE("op lookups by name") {
  CHECK(ir::findOp("", "Conv") == ir::Op::Conv);
  CHECK(ir::findOp("ai.onnx", "Conv") == ir::Op::Conv);
  CHECK(ir::findOp("kiln::Gelu") == ir::Op::KilnGelu);
  CHECK(ir::findOp("kiln", "Conv") == std::nullopt);
  CHECK(ir::findOp("Gelu") == std::nullopt);  // the default domain's Gelu (opset 20) is not in the table
  CHECK(ir::findOp("com.microsoft::Attention") == std::nullopt);
}

TEST_CASE("a node's op is its schema's") {
  ir::Graph g;
  ir::Value* x = g.addInput("x", ir::Type());
  ir::Node* relu = g.createNode(ir::opSchema("Relu"), std::vector<ir::Value*>{x}, 1);
  ir::Node* gelu = g.createNode(ir::opSchema("Gelu", "kiln"), std::vector<ir::Value*>{relu->output(0)}, 1);
  CHECK(relu->op() == ir::Op::Relu);
  CHECK(ir::isOp(gelu, ir::Op::KilnGelu));
  CHECK_FALSE(ir::isOp(gelu, ir::Op::Relu));
  CHECK_FALSE(ir::isOp(nullptr, ir::Op::Relu));
}
