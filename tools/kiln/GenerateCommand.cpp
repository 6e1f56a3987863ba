//===- tools/kiln/GenerateCommand.cpp - `kiln generate` --------------------===//
//
// Greedy decoding through one decoder artifact (kiln/Decoder.h): the prompt
// in one step, then one step per new token over the growing KV cache.
// Prints the new tokens and the speed (the prompt's step, tokens per second
// over the later steps, per-token percentiles); --json prints one record
// that scripts/ort_generate.js also writes for ONNX Runtime's loop.
//
//===----------------------------------------------------------------------===//
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/Decoder.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

struct GenerateOptions {
  std::string artifact;
  std::vector<int64_t> prompt{0};
  int64_t tokens = 128;
  int threads = 0;
  bool json = false;
  DecoderNames names;
};

int generate(const GenerateOptions& o) {
  if (!o.artifact.ends_with(".kiln"))
    return reportError(Error(ErrorCode::InvalidArgument, "kiln generate runs a compiled artifact (.kiln); compile the "
                                                         "decoder with a range for its cache length first"));
  if (o.threads > 0) Model::setThreads(o.threads);
  auto model = Model::load(o.artifact);
  if (!model) return reportError(model.error());
  auto decoder = GreedyDecoder::create(**model, o.names);
  if (!decoder) return reportError(decoder.error());
  auto g = decoder->generate(o.prompt, o.tokens);
  if (!g) return reportError(g.error());
  const LatencySummary steps = summarizeLatencies(g->stepMs, 0);
  if (o.json) {
    nlohmann::json j;
    j["runtime"] = "kiln";
    j["artifact"] = o.artifact;
    j["prompt"] = o.prompt;
    j["tokens"] = g->tokens;
    j["prompt_ms"] = g->promptMs;
    j["step_ms"] = {{"mean", steps.mean}, {"p50", steps.p50}, {"p90", steps.p90}, {"p99", steps.p99}};
    j["tokens_per_s"] = g->tokensPerSecond();
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::vector<std::string> tokens;
  for (int64_t t : g->tokens) tokens.push_back(std::to_string(t));
  std::cout << std::fixed << std::setprecision(2);
  std::cout << "prompt   " << o.prompt.size() << " tokens in one step, " << g->promptMs << " ms\n";
  std::cout << "tokens   " << g->tokens.size() << " new: " << joinStrings(tokens, " ") << "\n";
  if (!g->stepMs.empty())
    std::cout << "speed    " << std::setprecision(1) << g->tokensPerSecond() << " tokens/s over " << g->stepMs.size()
              << " steps (per token p50 " << std::setprecision(3) << steps.p50 << " ms, p90 " << steps.p90 << " ms)\n";
  return 0;
}

}  // namespace

void addGenerateCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("generate", "Greedy decoding with a KV cache through a compiled decoder artifact "
                                             "(past key/value inputs, present outputs)");
  auto o = std::make_shared<GenerateOptions>();
  cmd->add_option("artifact", o->artifact, "The decoder's .kiln artifact, compiled with a cache-length range from 0")
      ->required();
  cmd->add_option("--prompt", o->prompt, "Prompt token ids, comma-separated (default: 0)")->delimiter(',');
  cmd->add_option("--tokens", o->tokens, "New tokens to generate")->default_val(128)->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads, "Threads the kernels use (default: all cores)");
  cmd->add_flag("--json", o->json, "Print one JSON record: prompt, tokens, prompt_ms, step_ms percentiles, tokens_per_s");
  cmd->add_option("--tokens-input", o->names.tokens, "The token ids input")->default_val(o->names.tokens);
  cmd->add_option("--logits-output", o->names.logits, "The logits output [1, seq, vocab]")->default_val(o->names.logits);
  cmd->add_option("--past-prefix", o->names.pastPrefix, "Inputs named PREFIX<rest> are pasts")->default_val(o->names.pastPrefix);
  cmd->add_option("--present-prefix", o->names.presentPrefix,
                  "Output PREFIX<rest> is the next step's past PAST-PREFIX<rest>")->default_val(o->names.presentPrefix);
  cmd->callback([=, &exitCode] { exitCode = generate(*o); });
}

}  // namespace kiln::cli
