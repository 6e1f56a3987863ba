//===- lib/frontend/onnx/AttentionExpansions.cpp - Attention as opset-17 ops -===//
//
// Attention and rotary embeddings, from ONNX (opset 23 on) and com.microsoft,
// written at import as the opset-17 ops of scaled dot-product attention over
// [batch, heads, sequence, head_size] operands:
//   MatMul(q, Transpose(k)) * scale [softcap] [+ bias] -> Softmax -> MatMul(., v)
// the form PyTorch exports, which the default pipelines compile to generated
// kernels and fuse-attention recognises. Every mask becomes part of one
// additive bias (a large negative score where a key is masked, finite so that
// fast-math code stays exact), so that each form feeds that one pattern:
//   Attention (ONNX 23/24)         3-D or 4-D q/k/v, grouped KV heads, past
//                                  key/value, bool or float mask, is_causal, softcap
//   com.microsoft Attention        packed QKV projection, 2-D key mask, unidirectional
//   com.microsoft MultiHeadAttention  separate q/k/v (+ bias), key padding mask,
//                                  attention bias, past key/value
//   com.microsoft GroupQueryAttention  in GroupQueryAttention.cpp, from the
//                                  pieces here (AttentionParts.h)
//   RotaryEmbedding (ONNX 23, com.microsoft)
//                                  the first rotary dims of each head rotated by
//                                  (cos, sin), in halves or interleaved pairs
// Shapes must be static (bound with --shape at import): the head split reshapes by them.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <limits>

#include "AttentionParts.h"
#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace attention {

Expected<Dims> dimsOf(const ir::Value* v, const char* what) {
  if (!v || !v->type().isTensor() || !v->type().tensor().hasRank() || !v->type().tensor().isStatic())
    return Error(ErrorCode::ShapeMismatch,
                 std::string(what) + " needs a static shape (give the model's dynamic dims with --shape)");
  return v->type().tensor().dims();
}

Expected<ir::Value*> reshape(DraftBuilder& b, ir::Value* x, const std::vector<int64_t>& dims) {
  KILN_ASSIGN(ir::Value* shape, int64Constant(b, dims));
  return b.node("Reshape", {x, shape}, {});
}

Expected<ir::Value*> transpose(DraftBuilder& b, ir::Value* x, const std::vector<int64_t>& perm) {
  return b.node("Transpose", {x}, {{"perm", ir::Attribute(perm)}});
}

Expected<ir::Value*> concat(DraftBuilder& b, std::vector<ir::Value*> parts, int64_t axis) {
  return b.node("Concat", std::move(parts), {{"axis", ir::Attribute(axis)}});
}

Expected<ir::Value*> unsqueeze(DraftBuilder& b, ir::Value* x, int64_t axis) {
  KILN_ASSIGN(ir::Value* axes, int64Constant(b, {axis}));
  return b.node("Unsqueeze", {x, axes}, {});
}

/// x[..., start:end:step] along `axis`.
Expected<ir::Value*> slice(DraftBuilder& b, ir::Value* x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  KILN_ASSIGN(ir::Value* s, int64Constant(b, {start}));
  KILN_ASSIGN(ir::Value* e, int64Constant(b, {end}));
  KILN_ASSIGN(ir::Value* a, int64Constant(b, {axis}));
  KILN_ASSIGN(ir::Value* st, int64Constant(b, {step}));
  return b.node("Slice", {x, s, e, a, st}, {});
}

/// The score a masked position gets: the most negative finite value of `dt`.
double maskedScore(DType dt) { return dt == DType::F16 ? -65504.0 : double(std::numeric_limits<float>::lowest()); }

/// A [batch, sequence, hidden] operand as [batch, heads, sequence, hidden / heads];
/// a 4-D one is already in that layout.
Expected<ir::Value*> toHeads(DraftBuilder& b, ir::Value* x, int64_t heads, const char* what) {
  KILN_ASSIGN(Dims dims, dimsOf(x, what));
  if (dims.size() == 4) return x;
  if (dims.size() != 3) return Error(ErrorCode::ShapeMismatch, std::string(what) + " must be 3-D or 4-D");
  if (heads < 1 || dims[2] % heads != 0)
    return Error(ErrorCode::BadAttribute, std::string(what) + ": hidden size " + std::to_string(dims[2]) +
                                              " does not split into " + std::to_string(heads) + " heads");
  KILN_ASSIGN(ir::Value* split, reshape(b, x, {dims[0], dims[1], heads, dims[2] / heads}));
  return transpose(b, split, {0, 2, 1, 3});
}

/// [batch, heads, sequence, head_size] back to [batch, sequence, heads * head_size].
Expected<ir::Value*> fromHeads(DraftBuilder& b, ir::Value* y) {
  KILN_ASSIGN(Dims dims, dimsOf(y, "the attention output"));
  KILN_ASSIGN(ir::Value* t, transpose(b, y, {0, 2, 1, 3}));
  return reshape(b, t, {dims[0], dims[2], dims[1] * dims[3]});
}

/// Each of the kv heads of `x` [B, Hkv, T, D] repeated to `heads` (h0 h0 h1 h1 ...).
Expected<ir::Value*> repeatHeads(DraftBuilder& b, ir::Value* x, int64_t heads) {
  KILN_ASSIGN(Dims dims, dimsOf(x, "key and value"));
  if (dims[1] == heads) return x;
  if (dims[1] < 1 || heads % dims[1] != 0)
    return Error(ErrorCode::ShapeMismatch, std::to_string(heads) + " query heads do not group over " +
                                               std::to_string(dims[1]) + " key/value heads");
  int64_t reps = heads / dims[1];
  KILN_ASSIGN(ir::Value* u, unsqueeze(b, x, 2));
  KILN_ASSIGN(ir::Value* shape, int64Constant(b, {dims[0], dims[1], reps, dims[2], dims[3]}));
  KILN_ASSIGN(ir::Value* e, b.node("Expand", {u, shape}, {}));
  return reshape(b, e, {dims[0], heads, dims[2], dims[3]});
}

/// The additive bias of a causal mask over [S, T]: query i sees keys j <= i + past.
Expected<ir::Value*> causalBias(DraftBuilder& b, DType dt, int64_t s, int64_t t, int64_t past, double masked) {
  std::vector<double> bias(size_t(s * t), 0.0);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = i + past + 1; j < t; ++j) bias[size_t(i * t + j)] = masked;
  return b.constant(Tensor::fromVector<double>({s, t}, bias).castTo(dt));
}

Expected<ir::Value*> addBias(DraftBuilder& b, ir::Value* bias, ir::Value* more) {
  if (!bias) return more;
  return b.node("Add", {bias, more}, {});
}

/// 0 where `keep` is true, `masked` where it is false.
Expected<ir::Value*> biasWhere(DraftBuilder& b, ir::Value* keep, DType dt, double masked) {
  KILN_ASSIGN(ir::Value* zero, scalar(b, dt, 0.0));
  KILN_ASSIGN(ir::Value* off, scalar(b, dt, masked));
  return b.node("Where", {keep, zero, off}, {});
}

/// A [batch, T] key mask (nonzero: attend) as a [batch, 1, 1, T] additive bias.
Expected<ir::Value*> keyMaskBias(DraftBuilder& b, ir::Value* mask, DType dt, double masked, int64_t total) {
  KILN_ASSIGN(Dims dims, dimsOf(mask, "the key mask"));
  if (dims.size() != 2 || dims[1] != total)
    return Error(ErrorCode::OnnxUnsupportedOp, "only a [batch, " + std::to_string(total) +
                                                   "] key mask is supported by kiln, got rank " +
                                                   std::to_string(dims.size()));
  KILN_ASSIGN(ir::Value* zero, b.constant(scalarOf(mask->type().tensor().dtype(), 0)));
  KILN_ASSIGN(ir::Value* keep, b.node("Greater", {mask, zero}, {}));
  KILN_ASSIGN(ir::Value* bias, biasWhere(b, keep, dt, masked));
  return reshape(b, bias, {dims[0], 1, 1, dims[1]});
}

/// Softmax over the last axis; `smooth` adds a zero logit to each row's
/// denominator (a column of zeros softmaxed with the row, then dropped).
Expected<ir::Value*> softmaxRows(DraftBuilder& b, ir::Value* scores, bool smooth) {
  const std::vector<std::pair<std::string, ir::Attribute>> lastAxis = {{"axis", ir::Attribute(int64_t(-1))}};
  if (!smooth) return b.node("Softmax", {scores}, lastAxis);
  KILN_ASSIGN(Dims sd, dimsOf(scores, "the attention scores"));
  std::vector<int64_t> pads(2 * sd.size(), 0);
  pads.back() = 1;
  KILN_ASSIGN(ir::Value* p, int64Constant(b, pads));
  KILN_ASSIGN(ir::Value* withZero, b.node("Pad", {scores, p}, {}));
  KILN_ASSIGN(ir::Value* probs, b.node("Softmax", {withZero}, lastAxis));
  return slice(b, probs, -1, 0, sd.back());
}

/// softmax(q kT scale [softcap] + bias) v; `stages`, when given, receives the
/// scores after the scale, the softcap, the bias and the softmax.
Expected<ir::Value*> scaledDotProduct(DraftBuilder& b, const Sdpa& a, std::vector<ir::Value*>* stages) {
  KILN_ASSIGN(Dims qd, dimsOf(a.q, "the query"));
  KILN_ASSIGN(ir::Value* k, repeatHeads(b, a.k, qd[1]));
  KILN_ASSIGN(ir::Value* v, repeatHeads(b, a.v, qd[1]));
  KILN_ASSIGN(ir::Value* kT, transpose(b, k, {0, 1, 3, 2}));
  KILN_ASSIGN(ir::Value* raw, b.node("MatMul", {a.q, kT}, {}));
  float scale = a.scale != 0.0f ? a.scale : float(1.0 / std::sqrt(double(qd[3])));
  KILN_ASSIGN(ir::Value* c, scalar(b, a.dt, scale));
  KILN_ASSIGN(ir::Value* scores, b.node("Mul", {raw, c}, {}));
  if (stages) stages->push_back(scores);
  if (a.softcap > 0.0f) {
    KILN_ASSIGN(ir::Value* cap, scalar(b, a.dt, a.softcap));
    KILN_ASSIGN(ir::Value* over, b.node("Div", {scores, cap}, {}));
    KILN_ASSIGN(ir::Value* th, b.node("Tanh", {over}, {}));
    KILN_ASSIGN(scores, b.node("Mul", {th, cap}, {}));
  }
  if (stages) stages->push_back(scores);
  if (a.bias) {
    KILN_ASSIGN(scores, b.node("Add", {scores, a.bias}, {}));
  }
  if (stages) stages->push_back(scores);
  KILN_ASSIGN(ir::Value* probs, softmaxRows(b, scores, a.smooth));
  if (stages) stages->push_back(probs);
  return b.node("MatMul", {probs, v}, {});
}

/// Gives output slot `i` of the draft the value `v` when the model uses it.
void exposeOutput(NodeDraft& d, size_t i, ir::Value* v) {
  if (i < d.outputs.size() && !d.outputs[i].empty()) d.computedOutputs.emplace_back(d.outputs[i], v);
}

bool wantsOutput(const NodeDraft& d, size_t i) { return i < d.outputs.size() && !d.outputs[i].empty(); }

/// Ends the draft as its first output `y`; the other outputs went to computedOutputs.
Status finishAttention(NodeDraft& d, ir::Value* y) {
  d.outputs.resize(1);
  return finishWith(d, y);
}

/// past (when given) followed by the new keys or values along the sequence axis.
Expected<ir::Value*> withPast(DraftBuilder& b, const NodeDraft& d, size_t pastSlot, ir::Value* x) {
  if (!hasInput(d, pastSlot)) return x;
  return concat(b, {d.inputs[pastSlot], x}, 2);
}

/// ONNX Attention's attn_mask as an additive bias over T keys (a shorter mask
/// is padded with masked positions, as the spec says).
Expected<ir::Value*> attnMaskBias(DraftBuilder& b, ir::Value* mask, DType dt, int64_t total) {
  KILN_ASSIGN(Dims dims, dimsOf(mask, "attn_mask"));
  if (dims.empty() || dims.back() > total)
    return Error(ErrorCode::ShapeMismatch, "attn_mask's last dim exceeds the " + std::to_string(total) + " keys");
  ir::Value* bias = mask;
  if (mask->type().tensor().dtype() == DType::Bool) {
    KILN_ASSIGN(bias, biasWhere(b, mask, dt, maskedScore(dt)));
  }
  if (dims.back() == total) return bias;
  std::vector<int64_t> pads(2 * dims.size(), 0);
  pads.back() = total - dims.back();
  KILN_ASSIGN(ir::Value* p, int64Constant(b, pads));
  KILN_ASSIGN(ir::Value* fill, scalar(b, dt, maskedScore(dt)));
  return b.node("Pad", {bias, p, fill}, {});
}

}  // namespace attention

using namespace attention;

Status expandAttention(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(int64_t causal, d.takeInt("is_causal", 0));
  KILN_ASSIGN(int64_t qHeads, d.takeInt("q_num_heads", 0));
  KILN_ASSIGN(int64_t kvHeads, d.takeInt("kv_num_heads", 0));
  KILN_ASSIGN(int64_t qkMode, d.takeInt("qk_matmul_output_mode", 0));
  KILN_ASSIGN(float scale, d.takeFloat("scale", 0.0f));
  KILN_ASSIGN(float softcap, d.takeFloat("softcap", 0.0f));
  d.take("softmax_precision");  // the softmax runs in the input type
  if (hasInput(d, 6)) return refuseForm(d, "nonpad_kv_seqlen");
  if (qkMode < 0 || qkMode > 3) return Error(ErrorCode::BadAttribute, "qk_matmul_output_mode must be 0 to 3");
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  Sdpa a;
  a.dt = dt;
  a.scale = scale;
  a.softcap = softcap;
  KILN_ASSIGN(a.q, toHeads(b, d.inputs[0], qHeads, "Q"));
  KILN_ASSIGN(ir::Value* k, toHeads(b, d.inputs[1], kvHeads, "K"));
  KILN_ASSIGN(ir::Value* v, toHeads(b, d.inputs[2], kvHeads, "V"));
  KILN_ASSIGN(a.k, withPast(b, d, 4, k));
  KILN_ASSIGN(a.v, withPast(b, d, 5, v));
  KILN_ASSIGN(Dims qd, dimsOf(a.q, "Q"));
  KILN_ASSIGN(Dims kd, dimsOf(a.k, "K"));
  KILN_ASSIGN(Dims kNew, dimsOf(k, "K"));
  if (hasInput(d, 3)) {
    KILN_ASSIGN(a.bias, attnMaskBias(b, d.inputs[3], dt, kd[2]));
  }
  if (causal) {
    KILN_ASSIGN(ir::Value* c, causalBias(b, dt, qd[2], kd[2], kd[2] - kNew[2], maskedScore(dt)));
    KILN_ASSIGN(a.bias, addBias(b, a.bias, c));
  }
  std::vector<ir::Value*> stages;
  KILN_ASSIGN(ir::Value* y, scaledDotProduct(b, a, wantsOutput(d, 3) ? &stages : nullptr));
  if (rank == 3) {
    KILN_ASSIGN(y, fromHeads(b, y));
  }
  exposeOutput(d, 1, a.k);
  exposeOutput(d, 2, a.v);
  if (!stages.empty()) exposeOutput(d, 3, stages[size_t(qkMode)]);
  return finishAttention(d, y);
}

namespace attention {

/// The additive bias of com.microsoft attention: key mask, attention_bias and
/// the unidirectional (causal) mask, all with mask_filter_value.
struct ContribMasks {
  ir::Value* keyMask = nullptr;
  ir::Value* attentionBias = nullptr;
  bool unidirectional = false;
  double filter = -10000.0;
};

Expected<ir::Value*> contribBias(DraftBuilder& b, const ContribMasks& m, const Dims& qd, const Dims& kd, int64_t past,
                                 DType dt) {
  ir::Value* bias = nullptr;
  if (m.keyMask) {
    KILN_ASSIGN(bias, keyMaskBias(b, m.keyMask, dt, m.filter, kd[2]));
  }
  if (m.unidirectional) {
    KILN_ASSIGN(ir::Value* c, causalBias(b, dt, qd[2], kd[2], past, m.filter));
    KILN_ASSIGN(bias, addBias(b, bias, c));
  }
  if (m.attentionBias) {
    KILN_ASSIGN(bias, addBias(b, bias, m.attentionBias));
  }
  return bias;
}

Expected<int64_t> requiredHeads(NodeDraft& d) {
  KILN_ASSIGN(int64_t heads, d.takeInt("num_heads", 0));
  if (heads < 1) return Error(ErrorCode::BadAttribute, "required attribute 'num_heads' is missing or not positive");
  return heads;
}

Expected<ContribMasks> takeContribMasks(NodeDraft& d, size_t keyMaskSlot, size_t biasSlot) {
  ContribMasks m;
  KILN_ASSIGN(int64_t uni, d.takeInt("unidirectional", 0));
  KILN_ASSIGN(float filter, d.takeFloat("mask_filter_value", -10000.0f));
  m.unidirectional = uni != 0;
  m.filter = filter;
  if (hasInput(d, keyMaskSlot)) m.keyMask = d.inputs[keyMaskSlot];
  if (hasInput(d, biasSlot)) m.attentionBias = d.inputs[biasSlot];
  return m;
}

/// Part [start, start + size) of the last axis of x.
Expected<ir::Value*> lastAxisPart(DraftBuilder& b, ir::Value* x, int64_t start, int64_t size) {
  return slice(b, x, -1, start, start + size);
}

Expected<ir::Value*> ramp(DraftBuilder& b, int64_t n, size_t rank, size_t axis) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = i;
  Dims dims(rank, 1);
  dims[axis] = n;
  return b.constant(Tensor::fromVector<int64_t>(dims, values));
}

}  // namespace attention

Status expandContribAttention(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  KILN_ASSIGN(int64_t heads, requiredHeads(d));
  KILN_ASSIGN(float scale, d.takeFloat("scale", 0.0f));
  KILN_ASSIGN(int64_t rotary, d.takeInt("do_rotary", 0));
  KILN_ASSIGN(int64_t share, d.takeInt("past_present_share_buffer", 0));
  KILN_ASSIGN(auto sizes, d.takeAs("qkv_hidden_sizes", ir::AttrKind::Ints));
  d.take("rotary_embedding_dim");
  if (rotary) return refuseForm(d, "do_rotary=1");
  if (share) return refuseForm(d, "past_present_share_buffer=1");
  if (hasInput(d, 4) || hasInput(d, 6) || wantsOutput(d, 1)) return refuseForm(d, "past and present state");
  KILN_ASSIGN(ContribMasks masks, takeContribMasks(d, 3, 5));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(Dims wd, dimsOf(d.inputs[1], "weights"));
  if (wd.size() != 2) return Error(ErrorCode::ShapeMismatch, "weights must be 2-D");
  std::vector<int64_t> parts = sizes ? sizes->ints() : std::vector<int64_t>(3, wd[1] / 3);
  if (parts.size() != 3 || parts[0] + parts[1] + parts[2] != wd[1] || parts[0] != parts[1])
    return Error(ErrorCode::BadAttribute, "qkv_hidden_sizes must split the weights' " + std::to_string(wd[1]) +
                                              " columns into q, k (of q's size) and v");
  KILN_ASSIGN(ir::Value* qkv, b.node("MatMul", {d.inputs[0], d.inputs[1]}, {}));
  if (hasInput(d, 2)) {
    KILN_ASSIGN(qkv, b.node("Add", {qkv, d.inputs[2]}, {}));
  }
  Sdpa a;
  a.dt = dt;
  a.scale = scale;
  KILN_ASSIGN(ir::Value* q, lastAxisPart(b, qkv, 0, parts[0]));
  KILN_ASSIGN(ir::Value* k, lastAxisPart(b, qkv, parts[0], parts[1]));
  KILN_ASSIGN(ir::Value* v, lastAxisPart(b, qkv, parts[0] + parts[1], parts[2]));
  KILN_ASSIGN(a.q, toHeads(b, q, heads, "the query"));
  KILN_ASSIGN(a.k, toHeads(b, k, heads, "the key"));
  KILN_ASSIGN(a.v, toHeads(b, v, heads, "the value"));
  KILN_ASSIGN(Dims qd, dimsOf(a.q, "the query"));
  KILN_ASSIGN(Dims kd, dimsOf(a.k, "the key"));
  KILN_ASSIGN(a.bias, contribBias(b, masks, qd, kd, 0, dt));
  KILN_ASSIGN(ir::Value* y, scaledDotProduct(b, a));
  KILN_ASSIGN(y, fromHeads(b, y));
  return finishAttention(d, y);
}

Status expandMultiHeadAttention(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(int64_t heads, requiredHeads(d));
  KILN_ASSIGN(float scale, d.takeFloat("scale", 0.0f));
  if (hasInput(d, 8) || hasInput(d, 9)) return refuseForm(d, "past_sequence_length and cache_indirection");
  if (wantsOutput(d, 3)) return refuseForm(d, "the qk output");
  KILN_ASSIGN(ContribMasks masks, takeContribMasks(d, 4, 5));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(Dims qd3, dimsOf(d.inputs[0], "query"));
  KILN_ASSIGN(Dims kd3, dimsOf(d.inputs[1], "key"));
  KILN_ASSIGN(Dims vd3, dimsOf(d.inputs[2], "value"));
  if (qd3.size() != 3) return refuseForm(d, "a packed query (rank other than 3)");
  ir::Value *q = d.inputs[0], *k = d.inputs[1], *v = d.inputs[2];
  if (hasInput(d, 3)) {  // bias: q, k and v parts, for 3-D key and value only
    if (kd3.size() != 3 || vd3.size() != 3) return refuseForm(d, "a bias with 4-D key and value");
    KILN_ASSIGN(ir::Value* bq, lastAxisPart(b, d.inputs[3], 0, qd3[2]));
    KILN_ASSIGN(ir::Value* bk, lastAxisPart(b, d.inputs[3], qd3[2], kd3[2]));
    KILN_ASSIGN(ir::Value* bv, lastAxisPart(b, d.inputs[3], qd3[2] + kd3[2], vd3[2]));
    KILN_ASSIGN(q, b.node("Add", {q, bq}, {}));
    KILN_ASSIGN(k, b.node("Add", {k, bk}, {}));
    KILN_ASSIGN(v, b.node("Add", {v, bv}, {}));
  }
  Sdpa a;
  a.dt = dt;
  a.scale = scale;
  KILN_ASSIGN(a.q, toHeads(b, q, heads, "query"));
  KILN_ASSIGN(k, toHeads(b, k, heads, "key"));
  KILN_ASSIGN(v, toHeads(b, v, heads, "value"));
  KILN_ASSIGN(a.k, withPast(b, d, 6, k));
  KILN_ASSIGN(a.v, withPast(b, d, 7, v));
  KILN_ASSIGN(Dims qd, dimsOf(a.q, "query"));
  KILN_ASSIGN(Dims kd, dimsOf(a.k, "key"));
  KILN_ASSIGN(Dims kNew, dimsOf(k, "key"));
  KILN_ASSIGN(a.bias, contribBias(b, masks, qd, kd, kd[2] - kNew[2], dt));
  KILN_ASSIGN(ir::Value* y, scaledDotProduct(b, a));
  KILN_ASSIGN(y, fromHeads(b, y));
  exposeOutput(d, 1, a.k);
  exposeOutput(d, 2, a.v);
  return finishAttention(d, y);
}

namespace attention {

Expected<Rotary> takeRotary(NodeDraft& d) {
  Rotary r;
  KILN_ASSIGN(int64_t inter, d.takeInt("interleaved", 0));
  KILN_ASSIGN(r.heads, d.takeInt("num_heads", 0));
  KILN_ASSIGN(r.dim, d.takeInt("rotary_embedding_dim", 0));
  r.interleaved = inter != 0;
  return r;
}

/// x [B, S, H, D] with its first `rot` dims of each head rotated by cos and
/// sin [B or 1, S, rot / 2].
Expected<ir::Value*> rotate(DraftBuilder& b, ir::Value* x, ir::Value* cos, ir::Value* sin, const Rotary& r) {
  KILN_ASSIGN(Dims xd, dimsOf(x, "the input"));
  int64_t rot = r.dim ? r.dim : xd[3];
  if (rot % 2 != 0 || rot > xd[3])
    return Error(ErrorCode::BadAttribute, "rotary_embedding_dim " + std::to_string(rot) +
                                              " must be even and at most the head size " + std::to_string(xd[3]));
  KILN_ASSIGN(Dims cd, dimsOf(cos, "cos_cache"));
  if (cd.empty() || cd.back() != rot / 2)
    return Error(ErrorCode::ShapeMismatch, "cos_cache's last dim must be " + std::to_string(rot / 2));
  KILN_ASSIGN(ir::Value* c, unsqueeze(b, cos, 2));
  KILN_ASSIGN(ir::Value* s, unsqueeze(b, sin, 2));
  ir::Value* xr = x;
  if (rot < xd[3]) {
    KILN_ASSIGN(xr, slice(b, x, 3, 0, rot));
  }
  ir::Value *x1 = nullptr, *x2 = nullptr;
  if (r.interleaved) {
    KILN_ASSIGN(x1, slice(b, xr, 3, 0, rot, 2));
    KILN_ASSIGN(x2, slice(b, xr, 3, 1, rot, 2));
  } else {
    KILN_ASSIGN(x1, slice(b, xr, 3, 0, rot / 2));
    KILN_ASSIGN(x2, slice(b, xr, 3, rot / 2, rot));
  }
  KILN_ASSIGN(ir::Value* c1, b.node("Mul", {c, x1}, {}));
  KILN_ASSIGN(ir::Value* s2, b.node("Mul", {s, x2}, {}));
  KILN_ASSIGN(ir::Value* s1, b.node("Mul", {s, x1}, {}));
  KILN_ASSIGN(ir::Value* c2, b.node("Mul", {c, x2}, {}));
  KILN_ASSIGN(ir::Value* real, b.node("Sub", {c1, s2}, {}));
  KILN_ASSIGN(ir::Value* imag, b.node("Add", {s1, c2}, {}));
  ir::Value* rotated = nullptr;
  if (r.interleaved) {
    KILN_ASSIGN(ir::Value* re, unsqueeze(b, real, 4));
    KILN_ASSIGN(ir::Value* im, unsqueeze(b, imag, 4));
    KILN_ASSIGN(ir::Value* pairs, concat(b, {re, im}, 4));
    KILN_ASSIGN(rotated, reshape(b, pairs, {xd[0], xd[1], xd[2], rot}));
  } else {
    KILN_ASSIGN(rotated, concat(b, {real, imag}, 3));
  }
  if (rot == xd[3]) return rotated;
  KILN_ASSIGN(ir::Value* rest, slice(b, x, 3, rot, xd[3]));
  return concat(b, {rotated, rest}, 3);
}

/// Rotates a 3-D [B, S, hidden] or 4-D [B, H, S, D] input and returns it in its own layout.
Expected<ir::Value*> rotateInput(DraftBuilder& b, ir::Value* x, ir::Value* cos, ir::Value* sin, const Rotary& r) {
  KILN_ASSIGN(Dims xd, dimsOf(x, "the input"));
  if (xd.size() == 4) {
    KILN_ASSIGN(ir::Value* t, transpose(b, x, {0, 2, 1, 3}));
    KILN_ASSIGN(ir::Value* y, rotate(b, t, cos, sin, r));
    return transpose(b, y, {0, 2, 1, 3});
  }
  if (xd.size() != 3) return Error(ErrorCode::ShapeMismatch, "the input must be 3-D or 4-D");
  if (r.heads < 1 || xd[2] % r.heads != 0)
    return Error(ErrorCode::BadAttribute, "a 3-D input needs num_heads that divides its hidden size " +
                                              std::to_string(xd[2]));
  KILN_ASSIGN(ir::Value* split, reshape(b, x, {xd[0], xd[1], r.heads, xd[2] / r.heads}));
  KILN_ASSIGN(ir::Value* y, rotate(b, split, cos, sin, r));
  return reshape(b, y, xd);
}

Expected<ir::Value*> gatherRows(DraftBuilder& b, ir::Value* cache, ir::Value* positions) {
  return b.node("Gather", {cache, positions}, {{"axis", ir::Attribute(int64_t(0))}});
}

}  // namespace attention

Status expandRotaryEmbedding(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(Rotary r, takeRotary(d));
  ir::Value *cos = d.inputs[1], *sin = d.inputs[2];
  if (hasInput(d, 3)) {  // caches indexed by position: [max_position, rot / 2]
    KILN_ASSIGN(cos, gatherRows(b, cos, d.inputs[3]));
    KILN_ASSIGN(sin, gatherRows(b, sin, d.inputs[3]));
  }
  KILN_ASSIGN(ir::Value* y, rotateInput(b, d.inputs[0], cos, sin, r));
  return finishWith(d, y);
}

Status expandContribRotaryEmbedding(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 4));
  KILN_ASSIGN(Rotary r, takeRotary(d));
  KILN_ASSIGN(int64_t packed, d.takeInt("is_packed_batching", 0));
  d.take("scale");  // ONNX Runtime's kernels do not read it
  if (packed) return refuseForm(d, "is_packed_batching=1");
  KILN_ASSIGN(Dims xd, dimsOf(d.inputs[0], "the input"));
  KILN_ASSIGN(Dims pd, dimsOf(d.inputs[1], "position_ids"));
  ir::Value* positions = d.inputs[1];
  if (pd.size() == 1 && pd[0] == 1) {  // one offset: positions offset .. offset + S - 1
    int64_t seq = xd.size() == 4 ? xd[2] : xd[1];
    KILN_ASSIGN(ir::Value* steps, ramp(b, seq, 2, 1));
    KILN_ASSIGN(positions, b.node("Add", {positions, steps}, {}));
  } else if (pd.size() != 2) {
    return Error(ErrorCode::ShapeMismatch, "position_ids must be [1] or [batch, sequence]");
  }
  KILN_ASSIGN(ir::Value* cos, gatherRows(b, d.inputs[2], positions));
  KILN_ASSIGN(ir::Value* sin, gatherRows(b, d.inputs[3], positions));
  KILN_ASSIGN(ir::Value* y, rotateInput(b, d.inputs[0], cos, sin, r));
  return finishWith(d, y);
}

}  // namespace kiln::onnx
