//===- lib/codegen/cuda/CudaEmitter.cpp - Kernel IR to CUDA C -------------===//
//
// Prints a GPU-scheduled kernel as one CUDA C translation unit: a prelude of
// helpers, then an `extern "C" __global__` entry whose parameters are the
// kernel's buffers (read-only ones `const T* __restrict__`). Bound loops
// become blockIdx/threadIdx (a thread loop shorter than the block is
// guarded), unrolled and vectorized loops `#pragma unroll` loops (4-lane
// aligned unit-stride f32/i32 accesses as float4/int4), local and shared
// buffers arrays, barriers `__syncthreads()`. f16 and bf16 buffers hold their
// bits; loads widen to float, stores round to nearest even. A subexpression
// used more than once in a statement is computed once into a `const`
// temporary. Arithmetic follows the CPU emitter. Only the C subset that the
// emulation harness (tests/emulation) also compiles is used, except behind
// __CUDA_ARCH__ (f16/bf16 conversions) or KILN_EMULATED_MMA (tensor cores).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "kiln/codegen/cuda/CudaEmitter.h"

namespace kiln::codegen {
namespace {

constexpr const char* kPrelude = R"(// kiln helpers (guarded: several kernels may share a translation unit)
#ifndef KILN_CUDA_HELPERS
#define KILN_CUDA_HELPERS
template <class T> __device__ __forceinline__ T kiln_floordiv(T a, T b) {
  T q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> __device__ __forceinline__ T kiln_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T> __device__ __forceinline__ T kiln_min(T a, T b) { return b < a ? b : a; }
template <class T> __device__ __forceinline__ T kiln_max(T a, T b) { return a < b ? b : a; }
template <class T> __device__ __forceinline__ T kiln_fmin(T a, T b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class T> __device__ __forceinline__ T kiln_fmax(T a, T b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? b : a;
  return a < b ? b : a;
}
#define KILN_INF_F __int_as_float(0x7f800000)
#define KILN_NAN_F __int_as_float(0x7fc00000)
#define KILN_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define KILN_NAN_D __longlong_as_double(0x7ff8000000000000LL)
// f16 / bf16 live in memory as their bits (unsigned short) and are computed
// in f32: loads widen exactly, stores round to nearest even (as the CPU target).
__device__ __forceinline__ float kiln_f16_to_f32(unsigned short h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // one instruction on the GPU, the same bits
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  const float subnormal = (float)mantissa * 5.9604644775390625e-8f;  // mantissa * 2^-24
  return sign ? -subnormal : subnormal;
#endif
}
__device__ __forceinline__ unsigned short kiln_f32_to_f16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const unsigned bits = __float_as_uint(f), sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);             // NaN
  if (magnitude >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);            // rounds to infinity
  if (magnitude < 0x38800000u)                                                      // subnormal or zero
    return (unsigned short)(sign | (unsigned)rintf(__uint_as_float(magnitude) * 16777216.0f));
  const unsigned rebased = magnitude - 0x38000000u;                                 // exponent 127 -> 15 bias
  return (unsigned short)(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13));
#endif
}
__device__ __forceinline__ float kiln_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short kiln_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const unsigned bits = __float_as_uint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40u);  // quiet NaN
  return (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
#endif
}
#endif
)";

/// Tensor-core helpers, emitted only into kernels that use them: one PTX
/// mma.sync per call, its operands packed from the fragments' floats
/// (rounded to the input type). The emulation harness defines
/// KILN_EMULATED_MMA and its own implementation of the same per-lane contract.
constexpr const char* kMmaPrelude = R"(// kiln tensor-core helpers (sm_80 and newer)
#ifndef KILN_MMA_HELPERS
#define KILN_MMA_HELPERS
#ifndef KILN_EMULATED_MMA
__device__ __forceinline__ unsigned kiln_pack_f16x2(float lo, float hi) {  // hi in the upper half
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned kiln_pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned kiln_to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void kiln_mma_m16n8k16_f16(float* c, const float* a, const float* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(kiln_pack_f16x2(a[0], a[1])), "r"(kiln_pack_f16x2(a[2], a[3])), "r"(kiln_pack_f16x2(a[4], a[5])),
                 "r"(kiln_pack_f16x2(a[6], a[7])), "r"(kiln_pack_f16x2(b[0], b[1])), "r"(kiln_pack_f16x2(b[2], b[3])));
}
__device__ __forceinline__ void kiln_mma_m16n8k16_bf16(float* c, const float* a, const float* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(kiln_pack_bf16x2(a[0], a[1])), "r"(kiln_pack_bf16x2(a[2], a[3])), "r"(kiln_pack_bf16x2(a[4], a[5])),
                 "r"(kiln_pack_bf16x2(a[6], a[7])), "r"(kiln_pack_bf16x2(b[0], b[1])), "r"(kiln_pack_bf16x2(b[2], b[3])));
}
__device__ __forceinline__ void kiln_mma_m16n8k8_tf32(float* c, const float* a, const float* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(kiln_to_tf32(a[0])), "r"(kiln_to_tf32(a[1])), "r"(kiln_to_tf32(a[2])), "r"(kiln_to_tf32(a[3])),
                 "r"(kiln_to_tf32(b[0])), "r"(kiln_to_tf32(b[1])));
}
#endif
#endif
)";

/// The prelude helper of an mma kind: kiln_mma_<shape>_<input type>.
std::string mmaHelper(MmaKind k) {
  std::string name = std::string("kiln_mma_") + mmaKindName(k);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

const std::set<std::string>& reservedWords() {
  static const std::set<std::string> words{
      "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
      "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
      "class", "delete", "new", "namespace", "template", "this", "private", "public", "true", "false", "half",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "float4", "min", "max"};
  return words;
}

/// The C type of a value of type t: f16 and bf16 values are computed in float.
Expected<std::string> cType(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return std::string("bool");
    case ScalarType::I8: return std::string("signed char");
    case ScalarType::U8: return std::string("unsigned char");
    case ScalarType::I32: return std::string("int");
    case ScalarType::I64: return std::string("long long");
    case ScalarType::F32: return std::string("float");
    case ScalarType::F64: return std::string("double");
    case ScalarType::F16: case ScalarType::BF16: return std::string("float");
  }
  return makeError(ErrorCode::CodegenUnsupported, "CUDA target: ", scalarTypeName(t), " has no CUDA C type");
}

bool isHalfType(ScalarType t) { return t == ScalarType::F16 || t == ScalarType::BF16; }

/// The C type of a buffer element of type t: 16-bit floats are stored as their bits.
Expected<std::string> memoryCType(ScalarType t) {
  if (isHalfType(t)) return std::string("unsigned short");
  return cType(t);
}

/// A value of type t read from memory as `text`, and a value stored to memory of type t.
std::string widened(ScalarType t, const std::string& text) {
  if (!isHalfType(t)) return text;
  return std::string(t == ScalarType::F16 ? "kiln_f16_to_f32(" : "kiln_bf16_to_f32(") + text + ")";
}
std::string narrowed(ScalarType t, const std::string& text) {
  if (!isHalfType(t)) return text;
  return std::string(t == ScalarType::F16 ? "kiln_f32_to_f16(" : "kiln_f32_to_bf16(") + "(float)" + text + ")";
}

bool isThreadBinding(LoopKind k) { return k == LoopKind::ThreadX || k == LoopKind::ThreadY || k == LoopKind::ThreadZ; }
int bindingAxis(LoopKind k) {
  switch (k) {
    case LoopKind::BlockY: case LoopKind::ThreadY: return 1;
    case LoopKind::BlockZ: case LoopKind::ThreadZ: return 2;
    default: return 0;
  }
}

class CudaEmitter {
 public:
  explicit CudaEmitter(const Kernel& k) : kernel_(k) {}

  Expected<CudaKernel> run(const std::string& description) {
    if (kernel_.target != KernelTarget::Gpu)
      return fail("is scheduled for the CPU; the CUDA target needs a GPU schedule");
    KILN_TRY(verifyKernel(kernel_));
    KILN_TRY(collectLaunch(kernel_.body, false, false));
    int64_t threads = out_.block[0] * out_.block[1] * out_.block[2];
    if (threads > 1024) return fail("has " + std::to_string(threads) + " threads per block (at most 1024)");
    if (out_.grid[1] > 65535 || out_.grid[2] > 65535 || out_.grid[0] > 2147483647)
      return fail("has a grid beyond CUDA's limits");
    // Names: buffers keep theirs unless reserved; variables avoid buffer names.
    std::set<std::string> taken;
    auto unique = [&](std::string name) {
      if (reservedWords().count(name) || name.rfind("kiln_", 0) == 0 || name.rfind("__", 0) == 0 || name.empty())
        name += "_";
      while (taken.count(name)) name += "_";
      taken.insert(name);
      return name;
    };
    std::set<const BufferDecl*> written;
    collectWritten(kernel_.body, written);
    std::ostringstream params;
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      const Buffer& b = kernel_.params[i];
      KILN_ASSIGN(std::string t, memoryCType(b->type));
      std::string type = (written.count(b.get()) ? "" : "const ") + t + "*";
      bufferNames_[b.get()] = unique(b->name);
      out_.paramTypes.push_back(type);
      params << (i ? ",\n    " : "") << type << " __restrict__ " << bufferNames_[b.get()];
    }
    for (size_t i = 0; i < kernel_.extents.size(); ++i) {
      const Var& v = kernel_.extents[i].var;
      varNames_[v.get()] = unique(v->name);
      out_.paramTypes.push_back("long long");
      params << (i || !kernel_.params.empty() ? ",\n    " : "") << "const long long " << varNames_[v.get()];
    }
    reserved_ = taken;
    std::ostringstream body;
    KILN_TRY(stmt(body, kernel_.body, 1));
    std::ostringstream src;
    src << "// " << kernel_.name << (description.empty() ? "" : ": " + description) << "\n"
        << "// Generated by kiln from kernel IR. Launch: grid (" << out_.grid[0] << ", " << out_.grid[1] << ", "
        << out_.grid[2] << "), block (" << out_.block[0] << ", " << out_.block[1] << ", " << out_.block[2] << ").\n"
        << kPrelude << (usesMma(kernel_.body) ? kMmaPrelude : "") << "\n"
        << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << kernel_.name << "(\n    "
        << params.str() << ") {\n"
        << body.str() << "}\n";
    out_.name = kernel_.name;
    out_.source = src.str();
    return std::move(out_);
  }

 private:
  Error fail(const std::string& what) const {
    return makeError(ErrorCode::CodegenUnsupported, "CUDA kernel ", kernel_.name, " ", what);
  }

  /// Grid and block extents from the bound loops (one extent per block axis;
  /// the largest per thread axis), and where stores may stand.
  Status collectLaunch(const Stmt& s, bool inBlock, bool inThread) {
    switch (s->kind) {
      case StmtKind::For: {
        int64_t extent = 0;
        if (isThreadBinding(s->loop) && !isIntConstant(s->value, &extent))
          return fail("binds a thread loop of non-constant extent");
        if (isGpuBinding(s->loop) && !isThreadBinding(s->loop)) {
          // A block loop over run-time extents launches blocks for their
          // maxima; the blocks past this launch's extent return at once.
          std::optional<int64_t> bound = extentUpperBound(s->value, kernel_);
          if (!bound) return fail("binds block loop %" + s->var->name + " whose extent has no upper bound");
          extent = *bound;
          if (inThread) return fail("binds block loop %" + s->var->name + " inside a thread loop");
          int64_t& g = out_.grid[size_t(bindingAxis(s->loop))];
          if (gridSet_[size_t(bindingAxis(s->loop))] && g != extent)
            return fail("binds two block loops of one axis with different extents");
          g = extent;
          gridSet_[size_t(bindingAxis(s->loop))] = true;
          return collectLaunch(s->body[0], true, inThread);
        }
        if (isThreadBinding(s->loop)) {
          if (!inBlock) return fail("binds thread loop %" + s->var->name + " outside the block loops");
          int64_t& b = out_.block[size_t(bindingAxis(s->loop))];
          b = std::max(b, extent);
          return collectLaunch(s->body[0], inBlock, true);
        }
        return collectLaunch(s->body[0], inBlock, inThread);
      }
      case StmtKind::Store:
        if (!inThread && s->buffer->scope != MemoryScope::Local) return fail("stores to %" + s->buffer->name + " outside the thread loops");
        return Status::ok();
      default:
        for (const Stmt& c : s->body)
          if (c) KILN_TRY(collectLaunch(c, inBlock, inThread));
        return Status::ok();
    }
  }

  static void collectWritten(const Stmt& s, std::set<const BufferDecl*>& out) {
    if (!s) return;
    if (s->kind == StmtKind::Store) out.insert(s->buffer.get());
    for (const Stmt& c : s->body) collectWritten(c, out);
  }

  // --- expressions --------------------------------------------------------

  void countUses(const Expr& e) {
    if (++uses_[e.get()] > 1) return;
    for (const Expr& o : e->operands) countUses(o);
  }

  /// Prints the statement's expressions after declaring shared subtrees.
  Expected<std::vector<std::string>> exprs(std::ostream& os, const std::string& pad, const std::vector<Expr>& roots) {
    uses_.clear();
    temps_.clear();
    for (const Expr& r : roots) countUses(r);
    std::vector<std::string> texts;
    for (const Expr& r : roots) {
      KILN_ASSIGN(std::string t, expr(os, pad, r));
      texts.push_back(std::move(t));
    }
    return texts;
  }

  Expected<std::string> expr(std::ostream& os, const std::string& pad, const Expr& e) {
    if (auto it = temps_.find(e.get()); it != temps_.end()) return it->second;
    if (auto it = vectorLoads_.find(e.get()); it != vectorLoads_.end()) return it->second;
    KILN_ASSIGN(std::string text, exprText(os, pad, e));
    bool trivial = e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm || e->kind == ExprKind::VarRef;
    if (trivial || uses_[e.get()] < 2) return text;
    KILN_ASSIGN(std::string t, cType(e->type));
    std::string name = "kiln_t" + std::to_string(nextTemp_++);
    os << pad << "const " << t << " " << name << " = " << text << ";\n";
    temps_[e.get()] = name;
    return name;
  }

  Expected<std::string> constant(const Expr& e) {
    if (e->kind == ExprKind::IntImm) {
      switch (e->type) {
        case ScalarType::Bool: return std::string(e->intValue ? "true" : "false");
        case ScalarType::I64:
          if (e->intValue == INT64_MIN) return std::string("(-9223372036854775807LL - 1)");
          return std::to_string(e->intValue) + "LL";
        case ScalarType::I32: return e->intValue == INT32_MIN ? std::string("(-2147483647 - 1)") : std::to_string(e->intValue);
        default: {
          KILN_ASSIGN(std::string t, cType(e->type));
          return "((" + t + ")" + std::to_string(e->intValue) + ")";
        }
      }
    }
    const bool f32 = e->type != ScalarType::F64;
    double v = e->floatValue;
    if (std::isnan(v)) return std::string(f32 ? "KILN_NAN_F" : "KILN_NAN_D");
    if (std::isinf(v)) return std::string(v > 0 ? "" : "-") + (f32 ? "KILN_INF_F" : "KILN_INF_D");
    char buf[40];
    std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return "(" + s + (f32 ? "f" : "") + ")";
  }

  static std::string mathName(const char* base, ScalarType t) { return std::string(base) + (t == ScalarType::F64 ? "" : "f"); }

  Expected<std::string> exprText(std::ostream& os, const std::string& pad, const Expr& e) {
    std::vector<std::string> a;
    if (e->kind != ExprKind::IntImm && e->kind != ExprKind::FloatImm && e->kind != ExprKind::VarRef)
      for (const Expr& o : e->operands) {
        KILN_ASSIGN(std::string s, expr(os, pad, o));
        a.push_back(std::move(s));
      }
    switch (e->kind) {
      case ExprKind::IntImm: case ExprKind::FloatImm: return constant(e);
      case ExprKind::VarRef: {
        auto it = varNames_.find(e->var.get());
        if (it == varNames_.end()) return fail("uses %" + e->var->name + " outside its loop");
        return it->second;
      }
      case ExprKind::Load: return widened(e->buffer->type, buffer(e->buffer) + "[" + a[0] + "]");
      case ExprKind::Binary: return binaryText(*e, a[0], a[1]);
      case ExprKind::Unary: return unaryText(*e, a[0]);
      case ExprKind::Select: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
      case ExprKind::ShuffleXor: return "__shfl_xor_sync(0xffffffffu, " + a[0] + ", " + a[1] + ")";
      case ExprKind::Cast: {
        if (e->type == ScalarType::Bool) return "(" + a[0] + " != 0)";
        KILN_ASSIGN(std::string t, cType(e->type));
        return "((" + t + ")" + a[0] + ")";
      }
    }
    return fail("has an expression the CUDA emitter does not know");
  }

  Expected<std::string> binaryText(const ExprNode& e, const std::string& a, const std::string& b) {
    const ScalarType t = e.operands[0]->type;
    const bool fl = isFloatType(t), boolean = t == ScalarType::Bool;
    auto infix = [&](const char* op) { return "(" + a + " " + op + " " + b + ")"; };
    // Narrow integer arithmetic wraps at its width, as in the CPU emitter.
    auto wrapped = [&](std::string s) -> Expected<std::string> {
      if (t != ScalarType::I8 && t != ScalarType::U8) return s;
      KILN_ASSIGN(std::string ct, cType(t));
      return "((" + ct + ")" + s + ")";
    };
    switch (e.binaryOp) {
      case BinaryOp::Add: return wrapped(infix("+"));
      case BinaryOp::Sub: return wrapped(infix("-"));
      case BinaryOp::Mul: return wrapped(infix("*"));
      case BinaryOp::Div: return wrapped(infix("/"));
      case BinaryOp::FloorDiv: case BinaryOp::FloorMod: {
        const bool div = e.binaryOp == BinaryOp::FloorDiv;
        if (fl) {
          std::string q = mathName("floor", t) + "(" + a + " / " + b + ")";
          return div ? q : "(" + a + " - " + q + " * " + b + ")";
        }
        int64_t divisor = 0;
        if (isNonNegative(e.operands[0]) && isIntConstant(e.operands[1], &divisor) && divisor > 0)
          return infix(div ? "/" : "%");
        return std::string(div ? "kiln_floordiv(" : "kiln_floormod(") + a + ", " + b + ")";
      }
      case BinaryOp::Min: return std::string(fl ? "kiln_fmin(" : "kiln_min(") + a + ", " + b + ")";
      case BinaryOp::Max: return std::string(fl ? "kiln_fmax(" : "kiln_max(") + a + ", " + b + ")";
      case BinaryOp::Pow: {
        if (fl) return mathName("pow", t) + "(" + a + ", " + b + ")";
        KILN_ASSIGN(std::string ct, cType(t));
        return "((" + ct + ")pow((double)" + a + ", (double)" + b + "))";
      }
      case BinaryOp::Lt: return infix("<");
      case BinaryOp::Le: return infix("<=");
      case BinaryOp::Gt: return infix(">");
      case BinaryOp::Ge: return infix(">=");
      case BinaryOp::Eq: return infix("==");
      case BinaryOp::Ne: return infix("!=");
      case BinaryOp::And: return boolean ? infix("&&") : wrapped(infix("&"));
      case BinaryOp::Or: return boolean ? infix("||") : wrapped(infix("|"));
    }
    return fail("has a binary operator the CUDA emitter does not know");
  }

  Expected<std::string> unaryText(const ExprNode& e, const std::string& x) {
    const ScalarType t = e.operands[0]->type;
    const bool fl = isFloatType(t);
    const std::string one = t == ScalarType::F64 ? "1.0" : "1.0f";
    auto call = [&](const char* base) { return mathName(base, t) + "(" + x + ")"; };
    switch (e.unaryOp) {
      case UnaryOp::Neg: return "(-" + x + ")";
      case UnaryOp::Not: return t == ScalarType::Bool ? "(!" + x + ")" : "(~" + x + ")";
      case UnaryOp::Abs: return fl ? call("fabs") : "(" + x + " < 0 ? -" + x + " : " + x + ")";
      case UnaryOp::Exp: return call("exp");
      case UnaryOp::Log: return call("log");
      case UnaryOp::Sqrt: return call("sqrt");
      case UnaryOp::Rsqrt: return "(" + one + " / " + call("sqrt") + ")";
      case UnaryOp::Tanh: return call("tanh");
      case UnaryOp::Erf: return call("erf");
      case UnaryOp::Sigmoid: return "(" + one + " / (" + one + " + " + mathName("exp", t) + "(-" + x + ")))";
      case UnaryOp::Floor: return call("floor");
      case UnaryOp::Ceil: return call("ceil");
      case UnaryOp::Round: return call("rint");
      case UnaryOp::Sin: return call("sin");
      case UnaryOp::Cos: return call("cos");
      case UnaryOp::Reciprocal: return "(" + one + " / " + x + ")";
      case UnaryOp::IsNan: return "isnan(" + x + ")";
      case UnaryOp::Ilogb: return "((float)(int)((__float_as_uint(" + x + ") >> 23) & 0xffu) - 127.0f)";
      case UnaryOp::Exp2i: return "__int_as_float(((int)(" + x + ") + 127) << 23)";
    }
    return fail("has a unary operator the CUDA emitter does not know");
  }

  std::string buffer(const Buffer& b) {
    auto it = bufferNames_.find(b.get());
    return it == bufferNames_.end() ? b->name : it->second;
  }

  /// A variable's C name: its own unless that is reserved or a buffer's.
  std::string newName(const std::string& base) {
    std::string name = base;
    if (reservedWords().count(name) || name.rfind("kiln_", 0) == 0 || name.rfind("__", 0) == 0) name = "v_" + name;
    while (reserved_.count(name)) name += "_";
    varNamesUsed_.insert(name);
    return name;
  }

  // --- statements ---------------------------------------------------------

  Status stmt(std::ostream& os, const Stmt& s, int indent) {
    const std::string pad(size_t(indent) * 2, ' ');
    switch (s->kind) {
      case StmtKind::For: {
        std::string name = newName(s->var->name);
        KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->value}));
        varNames_[s->var.get()] = name;
        if (isGpuBinding(s->loop)) {
          const char* axis[] = {"x", "y", "z"};
          const int ax = bindingAxis(s->loop);
          const bool thread = isThreadBinding(s->loop);
          os << pad << "{  // " << loopKindName(s->loop) << " loop\n"
             << pad << "  const long long " << name << " = " << (thread ? "threadIdx." : "blockIdx.") << axis[ax] << ";\n";
          int64_t extent = 0;
          const bool constant = isIntConstant(s->value, &extent);
          bool guarded = thread && extent < out_.block[size_t(ax)];
          if (!thread && !constant) {
            os << pad << "  if (" << name << " < " << e[0] << ") {\n";
            KILN_TRY(stmt(os, s->body[0], indent + 2));
            os << pad << "  }\n";
          } else if (guarded) {
            if (hasBarrier(s->body[0])) return fail("has a barrier inside thread loop %" + s->var->name + ", which not every thread runs");
            if (usesMma(s->body[0])) return fail("has an mma inside thread loop %" + s->var->name + ", which not every lane runs");
            os << pad << "  if (" << name << " < " << extent << "LL) {\n";
            KILN_TRY(stmt(os, s->body[0], indent + 2));
            os << pad << "  }\n";
          } else {
            KILN_TRY(stmt(os, s->body[0], indent + 1));
          }
          os << pad << "}\n";
          return Status::ok();
        }
        if (s->loop == LoopKind::Parallel) return fail("has a parallel loop (a CPU schedule)");
        VectorAccesses vector;
        if (s->loop == LoopKind::Vectorized) {
          KILN_ASSIGN(vector, beginVectorLoop(os, s, pad, name));
        }
        const std::string loopPad = vector.open ? pad + "  " : pad;
        if (s->loop == LoopKind::Unrolled || s->loop == LoopKind::Vectorized) os << loopPad << "#pragma unroll\n";
        os << loopPad << "for (long long " << name << " = 0; " << name << " < " << e[0] << "; ++" << name << ") {\n";
        KILN_TRY(stmt(os, s->body[0], indent + (vector.open ? 2 : 1)));
        os << loopPad << "}\n";
        if (vector.open) KILN_TRY(endVectorLoop(os, s, pad, vector));
        return Status::ok();
      }
      case StmtKind::Store: {
        if (auto it = vectorStores_.find(s.get()); it != vectorStores_.end()) {
          KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->value}));
          os << pad << it->second << " = " << e[0] << ";\n";
          return Status::ok();
        }
        KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->index, s->value}));
        os << pad << buffer(s->buffer) << "[" << e[0] << "] = " << narrowed(s->buffer->type, e[1]) << ";\n";
        return Status::ok();
      }
      case StmtKind::Allocate: {
        const Buffer& b = s->buffer;
        KILN_ASSIGN(std::string t, memoryCType(b->type));
        std::string name = b->name;
        if (reservedWords().count(name) || name.rfind("kiln_", 0) == 0 || name.rfind("__", 0) == 0) name += "_";
        while (reserved_.count(name) || varNamesUsed_.count(name)) name += "_";
        reserved_.insert(name);
        bufferNames_[b.get()] = name;
        bool shared = b->scope == MemoryScope::Shared;
        if (shared) out_.sharedBytes += b->size * int64_t(scalarTypeSize(b->type));
        os << pad << "{\n" << pad << "  " << (shared ? "__shared__ " : "") << t << " " << name << "[" << b->size << "];\n";
        KILN_TRY(stmt(os, s->body[0], indent + 1));
        os << pad << "}\n";
        return Status::ok();
      }
      case StmtKind::Let: {
        KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->value}));
        std::string name = newName(s->var->name);
        varNames_[s->var.get()] = name;
        os << pad << "{\n" << pad << "  const long long " << name << " = " << e[0] << ";\n";
        KILN_TRY(stmt(os, s->body[0], indent + 1));
        os << pad << "}\n";
        return Status::ok();
      }
      case StmtKind::If: {
        KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->value}));
        os << pad << "if (" << e[0] << ") {\n";
        KILN_TRY(stmt(os, s->body[0], indent + 1));
        if (s->body.size() > 1 && s->body[1]) {
          os << pad << "} else {\n";
          KILN_TRY(stmt(os, s->body[1], indent + 1));
        }
        os << pad << "}\n";
        return Status::ok();
      }
      case StmtKind::Seq:
        for (const Stmt& c : s->body) KILN_TRY(stmt(os, c, indent));
        return Status::ok();
      case StmtKind::Barrier: os << pad << "__syncthreads();\n"; return Status::ok();
      case StmtKind::Mma: {
        KILN_ASSIGN(std::vector<std::string> e, exprs(os, pad, {s->index, s->offsets[0], s->offsets[1]}));
        os << pad << mmaHelper(s->mma) << "(&" << buffer(s->buffer) << "[" << e[0] << "], &" << buffer(s->operands[0])
           << "[" << e[1] << "], &" << buffer(s->operands[1]) << "[" << e[2] << "]);\n";
        return Status::ok();
      }
    }
    return fail("has a statement the CUDA emitter does not know");
  }

  // --- vectorized loops: float4 / int4 loads and stores ----------------------

  /// The 16-byte vector type of 4 elements of t, or null.
  static const char* vector4Type(ScalarType t) {
    return t == ScalarType::F32 ? "float4" : t == ScalarType::I32 ? "int4" : nullptr;
  }

  /// Whether buffer[index] over the loop's 4 lanes is one aligned 16-byte access.
  static bool vectorAccess(const Buffer& b, const Expr& index, const Var& v) {
    if (!vector4Type(b->type) || b->scope == MemoryScope::Local) return false;
    std::optional<int64_t> stride = strideIn(index, v);
    return stride && *stride == 1 && isMultipleOf(substituteVar(index, v, intImm(0)), 4);
  }

  static bool storesOnly(const Stmt& s, std::vector<const StmtNode*>& stores) {
    if (s->kind == StmtKind::Store) {
      stores.push_back(s.get());
      return true;
    }
    if (s->kind != StmtKind::Seq) return false;
    for (const Stmt& c : s->body)
      if (!storesOnly(c, stores)) return false;
    return true;
  }

  static void collectLoads(const Expr& e, std::vector<const ExprNode*>& out, std::set<const ExprNode*>& seen) {
    if (!seen.insert(e.get()).second) return;
    if (e->kind == ExprKind::Load) out.push_back(e.get());
    for (const Expr& o : e->operands) collectLoads(o, out, seen);
  }

  /// A vectorized loop's 16-byte accesses (open: its block was printed).
  struct VectorAccesses {
    bool open = false;
    std::vector<const ExprNode*> loads;
    std::vector<std::pair<const StmtNode*, std::string>> stores;  ///< with their lane arrays
  };

  /// For a vectorized loop of 4 lanes whose body is only stores, no buffer
  /// both read and written, opens a block before the loop and loads each
  /// aligned unit-stride operand there with one 16-byte load (the lanes read a
  /// register array); each such store writes a lane array that
  /// endVectorLoop stores with one 16-byte store. Nothing printed (open =
  /// false) when no access qualifies. Hoisting a load out of a select arm is
  /// safe because element formulas keep every load in bounds whether or not
  /// its value is used (they clamp indices, e.g. Concat's and Pad's), so the
  /// 4 lanes' elements all exist.
  Expected<VectorAccesses> beginVectorLoop(std::ostream& os, const Stmt& s, const std::string& pad, const std::string& name) {
    VectorAccesses out;
    int64_t lanes = 0;
    std::vector<const StmtNode*> stores;
    if (!isIntConstant(s->value, &lanes) || lanes != 4 || !storesOnly(s->body[0], stores)) return out;
    std::set<const BufferDecl*> stored;
    std::vector<const ExprNode*> loads;
    std::set<const ExprNode*> seen;
    for (const StmtNode* st : stores) {
      stored.insert(st->buffer.get());
      collectLoads(st->index, loads, seen);
      collectLoads(st->value, loads, seen);
    }
    for (const ExprNode* l : loads)
      if (stored.count(l->buffer.get())) return out;
    for (const ExprNode* l : loads)
      if (vectorAccess(l->buffer, l->operands[0], s->var)) out.loads.push_back(l);
    std::vector<const StmtNode*> vStores;
    for (const StmtNode* st : stores)
      if (vectorAccess(st->buffer, st->index, s->var)) vStores.push_back(st);
    if (out.loads.empty() && vStores.empty()) return out;
    out.open = true;
    const std::string inner = pad + "  ";
    os << pad << "{  // vectorized loop %" << s->var->name << ": 16-byte loads and stores\n";
    for (const ExprNode* l : out.loads) {
      KILN_ASSIGN(std::vector<std::string> base, exprs(os, inner, {substituteVar(l->operands[0], s->var, intImm(0))}));
      KILN_ASSIGN(std::string t, cType(l->buffer->type));
      const char* vt = vector4Type(l->buffer->type);
      std::string lanesName = "kiln_v" + std::to_string(nextTemp_++);
      os << inner << t << " " << lanesName << "[4];\n"
         << inner << "{\n" << inner << "  const " << vt << " kiln_q = *reinterpret_cast<const " << vt << "*>(&"
         << buffer(l->buffer) << "[" << base[0] << "]);\n"
         << inner << "  " << lanesName << "[0] = kiln_q.x; " << lanesName << "[1] = kiln_q.y; " << lanesName
         << "[2] = kiln_q.z; " << lanesName << "[3] = kiln_q.w;\n" << inner << "}\n";
      vectorLoads_[l] = lanesName + "[" + name + "]";
    }
    for (const StmtNode* st : vStores) {
      KILN_ASSIGN(std::string t, cType(st->buffer->type));
      std::string lanesName = "kiln_v" + std::to_string(nextTemp_++);
      os << inner << t << " " << lanesName << "[4];\n";
      vectorStores_[st] = lanesName + "[" + name + "]";
      out.stores.emplace_back(st, lanesName);
    }
    return out;
  }

  /// After the loop begun by beginVectorLoop: the 16-byte stores, and the block closed.
  Status endVectorLoop(std::ostream& os, const Stmt& s, const std::string& pad, const VectorAccesses& v) {
    const std::string inner = pad + "  ";
    for (const auto& [st, n] : v.stores) {
      KILN_ASSIGN(std::vector<std::string> base, exprs(os, inner, {substituteVar(st->index, s->var, intImm(0))}));
      const char* vt = vector4Type(st->buffer->type);
      os << inner << "{\n" << inner << "  " << vt << " kiln_q;\n" << inner << "  kiln_q.x = " << n << "[0]; kiln_q.y = " << n
         << "[1]; kiln_q.z = " << n << "[2]; kiln_q.w = " << n << "[3];\n" << inner << "  *reinterpret_cast<" << vt << "*>(&"
         << buffer(st->buffer) << "[" << base[0] << "]) = kiln_q;\n" << inner << "}\n";
      vectorStores_.erase(st);
    }
    os << pad << "}\n";
    for (const ExprNode* l : v.loads) vectorLoads_.erase(l);
    return Status::ok();
  }

  /// Whether `s` holds a statement of `kind` (a barrier, an mma).
  static bool contains(const Stmt& s, StmtKind kind) {
    if (!s) return false;
    if (s->kind == kind) return true;
    for (const Stmt& c : s->body)
      if (contains(c, kind)) return true;
    return false;
  }
  static bool usesMma(const Stmt& s) { return contains(s, StmtKind::Mma); }
  static bool hasBarrier(const Stmt& s) { return contains(s, StmtKind::Barrier); }

  const Kernel& kernel_;
  CudaKernel out_;
  std::array<bool, 3> gridSet_{false, false, false};
  std::map<const BufferDecl*, std::string> bufferNames_;
  std::map<const VarDecl*, std::string> varNames_;
  std::set<std::string> reserved_;      ///< buffer names
  std::set<std::string> varNamesUsed_;  ///< variable names
  std::map<const ExprNode*, int> uses_;
  std::map<const ExprNode*, std::string> temps_;
  std::map<const ExprNode*, std::string> vectorLoads_;  ///< loads of a vectorized loop: their lane in a register array
  std::map<const StmtNode*, std::string> vectorStores_;  ///< stores of a vectorized loop: their lane
  int nextTemp_ = 0;
};

}  // namespace

Expected<CudaKernel> emitCuda(const Kernel& kernel, const std::string& description) {
  return CudaEmitter(kernel).run(description);
}

const std::vector<int>& defaultCudaArchitectures() {
  static const std::vector<int> archs{80, 86, 89, 90};
  return archs;
}

}  // namespace kiln::codegen
