//===- lib/runtime/core/Decoder.cpp - Greedy decoding with a KV cache ------===//
//
// GreedyDecoder (kiln/Decoder.h): matches a decoder artifact's inputs and
// outputs by name once, then runs the prompt and one step per new token,
// moving each step's presents into the next step's pasts.
//
//===----------------------------------------------------------------------===//
#include "kiln/Decoder.h"

#include <chrono>

#include "kiln/support/Strings.h"

namespace kiln {
namespace {

Error decoderError(const std::string& what) { return makeError(ErrorCode::InvalidArgument, "decoder: ", what); }

std::string namesOf(const std::vector<TensorInfo>& infos) {
  std::vector<std::string> names;
  for (const TensorInfo& t : infos) names.push_back("'" + t.name + "'");
  return joinStrings(names, ", ");
}

Expected<size_t> find(const std::vector<TensorInfo>& infos, const std::string& name, const char* what) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return i;
  return decoderError(std::string("the model has no ") + what + " '" + name + "' (its " + what + "s: " + namesOf(infos) + ")");
}

/// Whether dim `axis` of `t` may be `value` in a run.
bool serves(const TensorInfo& t, size_t axis, int64_t value) { return t.minDims[axis] <= value && value <= t.maxDims[axis]; }

/// "input 'x' dim 2 serves 1..192".
std::string rangeOf(const TensorInfo& t, size_t axis) {
  return "input '" + t.name + "' dim " + std::to_string(axis) + " serves " + std::to_string(t.minDims[axis]) + ".." +
         std::to_string(t.maxDims[axis]);
}

/// A [1, n] tensor of `dtype` holding `values`.
Expected<Tensor> row(DType dtype, const std::vector<int64_t>& values) {
  const Dims dims{1, int64_t(values.size())};
  if (dtype == DType::I64) return Tensor::fromVector<int64_t>(dims, values);
  if (dtype == DType::I32) return Tensor::fromVector<int32_t>(dims, std::vector<int32_t>(values.begin(), values.end()));
  if (dtype == DType::F32) return Tensor::fromVector<float>(dims, std::vector<float>(values.begin(), values.end()));
  return decoderError(std::string("inputs of type ") + dtypeName(dtype) + " are not generated (int64, int32, float32)");
}

/// first, first + 1, ..., first + n - 1.
std::vector<int64_t> iota(int64_t n, int64_t first) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = first + i;
  return v;
}

/// The index of the largest of `n` values (the first on ties).
int64_t argmax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

}  // namespace

double Generation::tokensPerSecond() const {
  double ms = 0;
  for (double s : stepMs) ms += s;
  return ms > 0 ? double(stepMs.size()) * 1000.0 / ms : 0.0;
}

Expected<GreedyDecoder> GreedyDecoder::create(const Model& model, DecoderNames names) {
  GreedyDecoder d(model, std::move(names));
  const std::vector<TensorInfo>& in = model.inputs();
  const std::vector<TensorInfo>& out = model.outputs();
  KILN_ASSIGN(d.tokensInput_, find(in, d.names_.tokens, "input"));
  KILN_ASSIGN(d.logitsOutput_, find(out, d.names_.logits, "output"));
  const TensorInfo& tokens = in[d.tokensInput_];
  if (tokens.dims.size() != 2 || !serves(tokens, 0, 1) || !serves(tokens, 1, 1))
    return decoderError("input '" + tokens.name + "' must be [1, seq] with seq 1 in its range");
  d.maxPromptTokens_ = tokens.maxDims[1];
  const TensorInfo& logits = out[d.logitsOutput_];
  if (logits.dims.size() != 3 || logits.dtype != DType::F32)
    return decoderError("output '" + logits.name + "' must be f32 [1, seq, vocab]");
  d.maxCache_ = INT64_MAX;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorInfo& t = in[i];
    if (i == d.tokensInput_) continue;
    if (t.name == d.names_.attentionMask || t.name == d.names_.positionIds) {
      if (t.dims.size() != 2 || !serves(t, 0, 1)) return decoderError("input '" + t.name + "' must be [1, n]");
      (t.name == d.names_.attentionMask ? d.maskInput_ : d.positionsInput_) = int(i);
      continue;
    }
    if (!t.name.starts_with(d.names_.pastPrefix))
      return decoderError("input '" + t.name + "' is neither the tokens ('" + d.names_.tokens + "'), a past ('" +
                          d.names_.pastPrefix + "...'), the attention mask nor the position ids");
    Past p;
    p.input = i;
    KILN_ASSIGN(p.present, find(out, d.names_.presentPrefix + t.name.substr(d.names_.pastPrefix.size()), "output"));
    std::vector<size_t> cacheAxes;
    for (size_t a = 1; a < t.dims.size(); ++a)
      if (t.minDims[a] != t.maxDims[a]) cacheAxes.push_back(a);
    if (cacheAxes.size() != 1 || !serves(t, 0, 1))
      return decoderError("input '" + t.name + "' must have batch 1 and one dynamic cache axis (compile with a range "
                          "for the cache length)");
    p.cacheAxis = cacheAxes[0];
    if (t.minDims[p.cacheAxis] != 0)
      return decoderError(rangeOf(t, p.cacheAxis) + "; decoding starts from an empty cache, so its range must start at 0");
    d.maxCache_ = std::min(d.maxCache_, t.maxDims[p.cacheAxis]);
    d.pasts_.push_back(p);
  }
  if (d.pasts_.empty()) return decoderError("the model has no past inputs ('" + d.names_.pastPrefix + "...')");
  return d;
}

Expected<Generation> GreedyDecoder::generate(const std::vector<int64_t>& prompt, int64_t steps,
                                             const std::function<void(int64_t)>& onToken) const {
  const int64_t n = int64_t(prompt.size());
  if (n == 0 || n > maxPromptTokens_)
    return decoderError("a prompt of " + std::to_string(n) + " tokens; the model takes 1.." +
                        std::to_string(maxPromptTokens_) + " in one step");
  if (steps < 1 || n + steps - 1 > maxTokens())
    return decoderError("the prompt's " + std::to_string(n) + " tokens and " + std::to_string(steps) +
                        " new ones need a cache of " + std::to_string(n + steps - 2) + " tokens; the model's serves up to " +
                        std::to_string(maxCache_));
  const std::vector<TensorInfo>& in = model_->inputs();
  std::vector<Tensor> inputs(in.size());
  for (const Past& p : pasts_) {
    Dims dims = in[p.input].dims;
    dims[0] = 1, dims[p.cacheAxis] = 0;
    inputs[p.input] = Tensor::zeros(in[p.input].dtype, dims);
  }
  Generation g;
  std::vector<int64_t> stepTokens = prompt;
  int64_t cache = 0;
  while (int64_t(g.tokens.size()) < steps) {
    const int64_t len = int64_t(stepTokens.size());
    KILN_ASSIGN(inputs[tokensInput_], row(in[tokensInput_].dtype, stepTokens));
    if (maskInput_ >= 0) {
      KILN_ASSIGN(inputs[size_t(maskInput_)], row(in[size_t(maskInput_)].dtype, std::vector<int64_t>(size_t(cache + len), 1)));
    }
    if (positionsInput_ >= 0) {
      KILN_ASSIGN(inputs[size_t(positionsInput_)], row(in[size_t(positionsInput_)].dtype, iota(len, cache)));
    }
    const auto start = std::chrono::steady_clock::now();
    KILN_ASSIGN(std::vector<Tensor> outputs, model_->run(inputs));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    (g.tokens.empty() ? g.promptMs : g.stepMs.emplace_back()) = ms;
    const Tensor& logits = outputs[logitsOutput_];
    const int64_t vocab = logits.dim(2);
    const int64_t next = argmax(logits.data<float>() + (len - 1) * vocab, vocab);
    g.tokens.push_back(next);
    if (onToken) onToken(next);
    for (const Past& p : pasts_) inputs[p.input] = std::move(outputs[p.present]);
    cache += len;
    stepTokens = {next};
  }
  return g;
}

}  // namespace kiln
