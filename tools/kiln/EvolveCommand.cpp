//===- tools/kiln/EvolveCommand.cpp - `kiln evolve` ------------------------===//
//
// Registers `kiln evolve`: GEVO-ML's search over edits to a model's graph
// (kiln/evolve), with a live progress line, writing the Pareto front of
// latency against error to --out (front.md, front.json, front.svg, and
// each member's patch, ONNX model and CPU artifact). Members faster than
// the original are confirmed by paired runs against it. `--apply PATCH`
// re-applies a saved patch to the model and writes the variant (-o), with
// what each edit did.
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/evolve/Evolution.h"
#include "kiln/evolve/FrontReport.h"
#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/ir/CloneModule.h"
#include "kiln/ir/Printer.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/support/File.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

struct EvolveCliOptions {
  ModelOptions model;
  std::string apply, output;  ///< --apply mode
  std::string data, out, metric = "top1", target = "cpu";
  double testShare = 0.2;
  int confirmPairs = 20;
  evolve::EvolveOptions search;
  bool quiet = false;
};

/// The error bounds the progress line reports the best latency within: the
/// original's error plus 0, 1, 2 and 5 points (a share) or percent (mae).
std::vector<double> errorBounds(evolve::Metric metric, double originalError) {
  std::vector<double> bounds;
  for (double step : {0.0, 0.01, 0.02, 0.05})
    bounds.push_back(metric == evolve::Metric::Mae ? originalError * (1 + step) : originalError + step);
  return bounds;
}

/// `front` is the generation's Pareto front (the caller records its size too).
void showProgress(const evolve::GenerationReport& g, const std::vector<evolve::Individual>& front,
                  const EvolveCliOptions& o, const evolve::VariantScore& original, evolve::Metric metric,
                  bool terminal) {
  std::ostringstream os;
  os << std::fixed << "kiln evolve: generation " << g.generation << "/" << o.search.generations << "  front "
     << front.size() << "  best";
  const char* labels[] = {"+0", "+1", "+2", "+5"};
  const std::vector<double> bounds = errorBounds(metric, original.trainError);
  for (size_t b = 0; b < bounds.size(); ++b) {
    double best = 0;
    for (const evolve::Individual& i : front)
      if (i.score.trainError <= bounds[b] + 1e-12 && (best == 0 || i.score.ms < best)) best = i.score.ms;
    os << " " << labels[b] << (metric == evolve::Metric::Mae ? "%" : "pt") << ":";
    if (best > 0) os << std::setprecision(3) << best / original.ms << "x";
    else os << "-";
  }
  os << "  evaluated " << g.evaluations << " (" << g.invalid << " invalid)";
  if (g.generation > 0)
    os << "  eta " << clockText(g.seconds / g.generation * (o.search.generations - g.generation));
  if (terminal) std::cerr << "\r" << os.str() << "\033[K" << std::flush;
  else std::cerr << os.str() << "\n";
}

Status writeVariant(const ir::Module& variant, const std::string& path) {
  if (path.size() > 4 && path.substr(path.size() - 4) == ".kir") return writeFile(path, ir::printModule(variant));
  return onnx::exportOnnxFile(variant, path);
}

/// The variant optimized as the search measured it and compiled for this CPU.
Status writeArtifact(const ir::Module& variant, const ModelOptions& options, const std::string& path) {
  std::unique_ptr<ir::Module> m = ir::cloneModule(variant);
  KILN_TRY(applyPipeline(*m, options).status());
  codegen::CompileOptions co;
  co.releaseConsumedWeights = true;
  co.stringInputs = m->stringInputs, co.stringOutputs = m->stringOutputs;
  KILN_ASSIGN(codegen::LoweredModel lowered, codegen::compileCpuArtifact(m->graph(), co));
  return runtime::saveArtifact(*lowered.executable, path);
}

nlohmann::json scoreJson(const evolve::VariantScore& s) {
  return {{"ms", s.ms}, {"train_error", s.trainError}, {"test_error", s.testError}};
}

int applyMode(const EvolveCliOptions& o) {
  if (o.output.empty()) return reportError(Error(ErrorCode::InvalidArgument, "--apply needs -o VARIANT.onnx (or .kir)"));
  auto patch = evolve::readPatch(o.apply);
  if (!patch) return reportError(patch.error());
  auto module = loadModel(o.model);
  if (!module) return reportError(module.error());
  evolve::PatchReport report;
  auto variant = evolve::patchedModule(**module, *patch, &report);
  if (!variant) return reportError(variant.error());
  if (Status s = writeVariant(**variant, o.output); !s.isOk()) return reportError(s.error());
  for (const std::string& line : report.edits) std::cout << "  " << printable(line) << "\n";
  std::cout << "kiln evolve: " << patch->size() << " edits applied (" << report.repairNodes << " repair nodes, "
            << report.removedDead << " dead nodes removed); wrote " << o.output << "\n";
  return 0;
}

/// Writes each front member's files and confirms the faster ones; the members as reported.
Expected<std::vector<evolve::FrontMember>> writeMembers(const EvolveCliOptions& o, const ir::Module& original,
                                                        const evolve::EvolveResult& result,
                                                        evolve::VariantEvaluator& evaluator) {
  std::vector<evolve::FrontMember> members;
  for (size_t k = 0; k < result.front.size(); ++k) {
    evolve::FrontMember m;
    m.individual = &result.front[k];
    KILN_ASSIGN(std::unique_ptr<ir::Module> variant, evolve::patchedModule(original, m.individual->patch, &m.edits));
    const std::string base = "member-" + std::to_string(k);
    const std::filesystem::path dir(o.out);
    KILN_TRY(writeFile((dir / (base + ".patch.json")).string(), evolve::patchToJson(m.individual->patch)));
    KILN_TRY(onnx::exportOnnxFile(*variant, (dir / (base + ".onnx")).string()));
    KILN_TRY(writeArtifact(*variant, o.model, (dir / (base + ".kiln")).string()));
    m.files = base + ".{patch.json,onnx,kiln}";
    if (o.confirmPairs > 0 && m.individual->score.ms < evaluator.original().ms) {
      KILN_ASSIGN(m.pairedRatio, evaluator.pairedRatio(m.individual->patch, o.confirmPairs));
    }
    members.push_back(std::move(m));
  }
  return members;
}

nlohmann::json resultJson(const EvolveCliOptions& o, const evolve::EvolveResult& r, const evolve::VariantScore& original,
                          const std::vector<evolve::FrontMember>& members, const nlohmann::json& history) {
  nlohmann::json front = nlohmann::json::array();
  for (const evolve::FrontMember& m : members) {
    nlohmann::json j = scoreJson(m.individual->score);
    j["paired_ratio"] = m.pairedRatio > 0 ? nlohmann::json(m.pairedRatio) : nlohmann::json();
    j["origin"] = m.individual->origin;
    j["edits"] = nlohmann::json::parse(evolve::patchToJson(m.individual->patch))["edits"];
    j["report"] = m.edits.edits;
    front.push_back(std::move(j));
  }
  return {{"schema", "kiln-evolve-front/1"}, {"model", o.model.path}, {"metric", o.metric},
          {"seed", o.search.seed}, {"population", o.search.population}, {"generations", r.generations},
          {"evaluations", r.evaluations}, {"invalid", r.invalid}, {"crossovers", r.crossovers},
          {"repaired", r.repaired}, {"original", scoreJson(original)}, {"front", front}, {"history", history}};
}

int searchMode(EvolveCliOptions o) {
  if (o.target != "cpu")
    return reportError(Error(ErrorCode::InvalidArgument,
                             "kiln evolve measures on this CPU: --target cpu (the CUDA target's measurement is not built yet)"));
  if (o.data.empty() || o.out.empty())
    return reportError(Error(ErrorCode::InvalidArgument, "kiln evolve needs --data DIR and --out DIR (or --apply PATCH)"));
  if (o.model.pipeline == "arch")
    return reportError(Error(ErrorCode::InvalidArgument, "kiln evolve needs a fixed pipeline: -O or --pipeline PASSES"));
  o.model.target = "cpu";
  if (Status s = checkPrecisionTarget(o.model, false); !s.isOk()) return reportError(s.error());
  auto metric = evolve::parseMetric(o.metric);
  if (!metric) return reportError(metric.error());
  auto module = loadModel(o.model);
  if (!module) return reportError(module.error());
  auto pipeline = selectedPipeline(o.model);
  if (!pipeline) return reportError(pipeline.error());
  auto data = evolve::loadDataSplit(o.data, (*module)->graph(), o.testShare, o.search.seed);
  if (!data) return reportError(data.error());
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return reportError(Error(ErrorCode::IoError, "cannot create --out " + o.out + ": " + ec.message()));
  if (!o.quiet)
    std::cerr << "kiln evolve: " << data->train.size() << " training and " << data->test.size()
              << " test samples; evaluating the original\n";
  auto evaluator = evolve::VariantEvaluator::create(**module, std::move(*data), *metric, *pipeline);
  if (!evaluator) return reportError(evaluator.error());
  const evolve::VariantScore& original = (*evaluator)->original();
  const bool terminal = isatty(STDERR_FILENO);
  nlohmann::json history = nlohmann::json::array();  // per generation: what it cost, how the front grew
  auto result = evolve::evolve(**module, **evaluator, o.search, [&](const evolve::GenerationReport& g) {
    const std::vector<evolve::Individual> front = evolve::paretoFront(*g.population);
    history.push_back({{"generation", g.generation}, {"evaluations", g.evaluations}, {"invalid", g.invalid},
                       {"seconds", g.seconds}, {"front", front.size()}});
    if (!o.quiet) showProgress(g, front, o, original, *metric, terminal);
  });
  if (!o.quiet && terminal) std::cerr << "\n";
  if (!result) return reportError(result.error());
  auto members = writeMembers(o, **module, *result, **evaluator);
  if (!members) return reportError(members.error());
  const std::string title = std::filesystem::path(o.model.path).filename().string() + ": latency against " +
                            o.metric + " error (kiln evolve, seed " + std::to_string(o.search.seed) + ")";
  const std::filesystem::path dir(o.out);
  const std::string md = evolve::frontMarkdown(title, *metric, original, *members);
  for (const auto& [file, text] :
       {std::pair{std::string("front.md"), md},
        {"front.svg", evolve::frontChartSvg(title, *metric, original, result->population, *members)},
        {"front.json", resultJson(o, *result, original, *members, history).dump(1) + "\n"}})
    if (Status s = writeFile((dir / file).string(), text); !s.isOk()) return reportError(s.error());
  std::cout << md << "\nkiln evolve: " << result->generations << " generations, " << result->evaluations
            << " variants evaluated (" << result->invalid << " invalid), " << (*evaluator)->kernelsCompiled()
            << " kernels compiled; wrote " << o.out << "/front.{md,json,svg} and " << members->size()
            << " members\n";
  return 0;
}

}  // namespace

void addEvolveCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand(
      "evolve",
      "Evolve edits to a model's graph (GEVO-ML: delete, copy and rewire ops, NSGA-II over latency and error on "
      "--data) and write the Pareto front to --out; --apply PATCH re-applies a member's patch (see docs/evolve.md)");
  auto o = std::make_shared<EvolveCliOptions>();
  addModelOptions(*cmd, o->model, true);
  cmd->add_option("--apply", o->apply, "Apply this patch (a member's .patch.json) to the model and write -o")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "--apply: the variant to write (.onnx, or .kir for text IR)");
  cmd->add_option("--data", o->data,
                  "A directory with one .npy per model input (a leading sample axis) and optionally labels.npy; or "
                  "train/ and test/ directories laid out so");
  cmd->add_option("--out", o->out, "Where the front is written (created)");
  cmd->add_option("--target", o->target, "Where variants are measured: cpu")->default_val("cpu");
  cmd->add_option("--metric", o->metric, "top1 (labels are classes), mae (labels are values) or agreement (with the "
                                         "original's predicted class; no labels)")
      ->default_val("top1");
  cmd->add_option("--population", o->search.population, "Individuals per generation")->default_val(32)->check(CLI::Range(2, 100000));
  cmd->add_option("--generations", o->search.generations, "Generations after the initial one")->default_val(10)->check(CLI::NonNegativeNumber);
  cmd->add_option("--elites", o->search.elites, "Best individuals kept unchanged into each generation")->default_val(16)->check(CLI::NonNegativeNumber);
  cmd->add_option("--initial-edits", o->search.initialEdits, "Random edits of each initial individual")->default_val(3)->check(CLI::Range(1, 1000));
  cmd->add_option("--crossover-rate", o->search.crossoverRate, "Chance that a child is a crossover of its parents")
      ->default_val(0.8)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--mutation-rate", o->search.mutationRate, "Chance that a child gets one more random edit")
      ->default_val(0.3)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->search.seed, "Seed of the search and of the train/test split")->default_val(0);
  cmd->add_option("--test-share", o->testShare, "Share of the samples held out for testing (without given splits)")
      ->default_val(0.2)
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--max-evaluations", o->search.maxEvaluations, "Stop after this many variants evaluated (0: no limit)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-seconds", o->search.maxSeconds, "Stop after this long (0: no limit)")->default_val(0)->check(CLI::NonNegativeNumber);
  cmd->add_option("--confirm-pairs", o->confirmPairs,
                  "Paired runs against the original that confirm each faster front member (0: none)")
      ->default_val(20)
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmd->callback([o, &exitCode] { exitCode = o->apply.empty() ? searchMode(*o) : applyMode(*o); });
}

}  // namespace kiln::cli
