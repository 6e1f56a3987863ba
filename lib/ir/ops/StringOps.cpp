//===- lib/ir/ops/StringOps.cpp - Ops on string tensors -------------------===//
//
// String tensors are i64 tensors of ids into the string pool
// (kiln/support/StringPool.h), so these ops take and return i64 where ONNX
// says STRING:
//   StringNormalizer      case change and stop-word removal (ONNX, opset 10)
//   kiln::StringConcat    ONNX StringConcat-20: elementwise, broadcasting
//   kiln::StringSplit     ONNX StringSplit-20: pieces padded with "", and their counts
//   kiln::RegexFullMatch  ONNX RegexFullMatch-20: whether each string matches
//                         the RE2 pattern as a whole
//   kiln::CastToString    ONNX Cast to STRING: numbers as "%.8g" (ONNX Runtime's form)
//   kiln::CastFromString  ONNX Cast from STRING: a number parsed from each string
// Their results' shapes depend on the data (StringSplit, StringNormalizer's
// stop words) or they read the pool, so they run as host steps.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
namespace {

using namespace infer;

Status requireIds(const TensorType& t, const char* what) {
  if (t.dtype() != DType::Undefined && t.dtype() != DType::I64)
    return shapeError(std::string(what) + " must be a string tensor (held as i64 ids), got " + t.str());
  return Status::ok();
}

Status inferStringNormalizer(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireIds(x, "X"));
  if (x.hasRank() && x.rank() != 1 && !(x.rank() == 2 && x.dim(0) == 1))
    return shapeError("X must be [C] or [1, C], got " + x.str());
  const bool stops = !ctx.node().getStrings("stopwords").empty();
  if (!x.hasRank()) {
    setUnranked(ctx, 0, DType::I64);
    return Status::ok();
  }
  Dims out = x.dims();
  // Removing every string leaves one empty string.
  if (stops) out.back() = kUnknownDim;
  else if (out.back() == 0) out.back() = 1;
  setOut(ctx, 0, DType::I64, out);
  return Status::ok();
}

Status inferStringConcat(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType y, ctx.inputTensor(1));
  KILN_TRY(requireIds(x, "X"));
  KILN_TRY(requireIds(y, "Y"));
  if (!x.hasRank() || !y.hasRank()) {
    setUnranked(ctx, 0, DType::I64);
    return Status::ok();
  }
  KILN_ASSIGN(Dims out, broadcastDims(x.dims(), y.dims()));
  setOut(ctx, 0, DType::I64, out);
  return Status::ok();
}

Status inferStringSplit(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireIds(x, "X"));
  if (ctx.node().hasAttr("maxsplit") && ctx.node().getInt("maxsplit") < 0)
    return shapeError("maxsplit must not be negative");
  if (!x.hasRank()) {
    setUnranked(ctx, 0, DType::I64);
    setUnranked(ctx, 1, DType::I64);
    return Status::ok();
  }
  Dims pieces = x.dims();
  pieces.push_back(kUnknownDim);
  setOut(ctx, 0, DType::I64, pieces);
  setOut(ctx, 1, DType::I64, x.dims());
  return Status::ok();
}

Status inferRegexFullMatch(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireIds(x, "X"));
  ctx.setOutputType(0, x.withDType(DType::Bool));
  return Status::ok();
}

Status inferCastToString(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  ctx.setOutputType(0, x.withDType(DType::I64));
  return Status::ok();
}

Status inferCastFromString(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireIds(x, "input"));
  std::optional<DType> to = dtypeFromOnnx(int(ctx.node().getInt("to")));
  if (!to) return shapeError("'to' names no element type kiln parses strings into");
  ctx.setOutputType(0, x.withDType(*to));
  return Status::ok();
}

}  // namespace

void registerStringOps(OpRegistry& r) {
  r.add(SchemaBuilder("StringNormalizer").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .attr("case_change_action", std::string("NONE")).attr("is_case_sensitive", 0)
            .attr("locale", std::string("")).attr("stopwords", std::vector<std::string>{})
            .pattern(FusionPattern::Opaque).infer(inferStringNormalizer)
            .doc("Strings with stop words removed and their case changed (LOWER, UPPER or NONE).").build());
  r.add(SchemaBuilder("StringConcat", "kiln").inputs(2, 2, {"X", "Y"}).outputs(1, 1, {"Z"})
            .pattern(FusionPattern::Opaque).infer(inferStringConcat)
            .doc("X and Y's strings joined elementwise, with broadcasting (ONNX StringConcat-20).").build());
  r.add(SchemaBuilder("StringSplit", "kiln").inputs(1, 1, {"X"}).outputs(2, 2, {"Y", "Z"})
            .attr("delimiter", std::string("")).optionalAttr("maxsplit", AttrKind::Int)
            .pattern(FusionPattern::Opaque).infer(inferStringSplit)
            .doc("Each string's pieces (padded with empty strings) and their counts (ONNX StringSplit-20).").build());
  r.add(SchemaBuilder("RegexFullMatch", "kiln").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .requiredAttr("pattern", AttrKind::String).pattern(FusionPattern::Opaque).infer(inferRegexFullMatch)
            .doc("Whether each string matches the RE2 pattern as a whole (ONNX RegexFullMatch-20).").build());
  r.add(SchemaBuilder("CastToString", "kiln").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .pattern(FusionPattern::Opaque).infer(inferCastToString)
            .doc("Numbers and bools as strings: integers in decimal, floats as %.8g, NaN, INF, -INF.").build());
  r.add(SchemaBuilder("CastFromString", "kiln").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("to", AttrKind::Int).pattern(FusionPattern::Opaque).infer(inferCastFromString)
            .doc("Each string's leading number (as C++ stod, stoll or stoull read it) cast to 'to'.").build());
}

}  // namespace kiln::ir
