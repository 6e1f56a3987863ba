//===- lib/codegen/KernelVerifier.cpp - Kernel IR rules -------------------===//
//
// The rules every kernel obeys, checked after every template instantiation in
// tests and debug builds:
//   - parameters are global buffers with unique names; run-time extents are
//     variables in scope throughout; allocations are local,
//     or shared on GPU kernels only, and never shadow another buffer;
//   - loads, stores and variable references name something in scope; loop and
//     let variables do not shadow;
//   - indices and loop extents are integers; binary operands agree in type; a
//     stored value has the buffer's compute type; constant indices are in bounds;
//   - vectorized and unrolled loops have constant extents;
//   - CPU kernels: no block/thread bindings or barriers, and a parallel loop
//     only as the outermost statement (the CPU backend outlines its body);
//   - GPU kernels: no parallel loops; barriers only inside thread-bound loops;
//     warp shuffles (GPU only) of non-bool values by a constant lane mask;
//     an mma (GPU only, inside thread-bound loops) reads local f32 fragments
//     and accumulates into one (a constant offset leaves room for the
//     shape's fragment).
//
//===----------------------------------------------------------------------===//
#include <set>

#include "kiln/codegen/IRVisitor.h"
#include "kiln/codegen/KernelIR.h"
#include "kiln/support/StatusImpl.h"

namespace kiln::codegen {
namespace {

/// Statements are checked by one switch (every kind has rules and scope);
/// expressions by IRVisitor overrides of the kinds that have rules, operands
/// first, stopping at the first broken rule.
class Verifier final : public IRVisitor {
 public:
  explicit Verifier(const Kernel& k) : kernel_(k) {}

  Status run() {
    for (const Buffer& b : kernel_.params) {
      if (b->scope != MemoryScope::Global) return fail("parameter %" + b->name + " is not a global buffer");
      KILN_TRY(declare(b));
    }
    for (const RunTimeExtent& e : kernel_.extents) {
      if (e.max < 0) return fail("run-time extent %" + e.var->name + " has a negative maximum");
      KILN_TRY(bindVar(e.var));
    }
    if (!kernel_.body) return fail("kernel has no body");
    return stmt(kernel_.body, /*outermost=*/true, 0);
  }

 private:
  Status fail(const std::string& msg) {
    return Error(ErrorCode::Internal, "kernel @" + kernel_.name + ": " + msg);
  }

  Status declare(const Buffer& b) {
    if (b->size <= 0) return fail("buffer %" + b->name + " has no elements");
    if (!bufferNames_.insert(b->name).second) return fail("buffer %" + b->name + " declared twice");
    buffers_.insert(b.get());
    return Status::ok();
  }

  Status expr(const Expr& e) {
    exprStatus_ = Status::ok();
    visit(e);
    return exprStatus_;
  }

  void visit(const Expr& e) override {
    if (!exprStatus_.isOk()) return;
    if (!e) return note(fail("missing expression"));
    IRVisitor::visit(e);
  }
  using IRVisitor::visit;

  void visitVarRef(const Expr& e) override {
    if (!vars_.count(e->var.get())) note(fail("variable %" + e->var->name + " used out of scope"));
  }
  void visitLoad(const Expr& e) override {
    visitOperands(e);
    if (exprStatus_.isOk()) note(access(e->buffer, e->operands[0]));
  }
  void visitBinary(const Expr& e) override {
    visitOperands(e);
    if (exprStatus_.isOk() && e->operands[0]->type != e->operands[1]->type)
      note(fail(std::string("operands of ") + binaryOpName(e->binaryOp) + " differ in type: " + printExpr(e)));
  }
  void visitSelect(const Expr& e) override {
    visitOperands(e);
    if (!exprStatus_.isOk()) return;
    if (e->operands[0]->type != ScalarType::Bool) return note(fail("select condition is not bool: " + printExpr(e)));
    if (e->operands[1]->type != e->operands[2]->type) note(fail("select arms differ in type: " + printExpr(e)));
  }
  void visitShuffleXor(const Expr& e) override {
    visitOperands(e);
    if (!exprStatus_.isOk()) return;
    int64_t mask = 0;
    if (kernel_.target != KernelTarget::Gpu) return note(fail("warp shuffle in a CPU kernel: " + printExpr(e)));
    if (!isIntConstant(e->operands[1], &mask) || mask <= 0 || mask >= 32)
      return note(fail("warp shuffle lane mask is not a constant in 1..31: " + printExpr(e)));
    if (e->operands[0]->type == ScalarType::Bool) note(fail("warp shuffle of a bool: " + printExpr(e)));
  }
  /// Keeps the first broken expression rule.
  void note(Status st) {
    if (exprStatus_.isOk()) exprStatus_ = std::move(st);
  }

  Status access(const Buffer& b, const Expr& index) {
    if (!buffers_.count(b.get())) return fail("buffer %" + b->name + " used out of scope");
    if (isFloatType(index->type) || index->type == ScalarType::Bool)
      return fail("index of %" + b->name + " is not an integer: " + printExpr(index));
    int64_t c;
    if (isIntConstant(index, &c) && (c < 0 || c >= b->size))
      return fail("constant index " + std::to_string(c) + " out of bounds of %" + b->name);
    return Status::ok();
  }

  Status stmt(const Stmt& s, bool outermost, int threadDepth) {
    if (!s) return fail("missing statement");
    switch (s->kind) {
      case StmtKind::For: {
        KILN_TRY(expr(s->value));
        if (isFloatType(s->value->type)) return fail("loop %" + s->var->name + " has a non-integer extent");
        int64_t extent;
        bool constant = isIntConstant(s->value, &extent);
        if (constant && extent <= 0) return fail("loop %" + s->var->name + " has extent " + std::to_string(extent));
        if ((s->loop == LoopKind::Vectorized || s->loop == LoopKind::Unrolled) && !constant)
          return fail(std::string(loopKindName(s->loop)) + " loop %" + s->var->name + " needs a constant extent");
        bool gpu = kernel_.target == KernelTarget::Gpu;
        if (isGpuBinding(s->loop) && !gpu) return fail("CPU kernel binds loop %" + s->var->name + " to the GPU");
        if (s->loop == LoopKind::Parallel && gpu) return fail("GPU kernel has a parallel loop (bind it instead)");
        if (s->loop == LoopKind::Parallel && !outermost)
          return fail("parallel loop %" + s->var->name + " is not the outermost statement");
        KILN_TRY(bindVar(s->var));
        bool thread = s->loop == LoopKind::ThreadX || s->loop == LoopKind::ThreadY || s->loop == LoopKind::ThreadZ;
        Status st = stmt(s->body[0], false, threadDepth + (thread ? 1 : 0));
        vars_.erase(s->var.get());
        return st;
      }
      case StmtKind::Store: {
        KILN_TRY(expr(s->index));
        KILN_TRY(expr(s->value));
        KILN_TRY(access(s->buffer, s->index));
        if (s->value->type != computeType(s->buffer->type))
          return fail(std::string("store of ") + scalarTypeName(s->value->type) + " into " +
                      scalarTypeName(s->buffer->type) + " buffer %" + s->buffer->name);
        return Status::ok();
      }
      case StmtKind::Allocate: {
        if (s->buffer->scope == MemoryScope::Global) return fail("allocation of global buffer %" + s->buffer->name);
        if (s->buffer->scope == MemoryScope::Shared && kernel_.target != KernelTarget::Gpu)
          return fail("shared buffer %" + s->buffer->name + " in a CPU kernel");
        KILN_TRY(declare(s->buffer));
        // Nothing under an allocation is outermost: a parallel loop there would share it.
        Status st = stmt(s->body[0], false, threadDepth);
        buffers_.erase(s->buffer.get());
        bufferNames_.erase(s->buffer->name);
        return st;
      }
      case StmtKind::Let: {
        KILN_TRY(expr(s->value));
        if (isFloatType(s->value->type)) return fail("let %" + s->var->name + " binds a non-integer");
        KILN_TRY(bindVar(s->var));
        Status st = stmt(s->body[0], false, threadDepth);
        vars_.erase(s->var.get());
        return st;
      }
      case StmtKind::If: {
        KILN_TRY(expr(s->value));
        if (s->value->type != ScalarType::Bool) return fail("if condition is not bool: " + printExpr(s->value));
        for (const Stmt& c : s->body) KILN_TRY(stmt(c, false, threadDepth));
        return Status::ok();
      }
      case StmtKind::Seq:
        for (const Stmt& c : s->body) KILN_TRY(stmt(c, outermost, threadDepth));
        return Status::ok();
      case StmtKind::Barrier:
        if (kernel_.target != KernelTarget::Gpu) return fail("barrier in a CPU kernel");
        if (threadDepth == 0) return fail("barrier outside thread-bound loops");
        return Status::ok();
      case StmtKind::Mma: {
        if (kernel_.target != KernelTarget::Gpu) return fail("mma in a CPU kernel");
        if (threadDepth == 0) return fail("mma outside thread-bound loops");
        const MmaShape shape = mmaShape(s->mma);
        const Buffer* fragments[] = {&s->operands[0], &s->operands[1], &s->buffer};
        const Expr* offsets[] = {&s->offsets[0], &s->offsets[1], &s->index};
        const int64_t sizes[] = {shape.aElements, shape.bElements, shape.cElements};
        for (int f = 0; f < 3; ++f) {
          const Buffer& b = *fragments[f];
          KILN_TRY(expr(*offsets[f]));
          KILN_TRY(access(b, *offsets[f]));
          if (b->scope != MemoryScope::Local || b->type != ScalarType::F32)
            return fail("mma fragment %" + b->name + " is not a local f32 buffer");
          int64_t at = 0;
          if (isIntConstant(*offsets[f], &at) && at + sizes[f] > b->size)
            return fail("mma fragment at " + std::to_string(at) + " overruns %" + b->name);
        }
        return Status::ok();
      }
    }
    return Status::ok();
  }

  Status bindVar(const Var& v) {
    for (const VarDecl* d : vars_)
      if (d->name == v->name) return fail("variable %" + v->name + " shadows another");
    if (!vars_.insert(v.get()).second) return fail("variable %" + v->name + " bound twice");
    return Status::ok();
  }

  const Kernel& kernel_;
  std::set<std::string> bufferNames_;
  std::set<const BufferDecl*> buffers_;
  std::set<const VarDecl*> vars_;
  Status exprStatus_ = Status::ok();
};

}  // namespace

Status verifyKernel(const Kernel& k) { return Verifier(k).run(); }

}  // namespace kiln::codegen
