//===- lib/runtime/interpreter/kernels/SignalKernels.cpp - DFT, STFT, windows, text features -===//
//
// Direct O(n^2) DFT in double (real or complex input, inverse, onesided,
// dft_length padding/truncation), STFT over frames, Hann/Hamming/Blackman
// windows, the mel filter bank of MelWeightMatrix, and TfIdfVectorizer's
// skip-gram counting.
//
//===----------------------------------------------------------------------===//
#include <map>
#include <numbers>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// DFT of n complex samples (re, im), length `len` (zero-padded/truncated).
void dft1d(const std::vector<double>& re, const std::vector<double>& im, int64_t len, bool inverse, int64_t bins,
           std::vector<double>& outRe, std::vector<double>& outIm) {
  outRe.assign(size_t(bins), 0.0);
  outIm.assign(size_t(bins), 0.0);
  int64_t n = std::min<int64_t>(len, int64_t(re.size()));
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double sr = 0, si = 0;
    for (int64_t j = 0; j < n; ++j) {
      double ang = sign * 2 * std::numbers::pi * double((j * k) % len) / double(len);
      double c = std::cos(ang), s = std::sin(ang);
      sr += re[size_t(j)] * c - im[size_t(j)] * s;
      si += re[size_t(j)] * s + im[size_t(j)] * c;
    }
    outRe[size_t(k)] = inverse ? sr / double(len) : sr;
    outIm[size_t(k)] = inverse ? si / double(len) : si;
  }
}

Status kDft(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  int64_t axis = ctx.node().getInt("axis");
  if (axis < 0) axis += x.rank() - 1;
  bool inverse = ctx.node().getInt("inverse");  // onesided shows in the inferred bin count
  int64_t comps = x.dim(x.rank() - 1), n = x.dim(axis);
  int64_t len = n;
  if (ctx.hasInput(1)) {
    KILN_ASSIGN(len, scalarIntOperand(ctx, 1, "dft_length"));
  }
  if (len <= 0) return kernelError("dft_length must be positive");
  Tensor& y = ctx.allocate(0);
  int64_t bins = y.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank() - 1; ++d) inner *= x.dim(d);
  std::vector<double> xv = x.toDoubles(), out(static_cast<size_t>(y.numElements()));
  std::vector<double> re(static_cast<size_t>(n)), im(static_cast<size_t>(n)), oRe, oIm;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        size_t at = size_t(((o * n + j) * inner + i) * comps);
        re[size_t(j)] = xv[at];
        im[size_t(j)] = comps == 2 ? xv[at + 1] : 0.0;
      }
      dft1d(re, im, len, inverse, bins, oRe, oIm);
      for (int64_t k = 0; k < bins; ++k) {
        size_t at = size_t(((o * bins + k) * inner + i) * 2);
        out[at] = oRe[size_t(k)];
        out[at + 1] = oIm[size_t(k)];
      }
    }
  storeValues(y, out);
  return Status::ok();
}

Status kStft(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  KILN_ASSIGN(int64_t step, scalarIntOperand(ctx, 1, "frame_step"));
  std::vector<double> window;
  if (ctx.hasInput(2)) window = ctx.input(2).toDoubles();
  int64_t frameLength = int64_t(window.size());
  if (ctx.hasInput(3)) {
    KILN_ASSIGN(frameLength, scalarIntOperand(ctx, 3, "frame_length"));
  }
  if (window.empty()) window.assign(size_t(std::max<int64_t>(frameLength, 0)), 1.0);
  if (frameLength <= 0 || int64_t(window.size()) != frameLength || step <= 0)
    return kernelError("STFT needs a positive frame_step and a window of frame_length values");
  int64_t batch = x.dim(0), length = x.dim(1), comps = x.dim(2);
  if (frameLength > length) return kernelError("frame_length exceeds the signal length");
  int64_t frames = (length - frameLength) / step + 1;
  int64_t bins = ctx.node().getInt("onesided") ? frameLength / 2 + 1 : frameLength;
  Tensor& y = ctx.allocate(0, x.dtype(), {batch, frames, bins, 2});
  std::vector<double> xv = x.toDoubles(), out(static_cast<size_t>(y.numElements()));
  std::vector<double> re(static_cast<size_t>(frameLength)), im(static_cast<size_t>(frameLength)), oRe, oIm;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frameLength; ++j) {
        size_t at = size_t((b * length + f * step + j) * comps);
        re[size_t(j)] = xv[at] * window[size_t(j)];
        im[size_t(j)] = comps == 2 ? xv[at + 1] * window[size_t(j)] : 0.0;
      }
      dft1d(re, im, frameLength, false, bins, oRe, oIm);
      for (int64_t k = 0; k < bins; ++k) {
        out[size_t(((b * frames + f) * bins + k) * 2)] = oRe[size_t(k)];
        out[size_t(((b * frames + f) * bins + k) * 2 + 1)] = oIm[size_t(k)];
      }
    }
  storeValues(y, out);
  return Status::ok();
}

enum class Window { Hann, Hamming, Blackman };
template <Window kind>
Status kWindow(KernelContext& ctx) {
  Tensor& y = ctx.allocate(0);
  int64_t n = y.numElements();
  double denom = ctx.node().getInt("periodic") ? double(n) : double(n - 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double t = denom > 0 ? 2 * std::numbers::pi * double(i) / denom : 0.0;
    if constexpr (kind == Window::Hann) v[size_t(i)] = 0.5 - 0.5 * std::cos(t);
    else if constexpr (kind == Window::Hamming) v[size_t(i)] = 25.0 / 46 - 21.0 / 46 * std::cos(t);
    else v[size_t(i)] = 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t);
  }
  storeValues(y, v);
  return Status::ok();
}

Status kMelWeightMatrix(KernelContext& ctx) {
  KILN_ASSIGN(int64_t melBins, scalarIntOperand(ctx, 0, "num_mel_bins"));
  KILN_ASSIGN(int64_t dft, scalarIntOperand(ctx, 1, "dft_length"));
  KILN_ASSIGN(double rate, scalarOperand(ctx, 2, "sample_rate"));
  KILN_ASSIGN(double lo, scalarOperand(ctx, 3, "lower_edge_hertz"));
  KILN_ASSIGN(double hi, scalarOperand(ctx, 4, "upper_edge_hertz"));
  int64_t specBins = dft / 2 + 1;
  if (melBins <= 0 || dft <= 0 || rate <= 0) return kernelError("num_mel_bins, dft_length and sample_rate must be positive");
  Tensor& y = ctx.allocate(0);
  double loMel = 2595 * std::log10(1 + lo / 700), hiMel = 2595 * std::log10(1 + hi / 700);
  double step = (hiMel - loMel) / double(melBins + 2);
  std::vector<int64_t> f(size_t(melBins + 2));
  for (int64_t i = 0; i < melBins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (double(i) * step + loMel) / 2595) - 1);
    f[size_t(i)] = int64_t(std::floor(double(dft + 1) * hz / rate));
  }
  std::vector<double> out(size_t(specBins * melBins), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < specBins) out[size_t(row * melBins + col)] = v;
  };
  for (int64_t i = 0; i < melBins; ++i) {
    int64_t l = f[size_t(i)], c = f[size_t(i + 1)], h = f[size_t(i + 2)];
    if (c == l) set(c, i, 1);
    else
      for (int64_t j = l; j <= c; ++j) set(j, i, double(j - l) / double(c - l));
    if (h > c)
      for (int64_t j = c; j < h; ++j) set(j, i, double(h - j) / double(h - c));
  }
  storeValues(y, out);
  return Status::ok();
}

Status kTfIdf(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ir::Node& n = ctx.node();
  const std::string& mode = n.getString("mode");
  int64_t minN = n.getInt("min_gram_length"), maxN = n.getInt("max_gram_length"), maxSkip = n.getInt("max_skip_count");
  const auto &counts = n.getInts("ngram_counts"), &indexes = n.getInts("ngram_indexes"), &pool = n.getInts("pool_int64s");
  const auto& weights = n.getFloats("weights");
  if (!n.getStrings("pool_strings").empty()) return Error(ErrorCode::ExecUnsupported, "string pools are not supported");
  if (minN < 1 || maxN < minN || maxSkip < 0 || int64_t(counts.size()) < maxN)
    return kernelError("inconsistent n-gram attributes");
  // Map each pooled n-gram to its output column.
  std::map<std::vector<int64_t>, int64_t> column;
  size_t ordinal = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    int64_t len = int64_t(g) + 1;
    int64_t start = counts[g], end = g + 1 < counts.size() ? counts[g + 1] : int64_t(pool.size());
    if (start < 0 || end > int64_t(pool.size()) || start > end || (end - start) % len != 0)
      return kernelError("ngram_counts do not partition pool_int64s");
    for (int64_t p = start; p < end; p += len, ++ordinal) {
      if (ordinal >= indexes.size()) return kernelError("ngram_indexes is shorter than the pool");
      column[std::vector<int64_t>(pool.begin() + p, pool.begin() + p + len)] = indexes[ordinal];
    }
  }
  Tensor& y = ctx.allocate(0);
  int64_t width = y.dim(y.rank() - 1), rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.dims().back();
  std::vector<int64_t> tokens = x.toInt64s();
  std::vector<double> out(static_cast<size_t>(y.numElements()), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = tokens.data() + r * cols;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t s = 0; s <= maxSkip; ++s)
        for (int64_t len = minN; len <= maxN; ++len) {
          if (len == 1 && s > 0) continue;  // unigrams are counted once
          if (i + (len - 1) * (s + 1) >= cols) continue;
          std::vector<int64_t> gram;
          for (int64_t j = 0; j < len; ++j) gram.push_back(row[i + j * (s + 1)]);
          auto it = column.find(gram);
          if (it != column.end() && it->second < width) out[size_t(r * width + it->second)] += 1;
        }
  }
  // weights[i] belongs to the i-th pooled n-gram, whose column is ngram_indexes[i].
  std::vector<double> columnWeight(size_t(width), 1.0);
  for (size_t i = 0; i < weights.size() && i < indexes.size(); ++i)
    if (indexes[i] >= 0 && indexes[i] < width) columnWeight[size_t(indexes[i])] = weights[i];
  for (size_t i = 0; i < out.size(); ++i) {
    double w = columnWeight[i % size_t(width)];
    if (mode == "IDF") out[i] = out[i] > 0 ? w : 0;
    else if (mode == "TFIDF") out[i] *= w;
  }
  storeValues(y, out);
  return Status::ok();
}

}  // namespace

void registerSignalKernels(KernelRegistry& r) {
  r.add("DFT", kDft);
  r.add("STFT", kStft);
  r.add("HannWindow", kWindow<Window::Hann>);
  r.add("HammingWindow", kWindow<Window::Hamming>);
  r.add("BlackmanWindow", kWindow<Window::Blackman>);
  r.add("MelWeightMatrix", kMelWeightMatrix);
  r.add("TfIdfVectorizer", kTfIdf);
}

}  // namespace kiln::runtime
