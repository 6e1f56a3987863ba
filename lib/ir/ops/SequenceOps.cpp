//===- lib/ir/ops/SequenceOps.cpp - Tensor sequences and optionals ---------===//
//
// ONNX sequence ops (construct, insert, at, erase, length, split/concat,
// SequenceMap with a body) and optional-value ops.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

#include "kiln/ir/Graph.h"

namespace kiln::ir {
using namespace infer;

namespace {

Expected<Type> sequenceInput(const InferenceContext& ctx, size_t i) {
  const Type& t = ctx.inputType(i);
  if (!t.isSequence()) return shapeError("input " + std::to_string(i) + " must be a sequence, got " + t.str());
  return t;
}

Status inferSequenceEmpty(InferenceContext& ctx) {
  DType dtype = DType::F32;
  if (const Attribute* a = ctx.node().findAttr("dtype")) {
    auto d = dtypeFromOnnx(int(a->i()));
    if (!d) return Error(ErrorCode::UnsupportedType, "dtype " + std::to_string(a->i()) + " is not supported");
    dtype = *d;
  }
  ctx.setOutputType(0, Type::sequence(TensorType::unranked(dtype)));
  return Status::ok();
}

Status inferSequenceConstruct(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType first, ctx.inputTensor(0));
  Type elem = first;
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    KILN_ASSIGN(elem, mergeTypes(elem, t));
  }
  ctx.setOutputType(0, Type::sequence(elem));
  return Status::ok();
}

Status inferSequenceInsert(InferenceContext& ctx) {
  KILN_ASSIGN(Type seq, sequenceInput(ctx, 0));
  KILN_ASSIGN(TensorType t, ctx.inputTensor(1));
  KILN_ASSIGN(Type elem, mergeTypes(seq.element(), t));
  ctx.setOutputType(0, Type::sequence(elem));
  return Status::ok();
}

Status inferSequenceAt(InferenceContext& ctx) {
  KILN_ASSIGN(Type seq, sequenceInput(ctx, 0));
  ctx.setOutputType(0, seq.element());
  return Status::ok();
}

Status inferSequenceErase(InferenceContext& ctx) {
  KILN_ASSIGN(Type seq, sequenceInput(ctx, 0));
  ctx.setOutputType(0, seq);
  return Status::ok();
}

Status inferSequenceLength(InferenceContext& ctx) {
  KILN_TRY(sequenceInput(ctx, 0).status());
  setOut(ctx, 0, DType::I64, {});
  return Status::ok();
}

Status inferSplitToSequence(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    ctx.setOutputType(0, Type::sequence(TensorType::unranked(x.dtype())));
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  Dims d = x.dims();
  bool keep = ctx.node().getInt("keepdims") != 0;
  if (!ctx.hasInput(1) && !keep) d.erase(d.begin() + axis);
  else if (!ctx.hasInput(1)) d[size_t(axis)] = 1;
  else d[size_t(axis)] = kUnknownDim;
  ctx.setOutputType(0, Type::sequence(TensorType(x.dtype(), d)));
  return Status::ok();
}

Status inferConcatFromSequence(InferenceContext& ctx) {
  KILN_ASSIGN(Type seq, sequenceInput(ctx, 0));
  const TensorType& e = seq.element().tensor();
  if (!e.hasRank()) {
    setUnranked(ctx, 0, e.dtype());
    return Status::ok();
  }
  bool newAxis = ctx.node().getInt("new_axis") != 0;
  int64_t rank = e.rank() + (newAxis ? 1 : 0);
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), rank));
  Dims d = e.dims();
  if (newAxis) d.insert(d.begin() + axis, kUnknownDim);
  else d[size_t(axis)] = kUnknownDim;
  setOut(ctx, 0, e.dtype(), d);
  return Status::ok();
}

Status inferSequenceMap(InferenceContext& ctx) {
  Graph* body = ctx.node().getGraph("body");
  if (body->inputs().size() != ctx.numInputs() || body->outputs().size() != ctx.numOutputs())
    return shapeError("SequenceMap body must take one input per operand and give one output per result");
  KILN_TRY(sequenceInput(ctx, 0).status());
  std::vector<Type> types;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Type& t = ctx.inputType(i);
    types.push_back(t.isSequence() ? t.element() : t);
  }
  KILN_TRY(ctx.inferSubgraph(*body, types));
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    // Elements may differ in shape from one another; keep only the rank.
    const Type& t = body->outputs()[i]->type();
    if (!t.isTensor()) return shapeError("SequenceMap body outputs must be tensors");
    TensorType e = t.tensor().hasRank() ? TensorType(t.tensor().dtype(), Dims(size_t(t.tensor().rank()), kUnknownDim))
                                        : TensorType::unranked(t.tensor().dtype());
    ctx.setOutputType(i, Type::sequence(e));
  }
  return Status::ok();
}

Status inferOptional(InferenceContext& ctx) {
  if (!ctx.hasInput(0)) return shapeError("Optional without an input (type attribute) is not supported");
  ctx.setOutputType(0, Type::optional(ctx.inputType(0)));
  return Status::ok();
}

Status inferOptionalHasElement(InferenceContext& ctx) {
  setOut(ctx, 0, DType::Bool, {});
  return Status::ok();
}

Status inferOptionalGetElement(InferenceContext& ctx) {
  const Type& t = ctx.inputType(0);
  ctx.setOutputType(0, t.isOptional() ? t.element() : t);
  return Status::ok();
}

SchemaBuilder seqOp(const char* name, InferFn fn, const char* doc) {
  return std::move(SchemaBuilder(name).pattern(FusionPattern::Opaque).infer(fn).doc(doc));
}

}  // namespace

void registerSequenceOps(OpRegistry& r) {
  r.add(seqOp("SequenceEmpty", inferSequenceEmpty, "An empty sequence of dtype tensors.").inputs(0, 0)
            .outputs(1, 1, {"output"}).optionalAttr("dtype", AttrKind::Int).build());
  r.add(seqOp("SequenceConstruct", inferSequenceConstruct, "A sequence of the inputs.")
            .inputs(1, INT_MAX, {"inputs"}).outputs(1, 1, {"output_sequence"}).build());
  r.add(seqOp("SequenceInsert", inferSequenceInsert, "Inserts a tensor at position (default: end).")
            .inputs(2, 3, {"input_sequence", "tensor", "position"}).outputs(1, 1, {"output_sequence"}).build());
  r.add(seqOp("SequenceAt", inferSequenceAt, "The tensor at position (negative counts from the end).")
            .inputs(2, 2, {"input_sequence", "position"}).outputs(1, 1, {"tensor"}).build());
  r.add(seqOp("SequenceErase", inferSequenceErase, "Removes the tensor at position (default: last).")
            .inputs(1, 2, {"input_sequence", "position"}).outputs(1, 1, {"output_sequence"}).build());
  r.add(seqOp("SequenceLength", inferSequenceLength, "Number of tensors in the sequence.")
            .inputs(1, 1, {"input_sequence"}).outputs(1, 1, {"length"}).build());
  r.add(seqOp("SplitToSequence", inferSplitToSequence, "Splits a tensor along axis into a sequence.")
            .inputs(1, 2, {"input", "split"}).outputs(1, 1, {"output_sequence"}).attr("axis", 0).attr("keepdims", 1)
            .build());
  r.add(seqOp("ConcatFromSequence", inferConcatFromSequence, "Concatenates (or stacks with new_axis) a sequence.")
            .inputs(1, 1, {"input_sequence"}).outputs(1, 1, {"concat_result"})
            .requiredAttr("axis", AttrKind::Int).attr("new_axis", 0).build());
  r.add(seqOp("SequenceMap", inferSequenceMap, "Applies body to each element (sequence inputs zipped).")
            .inputs(1, INT_MAX, {"input_sequence", "additional_inputs"}).outputs(1, INT_MAX, {"out_sequence"})
            .requiredAttr("body", AttrKind::Graph).build());
  r.add(seqOp("Optional", inferOptional, "An optional holding the input.").inputs(0, 1, {"input"})
            .outputs(1, 1, {"output"}).build());
  r.add(seqOp("OptionalHasElement", inferOptionalHasElement, "True when the optional holds a value.")
            .inputs(0, 1, {"input"}).outputs(1, 1, {"output"}).build());
  r.add(seqOp("OptionalGetElement", inferOptionalGetElement, "The value held by an optional.")
            .inputs(1, 1, {"input"}).outputs(1, 1, {"output"}).build());
}

}  // namespace kiln::ir
