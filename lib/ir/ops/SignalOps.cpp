//===- lib/ir/ops/SignalOps.cpp - Signal processing and text features ------===//
//
// DFT, STFT, window generators, MelWeightMatrix and TfIdfVectorizer.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Expected<DType> outputDType(const Node& n) {
  auto d = dtypeFromOnnx(int(n.getInt("output_datatype")));
  if (!d) return Error(ErrorCode::UnsupportedType, "output_datatype " + std::to_string(n.getInt("output_datatype")) +
                                                       " is not supported");
  return *d;
}

Status inferDft(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (x.rank() < 2 || (x.dim(x.rank() - 1) >= 0 && x.dim(x.rank() - 1) != 1 && x.dim(x.rank() - 1) != 2))
    return shapeError("DFT input must end in a dim of 1 (real) or 2 (complex), got " + x.str());
  int64_t axis = ctx.node().getInt("axis");
  if (axis < -(x.rank() - 1) || axis >= x.rank() - 1) return attrError("axis is out of range");
  if (axis < 0) axis += x.rank() - 1;
  if (axis == 0) return attrError("axis 0 is the batch dim");
  Dims out = x.dims();
  out.back() = 2;
  int64_t n = out[size_t(axis)];
  if (ctx.hasInput(1)) {
    KILN_ASSIGN(auto len, knownScalarInt(ctx, 1, "dft_length"));
    n = len.value_or(kUnknownDim);
    if (len && n <= 0) return shapeError("dft_length must be positive");
  }
  bool onesided = ctx.node().getInt("onesided") != 0;
  out[size_t(axis)] = (onesided && n >= 0) ? n / 2 + 1 : n;
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferStft(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(requireRank(x, 3, "signal"));
  int64_t frameLength = kUnknownDim;
  if (ctx.hasInput(3)) {
    KILN_ASSIGN(auto fl, knownScalarInt(ctx, 3, "frame_length"));
    frameLength = fl.value_or(kUnknownDim);
  } else if (ctx.hasInput(2)) {
    KILN_ASSIGN(TensorType w, ctx.inputTensor(2));
    if (w.hasRank() && w.rank() == 1) frameLength = w.dim(0);
  }
  KILN_ASSIGN(auto stepValue, knownScalarInt(ctx, 1, "frame_step"));
  int64_t step = stepValue.value_or(kUnknownDim);
  if (stepValue && step <= 0) return shapeError("frame_step must be positive");
  int64_t batch = x.hasRank() ? x.dim(0) : kUnknownDim;
  int64_t length = x.hasRank() ? x.dim(1) : kUnknownDim;
  int64_t frames = (length >= 0 && frameLength > 0 && step > 0) ? (length - frameLength) / step + 1 : kUnknownDim;
  int64_t bins = frameLength < 0 ? kUnknownDim : (ctx.node().getInt("onesided") ? frameLength / 2 + 1 : frameLength);
  setOut(ctx, 0, x.dtype(), {batch, frames, bins, 2});
  return Status::ok();
}

Status inferWindow(InferenceContext& ctx) {
  KILN_ASSIGN(DType dtype, outputDType(ctx.node()));
  KILN_ASSIGN(auto sizeValue, knownScalarInt(ctx, 0, "size"));
  int64_t size = sizeValue.value_or(kUnknownDim);
  if (sizeValue && size < 0) return shapeError("window size must be non-negative");
  setOut(ctx, 0, dtype, {size});
  return Status::ok();
}

Status inferMelWeightMatrix(InferenceContext& ctx) {
  KILN_ASSIGN(DType dtype, outputDType(ctx.node()));
  KILN_ASSIGN(auto bins, knownScalarInt(ctx, 0, "num_mel_bins"));
  KILN_ASSIGN(auto dft, knownScalarInt(ctx, 1, "dft_length"));
  if ((bins && *bins <= 0) || (dft && *dft <= 0)) return shapeError("num_mel_bins and dft_length must be positive");
  setOut(ctx, 0, dtype, {dft ? *dft / 2 + 1 : kUnknownDim, bins.value_or(kUnknownDim)});
  return Status::ok();
}

Status inferTfIdf(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  const Node& n = ctx.node();
  const std::string& mode = n.getString("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return attrError("mode must be TF, IDF or TFIDF");
  int64_t size = 0;
  for (int64_t i : n.getInts("ngram_indexes")) size = std::max(size, i + 1);
  if (!x.hasRank()) {
    setUnranked(ctx, 0, DType::F32);
  } else if (x.rank() == 1) {
    setOut(ctx, 0, DType::F32, {size});
  } else if (x.rank() == 2) {
    setOut(ctx, 0, DType::F32, {x.dim(0), size});
  } else {
    return shapeError("TfIdfVectorizer input must be 1-D or 2-D, got " + x.str());
  }
  return Status::ok();
}

}  // namespace

void registerSignalOps(OpRegistry& r) {
  r.add(SchemaBuilder("DFT").inputs(1, 2, {"input", "dft_length"}).outputs(1, 1, {"output"}).attr("axis", 1)
            .attr("inverse", 0).attr("onesided", 0).pattern(FusionPattern::Opaque).infer(inferDft)
            .doc("Discrete Fourier transform along axis (complex as a trailing dim of 2).").build());
  r.add(SchemaBuilder("STFT").inputs(2, 4, {"signal", "frame_step", "window", "frame_length"}).outputs(1, 1, {"output"})
            .attr("onesided", 1).pattern(FusionPattern::Opaque).infer(inferStft)
            .doc("Short-time Fourier transform of [batch, length, 1|2] signals.").build());
  for (const char* name : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.add(SchemaBuilder(name).inputs(1, 1, {"size"}).outputs(1, 1, {"output"}).attr("output_datatype", 1)
              .attr("periodic", 1).pattern(FusionPattern::Opaque).infer(inferWindow)
              .doc(std::string(name) + " of the given size (periodic or symmetric).").build());
  r.add(SchemaBuilder("MelWeightMatrix")
            .inputs(5, 5, {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"})
            .outputs(1, 1, {"output"}).attr("output_datatype", 1).pattern(FusionPattern::Opaque)
            .infer(inferMelWeightMatrix).doc("Matrix mapping linear-frequency DFT bins to mel bins.").build());
  r.add(SchemaBuilder("TfIdfVectorizer").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .requiredAttr("max_gram_length", AttrKind::Int).requiredAttr("max_skip_count", AttrKind::Int)
            .requiredAttr("min_gram_length", AttrKind::Int).requiredAttr("mode", AttrKind::String)
            .requiredAttr("ngram_counts", AttrKind::Ints).requiredAttr("ngram_indexes", AttrKind::Ints)
            .attr("pool_int64s", std::vector<int64_t>{}).attr("pool_strings", std::vector<std::string>{})
            .attr("weights", std::vector<float>{}).pattern(FusionPattern::Opaque).infer(inferTfIdf)
            .doc("Counts (skip-)n-grams of integer tokens into TF, IDF or TF-IDF vectors.").build());
}

}  // namespace kiln::ir
