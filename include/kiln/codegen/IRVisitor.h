//===- kiln/codegen/IRVisitor.h - Walking and rewriting kernel IR --*- C++ -*-===//
//
// Bases for passes over kernel IR (after Halide's IRVisitor and IRMutator):
// visit() or mutate() dispatches on the node's kind to its visit method, and
// every default walks the node's children (IRMutator: and rebuilds the node
// only where a child changed), so a pass overrides just the kinds it handles.
// Children go in one order: a statement's expressions (value, index,
// offsets), then its body; an expression's operands in order. IRMutator
// rebuilds expressions with the folding builders of KernelIR.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <vector>

#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {

/// `e` with its operands replaced by `ops` (as many, in order), rebuilt with
/// the folding builders; leaves are returned as they are.
Expr withOperands(const Expr& e, const std::vector<Expr>& ops);

struct IRDispatch;  // the one switch over node kinds (IRVisitor.cpp)

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
  friend struct IRDispatch;
  virtual void visitIntImm(const Expr&) {}
  virtual void visitFloatImm(const Expr&) {}
  virtual void visitVarRef(const Expr&) {}
  virtual void visitLoad(const Expr& e) { visitOperands(e); }
  virtual void visitBinary(const Expr& e) { visitOperands(e); }
  virtual void visitUnary(const Expr& e) { visitOperands(e); }
  virtual void visitSelect(const Expr& e) { visitOperands(e); }
  virtual void visitCast(const Expr& e) { visitOperands(e); }
  virtual void visitShuffleXor(const Expr& e) { visitOperands(e); }

  virtual void visitFor(const Stmt& s) { visitChildren(s); }
  virtual void visitStore(const Stmt& s) { visitChildren(s); }
  virtual void visitAllocate(const Stmt& s) { visitChildren(s); }
  virtual void visitLet(const Stmt& s) { visitChildren(s); }
  virtual void visitIf(const Stmt& s) { visitChildren(s); }
  virtual void visitSeq(const Stmt& s) { visitChildren(s); }
  virtual void visitBarrier(const Stmt& s) { visitChildren(s); }
  virtual void visitMma(const Stmt& s) { visitChildren(s); }

  void visitOperands(const Expr& e);
  /// The statement's expressions (value, index, offsets).
  void visitExprs(const Stmt& s);
  void visitBody(const Stmt& s);
  /// visitExprs, then visitBody.
  void visitChildren(const Stmt& s);
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
  friend struct IRDispatch;
  virtual Expr visitIntImm(const Expr& e) { return e; }
  virtual Expr visitFloatImm(const Expr& e) { return e; }
  virtual Expr visitVarRef(const Expr& e) { return e; }
  virtual Expr visitLoad(const Expr& e) { return mutateOperands(e); }
  virtual Expr visitBinary(const Expr& e) { return mutateOperands(e); }
  virtual Expr visitUnary(const Expr& e) { return mutateOperands(e); }
  virtual Expr visitSelect(const Expr& e) { return mutateOperands(e); }
  virtual Expr visitCast(const Expr& e) { return mutateOperands(e); }
  virtual Expr visitShuffleXor(const Expr& e) { return mutateOperands(e); }

  virtual Stmt visitFor(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitStore(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitAllocate(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitLet(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitIf(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitSeq(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitBarrier(const Stmt& s) { return mutateChildren(s); }
  virtual Stmt visitMma(const Stmt& s) { return mutateChildren(s); }

  /// `e` rebuilt from its mutated operands; `e` itself when none changed.
  Expr mutateOperands(const Expr& e);
  /// A copy of `s` with its expressions (value, index, offsets) mutated.
  std::shared_ptr<StmtNode> mutateExprs(const Stmt& s);
  /// Mutates the statements of `n`'s body in place.
  void mutateBody(StmtNode& n);
  /// mutateExprs, then mutateBody.
  Stmt mutateChildren(const Stmt& s);
};

}  // namespace kiln::codegen
