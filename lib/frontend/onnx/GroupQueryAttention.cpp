//===- lib/frontend/onnx/GroupQueryAttention.cpp - com.microsoft GQA -------===//
//
// com.microsoft GroupQueryAttention as opset-17 ops, computing what ONNX
// Runtime's CPU kernel computes: grouped KV heads over a KV cache in which
// each sequence's new keys and values land at its own past length (from
// seqlens_k; 0 for a first prompt, where the sequence length equals
// total_sequence_length), causal attention with an optional local window,
// rotary embeddings at each token's position, softcap and smooth softmax.
// The cache is [batch, kv_heads, past + sequence, head_size] inside; the
// present outputs are max(total_sequence_length, past) long.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "AttentionParts.h"

namespace kiln::onnx {

using namespace attention;

namespace {

/// Cast's `to` for INT64 (TensorProto.DataType).
const std::vector<std::pair<std::string, ir::Attribute>> kToInt64 = {{"to", ir::Attribute(int64_t(7))}};

/// Each sequence's past length [B] (i64), as ONNX Runtime reads it: 0 for a
/// first prompt (S == total_sequence_length), else seqlens_k + 1 - S.
Expected<ir::Value*> gqaPastLengths(DraftBuilder& b, ir::Value* seqlens, ir::Value* total, int64_t s) {
  KILN_ASSIGN(ir::Value* lens, b.node("Cast", {seqlens}, kToInt64));
  KILN_ASSIGN(ir::Value* tot, b.node("Cast", {total}, kToInt64));
  KILN_ASSIGN(ir::Value* seq, int64Constant(b, {s}));
  KILN_ASSIGN(ir::Value* first, b.node("Equal", {tot, seq}, {}));
  KILN_ASSIGN(ir::Value* lastMinus, int64Constant(b, {s - 1}));
  KILN_ASSIGN(ir::Value* past, b.node("Sub", {lens, lastMinus}, {}));
  KILN_ASSIGN(ir::Value* zero, int64Constant(b, {0}));
  return b.node("Where", {first, zero, past}, {});
}

/// The present cache [B, Hkv, P + S, D] of ONNX Runtime's CPU kernel: rows
/// before each sequence's past length from `past`, its S new rows `x` after
/// them, zeros beyond.
Expected<ir::Value*> gqaPresent(DraftBuilder& b, ir::Value* past, ir::Value* x, ir::Value* pastLengths, DType dt) {
  KILN_ASSIGN(Dims pd, dimsOf(past, "past_key and past_value"));
  KILN_ASSIGN(Dims xd, dimsOf(x, "the new keys and values"));
  if (pd.size() != 4 || pd[0] != xd[0] || pd[1] != xd[1] || pd[3] != xd[3])
    return Error(ErrorCode::ShapeMismatch, "past_key and past_value must be [batch, kv_num_heads, past, head_size] = [" +
                                               std::to_string(xd[0]) + ", " + std::to_string(xd[1]) + ", ., " +
                                               std::to_string(xd[3]) + "]");
  const int64_t s = xd[2], length = pd[2] + s;
  KILN_ASSIGN(ir::Value* pads, int64Constant(b, {0, 0, 0, 0, 0, 0, s, 0}));
  KILN_ASSIGN(ir::Value* padded, b.node("Pad", {past, pads}, {}));
  KILN_ASSIGN(ir::Value* row, ramp(b, length, 4, 2));
  KILN_ASSIGN(ir::Value* at, reshape(b, pastLengths, {xd[0], 1, 1, 1}));
  KILN_ASSIGN(ir::Value* old, b.node("Less", {row, at}, {}));
  KILN_ASSIGN(ir::Value* rel, b.node("Sub", {row, at}, {}));
  KILN_ASSIGN(ir::Value* zero, int64Constant(b, {0}));
  KILN_ASSIGN(ir::Value* last, int64Constant(b, {s - 1}));
  KILN_ASSIGN(ir::Value* after, b.node("Less", {last, rel}, {}));
  KILN_ASSIGN(ir::Value* low, b.node("Max", {rel, zero}, {}));
  KILN_ASSIGN(ir::Value* index, b.node("Min", {low, last}, {}));
  KILN_ASSIGN(ir::Value* shape, int64Constant(b, {xd[0], xd[1], length, xd[3]}));
  KILN_ASSIGN(ir::Value* wide, b.node("Expand", {index, shape}, {}));
  KILN_ASSIGN(ir::Value* placed, b.node("GatherElements", {x, wide}, {{"axis", ir::Attribute(int64_t(2))}}));
  KILN_ASSIGN(ir::Value* none, scalar(b, dt, 0.0));
  KILN_ASSIGN(ir::Value* fresh, b.node("Where", {after, none, placed}, {}));
  return b.node("Where", {old, padded, fresh}, {});
}

/// The additive bias [B, 1, S, T] of GroupQueryAttention: query i of a
/// sequence with past p sees keys j <= p + i, and with a local window w > 0
/// only the last w of them (j > p + i - w), as ONNX Runtime counts the window.
Expected<ir::Value*> gqaBias(DraftBuilder& b, ir::Value* pastLengths, int64_t batch, int64_t s, int64_t t,
                             int64_t window, DType dt) {
  KILN_ASSIGN(ir::Value* at, reshape(b, pastLengths, {batch, 1, 1, 1}));
  KILN_ASSIGN(ir::Value* query, ramp(b, s, 4, 2));
  KILN_ASSIGN(ir::Value* key, ramp(b, t, 4, 3));
  KILN_ASSIGN(ir::Value* position, b.node("Add", {at, query}, {}));
  KILN_ASSIGN(ir::Value* keep, b.node("LessOrEqual", {key, position}, {}));
  if (window > 0) {
    KILN_ASSIGN(ir::Value* w, int64Constant(b, {window - 1}));
    KILN_ASSIGN(ir::Value* first, b.node("Sub", {position, w}, {}));
    KILN_ASSIGN(ir::Value* inWindow, b.node("GreaterOrEqual", {key, first}, {}));
    KILN_ASSIGN(keep, b.node("And", {keep, inWindow}, {}));
  }
  return biasWhere(b, keep, dt, maskedScore(dt));
}

/// present_key/present_value of length max(total_sequence_length, P) out of the
/// [.., P + S, ..] cache: sliced at import when the total is known, else at run time.
Expected<ir::Value*> gqaPresentOutput(DraftBuilder& b, ir::Value* cache, ir::Value* total, int64_t past) {
  KILN_ASSIGN(Dims cd, dimsOf(cache, "the present cache"));
  KILN_ASSIGN(ir::Value* start, int64Constant(b, {0}));
  KILN_ASSIGN(ir::Value* axis, int64Constant(b, {2}));
  if (const Tensor* known = b.knownValue(total)) {
    const int64_t length = std::max(int64_t(known->toDoubles().at(0)), past);
    if (length > cd[2])
      return Error(ErrorCode::ShapeMismatch, "total_sequence_length " + std::to_string(length) +
                                                 " exceeds the past and new sequence (" + std::to_string(cd[2]) + ")");
    return length == cd[2] ? cache : slice(b, cache, 2, 0, length);
  }
  KILN_ASSIGN(ir::Value* tot, b.node("Cast", {total}, kToInt64));
  KILN_ASSIGN(ir::Value* flat, reshape(b, tot, {1}));
  KILN_ASSIGN(ir::Value* p, int64Constant(b, {past}));
  KILN_ASSIGN(ir::Value* end, b.node("Max", {flat, p}, {}));
  return b.node("Slice", {cache, start, end, axis}, {});
}

struct GqaForm {
  int64_t heads = 0, kvHeads = 0, window = -1;
  float scale = 0.0f, softcap = 0.0f;
  bool rotary = false, interleaved = false, smooth = false;
};

/// The attributes kiln computes; the forms it does not are refused by name.
Expected<GqaForm> takeGqaForm(NodeDraft& d) {
  GqaForm f;
  KILN_ASSIGN(f.heads, requiredHeads(d));
  KILN_ASSIGN(f.kvHeads, d.takeInt("kv_num_heads", 0));
  KILN_ASSIGN(f.scale, d.takeFloat("scale", 0.0f));
  KILN_ASSIGN(f.softcap, d.takeFloat("softcap", 0.0f));
  KILN_ASSIGN(f.window, d.takeInt("local_window_size", -1));
  KILN_ASSIGN(int64_t rotary, d.takeInt("do_rotary", 0));
  KILN_ASSIGN(int64_t interleaved, d.takeInt("rotary_interleaved", 0));
  KILN_ASSIGN(int64_t smooth, d.takeInt("smooth_softmax", 0));
  KILN_ASSIGN(int64_t qk, d.takeInt("qk_output", 0));
  KILN_ASSIGN(int64_t causal, d.takeInt("causal", 1));
  KILN_ASSIGN(int64_t windowCache, d.takeInt("sliding_window_cache", 0));
  KILN_ASSIGN(int64_t bits, d.takeInt("kv_cache_bit_width", 0));
  for (const char* unused : {"qk_norm_epsilon", "k_quant_type", "v_quant_type"}) d.take(unused);
  if (f.kvHeads < 1 || f.heads % f.kvHeads != 0)
    return Error(ErrorCode::BadAttribute, "kv_num_heads must be positive and divide num_heads " +
                                              std::to_string(f.heads));
  if (qk || wantsOutput(d, 3)) return refuseForm(d, "the qk output");
  if (!causal) return refuseForm(d, "causal=0");
  if (windowCache) return refuseForm(d, "sliding_window_cache=1");
  if (bits) return refuseForm(d, "a quantized KV cache");
  const char* const extras[] = {"position_ids", "attention_bias", "head_sink", "k_scale",
                                "v_scale", "q_norm_weight", "k_norm_weight"};
  for (size_t i = 9; i < 16; ++i)
    if (hasInput(d, i)) return refuseForm(d, std::string("input ") + extras[i - 9]);
  if (!hasInput(d, 5) || !hasInput(d, 6))
    return Error(ErrorCode::OnnxInvalidGraph, "seqlens_k and total_sequence_length are required");
  if (hasInput(d, 1) != hasInput(d, 2)) return Error(ErrorCode::OnnxInvalidGraph, "key and value go together");
  if (hasInput(d, 3) != hasInput(d, 4))
    return Error(ErrorCode::OnnxInvalidGraph, "past_key and past_value go together");
  if (rotary && (!hasInput(d, 7) || !hasInput(d, 8)))
    return Error(ErrorCode::OnnxInvalidGraph, "do_rotary=1 needs cos_cache and sin_cache");
  f.rotary = rotary != 0;
  f.interleaved = interleaved != 0;
  f.smooth = smooth != 0;
  return f;
}

/// `x` [B, S, hidden] as [B, S, heads, hidden / heads], rotated at `positions` when asked.
Expected<ir::Value*> gqaHeads(DraftBuilder& b, ir::Value* x, int64_t heads, int64_t headSize, const NodeDraft& d,
                              const GqaForm& f, ir::Value* positions) {
  KILN_ASSIGN(Dims xd, dimsOf(x, "query, key and value"));
  KILN_ASSIGN(ir::Value* split, reshape(b, x, {xd[0], xd[1], heads, headSize}));
  if (!f.rotary) return split;
  KILN_ASSIGN(Dims cd, dimsOf(d.inputs[7], "cos_cache"));
  if (cd.size() != 2) return Error(ErrorCode::ShapeMismatch, "cos_cache must be [max_sequence_length, rotary_dim / 2]");
  Rotary r;
  r.dim = 2 * cd[1];
  r.interleaved = f.interleaved;
  KILN_ASSIGN(ir::Value* cos, gatherRows(b, d.inputs[7], positions));
  KILN_ASSIGN(ir::Value* sin, gatherRows(b, d.inputs[8], positions));
  return rotate(b, split, cos, sin, r);
}

}  // namespace

Status expandGroupQueryAttention(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 1));
  KILN_ASSIGN(GqaForm f, takeGqaForm(d));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(Dims qd, dimsOf(d.inputs[0], "query"));
  if (qd.size() != 3) return Error(ErrorCode::ShapeMismatch, "query must be [batch, sequence, hidden]");
  const bool packed = !hasInput(d, 1);
  const int64_t parts = packed ? f.heads + 2 * f.kvHeads : f.heads;
  if (qd[2] % parts != 0)
    return Error(ErrorCode::ShapeMismatch, "query's hidden size " + std::to_string(qd[2]) + " does not split into " +
                                               std::to_string(parts) + " heads");
  const int64_t batch = qd[0], s = qd[1], headSize = qd[2] / parts;
  ir::Value *q = d.inputs[0], *k = packed ? nullptr : d.inputs[1], *v = packed ? nullptr : d.inputs[2];
  if (packed) {
    KILN_ASSIGN(q, lastAxisPart(b, d.inputs[0], 0, f.heads * headSize));
    KILN_ASSIGN(k, lastAxisPart(b, d.inputs[0], f.heads * headSize, f.kvHeads * headSize));
    KILN_ASSIGN(v, lastAxisPart(b, d.inputs[0], (f.heads + f.kvHeads) * headSize, f.kvHeads * headSize));
  }
  KILN_ASSIGN(ir::Value* pastLengths, gqaPastLengths(b, d.inputs[5], d.inputs[6], s));
  ir::Value* positions = nullptr;  // each new token's position: its sequence's past length + i
  if (f.rotary) {
    KILN_ASSIGN(ir::Value* at, reshape(b, pastLengths, {batch, 1}));
    KILN_ASSIGN(ir::Value* steps, ramp(b, s, 2, 1));
    KILN_ASSIGN(positions, b.node("Add", {at, steps}, {}));
  }
  KILN_ASSIGN(ir::Value* q4, gqaHeads(b, q, f.heads, headSize, d, f, positions));
  KILN_ASSIGN(ir::Value* k4, gqaHeads(b, k, f.kvHeads, headSize, d, f, positions));
  KILN_ASSIGN(ir::Value* v4, gqaHeads(b, v, f.kvHeads, headSize, d, GqaForm{}, nullptr));
  Sdpa a;
  a.dt = dt;
  a.scale = f.scale;
  a.softcap = f.softcap;
  a.smooth = f.smooth;
  KILN_ASSIGN(a.q, transpose(b, q4, {0, 2, 1, 3}));
  KILN_ASSIGN(a.k, transpose(b, k4, {0, 2, 1, 3}));
  KILN_ASSIGN(a.v, transpose(b, v4, {0, 2, 1, 3}));
  int64_t past = 0;
  if (hasInput(d, 3)) {
    KILN_ASSIGN(Dims pd, dimsOf(d.inputs[3], "past_key"));
    past = pd.size() == 4 ? pd[2] : 0;
    KILN_ASSIGN(a.k, gqaPresent(b, d.inputs[3], a.k, pastLengths, dt));
    KILN_ASSIGN(a.v, gqaPresent(b, d.inputs[4], a.v, pastLengths, dt));
  }
  KILN_ASSIGN(a.bias, gqaBias(b, pastLengths, batch, s, past + s, f.window, dt));
  KILN_ASSIGN(ir::Value* y, scaledDotProduct(b, a));
  KILN_ASSIGN(y, fromHeads(b, y));
  for (size_t slot : {size_t(1), size_t(2)}) {
    if (!wantsOutput(d, slot)) continue;
    KILN_ASSIGN(ir::Value* present, gqaPresentOutput(b, slot == 1 ? a.k : a.v, d.inputs[6], past));
    exposeOutput(d, slot, present);
  }
  return finishAttention(d, y);
}

}  // namespace kiln::onnx
