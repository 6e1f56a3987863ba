//===- lib/ir/ops/ElementwiseOps.cpp - Unary, binary and variadic elementwise ops -===//
//
// Schemas of elementwise ops: math and activation functions, arithmetic and
// comparison with numpy broadcasting, logical ops, Clip, Cast, Where,
// kiln::BitCast (ONNX BitCast-26) and kiln::NarrowCast (a cast to a float8,
// float4, 4- or 2-bit type, on its carrier).
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"
#include "kiln/support/NarrowTypes.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status inferBoolUnary(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  ctx.setOutputType(0, x.withDType(DType::Bool));
  return Status::ok();
}

Status inferClip(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) continue;
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (t.hasRank() && !(t.rank() == 0 || (t.rank() == 1 && t.dim(0) == 1)))
      return shapeError(std::string(i == 1 ? "min" : "max") + " must be a scalar, got " + t.str());
  }
  return sameAsInput0(ctx);
}

Status inferCast(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  int64_t to = ctx.node().getInt("to");
  auto dtype = dtypeFromOnnx(int(to));
  if (!dtype)
    return Error(ErrorCode::UnsupportedType,
                 std::string("cast to ONNX type ") + onnxDTypeCodeName(int(to)) + " (" +
                     std::to_string(to) + ") is not supported");
  ctx.setOutputType(0, x.withDType(*dtype));
  if (x.hasRank()) propagateElementwise(ctx, *dtype, x.dims());
  return Status::ok();
}

/// kiln::BitCast (ONNX BitCast-26): the same bits as type 'to', of the same width.
Status inferBitCast(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  int64_t to = ctx.node().getInt("to");
  auto dtype = dtypeFromOnnx(int(to));
  if (!dtype || *dtype == DType::Bool)
    return Error(ErrorCode::UnsupportedType, std::string("bitcast to ONNX type ") + onnxDTypeCodeName(int(to)) + " (" +
                                                 std::to_string(to) + ") is not supported");
  if (x.dtype() != DType::Undefined && (x.dtype() == DType::Bool || dtypeSize(x.dtype()) != dtypeSize(*dtype)))
    return shapeError(std::string("cannot bitcast ") + dtypeName(x.dtype()) + " to " + dtypeName(*dtype) +
                      ": the widths differ or the input is bool");
  ctx.setOutputType(0, x.withDType(*dtype));
  return Status::ok();
}

/// kiln::NarrowCast: the carrier type of the narrow type 'to' (f32, u8 or i8).
Status inferNarrowCast(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  int64_t to = ctx.node().getInt("to");
  std::optional<NarrowType> t = narrowTypeFromOnnx(int(to));
  if (!t)
    return Error(ErrorCode::BadAttribute, "'to' " + std::to_string(to) + " is not a narrow type");
  const int64_t rounding = ctx.node().getInt("round_mode");
  if (rounding < 0 || rounding > 2)
    return Error(ErrorCode::BadAttribute, "round_mode " + std::to_string(rounding) + " is not 0 (up), 1 (down) or 2 (nearest)");
  if (x.dtype() != DType::Undefined && !isFloat(x.dtype()) && !isInteger(x.dtype()) && x.dtype() != DType::Bool)
    return Error(ErrorCode::UnsupportedType, std::string("cannot cast ") + dtypeName(x.dtype()) + " to " +
                                                 narrowTypeName(*t));
  ctx.setOutputType(0, x.withDType(narrowCarrier(*t)));
  return Status::ok();
}

Status inferCastLike(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType target, ctx.inputTensor(1));
  ctx.setOutputType(0, x.withDType(target.dtype()));
  return Status::ok();
}

Status inferPow(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType base, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType exponent, ctx.inputTensor(1));
  if (!base.hasRank() || !exponent.hasRank()) {
    setUnranked(ctx, 0, base.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(Dims dims, broadcastDims(base.dims(), exponent.dims()));
  setOut(ctx, 0, base.dtype(), dims);
  return Status::ok();
}

Status inferLogical(InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (t.dtype() != DType::Bool)
      return shapeError("input " + std::to_string(i) + " must be bool, got " + t.str());
  }
  return broadcastAll(ctx);
}

Status inferBitShift(InferenceContext& ctx) {
  const std::string& dir = ctx.node().getString("direction");
  if (dir != "LEFT" && dir != "RIGHT")
    return attrError("direction must be LEFT or RIGHT, got '" + dir + "'");
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!isUnsignedInteger(x.dtype())) return shapeError("BitShift needs unsigned integers, got " + x.str());
  return broadcastAll(ctx);
}

/// The Bitwise ops (ONNX opset 18; kiln-domain ops, since the IR's ONNX
/// form is opset 17's): integers of one type, broadcast.
Status inferBitwise(InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (!isInteger(t.dtype())) return shapeError("input " + std::to_string(i) + " must be an integer, got " + t.str());
  }
  return broadcastAll(ctx);
}

Status inferPRelu(InferenceContext& ctx) {
  KILN_TRY(broadcastAll(ctx));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType slope, ctx.inputTensor(1));
  if (x.hasRank() && slope.hasRank()) {
    KILN_ASSIGN(Dims b, broadcastDims(x.dims(), slope.dims()));
    if (b.size() != x.dims().size())
      return shapeError("slope " + slope.str() + " does not broadcast to X " + x.str());
    setOut(ctx, 0, x.dtype(), x.dims());
  }
  return Status::ok();
}

Status inferWhere(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType cond, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(1));
  KILN_ASSIGN(TensorType y, ctx.inputTensor(2));
  if (cond.dtype() != DType::Bool) return shapeError("condition must be bool, got " + cond.str());
  if (x.dtype() != y.dtype())
    return shapeError(std::string("X and Y element types differ: ") + x.str() + " vs " + y.str());
  if (!cond.hasRank() || !x.hasRank() || !y.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(Dims d, broadcastDims(cond.dims(), x.dims()));
  KILN_ASSIGN(d, broadcastDims(d, y.dims()));
  setOut(ctx, 0, x.dtype(), d);
  propagateElementwise(ctx, x.dtype(), d);
  return Status::ok();
}

SchemaBuilder unary(const char* name, const char* doc, FusionPattern p = FusionPattern::Elementwise) {
  return std::move(SchemaBuilder(name).inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).pattern(p).infer(sameAsInput0).doc(doc));
}
SchemaBuilder binary(const char* name, const char* doc, InferFn fn = broadcastAll) {
  return std::move(SchemaBuilder(name).inputs(2, 2, {"A", "B"}).outputs(1, 1, {"C"})
                       .pattern(FusionPattern::Broadcast).infer(fn).doc(doc));
}
SchemaBuilder variadic(const char* name, const char* doc) {
  return std::move(SchemaBuilder(name).inputs(1, INT_MAX, {"data_0"}).outputs(1, 1, {"result"})
                       .pattern(FusionPattern::Broadcast).infer(broadcastAll).doc(doc));
}

}  // namespace

void registerElementwiseOps(OpRegistry& r) {
  struct Plain {
    const char* name;
    const char* doc;
  };
  static const Plain kUnary[] = {
      {"Abs", "Absolute value."},
      {"Neg", "Negation."},
      {"Floor", "Round toward negative infinity."},
      {"Ceil", "Round toward positive infinity."},
      {"Round", "Round half to even."},
      {"Sqrt", "Square root."},
      {"Reciprocal", "1 / x."},
      {"Exp", "Natural exponential."},
      {"Log", "Natural logarithm."},
      {"Sin", "Sine."},
      {"Cos", "Cosine."},
      {"Tan", "Tangent."},
      {"Asin", "Arcsine."},
      {"Acos", "Arccosine."},
      {"Atan", "Arctangent."},
      {"Sinh", "Hyperbolic sine."},
      {"Cosh", "Hyperbolic cosine."},
      {"Asinh", "Inverse hyperbolic sine."},
      {"Acosh", "Inverse hyperbolic cosine."},
      {"Atanh", "Inverse hyperbolic tangent."},
      {"Sigmoid", "1 / (1 + exp(-x))."},
      {"Tanh", "Hyperbolic tangent."},
      {"Relu", "max(x, 0)."},
      {"Softplus", "log(1 + exp(x))."},
      {"Softsign", "x / (1 + |x|)."},
      {"Erf", "Gauss error function."},
      {"Sign", "-1, 0 or 1 by the sign of x."},
      {"HardSwish", "x * max(0, min(1, x/6 + 1/2))."},
      {"Not", "Logical negation of a bool tensor."},
  };
  for (const Plain& u : kUnary) r.add(unary(u.name, u.doc).build());
  r.add(unary("Identity", "Returns its input (any type, including sequences and optionals).",
              FusionPattern::Injective).inputs(1, 1, {"input"}).build());
  r.add(unary("IsNaN", "True where x is NaN.").infer(inferBoolUnary).build());
  r.add(unary("IsInf", "True where x is +/-inf (each side selectable).")
            .attr("detect_negative", 1).attr("detect_positive", 1).infer(inferBoolUnary).build());
  r.add(unary("Elu", "x if x >= 0 else alpha * (exp(x) - 1).").attr("alpha", 1.0f).build());
  r.add(unary("Celu", "max(0,x) + min(0, alpha * (exp(x/alpha) - 1)).").attr("alpha", 1.0f).build());
  r.add(unary("Selu", "gamma * (x if x > 0 else alpha * (exp(x) - 1)).")
            .attr("alpha", 1.67326319217681884765625f).attr("gamma", 1.05070102214813232421875f).build());
  r.add(unary("LeakyRelu", "x if x >= 0 else alpha * x.").attr("alpha", 0.01f).build());
  r.add(unary("HardSigmoid", "max(0, min(1, alpha * x + beta)).").attr("alpha", 0.2f).attr("beta", 0.5f).build());
  r.add(unary("ThresholdedRelu", "x if x > alpha else 0.").attr("alpha", 1.0f).build());
  r.add(unary("Shrink", "x - bias if x > lambd, x + bias if x < -lambd, else 0.")
            .attr("bias", 0.0f).attr("lambd", 0.5f).inputs(1, 1, {"input"}).build());
  r.add(SchemaBuilder("Clip").inputs(1, 3, {"input", "min", "max"}).outputs(1, 1, {"output"})
            .pattern(FusionPattern::Elementwise).infer(inferClip)
            .doc("Limits values to [min, max] (either bound optional).").build());
  r.add(SchemaBuilder("Cast").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("to", AttrKind::Int).attr("saturate", 1).pattern(FusionPattern::Elementwise)
            .infer(inferCast).doc("Converts elements to the type 'to' (ONNX data type code).").build());
  r.add(SchemaBuilder("BitCast", "kiln").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("to", AttrKind::Int).pattern(FusionPattern::Opaque).infer(inferBitCast)
            .doc("Reinterprets each element's bits as the type 'to' of the same width (ONNX BitCast-26).").build());
  r.add(SchemaBuilder("NarrowCast", "kiln").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .requiredAttr("to", AttrKind::Int).attr("saturate", 1).attr("round_mode", 0)
            .pattern(FusionPattern::Elementwise).infer(inferNarrowCast)
            .doc("ONNX Cast to the narrow type 'to' (float8, float4, 4- or 2-bit integer), as a value of its "
                 "carrier type (f32 for the floating-point ones, u8 for UINT4/UINT2, i8 for INT4/INT2); "
                 "round_mode (0 up, 1 down, 2 nearest) picks FLOAT8E8M0's power of two.").build());
  r.add(SchemaBuilder("CastLike").inputs(2, 2, {"input", "target_type"}).outputs(1, 1, {"output"})
            .attr("saturate", 1).pattern(FusionPattern::Elementwise).infer(inferCastLike)
            .doc("Converts elements to the element type of target_type.").build());

  r.add(binary("Add", "A + B.").build());
  r.add(binary("Sub", "A - B.").build());
  r.add(binary("Mul", "A * B.").build());
  r.add(binary("Div", "A / B (integer division truncates).").build());
  r.add(binary("Pow", "A raised to the power B.", inferPow).inputs(2, 2, {"X", "Y"}).build());
  r.add(binary("Mod", "Remainder; sign of divisor unless fmod=1 (sign of dividend).").attr("fmod", 0).build());
  r.add(binary("BitShift", "Shift of unsigned integers left or right.", inferBitShift)
            .requiredAttr("direction", AttrKind::String).inputs(2, 2, {"X", "Y"}).build());
  auto bitwise = [](const char* name, int arity, const char* doc) {
    return SchemaBuilder(name, "kiln").inputs(arity, arity, {"A", "B"}).outputs(1, 1, {"C"})
        .pattern(FusionPattern::Broadcast).infer(inferBitwise).doc(doc).build();
  };
  r.add(bitwise("BitwiseAnd", 2, "Bitwise and of integers (ONNX BitwiseAnd-18)."));
  r.add(bitwise("BitwiseOr", 2, "Bitwise or of integers (ONNX BitwiseOr-18)."));
  r.add(bitwise("BitwiseXor", 2, "Bitwise exclusive or of integers (ONNX BitwiseXor-18)."));
  r.add(bitwise("BitwiseNot", 1, "Bitwise complement of integers (ONNX BitwiseNot-18)."));
  r.add(binary("And", "Logical and.", inferLogical).build());
  r.add(binary("Or", "Logical or.", inferLogical).build());
  r.add(binary("Xor", "Logical exclusive or.", inferLogical).build());
  r.add(binary("Equal", "A == B.", broadcastCompare).build());
  r.add(binary("Less", "A < B.", broadcastCompare).build());
  r.add(binary("Greater", "A > B.", broadcastCompare).build());
  r.add(binary("LessOrEqual", "A <= B.", broadcastCompare).build());
  r.add(binary("GreaterOrEqual", "A >= B.", broadcastCompare).build());
  r.add(binary("PRelu", "x if x >= 0 else slope * x (slope broadcasts to X).", inferPRelu)
            .inputs(2, 2, {"X", "slope"}).build());
  r.add(variadic("Max", "Elementwise maximum of the inputs.").build());
  r.add(variadic("Min", "Elementwise minimum of the inputs.").build());
  r.add(variadic("Sum", "Elementwise sum of the inputs.").build());
  r.add(variadic("Mean", "Elementwise mean of the inputs.").build());
  r.add(SchemaBuilder("Where").inputs(3, 3, {"condition", "X", "Y"}).outputs(1, 1, {"output"})
            .pattern(FusionPattern::Broadcast).infer(inferWhere)
            .doc("X where condition is true, else Y (all three broadcast).").build());
}

}  // namespace kiln::ir
