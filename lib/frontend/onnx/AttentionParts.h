//===- lib/frontend/onnx/AttentionParts.h - Pieces of attention expansions -*- C++ -*-===//
//
// The building blocks the attention expansions share (defined in
// AttentionExpansions.cpp): reshapes between [batch, sequence, hidden] and
// [batch, heads, sequence, head_size], additive mask biases, scaled
// dot-product attention and rotary embeddings, all as opset-17 ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "NewerOpsetForms.h"

namespace kiln::onnx::attention {

/// The static dims of `v`; an error naming `what` otherwise.
Expected<Dims> dimsOf(const ir::Value* v, const char* what);
Expected<ir::Value*> reshape(DraftBuilder& b, ir::Value* x, const std::vector<int64_t>& dims);
Expected<ir::Value*> transpose(DraftBuilder& b, ir::Value* x, const std::vector<int64_t>& perm);
/// x[..., start:end:step] along `axis`.
Expected<ir::Value*> slice(DraftBuilder& b, ir::Value* x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
/// Part [start, start + size) of the last axis of x.
Expected<ir::Value*> lastAxisPart(DraftBuilder& b, ir::Value* x, int64_t start, int64_t size);
/// Constant i64 of `rank` dims, all 1 but `axis`, holding 0 .. n-1 along `axis`.
Expected<ir::Value*> ramp(DraftBuilder& b, int64_t n, size_t rank, size_t axis);

/// The score a masked position gets: the most negative finite value of `dt`.
double maskedScore(DType dt);
/// 0 where `keep` is true, `masked` where it is false.
Expected<ir::Value*> biasWhere(DraftBuilder& b, ir::Value* keep, DType dt, double masked);
/// [batch, heads, sequence, head_size] back to [batch, sequence, heads * head_size].
Expected<ir::Value*> fromHeads(DraftBuilder& b, ir::Value* y);

struct Sdpa {
  ir::Value *q, *k, *v;  // [B, H, S, D], [B, Hkv, T, D], [B, Hkv, T, Dv]
  ir::Value* bias = nullptr;
  float scale = 0.0f;  // 0: 1 / sqrt(D)
  float softcap = 0.0f;
  DType dt = DType::F32;
  bool smooth = false;  // softmax with an extra zero logit in its denominator
};

/// softmax(q kT scale [softcap] + bias) v, the KV heads repeated over the
/// query heads; `stages`, when given, receives the scores after the scale,
/// the softcap, the bias and the softmax.
Expected<ir::Value*> scaledDotProduct(DraftBuilder& b, const Sdpa& a, std::vector<ir::Value*>* stages = nullptr);

struct Rotary {
  int64_t heads = 0;
  int64_t dim = 0;  // rotary_embedding_dim; 0: the head size
  bool interleaved = false;
};

/// x [B, S, H, D] with its first `rot` dims of each head rotated by cos and
/// sin [B or 1, S, rot / 2].
Expected<ir::Value*> rotate(DraftBuilder& b, ir::Value* x, ir::Value* cos, ir::Value* sin, const Rotary& r);
/// Rows `positions` of a [max_position, n] cos or sin cache.
Expected<ir::Value*> gatherRows(DraftBuilder& b, ir::Value* cache, ir::Value* positions);

/// The required, positive num_heads attribute.
Expected<int64_t> requiredHeads(NodeDraft& d);
/// Whether the model uses output slot `i`.
bool wantsOutput(const NodeDraft& d, size_t i);
/// Gives output slot `i` of the draft the value `v` when the model uses it.
void exposeOutput(NodeDraft& d, size_t i, ir::Value* v);
/// Ends the draft as its first output `y`; the other outputs went to computedOutputs.
Status finishAttention(NodeDraft& d, ir::Value* y);

}  // namespace kiln::onnx::attention
