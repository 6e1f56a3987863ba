//===- lib/ir/ops/GeneratorOps.cpp - Random tensor generators --------------===//
//
// RandomNormal/Uniform(+Like), Multinomial and Bernoulli. Results depend on a
// random generator, so they are marked nondeterministic: no pass may fold or
// deduplicate them, and tests compare only their types.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Expected<DType> dtypeAttr(const Node& n, DType fallback) {
  const Attribute* a = n.findAttr("dtype");
  if (!a) return fallback;
  auto d = dtypeFromOnnx(int(a->i()));
  if (!d) return Error(ErrorCode::UnsupportedType, "dtype " + std::to_string(a->i()) + " is not supported");
  return *d;
}

Status inferRandom(InferenceContext& ctx) {
  KILN_ASSIGN(DType dtype, dtypeAttr(ctx.node(), DType::F32));
  const Dims& shape = ctx.node().getInts("shape");
  for (int64_t d : shape)
    if (d < 0) return attrError("shape must be non-negative");
  setOut(ctx, 0, dtype, shape);
  return Status::ok();
}

Status inferRandomLike(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(DType dtype, dtypeAttr(ctx.node(), x.dtype()));
  ctx.setOutputType(0, x.withDType(dtype));
  return Status::ok();
}

Status inferMultinomial(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireRank(x, 2, "input"));
  KILN_ASSIGN(DType dtype, dtypeAttr(ctx.node(), DType::I32));
  setOut(ctx, 0, dtype, {x.hasRank() ? x.dim(0) : kUnknownDim, ctx.node().getInt("sample_size")});
  return Status::ok();
}

SchemaBuilder random(const char* name, InferFn fn, const char* doc) {
  return std::move(SchemaBuilder(name).outputs(1, 1, {"output"}).optionalAttr("dtype", AttrKind::Int)
                       .optionalAttr("seed", AttrKind::Float).pattern(FusionPattern::Opaque).infer(fn).doc(doc)
                       .nondeterministic());
}

}  // namespace

void registerGeneratorOps(OpRegistry& r) {
  r.add(random("RandomNormal", inferRandom, "Samples N(mean, scale^2) into the given shape.").inputs(0, 0)
            .attr("mean", 0.0f).attr("scale", 1.0f).requiredAttr("shape", AttrKind::Ints).build());
  r.add(random("RandomUniform", inferRandom, "Samples U[low, high) into the given shape.").inputs(0, 0)
            .attr("low", 0.0f).attr("high", 1.0f).requiredAttr("shape", AttrKind::Ints).build());
  r.add(random("RandomNormalLike", inferRandomLike, "Samples N(mean, scale^2) shaped like the input.")
            .inputs(1, 1, {"input"}).attr("mean", 0.0f).attr("scale", 1.0f).build());
  r.add(random("RandomUniformLike", inferRandomLike, "Samples U[low, high) shaped like the input.")
            .inputs(1, 1, {"input"}).attr("low", 0.0f).attr("high", 1.0f).build());
  r.add(random("Multinomial", inferMultinomial, "Samples class indices from unnormalised log-probabilities.")
            .inputs(1, 1, {"input"}).attr("sample_size", 1).build());
  r.add(random("Bernoulli", inferRandomLike, "Samples 0/1 with the input's probabilities.").inputs(1, 1, {"input"})
            .build());
}

}  // namespace kiln::ir
