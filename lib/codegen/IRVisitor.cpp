//===- lib/codegen/IRVisitor.cpp - Walking and rewriting kernel IR ---------===//
//
// The dispatch and the defaults of IRVisitor and IRMutator
// (kiln/codegen/IRVisitor.h).
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/IRVisitor.h"

namespace kiln::codegen {

Expr withOperands(const Expr& e, const std::vector<Expr>& ops) {
  switch (e->kind) {
    case ExprKind::Load: return load(e->buffer, ops[0]);
    case ExprKind::Binary: return binary(e->binaryOp, ops[0], ops[1]);
    case ExprKind::Unary: return unary(e->unaryOp, ops[0]);
    case ExprKind::Select: return select(ops[0], ops[1], ops[2]);
    case ExprKind::Cast: return cast(e->type, ops[0]);
    case ExprKind::ShuffleXor: return shuffleXor(ops[0], ops[1]->intValue);
    default: return e;
  }
}

/// Calls the visit method of a node's kind, on an IRVisitor or an IRMutator.
struct IRDispatch {
  template <class V>
  static auto expr(V& v, const Expr& e) -> decltype(v.visitIntImm(e)) {
    switch (e->kind) {
      case ExprKind::IntImm: return v.visitIntImm(e);
      case ExprKind::FloatImm: return v.visitFloatImm(e);
      case ExprKind::VarRef: return v.visitVarRef(e);
      case ExprKind::Load: return v.visitLoad(e);
      case ExprKind::Binary: return v.visitBinary(e);
      case ExprKind::Unary: return v.visitUnary(e);
      case ExprKind::Select: return v.visitSelect(e);
      case ExprKind::Cast: return v.visitCast(e);
      case ExprKind::ShuffleXor: return v.visitShuffleXor(e);
    }
    return decltype(v.visitIntImm(e))();
  }

  template <class V>
  static auto stmt(V& v, const Stmt& s) -> decltype(v.visitFor(s)) {
    switch (s->kind) {
      case StmtKind::For: return v.visitFor(s);
      case StmtKind::Store: return v.visitStore(s);
      case StmtKind::Allocate: return v.visitAllocate(s);
      case StmtKind::Let: return v.visitLet(s);
      case StmtKind::If: return v.visitIf(s);
      case StmtKind::Seq: return v.visitSeq(s);
      case StmtKind::Barrier: return v.visitBarrier(s);
      case StmtKind::Mma: return v.visitMma(s);
    }
    return decltype(v.visitFor(s))();
  }
};

void IRVisitor::visit(const Expr& e) {
  if (e) IRDispatch::expr(*this, e);
}

void IRVisitor::visit(const Stmt& s) {
  if (s) IRDispatch::stmt(*this, s);
}

void IRVisitor::visitOperands(const Expr& e) {
  for (const Expr& o : e->operands) visit(o);
}

void IRVisitor::visitExprs(const Stmt& s) {
  visit(s->value);
  visit(s->index);
  for (const Expr& o : s->offsets) visit(o);
}

void IRVisitor::visitBody(const Stmt& s) {
  for (const Stmt& b : s->body) visit(b);
}

void IRVisitor::visitChildren(const Stmt& s) {
  visitExprs(s);
  visitBody(s);
}

Expr IRMutator::mutate(const Expr& e) { return IRDispatch::expr(*this, e); }

Stmt IRMutator::mutate(const Stmt& s) { return s ? IRDispatch::stmt(*this, s) : s; }

Expr IRMutator::mutateOperands(const Expr& e) {
  std::vector<Expr> ops;
  bool changed = false;
  for (const Expr& o : e->operands) {
    ops.push_back(mutate(o));
    changed |= ops.back().get() != o.get();
  }
  return changed ? withOperands(e, ops) : e;
}

std::shared_ptr<StmtNode> IRMutator::mutateExprs(const Stmt& s) {
  auto n = std::make_shared<StmtNode>(*s);
  if (n->value) n->value = mutate(n->value);
  if (n->index) n->index = mutate(n->index);
  for (Expr& o : n->offsets) o = mutate(o);
  return n;
}

void IRMutator::mutateBody(StmtNode& n) {
  for (Stmt& b : n.body) b = mutate(b);
}

Stmt IRMutator::mutateChildren(const Stmt& s) {
  std::shared_ptr<StmtNode> n = mutateExprs(s);
  mutateBody(*n);
  return n;
}

}  // namespace kiln::codegen
