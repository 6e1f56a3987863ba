//===- lib/ir/ops/InferHelpers.cpp - Common inference rules and propagation -===//
//
// The generic inference rules and a tiny elementwise evaluator over doubles /
// int64 for static value propagation through shape computations. Propagation
// only affects static types; execution never depends on it.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"

#include <cmath>

namespace kiln::ir::infer {

std::optional<std::vector<int64_t>> knownInts(const InferenceContext& ctx, size_t i) {
  const Tensor* t = known(ctx, i);
  if (!t || !(isInteger(t->dtype()) || t->dtype() == DType::Bool)) return std::nullopt;
  return t->toInt64s();
}

Expected<std::optional<int64_t>> knownScalarInt(const InferenceContext& ctx, size_t i, const char* what) {
  const Tensor* t = known(ctx, i);
  if (!t) return std::optional<int64_t>();
  if (t->numElements() != 1) return shapeError(std::string(what) + " must hold one value, got " + t->typeString());
  return std::optional<int64_t>(t->toInt64s()[0]);
}

bool shouldPropagate(const InferenceContext& ctx, const Dims& dims) {
  if (ctx.isRuntime()) return false;
  auto n = checkedNumElements(dims);
  return n && *n <= kMaxPropagatedElements;
}

Status requireSameDType(const InferenceContext& ctx, std::initializer_list<size_t> indices) {
  DType first = DType::Undefined;
  size_t firstIndex = 0;
  for (size_t i : indices) {
    if (!ctx.hasInput(i)) continue;
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (first == DType::Undefined) {
      first = t.dtype();
      firstIndex = i;
    } else if (t.dtype() != first) {
      return shapeError("input " + std::to_string(i) + " has element type " + dtypeName(t.dtype()) +
                        " but input " + std::to_string(firstIndex) + " has " + dtypeName(first));
    }
  }
  return Status::ok();
}

Status requireRank(const TensorType& t, int64_t rank, const char* what) {
  if (t.hasRank() && t.rank() != rank)
    return shapeError(std::string(what) + " must have rank " + std::to_string(rank) + ", got " + t.str());
  return Status::ok();
}

Status sameAsInput0(InferenceContext& ctx) {
  ctx.setOutputType(0, ctx.inputType(0));
  if (const Tensor* v = known(ctx, 0); v && ctx.inputType(0).isTensor() && shouldPropagate(ctx, v->dims())) {
    const std::string& op = ctx.node().opType();
    if (op == "Identity") ctx.setOutputValue(0, *v);
    else propagateElementwise(ctx, v->dtype(), v->dims());
  }
  return Status::ok();
}

Status broadcastAll(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType first, ctx.inputTensor(0));
  bool ranked = first.hasRank();
  Dims dims = first.dims();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (t.dtype() != first.dtype())
      return shapeError("input " + std::to_string(i) + " has element type " + dtypeName(t.dtype()) +
                        " but input 0 has " + dtypeName(first.dtype()));
    if (!t.hasRank()) ranked = false;
    if (ranked) {
      KILN_ASSIGN(dims, broadcastDims(dims, t.dims()));
    }
  }
  if (!ranked) {
    setUnranked(ctx, 0, first.dtype());
    return Status::ok();
  }
  setOut(ctx, 0, first.dtype(), dims);
  propagateElementwise(ctx, first.dtype(), dims);
  return Status::ok();
}

Status broadcastCompare(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1}));
  KILN_ASSIGN(TensorType a, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType b, ctx.inputTensor(1));
  if (!a.hasRank() || !b.hasRank()) {
    setUnranked(ctx, 0, DType::Bool);
    return Status::ok();
  }
  KILN_ASSIGN(Dims dims, broadcastDims(a.dims(), b.dims()));
  setOut(ctx, 0, DType::Bool, dims);
  propagateElementwise(ctx, DType::Bool, dims);
  return Status::ok();
}

Expected<Type> mergeTypes(const Type& a, const Type& b) {
  if (a.kind() != b.kind()) return shapeError("types " + a.str() + " and " + b.str() + " are of different kinds");
  if (!a.isTensor()) {
    KILN_ASSIGN(Type elem, mergeTypes(a.element(), b.element()));
    return a.isSequence() ? Type::sequence(elem) : Type::optional(elem);
  }
  const TensorType &ta = a.tensor(), &tb = b.tensor();
  DType dtype = ta.dtype() == DType::Undefined ? tb.dtype() : ta.dtype();
  if (tb.dtype() != DType::Undefined && tb.dtype() != dtype)
    return shapeError("element types differ: " + a.str() + " vs " + b.str());
  if (!ta.hasRank() || !tb.hasRank() || ta.rank() != tb.rank()) return Type(TensorType::unranked(dtype));
  Dims d = ta.dims();
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] != tb.dims()[i]) d[i] = kUnknownDim;
  return Type(TensorType(dtype, d));
}

namespace {
// Index of the broadcast source element for flat output index `i`.
int64_t sourceIndex(int64_t i, const Dims& out, const Dims& in) {
  int64_t idx = 0, stride = 1, rem = i;
  size_t off = out.size() - in.size();
  std::vector<int64_t> coord(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coord[d] = rem % out[d];
    rem /= out[d];
  }
  for (size_t d = in.size(); d-- > 0;) {
    int64_t c = in[d] == 1 ? 0 : coord[d + off];
    idx += c * stride;
    stride *= in[d];
  }
  return idx;
}

std::optional<double> apply(std::string_view op, const std::vector<double>& a, bool isInt,
                            const Node& node) {
  double x = a.empty() ? 0 : a[0];
  double y = a.size() > 1 ? a[1] : 0;
  if (op == "Add") return x + y;
  if (op == "Sum" || op == "Mean") {
    double s = 0;
    for (double v : a) s += v;
    return op == "Sum" ? s : s / double(a.size());
  }
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  if (op == "Div") {
    if (isInt) return y == 0 ? std::optional<double>() : std::trunc(x / y);
    return x / y;
  }
  if (op == "Mod") {
    if (y == 0) return std::nullopt;
    if (!isInt || node.getInt("fmod")) return std::fmod(x, y);
    double m = std::fmod(x, y);
    return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
  }
  if (op == "Neg") return -x;
  if (op == "Abs") return std::fabs(x);
  if (op == "Max" || op == "Min") {
    double r = x;
    for (double v : a) r = op == "Max" ? std::max(r, v) : std::min(r, v);
    return r;
  }
  if (op == "Equal") return double(x == y);
  if (op == "Less") return double(x < y);
  if (op == "Greater") return double(x > y);
  if (op == "LessOrEqual") return double(x <= y);
  if (op == "GreaterOrEqual") return double(x >= y);
  if (op == "Not") return double(x == 0);
  if (op == "And") return double(x != 0 && y != 0);
  if (op == "Or") return double(x != 0 || y != 0);
  if (op == "Where") return x != 0 ? y : a[2];
  if (op == "Cast" || op == "Identity") return x;
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Round") return std::nearbyint(x);
  if (op == "Reciprocal") return 1.0 / x;
  return std::nullopt;
}
}  // namespace

void propagateElementwise(InferenceContext& ctx, DType resultDType, const Dims& resultDims) {
  if (!shouldPropagate(ctx, resultDims)) return;
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Tensor* t = known(ctx, i);
    if (!t) return;
    ins.push_back(t);
  }
  const std::string& op = ctx.node().opType();
  int64_t n = numElements(resultDims);
  std::vector<std::vector<double>> vals;
  for (const Tensor* t : ins) vals.push_back(t->toDoubles());
  bool isInt = !ins.empty() && !isFloat(ins[op == "Where" ? 1 : 0]->dtype());
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<double> args(ins.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ins.size(); ++k) args[k] = vals[k][size_t(sourceIndex(i, resultDims, ins[k]->dims()))];
    auto r = apply(op, args, isInt, ctx.node());
    if (!r) return;
    out[size_t(i)] = *r;
  }
  ctx.setOutputValue(0, Tensor::fromVector<double>(resultDims, out).castTo(resultDType));
}

}  // namespace kiln::ir::infer
