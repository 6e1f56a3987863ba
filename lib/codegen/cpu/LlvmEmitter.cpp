//===- lib/codegen/cpu/LlvmEmitter.cpp - Kernel IR to LLVM IR -------------===//
//
// One FunctionEmitter per LLVM function (the kernel, and each outlined
// parallel body). Expressions are emitted with a per-statement cache, so the
// shared subtrees of an ElementBuilder DAG are emitted once. Index arithmetic
// is nsw; floor division and modulo by a positive constant of a non-negative
// value are plain udiv/urem. Float arithmetic carries reassoc and contract,
// never nnan/ninf: NaN and infinity behave as in the interpreter.
//
// Unrolled loops are emitted once per iteration with the variable a constant
// (local accumulators indexed by it stay in registers). A vectorized loop is
// one vector iteration of up to 64 lanes (longer rows: a loop of 64-lane
// vectors and a rest): expressions that depend on the lane become vectors,
// unit-stride accesses vector loads and stores (stride 2-4: one wide load and
// a shuffle), others gathers and scatters, lane-varying conditions masks. A
// scalar address is its variable part plus a constant, so an unrolled
// register block addresses one base with displacements; a serial loop around
// such a block is marked not to be unrolled again (holdsEmittedBlock).
//
//===----------------------------------------------------------------------===//
#include "LlvmEmitter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include "kiln/support/StatusImpl.h"

namespace kiln::codegen::cpu {
namespace {

/// The widest vector a vectorized loop is emitted as (4 AVX-512 registers of
/// f32): a template's register tile is at most this wide; longer rows loop.
constexpr int64_t kMaxVectorLanes = 64;

using llvm::IRBuilder;
using llvm::Value;

/// Whether `s` holds an unrolled or vectorized loop: the template's own
/// register block or vector row, which the emitter writes out in full. A
/// serial loop around one is marked llvm.loop.unroll.disable: unrolling it
/// further only copies the block, and LLVM's full and partial unrollers
/// simulate every iteration of such a body before declining, about half of
/// `opt -O3`'s time on a blocked conv kernel (MobileNetV2's 1x1 160 -> 960:
/// 75 -> 22 ms; the zoo's llvm phase 0.73..0.92x, kernel times unchanged,
/// docs/performance.md).
bool holdsEmittedBlock(const Stmt& s) {
  if (!s) return false;
  if (s->kind == StmtKind::For && (s->loop == LoopKind::Unrolled || s->loop == LoopKind::Vectorized)) return true;
  return std::any_of(s->body.begin(), s->body.end(), holdsEmittedBlock);
}

class FunctionEmitter {
 public:
  FunctionEmitter(const Kernel& k, llvm::Module& m, llvm::Function* fn)
      : kernel_(k), m_(m), ctx_(m.getContext()), b_(ctx_), fn_(fn) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    b_.setFastMathFlags(fmf);
  }

  /// Sets up the entry block and parameter pointers from `args`.
  void begin(Value* args) {
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), args, i);
      buffers_[kernel_.params[i].get()] = b_.CreateLoad(b_.getPtrTy(), slot, kernel_.params[i]->name);
    }
    // Run-time extents follow the buffer pointers, one i64 per slot.
    for (size_t j = 0; j < kernel_.extents.size(); ++j) {
      Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), args, kernel_.params.size() + j);
      const Var& v = kernel_.extents[j].var;
      vars_[v.get()] = b_.CreateLoad(b_.getInt64Ty(), slot, v->name);
    }
  }

  Status stmt(const Stmt& s);
  Status loop(const Var& var, Value* begin, Value* end, LoopKind kind, const Stmt& body);
  /// A loop over [begin, end) whose body `body` emits given the counter;
  /// `hint`: a loop metadata property (loopHint), or none.
  Status countedLoop(const std::string& name, Value* begin, Value* end, llvm::MDNode* hint,
                     const std::function<Status(Value*)>& body);
  /// The loop property !{!"llvm.loop.NAME"}, or with `enable` !{!"llvm.loop.NAME", i1 true}.
  llvm::MDNode* loopHint(const char* name, bool enable = false) {
    std::vector<llvm::Metadata*> ops{llvm::MDString::get(ctx_, name)};
    if (enable) ops.push_back(llvm::ConstantAsMetadata::get(b_.getTrue()));
    return llvm::MDNode::get(ctx_, ops);
  }
  void bindVar(const Var& v, Value* value) { vars_[v.get()] = value; }
  /// A loop extent's value (a constant, or computed from run-time extents).
  Value* extent(const Expr& e) { return expr(e); }
  IRBuilder<>& builder() { return b_; }

 private:
  llvm::Type* memType(ScalarType t) {
    switch (t) {
      case ScalarType::Bool: case ScalarType::I8: case ScalarType::U8: return b_.getInt8Ty();
      case ScalarType::I32: return b_.getInt32Ty();
      case ScalarType::I64: return b_.getInt64Ty();
      case ScalarType::F16: return b_.getHalfTy();
      case ScalarType::BF16: return b_.getBFloatTy();
      case ScalarType::F32: return b_.getFloatTy();
      case ScalarType::F64: return b_.getDoubleTy();
    }
    return nullptr;
  }
  llvm::Type* regType(ScalarType t) { return t == ScalarType::Bool ? b_.getInt1Ty() : memType(t); }

  Value* expr(const Expr& e);
  Value* binaryOp(const ExprNode& e, Value* a, Value* c);
  Value* unaryOp(const ExprNode& e, Value* x);
  Value* castTo(ScalarType from, ScalarType to, Value* v);
  Value* call(llvm::Intrinsic::ID id, llvm::ArrayRef<Value*> operands) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, {operands[0]->getType()});
    return b_.CreateCall(f, operands);
  }
  /// a / c without the reassociation flag: with it, LLVM folds sin(x) / cos(x)
  /// into a call of tanf that it also emits for vector operands, where it
  /// returns wrong lanes.
  Value* exactDivision(Value* a, Value* c) {
    Value* q = b_.CreateFDiv(a, c);
    if (auto* i = llvm::dyn_cast<llvm::Instruction>(q)) i->setHasAllowReassoc(false);
    return q;
  }
  /// A libm function of one double (erf, tanh), lane by lane for vectors.
  Value* libmCall(const char* name, Value* x) {
    llvm::Type* scalar = x->getType()->getScalarType();
    llvm::FunctionCallee f = m_.getOrInsertFunction(name, scalar, scalar);
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
    if (!vt) return b_.CreateCall(f, {x});
    Value* r = llvm::PoisonValue::get(vt);
    for (unsigned l = 0; l < vt->getNumElements(); ++l)
      r = b_.CreateInsertElement(r, b_.CreateCall(f, {b_.CreateExtractElement(x, l)}), l);
    return r;
  }
  Value* fconst(Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }
  Value* iconst(Value* like, int64_t v) { return llvm::ConstantInt::get(like->getType(), uint64_t(v), true); }
  /// `t` (scalar) widened to the lane count of `like` when `like` is a vector.
  llvm::Type* shaped(llvm::Type* t, Value* like) {
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(like->getType())) return llvm::VectorType::get(t, vt->getElementCount());
    return t;
  }
  static bool isVector(Value* v) { return v->getType()->isVectorTy(); }
  Value* splat(Value* v) { return isVector(v) || !lanes_ ? v : b_.CreateVectorSplat(lanes_, v); }
  /// How an index advances per lane of the vectorized loop: 0, a constant, or unknown.
  std::optional<int64_t> strideOf(const Expr& e) const;
  /// The index expression at lane 0 (scalar).
  Value* laneZero(const Expr& e);
  /// A scalar address index: its variable part, then the constant.
  Value* index(const Expr& e);
  Value* branchingSelect(Value* cond, const Expr& a, const Expr& b);
  Value* loadFrom(const Buffer& buffer, const Expr& index);
  void storeTo(const Buffer& buffer, const Expr& index, Value* value, Value* mask);
  Status vectorBody(const Stmt& s, Value* mask);
  Status emitLoop(const StmtNode& s);
  /// A vectorized loop of constant `extent`: one vector iteration, or for a
  /// long row (a layer norm's 768 elements) a loop of kMaxVectorLanes-lane
  /// vectors and a shorter one for the rest. One <768 x float> iteration
  /// legalizes into 48 registers' worth of straight-line code that LLVM's
  /// register allocator took 30 ms over, per kernel.
  Status vectorLoop(const StmtNode& s, int64_t extent);
  /// f32 -> bf16, rounding to nearest even, NaN kept quiet; inline (LLVM
  /// would call a compiler-rt routine the runtime does not have).
  Value* toBFloat16(Value* f) {
    if (f->getType()->getScalarType()->isDoubleTy()) f = b_.CreateFPTrunc(f, shaped(b_.getFloatTy(), f));
    Value* bits = b_.CreateBitCast(f, shaped(b_.getInt32Ty(), f));
    Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), iconst(bits, 1));
    Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, iconst(bits, 0x7FFF))), 16);
    Value* quietNan = b_.CreateOr(b_.CreateLShr(bits, 16), iconst(bits, 0x40));
    Value* r = b_.CreateSelect(b_.CreateFCmpUNO(f, f), quietNan, rounded);
    return b_.CreateBitCast(b_.CreateTrunc(r, shaped(b_.getInt16Ty(), f)), shaped(b_.getBFloatTy(), f));
  }
  Value* fastExp(Value* x);
  Value* fastErf(Value* x);
  Value* fastTanh(Value* x);

  const Kernel& kernel_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  IRBuilder<> b_;
  llvm::Function* fn_;
  llvm::BasicBlock* entry_ = nullptr;
  std::map<const BufferDecl*, Value*> buffers_;
  std::map<const VarDecl*, Value*> vars_;
  std::map<const ExprNode*, Value*> cache_;
  const VarDecl* vectorVar_ = nullptr;  ///< the vectorized loop's variable, while emitting its body
  Value* vectorBase_ = nullptr;         ///< its first lane's value (nullptr: 0)
  Value* loadMask_ = nullptr;           ///< lanes whose loads may run (under a lane-varying guard)
  unsigned lanes_ = 0;
};

Value* FunctionEmitter::fastExp(Value* x) {
  if (!x->getType()->getScalarType()->isFloatTy()) return call(llvm::Intrinsic::exp, {x});
  // Lanes below ln(FLT_MIN) = -87.33654 return 0 (the select at the end), but
  // every lane computes: clamped at -87.33 their product stays a normal float.
  // (Clamped at -87.5 it was subnormal, which x86 computes in microcode at
  // ~100x the cost: BERT's masked attention scores made its softmax 3.5x
  // slower. The price: x in (-87.33654, -87.33) gets e^-87.33, 0.65% off.)
  Value* xc = call(llvm::Intrinsic::minnum, {call(llvm::Intrinsic::maxnum, {x, fconst(x, -87.33)}), fconst(x, 88.8)});
  Value* n = call(llvm::Intrinsic::rint, {b_.CreateFMul(xc, fconst(x, 1.44269504088896341))});
  Value* r = b_.CreateFAdd(b_.CreateFSub(xc, b_.CreateFMul(n, fconst(x, 0.693359375))), b_.CreateFMul(n, fconst(x, 2.12194440e-4)));
  Value* p = fconst(x, 1.0 / 720.0);
  for (double c : {1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0}) p = b_.CreateFAdd(b_.CreateFMul(p, r), fconst(x, c));
  Value* e = b_.CreateFPToSI(n, shaped(b_.getInt32Ty(), x));
  Value* half = b_.CreateSDiv(e, iconst(e, 2));
  auto pow2 = [&](Value* k) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, iconst(k, 127)), 23), x->getType()); };
  Value* result = b_.CreateFMul(b_.CreateFMul(p, pow2(half)), pow2(b_.CreateSub(e, half)));
  result = b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(x, 88.72283)), fconst(x, INFINITY), result);
  Value* low = b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, fconst(x, 0.0));
  return b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(x, -87.33654)), result, low);
}

Value* FunctionEmitter::fastErf(Value* x) {
  if (!x->getType()->getScalarType()->isFloatTy()) return libmCall("erf", x);
  Value* a = call(llvm::Intrinsic::fabs, {x});
  Value* x2 = b_.CreateFMul(x, x);
  Value* series = fconst(x, -0.02686617);
  for (double c : {0.11283792, -0.37612639, 1.12837917}) series = b_.CreateFAdd(b_.CreateFMul(series, x2), fconst(x, c));
  series = b_.CreateFMul(series, x);
  Value* t = b_.CreateFDiv(fconst(x, 1.0), b_.CreateFAdd(fconst(x, 1.0), b_.CreateFMul(fconst(x, 0.3275911), a)));
  Value* p = fconst(x, 1.061405429);
  for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592}) p = b_.CreateFAdd(b_.CreateFMul(p, t), fconst(x, c));
  Value* y = b_.CreateFSub(fconst(x, 1.0), b_.CreateFMul(b_.CreateFMul(p, t), fastExp(b_.CreateFNeg(b_.CreateFMul(a, a)))));
  y = call(llvm::Intrinsic::copysign, {y, x});
  return b_.CreateSelect(b_.CreateFCmpOLT(a, fconst(x, 0.25)), series, y);
}

Value* FunctionEmitter::fastTanh(Value* x) {
  if (!x->getType()->getScalarType()->isFloatTy()) return libmCall("tanh", x);
  Value* a = call(llvm::Intrinsic::fabs, {x});
  Value* x2 = b_.CreateFMul(x, x);
  Value* series = b_.CreateFMul(x, b_.CreateFAdd(fconst(x, 1.0), b_.CreateFMul(x2, b_.CreateFAdd(fconst(x, -1.0 / 3.0), b_.CreateFMul(x2, fconst(x, 2.0 / 15.0))))));
  Value* mid = b_.CreateFSub(fconst(x, 1.0), b_.CreateFDiv(fconst(x, 2.0), b_.CreateFAdd(fastExp(b_.CreateFMul(fconst(x, 2.0), a)), fconst(x, 1.0))));
  mid = b_.CreateSelect(b_.CreateFCmpOGT(a, fconst(x, 9.0)), fconst(x, 1.0), mid);
  mid = call(llvm::Intrinsic::copysign, {mid, x});
  return b_.CreateSelect(b_.CreateFCmpOLT(a, fconst(x, 0.0625)), series, mid);
}

Value* FunctionEmitter::castTo(ScalarType from, ScalarType to, Value* v) {
  llvm::Type* t = shaped(regType(to), v);
  if (from == to) return v;
  if (to == ScalarType::Bool)
    return isFloatType(from) ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                             : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  bool fromFloat = isFloatType(from), toFloat = isFloatType(to);
  bool fromUnsigned = from == ScalarType::U8 || from == ScalarType::Bool;
  if (fromFloat && toFloat) return b_.CreateFPCast(v, t);
  if (!fromFloat && toFloat) return fromUnsigned ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
  if (fromFloat && !toFloat) return to == ScalarType::U8 ? b_.CreateFPToUI(v, t) : b_.CreateFPToSI(v, t);
  return b_.CreateIntCast(v, t, !fromUnsigned);
}

Value* FunctionEmitter::binaryOp(const ExprNode& e, Value* a, Value* c) {
  ScalarType t = e.operands[0]->type;
  bool fl = isFloatType(t);
  bool uns = t == ScalarType::U8 || t == ScalarType::Bool;
  switch (e.binaryOp) {
    case BinaryOp::Add: return fl ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c, "", false, true);
    case BinaryOp::Sub: return fl ? b_.CreateFSub(a, c) : b_.CreateSub(a, c, "", false, true);
    case BinaryOp::Mul: return fl ? b_.CreateFMul(a, c) : b_.CreateMul(a, c, "", false, true);
    case BinaryOp::Div: return fl ? exactDivision(a, c) : (uns ? b_.CreateUDiv(a, c) : b_.CreateSDiv(a, c));
    case BinaryOp::FloorDiv: case BinaryOp::FloorMod: {
      bool div = e.binaryOp == BinaryOp::FloorDiv;
      if (fl) {
        Value* q = call(llvm::Intrinsic::floor, {b_.CreateFDiv(a, c)});
        return div ? q : b_.CreateFSub(a, b_.CreateFMul(q, c));
      }
      int64_t divisor;
      if (isNonNegative(e.operands[0]) && isIntConstant(e.operands[1], &divisor) && divisor > 0)
        return div ? b_.CreateUDiv(a, c) : b_.CreateURem(a, c);
      Value* q = b_.CreateSDiv(a, c);
      Value* r = b_.CreateSRem(a, c);
      Value* zero = iconst(a, 0);
      Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
      if (div) return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
      return b_.CreateSelect(adjust, b_.CreateAdd(r, c), r);
    }
    case BinaryOp::Min:
      if (fl) return call(llvm::Intrinsic::minimum, {a, c});
      return b_.CreateSelect(uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c), a, c);
    case BinaryOp::Max:
      if (fl) return call(llvm::Intrinsic::maximum, {a, c});
      return b_.CreateSelect(uns ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c), a, c);
    case BinaryOp::Pow:
      if (fl) return call(llvm::Intrinsic::pow, {a, c});
      return b_.CreateFPToSI(call(llvm::Intrinsic::pow, {b_.CreateSIToFP(a, shaped(b_.getDoubleTy(), a)),
                                                         b_.CreateSIToFP(c, shaped(b_.getDoubleTy(), c))}),
                             a->getType());
    case BinaryOp::Lt: return fl ? b_.CreateFCmpOLT(a, c) : (uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c));
    case BinaryOp::Le: return fl ? b_.CreateFCmpOLE(a, c) : (uns ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c));
    case BinaryOp::Gt: return fl ? b_.CreateFCmpOGT(a, c) : (uns ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c));
    case BinaryOp::Ge: return fl ? b_.CreateFCmpOGE(a, c) : (uns ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c));
    case BinaryOp::Eq: return fl ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
    case BinaryOp::Ne: return fl ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
    case BinaryOp::And: return b_.CreateAnd(a, c);
    case BinaryOp::Or: return b_.CreateOr(a, c);
  }
  return nullptr;
}

Value* FunctionEmitter::unaryOp(const ExprNode& e, Value* x) {
  bool fl = isFloatType(e.operands[0]->type);
  switch (e.unaryOp) {
    case UnaryOp::Neg: return fl ? b_.CreateFNeg(x) : b_.CreateNeg(x);
    case UnaryOp::Not: return b_.CreateNot(x);
    case UnaryOp::Abs:
      if (fl) return call(llvm::Intrinsic::fabs, {x});
      return b_.CreateSelect(b_.CreateICmpSLT(x, iconst(x, 0)), b_.CreateNeg(x), x);
    case UnaryOp::Exp: return fastExp(x);
    case UnaryOp::Log: return call(llvm::Intrinsic::log, {x});
    case UnaryOp::Sqrt: return call(llvm::Intrinsic::sqrt, {x});
    case UnaryOp::Rsqrt: return b_.CreateFDiv(fconst(x, 1.0), call(llvm::Intrinsic::sqrt, {x}));
    case UnaryOp::Tanh: return fastTanh(x);
    case UnaryOp::Erf: return fastErf(x);
    case UnaryOp::Sigmoid: return b_.CreateFDiv(fconst(x, 1.0), b_.CreateFAdd(fconst(x, 1.0), fastExp(b_.CreateFNeg(x))));
    case UnaryOp::Floor: return call(llvm::Intrinsic::floor, {x});
    case UnaryOp::Ceil: return call(llvm::Intrinsic::ceil, {x});
    case UnaryOp::Round: return call(llvm::Intrinsic::roundeven, {x});
    case UnaryOp::Sin: return call(llvm::Intrinsic::sin, {x});
    case UnaryOp::Cos: return call(llvm::Intrinsic::cos, {x});
    case UnaryOp::Reciprocal: return b_.CreateFDiv(fconst(x, 1.0), x);
    case UnaryOp::IsNan: return b_.CreateFCmpUNO(x, x);
    case UnaryOp::Ilogb: {
      Value* bits = b_.CreateBitCast(x, shaped(b_.getInt32Ty(), x));
      Value* field = b_.CreateAnd(b_.CreateLShr(bits, 23), iconst(bits, 0xff));
      return b_.CreateSIToFP(b_.CreateSub(field, iconst(field, 127)), x->getType());
    }
    case UnaryOp::Exp2i: {
      Value* n = b_.CreateFPToSI(x, shaped(b_.getInt32Ty(), x));
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, iconst(n, 127)), 23), x->getType());
    }
  }
  return nullptr;
}

std::optional<int64_t> FunctionEmitter::strideOf(const Expr& e) const {
  switch (e->kind) {
    case ExprKind::IntImm: case ExprKind::FloatImm: return 0;
    case ExprKind::VarRef: return e->var.get() == vectorVar_ ? 1 : 0;
    default: break;
  }
  std::vector<std::optional<int64_t>> s;
  for (const Expr& o : e->operands) s.push_back(strideOf(o));
  bool allZero = true;
  for (const auto& x : s) allZero &= x && *x == 0;
  if (allZero) return 0;
  if (e->kind != ExprKind::Binary || !s[0] || !s[1]) return std::nullopt;
  int64_t c;
  switch (e->binaryOp) {
    case BinaryOp::Add: return *s[0] + *s[1];
    case BinaryOp::Sub: return *s[0] - *s[1];
    case BinaryOp::Mul:
      if (*s[1] == 0 && isIntConstant(e->operands[1], &c)) return *s[0] * c;
      if (*s[0] == 0 && isIntConstant(e->operands[0], &c)) return *s[1] * c;
      return std::nullopt;
    default: return std::nullopt;
  }
}

Value* FunctionEmitter::branchingSelect(Value* cond, const Expr& a, const Expr& b) {
  auto* thenBlock = llvm::BasicBlock::Create(ctx_, "pick.a", fn_);
  auto* elseBlock = llvm::BasicBlock::Create(ctx_, "pick.b", fn_);
  auto* merge = llvm::BasicBlock::Create(ctx_, "picked", fn_);
  b_.CreateCondBr(cond, thenBlock, elseBlock);
  // Values computed on one side do not dominate the merge: each side starts
  // from the cache as it was before the branch and leaves nothing in it.
  const std::map<const ExprNode*, Value*> before = cache_;
  Value* sides[2];
  llvm::BasicBlock* ends[2];
  const Expr* operands[2] = {&a, &b};
  llvm::BasicBlock* blocks[2] = {thenBlock, elseBlock};
  for (int i = 0; i < 2; ++i) {
    b_.SetInsertPoint(blocks[i]);
    sides[i] = expr(*operands[i]);
    ends[i] = b_.GetInsertBlock();
    cache_ = before;
  }
  if (isVector(sides[0]) != isVector(sides[1])) {  // splat the scalar side at the end of its block
    int scalar = isVector(sides[0]) ? 1 : 0;
    b_.SetInsertPoint(ends[scalar]);
    sides[scalar] = splat(sides[scalar]);
  }
  for (int i = 0; i < 2; ++i) {
    b_.SetInsertPoint(ends[i]);
    b_.CreateBr(merge);
  }
  b_.SetInsertPoint(merge);
  llvm::PHINode* phi = b_.CreatePHI(sides[0]->getType(), 2, "pick");
  phi->addIncoming(sides[0], ends[0]);
  phi->addIncoming(sides[1], ends[1]);
  return phi;
}

Value* FunctionEmitter::laneZero(const Expr& e) {
  const VarDecl* saved = vectorVar_;
  unsigned savedLanes = lanes_;
  auto savedCache = std::move(cache_);
  cache_.clear();
  vars_[saved] = vectorBase_ ? vectorBase_ : b_.getInt64(0);
  vectorVar_ = nullptr;
  lanes_ = 0;
  Value* v = index(e);
  vectorVar_ = saved;
  lanes_ = savedLanes;
  vars_.erase(saved);
  cache_ = std::move(savedCache);
  return v;
}

/// The same value as expr(e), emitted so that indices differing only in
/// unrolled loop variables and literals share their variable part and add
/// a constant: an unrolled register block's loads then address one base
/// with displacements (((x + 3) + kx) << 4 per pixel was one add and shift
/// each, and left LLVM's loop strength reduction half of the compile time).
Value* FunctionEmitter::index(const Expr& e) {
  // Literals and unrolled loop variables (bound to constants) are constant.
  auto constantOf = [&](const Expr& x, int64_t* value) {
    if (isIntConstant(x, value)) return true;
    if (x->kind != ExprKind::VarRef || x->var.get() == vectorVar_) return false;
    auto* bound = llvm::dyn_cast<llvm::ConstantInt>(vars_.at(x->var.get()));
    if (bound) *value = bound->getSExtValue();
    return bound != nullptr;
  };
  LinearForm lin;
  if (e->type != ScalarType::I64 || !addLinear(e, 1, lin, constantOf)) return expr(e);
  for (const auto& [coefficient, term] : lin.terms)
    if (term->type != ScalarType::I64) return expr(e);
  Value* sum = nullptr;
  for (const auto& [coefficient, term] : lin.terms) {
    Value* t = expr(term);
    if (isVector(t)) return expr(e);  // the vectorized loop's variable: not a scalar index
    if (coefficient != 1) t = b_.CreateMul(t, b_.getInt64(uint64_t(coefficient)), "", false, true);
    sum = sum ? b_.CreateAdd(sum, t, "", false, true) : t;
  }
  if (!sum) return b_.getInt64(uint64_t(lin.constant));
  return lin.constant ? b_.CreateAdd(sum, b_.getInt64(uint64_t(lin.constant)), "", false, true) : sum;
}

Value* FunctionEmitter::loadFrom(const Buffer& buffer, const Expr& index) {
  llvm::Type* mem = memType(buffer->type);
  Value* base = buffers_.at(buffer.get());
  llvm::Align align(scalarTypeSize(buffer->type));
  std::optional<int64_t> stride = lanes_ ? strideOf(index) : std::optional<int64_t>(0);
  Value* v;
  if (stride && *stride == 0) {
    v = b_.CreateLoad(mem, b_.CreateInBoundsGEP(mem, base, this->index(index)));
  } else if (stride && *stride == 1) {
    auto* vt = llvm::FixedVectorType::get(mem, lanes_);
    Value* ptr = b_.CreateInBoundsGEP(mem, base, laneZero(index));
    if (loadMask_) v = b_.CreateMaskedLoad(vt, ptr, align, loadMask_, llvm::Constant::getNullValue(vt));
    else v = b_.CreateAlignedLoad(vt, ptr, align);
  } else if (stride && *stride >= 2 && *stride <= 4 && !loadMask_) {
    // A small constant stride (a strided conv's pixels): one contiguous load
    // of the span (lanes past its last element masked off, so nothing beyond
    // the last addressed element is read), then every stride-th lane.
    unsigned step = unsigned(*stride), wide = step * lanes_, span = step * (lanes_ - 1) + 1;
    auto* wt = llvm::FixedVectorType::get(mem, wide);
    std::vector<llvm::Constant*> maskBits;
    for (unsigned l = 0; l < wide; ++l) maskBits.push_back(b_.getInt1(l < span));
    Value* ptr = b_.CreateInBoundsGEP(mem, base, laneZero(index));
    Value* all = b_.CreateMaskedLoad(wt, ptr, align, llvm::ConstantVector::get(maskBits), llvm::Constant::getNullValue(wt));
    std::vector<int> pick;
    for (unsigned l = 0; l < lanes_; ++l) pick.push_back(int(l * step));
    v = b_.CreateShuffleVector(all, pick);
  } else {
    auto* vt = llvm::FixedVectorType::get(mem, lanes_);
    Value* ptrs = b_.CreateInBoundsGEP(mem, base, splat(expr(index)));
    v = b_.CreateMaskedGather(vt, ptrs, align, loadMask_, llvm::Constant::getNullValue(vt));
  }
  if (buffer->type == ScalarType::Bool) return b_.CreateICmpNE(v, iconst(v, 0));
  return v;
}

void FunctionEmitter::storeTo(const Buffer& buffer, const Expr& index, Value* value, Value* mask) {
  ScalarType t = buffer->type;
  llvm::Type* mem = memType(t);
  Value* base = buffers_.at(buffer.get());
  llvm::Align align(scalarTypeSize(t));
  if (lanes_) value = splat(value);
  if (t == ScalarType::Bool) value = b_.CreateZExt(value, shaped(b_.getInt8Ty(), value));
  else if (t == ScalarType::BF16) value = toBFloat16(value);
  else if (t == ScalarType::F16) value = b_.CreateFPTrunc(value, shaped(mem, value));
  if (!lanes_) {
    b_.CreateStore(value, b_.CreateInBoundsGEP(mem, base, this->index(index)));
    return;
  }
  std::optional<int64_t> stride = strideOf(index);
  if (stride && *stride == 1) {
    Value* ptr = b_.CreateInBoundsGEP(mem, base, laneZero(index));
    if (mask) b_.CreateMaskedStore(value, ptr, align, mask);
    else b_.CreateAlignedStore(value, ptr, align);
    return;
  }
  Value* ptrs = b_.CreateInBoundsGEP(mem, base, splat(expr(index)));
  b_.CreateMaskedScatter(value, ptrs, align, mask ? mask : b_.CreateVectorSplat(lanes_, b_.getTrue()));
}

Value* FunctionEmitter::expr(const Expr& e) {
  if (auto it = cache_.find(e.get()); it != cache_.end()) return it->second;
  Value* v = nullptr;
  switch (e->kind) {
    case ExprKind::IntImm: v = llvm::ConstantInt::get(regType(e->type), uint64_t(e->intValue), true); break;
    case ExprKind::FloatImm: v = llvm::ConstantFP::get(regType(e->type), e->floatValue); break;
    case ExprKind::VarRef:
      if (e->var.get() == vectorVar_) {
        std::vector<llvm::Constant*> lanes;
        for (unsigned l = 0; l < lanes_; ++l) lanes.push_back(b_.getInt64(l));
        v = llvm::ConstantVector::get(lanes);
        if (vectorBase_) v = b_.CreateAdd(b_.CreateVectorSplat(lanes_, vectorBase_), v, "", true, true);
      } else {
        v = vars_.at(e->var.get());
      }
      break;
    case ExprKind::Load:
      v = loadFrom(e->buffer, e->operands[0]);
      if (e->type == ScalarType::F16 || e->type == ScalarType::BF16) v = b_.CreateFPExt(v, shaped(b_.getFloatTy(), v));
      break;
    case ExprKind::Binary: {
      Value* a = expr(e->operands[0]);
      Value* c = expr(e->operands[1]);
      if (isVector(a) != isVector(c)) a = splat(a), c = splat(c);
      v = binaryOp(*e, a, c);
      break;
    }
    case ExprKind::Unary: v = unaryOp(*e, expr(e->operands[0])); break;
    case ExprKind::Select: {
      Value* c = expr(e->operands[0]);
      // A choice by index between two loads (a Concat's inputs, chained): branch and
      // load from one side only. A chain over n inputs otherwise loads all n per element.
      if (!isVector(c) && !readsMemory(e->operands[0]) && readsMemory(e->operands[1]) && readsMemory(e->operands[2])) {
        v = branchingSelect(c, e->operands[1], e->operands[2]);
        break;
      }
      Value* a = expr(e->operands[1]);
      Value* b = expr(e->operands[2]);
      if (isVector(c) || isVector(a) || isVector(b)) {
        a = splat(a), b = splat(b);
      }
      v = b_.CreateSelect(c, a, b);
      break;
    }
    case ExprKind::ShuffleXor:  // the verifier keeps shuffles out of CPU kernels
      v = expr(e->operands[0]);
      break;
    case ExprKind::Cast: {
      ScalarType from = computeType(e->operands[0]->type);
      v = castTo(from, computeType(e->type), expr(e->operands[0]));
      break;
    }
  }
  cache_[e.get()] = v;
  return v;
}

Status FunctionEmitter::countedLoop(const std::string& name, Value* begin, Value* end, llvm::MDNode* hint,
                                    const std::function<Status(Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name + ".header", fn_);
  auto* bodyBlock = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), bodyBlock, exit);
  b_.SetInsertPoint(bodyBlock);
  KILN_TRY(body(i));
  Value* next = b_.CreateAdd(i, b_.getInt64(1), name + ".next", true, true);
  llvm::BranchInst* back = b_.CreateBr(header);
  i->addIncoming(next, b_.GetInsertBlock());
  if (hint) {
    llvm::SmallVector<llvm::Metadata*, 2> ops{nullptr, hint};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
  return Status::ok();
}

Status FunctionEmitter::loop(const Var& var, Value* begin, Value* end, LoopKind kind, const Stmt& body) {
  llvm::MDNode* hint = kind == LoopKind::Vectorized ? loopHint("llvm.loop.vectorize.enable", true)
                       : kind == LoopKind::Unrolled ? loopHint("llvm.loop.unroll.full")
                       : kind == LoopKind::Serial && holdsEmittedBlock(body) ? loopHint("llvm.loop.unroll.disable")
                                                    : nullptr;
  KILN_TRY(countedLoop(var->name, begin, end, hint, [&](Value* i) {
    vars_[var.get()] = i;
    return stmt(body);
  }));
  vars_.erase(var.get());
  return Status::ok();
}

Status FunctionEmitter::vectorLoop(const StmtNode& s, int64_t extent) {
  // Lanes [first, first + lanes) as one vector iteration.
  auto vectors = [&](Value* first, int64_t lanes) {
    vectorVar_ = s.var.get();
    vectorBase_ = first;
    lanes_ = unsigned(lanes);
    Status st = vectorBody(s.body[0], nullptr);
    vectorVar_ = nullptr;
    vectorBase_ = nullptr;
    lanes_ = 0;
    cache_.clear();
    return st;
  };
  if (extent <= kMaxVectorLanes) return vectors(nullptr, extent);
  const int64_t chunks = extent / kMaxVectorLanes, rest = extent % kMaxVectorLanes;
  KILN_TRY(countedLoop(s.var->name + ".chunk", b_.getInt64(0), b_.getInt64(uint64_t(chunks)), loopHint("llvm.loop.unroll.disable"),
                       [&](Value* c) {
                         return vectors(b_.CreateMul(c, b_.getInt64(kMaxVectorLanes), "", true, true), kMaxVectorLanes);
                       }));
  if (rest == 0) return Status::ok();
  Value* first = b_.getInt64(uint64_t(chunks * kMaxVectorLanes));
  if (rest > 1) return vectors(first, rest);
  vars_[s.var.get()] = first;  // one lane left: the body as scalar stores
  Status st = stmt(s.body[0]);
  vars_.erase(s.var.get());
  return st;
}

Status FunctionEmitter::emitLoop(const StmtNode& s) {
  int64_t extent = 0;
  bool constant = isIntConstant(s.value, &extent);
  if (s.loop == LoopKind::Unrolled && constant) {
    for (int64_t i = 0; i < extent; ++i) {
      vars_[s.var.get()] = b_.getInt64(uint64_t(i));
      KILN_TRY(stmt(s.body[0]));
    }
    vars_.erase(s.var.get());
    return Status::ok();
  }
  if (s.loop == LoopKind::Vectorized && constant && extent > 1 && !lanes_) return vectorLoop(s, extent);
  return loop(s.var, b_.getInt64(0), expr(s.value), s.loop, s.body[0]);
}

Status FunctionEmitter::vectorBody(const Stmt& s, Value* mask) {
  cache_.clear();
  switch (s->kind) {
    case StmtKind::Store:
      loadMask_ = mask;  // lanes the guard excludes may index outside their buffers
      storeTo(s->buffer, s->index, expr(s->value), mask);
      loadMask_ = nullptr;
      return Status::ok();
    case StmtKind::Seq:
      for (const Stmt& c : s->body) KILN_TRY(vectorBody(c, mask));
      return Status::ok();
    case StmtKind::If: {
      Value* cond = splat(expr(s->value));
      Value* thenMask = mask ? b_.CreateAnd(mask, cond) : cond;
      KILN_TRY(vectorBody(s->body[0], thenMask));
      if (s->body.size() > 1) {
        Value* notCond = b_.CreateNot(cond);
        KILN_TRY(vectorBody(s->body[1], mask ? b_.CreateAnd(mask, notCond) : notCond));
      }
      return Status::ok();
    }
    default:
      return makeError(ErrorCode::Internal, "kernel @", kernel_.name,
                       ": a vectorized loop may hold only stores and ifs");
  }
}

Status FunctionEmitter::stmt(const Stmt& s) {
  cache_.clear();
  switch (s->kind) {
    case StmtKind::For:
      return emitLoop(*s);
    case StmtKind::Store:
      storeTo(s->buffer, s->index, expr(s->value), nullptr);
      cache_.clear();
      return Status::ok();
    case StmtKind::Allocate: {
      IRBuilder<> entryBuilder(entry_, entry_->begin());
      llvm::Type* arr = llvm::ArrayType::get(memType(s->buffer->type), uint64_t(s->buffer->size));
      buffers_[s->buffer.get()] = entryBuilder.CreateAlloca(arr, nullptr, s->buffer->name);
      Status st = stmt(s->body[0]);
      buffers_.erase(s->buffer.get());
      return st;
    }
    case StmtKind::Let:
      vars_[s->var.get()] = expr(s->value);
      {
        Status st = stmt(s->body[0]);
        vars_.erase(s->var.get());
        return st;
      }
    case StmtKind::If: {
      Value* cond = expr(s->value);
      auto* thenBlock = llvm::BasicBlock::Create(ctx_, "then", fn_);
      auto* elseBlock = s->body.size() > 1 ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
      auto* join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(cond, thenBlock, elseBlock ? elseBlock : join);
      b_.SetInsertPoint(thenBlock);
      KILN_TRY(stmt(s->body[0]));
      b_.CreateBr(join);
      if (elseBlock) {
        b_.SetInsertPoint(elseBlock);
        KILN_TRY(stmt(s->body[1]));
        b_.CreateBr(join);
      }
      b_.SetInsertPoint(join);
      cache_.clear();
      return Status::ok();
    }
    case StmtKind::Seq:
      for (const Stmt& c : s->body) KILN_TRY(stmt(c));
      return Status::ok();
    case StmtKind::Barrier:
      return makeError(ErrorCode::Internal, "barrier in CPU kernel @", kernel_.name);
    case StmtKind::Mma:
      return makeError(ErrorCode::Internal, "tensor-core mma in CPU kernel @", kernel_.name);
  }
  return Status::ok();
}

/// Emits the top level: parallel loops become outlined bodies run by the pool.
class KernelEmitter {
 public:
  KernelEmitter(const Kernel& k, llvm::Module& m) : kernel_(k), m_(m) {}

  Expected<llvm::Function*> run() {
    llvm::LLVMContext& ctx = m_.getContext();
    llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, kernel_.name, m_);
    FunctionEmitter main(kernel_, m_, fn);
    main.begin(fn->getArg(0));
    KILN_TRY(topLevel(main, kernel_.body, fn->getArg(0)));
    main.builder().CreateRetVoid();
    return fn;
  }

 private:
  Status topLevel(FunctionEmitter& main, const Stmt& s, llvm::Value* args) {
    if (s->kind == StmtKind::Seq) {
      for (const Stmt& c : s->body) KILN_TRY(topLevel(main, c, args));
      return Status::ok();
    }
    if (s->kind != StmtKind::For || s->loop != LoopKind::Parallel) return main.stmt(s);
    llvm::LLVMContext& ctx = m_.getContext();
    llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
    llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
    auto* bodyType = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64}, false);
    llvm::Function* body = llvm::Function::Create(bodyType, llvm::Function::InternalLinkage,
                                                  kernel_.name + ".par" + std::to_string(outlined_++), m_);
    FunctionEmitter inner(kernel_, m_, body);
    inner.begin(body->getArg(0));
    KILN_TRY(inner.loop(s->var, body->getArg(1), body->getArg(2), LoopKind::Serial, s->body[0]));
    inner.builder().CreateRetVoid();
    auto* forType = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, i64}, false);
    llvm::FunctionCallee parallelFor = m_.getOrInsertFunction("kiln_rt_parallel_for", forType);
    main.builder().CreateCall(parallelFor, {body, args, main.extent(s->value)});
    return Status::ok();
  }

  const Kernel& kernel_;
  llvm::Module& m_;
  int outlined_ = 0;
};

}  // namespace

Expected<llvm::Function*> emitKernel(const Kernel& kernel, llvm::Module& module) {
  if (kernel.target != KernelTarget::Cpu)
    return makeError(ErrorCode::Internal, "kernel @", kernel.name, " is not a CPU kernel");
  KILN_TRY(verifyKernel(kernel));
  return KernelEmitter(kernel, module).run();
}

}  // namespace kiln::codegen::cpu
