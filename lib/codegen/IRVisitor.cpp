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

void IRVisitor::visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
    case ExprKind::IntImm: return visitIntImm(e);
    case ExprKind::FloatImm: return visitFloatImm(e);
    case ExprKind::VarRef: return visitVarRef(e);
    case ExprKind::Load: return visitLoad(e);
    case ExprKind::Binary: return visitBinary(e);
    case ExprKind::Unary: return visitUnary(e);
    case ExprKind::Select: return visitSelect(e);
    case ExprKind::Cast: return visitCast(e);
    case ExprKind::ShuffleXor: return visitShuffleXor(e);
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::For: return visitFor(s);
    case StmtKind::Store: return visitStore(s);
    case StmtKind::Allocate: return visitAllocate(s);
    case StmtKind::Let: return visitLet(s);
    case StmtKind::If: return visitIf(s);
    case StmtKind::Seq: return visitSeq(s);
    case StmtKind::Barrier: return visitBarrier(s);
    case StmtKind::Mma: return visitMma(s);
  }
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

Expr IRMutator::mutate(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return visitIntImm(e);
    case ExprKind::FloatImm: return visitFloatImm(e);
    case ExprKind::VarRef: return visitVarRef(e);
    case ExprKind::Load: return visitLoad(e);
    case ExprKind::Binary: return visitBinary(e);
    case ExprKind::Unary: return visitUnary(e);
    case ExprKind::Select: return visitSelect(e);
    case ExprKind::Cast: return visitCast(e);
    case ExprKind::ShuffleXor: return visitShuffleXor(e);
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::For: return visitFor(s);
    case StmtKind::Store: return visitStore(s);
    case StmtKind::Allocate: return visitAllocate(s);
    case StmtKind::Let: return visitLet(s);
    case StmtKind::If: return visitIf(s);
    case StmtKind::Seq: return visitSeq(s);
    case StmtKind::Barrier: return visitBarrier(s);
    case StmtKind::Mma: return visitMma(s);
  }
  return s;
}

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
