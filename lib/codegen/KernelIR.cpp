//===- lib/codegen/KernelIR.cpp - Kernel IR construction ------------------===//
//
// Builders for kernel IR expressions and statements. Binary and unary
// builders fold constants and the identities x+0, x*1, x*0 (integers only),
// x/1 and floordiv/floormod by 1, so index arithmetic that templates write
// generically prints (and compiles) as simply as hand-written code.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/codegen/KernelIR.h"

#include "kiln/codegen/IRVisitor.h"
#include "kiln/support/StatusImpl.h"

namespace kiln::codegen {

const char* scalarTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "i8";
    case ScalarType::U8: return "u8";
    case ScalarType::I32: return "i32";
    case ScalarType::I64: return "i64";
    case ScalarType::F16: return "f16";
    case ScalarType::BF16: return "bf16";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
  }
  return "?";
}

bool isFloatType(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 || t == ScalarType::F64;
}

size_t scalarTypeSize(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: case ScalarType::I8: case ScalarType::U8: return 1;
    case ScalarType::F16: case ScalarType::BF16: return 2;
    case ScalarType::I32: case ScalarType::F32: return 4;
    case ScalarType::I64: case ScalarType::F64: return 8;
  }
  return 0;
}

Expected<ScalarType> scalarTypeOf(DType dtype) {
  switch (dtype) {
    case DType::Bool: return ScalarType::Bool;
    case DType::I8: return ScalarType::I8;
    case DType::U8: return ScalarType::U8;
    case DType::I32: return ScalarType::I32;
    case DType::I64: return ScalarType::I64;
    case DType::F16: return ScalarType::F16;
    case DType::BF16: return ScalarType::BF16;
    case DType::F32: return ScalarType::F32;
    case DType::F64: return ScalarType::F64;
    default: return Error(ErrorCode::CodegenUnsupported, std::string("code generation does not support dtype ") + dtypeName(dtype));
  }
}

DType dtypeOfScalar(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return DType::Bool;
    case ScalarType::I8: return DType::I8;
    case ScalarType::U8: return DType::U8;
    case ScalarType::I32: return DType::I32;
    case ScalarType::I64: return DType::I64;
    case ScalarType::F16: return DType::F16;
    case ScalarType::BF16: return DType::BF16;
    case ScalarType::F32: return DType::F32;
    case ScalarType::F64: return DType::F64;
  }
  return DType::Undefined;
}

ScalarType computeType(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 ? ScalarType::F32 : t;
}

const char* memoryScopeName(MemoryScope s) {
  switch (s) {
    case MemoryScope::Global: return "global";
    case MemoryScope::Shared: return "shared";
    case MemoryScope::Local: return "local";
  }
  return "?";
}

const char* binaryOpName(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "floordiv", "floormod", "min", "max", "pow",
                                "lt",  "le",  "gt",  "ge",  "eq",       "ne",       "and", "or"};
  return names[size_t(op)];
}

const char* unaryOpName(UnaryOp op) {
  static const char* names[] = {"neg",  "not",  "abs",   "exp",   "log", "sqrt", "rsqrt",      "tanh", "erf",
                                "sigmoid", "floor", "ceil", "round", "sin", "cos",  "reciprocal", "isnan",
                                "ilogb", "exp2i"};
  return names[size_t(op)];
}

const char* loopKindName(LoopKind k) {
  static const char* names[] = {"serial",     "parallel",   "vectorized", "unrolled",    "blockIdx.x",
                                "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  return names[size_t(k)];
}

bool isGpuBinding(LoopKind k) { return k >= LoopKind::BlockX; }

Buffer makeBuffer(std::string name, ScalarType type, MemoryScope scope, int64_t size) {
  return std::make_shared<const BufferDecl>(BufferDecl{std::move(name), type, scope, size});
}

Var makeVar(std::string name) { return std::make_shared<const VarDecl>(VarDecl{std::move(name)}); }

namespace {

ExprNode exprNode(ExprKind kind, ScalarType type) {
  ExprNode n;
  n.kind = kind;
  n.type = type;
  return n;
}

StmtNode stmtNode(StmtKind kind) {
  StmtNode n;
  n.kind = kind;
  return n;
}

Expr make(ExprNode n) { return Expr(std::make_shared<const ExprNode>(std::move(n))); }

bool isComparison(BinaryOp op) { return op >= BinaryOp::Lt && op <= BinaryOp::Ne; }
bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::optional<double> constantValue(const Expr& e) {
  if (e->kind == ExprKind::IntImm) return double(e->intValue);
  if (e->kind == ExprKind::FloatImm) return e->floatValue;
  return std::nullopt;
}

/// (A + floordiv(x, c)) * c + floormod(x, c)  ->  A * c + x   (and with no A: x),
/// which is how a flattened index re-flattens; keeps such indices affine.
Expr mergeDivMod(const Expr& a, const Expr& b) {
  int64_t c, c2;
  if (b->kind != ExprKind::Binary || b->binaryOp != BinaryOp::FloorMod || !isIntConstant(b->operands[1], &c)) return Expr();
  const Expr& x = b->operands[0];
  auto same = [](const Expr& p, const Expr& q) {  // identity, or the same variable
    return p.get() == q.get() || (p->kind == ExprKind::VarRef && q->kind == ExprKind::VarRef && p->var == q->var);
  };
  if (a->kind != ExprKind::Binary || a->binaryOp != BinaryOp::Mul || !isIntConstant(a->operands[1], &c2) || c != c2)
    return Expr();
  const Expr& e = a->operands[0];
  auto isDiv = [&](const Expr& d) {
    int64_t c3;
    return d->kind == ExprKind::Binary && d->binaryOp == BinaryOp::FloorDiv && same(d->operands[0], x) &&
           isIntConstant(d->operands[1], &c3) && c3 == c;
  };
  if (isDiv(e)) return b->operands[0];
  if (e->kind == ExprKind::Binary && e->binaryOp == BinaryOp::Add && isDiv(e->operands[1]))
    return binary(BinaryOp::Add, binary(BinaryOp::Mul, e->operands[0], intImm(c, a->type)), b->operands[0]);
  return Expr();
}

Expr foldBinary(BinaryOp op, const Expr& a, const Expr& b, ScalarType resultType) {
  if (a->kind == ExprKind::IntImm && b->kind == ExprKind::IntImm && !isFloatType(a->type)) {
    int64_t x = a->intValue, y = b->intValue;
    switch (op) {
      case BinaryOp::Add: return intImm(x + y, resultType);
      case BinaryOp::Sub: return intImm(x - y, resultType);
      case BinaryOp::Mul: return intImm(x * y, resultType);
      case BinaryOp::FloorDiv: if (y != 0) return intImm(floorDivInt(x, y), resultType); break;
      case BinaryOp::FloorMod: if (y != 0) return intImm(x - floorDivInt(x, y) * y, resultType); break;
      case BinaryOp::Min: return intImm(std::min(x, y), resultType);
      case BinaryOp::Max: return intImm(std::max(x, y), resultType);
      case BinaryOp::Lt: return boolImm(x < y);
      case BinaryOp::Le: return boolImm(x <= y);
      case BinaryOp::Gt: return boolImm(x > y);
      case BinaryOp::Ge: return boolImm(x >= y);
      case BinaryOp::Eq: return boolImm(x == y);
      case BinaryOp::Ne: return boolImm(x != y);
      case BinaryOp::And: return boolImm(x && y);
      case BinaryOp::Or: return boolImm(x || y);
      default: break;
    }
  }
  if (isFloatType(resultType) && a->kind == ExprKind::FloatImm && b->kind == ExprKind::FloatImm) {
    double x = a->floatValue, y = b->floatValue;
    switch (op) {
      case BinaryOp::Add: return floatImm(x + y, resultType);
      case BinaryOp::Sub: return floatImm(x - y, resultType);
      case BinaryOp::Mul: return floatImm(x * y, resultType);
      case BinaryOp::Div: return floatImm(x / y, resultType);
      default: break;
    }
  }
  auto is = [](const Expr& e, double v) {
    auto c = constantValue(e);
    return c && *c == v;
  };
  bool integer = !isFloatType(resultType) && resultType != ScalarType::Bool;
  switch (op) {
    case BinaryOp::Add:
      if (is(b, 0) && (integer || b->kind == ExprKind::FloatImm)) return a;
      if (is(a, 0) && (integer || a->kind == ExprKind::FloatImm)) return b;
      if (integer) {
        if (Expr merged = mergeDivMod(a, b)) return merged;
      }
      break;
    case BinaryOp::Sub: if (is(b, 0)) return a; break;
    case BinaryOp::Mul:
      if (is(b, 1)) return a;
      if (is(a, 1)) return b;
      if (integer && (is(a, 0) || is(b, 0))) return intImm(0, resultType);
      break;
    case BinaryOp::Div: case BinaryOp::FloorDiv: if (is(b, 1)) return a; break;
    case BinaryOp::FloorMod: if (integer && is(b, 1)) return intImm(0, resultType); break;
    case BinaryOp::And:
      if (is(a, 1)) return b;
      if (is(b, 1)) return a;
      break;
    default: break;
  }
  return Expr();
}

}  // namespace

Expr intImm(int64_t v, ScalarType t) {
  ExprNode n = exprNode(ExprKind::IntImm, t);
  n.intValue = v;
  return make(std::move(n));
}

Expr floatImm(double v, ScalarType t) {
  ExprNode n = exprNode(ExprKind::FloatImm, t);
  n.floatValue = t == ScalarType::F32 ? double(float(v)) : v;
  return make(std::move(n));
}

Expr boolImm(bool v) { return intImm(v ? 1 : 0, ScalarType::Bool); }

Expr varRef(const Var& v) {
  ExprNode n = exprNode(ExprKind::VarRef, ScalarType::I64);
  n.var = v;
  return make(std::move(n));
}

Expr load(const Buffer& b, Expr index) {
  ExprNode n = exprNode(ExprKind::Load, b->type);
  n.buffer = b;
  n.operands = {std::move(index)};
  return make(std::move(n));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  ScalarType t = isComparison(op) || isLogical(op) ? ScalarType::Bool : a->type;
  if (Expr folded = foldBinary(op, a, b, t)) return folded;
  ExprNode n = exprNode(ExprKind::Binary, t);
  n.binaryOp = op;
  n.operands = {std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr unary(UnaryOp op, Expr a) {
  ScalarType t = op == UnaryOp::IsNan || op == UnaryOp::Not ? ScalarType::Bool : a->type;
  KILN_CHECK(!(op == UnaryOp::Ilogb || op == UnaryOp::Exp2i) || t == ScalarType::F32, unaryOpName(op),
             " takes an f32 operand");
  if (op == UnaryOp::Neg && a->kind == ExprKind::IntImm) return intImm(-a->intValue, t);
  if (op == UnaryOp::Neg && a->kind == ExprKind::FloatImm) return floatImm(-a->floatValue, t);
  ExprNode n = exprNode(ExprKind::Unary, t);
  n.unaryOp = op;
  n.operands = {std::move(a)};
  return make(std::move(n));
}

Expr select(Expr cond, Expr a, Expr b) {
  if (cond->kind == ExprKind::IntImm) return cond->intValue ? a : b;
  ExprNode n = exprNode(ExprKind::Select, a->type);
  n.operands = {std::move(cond), std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr cast(ScalarType t, Expr a) {
  if (a->type == t) return a;
  if (a->kind == ExprKind::IntImm && !isFloatType(t) && t != ScalarType::Bool) return intImm(a->intValue, t);
  if (a->kind == ExprKind::IntImm && isFloatType(t)) return floatImm(double(a->intValue), t);
  if (a->kind == ExprKind::FloatImm && isFloatType(t)) return floatImm(a->floatValue, t);
  ExprNode n = exprNode(ExprKind::Cast, t);
  n.operands = {std::move(a)};
  return make(std::move(n));
}

Expr shuffleXor(Expr a, int64_t laneMask) {
  ExprNode n = exprNode(ExprKind::ShuffleXor, a->type);
  n.operands = {std::move(a), intImm(laneMask)};
  return make(std::move(n));
}

Expr constantOf(ScalarType t, double v) {
  if (isFloatType(t)) return floatImm(v, computeType(t));
  if (t == ScalarType::Bool) return boolImm(v != 0);
  return intImm(int64_t(v), t);
}

Expr extremeOf(ScalarType t, bool largest) {
  auto pick = [&]<class T>() {
    return intImm(largest ? int64_t(std::numeric_limits<T>::max()) : int64_t(std::numeric_limits<T>::lowest()), t);
  };
  switch (t) {
    case ScalarType::Bool: return boolImm(largest);
    case ScalarType::I8: return pick.operator()<int8_t>();
    case ScalarType::U8: return pick.operator()<uint8_t>();
    case ScalarType::I32: return pick.operator()<int32_t>();
    case ScalarType::I64: return pick.operator()<int64_t>();
    default: return constantOf(t, largest ? INFINITY : -INFINITY);
  }
}

bool isIntConstant(const Expr& e, int64_t* value) {
  if (e->kind != ExprKind::IntImm) return false;
  if (value) *value = e->intValue;
  return true;
}

bool addLinear(const Expr& e, int64_t k, LinearForm& out, const std::function<bool(const Expr&, int64_t*)>& constantOf) {
  auto constant = [&](const Expr& x, int64_t* value) { return constantOf ? constantOf(x, value) : isIntConstant(x, value); };
  int64_t c = 0, product = 0;
  if (constant(e, &c))
    return !__builtin_mul_overflow(c, k, &product) && !__builtin_add_overflow(out.constant, product, &out.constant);
  if (e->kind == ExprKind::Binary) {
    const Expr &a = e->operands[0], &b = e->operands[1];
    switch (e->binaryOp) {
      case BinaryOp::Add: return addLinear(a, k, out, constantOf) && addLinear(b, k, out, constantOf);
      case BinaryOp::Sub:
        if (k == INT64_MIN) break;
        return addLinear(a, k, out, constantOf) && addLinear(b, -k, out, constantOf);
      case BinaryOp::Mul:
        if (constant(b, &c) && !__builtin_mul_overflow(c, k, &product)) return addLinear(a, product, out, constantOf);
        if (constant(a, &c) && !__builtin_mul_overflow(c, k, &product)) return addLinear(b, product, out, constantOf);
        break;
      default: break;
    }
  }
  out.terms.push_back({k, e});
  return true;
}

bool isNonNegative(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return e->intValue >= 0;
    case ExprKind::VarRef: return true;
    case ExprKind::Binary:
      switch (e->binaryOp) {
        case BinaryOp::Add: case BinaryOp::Mul: case BinaryOp::Min: case BinaryOp::Max: case BinaryOp::FloorDiv:
          return isNonNegative(e->operands[0]) && isNonNegative(e->operands[1]);
        case BinaryOp::FloorMod: return isNonNegative(e->operands[1]);
        default: return false;
      }
    case ExprKind::Select: return isNonNegative(e->operands[1]) && isNonNegative(e->operands[2]);
    default: return false;
  }
}

bool isConstant(const Expr& e) { return e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm; }

std::optional<int64_t> extentUpperBound(const Expr& e, const Kernel& k) {
  switch (e->kind) {
    case ExprKind::IntImm: return e->type == ScalarType::I64 ? std::optional<int64_t>(e->intValue) : std::nullopt;
    case ExprKind::VarRef:
      for (const RunTimeExtent& x : k.extents)
        if (x.var == e->var) return x.max;
      return std::nullopt;
    case ExprKind::Binary: {
      const std::optional<int64_t> a = extentUpperBound(e->operands[0], k), b = extentUpperBound(e->operands[1], k);
      if (!a || !b) return std::nullopt;
      int64_t out = 0;
      switch (e->binaryOp) {
        case BinaryOp::Add:
          if (__builtin_add_overflow(*a, *b, &out)) return std::nullopt;
          return out;
        case BinaryOp::Mul:
          if (!isNonNegative(e->operands[0]) || !isNonNegative(e->operands[1]) || __builtin_mul_overflow(*a, *b, &out))
            return std::nullopt;
          return out;
        case BinaryOp::FloorDiv:
          if (!isIntConstant(e->operands[1]) || *b <= 0 || !isNonNegative(e->operands[0])) return std::nullopt;
          return *a / *b;
        case BinaryOp::Min: return std::min(*a, *b);
        case BinaryOp::Max: return std::max(*a, *b);
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

bool usesVar(const Expr& e, const Var& v) {
  if (e->kind == ExprKind::VarRef) return e->var == v;
  for (const Expr& o : e->operands)
    if (usesVar(o, v)) return true;
  return false;
}

bool readsMemory(const Expr& e) {
  if (e->kind == ExprKind::Load) return true;
  return std::any_of(e->operands.begin(), e->operands.end(), [](const Expr& o) { return readsMemory(o); });
}

namespace {

/// Replaces every reference to one variable, past the subtrees that have none.
class VarSubstitution : public IRMutator {
 public:
  VarSubstitution(const Var& v, const Expr& value) : v_(v), value_(value) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return usesVar(e, v_) ? IRMutator::mutate(e) : e; }

 private:
  Expr visitVarRef(const Expr&) override { return value_; }

  const Var& v_;
  const Expr& value_;
};

}  // namespace

Expr substituteVar(const Expr& e, const Var& v, const Expr& value) { return VarSubstitution(v, value).mutate(e); }

std::optional<int64_t> strideIn(const Expr& e, const Var& v) {
  if (!usesVar(e, v)) return 0;
  if (e->kind == ExprKind::VarRef) return 1;
  if (e->kind != ExprKind::Binary || isFloatType(e->type)) return std::nullopt;
  std::optional<int64_t> a = strideIn(e->operands[0], v), b = strideIn(e->operands[1], v);
  if (!a || !b) return std::nullopt;
  int64_t c = 0;
  switch (e->binaryOp) {
    case BinaryOp::Add: return *a + *b;
    case BinaryOp::Sub: return *a - *b;
    case BinaryOp::Mul:
      if (*b == 0 && isIntConstant(e->operands[1], &c)) return *a * c;
      if (*a == 0 && isIntConstant(e->operands[0], &c)) return *b * c;
      return std::nullopt;
    default: return std::nullopt;
  }
}

bool isMultipleOf(const Expr& e, int64_t d) {
  int64_t c = 0;
  if (isIntConstant(e, &c)) return c % d == 0;
  if (e->kind != ExprKind::Binary || isFloatType(e->type)) return false;
  const Expr &a = e->operands[0], &b = e->operands[1];
  switch (e->binaryOp) {
    case BinaryOp::Add: case BinaryOp::Sub: return isMultipleOf(a, d) && isMultipleOf(b, d);
    case BinaryOp::Mul: return isMultipleOf(a, d) || isMultipleOf(b, d);
    case BinaryOp::FloorMod: return isMultipleOf(a, d) && isIntConstant(b, &c) && c % d == 0;
    default: return false;
  }
}

namespace {
Stmt makeStmt(StmtNode n) { return std::make_shared<const StmtNode>(std::move(n)); }
}  // namespace

Stmt forLoop(const Var& v, Expr extent, LoopKind kind, Stmt body) {
  StmtNode n = stmtNode(StmtKind::For);
  n.var = v;
  n.value = std::move(extent);
  n.loop = kind;
  n.body = {std::move(body)};
  return makeStmt(std::move(n));
}

Stmt store(const Buffer& b, Expr index, Expr value) {
  StmtNode n = stmtNode(StmtKind::Store);
  n.buffer = b;
  n.index = std::move(index);
  n.value = std::move(value);
  return makeStmt(std::move(n));
}

Stmt allocate(const Buffer& b, Stmt body) {
  StmtNode n = stmtNode(StmtKind::Allocate);
  n.buffer = b;
  n.body = {std::move(body)};
  return makeStmt(std::move(n));
}

Stmt let(const Var& v, Expr value, Stmt body) {
  StmtNode n = stmtNode(StmtKind::Let);
  n.var = v;
  n.value = std::move(value);
  n.body = {std::move(body)};
  return makeStmt(std::move(n));
}

Stmt ifThen(Expr cond, Stmt then, Stmt otherwise) {
  StmtNode n = stmtNode(StmtKind::If);
  n.value = std::move(cond);
  n.body = {std::move(then)};
  if (otherwise) n.body.push_back(std::move(otherwise));
  return makeStmt(std::move(n));
}

Stmt seq(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts.front();
  StmtNode n = stmtNode(StmtKind::Seq);
  n.body = std::move(stmts);
  return makeStmt(std::move(n));
}

Stmt barrier() { return makeStmt(stmtNode(StmtKind::Barrier)); }

Stmt mmaSync(MmaKind kind, const Buffer& acc, Expr accAt, const Buffer& a, Expr aAt, const Buffer& b, Expr bAt) {
  StmtNode n = stmtNode(StmtKind::Mma);
  n.mma = kind;
  n.buffer = acc;
  n.index = std::move(accAt);
  n.operands = {a, b};
  n.offsets = {std::move(aAt), std::move(bAt)};
  return makeStmt(std::move(n));
}

const char* mmaKindName(MmaKind k) {
  switch (k) {
    case MmaKind::F16_M16N8K16: return "m16n8k16.f16";
    case MmaKind::BF16_M16N8K16: return "m16n8k16.bf16";
    case MmaKind::TF32_M16N8K8: return "m16n8k8.tf32";
  }
  return "?";
}

MmaShape mmaShape(MmaKind k) {
  if (k == MmaKind::TF32_M16N8K8) return {16, 8, 8, 4, 2, 4};
  return {16, 8, 16, 8, 4, 4};
}

// The per-lane layouts of PTX's "Matrix Fragments for mma.m16n8k16 / m16n8k8"
// (group = lane / 4, member = lane % 4).
std::pair<int64_t, int64_t> mmaFragmentA(MmaKind k, int64_t lane, int64_t i) {
  const int64_t group = lane / 4, member = lane % 4;
  if (k == MmaKind::TF32_M16N8K8) return {group + (i % 2) * 8, member + (i / 2) * 4};
  return {group + (i / 2 % 2) * 8, member * 2 + i % 2 + (i / 4) * 8};
}

std::pair<int64_t, int64_t> mmaFragmentB(MmaKind k, int64_t lane, int64_t i) {
  const int64_t group = lane / 4, member = lane % 4;
  if (k == MmaKind::TF32_M16N8K8) return {member + i * 4, group};
  return {member * 2 + i % 2 + (i / 2) * 8, group};
}

std::pair<int64_t, int64_t> mmaFragmentC(MmaKind, int64_t lane, int64_t i) {
  const int64_t group = lane / 4, member = lane % 4;
  return {group + (i / 2) * 8, member * 2 + i % 2};
}

}  // namespace kiln::codegen
