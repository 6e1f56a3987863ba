//===- lib/ir/ops/ReductionOps.cpp - Reduce* and ArgMax/ArgMin ------------===//
//
// Reductions over a set of axes (attribute, or the 'axes' input for ReduceSum
// in opset 13+ and for kiln::ReduceMax/Min/Prod, the opset-18 forms whose axes
// are known only at run time), with keepdims and noop_with_empty_axes, and
// index reductions.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

/// Output dims of reducing `in` over `axes` (normalised); empty axes = all.
Dims reducedDims(const Dims& in, const std::vector<int64_t>& axes, bool keepdims) {
  Dims out;
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(in[size_t(d)]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

Status inferReduce(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  const Node& n = ctx.node();
  bool keepdims = n.getInt("keepdims") != 0;
  std::optional<std::vector<int64_t>> axes;
  bool axesFromInput = ctx.numInputs() > 1 && ctx.hasInput(1);
  if (axesFromInput) {
    axes = knownInts(ctx, 1);
    if (!axes) {  // axes not known statically: the rank follows from their count (they do not repeat)
      KILN_ASSIGN(TensorType axesType, ctx.inputTensor(1));
      int64_t count = axesType.isStatic() && axesType.rank() == 1 ? axesType.dim(0) : kUnknownDim;
      bool noop = n.getInt("noop_with_empty_axes") != 0;
      int64_t rank = !x.hasRank()                       ? kUnknownDim
                     : keepdims || (count == 0 && noop) ? x.rank()
                     : count < 0 || count > x.rank()    ? kUnknownDim
                     : count == 0                       ? 0  // every axis
                                                        : x.rank() - count;
      if (rank >= 0) setOut(ctx, 0, x.dtype(), Dims(size_t(rank), kUnknownDim));
      else setUnranked(ctx, 0, x.dtype());
      return Status::ok();
    }
  } else if (const Attribute* a = n.findAttr("axes")) {
    axes = a->ints();
  } else {
    axes = std::vector<int64_t>{};
  }
  bool noop = n.schema().findAttr("noop_with_empty_axes") && n.getInt("noop_with_empty_axes") != 0;
  if (axes->empty() && noop) {
    ctx.setOutputType(0, x);
    return Status::ok();
  }
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(std::vector<int64_t> norm, normalizeAxes(*axes, x.rank()));
  setOut(ctx, 0, x.dtype(), reducedDims(x.dims(), norm, keepdims));
  return Status::ok();
}

Status inferArgReduce(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, DType::I64);
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  setOut(ctx, 0, DType::I64, reducedDims(x.dims(), {axis}, ctx.node().getInt("keepdims") != 0));
  return Status::ok();
}

}  // namespace

void registerReductionOps(OpRegistry& r) {
  struct Reduce {
    const char* name;
    const char* doc;
  };
  static const Reduce kReduces[] = {
      {"ReduceMean", "Mean over axes."},
      {"ReduceMax", "Maximum over axes."},
      {"ReduceMin", "Minimum over axes."},
      {"ReduceProd", "Product over axes."},
      {"ReduceL1", "Sum of absolute values over axes."},
      {"ReduceL2", "Square root of the sum of squares over axes."},
      {"ReduceLogSum", "log(sum(x)) over axes."},
      {"ReduceLogSumExp", "log(sum(exp(x))) over axes."},
      {"ReduceSumSquare", "Sum of squares over axes."},
  };
  for (const Reduce& red : kReduces)
    r.add(SchemaBuilder(red.name).inputs(1, 1, {"data"}).outputs(1, 1, {"reduced"})
              .optionalAttr("axes", AttrKind::Ints).attr("keepdims", 1)
              .pattern(FusionPattern::CommReduce).infer(inferReduce)
              .doc(std::string(red.doc) + " No axes: all axes.").build());
  r.add(SchemaBuilder("ReduceSum").inputs(1, 2, {"data", "axes"}).outputs(1, 1, {"reduced"})
            .attr("keepdims", 1).attr("noop_with_empty_axes", 0)
            .pattern(FusionPattern::CommReduce).infer(inferReduce)
            .doc("Sum over the axes given as input (none: all, or identity with noop_with_empty_axes).")
            .build());
  for (const char* name : {"ReduceMax", "ReduceMin", "ReduceProd"})
    r.add(SchemaBuilder(name, "kiln").inputs(2, 2, {"data", "axes"}).outputs(1, 1, {"reduced"})
              .attr("keepdims", 1).attr("noop_with_empty_axes", 0).pattern(FusionPattern::Opaque).infer(inferReduce)
              .doc(std::string("ONNX ") + name + "-18 with axes known only at run time (none: all, or identity "
                   "with noop_with_empty_axes).").build());
  for (const char* name : {"ArgMax", "ArgMin"})
    r.add(SchemaBuilder(name).inputs(1, 1, {"data"}).outputs(1, 1, {"reduced"})
              .attr("axis", 0).attr("keepdims", 1).attr("select_last_index", 0)
              .pattern(FusionPattern::CommReduce).infer(inferArgReduce)
              .doc(std::string("Index of the ") + (name[3] == 'M' && name[4] == 'a' ? "maximum" : "minimum") +
                   " along axis (int64).").build());
}

}  // namespace kiln::ir
