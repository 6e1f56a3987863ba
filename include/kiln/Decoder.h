//===- kiln/Decoder.h - Greedy decoding with a KV cache (C++ API) -*- C++ -*-===//
//
// Runs a decoder artifact token by token: a GPT-style model exported with
// past key/value inputs and present outputs, compiled once with a range for
// the cache length (`kiln compile --min-shapes ...past:0... --max-shapes
// ...past:N...`). The prompt runs in one step from an empty cache; each
// later step feeds the token the step before chose (its logits' argmax) and
// the presents as the next pasts, so the cache grows by one token a step.
//
//   auto model = kiln::Model::load("gpt.kiln");
//   auto decoder = kiln::GreedyDecoder::create(**model);
//   auto result = decoder->generate({464, 2068}, 128);  // 128 new tokens
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {

/// How a decoder's inputs and outputs are named (the Hugging Face / ONNX
/// Runtime convention by default). Past input `<pastPrefix>X` takes the
/// value of output `<presentPrefix>X` of the step before. An input
/// `attentionMask` (if any) gets ones over the cache and the step's tokens,
/// `positionIds` the step's positions.
struct DecoderNames {
  std::string tokens = "input_ids";
  std::string logits = "logits";
  std::string pastPrefix = "past_key_values.";
  std::string presentPrefix = "present.";
  std::string attentionMask = "attention_mask";
  std::string positionIds = "position_ids";
};

struct Generation {
  std::vector<int64_t> tokens;  ///< the new tokens, in order
  double promptMs = 0;          ///< the prompt's step (it chooses the first token)
  std::vector<double> stepMs;   ///< each later step
  /// Tokens per second over the steps after the prompt's (0 with none).
  double tokensPerSecond() const;
};

class GreedyDecoder {
 public:
  /// Checks that `model` decodes: its inputs are the tokens, pasts (one
  /// dynamic cache axis each, whose range starts at 0), and optionally the
  /// mask and positions; every past has its present; the logits are
  /// [1, seq, vocab]. Errors (InvalidArgument) name the input or output.
  /// The model must outlive the decoder.
  static Expected<GreedyDecoder> create(const Model& model, DecoderNames names = {});

  /// The most tokens a generation may hold, prompt and new tokens together
  /// (the cache range's maximum + 1).
  int64_t maxTokens() const { return maxCache_ + 1; }

  /// Runs `prompt` and then `steps` - 1 more steps: `steps` new tokens, each
  /// the argmax of its logits (the first maximum on ties), `onToken` called
  /// with each as it is chosen. InvalidArgument when the prompt is empty or
  /// longer than the tokens input serves, or prompt + steps exceeds maxTokens().
  Expected<Generation> generate(const std::vector<int64_t>& prompt, int64_t steps,
                                const std::function<void(int64_t)>& onToken = nullptr) const;

 private:
  struct Past {
    size_t input = 0, present = 0;  ///< positions in the model's inputs and outputs
    size_t cacheAxis = 0;
  };
  GreedyDecoder(const Model& model, DecoderNames names) : model_(&model), names_(std::move(names)) {}
  /// The inputs of one step over `cache` cached tokens with `tokens` as its tokens.
  std::vector<Tensor> stepInputs(const std::vector<int64_t>& tokens, int64_t cache, std::vector<Tensor>& pasts) const;

  const Model* model_;
  DecoderNames names_;
  size_t tokensInput_ = 0, logitsOutput_ = 0;
  int64_t maxPromptTokens_ = 0, maxCache_ = 0;
  std::vector<Past> pasts_;
  int maskInput_ = -1, positionsInput_ = -1;
};

}  // namespace kiln
