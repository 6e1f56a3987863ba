//===- tools/kiln/FuseCommand.cpp - `kiln fuse` ---------------------------===//
//
// Registers `kiln fuse` and runs its search mode (FuseOptions.h): import and
// the -O pipeline as `kiln compile` does, seeded inputs, then the strategy's
// trials, each a fusion configuration compiled (kernels cached by their
// code) and timed end to end, with a live progress line. A best plan that
// differs from the default is kept only when paired runs against the
// default confirm it is faster, so the searched model is never slower;
// -o writes the kept plan for `kiln compile --fusion-plan` (with the same
// -O level or pipeline: the plan names the edges of that graph), --json
// the search's record (every trial's latency and the best after it).
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "Commands.h"
#include "FuseOptions.h"
#include "ModelInputs.h"
#include "kiln/fuse/EdgeFeatures.h"
#include "kiln/support/File.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

/// The progress line: trial, this configuration's latency, the best against the default, ETA.
void showProgress(const fuse::SearchTrial& t, const fuse::SearchResult& r, const FuseOptions& o, bool terminal) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << "kiln fuse: trial " << t.index << "/" << o.search.trials << "  ";
  if (t.evaluation.ok()) os << t.evaluation.ms << " ms";
  else os << fuse::evaluationStatusName(t.evaluation.status);
  os << "  best " << r.bestMs << " ms (" << std::setprecision(3) << r.bestMs / r.defaultMs << "x the default)";
  if (t.index > 0) os << "  eta " << clockText(t.elapsedSeconds / t.index * (o.search.trials - t.index));
  if (terminal) std::cerr << "\r" << os.str() << "\033[K" << std::flush;
  else std::cerr << os.str() << "\n";
}

/// Each kept configuration's paired ratio against the default (by trial index), for --confirm-kept.
using ConfirmedRatios = std::map<int, double>;

nlohmann::json recordOf(const FuseOptions& o, const fuse::SearchResult& r, double confirmedRatio, bool kept,
                        const ConfirmedRatios& confirmed) {
  nlohmann::json trials = nlohmann::json::array();
  for (const fuse::SearchTrial& t : r.trials) {
    auto c = confirmed.find(t.index);
    trials.push_back({{"trial", t.index},
                      {"status", fuse::evaluationStatusName(t.evaluation.status)},
                      {"ms", t.evaluation.ok() ? nlohmann::json(t.evaluation.ms) : nlohmann::json()},
                      {"kept", t.kept},
                      {"replayed", t.evaluation.replayed},
                      {"config", fuse::decisionString(t.decisions)},
                      {"kernels_compiled", t.evaluation.kernelsCompiled},
                      {"best_ms", t.bestMs},
                      {"confirmed_ratio", c == confirmed.end() ? nlohmann::json() : nlohmann::json(c->second)},
                      {"seconds", t.elapsedSeconds}});
  }
  return {{"schema", "kiln-fuse/1"},  {"model", o.model.path},   {"target", o.target},
          {"strategy", o.search.strategy}, {"seed", o.search.seed}, {"radius", o.search.radius},
          {"advantage_model", o.search.advantage ? o.advantageModel : ""},
          {"from", o.from},          {"default_ms", r.defaultMs}, {"start_ms", r.startMs},
          {"best_ms", r.bestMs},     {"confirmed_ratio", confirmedRatio}, {"kept", kept ? "searched" : "default"},
          {"invalid", r.invalid},    {"repeats_skipped", r.cached},       {"trials", trials}};
}

/// With --confirm-kept, every kept configuration that is not the default (the start from a random one
/// included) against the default in --confirm-pairs paired runs: what each step of the search really
/// gained, where the search's own best latency carries every acceptance's noise. The last is the best.
Expected<ConfirmedRatios> confirmKept(fuse::FusionEvaluator& evaluator, const fuse::SearchResult& r,
                                      const FuseOptions& o) {
  ConfirmedRatios confirmed;
  for (const fuse::SearchTrial& t : r.trials) {
    if (!o.confirmKept || !t.kept || t.decisions == evaluator.defaultDecisions()) continue;
    KILN_ASSIGN(confirmed[t.index], evaluator.pairedRatio(t.decisions, evaluator.defaultDecisions(), o.confirmPairs));
  }
  return confirmed;
}

/// How many classes of alike edges (fuse::edgeClasses) the plan has.
size_t classCount(const fuse::FusionEvaluator& evaluator) {
  const std::vector<size_t> classes = fuse::edgeClasses(evaluator.plan());
  return classes.empty() ? 0 : *std::max_element(classes.begin(), classes.end()) + 1;
}

}  // namespace

std::string advantageModelPath(const FuseOptions& o) {
  if (!o.advantageModel.empty()) return o.advantageModel;
  return std::string(KILN_DATA_DIR) + "/advantage/" + o.target + ".json";
}

Expected<std::unique_ptr<fuse::FusionEvaluator>> makeFuseEvaluator(const FuseOptions& o,
                                                                  std::unique_ptr<ir::Module>& module) {
  if (o.target != "cpu")
    return makeError(ErrorCode::InvalidArgument,
                     "kiln fuse measures on this CPU: --target cpu (the CUDA target's measurement is not built yet)");
  KILN_ASSIGN(ModelWithInputs model, loadModelWithInputs(o.model, o.inputs, o.search.seed));
  std::vector<Tensor> inputs;
  for (const RuntimeValue& v : model.inputs) inputs.push_back(v.isTensor() ? v.tensor() : Tensor());
  module = std::move(model.module);
  KILN_ASSIGN(std::unique_ptr<fuse::FusionEvaluator> evaluator,
              fuse::FusionEvaluator::create(module->graph(), std::move(inputs), o.evaluation));
  if (!o.database.empty()) KILN_TRY(evaluator->useDatabase(o.database));
  return evaluator;
}

Expected<fuse::Decisions> startDecisions(const FuseOptions& o, fuse::FusionEvaluator& evaluator) {
  if (o.from == "default" || o.from == "random") return fuse::Decisions{};
  KILN_ASSIGN(std::string text, readFile(o.from));
  auto decisions = evaluator.decisionsOf(text);
  if (!decisions) return makeError(decisions.error().code(), o.from, ": ", decisions.error().message());
  return decisions;
}

int searchMode(FuseOptions o) {
  o.search.fromRandom = o.from == "random";
  std::ostream* log = o.quiet ? nullptr : &std::cerr;
  std::unique_ptr<fuse::AdvantageModel> advantage;
  if (fuse::strategyNeedsModel(o.search.strategy)) {
    o.advantageModel = advantageModelPath(o);
    auto loaded = fuse::AdvantageModel::load(o.advantageModel);
    if (!loaded) return reportError(loaded.error());
    advantage = std::move(*loaded);
    o.search.advantage = advantage.get();
  }
  std::unique_ptr<ir::Module> module;
  auto evaluator = makeFuseEvaluator(o, module);
  if (!evaluator) return reportError(evaluator.error());
  auto start = startDecisions(o, **evaluator);
  if (!start) return reportError(start.error());
  o.search.start = std::move(*start);
  if (log)
    *log << "kiln fuse: " << (*evaluator)->edgeCount() << " fusion edges in " << classCount(**evaluator)
         << " classes of alike edges, " << (*evaluator)->plan().groups().size()
         << " kernels by default; " << o.search.trials << " trials of " << o.search.strategy << " search from the "
         << o.from << " configuration (seed " << o.search.seed << ")\n";
  const bool terminal = isatty(STDERR_FILENO);
  auto result = fuse::searchFusion(**evaluator, o.search, [&](const fuse::SearchTrial& t, const fuse::SearchResult& r) {
    if (log) showProgress(t, r, o, terminal);
  });
  if (log && terminal) *log << "\n";
  if (!result) return reportError(result.error());
  // The searched plan stays only where paired runs confirm it beats the default.
  const fuse::Decisions& defaults = (*evaluator)->defaultDecisions();
  auto confirmed = confirmKept(**evaluator, *result, o);
  if (!confirmed) return reportError(confirmed.error());
  double ratio = 1.0;
  bool kept = false;
  if (result->best != defaults) {
    auto last = confirmed->empty() ? confirmed->end() : std::prev(confirmed->end());
    auto paired = last != confirmed->end() ? Expected<double>(last->second)
                                           : (*evaluator)->pairedRatio(result->best, defaults, o.confirmPairs);
    if (!paired) return reportError(paired.error());
    ratio = *paired;
    kept = ratio < 1.0;
  }
  const fuse::Decisions& chosen = kept ? result->best : defaults;
  std::cout << std::fixed << std::setprecision(3);
  std::cout << "searched " << o.model.path << " on this CPU: " << result->trials.size() - 1 << " trials of "
            << o.search.strategy << " (" << (*evaluator)->partitionsMeasured() << " distinct partitions evaluated, "
            << result->invalid << " rejected, " << (*evaluator)->kernelsCompiled() << " kernels compiled)\n";
  std::cout << "  default   " << result->defaultMs << " ms\n";
  std::cout << "  best      " << result->bestMs << " ms (" << result->bestMs / result->defaultMs << "x)\n";
  if (result->best == defaults) std::cout << "  kept      the default: no configuration was faster\n";
  else if (kept) std::cout << "  kept      the searched plan: " << o.confirmPairs << " paired runs, median ratio " << ratio << "\n";
  else std::cout << "  kept      the default: paired runs gave the searched plan a median ratio of " << ratio << "\n";
  if (!o.output.empty()) {
    if (Status s = writeFile(o.output, (*evaluator)->planText(chosen)); !s.isOk()) return reportError(s.error());
    std::cout << "  plan      " << o.output << " (kiln compile " << o.model.path << " --fusion-plan " << o.output << ")\n";
  }
  if (!o.jsonFile.empty())
    if (Status s = writeFile(o.jsonFile, recordOf(o, *result, ratio, kept, *confirmed).dump(1) + "\n"); !s.isOk())
      return reportError(s.error());
  return 0;
}

void addFuseCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand(
      "fuse",
      "Search a model's fusion decisions on this CPU: each configuration compiled (kernels cached) and timed end to "
      "end; the best plan, if confirmed faster than the default, for kiln compile --fusion-plan. --collect writes a "
      "Gibbs-sampling dataset of the model; --train fits the advantage model that guides the search; --score measures "
      "how well it ranks a dataset's edges");
  auto o = std::make_shared<FuseOptions>();
  addModelOptions(*cmd, o->model, true);
  cmd->get_option("model")->required(false);
  cmd->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  cmd->add_option("--target", o->target, "Where configurations are measured: cpu")->default_val("cpu");
  cmd->add_option("--strategy", o->search.strategy,
                  "random (uniform edge), guided (an edge among the top --alpha by predicted |advantage|) or ranked "
                  "(classes of alike edges moved at once, in order of predicted gain, then mutations screened by "
                  "it); see docs/fusion-search.md")
      ->default_val("random")
      ->check(CLI::IsMember(fuse::searchStrategies()));
  cmd->add_option("--advantage-model", o->advantageModel,
                  "The advantage model guided and ranked search use (default: the one kiln ships for the target)");
  cmd->add_option("--alpha", o->search.alpha, "guided: the share of edges, by predicted |advantage|, it draws from")
      ->default_val(0.1)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--trials", o->search.trials, "Configurations to evaluate after the start")->default_val(50)->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-seconds", o->search.maxSeconds, "Stop the search (or --collect) after this long (0: no limit)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", o->search.seed, "Seed of the search and the random inputs")->default_val(0);
  cmd->add_option("--radius", o->search.radius, "Edges within this many hops of the chosen one are mutated together")
      ->default_val(1)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--from", o->from,
                  "Start from the default heuristic's decisions, a random configuration, or a saved plan (a -o file): "
                  "default, random or PLAN")
      ->default_val("default")
      ->check(CLI::IsMember({"default", "random"}) | CLI::ExistingFile);
  cmd->add_option("--accept-pairs", o->search.acceptPairs,
                  "Paired runs against the best of which 4 in 5 must find a candidate faster to keep it (0: its median alone)")
      ->default_val(5)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--confirm-pairs", o->confirmPairs, "Paired runs (best, default) that must confirm the best plan")
      ->default_val(30)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--tolerance", o->evaluation.tolerance,
                  "Largest relative error of a configuration's outputs against the interpreter before it is rejected")
      ->default_val(1e-3)
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--confirm-kept", o->confirmKept,
                "Confirm every configuration the search kept against the default, not only the best, and record each "
                "ratio in --json (for studies of how fast a strategy really improves)");
  cmd->add_option("-o,--output", o->output,
                  "Search: write the kept plan (the default's when nothing was confirmed faster); --train: the model");
  cmd->add_option("--db", o->database,
                  "Append every measured partition to FILE and replay the ones it holds for this model (search and "
                  "--collect); one file serves many models");
  cmd->add_option("--json", o->jsonFile,
                  "Write the search's record (kiln-fuse/1: every trial) to FILE; with --score, the scores "
                  "(kiln-advantage-score/1)");
  cmd->add_option("--collect", o->collect, "Write a Gibbs-sampling dataset of the model to FILE instead of searching");
  cmd->add_option("--sweeps", o->gibbs.sweeps, "--collect: sweeps over the edges")->default_val(1)->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", o->gibbs.temperature,
                  "--collect: relative temperature (0.05: a 5% slower decision is e times less likely)")
      ->default_val(0.05)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--train", o->train, "Train the advantage model on these datasets (from --collect) and write it to -o");
  cmd->add_option("--score", o->score,
                  "Score the advantage model (--advantage-model, or the shipped one) on these datasets of graphs it "
                  "was not trained on: rank correlation, recall of the top 10% of decisions, their sign; --json "
                  "writes them");
  cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmd->callback([=, &exitCode] {
    o->model.target = o->target;
    if (!o->train.empty()) exitCode = trainMode(*o);
    else if (!o->score.empty()) exitCode = scoreMode(*o);
    else if (o->model.path.empty())
      exitCode = reportError(
          Error(ErrorCode::InvalidArgument, "kiln fuse needs a model (or --train DATASET... or --score DATASET...)"));
    else if (!o->collect.empty()) exitCode = collectMode(*o);
    else exitCode = searchMode(*o);
  });
}

}  // namespace kiln::cli
