//===- tests/unit/PatternRewriteDriverTest.cpp - The worklist gives the rescan's rewrites -===//
//
// applyPatterns (lib/passes) resumes its scan at the earliest node a rewrite
// may have changed instead of at the first node. Patterns in the shape of
// alter-op-layout's (unary ops and adds of two like transposes moved ahead
// of Transposes, which enables the next move) and simplify-expr's (double
// negations dropped) run both ways on graphs where the order of the moves
// decides the IR, where a move enables one at an earlier node, and on
// random graphs: the printed IR must be the rescan's. A graph with nothing
// to rewrite is left alone, and a pattern that never stops is an error.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <random>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"

using namespace kiln;

namespace {

bool isUnary(const ir::Node* n) {
  return n && (n->opType() == "Relu" || n->opType() == "Neg" || n->opType() == "Sigmoid");
}

bool isTranspose(const ir::Node* n) { return n && n->opType() == "Transpose"; }

/// At a Transpose: its first user that can move ahead of it, a unary op when
/// it is the only user, an Add (of two like transposes) when n is its first operand.
ir::Node* movableUser(const ir::Node& n) {
  if (!isTranspose(&n) || passes::isGraphOutput(n.output(0))) return nullptr;
  const auto& uses = n.output(0)->uses();
  for (const ir::Use& use : uses) {
    ir::Node* u = use.user;
    const bool unary = isUnary(u) && u->numInputs() == 1 && uses.size() == 1;
    const bool add = u && u->opType() == "Add" && u->input(0)->producer() == &n &&
                     isTranspose(u->input(1)->producer()) &&
                     u->input(0)->producer()->getInts("perm") == u->input(1)->producer()->getInts("perm") &&
                     u->input(0)->type() == u->input(1)->type();
    if (unary || add) return u;
  }
  return nullptr;
}

/// u(Transpose(x)) -> Transpose(u(x)); Add(Transpose(a), Transpose(b)) with one perm -> Transpose(Add(a, b)).
class MoveAhead final : public passes::RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return movableUser(n) != nullptr; }
  Status rewrite(ir::Node& n) const override {
    ir::Node* u = movableUser(n);
    ir::Graph& g = *u->graph();
    std::vector<ir::Value*> operands;
    for (const ir::Value* in : u->inputs()) operands.push_back(in->producer()->input(0));
    KILN_ASSIGN(ir::Node * early, passes::createTypedNode(g, u->opType(), operands, {}, u->name(), u));
    KILN_ASSIGN(ir::Node * moved,
                passes::createTypedNode(g, "Transpose", {early->output(0)}, n.attributes(), n.name(), u));
    passes::replaceValue(u->output(0), moved->output(0), true);
    passes::eraseWithDeadProducers(u);
    return Status::ok();
  }
};

/// Neg(Neg(x)) -> x, when x can take the result's place.
class DropDoubleNeg final : public passes::RewritePattern {
 public:
  bool matches(const ir::Node& n) const override {
    const ir::Node* inner = n.numInputs() ? n.input(0)->producer() : nullptr;
    return n.opType() == "Neg" && inner && inner->opType() == "Neg" &&
           (!passes::isGraphOutput(n.output(0)) || inner->input(0)->producer());
  }
  Status rewrite(ir::Node& n) const override {
    passes::replaceValue(n.output(0), n.input(0)->producer()->input(0));
    passes::eraseWithDeadProducers(&n);
    return Status::ok();
  }
};

const passes::PatternList kPatterns{std::make_shared<MoveAhead>(), std::make_shared<DropDoubleNeg>()};

/// The IR after rewriting the first match again and again, scanning from the first node each time.
std::string rescanned(const std::string& text) {
  auto m = ir::parseModule(text, "rescan.kir");
  REQUIRE(m.isOk());
  ir::Graph& g = (*m)->graph();
  auto firstMatch = [&]() -> std::pair<ir::Node*, const passes::RewritePattern*> {
    for (ir::Node* n = g.firstNode(); n; n = g.nextNode(n))
      for (const auto& p : kPatterns)
        if (p->matches(*n)) return {n, p.get()};
    return {nullptr, nullptr};
  };
  for (auto [n, p] = firstMatch(); n; std::tie(n, p) = firstMatch()) REQUIRE(p->rewrite(*n).isOk());
  return ir::printModule(**m);
}

std::string driven(const std::string& text, int64_t& applied) {
  auto m = ir::parseModule(text, "driven.kir");
  REQUIRE(m.isOk());
  auto count = passes::applyPatterns((*m)->graph(), kPatterns, "test");
  REQUIRE(count.isOk());
  applied = *count;
  return ir::printModule(**m);
}

/// A random graph of transposes, unary ops and adds over f32[2,3] and f32[3,2] values.
std::string randomGraph(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> wide{"%a", "%b"}, tall{"%c"};
  std::string body;
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  const int count = 6 + int(rng() % 14);
  for (int i = 0; i < count; ++i) {
    const bool isWide = rng() % 2;
    std::vector<std::string>& same = isWide ? wide : tall;
    const std::string type = isWide ? "f32[2,3]" : "f32[3,2]";
    const std::string name = "%v" + std::to_string(i);
    switch (rng() % 4) {
      case 0: body += "    " + name + " = Transpose(" + pick(isWide ? tall : wide) + ") {perm = [1, 0]} : " + type + "\n"; break;
      case 1: body += "    " + name + " = Add(" + pick(same) + ", " + pick(same) + ") : " + type + "\n"; break;
      case 2: body += "    " + name + " = Neg(" + pick(same) + ") : " + type + "\n"; break;
      default: body += "    " + name + (rng() % 2 ? " = Relu(" : " = Sigmoid(") + pick(same) + ") : " + type + "\n"; break;
    }
    same.push_back(name);
  }
  return "module @m {\n  graph @main(%a: f32[2,3], %b: f32[2,3], %c: f32[3,2]) {\n" + body + "    return " +
         wide.back() + ", " + tall.back() + "\n  }\n}\n";
}

}  // namespace

TEST_CASE("the worklist gives the rescan's IR") {
  // Two branches of unary chains behind transposes, joined by Adds, one Add's operands transposed
  // differently (it stays), a Transpose read by two users, and one that is a graph output.
  const char* text = R"(module @m {
  graph @main(%a: f32[2,3], %b: f32[2,3], %c: f32[3,2]) {
    %ta = Transpose(%a) {perm = [1, 0]} : f32[3,2]
    %r1 = Relu(%ta) : f32[3,2]
    %n1 = Neg(%r1) : f32[3,2]
    %tb = Transpose(%b) {perm = [1, 0]} : f32[3,2]
    %s1 = Sigmoid(%tb) : f32[3,2]
    %j = Add(%n1, %s1) : f32[3,2]
    %r2 = Relu(%j) : f32[3,2]
    %k = Add(%r2, %c) : f32[3,2]
    %tc = Transpose(%c) {perm = [1, 0]} : f32[2,3]
    %u = Neg(%tc) : f32[2,3]
    %v = Relu(%tc) : f32[2,3]
    %w = Add(%u, %v) : f32[2,3]
    %out = Transpose(%a) {perm = [1, 0]} : f32[3,2]
    return %k, %w, %out
  }
})";
  int64_t applied = 0;
  const std::string expected = rescanned(text);
  CHECK(driven(text, applied) == expected);
  CHECK(applied == 5);  // Relu and Neg on %a, Sigmoid, the Add of the two branches, the Relu after it
  CHECK(expected != ir::printModule(*ir::parseModule(text, "input.kir").value()));
}

TEST_CASE("a rewrite that enables a match before it is followed by that match") {
  // At %t2 the Add moves (%t2 is its first operand), leaving %t1 one user, the Neg, which can then
  // move; %t1 comes before %t2 and the Sigmoid between them, which the rewrite does not touch.
  const char* text = R"(module @m {
  graph @main(%a: f32[2,3], %b: f32[2,3], %c: f32[2,3]) {
    %t1 = Transpose(%a) {perm = [1, 0]} : f32[3,2]
    %n1 = Neg(%t1) : f32[3,2]
    %z = Sigmoid(%c) : f32[2,3]
    %t2 = Transpose(%b) {perm = [1, 0]} : f32[3,2]
    %s = Add(%t2, %t1) : f32[3,2]
    return %n1, %s, %z
  }
})";
  int64_t applied = 0;
  CHECK(driven(text, applied) == rescanned(text));
  CHECK(applied == 2);
}

TEST_CASE("the worklist leaves a graph with no match alone") {
  const char* text = R"(module @m {
  graph @main(%a: f32[2,3]) {
    %r = Relu(%a) : f32[2,3]
    %t = Transpose(%r) {perm = [1, 0]} : f32[3,2]
    return %t
  }
})";
  int64_t applied = -1;
  CHECK(driven(text, applied) == rescanned(text));
  CHECK(applied == 0);
}

TEST_CASE("the worklist gives the rescan's IR on random graphs") {
  int64_t total = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const std::string text = randomGraph(seed);
    INFO("seed " << seed << "\n" << text);
    int64_t applied = 0;
    CHECK(driven(text, applied) == rescanned(text));
    total += applied;
  }
  CHECK(total > 200);  // the graphs give the patterns work
}

TEST_CASE("a pattern that keeps matching what it rewrote is an internal error naming the node") {
  /// Sets an attribute on every Relu, forever.
  class Restless final : public passes::RewritePattern {
   public:
    bool matches(const ir::Node& n) const override { return n.opType() == "Relu"; }
    Status rewrite(ir::Node& n) const override {
      n.setAttr("note", int64_t(1));
      return Status::ok();
    }
  };
  auto m = ir::parseModule(R"(module @m {
  graph @main(%a: f32[2,3]) {
    %r = Relu(%a) : f32[2,3]
    return %r
  }
})", "restless.kir");
  REQUIRE(m.isOk());
  auto count = passes::applyPatterns((*m)->graph(), {std::make_shared<Restless>()}, "restless");
  REQUIRE_FALSE(count.isOk());
  CHECK(count.error().code() == ErrorCode::Internal);
  CHECK_THAT(count.error().str(), Catch::Contains("restless") && Catch::Contains("producing r"));
}
