//===- lib/ir/ops/ShapeOps.cpp - Reshaping, slicing, padding, resizing -----===//
//
// Ops that move or replicate data without arithmetic (the injective family):
// Reshape, Flatten, Squeeze/Unsqueeze, Transpose, Concat, Split, Slice, Expand,
// Tile, Pad, Depth/SpaceToDepth, Resize, and shape sources: Shape, Size,
// Constant, ConstantOfShape, Range, EyeLike, Trilu.
//
// Shape-computation ops propagate values so that exporter-generated shape
// arithmetic resolves to static shapes.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"
#include "kiln/ir/ResizeTaps.h"

namespace kiln::ir {
using namespace infer;

namespace {

/// Records `value` for result 0 if static inference should propagate it.
void propagate(InferenceContext& ctx, const Tensor& value) {
  if (shouldPropagate(ctx, value.dims())) ctx.setOutputValue(0, value);
}

Status inferReshape(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType shapeType, ctx.inputTensor(1));
  bool allowZero = ctx.node().getInt("allowzero") != 0;
  if (shapeType.hasRank() && shapeType.rank() == 1) KILN_TRY(checkRank(shapeType.dim(0), "the target shape"));
  auto shape = knownInts(ctx, 1);
  if (!shape) {
    if (shapeType.hasRank() && shapeType.rank() == 1 && shapeType.dim(0) >= 0)
      setOut(ctx, 0, x.dtype(), Dims(size_t(shapeType.dim(0)), kUnknownDim));
    else
      setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  Dims out = *shape;
  int64_t inferIndex = -1, knownProduct = 1;
  bool allKnown = x.isStatic();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (inferIndex >= 0) return shapeError("shape has more than one -1");
      inferIndex = int64_t(i);
    } else if (out[i] == 0 && !allowZero) {
      if (!x.hasRank() || i >= size_t(x.rank()))
        return shapeError("shape copies dim " + std::to_string(i) + " (0) but the input has rank " +
                          (x.hasRank() ? std::to_string(x.rank()) : std::string("unknown")));
      out[i] = x.dim(int64_t(i));
      if (out[i] < 0) allKnown = false;
      else knownProduct *= out[i];
    } else if (out[i] < 0) {
      return shapeError("shape value " + std::to_string(out[i]) + " is invalid");
    } else {
      if (knownProduct != 0 && out[i] > (int64_t(1) << 62) / knownProduct) return shapeError("shape is too large");
      knownProduct *= out[i];
    }
  }
  if (allowZero && inferIndex >= 0)
    for (int64_t d : out)
      if (d == 0) return shapeError("shape has both 0 and -1 with allowzero=1");
  if (x.isStatic()) {
    int64_t total = *x.numElements();
    if (inferIndex >= 0) {
      if (knownProduct == 0 || total % knownProduct != 0)
        return shapeError("cannot reshape " + x.str() + " to [" + dimsToString(*shape) + "]");
      out[size_t(inferIndex)] = total / knownProduct;
    } else if (allKnown && knownProduct != total) {
      return shapeError("cannot reshape " + x.str() + " (" + std::to_string(total) + " elements) to [" +
                        dimsToString(out) + "]");
    }
  } else if (inferIndex >= 0) {
    out[size_t(inferIndex)] = kUnknownDim;
  }
  setOut(ctx, 0, x.dtype(), out);
  if (const Tensor* v = known(ctx, 0); v && TensorType(x.dtype(), out).isStatic()) propagate(ctx, v->reshaped(out));
  return Status::ok();
}

Status inferFlatten(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setOut(ctx, 0, x.dtype(), {kUnknownDim, kUnknownDim});
    return Status::ok();
  }
  int64_t axis = ctx.node().getInt("axis");
  if (axis < -x.rank() || axis > x.rank()) return attrError("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += x.rank();
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t& p = i < axis ? a : b;
    p = (p < 0 || x.dim(i) < 0) ? kUnknownDim : p * x.dim(i);
  }
  setOut(ctx, 0, x.dtype(), {a, b});
  if (const Tensor* v = known(ctx, 0); v) propagate(ctx, v->reshaped({a, b}));
  return Status::ok();
}

Status inferSqueeze(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  std::optional<std::vector<int64_t>> axes;
  if (ctx.hasInput(1)) {
    axes = knownInts(ctx, 1);
    if (!axes) {
      setUnranked(ctx, 0, x.dtype());
      return Status::ok();
    }
  }
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  Dims out;
  if (!axes) {
    for (int64_t d : x.dims()) {
      if (d < 0) {
        setUnranked(ctx, 0, x.dtype());
        return Status::ok();
      }
      if (d != 1) out.push_back(d);
    }
  } else {
    KILN_ASSIGN(std::vector<int64_t> norm, normalizeAxes(*axes, x.rank()));
    for (int64_t a : norm)
      if (x.dim(a) >= 0 && x.dim(a) != 1)
        return shapeError("cannot squeeze axis " + std::to_string(a) + " of " + x.str() + " (size is not 1)");
    for (int64_t i = 0; i < x.rank(); ++i)
      if (std::find(norm.begin(), norm.end(), i) == norm.end()) out.push_back(x.dim(i));
  }
  setOut(ctx, 0, x.dtype(), out);
  if (const Tensor* v = known(ctx, 0); v) propagate(ctx, v->reshaped(out));
  return Status::ok();
}

Status inferUnsqueeze(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  auto axes = knownInts(ctx, 1);
  if (!axes || !x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  int64_t outRank = x.rank() + int64_t(axes->size());
  KILN_TRY(checkRank(outRank, "the result"));
  KILN_ASSIGN(std::vector<int64_t> norm, normalizeAxes(*axes, outRank));
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::find(norm.begin(), norm.end(), i) != norm.end()) out.push_back(1);
    else out.push_back(x.dim(int64_t(next++)));
  }
  setOut(ctx, 0, x.dtype(), out);
  if (const Tensor* v = known(ctx, 0); v) propagate(ctx, v->reshaped(out));
  return Status::ok();
}

Status inferTranspose(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  std::vector<int64_t> perm;
  if (const Attribute* p = ctx.node().findAttr("perm")) {
    perm = p->ints();
    if (int64_t(perm.size()) != x.rank())
      return attrError("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.rank()));
    KILN_ASSIGN(perm, normalizeAxes(perm, x.rank(), "perm"));
  } else {
    for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  Dims out;
  for (int64_t p : perm) out.push_back(x.dim(p));
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferConcat(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType first, ctx.inputTensor(0));
  int64_t rank = -1;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (t.dtype() != first.dtype()) return shapeError("inputs of Concat must share one element type");
    if (t.hasRank()) {
      if (rank >= 0 && t.rank() != rank) return shapeError("inputs of Concat have different ranks");
      rank = t.rank();
    }
  }
  if (rank < 0) {
    setUnranked(ctx, 0, first.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), rank));
  Dims out(size_t(rank), kUnknownDim);
  int64_t total = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    TensorType t = ctx.inputType(i).tensor();
    if (!t.hasRank()) {
      total = kUnknownDim;
      continue;
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) continue;
      int64_t v = t.dim(d);
      if (v < 0) continue;
      if (out[size_t(d)] >= 0 && out[size_t(d)] != v)
        return shapeError("Concat input " + std::to_string(i) + " " + t.str() + " differs in dim " + std::to_string(d));
      out[size_t(d)] = v;
    }
    total = (total < 0 || t.dim(axis) < 0) ? kUnknownDim : total + t.dim(axis);
  }
  out[size_t(axis)] = total;
  setOut(ctx, 0, first.dtype(), out);
  // Propagate concatenations of known 1-D values (shape vectors).
  if (rank == 1 && total >= 0 && shouldPropagate(ctx, out)) {
    std::vector<int64_t> vals;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      auto v = knownInts(ctx, i);
      if (!v || !isInteger(first.dtype())) return Status::ok();
      vals.insert(vals.end(), v->begin(), v->end());
    }
    ctx.setOutputValue(0, Tensor::fromVector<int64_t>(out, vals).castTo(first.dtype()));
  }
  return Status::ok();
}

Status inferSplit(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  size_t n = ctx.numOutputs();
  if (!x.hasRank()) {
    for (size_t i = 0; i < n; ++i) setUnranked(ctx, i, x.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  int64_t dim = x.dim(axis);
  std::vector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    auto split = knownInts(ctx, 1);
    if (split) {
      if (split->size() != n)
        return shapeError("split has " + std::to_string(split->size()) + " sizes for " + std::to_string(n) + " outputs");
      int64_t sum = 0;
      for (int64_t s : *split) {
        if (s < 0) return shapeError("split sizes must be non-negative");
        sum += s;
      }
      if (dim >= 0 && sum != dim)
        return shapeError("split sizes sum to " + std::to_string(sum) + ", axis has " + std::to_string(dim));
      sizes = *split;
    } else {
      sizes.assign(n, kUnknownDim);
    }
  } else if (dim >= 0) {
    int64_t chunk = (dim + int64_t(n) - 1) / int64_t(n);  // last chunk may be smaller (opset 18 rule)
    for (size_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * int64_t(i))));
  } else {
    sizes.assign(n, kUnknownDim);
  }
  for (size_t i = 0; i < n; ++i) {
    Dims d = x.dims();
    d[size_t(axis)] = sizes[i];
    setOut(ctx, i, x.dtype(), d);
  }
  return Status::ok();
}

Status inferSlice(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  auto starts = knownInts(ctx, 1), ends = knownInts(ctx, 2);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{}, steps = std::vector<int64_t>{};
  if (ctx.hasInput(3)) axes = knownInts(ctx, 3);
  if (ctx.hasInput(4)) steps = knownInts(ctx, 4);
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (!starts || !ends || !axes || !steps) {
    setOut(ctx, 0, x.dtype(), Dims(size_t(x.rank()), kUnknownDim));
    return Status::ok();
  }
  // Unknown input dims: resolve with a placeholder and mark the sliced dims unknown.
  Dims concrete = x.dims();
  for (int64_t& d : concrete)
    if (d < 0) d = 0;
  KILN_ASSIGN(std::vector<SliceDim> sl, computeSlice(concrete, *starts, *ends, *axes, *steps));
  Dims out;
  for (size_t d = 0; d < sl.size(); ++d) out.push_back(x.dim(int64_t(d)) < 0 ? kUnknownDim : sl[d].count);
  setOut(ctx, 0, x.dtype(), out);
  const Tensor* v = known(ctx, 0);
  if (v && v->rank() == 1 && shouldPropagate(ctx, out)) {
    auto vals = v->toInt64s();
    std::vector<int64_t> picked;
    for (int64_t i = 0; i < sl[0].count; ++i) picked.push_back(vals[size_t(sl[0].start + i * sl[0].step)]);
    if (isInteger(v->dtype())) ctx.setOutputValue(0, Tensor::fromVector<int64_t>(out, picked).castTo(v->dtype()));
  }
  return Status::ok();
}

Status inferExpand(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType shapeType, ctx.inputTensor(1));
  if (shapeType.hasRank() && shapeType.rank() == 1) KILN_TRY(checkRank(shapeType.dim(0), "the target shape"));
  auto shape = knownInts(ctx, 1);
  if (!shape || !x.hasRank()) {
    if (shapeType.hasRank() && shapeType.rank() == 1 && shapeType.dim(0) >= 0 && x.hasRank())
      setOut(ctx, 0, x.dtype(), Dims(size_t(std::max(shapeType.dim(0), x.rank())), kUnknownDim));
    else
      setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  for (int64_t d : *shape)
    if (d < 0) return shapeError("Expand shape has negative dim " + std::to_string(d));
  KILN_ASSIGN(Dims out, broadcastDims(x.dims(), *shape));
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferTile(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  auto repeats = knownInts(ctx, 1);
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (!repeats) {
    setOut(ctx, 0, x.dtype(), Dims(size_t(x.rank()), kUnknownDim));
    return Status::ok();
  }
  if (int64_t(repeats->size()) != x.rank())
    return shapeError("repeats has " + std::to_string(repeats->size()) + " values for rank " + std::to_string(x.rank()));
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if ((*repeats)[size_t(i)] < 0) return shapeError("repeats must be non-negative");
    out.push_back(x.dim(i) < 0 ? kUnknownDim : x.dim(i) * (*repeats)[size_t(i)]);
  }
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferPad(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  const std::string& mode = ctx.node().getString("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return attrError("mode '" + mode + "' is not constant, reflect, edge or wrap");
  if (ctx.hasInput(2)) KILN_TRY(requireSameDType(ctx, {0, 2}));
  auto pads = knownInts(ctx, 1);
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (!pads) {
    setOut(ctx, 0, x.dtype(), Dims(size_t(x.rank()), kUnknownDim));
    return Status::ok();
  }
  if (int64_t(pads->size()) != 2 * x.rank())
    return shapeError("pads has " + std::to_string(pads->size()) + " values, expected " + std::to_string(2 * x.rank()));
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t d = x.dim(i);
    int64_t o = d < 0 ? kUnknownDim : d + (*pads)[size_t(i)] + (*pads)[size_t(i + x.rank())];
    if (d >= 0 && o < 0) return shapeError("pads remove more than dim " + std::to_string(i) + " holds");
    out.push_back(o);
  }
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferShape(InferenceContext& ctx) {
  const Type& t = ctx.inputType(0);
  if (!t.isTensor()) return shapeError("Shape needs a tensor input");
  const TensorType& x = t.tensor();
  if (!x.hasRank()) {
    setOut(ctx, 0, DType::I64, {kUnknownDim});
    return Status::ok();
  }
  int64_t rank = x.rank();
  auto clampIdx = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clampIdx(ctx.node().getInt("start"));
  int64_t end = ctx.node().hasAttr("end") ? clampIdx(ctx.node().getInt("end")) : rank;
  int64_t n = std::max<int64_t>(0, end - start);
  setOut(ctx, 0, DType::I64, {n});
  Dims vals(x.dims().begin() + start, x.dims().begin() + start + n);
  bool allKnown = std::all_of(vals.begin(), vals.end(), [](int64_t d) { return d >= 0; });
  if (allKnown) propagate(ctx, Tensor::fromVector<int64_t>({n}, vals));
  return Status::ok();
}

Status inferSize(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  setOut(ctx, 0, DType::I64, {});
  if (auto n = x.numElements()) propagate(ctx, Tensor::scalar<int64_t>(*n));
  return Status::ok();
}

Status inferConstant(InferenceContext& ctx) {
  const Tensor& v = ctx.node().getTensor("value");
  setOut(ctx, 0, v.dtype(), v.dims());
  ctx.setOutputValue(0, v);
  return Status::ok();
}

Status inferConstantOfShape(InferenceContext& ctx) {
  DType dtype = DType::F32;
  if (const Attribute* a = ctx.node().findAttr("value")) {
    if (a->t().numElements() != 1) return attrError("value must hold exactly one element");
    dtype = a->t().dtype();
  }
  KILN_ASSIGN(TensorType s, ctx.inputTensor(0));
  if (s.hasRank() && s.rank() == 1) KILN_TRY(checkRank(s.dim(0), "the shape"));
  auto shape = knownInts(ctx, 0);
  if (!shape) {
    if (s.hasRank() && s.rank() == 1 && s.dim(0) >= 0) setOut(ctx, 0, dtype, Dims(size_t(s.dim(0)), kUnknownDim));
    else setUnranked(ctx, 0, dtype);
    return Status::ok();
  }
  for (int64_t d : *shape)
    if (d < 0) return shapeError("shape has negative dim " + std::to_string(d));
  if (!checkedNumElements(*shape)) return shapeError("shape is too large");
  setOut(ctx, 0, dtype, *shape);
  if (shouldPropagate(ctx, *shape)) {
    Tensor fill = ctx.node().hasAttr("value") ? ctx.node().getTensor("value") : Tensor::scalar<float>(0.0f);
    Tensor out = Tensor::zeros(dtype, *shape);
    size_t es = dtypeSize(dtype);
    auto* dst = static_cast<uint8_t*>(out.mutableRawData());
    for (int64_t i = 0; i < out.numElements(); ++i) std::memcpy(dst + size_t(i) * es, fill.rawData(), es);
    ctx.setOutputValue(0, out);
  }
  return Status::ok();
}

Status inferRange(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType start, ctx.inputTensor(0));
  for (size_t i = 0; i < 3; ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (t.hasRank() && t.rank() != 0 && !(t.rank() == 1 && t.dim(0) == 1))
      return shapeError("Range operands must be scalars, got " + t.str());
  }
  const Tensor *s = known(ctx, 0), *l = known(ctx, 1), *d = known(ctx, 2);
  if (!s || !l || !d) {
    setOut(ctx, 0, start.dtype(), {kUnknownDim});
    return Status::ok();
  }
  double sv = s->scalarAsDouble(), lv = l->scalarAsDouble(), dv = d->scalarAsDouble();
  if (dv == 0) return shapeError("Range delta must not be 0");
  double count = std::ceil((lv - sv) / dv);
  if (!(count < 9.2e18)) return shapeError("Range produces too many elements");
  int64_t n = std::max<int64_t>(0, int64_t(count));
  setOut(ctx, 0, start.dtype(), {n});
  // Propagate only where double arithmetic is exact.
  if (shouldPropagate(ctx, {n}) && isInteger(start.dtype()) && std::fabs(sv) < 1e15 && std::fabs(dv) < 1e9) {
    std::vector<int64_t> vals;
    for (int64_t i = 0; i < n; ++i) vals.push_back(int64_t(sv) + i * int64_t(dv));
    ctx.setOutputValue(0, Tensor::fromVector<int64_t>({n}, vals).castTo(start.dtype()));
  }
  return Status::ok();
}

Status inferDepthToSpace(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireRank(x, 4, "input"));
  int64_t b = ctx.node().getInt("blocksize");
  if (b <= 0) return attrError("blocksize must be positive");
  if (!x.hasRank()) {
    setOut(ctx, 0, x.dtype(), Dims(4, kUnknownDim));
    return Status::ok();
  }
  auto mul = [](int64_t d, int64_t f) { return d < 0 ? kUnknownDim : d * f; };
  if (ctx.node().op() == ir::Op::DepthToSpace) {
    if (x.dim(1) >= 0 && x.dim(1) % (b * b) != 0) return shapeError("channels must be divisible by blocksize^2");
    const std::string& mode = ctx.node().getString("mode");
    if (mode != "DCR" && mode != "CRD") return attrError("mode must be DCR or CRD");
    setOut(ctx, 0, x.dtype(), {x.dim(0), x.dim(1) < 0 ? kUnknownDim : x.dim(1) / (b * b), mul(x.dim(2), b), mul(x.dim(3), b)});
  } else {
    for (int i = 2; i < 4; ++i)
      if (x.dim(i) >= 0 && x.dim(i) % b != 0) return shapeError("spatial dims must be divisible by blocksize");
    setOut(ctx, 0, x.dtype(), {x.dim(0), mul(x.dim(1), b * b), x.dim(2) < 0 ? kUnknownDim : x.dim(2) / b,
                                x.dim(3) < 0 ? kUnknownDim : x.dim(3) / b});
  }
  return Status::ok();
}

Status inferTrilu(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.hasRank() && x.rank() < 2) return shapeError("Trilu needs rank >= 2, got " + x.str());
  ctx.setOutputType(0, x);
  return Status::ok();
}

Status inferEyeLike(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireRank(x, 2, "input"));
  DType dtype = x.dtype();
  if (const Attribute* a = ctx.node().findAttr("dtype")) {
    auto d = dtypeFromOnnx(int(a->i()));
    if (!d) return Error(ErrorCode::UnsupportedType, "dtype " + std::to_string(a->i()) + " is not supported");
    dtype = *d;
  }
  ctx.setOutputType(0, x.hasRank() ? TensorType(dtype, x.dims()) : TensorType(dtype, {kUnknownDim, kUnknownDim}));
  return Status::ok();
}

Status inferResize(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  const Node& n = ctx.node();
  const std::string& mode = n.getString("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return attrError("mode '" + mode + "' is not nearest, linear or cubic");
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  Dims out(size_t(x.rank()), kUnknownDim);
  const Tensor* sizes = known(ctx, 3);
  const Tensor* scales = known(ctx, 2);
  if (sizes && sizes->numElements() > 0) {
    if (sizes->numElements() != x.rank()) return shapeError("sizes must have one value per input dim");
    out = sizes->toInt64s();
  } else if (scales && scales->numElements() > 0) {
    if (scales->numElements() != x.rank()) return shapeError("scales must have one value per input dim");
    auto s = scales->toDoubles();
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (s[size_t(i)] <= 0) return shapeError("scales must be positive");
      out[size_t(i)] = x.dim(i) < 0 ? kUnknownDim : resizedLength(x.dim(i), s[size_t(i)]);
    }
  } else if ((ctx.hasInput(3) && !sizes) || (ctx.hasInput(2) && !scales)) {
    // Not known statically.
  } else {
    return shapeError("Resize needs either scales or sizes");
  }
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

}  // namespace

void registerShapeOps(OpRegistry& r) {
  auto injective = [](const char* name) { return std::move(SchemaBuilder(name).pattern(FusionPattern::Injective)); };
  r.add(injective("Reshape").inputs(2, 2, {"data", "shape"}).outputs(1, 1, {"reshaped"}).attr("allowzero", 0)
            .infer(inferReshape).doc("Same data, new shape (0 copies a dim unless allowzero, -1 is inferred).").build());
  r.add(injective("Flatten").inputs(1, 1, {"input"}).outputs(1, 1, {"output"}).attr("axis", 1)
            .infer(inferFlatten).doc("Reshapes to 2-D: dims before axis, dims from axis.").build());
  r.add(injective("Squeeze").inputs(1, 2, {"data", "axes"}).outputs(1, 1, {"squeezed"})
            .infer(inferSqueeze).doc("Removes size-1 dims (the given axes, or all).").build());
  r.add(injective("Unsqueeze").inputs(2, 2, {"data", "axes"}).outputs(1, 1, {"expanded"})
            .infer(inferUnsqueeze).doc("Inserts size-1 dims at the given output axes.").build());
  r.add(injective("Transpose").inputs(1, 1, {"data"}).outputs(1, 1, {"transposed"})
            .optionalAttr("perm", AttrKind::Ints).infer(inferTranspose)
            .doc("Permutes dims (default: reverses them).").build());
  r.add(injective("Concat").inputs(1, INT_MAX, {"inputs"}).outputs(1, 1, {"concat_result"})
            .requiredAttr("axis", AttrKind::Int).infer(inferConcat).doc("Joins tensors along axis.").build());
  r.add(injective("Split").inputs(1, 2, {"input", "split"}).outputs(1, INT_MAX, {"outputs"}).attr("axis", 0)
            .infer(inferSplit).doc("Splits along axis into the given sizes (or equal parts).").build());
  r.add(injective("Slice").inputs(3, 5, {"data", "starts", "ends", "axes", "steps"}).outputs(1, 1, {"output"})
            .infer(inferSlice).doc("Strided sub-tensor [starts, ends) along axes.").build());
  r.add(SchemaBuilder("Expand").inputs(2, 2, {"input", "shape"}).outputs(1, 1, {"output"})
            .pattern(FusionPattern::Broadcast).infer(inferExpand)
            .doc("Broadcasts input to shape (bidirectionally).").build());
  r.add(injective("Tile").inputs(2, 2, {"input", "repeats"}).outputs(1, 1, {"output"})
            .infer(inferTile).doc("Repeats the input along each dim.").build());
  r.add(injective("Pad").inputs(2, 3, {"data", "pads", "constant_value"}).outputs(1, 1, {"output"})
            .attr("mode", "constant").infer(inferPad)
            .doc("Pads (constant, reflect, edge or wrap); negative pads crop.").build());
  r.add(injective("DepthToSpace").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("blocksize", AttrKind::Int).attr("mode", "DCR").infer(inferDepthToSpace)
            .doc("Moves channel blocks into spatial blocks (DCR or CRD order).").build());
  r.add(injective("SpaceToDepth").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("blocksize", AttrKind::Int).infer(inferDepthToSpace)
            .doc("Moves spatial blocks into channels.").build());
  r.add(SchemaBuilder("Resize").inputs(1, 4, {"X", "roi", "scales", "sizes"}).outputs(1, 1, {"Y"})
            .attr("coordinate_transformation_mode", "half_pixel").attr("cubic_coeff_a", -0.75f)
            .attr("exclude_outside", 0).attr("extrapolation_value", 0.0f).attr("mode", "nearest")
            .attr("nearest_mode", "round_prefer_floor").pattern(FusionPattern::Injective).infer(inferResize)
            .doc("Resamples by scales or to sizes (nearest, linear or cubic interpolation).").build());
  r.add(SchemaBuilder("Shape").inputs(1, 1, {"data"}).outputs(1, 1, {"shape"}).attr("start", 0)
            .optionalAttr("end", AttrKind::Int).pattern(FusionPattern::Opaque).infer(inferShape)
            .doc("The input's dims [start, end) as int64.").build());
  r.add(SchemaBuilder("Size").inputs(1, 1, {"data"}).outputs(1, 1, {"size"}).pattern(FusionPattern::Opaque)
            .infer(inferSize).doc("The input's element count as an int64 scalar.").build());
  r.add(SchemaBuilder("Constant").inputs(0, 0).outputs(1, 1, {"output"}).requiredAttr("value", AttrKind::Tensor)
            .pattern(FusionPattern::Opaque).infer(inferConstant).doc("A constant tensor (weights live here).").build());
  r.add(SchemaBuilder("ConstantOfShape").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .optionalAttr("value", AttrKind::Tensor).pattern(FusionPattern::Opaque).infer(inferConstantOfShape)
            .doc("A tensor of the given shape filled with value (default f32 0).").build());
  r.add(SchemaBuilder("Range").inputs(3, 3, {"start", "limit", "delta"}).outputs(1, 1, {"output"})
            .pattern(FusionPattern::Opaque).infer(inferRange).doc("start, start+delta, ... below limit.").build());
  r.add(SchemaBuilder("EyeLike").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .optionalAttr("dtype", AttrKind::Int).attr("k", 0).pattern(FusionPattern::Opaque).infer(inferEyeLike)
            .doc("Identity matrix (ones on diagonal k) shaped like the 2-D input.").build());
  r.add(SchemaBuilder("Trilu").inputs(1, 2, {"input", "k"}).outputs(1, 1, {"output"}).attr("upper", 1)
            .pattern(FusionPattern::Injective).infer(inferTrilu)
            .doc("Upper or lower triangle of the last two dims (others zeroed).").build());
}

}  // namespace kiln::ir
