//===- kiln/codegen/KernelIR.h - The loop-level kernel IR ---------*- C++ -*-===//
//
// What schedule templates produce and what the targets consume: one kernel is
// a list of global buffer parameters and a statement tree of loops (serial,
// parallel, vectorized, unrolled, or bound to GPU blocks/threads), stores,
// buffer allocations in local or shared memory, lets, conditionals,
// barriers and warp-wide tensor-core multiply-accumulates (mma). Expressions are immutable trees over scalar types: constants,
// loop variables (always i64), loads (flat element index), arithmetic,
// comparisons, math calls, select, cast and warp shuffles. Buffers are flat arrays; templates
// compute the flat indices. Builders fold constants so printed kernels stay
// readable. The printer's form is what FileCheck tests read; the verifier
// (KernelVerifier.cpp) states the rules.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/DType.h"
#include "kiln/support/Status.h"

namespace kiln::codegen {

/// Scalar types of kernel values; f16/bf16 exist only in memory and are
/// computed in f32 (loads widen, stores narrow).
enum class ScalarType : uint8_t { Bool, I8, U8, I32, I64, F16, BF16, F32, F64 };
const char* scalarTypeName(ScalarType t);
bool isFloatType(ScalarType t);
size_t scalarTypeSize(ScalarType t);
/// The scalar type that stores a tensor dtype; errors for types kernels cannot hold.
Expected<ScalarType> scalarTypeOf(DType dtype);
/// The tensor dtype a scalar type stores as.
DType dtypeOfScalar(ScalarType t);
/// The type arithmetic on a loaded value happens in (f16/bf16 -> f32).
ScalarType computeType(ScalarType t);

enum class MemoryScope : uint8_t { Global, Shared, Local };
const char* memoryScopeName(MemoryScope s);

struct BufferDecl {
  std::string name;
  ScalarType type;
  MemoryScope scope;
  int64_t size;  ///< elements
};
using Buffer = std::shared_ptr<const BufferDecl>;
Buffer makeBuffer(std::string name, ScalarType type, MemoryScope scope, int64_t size);

/// A loop or let variable (i64).
struct VarDecl {
  std::string name;
};
using Var = std::shared_ptr<const VarDecl>;
Var makeVar(std::string name);

enum class ExprKind : uint8_t { IntImm, FloatImm, VarRef, Load, Binary, Unary, Select, Cast, ShuffleXor };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, FloorMod, Min, Max, Pow, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
enum class UnaryOp : uint8_t {
  Neg, Not, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Floor, Ceil, Round, Sin, Cos, Reciprocal, IsNan,
  /// f32 only: floor(log2 |x|) read from the exponent field, as an f32 (-127
  /// for zero and subnormals, 128 for inf and NaN).
  Ilogb,
  /// f32 only: 2^n, exactly, for an integral n in [-126, 127].
  Exp2i,
};
const char* binaryOpName(BinaryOp op);
const char* unaryOpName(UnaryOp op);

struct ExprNode;
/// An immutable expression tree (shared, never modified after construction).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }
  explicit operator bool() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::IntImm;
  ScalarType type = ScalarType::I64;
  int64_t intValue = 0;     ///< IntImm (also Bool 0/1)
  double floatValue = 0;    ///< FloatImm
  Var var;                  ///< VarRef
  Buffer buffer;            ///< Load
  BinaryOp binaryOp = BinaryOp::Add;
  UnaryOp unaryOp = UnaryOp::Neg;
  std::vector<Expr> operands;  ///< Load: index; Binary: a, b; Unary/Cast: a; Select: cond, a, b; ShuffleXor: a, lane mask
};

// Builders (constant-folding where both sides are constants or identities apply).
Expr intImm(int64_t v, ScalarType t = ScalarType::I64);
Expr floatImm(double v, ScalarType t = ScalarType::F32);
Expr boolImm(bool v);
Expr varRef(const Var& v);
Expr load(const Buffer& b, Expr index);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr unary(UnaryOp op, Expr a);
Expr select(Expr cond, Expr a, Expr b);
Expr cast(ScalarType t, Expr a);
/// GPU: `a` as computed by the lane whose index is this lane's xor `laneMask`
/// (a warp shuffle; every lane of the warp must evaluate it).
Expr shuffleXor(Expr a, int64_t laneMask);
/// A constant of type t (int or float).
Expr constantOf(ScalarType t, double v);
/// The largest (or smallest) value of type t: +-inf for floats, the integer limits otherwise.
Expr extremeOf(ScalarType t, bool largest);
bool isIntConstant(const Expr& e, int64_t* value = nullptr);
/// Whether an integer expression is provably >= 0: constants, loop and let
/// variables (loops count up from 0; templates bind lets to indices), and
/// sums, products, min/max, floor divisions and modulos of such.
bool isNonNegative(const Expr& e);
bool isConstant(const Expr& e);
/// `e` with every reference to `v` replaced by `value` (rebuilt with the folding builders).
Expr substituteVar(const Expr& e, const Var& v, const Expr& value);
/// Whether `e` refers to `v`.
bool usesVar(const Expr& e, const Var& v);
/// Whether `e` loads from a buffer.
bool readsMemory(const Expr& e);
/// The coefficient c when the integer expression `e` is `base + c * v` with
/// `base` free of `v` (sums, differences and constant multiples); nullopt otherwise.
std::optional<int64_t> strideIn(const Expr& e, const Var& v);
/// Whether the integer expression `e` is provably a multiple of `d` (> 0):
/// constants, products with such a factor, sums and differences of such,
/// and floor-modulos of such by a multiple of d.
bool isMultipleOf(const Expr& e, int64_t d);
/// An integer expression as sum(coefficient x term) + constant.
struct LinearForm {
  std::vector<std::pair<int64_t, Expr>> terms;
  int64_t constant = 0;
};
/// Adds k x e to `out`, splitting sums, differences and products by a
/// constant; any other expression (or a product whose coefficient would
/// overflow) is a term. `constantOf` says what is constant (default: integer
/// literals). False, with `out` unusable, when the constant overflows.
bool addLinear(const Expr& e, int64_t k, LinearForm& out,
               const std::function<bool(const Expr&, int64_t*)>& constantOf = nullptr);

inline Expr operator+(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
inline Expr operator-(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
inline Expr operator*(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
inline Expr operator/(Expr a, Expr b) { return binary(BinaryOp::Div, std::move(a), std::move(b)); }
inline Expr operator+(Expr a, int64_t b) { return std::move(a) + intImm(b); }
inline Expr operator*(Expr a, int64_t b) { return std::move(a) * intImm(b); }
inline Expr operator-(Expr a, int64_t b) { return std::move(a) - intImm(b); }
inline Expr floorDiv(Expr a, int64_t b) { return binary(BinaryOp::FloorDiv, std::move(a), intImm(b)); }
inline Expr floorMod(Expr a, int64_t b) { return binary(BinaryOp::FloorMod, std::move(a), intImm(b)); }
inline Expr minOf(Expr a, Expr b) { return binary(BinaryOp::Min, std::move(a), std::move(b)); }
inline Expr maxOf(Expr a, Expr b) { return binary(BinaryOp::Max, std::move(a), std::move(b)); }

enum class StmtKind : uint8_t { For, Store, Allocate, Let, If, Seq, Barrier, Mma };

/// A tensor-core instruction shape and input type (PTX mma.sync, sm_80+):
/// each lane of a warp holds fragments of A (m x k, row-major), B (k x n,
/// column-major) and the f32 accumulator C (m x n) in the per-lane layout
/// PTX documents (mmaFragmentA/B/C give it as data).
enum class MmaKind : uint8_t {
  F16_M16N8K16,   ///< f16 inputs, 16x8x16
  BF16_M16N8K16,  ///< bf16 inputs, 16x8x16
  TF32_M16N8K8,   ///< tf32 inputs (f32 rounded to 10 mantissa bits), 16x8x8
};
const char* mmaKindName(MmaKind k);
struct MmaShape {
  int64_t m, n, k;
  int64_t aElements, bElements, cElements;  ///< per lane
};
MmaShape mmaShape(MmaKind k);
/// (row, column) of the i-th element lane `lane` holds of A, B or C.
std::pair<int64_t, int64_t> mmaFragmentA(MmaKind k, int64_t lane, int64_t i);
std::pair<int64_t, int64_t> mmaFragmentB(MmaKind k, int64_t lane, int64_t i);
std::pair<int64_t, int64_t> mmaFragmentC(MmaKind k, int64_t lane, int64_t i);
enum class LoopKind : uint8_t {
  Serial, Parallel, Vectorized, Unrolled, BlockX, BlockY, BlockZ, ThreadX, ThreadY, ThreadZ
};
const char* loopKindName(LoopKind k);
bool isGpuBinding(LoopKind k);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind = StmtKind::Seq;
  Var var;              ///< For (loop variable), Let
  Expr value;           ///< For: extent (the loop runs var = 0 .. extent-1); Store: value; Let: value; If: cond
  Expr index;           ///< Store
  Buffer buffer;        ///< Store, Allocate
  LoopKind loop = LoopKind::Serial;
  std::vector<Stmt> body;  ///< For/Allocate/Let: {body}; If: {then} or {then, else}; Seq: the statements
  /// Mma: buffer/index are the f32 accumulator fragment (local) and its first
  /// element; operands holds A's and B's fragment buffers (local f32), offsets their first elements.
  MmaKind mma = MmaKind::F16_M16N8K16;
  std::vector<Buffer> operands;
  std::vector<Expr> offsets;
};

Stmt forLoop(const Var& v, Expr extent, LoopKind kind, Stmt body);
Stmt store(const Buffer& b, Expr index, Expr value);
Stmt allocate(const Buffer& b, Stmt body);
Stmt let(const Var& v, Expr value, Stmt body);
Stmt ifThen(Expr cond, Stmt then, Stmt otherwise = nullptr);
Stmt seq(std::vector<Stmt> stmts);
Stmt barrier();
/// acc[accAt ..] += a[aAt ..] x b[bAt ..] across the warp (every lane runs it).
Stmt mmaSync(MmaKind kind, const Buffer& acc, Expr accAt, const Buffer& a, Expr aAt, const Buffer& b, Expr bAt);
/// `body` with the floor divisions and remainders of its integer
/// expressions removed where the loops' and lets' ranges make them exact
/// (floordiv(q * c + r, c) -> q, floormod(q * c + r, c) -> r for 0 <= r < c;
/// nested divisions merged): reshaped indices become affine again.
Stmt simplifyIndices(const Stmt& body);

/// Which kind of machine a kernel is scheduled for (what the verifier allows).
enum class KernelTarget : uint8_t { Cpu, Gpu };

/// An i64 scalar each launch of a kernel passes after its buffers (a dynamic
/// dim's value in that run), in [0, max].
struct RunTimeExtent {
  Var var;
  int64_t max = 0;
};

/// One kernel: global buffers in parameter order, its run-time extents and
/// its body. Loop extents, indices and guards may refer to the run-time
/// extents; a buffer's size is then its capacity (the most elements any
/// launch touches).
struct Kernel {
  std::string name;
  KernelTarget target = KernelTarget::Cpu;
  std::vector<Buffer> params;
  Stmt body;
  std::vector<RunTimeExtent> extents = {};
};

/// The largest value the integer expression `e` takes over the run-time
/// extents of `k` (each in [0, max]): nullopt unless `e` is built from
/// constants and those extents by sums, products of non-negative terms,
/// floor divisions by a positive constant, min and max (it grows with each
/// extent, so its value at the maxima bounds it).
std::optional<int64_t> extentUpperBound(const Expr& e, const Kernel& k);

/// Text form (run-time extents follow the buffers as `i64 %n`), e.g.
///   kernel @add_relu(global f32 %a[16], global f32 %out[16]) target=cpu {
///     parallel for %i in 16 { %out[%i] = max(%a[%i], 0.0f) }
///   }
std::string printKernel(const Kernel& k);
/// printKernel's text without the kernel's name and with its parameters
/// renamed p0, p1, ... (run-time extents e0, e1, ...): equal for kernels
/// that compute the same thing (the compiler shares their code; the tuner's
/// kernel signatures hash it).
std::string kernelBodyKey(const Kernel& k);
std::string printExpr(const Expr& e);

/// Checks the rules in KernelVerifier.cpp; the error names the kernel.
Status verifyKernel(const Kernel& k);

}  // namespace kiln::codegen
