//===- tests/unit/IrTest.cpp - Unit tests of lib/ir -----------------------===//
//
// Graph construction, use lists and the listener, the verifier, the text form (exact round
// trips, parse errors), the structural hash and static shape inference.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "Mutation.h"
#include "kiln/ir/Graph.h"
#include "kiln/ir/Module.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parseModule(text, "test.kir");
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  return std::move(m).value();
}

Error parseError(const std::string& text) {
  auto m = parseModule(text, "test.kir");
  REQUIRE_FALSE(m.isOk());
  return m.error();
}

const char* kAddRelu = R"(module @m {
  ir_version = 8
  opset "" = 17
  graph @main(%x: f32[2,3], %y: f32[3]) {
    %s = Add(%x, %y) : f32[2,3] loc("add")
    %r = Relu(%s) : f32[2,3] loc("relu")
    return %r
  }
}
)";

}  // namespace

TEST_CASE("nodes keep use lists consistent through rewrites", "[ir]") {
  Graph g;
  Value* x = g.addInput("x", TensorType(DType::F32, {4}));
  Node* a = g.createNode(opSchema("Relu"), std::vector<Value*>{x}, 1, "a");
  Node* b = g.createNode(opSchema("Neg"), std::vector<Value*>{a->output(0)}, 1, "b");
  g.addOutput(b->output(0));
  CHECK(x->uses().size() == 1);
  CHECK(a->output(0)->uses() == std::vector<Use>{{b, 0, nullptr}});
  CHECK(b->output(0)->uses().front().isGraphOutput());
  // Redirect b's uses (the graph output) to a's result, then erase b.
  b->output(0)->replaceAllUsesWith(a->output(0));
  CHECK(g.outputs()[0] == a->output(0));
  CHECK_FALSE(b->output(0)->hasUses());
  g.eraseNode(b);
  CHECK(g.numNodes() == 1);
  CHECK(a->output(0)->uses().size() == 1);
  CHECK(verify(g, {.checkTypes = false}).isOk());
}

TEST_CASE("value names are unique across a graph and its subgraphs", "[ir]") {
  Graph g;
  Value* x = g.addInput("x", TensorType(DType::F32, {}));
  CHECK(g.uniqueValueName("x") == "x_1");
  auto sub = g.createSubgraph("body");
  CHECK(sub->isValueNameTaken("x"));
  CHECK(sub->uniqueValueName("relu") == "relu");
  Node* n = g.createNode(opSchema("Relu"), std::vector<Value*>{x}, 1);
  CHECK(n->output(0)->name() == "relu");
  CHECK(sub->uniqueValueName("relu") == "relu_1");
}

TEST_CASE("the verifier rejects use before definition", "[ir][verifier]") {
  auto m = parse(kAddRelu);
  Graph& g = m->graph();
  std::vector<Node*> nodes = g.nodes();
  g.moveBefore(nodes[1], nodes[0]);  // relu now comes before the add it reads
  Status s = verify(g);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().code() == ErrorCode::IrVerify);
  CHECK(s.error().nodeName() == "relu");
  CHECK_THAT(s.error().message(), Catch::Contains("not defined before its use"));
}

TEST_CASE("the verifier rejects attributes of the wrong kind and wrong types", "[ir][verifier]") {
  auto m = parse(kAddRelu);
  Node* relu = m->graph().nodes()[1];
  relu->setAttr("alpha", Attribute(1.0f));
  Status s = verify(m->graph());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().code() == ErrorCode::BadAttribute);
  relu->removeAttr("alpha");
  relu->output(0)->setType(TensorType(DType::F32, {2, 4}));
  s = verify(m->graph());
  REQUIRE_FALSE(s.isOk());
  CHECK_THAT(s.error().message(), Catch::Contains("f32[2,4]") && Catch::Contains("f32[2,3]"));
}

TEST_CASE("text IR round trips exactly, including subgraphs and resources", "[ir][text]") {
  const char* text = R"(module @"odd model" {
  ir_version = 8
  producer = "test \"quoted\"\x01"
  opset "" = 17
  metadata "k" = "v"
  graph @main(%"in put": f32[batch,4], %c: bool[], %s: seq<i64[*]>) {
    %w = Constant() {value = tensor<f32[4,5]: @w>} : f32[4,5]
    %small = Constant() {value = tensor<f16[3]: [nan, -inf, -0.0]>} : f16[3]
    %m = MatMul(%"in put", %w) : f32[?,5] loc("mm")
    %y = If(%c) {else_branch = graph @else() {
        %e = Neg(%m) : f32[?,5]
        return %e
      }, then_branch = graph @then() {
        return %m
      }} : f32[?,5] loc("if")
    %len = SequenceLength(%s) : i64[]
    %clip = Clip(%y, none, none) : f32[?,5]
    %lr = LeakyRelu(%clip) {alpha = 1e-45} : f32[?,5]
    %t = Transpose(%lr) {perm = [1, 0]} : f32[5,?]
    return %t, %len, %small
  }
}
resources {
  "w": "0x000000000000803f0000004000004040000080400000a0400000c0400000e040000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841"
}
)";
  auto m = parse(text);
  std::string printed = printModule(*m);
  CHECK(printed == text);
  auto again = parse(printed);
  CHECK(printModule(*again) == printed);
  // Resources are decoded into the constant.
  const Tensor& w = m->graph().nodes()[0]->getTensor("value");
  CHECK(w.toDoubles()[1] == 1.0);
  CHECK(w.toDoubles()[19] == 19.0);
}

TEST_CASE("parse errors point at the line and column", "[ir][text]") {
  Error e = parseError("module @m {\n  graph @main(%x: f32[2]) {\n    %y = Foo(%x) : f32[2]\n    return %y\n  }\n}\n");
  CHECK(e.code() == ErrorCode::IrParse);
  CHECK_THAT(e.message(), Catch::StartsWith("test.kir:3:10") && Catch::Contains("unknown op 'Foo'"));
  e = parseError("module @m {\n  graph @main(%x: f32[2]) {\n    %y = Relu(%z) : f32[2]\n    return %y\n  }\n}\n");
  CHECK_THAT(e.message(), Catch::Contains("undefined value '%z'"));
  e = parseError("module @m {\n  graph @main(%x: f32[2]) {\n    %x = Relu(%x) : f32[2]\n    return %x\n  }\n}\n");
  CHECK_THAT(e.message(), Catch::Contains("defined twice"));
  e = parseError("module @m {\n  graph @main(%x: f32[2]) {\n    %w = Constant() {value = tensor<f32[8]: @gone>} : f32[8]\n    return %x\n  }\n}\n");
  CHECK_THAT(e.message(), Catch::Contains("resource '@gone' is not defined"));
  // Types are the verifier's business: the parser accepts, verify() rejects.
  auto typed = parse("module @m {\n  graph @main(%x: f32[2]) {\n    %y = Relu(%x) : f32[3]\n    return %y\n  }\n}\n");
  Status s = verify(typed->graph());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().code() == ErrorCode::IrVerify);
}

TEST_CASE("mutated text IR parses or gives an error, never a crash", "[ir][text][fuzz]") {
  const std::string text = R"(module @m {
  opset "" = 17
  graph @main(%x: f32[2,3], %c: bool[]) {
    %w = Constant() {value = tensor<f32[3,2]: @w>} : f32[3,2]
    %b = Constant() {value = tensor<f32[2]: [0.5, -1.5]>} : f32[2]
    %m = MatMul(%x, %w) : f32[2,2] loc("mm")
    %y = If(%c) {else_branch = graph @else() {
        %e = Neg(%m) : f32[2,2]
        return %e
      }, then_branch = graph @then() {
        return %m
      }} : f32[2,2]
    %a = Add(%y, %b) : f32[2,2]
    %t = Transpose(%a) {perm = [1, 0]} : f32[2,2]
    return %t
  }
}
resources {
  "w": "0x0000803f0000004000004040000080400000a0400000c040"
}
)";
  REQUIRE(ir::parseModule(text, "seed.kir").isOk());
  SplitMix64 rng(99);
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto m = ir::parseModule(testing::mutated(text, rng, "%@{}()[]<>:=,\"0123456789-e.x"), "mutant.kir");
    if (!m.isOk()) {
      CHECK(m.error().code() != ErrorCode::Internal);
      continue;
    }
    ++parsed;
    (void)verify((*m)->graph());  // may reject it: types are the verifier's business
    CHECK_FALSE(printModule(**m).empty());
  }
  CHECK(parsed > 0);
}

TEST_CASE("the structural hash ignores names and independent order, not structure", "[ir][hash]") {
  auto base = parse(kAddRelu);
  uint64_t h = structuralHash(base->graph());
  std::string renamed = kAddRelu;
  renamed.replace(renamed.find("%s = "), 5, "%q = ");
  renamed.replace(renamed.find("Relu(%s)"), 8, "Relu(%q)");
  renamed.replace(renamed.find("loc(\"add\")"), 10, "loc(\"zz\")");
  CHECK(structuralHash(parse(renamed)->graph()) == h);
  std::string changed = kAddRelu;
  changed.replace(changed.find("Relu"), 4, "Tanh");
  CHECK(structuralHash(parse(changed)->graph()) != h);
  // Two independent nodes in either order hash the same.
  const char* ab = R"(module @m {
  graph @main(%x: f32[2]) {
    %a = Relu(%x) : f32[2]
    %b = Neg(%x) : f32[2]
    %c = Add(%a, %b) : f32[2]
    return %c
  }
}
)";
  std::string ba = ab;
  std::string lineA = "    %a = Relu(%x) : f32[2]\n", lineB = "    %b = Neg(%x) : f32[2]\n";
  ba.replace(ba.find(lineA), lineA.size() + lineB.size(), lineB + lineA);
  CHECK(structuralHash(parse(ab)->graph()) == structuralHash(parse(ba)->graph()));
  // Dead code counts.
  auto withDead = parse(ab);
  Graph& g = withDead->graph();
  g.createNode(opSchema("Relu"), std::vector<Value*>{g.inputs()[0]}, 1);
  REQUIRE(inferTypes(g).isOk());
  CHECK(structuralHash(g) != structuralHash(parse(ab)->graph()));
}

TEST_CASE("inference reports broadcast conflicts and bad conv channels", "[ir][inference]") {
  Graph g;
  Value* a = g.addInput("a", TensorType(DType::F32, {2, 3}));
  Value* b = g.addInput("b", TensorType(DType::F32, {4, 3}));
  Node* add = g.createNode(opSchema("Add"), std::vector<Value*>{a, b}, 1, "add");
  Status s = inferNodeTypes(*add);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().code() == ErrorCode::ShapeMismatch);
  CHECK(s.error().nodeName() == "add");
  CHECK_THAT(s.error().message(), Catch::Contains("cannot be broadcast"));

  Value* x = g.addInput("x", TensorType(DType::F32, {1, 3, 8, 8}));
  Value* w = g.addInput("w", TensorType(DType::F32, {16, 4, 3, 3}));
  Node* conv = g.createNode(opSchema("Conv"), std::vector<Value*>{x, w}, 1, "conv");
  s = inferNodeTypes(*conv);
  REQUIRE_FALSE(s.isOk());
  CHECK_THAT(s.error().message(), Catch::Contains("3 channels"));
}

TEST_CASE("inference computes conv geometry with auto_pad and strides", "[ir][inference]") {
  Graph g;
  Value* x = g.addInput("x", TensorType(DType::F32, {1, 3, 224, 224}));
  Value* w = g.addInput("w", TensorType(DType::F32, {64, 3, 7, 7}));
  Node* conv = g.createNode(opSchema("Conv"), std::vector<Value*>{x, w}, 1);
  conv->setAttr("strides", std::vector<int64_t>{2, 2});
  conv->setAttr("pads", std::vector<int64_t>{3, 3, 3, 3});
  REQUIRE(inferNodeTypes(*conv).isOk());
  CHECK(conv->output(0)->type().str() == "f32[1,64,112,112]");
  conv->removeAttr("pads");
  conv->setAttr("auto_pad", "SAME_UPPER");
  REQUIRE(inferNodeTypes(*conv).isOk());
  CHECK(conv->output(0)->type().str() == "f32[1,64,112,112]");
  Node* pool = g.createNode(opSchema("MaxPool"), std::vector<Value*>{conv->output(0)}, 1);
  pool->setAttr("kernel_shape", std::vector<int64_t>{3, 3});
  pool->setAttr("strides", std::vector<int64_t>{2, 2});
  pool->setAttr("ceil_mode", int64_t(1));
  REQUIRE(inferNodeTypes(*pool).isOk());
  CHECK(pool->output(0)->type().str() == "f32[1,64,56,56]");
}

TEST_CASE("shape arithmetic propagates so Reshape gets a static shape", "[ir][inference]") {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write flatten.
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2,3,4]) {
    %shape = Shape(%x) : i64[3]
    %zero = Constant() {value = tensor<i64[]: [0]>} : i64[]
    %n = Gather(%shape, %zero) : i64[]
    %axes = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
    %n1 = Unsqueeze(%n, %axes) : i64[1]
    %rest = Constant() {value = tensor<i64[1]: [-1]>} : i64[1]
    %target = Concat(%n1, %rest) {axis = 0} : i64[2]
    %y = Reshape(%x, %target) : f32[?,?]
    return %y
  }
}
)");
  REQUIRE(inferTypes(m->graph()).isOk());
  CHECK(m->graph().outputs()[0]->type().str() == "f32[2,12]");
}

TEST_CASE("Loop inference relaxes loop-carried dims that change", "[ir][inference]") {
  auto m = parse(R"(module @m {
  graph @main(%n: i64[], %init: f32[1]) {
    %final, %scan = Loop(%n, none, %init) {body = graph @body(%i: i64[], %c: bool[], %acc: f32[1]) {
        %grown = Concat(%acc, %acc) {axis = 0} : f32[2]
        %keep = Identity(%c) : bool[]
        %val = Identity(%i) : i64[]
        return %keep, %grown, %val
      }} : f32[?], i64[?]
    return %final, %scan
  }
}
)");
  REQUIRE(inferTypes(m->graph()).isOk());
  CHECK(m->graph().outputs()[0]->type().str() == "f32[?]");
  CHECK(m->graph().outputs()[1]->type().str() == "i64[?]");
}

TEST_CASE("cloned subgraphs map their own values and keep outer ones", "[ir]") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2], %c: bool[]) {
    %y = If(%c) {else_branch = graph @e() {
        %n = Neg(%x) : f32[2]
        return %n
      }, then_branch = graph @t() {
        return %x
      }} : f32[2]
    return %y
  }
}
)");
  Node* ifNode = m->graph().nodes()[0];
  Graph* elseG = ifNode->getGraph("else_branch");
  auto copy = cloneGraph(*elseG);
  REQUIRE(copy->numNodes() == 1);
  Node* neg = copy->nodes()[0];
  CHECK(neg->input(0) == m->graph().inputs()[0]);  // outer value shared
  CHECK(neg->output(0) != elseG->nodes()[0]->output(0));
  CHECK(copy->outputs()[0] == neg->output(0));
  CHECK(neg->output(0)->name() != elseG->nodes()[0]->output(0)->name());
}

TEST_CASE("every op has a schema with a docstring and inference", "[ir][ops]") {
  auto all = OpRegistry::global().all();
  CHECK(all.size() > 170);
  for (const OpSchema* s : all) {
    INFO(s->qualifiedName());
    CHECK_FALSE(s->doc.empty());
    CHECK(s->infer != nullptr);
    CHECK(s->minInputs <= s->maxInputs);
  }
  CHECK(opSchema("Conv").pattern == FusionPattern::OutEWiseFusable);
  CHECK(opSchema("Add").pattern == FusionPattern::Broadcast);
  CHECK(opSchema("Reshape").pattern == FusionPattern::Injective);
  CHECK(opSchema("ReduceSum").pattern == FusionPattern::CommReduce);
}

TEST_CASE("a graph listener hears every change to the graph tree") {
  struct Recorder final : ir::GraphListener {
    std::vector<std::string> events;
    void nodeInserted(ir::Node& n) override { events.push_back("insert " + n.opType()); }
    void nodeErasing(ir::Node& n) override { events.push_back("erase " + n.opType()); }
    void nodeMoved(ir::Node& n) override { events.push_back("move " + n.opType()); }
    void nodeModified(ir::Node& n) override { events.push_back("modify " + n.opType()); }
    void inputChanged(ir::Node& n, ir::Value* before, ir::Value* after) override {
      events.push_back("input " + n.opType() + " " + (before ? before->name() : "-") + " -> " + (after ? after->name() : "-"));
    }
    void outputChanged(ir::Graph&, ir::Value& v) override { events.push_back("output " + v.name()); }
    void typeChanged(ir::Value& v) override { events.push_back("type " + v.name()); }
  };
  ir::Graph g;
  Recorder rec;
  g.setListener(&rec);
  ir::Value* x = g.addInput("x", ir::Type());
  ir::Node* relu = g.createNode(ir::opSchema("Relu"), std::vector<ir::Value*>{x}, std::vector<std::string>{"r"});
  ir::Node* neg = g.createNode(ir::opSchema("Neg"), std::vector<ir::Value*>{x}, std::vector<std::string>{"n"}, "", relu);
  g.addOutput(relu->output(0));
  relu->setAttr("note", int64_t(1));
  relu->output(0)->setType(x->type());
  relu->setInput(0, neg->output(0));
  g.moveBefore(neg, nullptr);
  g.moveBefore(neg, relu);
  relu->output(0)->replaceAllUsesWith(neg->output(0));
  g.eraseNode(relu);
  CHECK(rec.events == std::vector<std::string>{"input Relu - -> x", "insert Relu", "input Neg - -> x", "insert Neg",
                                               "output r", "modify Relu", "type r", "input Relu x -> n", "move Neg",
                                               "move Neg", "output r", "output n", "erase Relu"});
  g.setListener(nullptr);
  g.createNode(ir::opSchema("Relu"), std::vector<ir::Value*>{x}, 1);
  CHECK(rec.events.size() == 13);  // a cleared listener hears nothing
}
