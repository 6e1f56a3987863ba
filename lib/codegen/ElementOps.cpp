//===- lib/codegen/ElementOps.cpp - Per-op element formulas ---------------===//
//
// ElementBuilder::compute: the expression of element `idx` of one result of
// an op, in terms of its operands' elements. Elementwise ops apply scalar
// math; broadcasting maps the index into each operand's shape; index-remapping
// ops (reshape family, transpose, slice, concat, pad, gather, expand, split,
// tile, gather-elements, trilu, depth/space) compute which operand element
// they read. Reads that a select may discard (concat arms, padding, gathers)
// clamp their index, so every load a kernel executes stays inside its buffer. Attribute-like operands (slice
// bounds, pads, split sizes, clip bounds) must be constants.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "NarrowCastExpr.h"
#include "TensorExpr.h"
#include "kiln/ir/Node.h"
#include "kiln/ir/ResizeTaps.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {


/// The values of a constant operand (nullptr when not constant).
const Tensor* constantOperand(const ir::Node& n, size_t i) {
  const ir::Value* v = n.input(i);
  if (!v || !v->producer() || v->producer()->op() != ir::Op::Constant || !v->producer()->hasAttr("value")) return nullptr;
  return &v->producer()->getTensor("value");
}

Error needsConstant(const ir::Node& n, const char* what) {
  return makeError(ErrorCode::CodegenUnsupported, n.opType(), " with a computed ", what,
                   " operand cannot be code-generated (fold it to a constant first)")
      .atNode(n.displayName(), n.opType());
}

/// Index of an operand of dims `in` for output index `idx` under numpy broadcasting.
Index broadcastIndex(const Index& idx, const Dims& in) {
  Index r(in.size());
  size_t offset = idx.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) r[i] = in[i] == 1 ? intImm(0) : idx[offset + i];
  return r;
}

Expr powExpr(Expr base, Expr exponent) {
  if (exponent->kind == ExprKind::FloatImm || exponent->kind == ExprKind::IntImm) {
    double e = exponent->kind == ExprKind::FloatImm ? exponent->floatValue : double(exponent->intValue);
    if (e == 1) return base;
    if (e == 2) return base * base;
    if (e == 3) return base * base * base;
    if (e == 0.5 && isFloatType(base->type)) return unary(UnaryOp::Sqrt, base);
  }
  return binary(BinaryOp::Pow, base, cast(base->type, exponent));
}

Expr geluExpr(const Expr& x, const std::string& approximate) {
  Expr half = floatImm(0.5, x->type), one = floatImm(1.0, x->type);
  if (approximate == "tanh") {
    Expr inner = floatImm(0.7978845608028654, x->type) * (x + floatImm(0.044715, x->type) * x * x * x);
    return half * x * (one + unary(UnaryOp::Tanh, inner));
  }
  return half * x * (one + unary(UnaryOp::Erf, x * floatImm(0.7071067811865476, x->type)));
}

/// Resize: the sampling taps of each resized dim are computed at compile time
/// (ir::resizeTaps, as the interpreter does) and read from constant tables
/// (index and weight per output coordinate and tap); the element is the
/// separable weighted sum over the taps.
Expected<Expr> resizeElement(ElementBuilder& builder, const ir::Node& n, const Index& idx, const Dims& inDims,
                             const Dims& outDims, ScalarType ct) {
  const size_t rank = inDims.size();
  std::vector<double> scales(rank, 1.0), roi;
  auto constantValues = [&](size_t i, const char* what, std::vector<double>& out) -> Status {
    if (!n.hasInput(i)) return Status::ok();
    const Tensor* t = constantOperand(n, i);
    if (!t) return needsConstant(n, what);
    out = t->toDoubles();
    return Status::ok();
  };
  std::vector<double> given;
  KILN_TRY(constantValues(1, "roi", roi));
  if (!(n.numInputs() > 3 && n.hasInput(3))) KILN_TRY(constantValues(2, "scales", given));
  // Sizes need not be constant: with static shapes they are the output dims, and scale = out / in.
  const bool bySizes = ir::resizesBySizes(n, n.numInputs() > 3 && n.hasInput(3) ? constantOperand(n, 3) : nullptr);
  for (size_t d = 0; d < rank; ++d)
    scales[d] =
        bySizes ? (inDims[d] ? double(outDims[d]) / double(inDims[d]) : 1.0) : (given.size() == rank ? given[d] : 1.0);
  if (!roi.empty() && roi.size() != 2 * rank)
    return makeError(ErrorCode::CodegenUnsupported, "Resize roi must have 2 * rank values");
  struct Dim {
    bool identity = true;
    int64_t taps = 1;
    Buffer index, weight, outside;
  };
  std::vector<Dim> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    double rs = roi.empty() ? 0.0 : roi[d], re = roi.empty() ? 1.0 : roi[d + rank];
    KILN_ASSIGN(std::vector<ir::ResizeTaps> taps, ir::resizeTaps(n, inDims[d], outDims[d], scales[d], rs, re));
    Dim& dim = dims[d];
    bool anyOutside = false;
    for (size_t o = 0; o < taps.size(); ++o) {
      dim.taps = std::max<int64_t>(dim.taps, int64_t(taps[o].taps.size()));
      anyOutside |= taps[o].outside;
      dim.identity &= !taps[o].outside && taps[o].taps.size() == 1 && taps[o].taps[0].first == int64_t(o) &&
                      taps[o].taps[0].second == 1.0;
    }
    if (dim.identity) continue;
    const int64_t out = outDims[d], t = dim.taps;
    std::vector<int64_t> index(size_t(out * t), 0);
    std::vector<float> weight(size_t(out * t), 0.0f), outside(size_t(out), 0.0f);
    for (int64_t o = 0; o < out; ++o) {
      outside[size_t(o)] = taps[size_t(o)].outside ? 1.0f : 0.0f;
      for (size_t k = 0; k < taps[size_t(o)].taps.size(); ++k) {
        index[size_t(o * t) + k] = taps[size_t(o)].taps[k].first;
        weight[size_t(o * t) + k] = float(taps[size_t(o)].taps[k].second);
      }
    }
    std::string base = "resize" + std::to_string(d);
    dim.index = builder.tableBuffer(base + "_index", Tensor::fromVector<int64_t>({out * t}, index));
    dim.weight = builder.tableBuffer(base + "_weight", Tensor::fromVector<float>({out * t}, weight));
    if (anyOutside) dim.outside = builder.tableBuffer(base + "_outside", Tensor::fromVector<float>({out}, outside));
  }
  const double extrapolation = n.getFloat("extrapolation_value");
  Index in(rank);
  std::function<Expected<Expr>(size_t)> sum = [&](size_t d) -> Expected<Expr> {
    if (d == rank) {
      KILN_ASSIGN(Expr x, builder.at(n.input(0), in));
      return cast(ScalarType::F32, x);
    }
    const Dim& dim = dims[d];
    if (dim.identity) {
      in[d] = idx[d];
      return sum(d + 1);
    }
    Expr total;
    for (int64_t t = 0; t < dim.taps; ++t) {
      Expr slot = idx[d] * dim.taps + t;
      in[d] = load(dim.index, slot);
      KILN_ASSIGN(Expr v, sum(d + 1));
      Expr term = load(dim.weight, slot) * v;
      total = total ? total + term : term;
    }
    if (dim.outside)
      total = select(binary(BinaryOp::Gt, load(dim.outside, idx[d]), floatImm(0.5)), floatImm(extrapolation), total);
    return total;
  };
  KILN_ASSIGN(Expr v, sum(0));
  if (isFloatType(ct)) return cast(ct, v);
  return cast(ct, unary(UnaryOp::Round, v));
}

/// What an element rule sees: the node, which of its results and which
/// element, and the ways to read operands (through the builder, so that
/// operands inside the group are computed and others loaded).
struct ElementCall {
  ElementBuilder& builder;
  const ir::Node& n;
  size_t result;
  const Index& idx;
  Dims outDims;
  ScalarType outType, ct;  ///< the result's type and its compute type

  Expected<Expr> operand(size_t i, const Index& at) const { return builder.at(n.input(i), at); }
  Expected<Expr> broadcastOperand(size_t i) const {
    KILN_ASSIGN(Dims d, elementDims(n.input(i)));
    return builder.at(n.input(i), broadcastIndex(idx, d));
  }
  Expr fconst(double v) const { return constantOf(ct, v); }
  double attr(const char* name, double fallback) const { return n.hasAttr(name) ? double(n.getFloat(name)) : fallback; }
  Error unsupported(const std::string& what) const {
    return makeError(ErrorCode::CodegenUnsupported, what).atNode(n.displayName(), n.opType());
  }
};

using ElementRule = std::function<Expected<Expr>(const ElementCall&)>;
/// A rule of an elementwise op on operand 0's element at the same index.
using UnaryRule = std::function<Expected<Expr>(const ElementCall&, const Expr& x)>;

ElementRule onOperand0(UnaryRule f) {
  return [f = std::move(f)](const ElementCall& c) -> Expected<Expr> {
    KILN_ASSIGN(Expr x, c.operand(0, c.idx));
    return f(c, x);
  };
}
ElementRule unaryOf(UnaryOp op) {
  return onOperand0([op](const ElementCall&, const Expr& x) -> Expected<Expr> { return unary(op, x); });
}
/// A binary op on the broadcast elements of operands 0 and 1.
ElementRule binaryOf(std::function<Expr(const Expr&, const Expr&)> f) {
  return [f = std::move(f)](const ElementCall& c) -> Expected<Expr> {
    KILN_ASSIGN(Expr a, c.broadcastOperand(0));
    KILN_ASSIGN(Expr b, c.broadcastOperand(1));
    return f(a, b);
  };
}
/// Operand 0's broadcast element folded with each further operand's by `f`.
Expected<Expr> foldOperands(const ElementCall& c, const std::function<Expr(const Expr&, const Expr&)>& f) {
  KILN_ASSIGN(Expr r, c.broadcastOperand(0));
  for (size_t i = 1; i < c.n.numInputs(); ++i) {
    KILN_ASSIGN(Expr b, c.broadcastOperand(i));
    r = f(r, b);
  }
  return r;
}
/// x cast to the result's type (Cast, CastLike): booleans compare with 0.
Expr castElement(const ElementCall& c, const Expr& x) {
  if (c.outType == ScalarType::Bool) return binary(BinaryOp::Ne, x, constantOf(x->type, 0));
  if (x->type == ScalarType::Bool) return select(x, constantOf(c.ct, 1), constantOf(c.ct, 0));
  return cast(c.ct, x);
}

// Elementwise rules that need more than one UnaryOp.

/// Bounds known at compile time are immediates; others (computed by the model) are read as scalars.
Expected<Expr> clipElement(const ElementCall& c, const Expr& x) {
  Expr r = x;
  for (size_t i = 1; i <= 2; ++i) {
    if (!c.n.hasInput(i)) continue;
    const Tensor* bound = constantOperand(c.n, i);
    Expr b;
    if (bound) {
      b = c.fconst(bound->scalarAsDouble());
    } else {
      KILN_ASSIGN(b, c.broadcastOperand(i));
    }
    r = i == 1 ? maxOf(r, b) : minOf(r, b);
  }
  return r;
}

Expected<Expr> seluElement(const ElementCall& c, const Expr& x) {
  double alpha = c.attr("alpha", 1.67326319217681884765625), gamma = c.attr("gamma", 1.05070102214813232421875);
  return c.fconst(gamma) *
         select(binary(BinaryOp::Gt, x, c.fconst(0)), x, c.fconst(alpha) * (unary(UnaryOp::Exp, x) - c.fconst(1)));
}

Expected<Expr> celuElement(const ElementCall& c, const Expr& x) {
  double alpha = c.attr("alpha", 1.0);
  Expr zero = c.fconst(0), one = c.fconst(1);
  return maxOf(zero, x) + minOf(zero, c.fconst(alpha) * (unary(UnaryOp::Exp, x / c.fconst(alpha)) - one));
}

Expected<Expr> shrinkElement(const ElementCall& c, const Expr& x) {
  Expr lambd = c.fconst(c.attr("lambd", 0.5)), bias = c.fconst(c.attr("bias", 0.0));
  return select(binary(BinaryOp::Lt, x, unary(UnaryOp::Neg, lambd)), x + bias,
                select(binary(BinaryOp::Gt, x, lambd), x - bias, c.fconst(0)));
}

Expected<Expr> isInfElement(const ElementCall& c, const Expr& x) {
  Expr inf = constantOf(x->type, INFINITY);
  Expr pos = c.n.getInt("detect_positive") ? binary(BinaryOp::Eq, x, inf) : boolImm(false);
  Expr neg = c.n.getInt("detect_negative") ? binary(BinaryOp::Eq, x, unary(UnaryOp::Neg, inf)) : boolImm(false);
  return binary(BinaryOp::Or, pos, neg);
}

/// A quantization parameter (operand `i`: a scale or zero point) at the
/// element: one value per tensor, or per index along `axis` (1-D).
Expected<Expr> quantizationParameter(const ElementCall& c, size_t i) {
  KILN_ASSIGN(Dims d, staticDims(c.n.input(i)));
  if (d.size() > 1) return c.unsupported("blocked quantization parameters");
  if (d.empty() || c.outDims.empty() || d[0] == 1) return c.operand(i, Index(d.size(), intImm(0)));
  int64_t rank = int64_t(c.outDims.size()), axis = c.n.getInt("axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || c.outDims[size_t(axis)] != d[0])
    return c.unsupported("a per-axis parameter that does not match its axis");
  return c.operand(i, {c.idx[size_t(axis)]});
}

/// DequantizeLinear: (x - zero_point) * scale in the scale's type.
Expected<Expr> dequantizeElement(const ElementCall& c, const Expr& x) {
  Expr v = cast(c.ct, x);
  if (c.n.hasInput(2)) {
    KILN_ASSIGN(Expr zp, quantizationParameter(c, 2));
    v = v - cast(c.ct, zp);
  }
  KILN_ASSIGN(Expr scale, quantizationParameter(c, 1));
  return v * cast(c.ct, scale);
}

/// QuantizeLinear: round(x / scale) (half to even) + zero_point, clamped to
/// the integer type's range, in x's floating-point type.
Expected<Expr> quantizeElement(const ElementCall& c, const Expr& x) {
  double lo = 0, hi = 255;
  switch (c.outType) {
    case ScalarType::U8: break;
    case ScalarType::I8: lo = -128, hi = 127; break;
    default: return c.unsupported("quantization to this type");
  }
  KILN_ASSIGN(Expr scale, quantizationParameter(c, 1));
  Expr v = unary(UnaryOp::Round, x / cast(x->type, scale));
  if (c.n.hasInput(2)) {
    KILN_ASSIGN(Expr zp, quantizationParameter(c, 2));
    v = v + cast(x->type, zp);
  }
  v = minOf(maxOf(v, constantOf(x->type, lo)), constantOf(x->type, hi));
  return cast(c.outType, v);
}

Expected<Expr> hyperbolicElement(const ElementCall& c, const Expr& x) {
  Expr e = unary(UnaryOp::Exp, x), inv = unary(UnaryOp::Exp, unary(UnaryOp::Neg, x));
  return (c.n.op() == ir::Op::Sinh ? e - inv : e + inv) * c.fconst(0.5);
}

Expected<Expr> geluElement(const ElementCall& c, const Expr& x) {
  return geluExpr(x, c.n.hasAttr("approximate") ? c.n.getString("approximate") : "none");
}

// Rules over several operands.

Expected<Expr> whereElement(const ElementCall& c) {
  KILN_ASSIGN(Expr cond, c.broadcastOperand(0));
  KILN_ASSIGN(Expr a, c.broadcastOperand(1));
  KILN_ASSIGN(Expr b, c.broadcastOperand(2));
  return select(cond, a, b);
}

/// Inference BatchNormalization: a per-channel (axis 1) affine map.
Expected<Expr> batchNormElement(const ElementCall& c) {
  if (c.n.getInt("training_mode") || c.n.numOutputs() > 1)
    return c.unsupported("BatchNormalization in training mode has no code generation");
  Index channel{c.idx.size() > 1 ? c.idx[1] : intImm(0)};
  KILN_ASSIGN(Expr x, c.operand(0, c.idx));
  std::vector<Expr> p;
  for (size_t i = 1; i < 5; ++i) {
    KILN_ASSIGN(Expr v, c.operand(i, channel));
    p.push_back(v);
  }
  return (x - p[2]) * unary(UnaryOp::Rsqrt, p[3] + c.fconst(c.n.getFloat("epsilon"))) * p[0] + p[1];
}

Expected<Expr> meanElement(const ElementCall& c) {
  KILN_ASSIGN(Expr sum, foldOperands(c, [](const Expr& r, const Expr& b) { return r + b; }));
  return sum / c.fconst(double(c.n.numInputs()));
}

Expected<Expr> modElement(const ElementCall& c) {
  KILN_ASSIGN(Expr a, c.broadcastOperand(0));
  KILN_ASSIGN(Expr b, c.broadcastOperand(1));
  bool fmod = c.n.hasAttr("fmod") && c.n.getInt("fmod");
  if (isFloatType(a->type)) {  // C fmod: a - b * trunc(a / b)
    Expr q = a / b;
    Expr t = select(binary(BinaryOp::Lt, q, constantOf(q->type, 0)), unary(UnaryOp::Ceil, q), unary(UnaryOp::Floor, q));
    return a - b * t;
  }
  return fmod ? a - b * (a / b) : binary(BinaryOp::FloorMod, a, b);
}

// Index remapping: which element of operand 0 (or of which operand) the result's element is.

/// A remapping rule, given operand 0's dims.
using RemapRule = std::function<Expected<Expr>(const ElementCall&, const Dims& inDims)>;
/// A rule over static shapes only (its index arithmetic reads the dims).
ElementRule remap(RemapRule f) {
  return [f = std::move(f)](const ElementCall& c) -> Expected<Expr> {
    KILN_ASSIGN(Dims inDims, staticDims(c.n.input(0)));
    KILN_TRY(staticDims(c.n.output(c.result)).status());
    return f(c, inDims);
  };
}
/// A rule that takes dynamic dims too (-1 in `inDims` and the call's outDims).
ElementRule remapDynamic(RemapRule f) {
  return [f = std::move(f)](const ElementCall& c) -> Expected<Expr> {
    KILN_ASSIGN(Dims inDims, elementDims(c.n.input(0)));
    return f(c, inDims);
  };
}

/// Runs of input and output dims with equal products, in order ([N, C, H,
/// W] -> [N, C/c, c, H, W] pairs N with N, C with C/c x c, H with H and W
/// with W); empty when the dims do not split so (or are not all known).
struct DimGroup {
  size_t inBegin, inEnd, outBegin, outEnd;
};
std::vector<DimGroup> reshapeGroups(const ir::Value* in, const ir::Value* out) {
  const auto a = in->tensorType().dimExprs(), b = out->tensorType().dimExprs();
  if (!a || !b) return {};
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < a->size() || j < b->size()) {
    DimGroup g{i, i, j, j};
    DimExpr pa(1), pb(1);
    if (g.inEnd < a->size()) pa = (*a)[g.inEnd++];
    if (g.outEnd < b->size()) pb = (*b)[g.outEnd++];
    while (!(pa == pb)) {  // grow the side whose product the other's is a multiple of
      const bool growIn = pa.constant() && pb.constant() ? *pa.constant() < *pb.constant()
                                                         : DimExpr::divideExact(pb, pa).has_value();
      if (growIn && g.inEnd < a->size()) pa = pa * (*a)[g.inEnd++];
      else if (!growIn && g.outEnd < b->size()) pb = pb * (*b)[g.outEnd++];
      else return {};
    }
    groups.push_back(g);
    i = g.inEnd, j = g.outEnd;
  }
  return groups;
}

/// The element at the same row-major position of operand 0, over the run's
/// dims when they are dynamic. Over dynamic dims each run of dims with equal
/// products maps on its own (reshapeGroups), so a dim that passes through
/// keeps its index instead of a division by a run-time extent per element.
Expected<Expr> reshapeElement(const ElementCall& c, const Dims&) {
  KILN_ASSIGN(ExprDims in, c.builder.dims(c.n.input(0)));
  KILN_ASSIGN(ExprDims out, c.builder.dims(c.n.output(c.result)));
  const std::vector<DimGroup> groups =
      hasDynamicDims(c.n.input(0)) ? reshapeGroups(c.n.input(0), c.n.output(c.result)) : std::vector<DimGroup>{};
  if (groups.empty()) return c.operand(0, unflatten(flatIndex(c.idx, out), in));
  Index at;
  for (const DimGroup& g : groups) {
    const Index part(c.idx.begin() + long(g.outBegin), c.idx.begin() + long(g.outEnd));
    const ExprDims from(out.begin() + long(g.outBegin), out.begin() + long(g.outEnd));
    const ExprDims to(in.begin() + long(g.inBegin), in.begin() + long(g.inEnd));
    const Index mapped = g.inEnd - g.inBegin == 1 && g.outEnd - g.outBegin == 1 ? part : unflatten(flatIndex(part, from), to);
    at.insert(at.end(), mapped.begin(), mapped.end());
  }
  return c.operand(0, at);
}

Expected<Expr> tileElement(const ElementCall& c, const Dims& inDims) {
  Index in(c.idx.size());
  for (size_t i = 0; i < c.idx.size(); ++i)
    in[i] = inDims[i] == c.outDims[i] ? c.idx[i] : floorMod(c.idx[i], inDims[i]);
  return c.operand(0, in);
}

Expected<Expr> transposeElement(const ElementCall& c, const Dims& inDims) {
  std::vector<int64_t> perm;
  if (c.n.hasAttr("perm"))
    perm = c.n.getInts("perm");
  else
    for (int64_t i = int64_t(inDims.size()); i-- > 0;) perm.push_back(i);
  Index in(c.idx.size());
  for (size_t i = 0; i < perm.size(); ++i) in[size_t(perm[i])] = c.idx[i];
  return c.operand(0, in);
}

/// Where a Slice along a dynamic dim of run-time length `dim` starts: ONNX's
/// clamping of `start` to [0, dim] (step > 0) or [0, dim - 1] (step < 0).
Expr dynamicSliceStart(int64_t start, int64_t step, const Expr& dim) {
  constexpr int64_t kFarBelow = -(int64_t(1) << 40);  // below any dim's negation: the start clamps to 0
  Expr s = start < 0 ? dim + std::max(start, kFarBelow) : intImm(start);
  return minOf(maxOf(s, intImm(0)), step > 0 ? dim : dim - intImm(1));
}

/// Constant bounds over static or dynamic dims: a dynamic axis starts where
/// its run-time length puts the start.
Expected<Expr> sliceElement(const ElementCall& c, const Dims& inDims) {
  std::vector<std::vector<int64_t>> args(5);
  for (size_t i = 1; i < 5; ++i) {
    if (!c.n.hasInput(i)) continue;
    const Tensor* t = constantOperand(c.n, i);
    if (!t) return needsConstant(c.n, "bound");
    args[i] = t->toInt64s();
  }
  Dims known = inDims;  // a dynamic dim's static slice is a placeholder, replaced below
  for (int64_t& d : known) d = d == ir::kUnknownDim ? 1 : d;
  KILN_ASSIGN(auto dims, ir::computeSlice(known, args[1], args[2], args[3], args[4]));
  Index in(c.idx.size());
  for (size_t i = 0; i < c.idx.size(); ++i) in[i] = intImm(dims[i].start) + c.idx[i] * dims[i].step;
  std::vector<int64_t> axes = args[3];
  if (axes.empty())
    for (size_t i = 0; i < args[1].size(); ++i) axes.push_back(int64_t(i));
  KILN_ASSIGN(ExprDims run, c.builder.dims(c.n.input(0)));
  for (size_t k = 0; k < axes.size(); ++k) {
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(axes[k], int64_t(inDims.size())));
    if (inDims[size_t(axis)] != ir::kUnknownDim) continue;
    const int64_t step = args[4].empty() ? 1 : args[4][k];
    in[size_t(axis)] = dynamicSliceStart(args[1][k], step, run[size_t(axis)]) + c.idx[size_t(axis)] * step;
  }
  return c.operand(0, in);
}

/// Result r's element along the axis follows the results before it (static or run-time lengths).
Expected<Expr> splitElement(const ElementCall& c, const Dims& inDims) {
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(c.n.getInt("axis"), int64_t(inDims.size())));
  Index in = c.idx;
  for (size_t r = 0; r < c.result; ++r) {
    KILN_ASSIGN(ExprDims d, c.builder.dims(c.n.output(r)));
    in[size_t(axis)] = in[size_t(axis)] + d[size_t(axis)];
  }
  return c.operand(0, in);
}

/// The operand an output index along the axis falls in, by a balanced tree
/// of selects over the inputs' end offsets (static or run-time extents).
Expected<Expr> concatElement(const ElementCall& c, const Dims&) {
  const ir::Node& n = c.n;
  const Index& idx = c.idx;
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(n.getInt("axis"), int64_t(c.outDims.size())));
  const size_t a = size_t(axis);
  std::vector<std::pair<Expr, Expr>> parts;  // (end offset, element) of each input that is not always empty
  Expr offset = intImm(0);
  for (size_t i = 0; i < n.numInputs(); ++i) {
    KILN_ASSIGN(ExprDims d, c.builder.dims(n.input(i)));
    int64_t extent = 0, begin = 0;
    const bool staticExtent = isIntConstant(d[a], &extent);
    if (staticExtent && extent == 0) continue;
    Index in = idx;
    in[a] = clampIndex(idx[a] - offset, d[a]);
    KILN_ASSIGN(Expr e, c.operand(i, in));
    offset = staticExtent && isIntConstant(offset, &begin) ? intImm(begin + extent) : offset + d[a];
    parts.push_back({offset, e});
  }
  // A balanced tree of selects: log2(inputs) comparisons per element (DenseNet
  // concatenates up to 49 inputs), each side loaded only when chosen on the CPU.
  std::function<Expr(size_t, size_t)> pick = [&](size_t lo, size_t hi) -> Expr {
    if (hi - lo == 1) return parts[lo].second;
    size_t mid = (lo + hi) / 2;
    return select(binary(BinaryOp::Lt, idx[a], parts[mid - 1].first), pick(lo, mid), pick(mid, hi));
  };
  return pick(0, parts.size());
}

/// Where index `s` of a padded axis of `extent` reads from in a Pad of `mode` other than constant: the
/// nearest element (edge), the mirror image without repeating the border (reflect), or around (wrap).
Expr paddedSource(const std::string& mode, const Expr& s, int64_t extent) {
  if (mode == "edge") return clampIndex(s, extent);
  if (mode == "wrap") return clampIndex(binary(BinaryOp::FloorMod, s, intImm(extent)), extent);
  Expr distance = maxOf(s, intImm(0) - s);
  return clampIndex(minOf(distance, intImm(2 * (extent - 1)) - distance), extent);
}

/// A Pad's begin and end pads for every axis (its axes operand, when present, names the axes they are for).
Expected<std::vector<int64_t>> fullPads(const ElementCall& c, size_t rank) {
  const Tensor* pads = constantOperand(c.n, 1);
  if (!pads) return needsConstant(c.n, "pads");
  std::vector<int64_t> given = pads->toInt64s();
  if (c.n.numInputs() <= 3 || !c.n.hasInput(3)) return given;
  const Tensor* axesOperand = constantOperand(c.n, 3);
  if (!axesOperand) return needsConstant(c.n, "axes");
  std::vector<int64_t> axes = axesOperand->toInt64s(), full(2 * rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    KILN_ASSIGN(int64_t a, ir::normalizeAxis(axes[k], int64_t(rank)));
    full[size_t(a)] = given[k];
    full[size_t(a) + rank] = given[k + axes.size()];
  }
  return full;
}

Expected<Expr> padElement(const ElementCall& c, const Dims& inDims) {
  const ir::Node& n = c.n;
  const std::string mode = n.hasAttr("mode") ? n.getString("mode") : "constant";
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return c.unsupported("Pad mode '" + mode + "' has no code generation");
  const Index& idx = c.idx;
  KILN_ASSIGN(std::vector<int64_t> p, fullPads(c, idx.size()));
  Index in(idx.size());
  Expr inside = boolImm(true);
  for (size_t i = 0; i < idx.size(); ++i) {
    Expr shifted = idx[i] - p[i];
    const bool padded = p[i] != 0 || p[i + idx.size()] != 0;
    in[i] = shifted;
    if (!padded) continue;
    if (mode != "constant") {
      // Reflect mirrors once: pads past extent - 1 are left to the reference kernel.
      if (inDims[i] == 0 || (mode == "reflect" && std::max(p[i], p[i + idx.size()]) > inDims[i] - 1))
        return c.unsupported("Pad mode '" + mode + "' over an axis of " + std::to_string(inDims[i]) + " by " +
                             std::to_string(std::max(p[i], p[i + idx.size()])));
      in[i] = paddedSource(mode, shifted, inDims[i]);
      continue;
    }
    inside = binary(BinaryOp::And, inside,
                    binary(BinaryOp::And, binary(BinaryOp::Ge, shifted, intImm(0)),
                           binary(BinaryOp::Lt, shifted, intImm(inDims[i]))));
    in[i] = clampIndex(shifted, inDims[i]);
  }
  KILN_ASSIGN(Expr x, c.operand(0, in));
  if (mode != "constant") return x;
  Expr value = c.fconst(0);
  if (n.hasInput(2)) {
    const Tensor* v = constantOperand(n, 2);
    if (!v) return needsConstant(n, "constant_value");
    value = scalarConstant(c.ct, *v);
  }
  return select(inside, x, value);
}

/// An index read from operand 1 at `at`, negative values counted from the end of an axis of `extent`, clamped.
Expected<Expr> indexOperand(const ElementCall& c, const Index& at, int64_t extent) {
  KILN_ASSIGN(Expr raw, c.operand(1, at));
  Expr i = cast(ScalarType::I64, raw);
  i = select(binary(BinaryOp::Lt, i, intImm(0)), i + extent, i);
  return clampIndex(i, extent);
}

Expected<Expr> gatherElementsElement(const ElementCall& c, const Dims& inDims) {
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(c.n.getInt("axis"), int64_t(inDims.size())));
  Index in = c.idx;
  KILN_ASSIGN(in[size_t(axis)], indexOperand(c, c.idx, inDims[size_t(axis)]));
  return c.operand(0, in);
}

Expected<Expr> gatherElement(const ElementCall& c, const Dims& inDims) {
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(c.n.getInt("axis"), int64_t(inDims.size())));
  KILN_ASSIGN(Dims qDims, elementDims(c.n.input(1)));  // only its rank is used: the indices may be dynamic
  const Index& idx = c.idx;
  const size_t a = size_t(axis), q = qDims.size();
  if (inDims[a] < 0) return c.unsupported("Gather along a dynamic dim");
  Index qIdx(idx.begin() + a, idx.begin() + a + q);
  KILN_ASSIGN(Expr i, indexOperand(c, qIdx, inDims[a]));
  Index in(idx.begin(), idx.begin() + a);
  in.push_back(i);
  in.insert(in.end(), idx.begin() + a + q, idx.end());
  return c.operand(0, in);
}

Expected<Expr> triluElement(const ElementCall& c, const Dims&) {
  int64_t k = 0;
  if (c.n.numInputs() > 1 && c.n.hasInput(1)) {
    const Tensor* kt = constantOperand(c.n, 1);
    if (!kt) return needsConstant(c.n, "k");
    k = int64_t(kt->scalarAsDouble());
  }
  KILN_ASSIGN(Expr x, c.operand(0, c.idx));
  Expr diff = c.idx[c.idx.size() - 1] - c.idx[c.idx.size() - 2];  // column - row
  bool upper = !c.n.hasAttr("upper") || c.n.getInt("upper");
  Expr keep = upper ? binary(BinaryOp::Ge, diff, intImm(k)) : binary(BinaryOp::Le, diff, intImm(k));
  return select(keep, x, constantOf(x->type, 0));
}

Expected<Expr> depthSpaceElement(const ElementCall& c, const Dims& inDims) {
  const int64_t b = c.n.getInt("blocksize");
  const Index& idx = c.idx;
  Index in(4);
  if (c.n.op() == ir::Op::SpaceToDepth) {  // out[n, (by*b+bx)*C + c, h, w] = in[n, c, h*b+by, w*b+bx]
    const int64_t ch = inDims[1];
    Expr block = floorDiv(idx[1], ch);
    in = {idx[0], floorMod(idx[1], ch), idx[2] * b + floorDiv(block, b), idx[3] * b + floorMod(block, b)};
  } else {
    const int64_t ch = c.outDims[1];
    bool crd = c.n.hasAttr("mode") && c.n.getString("mode") == "CRD";
    Expr by = floorMod(idx[2], b), bx = floorMod(idx[3], b);
    Expr channel = crd ? (idx[1] * b + by) * b + bx : (by * b + bx) * ch + idx[1];
    in = {idx[0], channel, floorDiv(idx[2], b), floorDiv(idx[3], b)};
  }
  return c.operand(0, in);
}

/// Shape: element i is dim start + i of operand 0, a run-time extent where
/// it is dynamic (static shapes fold away before code generation); operand 0 is never read.
Expected<Expr> shapeElement(const ElementCall& c) {
  KILN_ASSIGN(ExprDims dims, c.builder.dims(c.n.input(0)));
  const int64_t rank = int64_t(dims.size());
  auto clampIdx = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clampIdx(c.n.getInt("start")), end = c.n.hasAttr("end") ? clampIdx(c.n.getInt("end")) : rank;
  if (end <= start) return c.unsupported("an empty Shape");
  Expr value = dims[size_t(end - 1)];
  for (int64_t d = end - 1; d-- > start;) value = select(binary(BinaryOp::Eq, c.idx[0], intImm(d - start)), dims[size_t(d)], value);
  return cast(c.ct, value);
}

/// Size: the product of operand 0's dims (never read).
Expected<Expr> sizeElement(const ElementCall& c) {
  KILN_ASSIGN(ExprDims dims, c.builder.dims(c.n.input(0)));
  return cast(c.ct, productOf(dims));
}

/// Range: start + i * delta (the result's length comes from its type; limit is never read).
Expected<Expr> rangeElement(const ElementCall& c) {
  KILN_ASSIGN(Expr start, c.operand(0, {}));
  KILN_ASSIGN(Expr delta, c.operand(2, {}));
  return start + cast(c.ct, c.idx[0]) * delta;
}

/// ConstantOfShape: its value (zero without one) everywhere; the shape operand is never read.
Expected<Expr> constantOfShapeElement(const ElementCall& c) {
  return c.n.hasAttr("value") ? scalarConstant(c.ct, c.n.getTensor("value")) : c.fconst(0.0);
}

using ir::Op;
using ElementRules = std::map<Op, ElementRule>;

/// Elementwise ops of one operand.
void addUnaryRules(ElementRules& r) {
  const std::pair<Op, UnaryOp> unaries[] = {
      {Op::Sigmoid, UnaryOp::Sigmoid},   {Op::Tanh, UnaryOp::Tanh},         {Op::KilnFastTanh, UnaryOp::Tanh},
      {Op::Exp, UnaryOp::Exp},           {Op::KilnFastExp, UnaryOp::Exp}, {Op::Erf, UnaryOp::Erf},
      {Op::KilnFastErf, UnaryOp::Erf}, {Op::Log, UnaryOp::Log},           {Op::Sqrt, UnaryOp::Sqrt},
      {Op::Abs, UnaryOp::Abs},           {Op::Neg, UnaryOp::Neg},           {Op::Floor, UnaryOp::Floor},
      {Op::Ceil, UnaryOp::Ceil},         {Op::Round, UnaryOp::Round},       {Op::Reciprocal, UnaryOp::Reciprocal},
      {Op::Sin, UnaryOp::Sin},           {Op::Cos, UnaryOp::Cos},           {Op::Not, UnaryOp::Not},
      {Op::IsNaN, UnaryOp::IsNan}};
  for (const auto& [op, u] : unaries) r[op] = unaryOf(u);
  auto lt0 = [](const ElementCall& c, const Expr& x) { return binary(BinaryOp::Lt, x, c.fconst(0)); };
  r[Op::Relu] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> { return maxOf(x, c.fconst(0)); });
  r[Op::Identity] = onOperand0([](const ElementCall&, const Expr& x) -> Expected<Expr> { return x; });
  r[Op::Softplus] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return unary(UnaryOp::Log, c.fconst(1) + unary(UnaryOp::Exp, x));
  });
  r[Op::LeakyRelu] = onOperand0([lt0](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return select(lt0(c, x), x * c.fconst(c.n.getFloat("alpha")), x);
  });
  r[Op::Elu] = onOperand0([lt0](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return select(lt0(c, x), c.fconst(c.n.getFloat("alpha")) * (unary(UnaryOp::Exp, x) - c.fconst(1)), x);
  });
  r[Op::HardSigmoid] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return maxOf(c.fconst(0), minOf(c.fconst(1), c.fconst(c.n.getFloat("alpha")) * x + c.fconst(c.n.getFloat("beta"))));
  });
  r[Op::HardSwish] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return x * maxOf(c.fconst(0), minOf(c.fconst(1), x * c.fconst(1.0 / 6) + c.fconst(0.5)));
  });
  r[Op::Sign] = onOperand0([lt0](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return select(binary(BinaryOp::Gt, x, c.fconst(0)), c.fconst(1), select(lt0(c, x), c.fconst(-1), c.fconst(0)));
  });
  r[Op::ThresholdedRelu] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    return select(binary(BinaryOp::Gt, x, c.fconst(c.attr("alpha", 1.0))), x, c.fconst(0));
  });
  r[Op::Softsign] = onOperand0(
      [](const ElementCall& c, const Expr& x) -> Expected<Expr> { return x / (c.fconst(1) + unary(UnaryOp::Abs, x)); });
  r[Op::Tan] = onOperand0([](const ElementCall&, const Expr& x) -> Expected<Expr> {
    return unary(UnaryOp::Sin, x) / unary(UnaryOp::Cos, x);
  });
  r[Op::Cast] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> { return castElement(c, x); });
  r[Op::Clip] = onOperand0(clipElement);
  r[Op::DequantizeLinear] = onOperand0(dequantizeElement);
  r[Op::QuantizeLinear] = onOperand0(quantizeElement);
  r[Op::Selu] = onOperand0(seluElement);
  r[Op::Celu] = onOperand0(celuElement);
  r[Op::Shrink] = onOperand0(shrinkElement);
  r[Op::IsInf] = onOperand0(isInfElement);
  r[Op::Sinh] = r[Op::Cosh] = onOperand0(hyperbolicElement);
  r[Op::KilnGelu] = onOperand0(geluElement);
  r[Op::KilnNarrowCast] = onOperand0([](const ElementCall& c, const Expr& x) -> Expected<Expr> {
    std::optional<NarrowType> to = narrowTypeFromOnnx(int(c.n.getInt("to")));
    if (!to) return makeError(ErrorCode::CodegenUnsupported, "NarrowCast to a type that is not narrow");
    return narrowCastExpr(x, *to, c.n.getInt("saturate") != 0, ScaleRounding(c.n.getInt("round_mode")));
  });
}

/// Elementwise ops of several operands, broadcast.
void addBinaryRules(ElementRules& r) {
  r[Op::Add] = binaryOf([](const Expr& a, const Expr& b) { return a + b; });
  r[Op::Sub] = binaryOf([](const Expr& a, const Expr& b) { return a - b; });
  r[Op::Mul] = binaryOf([](const Expr& a, const Expr& b) { return a * b; });
  r[Op::Div] = binaryOf([](const Expr& a, const Expr& b) { return a / b; });
  r[Op::Pow] = binaryOf(powExpr);
  r[Op::Xor] = binaryOf([](const Expr& a, const Expr& b) { return binary(BinaryOp::Ne, a, b); });
  r[Op::PRelu] = binaryOf(
      [](const Expr& a, const Expr& b) { return select(binary(BinaryOp::Lt, a, constantOf(a->type, 0)), a * b, a); });
  const std::pair<Op, BinaryOp> comparisons[] = {
      {Op::Equal, BinaryOp::Eq},       {Op::Less, BinaryOp::Lt},           {Op::Greater, BinaryOp::Gt},
      {Op::LessOrEqual, BinaryOp::Le}, {Op::GreaterOrEqual, BinaryOp::Ge}, {Op::And, BinaryOp::And},
      {Op::Or, BinaryOp::Or}};
  for (const auto& [op, b] : comparisons)
    r[op] = binaryOf([b](const Expr& x, const Expr& y) { return binary(b, x, y); });
  r[Op::Sum] = [](const ElementCall& c) { return foldOperands(c, [](const Expr& a, const Expr& b) { return a + b; }); };
  r[Op::Max] = [](const ElementCall& c) {
    return foldOperands(c, [](const Expr& a, const Expr& b) { return binary(BinaryOp::Max, a, b); });
  };
  r[Op::Min] = [](const ElementCall& c) {
    return foldOperands(c, [](const Expr& a, const Expr& b) { return binary(BinaryOp::Min, a, b); });
  };
  r[Op::Mean] = meanElement;
  r[Op::Mod] = modElement;
  r[Op::Where] = whereElement;
  r[Op::BatchNormalization] = batchNormElement;
  r[Op::CastLike] = [](const ElementCall& c) -> Expected<Expr> {
    KILN_ASSIGN(Expr x, c.broadcastOperand(0));
    return castElement(c, x);
  };
}

/// Index remapping: the element of an operand the result's element is.
void addRemapRules(ElementRules& r) {
  r[Op::Reshape] = r[Op::Flatten] = r[Op::Squeeze] = r[Op::Unsqueeze] = remapDynamic(reshapeElement);
  r[Op::Expand] =
      remapDynamic([](const ElementCall& c, const Dims& inDims) { return c.operand(0, broadcastIndex(c.idx, inDims)); });
  r[Op::Tile] = remap(tileElement);
  r[Op::Transpose] = remapDynamic(transposeElement);
  r[Op::Slice] = remapDynamic(sliceElement);
  r[Op::Split] = remapDynamic(splitElement);
  r[Op::Concat] = remapDynamic(concatElement);
  r[Op::Pad] = remap(padElement);
  r[Op::Resize] = remap([](const ElementCall& c, const Dims& inDims) {
    return resizeElement(c.builder, c.n, c.idx, inDims, c.outDims, c.ct);
  });
  r[Op::GatherElements] = remap(gatherElementsElement);
  r[Op::Gather] = remapDynamic(gatherElement);
  r[Op::Trilu] = remap(triluElement);
  r[Op::DepthToSpace] = r[Op::SpaceToDepth] = remap(depthSpaceElement);
  r[Op::Shape] = shapeElement;
  r[Op::Size] = sizeElement;
  r[Op::Range] = rangeElement;
  r[Op::ConstantOfShape] = constantOfShapeElement;
}

/// The element rule of every op code generation computes element by element,
/// by op. Adding an op's codegen is adding its entry to one of
/// the lists above.
const ElementRules& elementRules() {
  static const ElementRules rules = [] {
    ElementRules r;
    addUnaryRules(r);
    addBinaryRules(r);
    addRemapRules(r);
    return r;
  }();
  return rules;
}

}  // namespace

bool hasElementExpr(const ir::Node& n) { return elementRules().count(n.op()) > 0; }

Expected<Expr> ElementBuilder::compute(const ir::Node& n, size_t result, const Index& idx) {
  KILN_ASSIGN(Dims outDims, elementDims(n.output(result)));
  KILN_ASSIGN(ScalarType outType, valueScalarType(n.output(result)));
  auto rule = elementRules().find(n.op());
  if (rule == elementRules().end()) {
    KILN_TRY(staticDims(n.input(0)).status());
    return makeError(ErrorCode::CodegenUnsupported, "no element formula for ", n.qualifiedOpType())
        .atNode(n.displayName(), n.opType());
  }
  return rule->second(ElementCall{*this, n, result, idx, std::move(outDims), outType, computeType(outType)});
}

}  // namespace kiln::codegen
