//===- lib/frontend/onnx/NewerOpsetForms.h - Op forms of opset 18 on -*- C++ -*-===//
//
// Every op version that ONNX introduced from opset 18 to kMaxOpset, and how
// kiln imports it: unchanged (the version only widened its types, and kiln's
// type checks refuse the types it lacks), normalised into its opset-17 form
// (an input becomes an attribute, a new attribute at its default is dropped),
// or expanded into opset-17 ops as its ONNX function body does (Mish, Gelu,
// GroupNormalization, ...). A version that is listed without a handler is
// refused by name, never read as the older form.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string_view>

#include "OpsetNormalizer.h"
#include "kiln/support/NarrowTypes.h"

namespace kiln::onnx {

using FormHandler = Status (*)(NodeDraft&, DraftBuilder&);

struct NewerOpVersion {
  std::string_view op;
  int since;
  /// Rewrites the draft into opset-17 ops; null: the opset-17 form holds as is.
  FormHandler handler;
};

/// The version of default-domain op `op` that opset `opset` selects when it
/// is one introduced from opset 18 on; nullopt when the op's form is that of
/// opset 17 or older (or the op has no newer version).
std::optional<NewerOpVersion> newerOpVersion(std::string_view op, int64_t opset);

/// The oldest version from opset 18 on that the table lists for `op` (0: none);
/// for an op kiln's opset-17 table lacks, the opset that introduced it.
int firstNewerVersion(std::string_view op);

/// KE1003 "<op>: <what> is not supported by kiln": a form kiln refuses by name.
Error refuseForm(const NodeDraft& d, const std::string& what);

/// The most elements a constant that a rewrite builds from the model's dims
/// may hold (a hostile model can declare any dims).
inline constexpr int64_t kMaxBuiltConstantElements = int64_t(1) << 26;
/// The product of `factors` (all positive), or a KE1009 error naming `what`
/// when it exceeds `cap`.
Expected<int64_t> boundedProduct(const std::vector<int64_t>& factors, int64_t cap, const std::string& what);

/// The ints attribute `name`, or `n` copies of `dflt` when absent.
Expected<std::vector<int64_t>> intsOr(const NodeDraft& d, const char* name, size_t n, int64_t dflt);

// String tensors (StringForms.cpp): held as i64 ids into the string pool.
/// Rewrites Cast and CastLike to or from STRING into kiln's string casts, and
/// refuses Unique on strings; other drafts are left as they are.
Status stringForm(NodeDraft& d, DraftBuilder& b);
/// Whether a Cast or CastLike draft converts to STRING.
bool castsToString(const NodeDraft& d, const DraftBuilder& b);

/// Brings a draft of a newer op version into its opset-17 form, or refuses it.
Status normalizeNewerForm(NodeDraft& d, const NewerOpVersion& version, DraftBuilder& b);

// Expansions into opset-17 ops (FunctionExpansions.cpp) and their building
// blocks, which the com.microsoft expansions (ContribOps.cpp) share.
/// GELU of x: x (1 + erf(x / sqrt 2)) / 2, or its tanh(sqrt(2/pi) (x + 0.044715 x^3)) form.
Expected<ir::Value*> buildGelu(DraftBuilder& b, ir::Value* x, DType dt, bool tanhForm);
/// x / sqrt(mean(x^2 over axes) + eps), computed in f32 for narrower types when
/// stash is 1; `invRms`, when given, receives 1 / sqrt(...) in that type.
Expected<ir::Value*> buildRmsNormalized(DraftBuilder& b, ir::Value* x, DType dt, const std::vector<int64_t>& axes,
                                        float eps, int64_t stash, ir::Value** invRms = nullptr);
/// The axes from `axis` (negative: from the back) to the last of `rank`.
Expected<std::vector<int64_t>> axesFrom(int64_t axis, int64_t rank);
/// A scalar constant of `dt` holding `v`.
Expected<ir::Value*> scalar(DraftBuilder& b, DType dt, double v);
/// A rank-1 int64 constant.
Expected<ir::Value*> int64Constant(DraftBuilder& b, const std::vector<int64_t>& v);
/// The end padding a pooling axis gains so that its floor-mode output is as
/// long as its ceil_mode=1 output: ceil((len + pads - extent) / stride) + 1
/// windows, less a last one that would start past the input and its begin
/// padding (0 when the window does not fit at all: the shape check reports it).
int64_t ceilModeExtraPad(int64_t len, int64_t padBegin, int64_t padEnd, int64_t extent, int64_t stride);
/// x cast from `from` to `to` (x itself when they are the same).
Expected<ir::Value*> castIfNeeded(DraftBuilder& b, ir::Value* x, DType from, DType to);
/// Turns the draft into `op` with `inputs` and `attrs` (an expansion's last node).
void becomeNode(NodeDraft& d, const char* op, std::vector<ir::Value*> inputs,
                std::vector<std::pair<std::string, ir::Attribute>> attrs);
/// Turns the draft into kiln::NarrowCast(x) to the narrow type `to`.
void becomeNarrowCast(NodeDraft& d, ir::Value* x, NarrowType to, bool saturate);
/// Ends the draft as Identity(v): the expansion computed the result already.
Status finishWith(NodeDraft& d, ir::Value* v);
Status expandMish(NodeDraft& d, DraftBuilder& b);
Status expandGelu(NodeDraft& d, DraftBuilder& b);
Status expandSwish(NodeDraft& d, DraftBuilder& b);
Status expandRmsNormalization(NodeDraft& d, DraftBuilder& b);
Status expandGroupNormalization18(NodeDraft& d, DraftBuilder& b);
Status expandGroupNormalization21(NodeDraft& d, DraftBuilder& b);
Status expandCenterCropPad(NodeDraft& d, DraftBuilder& b);
Status expandAffineGrid(NodeDraft& d, DraftBuilder& b);

// Window ops as convolutions (WindowOpExpansions.cpp).
/// Col2Im-18: a grouped ConvTranspose with one-hot weights.
Status expandCol2Im(NodeDraft& d, DraftBuilder& b);
/// AveragePool-19 with dilations: a depthwise Conv with weights 1 / window,
/// times window / (taps inside the input) where padding is not counted.
Status expandDilatedAveragePool(NodeDraft& d, DraftBuilder& b);

/// Resize-18 with antialias=1 (linear or cubic, full-rank scales or sizes
/// known at import): a MatMul by a constant tap matrix per resized axis.
Status expandAntialiasedResize(NodeDraft& d, DraftBuilder& b);

// Attention and rotary embeddings (AttentionExpansions.cpp; GroupQueryAttention.cpp), ONNX and com.microsoft.
Status expandAttention(NodeDraft& d, DraftBuilder& b);
Status expandRotaryEmbedding(NodeDraft& d, DraftBuilder& b);
Status expandContribAttention(NodeDraft& d, DraftBuilder& b);
Status expandMultiHeadAttention(NodeDraft& d, DraftBuilder& b);
Status expandGroupQueryAttention(NodeDraft& d, DraftBuilder& b);
Status expandContribRotaryEmbedding(NodeDraft& d, DraftBuilder& b);
// QuantizeLinear / DequantizeLinear element-wise (BlockQuantization.cpp): blocked
// (blockSize > 0) or per tensor / per axis (0), to a DType or on a narrow type's carrier.
Status expandElementwiseQuantize(NodeDraft& d, DraftBuilder& b, int64_t blockSize, std::optional<NarrowType> narrow,
                                 bool saturate);
Status expandElementwiseDequantize(NodeDraft& d, DraftBuilder& b, int64_t blockSize);
// com.microsoft MatMulNBits (MatMulNBits.cpp): block-quantised weights dequantised at import.
Status expandMatMulNBits(NodeDraft& d, DraftBuilder& b);

}  // namespace kiln::onnx
