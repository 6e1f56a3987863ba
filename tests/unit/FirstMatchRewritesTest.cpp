//===- tests/unit/FirstMatchRewritesTest.cpp - Resumed scans, rescans' rewrites -===//
//
// applyFirstMatchRewrites (lib/passes) resumes its scan near each rewrite
// instead of at the first node. A finder in the shape of alter-op-layout's
// (unary ops and adds of two like transposes moved ahead of Transposes,
// which enables the next move) runs both ways on graphs where the order of
// the moves decides the IR, and where a move enables one at an earlier
// node: the printed IR must be the rescan's, and a graph with nothing to
// rewrite is left alone.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "FirstMatchRewrites.h"
#include "RewriteUtils.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"

using namespace kiln;

namespace {

bool isUnary(const ir::Node* n) {
  return n && (n->opType() == "Relu" || n->opType() == "Neg" || n->opType() == "Sigmoid");
}

bool isTranspose(const ir::Node* n) { return n && n->opType() == "Transpose"; }

/// u(Transpose(x)) -> Transpose(u(x)); Add(Transpose(a), Transpose(b)) with one perm -> Transpose(Add(a, b)).
Status moveAhead(ir::Node* u, std::vector<const ir::Node*>& erased) {
  ir::Graph& g = *u->graph();
  ir::Node* t = u->input(0)->producer();
  std::vector<ir::Value*> operands;
  for (const ir::Value* in : u->inputs()) operands.push_back(in->producer()->input(0));
  KILN_ASSIGN(ir::Node * early, passes::createTypedNode(g, u->opType(), operands, {}, u->name(), u));
  KILN_ASSIGN(ir::Node * moved, passes::createTypedNode(g, "Transpose", {early->output(0)}, t->attributes(), t->name(), u));
  passes::replaceValue(u->output(0), moved->output(0), true);
  passes::eraseWithDeadProducers(u, &erased);
  return Status::ok();
}

/// At a Transpose: its first user that can move ahead of it, a unary op when
/// it is the only user, an Add (of two like transposes) when n is its first operand.
std::optional<passes::LocalRewrite> findMove(ir::Node* n) {
  if (!isTranspose(n) || passes::isGraphOutput(n->output(0))) return std::nullopt;
  const auto& uses = n->output(0)->uses();
  for (const ir::Use& use : uses) {
    ir::Node* u = use.user;
    const bool unary = isUnary(u) && u->numInputs() == 1 && uses.size() == 1;
    const bool add = u && u->opType() == "Add" && u->input(0)->producer() == n &&
                     isTranspose(u->input(1)->producer()) &&
                     isTranspose(u->input(1)->producer()) &&
                     u->input(0)->producer()->getInts("perm") == u->input(1)->producer()->getInts("perm") &&
                     u->input(0)->type() == u->input(1)->type();
    if (unary || add)
      return passes::LocalRewrite{u, [u](std::vector<const ir::Node*>& erased) { return moveAhead(u, erased); }};
  }
  return std::nullopt;
}

/// The IR after rewriting the first match again and again, scanning from the first node each time.
std::string rescanned(const char* text) {
  auto m = ir::parseModule(text, "rescan.kir");
  REQUIRE(m.isOk());
  ir::Graph& g = (*m)->graph();
  for (bool again = true; again;) {
    again = false;
    for (ir::Node* n : g.nodes())
      if (auto rewrite = findMove(n)) {
        std::vector<const ir::Node*> erased;
        REQUIRE(rewrite->apply(erased).isOk());
        again = true;
        break;
      }
  }
  return ir::printModule(**m);
}

std::string resumed(const char* text, int64_t& applied) {
  auto m = ir::parseModule(text, "resumed.kir");
  REQUIRE(m.isOk());
  auto count = passes::applyFirstMatchRewrites((*m)->graph(), findMove);
  REQUIRE(count.isOk());
  applied = *count;
  return ir::printModule(**m);
}

}  // namespace

TEST_CASE("resumed first-match rewrites give the rescan's IR") {
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
  CHECK(resumed(text, applied) == expected);
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
  CHECK(resumed(text, applied) == rescanned(text));
  CHECK(applied == 2);
}

TEST_CASE("resumed first-match rewrites leave a graph with no match alone") {
  const char* text = R"(module @m {
  graph @main(%a: f32[2,3]) {
    %r = Relu(%a) : f32[2,3]
    %t = Transpose(%r) {perm = [1, 0]} : f32[3,2]
    return %t
  }
})";
  int64_t applied = -1;
  CHECK(resumed(text, applied) == rescanned(text));
  CHECK(applied == 0);
}
