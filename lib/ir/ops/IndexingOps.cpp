//===- lib/ir/ops/IndexingOps.cpp - Gather/scatter and data-dependent selection -===//
//
// Gather, GatherElements, GatherND, Scatter(Elements/ND), OneHot, CumSum,
// Compress, NonZero, TopK, Unique, ReverseSequence, and kiln::TensorScatter
// (ONNX TensorScatter-24, a KV-cache write). NonZero, Compress and
// Unique have data-dependent result shapes (unknown dims until run time).
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status requireIndices(const TensorType& t, const char* what) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    return shapeError(std::string(what) + " must be int32 or int64, got " + t.str());
  return Status::ok();
}

Status inferGather(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType data, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType idx, ctx.inputTensor(1));
  KILN_TRY(requireIndices(idx, "indices"));
  if (!data.hasRank() || !idx.hasRank()) {
    setUnranked(ctx, 0, data.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), data.rank()));
  Dims out(data.dims().begin(), data.dims().begin() + axis);
  out.insert(out.end(), idx.dims().begin(), idx.dims().end());
  out.insert(out.end(), data.dims().begin() + axis + 1, data.dims().end());
  setOut(ctx, 0, data.dtype(), out);
  // Propagate gathers from known 1-D values (shape vectors).
  const Tensor* v = known(ctx, 0);
  auto indices = knownInts(ctx, 1);
  if (v && indices && v->rank() == 1 && isInteger(v->dtype()) && shouldPropagate(ctx, out)) {
    auto vals = v->toInt64s();
    std::vector<int64_t> picked;
    for (int64_t i : *indices) {
      int64_t j = i < 0 ? i + int64_t(vals.size()) : i;
      if (j < 0 || j >= int64_t(vals.size()))
        return shapeError("index " + std::to_string(i) + " is out of range for " + v->typeString());
      picked.push_back(vals[size_t(j)]);
    }
    ctx.setOutputValue(0, Tensor::fromVector<int64_t>(out, picked).castTo(v->dtype()));
  }
  return Status::ok();
}

Status inferGatherElements(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType data, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType idx, ctx.inputTensor(1));
  KILN_TRY(requireIndices(idx, "indices"));
  if (data.hasRank() && idx.hasRank() && data.rank() != idx.rank())
    return shapeError("data " + data.str() + " and indices " + idx.str() + " must have the same rank");
  if (data.hasRank()) KILN_TRY(normalizeAxis(ctx.node().getInt("axis"), data.rank()).status());
  ctx.setOutputType(0, idx.withDType(data.dtype()));
  return Status::ok();
}

Status inferGatherND(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType data, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType idx, ctx.inputTensor(1));
  if (idx.dtype() != DType::I64) return shapeError("indices must be int64, got " + idx.str());
  if (idx.hasRank() && idx.rank() < 1) return shapeError("indices must have rank >= 1, got " + idx.str());
  int64_t b = ctx.node().getInt("batch_dims");
  if (!data.hasRank() || !idx.hasRank() || idx.dim(idx.rank() - 1) < 0) {
    setUnranked(ctx, 0, data.dtype());
    return Status::ok();
  }
  int64_t last = idx.dim(idx.rank() - 1);
  if (b < 0 || b >= std::min(data.rank(), idx.rank()) || last + b > data.rank())
    return shapeError("indices " + idx.str() + " with batch_dims " + std::to_string(b) + " do not fit data " + data.str());
  Dims out(idx.dims().begin(), idx.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + b + last, data.dims().end());
  setOut(ctx, 0, data.dtype(), out);
  return Status::ok();
}

Status inferScatter(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 2}));
  KILN_ASSIGN(TensorType data, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType idx, ctx.inputTensor(1));
  KILN_TRY(requireIndices(idx, "indices"));
  const Node& n = ctx.node();
  if (n.schema().findAttr("reduction")) {
    const std::string& red = n.getString("reduction");
    if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
      return attrError("reduction '" + red + "' is not none, add, mul, max or min");
  }
  if (n.schema().findAttr("axis") && data.hasRank()) KILN_TRY(normalizeAxis(n.getInt("axis"), data.rank()).status());
  ctx.setOutputType(0, data);
  return Status::ok();
}

Status inferOneHot(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType idx, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType values, ctx.inputTensor(2));
  if (values.hasRank() && !(values.rank() == 1 && (values.dim(0) == 2 || values.dim(0) < 0)))
    return shapeError("values must be [off_value, on_value], got " + values.str());
  if (!idx.hasRank()) {
    setUnranked(ctx, 0, values.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), idx.rank() + 1));
  int64_t depth = kUnknownDim;
  KILN_ASSIGN(auto depthValue, knownScalarInt(ctx, 1, "depth"));
  if (depthValue) {
    depth = *depthValue;
    if (depth <= 0) return shapeError("depth must be positive");
  }
  Dims out = idx.dims();
  out.insert(out.begin() + axis, depth);
  setOut(ctx, 0, values.dtype(), out);
  return Status::ok();
}

/// kiln::TensorScatter (ONNX TensorScatter-24): past_cache with update written
/// along axis from each batch row's write index.
Status inferTensorScatter(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1}));
  KILN_ASSIGN(TensorType cache, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType update, ctx.inputTensor(1));
  const std::string& mode = ctx.node().getString("mode");
  if (mode != "linear" && mode != "circular") return attrError("mode '" + mode + "' is not linear or circular");
  if (cache.hasRank()) {
    KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), cache.rank()));
    if (axis == 0) return attrError("axis cannot be the batch axis 0");
    if (update.hasRank()) {
      if (update.rank() != cache.rank()) return shapeError("update " + update.str() + " must have past_cache's rank");
      for (int64_t i = 0; i < cache.rank(); ++i) {
        int64_t c = cache.dim(i), u = update.dim(i);
        if (c >= 0 && u >= 0 && (i == axis ? u > c : u != c))
          return shapeError("update " + update.str() + " does not fit past_cache " + cache.str() + " along axis " +
                            std::to_string(i));
      }
    }
  }
  if (ctx.hasInput(2)) {
    KILN_ASSIGN(TensorType idx, ctx.inputTensor(2));
    if (idx.dtype() != DType::I64) return shapeError("write_indices must be int64, got " + idx.str());
    KILN_TRY(requireRank(idx, 1, "write_indices"));
  }
  ctx.setOutputType(0, cache);
  return Status::ok();
}

Status inferCumSum(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType axis, ctx.inputTensor(1));
  if (axis.hasRank() && axis.rank() > 1) return shapeError("axis must be a scalar, got " + axis.str());
  ctx.setOutputType(0, x);
  return Status::ok();
}

Status inferCompress(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType cond, ctx.inputTensor(1));
  if (cond.dtype() != DType::Bool) return shapeError("condition must be bool, got " + cond.str());
  KILN_TRY(requireRank(cond, 1, "condition"));
  int64_t count = kUnknownDim;
  if (auto c = knownInts(ctx, 1)) count = std::count_if(c->begin(), c->end(), [](int64_t v) { return v != 0; });
  if (!ctx.node().hasAttr("axis")) {
    setOut(ctx, 0, x.dtype(), {count});
    return Status::ok();
  }
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  Dims out = x.dims();
  out[size_t(axis)] = count;
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferNonZero(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  setOut(ctx, 0, DType::I64, {x.hasRank() ? x.rank() : kUnknownDim, kUnknownDim});
  return Status::ok();
}

Status inferTopK(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType kType, ctx.inputTensor(1));
  if (kType.dtype() != DType::I64) return shapeError("K must be int64, got " + kType.str());
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    setUnranked(ctx, 1, DType::I64);
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  Dims out = x.dims();
  out[size_t(axis)] = kUnknownDim;
  if (auto k = knownInts(ctx, 1)) {
    if (k->size() != 1 || (*k)[0] < 0) return shapeError("K must be a single non-negative value");
    if (x.dim(axis) >= 0 && (*k)[0] > x.dim(axis))
      return shapeError("K = " + std::to_string((*k)[0]) + " exceeds axis size " + std::to_string(x.dim(axis)));
    out[size_t(axis)] = (*k)[0];
  }
  setOut(ctx, 0, x.dtype(), out);
  setOut(ctx, 1, DType::I64, out);
  return Status::ok();
}

Status inferUnique(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  const Attribute* axisAttr = ctx.node().findAttr("axis");
  if (axisAttr && x.hasRank()) {
    KILN_ASSIGN(int64_t axis, normalizeAxis(axisAttr->i(), x.rank()));
    Dims out = x.dims();
    out[size_t(axis)] = kUnknownDim;
    setOut(ctx, 0, x.dtype(), out);
  } else if (axisAttr) {
    setUnranked(ctx, 0, x.dtype());
  } else {
    setOut(ctx, 0, x.dtype(), {kUnknownDim});
  }
  for (size_t i = 1; i < ctx.numOutputs(); ++i) setOut(ctx, i, DType::I64, {kUnknownDim});
  if (ctx.numOutputs() > 2 && x.isStatic())  // inverse_indices: one per input slice
    setOut(ctx, 2, DType::I64, {axisAttr ? x.dim(*normalizeAxis(axisAttr->i(), x.rank())) : *x.numElements()});
  return Status::ok();
}

Status inferReverseSequence(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.hasRank() && x.rank() < 2) return shapeError("input must have rank >= 2, got " + x.str());
  int64_t b = ctx.node().getInt("batch_axis"), t = ctx.node().getInt("time_axis");
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t) return attrError("batch_axis and time_axis must be 0 and 1");
  ctx.setOutputType(0, x);
  return Status::ok();
}

}  // namespace

void registerIndexingOps(OpRegistry& r) {
  r.add(SchemaBuilder("Gather").inputs(2, 2, {"data", "indices"}).outputs(1, 1, {"output"}).attr("axis", 0)
            .pattern(FusionPattern::Injective).infer(inferGather)
            .doc("Selects slices of data along axis by indices (negative indices count from the end).").build());
  r.add(SchemaBuilder("GatherElements").inputs(2, 2, {"data", "indices"}).outputs(1, 1, {"output"}).attr("axis", 0)
            .pattern(FusionPattern::Injective).infer(inferGatherElements)
            .doc("output[i][j] = data[indices[i][j]][j] for axis 0 (and so on).").build());
  r.add(SchemaBuilder("GatherND").inputs(2, 2, {"data", "indices"}).outputs(1, 1, {"output"}).attr("batch_dims", 0)
            .pattern(FusionPattern::Injective).infer(inferGatherND)
            .doc("Gathers slices addressed by index tuples in the last indices dim.").build());
  r.add(SchemaBuilder("TensorScatter", "kiln").inputs(2, 3, {"past_cache", "update", "write_indices"})
            .outputs(1, 1, {"present_cache"}).attr("axis", -2).attr("mode", "linear").pattern(FusionPattern::Opaque)
            .infer(inferTensorScatter)
            .doc("past_cache with update written along axis from each batch row's write index, wrapping around "
                 "in circular mode (ONNX TensorScatter-24).").build());
  r.add(SchemaBuilder("ScatterElements").inputs(3, 3, {"data", "indices", "updates"}).outputs(1, 1, {"output"})
            .attr("axis", 0).attr("reduction", "none").pattern(FusionPattern::Opaque).infer(inferScatter)
            .doc("Copy of data with updates written (or reduced) at indices along axis.").build());
  r.add(SchemaBuilder("ScatterND").inputs(3, 3, {"data", "indices", "updates"}).outputs(1, 1, {"output"})
            .attr("reduction", "none").pattern(FusionPattern::Opaque).infer(inferScatter)
            .doc("Copy of data with slices addressed by index tuples replaced (or reduced).").build());
  r.add(SchemaBuilder("OneHot").inputs(3, 3, {"indices", "depth", "values"}).outputs(1, 1, {"output"})
            .attr("axis", -1).pattern(FusionPattern::Opaque).infer(inferOneHot)
            .doc("One-hot encoding with [off, on] values along a new axis.").build());
  auto cumulative = [](const char* name, const char* domain, const char* doc) {
    return SchemaBuilder(name, domain).inputs(2, 2, {"x", "axis"}).outputs(1, 1, {"y"}).attr("exclusive", 0)
        .attr("reverse", 0).pattern(FusionPattern::Opaque).infer(inferCumSum).doc(doc).build();
  };
  r.add(cumulative("CumSum", "", "Cumulative sum along axis (optionally exclusive and/or reversed)."));
  // ONNX CumProd-26 in the kiln domain: the IR's ONNX form is opset 17's.
  r.add(cumulative("CumProd", "kiln", "Cumulative product along axis (optionally exclusive and/or reversed)."));
  r.add(SchemaBuilder("Compress").inputs(2, 2, {"input", "condition"}).outputs(1, 1, {"output"})
            .optionalAttr("axis", AttrKind::Int).pattern(FusionPattern::Opaque).infer(inferCompress)
            .doc("Selects slices along axis (or elements of the flattened input) where condition holds.").build());
  r.add(SchemaBuilder("NonZero").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).pattern(FusionPattern::Opaque)
            .infer(inferNonZero).doc("Indices of the non-zero elements, one row per dim (data-dependent shape).").build());
  r.add(SchemaBuilder("TopK").inputs(2, 2, {"X", "K"}).outputs(2, 2, {"Values", "Indices"}).attr("axis", -1)
            .attr("largest", 1).attr("sorted", 1).pattern(FusionPattern::Opaque).infer(inferTopK)
            .doc("K largest (or smallest) values along axis and their indices; ties keep the lower index.").build());
  r.add(SchemaBuilder("Unique").inputs(1, 1, {"X"}).outputs(1, 4, {"Y", "indices", "inverse_indices", "counts"})
            .optionalAttr("axis", AttrKind::Int).attr("sorted", 1).pattern(FusionPattern::Opaque).infer(inferUnique)
            .doc("Unique elements (or slices along axis), with first indices, inverse indices and counts.").build());
  r.add(SchemaBuilder("ReverseSequence").inputs(2, 2, {"input", "sequence_lens"}).outputs(1, 1, {"Y"})
            .attr("batch_axis", 1).attr("time_axis", 0).pattern(FusionPattern::Opaque).infer(inferReverseSequence)
            .doc("Reverses the first sequence_lens[b] time steps of each batch entry.").build());
}

}  // namespace kiln::ir
