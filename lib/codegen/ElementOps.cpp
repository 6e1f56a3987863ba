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

#include "TensorExpr.h"
#include "kiln/ir/Node.h"
#include "kiln/ir/ResizeTaps.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

const std::set<std::string>& unaryOps() {
  static const std::set<std::string> s = {
      "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Abs", "Neg", "Floor", "Ceil", "Round", "Erf",
      "Reciprocal", "Sin", "Cos", "Identity", "Not", "IsNaN", "Softplus", "LeakyRelu", "Elu", "HardSigmoid",
      "HardSwish", "Sign", "Clip", "Cast", "Gelu", "kiln::Gelu", "kiln::FastExp", "kiln::FastErf", "kiln::FastTanh",
      "ThresholdedRelu", "Selu", "Celu", "Softsign", "Shrink", "IsInf", "Tan", "Sinh", "Cosh"};
  return s;
}
const std::set<std::string>& binaryOps() {
  static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Equal", "Less",
                                          "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "PRelu", "Where",
                                          "Xor", "Mod", "Mean", "CastLike", "BatchNormalization"};
  return s;
}
const std::set<std::string>& remapOps() {
  static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice",
                                          "Concat", "Pad", "Gather", "Expand", "Split", "Tile",
                                          "GatherElements", "Trilu", "DepthToSpace", "SpaceToDepth", "Resize"};
  return s;
}

std::string qualified(const ir::Node& n) { return n.domain().empty() ? n.opType() : n.qualifiedOpType(); }

/// The values of a constant operand (nullptr when not constant).
const Tensor* constantOperand(const ir::Node& n, size_t i) {
  const ir::Value* v = n.input(i);
  if (!v || !v->producer() || v->producer()->opType() != "Constant" || !v->producer()->hasAttr("value")) return nullptr;
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

}  // namespace

bool hasElementExpr(const ir::Node& n) {
  std::string op = qualified(n);
  return unaryOps().count(op) || binaryOps().count(op) || remapOps().count(op);
}

/// Resize: the sampling taps of each resized dim are computed at compile time
/// (ir::resizeTaps, as the interpreter does) and read from constant tables
/// (index and weight per output coordinate and tap); the element is the
/// separable weighted sum over the taps.
Expected<Expr> ElementBuilder::resizeAt(const ir::Node& n, const Index& idx, const Dims& inDims, const Dims& outDims,
                                        ScalarType ct) {
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
  const bool bySizes = n.numInputs() > 3 && n.hasInput(3) && (!constantOperand(n, 3) || constantOperand(n, 3)->numElements() > 0);
  for (size_t d = 0; d < rank; ++d)
    scales[d] = bySizes ? (inDims[d] ? double(outDims[d]) / double(inDims[d]) : 1.0) : (given.size() == rank ? given[d] : 1.0);
  if (!roi.empty() && roi.size() != 2 * rank) return makeError(ErrorCode::CodegenUnsupported, "Resize roi must have 2 * rank values");
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
    dim.index = tableBuffer(base + "_index", Tensor::fromVector<int64_t>({out * t}, index));
    dim.weight = tableBuffer(base + "_weight", Tensor::fromVector<float>({out * t}, weight));
    if (anyOutside) dim.outside = tableBuffer(base + "_outside", Tensor::fromVector<float>({out}, outside));
  }
  const double extrapolation = n.getFloat("extrapolation_value");
  Index in(rank);
  std::function<Expected<Expr>(size_t)> sum = [&](size_t d) -> Expected<Expr> {
    if (d == rank) {
      KILN_ASSIGN(Expr x, at(n.input(0), in));
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

Expected<Expr> ElementBuilder::compute(const ir::Node& n, size_t result, const Index& idx) {
  const std::string op = qualified(n);
  KILN_ASSIGN(Dims outDims, staticDims(n.output(result)));
  KILN_ASSIGN(ScalarType outType, valueScalarType(n.output(result)));
  const ScalarType ct = computeType(outType);
  auto operand = [&](size_t i, const Index& at) -> Expected<Expr> { return this->at(n.input(i), at); };
  auto broadcastOperand = [&](size_t i) -> Expected<Expr> {
    KILN_ASSIGN(Dims d, staticDims(n.input(i)));
    return this->at(n.input(i), broadcastIndex(idx, d));
  };
  auto fconst = [&](double v) { return constantOf(ct, v); };

  if (unaryOps().count(op)) {
    KILN_ASSIGN(Expr x, operand(0, idx));
    if (op == "Relu") return maxOf(x, fconst(0));
    if (op == "Sigmoid") return unary(UnaryOp::Sigmoid, x);
    if (op == "Tanh" || op == "kiln::FastTanh") return unary(UnaryOp::Tanh, x);
    if (op == "Exp" || op == "kiln::FastExp") return unary(UnaryOp::Exp, x);
    if (op == "Erf" || op == "kiln::FastErf") return unary(UnaryOp::Erf, x);
    if (op == "Log") return unary(UnaryOp::Log, x);
    if (op == "Sqrt") return unary(UnaryOp::Sqrt, x);
    if (op == "Abs") return unary(UnaryOp::Abs, x);
    if (op == "Neg") return unary(UnaryOp::Neg, x);
    if (op == "Floor") return unary(UnaryOp::Floor, x);
    if (op == "Ceil") return unary(UnaryOp::Ceil, x);
    if (op == "Round") return unary(UnaryOp::Round, x);
    if (op == "Reciprocal") return unary(UnaryOp::Reciprocal, x);
    if (op == "Sin") return unary(UnaryOp::Sin, x);
    if (op == "Cos") return unary(UnaryOp::Cos, x);
    if (op == "Identity") return x;
    if (op == "Not") return unary(UnaryOp::Not, x);
    if (op == "IsNaN") return unary(UnaryOp::IsNan, x);
    if (op == "Softplus") return unary(UnaryOp::Log, fconst(1) + unary(UnaryOp::Exp, x));
    if (op == "LeakyRelu")
      return select(binary(BinaryOp::Lt, x, fconst(0)), x * fconst(n.getFloat("alpha")), x);
    if (op == "Elu")
      return select(binary(BinaryOp::Lt, x, fconst(0)), fconst(n.getFloat("alpha")) * (unary(UnaryOp::Exp, x) - fconst(1)), x);
    if (op == "HardSigmoid")
      return maxOf(fconst(0), minOf(fconst(1), fconst(n.getFloat("alpha")) * x + fconst(n.getFloat("beta"))));
    if (op == "HardSwish") return x * maxOf(fconst(0), minOf(fconst(1), x * fconst(1.0 / 6) + fconst(0.5)));
    if (op == "Sign")
      return select(binary(BinaryOp::Gt, x, fconst(0)), fconst(1),
                    select(binary(BinaryOp::Lt, x, fconst(0)), fconst(-1), fconst(0)));
    if (op == "Clip") {
      Expr r = x;
      for (size_t i = 1; i <= 2; ++i) {
        if (!n.hasInput(i)) continue;
        const Tensor* bound = constantOperand(n, i);
        if (!bound) return needsConstant(n, i == 1 ? "min" : "max");
        Expr b = fconst(bound->scalarAsDouble());
        r = i == 1 ? maxOf(r, b) : minOf(r, b);
      }
      return r;
    }
    if (op == "Cast") {
      if (outType == ScalarType::Bool) return binary(BinaryOp::Ne, x, constantOf(x->type, 0));
      if (x->type == ScalarType::Bool) return select(x, constantOf(ct, 1), constantOf(ct, 0));
      return cast(ct, x);
    }
    auto attr = [&](const char* name, double fallback) { return n.hasAttr(name) ? double(n.getFloat(name)) : fallback; };
    Expr zero = fconst(0), one = fconst(1);
    if (op == "ThresholdedRelu") return select(binary(BinaryOp::Gt, x, fconst(attr("alpha", 1.0))), x, zero);
    if (op == "Selu") {
      double alpha = attr("alpha", 1.67326319217681884765625), gamma = attr("gamma", 1.05070102214813232421875);
      return fconst(gamma) * select(binary(BinaryOp::Gt, x, zero), x, fconst(alpha) * (unary(UnaryOp::Exp, x) - one));
    }
    if (op == "Celu") {
      double alpha = attr("alpha", 1.0);
      return maxOf(zero, x) + minOf(zero, fconst(alpha) * (unary(UnaryOp::Exp, x / fconst(alpha)) - one));
    }
    if (op == "Softsign") return x / (one + unary(UnaryOp::Abs, x));
    if (op == "Shrink") {
      Expr lambd = fconst(attr("lambd", 0.5)), bias = fconst(attr("bias", 0.0));
      return select(binary(BinaryOp::Lt, x, unary(UnaryOp::Neg, lambd)), x + bias,
                    select(binary(BinaryOp::Gt, x, lambd), x - bias, zero));
    }
    if (op == "IsInf") {
      Expr inf = constantOf(x->type, INFINITY);
      Expr pos = n.getInt("detect_positive") ? binary(BinaryOp::Eq, x, inf) : boolImm(false);
      Expr neg = n.getInt("detect_negative") ? binary(BinaryOp::Eq, x, unary(UnaryOp::Neg, inf)) : boolImm(false);
      return binary(BinaryOp::Or, pos, neg);
    }
    if (op == "Tan") return unary(UnaryOp::Sin, x) / unary(UnaryOp::Cos, x);
    if (op == "Sinh" || op == "Cosh") {
      Expr e = unary(UnaryOp::Exp, x), inv = unary(UnaryOp::Exp, unary(UnaryOp::Neg, x));
      return (op == "Sinh" ? e - inv : e + inv) * fconst(0.5);
    }
    if (op == "Gelu" || op == "kiln::Gelu") {
      std::string approximate = n.hasAttr("approximate") ? n.getString("approximate") : "none";
      return geluExpr(x, approximate);
    }
  }

  if (binaryOps().count(op)) {
    if (op == "Where") {
      KILN_ASSIGN(Expr c, broadcastOperand(0));
      KILN_ASSIGN(Expr a, broadcastOperand(1));
      KILN_ASSIGN(Expr b, broadcastOperand(2));
      return select(c, a, b);
    }
    if (op == "Max" || op == "Min" || op == "Sum") {
      KILN_ASSIGN(Expr r, broadcastOperand(0));
      for (size_t i = 1; i < n.numInputs(); ++i) {
        KILN_ASSIGN(Expr b, broadcastOperand(i));
        r = op == "Sum" ? r + b : binary(op == "Max" ? BinaryOp::Max : BinaryOp::Min, r, b);
      }
      return r;
    }
    if (op == "BatchNormalization") {  // inference form: per-channel (axis 1) affine
      if (n.getInt("training_mode") || n.numOutputs() > 1)
        return makeError(ErrorCode::CodegenUnsupported, "BatchNormalization in training mode has no code generation")
            .atNode(n.displayName(), n.opType());
      Index channel{idx.size() > 1 ? idx[1] : intImm(0)};
      KILN_ASSIGN(Expr x, operand(0, idx));
      std::vector<Expr> p;
      for (size_t i = 1; i < 5; ++i) {
        KILN_ASSIGN(Expr v, operand(i, channel));
        p.push_back(v);
      }
      return (x - p[2]) * unary(UnaryOp::Rsqrt, p[3] + fconst(n.getFloat("epsilon"))) * p[0] + p[1];
    }
    if (op == "Mean") {
      KILN_ASSIGN(Expr r, broadcastOperand(0));
      for (size_t i = 1; i < n.numInputs(); ++i) {
        KILN_ASSIGN(Expr b, broadcastOperand(i));
        r = r + b;
      }
      return r / fconst(double(n.numInputs()));
    }
    if (op == "CastLike") {
      KILN_ASSIGN(Expr x, broadcastOperand(0));
      if (outType == ScalarType::Bool) return binary(BinaryOp::Ne, x, constantOf(x->type, 0));
      if (x->type == ScalarType::Bool) return select(x, constantOf(ct, 1), constantOf(ct, 0));
      return cast(ct, x);
    }
    KILN_ASSIGN(Expr a, broadcastOperand(0));
    KILN_ASSIGN(Expr b, broadcastOperand(1));
    if (op == "Xor") return binary(BinaryOp::Ne, a, b);
    if (op == "Mod") {
      bool fmod = n.hasAttr("fmod") && n.getInt("fmod");
      if (isFloatType(a->type)) {  // C fmod: a - b * trunc(a / b)
        Expr q = a / b;
        Expr t = select(binary(BinaryOp::Lt, q, constantOf(q->type, 0)), unary(UnaryOp::Ceil, q), unary(UnaryOp::Floor, q));
        return a - b * t;
      }
      return fmod ? a - b * (a / b) : binary(BinaryOp::FloorMod, a, b);
    }
    if (op == "Add") return a + b;
    if (op == "Sub") return a - b;
    if (op == "Mul") return a * b;
    if (op == "Div") return a / b;
    if (op == "Pow") return powExpr(a, b);
    if (op == "PRelu") return select(binary(BinaryOp::Lt, a, constantOf(a->type, 0)), a * b, a);
    static const std::map<std::string, BinaryOp> compare = {
        {"Equal", BinaryOp::Eq}, {"Less", BinaryOp::Lt}, {"Greater", BinaryOp::Gt}, {"LessOrEqual", BinaryOp::Le},
        {"GreaterOrEqual", BinaryOp::Ge}, {"And", BinaryOp::And}, {"Or", BinaryOp::Or}};
    return binary(compare.at(op), a, b);
  }

  // Index remapping.
  KILN_ASSIGN(Dims inDims, staticDims(n.input(0)));
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
    return operand(0, unflatten(flatIndex(idx, outDims), inDims));
  if (op == "Expand") return operand(0, broadcastIndex(idx, inDims));
  if (op == "Tile") {
    Index in(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) in[i] = inDims[i] == outDims[i] ? idx[i] : floorMod(idx[i], inDims[i]);
    return operand(0, in);
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm;
    if (n.hasAttr("perm")) perm = n.getInts("perm");
    else for (int64_t i = int64_t(inDims.size()); i-- > 0;) perm.push_back(i);
    Index in(idx.size());
    for (size_t i = 0; i < perm.size(); ++i) in[size_t(perm[i])] = idx[i];
    return operand(0, in);
  }
  if (op == "Slice") {
    std::vector<std::vector<int64_t>> args(5);
    for (size_t i = 1; i < 5; ++i) {
      if (!n.hasInput(i)) continue;
      const Tensor* t = constantOperand(n, i);
      if (!t) return needsConstant(n, "bound");
      args[i] = t->toInt64s();
    }
    KILN_ASSIGN(auto dims, ir::computeSlice(inDims, args[1], args[2], args[3], args[4]));
    Index in(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) in[i] = intImm(dims[i].start) + idx[i] * dims[i].step;
    return operand(0, in);
  }
  if (op == "Split") {
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(n.getInt("axis"), int64_t(inDims.size())));
    int64_t offset = 0;
    for (size_t r = 0; r < result; ++r) {
      KILN_ASSIGN(Dims d, staticDims(n.output(r)));
      offset += d[size_t(axis)];
    }
    Index in = idx;
    in[size_t(axis)] = idx[size_t(axis)] + offset;
    return operand(0, in);
  }
  if (op == "Concat") {
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(n.getInt("axis"), int64_t(outDims.size())));
    const size_t a = size_t(axis);
    std::vector<int64_t> offsets{0};
    for (size_t i = 0; i < n.numInputs(); ++i) {
      KILN_ASSIGN(Dims d, staticDims(n.input(i)));
      offsets.push_back(offsets.back() + d[a]);
    }
    std::vector<std::pair<int64_t, Expr>> parts;  // (end offset, element) of each non-empty input
    for (size_t i = 0; i < n.numInputs(); ++i) {
      int64_t extent = offsets[i + 1] - offsets[i];
      if (extent == 0) continue;
      Index in = idx;
      in[a] = clampIndex(idx[a] - offsets[i], extent);
      KILN_ASSIGN(Expr e, operand(i, in));
      parts.push_back({offsets[i + 1], e});
    }
    // A balanced tree of selects: log2(inputs) comparisons per element (DenseNet
    // concatenates up to 49 inputs), each side loaded only when chosen on the CPU.
    std::function<Expr(size_t, size_t)> pick = [&](size_t lo, size_t hi) -> Expr {
      if (hi - lo == 1) return parts[lo].second;
      size_t mid = (lo + hi) / 2;
      return select(binary(BinaryOp::Lt, idx[a], intImm(parts[mid - 1].first)), pick(lo, mid), pick(mid, hi));
    };
    return pick(0, parts.size());
  }
  if (op == "Pad") {
    if (n.hasAttr("mode") && n.getString("mode") != "constant")
      return makeError(ErrorCode::CodegenUnsupported, "Pad mode '", n.getString("mode"),
                       "' has no code generation yet").atNode(n.displayName(), n.opType());
    const Tensor* pads = constantOperand(n, 1);
    if (!pads) return needsConstant(n, "pads");
    std::vector<int64_t> p = pads->toInt64s();
    if (n.numInputs() > 3 && n.hasInput(3))
      return makeError(ErrorCode::CodegenUnsupported, "Pad with axes has no code generation yet")
          .atNode(n.displayName(), n.opType());
    Expr value = fconst(0);
    if (n.hasInput(2)) {
      const Tensor* v = constantOperand(n, 2);
      if (!v) return needsConstant(n, "constant_value");
      value = fconst(v->scalarAsDouble());
    }
    Index in(idx.size());
    Expr inside = boolImm(true);
    for (size_t i = 0; i < idx.size(); ++i) {
      Expr shifted = idx[i] - p[i];
      if (p[i] != 0 || p[i + idx.size()] != 0)
        inside = binary(BinaryOp::And, inside,
                        binary(BinaryOp::And, binary(BinaryOp::Ge, shifted, intImm(0)),
                               binary(BinaryOp::Lt, shifted, intImm(inDims[i]))));
      in[i] = p[i] != 0 || p[i + idx.size()] != 0 ? clampIndex(shifted, inDims[i]) : shifted;
    }
    KILN_ASSIGN(Expr x, operand(0, in));
    return select(inside, x, value);
  }
  if (op == "Resize") return resizeAt(n, idx, inDims, outDims, ct);
  if (op == "GatherElements") {
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(n.getInt("axis"), int64_t(inDims.size())));
    KILN_ASSIGN(Expr raw, operand(1, idx));
    Expr i = cast(ScalarType::I64, raw);
    i = select(binary(BinaryOp::Lt, i, intImm(0)), i + inDims[size_t(axis)], i);
    Index in = idx;
    in[size_t(axis)] = clampIndex(i, inDims[size_t(axis)]);
    return operand(0, in);
  }
  if (op == "Trilu") {
    int64_t k = 0;
    if (n.numInputs() > 1 && n.hasInput(1)) {
      const Tensor* kt = constantOperand(n, 1);
      if (!kt) return needsConstant(n, "k");
      k = int64_t(kt->scalarAsDouble());
    }
    KILN_ASSIGN(Expr x, operand(0, idx));
    Expr diff = idx[idx.size() - 1] - idx[idx.size() - 2];  // column - row
    bool upper = !n.hasAttr("upper") || n.getInt("upper");
    Expr keep = upper ? binary(BinaryOp::Ge, diff, intImm(k)) : binary(BinaryOp::Le, diff, intImm(k));
    return select(keep, x, constantOf(x->type, 0));
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    const int64_t b = n.getInt("blocksize");
    Index in(4);
    if (op == "SpaceToDepth") {  // out[n, (by*b+bx)*C + c, h, w] = in[n, c, h*b+by, w*b+bx]
      const int64_t c = inDims[1];
      Expr block = floorDiv(idx[1], c);
      in = {idx[0], floorMod(idx[1], c), idx[2] * b + floorDiv(block, b), idx[3] * b + floorMod(block, b)};
    } else {
      const int64_t c = outDims[1];
      bool crd = n.hasAttr("mode") && n.getString("mode") == "CRD";
      Expr by = floorMod(idx[2], b), bx = floorMod(idx[3], b);
      Expr channel = crd ? (idx[1] * b + by) * b + bx : (by * b + bx) * c + idx[1];
      in = {idx[0], channel, floorDiv(idx[2], b), floorDiv(idx[3], b)};
    }
    return operand(0, in);
  }
  if (op == "Gather") {
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(n.getInt("axis"), int64_t(inDims.size())));
    KILN_ASSIGN(Dims qDims, staticDims(n.input(1)));
    const size_t a = size_t(axis), q = qDims.size();
    Index qIdx(idx.begin() + a, idx.begin() + a + q);
    KILN_ASSIGN(Expr raw, operand(1, qIdx));
    Expr i = cast(ScalarType::I64, raw);
    i = select(binary(BinaryOp::Lt, i, intImm(0)), i + inDims[a], i);
    Index in(idx.begin(), idx.begin() + a);
    in.push_back(clampIndex(i, inDims[a]));
    in.insert(in.end(), idx.begin() + a + q, idx.end());
    return operand(0, in);
  }
  return makeError(ErrorCode::CodegenUnsupported, "no element formula for ", op).atNode(n.displayName(), n.opType());
}

}  // namespace kiln::codegen
