//===- tools/kiln/PassSelectionCommands.cpp - `kiln passes space|compare` --===//
//
// `kiln passes space MODEL` prints the model's pruned pass space: the passes
// kept in ordering-rule order, every dropped pass with the reason, and the
// number of pass orderings before and after pruning (--json: kiln-space/1).
// `kiln passes compare MODEL --strategies O3,arch,random:8` runs the pass
// selection study of kiln/bench/PassStudy.h on a backend (default cpu),
// prints the comparison table, writes OUT/<model>.json (kiln-pass-study/1)
// and OUT/<model>.svg (the chart), and appends a kiln-experiment/1 record
// per pipeline to the experiment database (default OUT/experiments.jsonl),
// which the `learned` strategy reads.
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelInputs.h"
#include "ModelLoader.h"
#include "kiln/bench/PassStudy.h"
#include "kiln/select/OrderingRules.h"
#include "kiln/support/File.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

struct SpaceOptions {
  ModelOptions model;
  std::string backend = "cpu";
  bool json = false;
};

int printSpace(const SpaceOptions& o) {
  auto module = loadModel(o.model);
  if (!module) return reportError(module.error());
  const select::ArchitectureFeatures f = select::computeFeatures((*module)->graph());
  const std::vector<std::string> classes = select::classesOf(select::classify(f));
  const select::SearchSpace space =
      select::pruneSearchSpace((*module)->graph(), classes, {bench::backendExclusions(o.backend)});
  if (o.json) {
    nlohmann::ordered_json kept = nlohmann::ordered_json::array(), dropped = nlohmann::ordered_json::array();
    for (const passes::PassInfo* p : space.passes) kept.push_back(p->name);
    for (const select::DroppedPass& d : space.dropped) dropped.push_back({{"pass", d.pass->name}, {"reason", d.reason}});
    nlohmann::ordered_json j{{"schema", "kiln-space/1"},
                             {"model", o.model.path},
                             {"backend", o.backend},
                             {"classes", classes},
                             {"catalogue", space.catalogueSize},
                             {"passes", kept},
                             {"dropped", dropped},
                             {"sequences_before", double(space.sequencesBefore())},
                             {"sequences_after", double(space.sequencesAfter())},
                             {"probe_ms", space.probeMs}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const std::string joined = joinStrings(classes);
  std::cout << o.model.path << ": classes " << (joined.empty() ? "none (generic passes only)" : joined) << "; "
            << space.passes.size() << " of " << space.catalogueSize << " passes kept for the " << o.backend
            << " backend\n"
            << std::setprecision(4) << "pass orderings (distinct passes, any length): " << space.sequencesBefore()
            << " before pruning, " << space.sequencesAfter() << " after\n"
            << "kept, in ordering-rule order (rank):\n";
  for (const passes::PassInfo* p : space.passes)
    std::cout << "  " << std::left << std::setw(28) << p->name << std::right << std::setw(4)
              << select::orderingRankAmong(p->name, space.passes) << "\n";
  std::cout << "dropped:\n";
  for (const select::DroppedPass& d : space.dropped)
    std::cout << "  " << std::left << std::setw(28) << d.pass->name << d.reason << "\n";
  return 0;
}

struct CompareOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::string strategies = "O3,arch,random:8";
  std::string backend = "cpu";
  std::string outDir = "kiln-compare";
  std::string database;
  bool noDatabase = false, quiet = false;
  int threads = 0;
  bench::StudyOptions study;
};

int compare(CompareOptions& o) {
  auto specs = select::parseStrategies(o.strategies);
  if (!specs) return reportError(specs.error());
  o.model.optLevel = 0;  // the strategies start from the imported graph
  auto model = loadModelWithInputs(o.model, o.inputs, o.study.seed);
  if (!model) return reportError(model.error());
  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  if (ec) return reportError(Error(ErrorCode::IoError, "cannot create '" + o.outDir + "': " + ec.message()));
  std::optional<select::ExperimentDatabase> db;
  if (!o.noDatabase) {
    auto opened = select::ExperimentDatabase::open(o.database.empty() ? o.outDir + "/experiments.jsonl" : o.database);
    if (!opened) return reportError(opened.error());
    db = std::move(*opened);
    for (const std::string& p : db->problems()) std::cerr << "kiln passes compare: warning: " << p << "\n";
  }
  const std::string stem = std::filesystem::path(o.model.path).stem().string();
  o.study.backend = o.backend;
  o.study.backendOptions.threads = o.threads;
  o.study.backendOptions.seed = o.study.seed;
  o.study.modelName = std::filesystem::path(o.model.path).filename().string();
  o.study.modelPath = o.model.path;
  o.study.importMs = model->importMs;
  o.study.database = db ? &*db : nullptr;
  o.study.progress = o.quiet ? nullptr : &std::cerr;
  auto study = bench::runPassStudy(*model->module, model->inputs, *specs, o.study);
  if (!study) return reportError(study.error());
  bench::printStudyTable(std::cout, *study);
  const std::string json = o.outDir + "/" + sanitizeFileName(stem) + ".json";
  const std::string svg = o.outDir + "/" + sanitizeFileName(stem) + ".svg";
  if (Status s = writeFile(json, bench::studyToJson(*study) + "\n"); !s.isOk()) return reportError(s.error());
  if (Status s = writeFile(svg, bench::studyChartSvg(*study)); !s.isOk()) return reportError(s.error());
  std::cout << "wrote " << json << " and " << svg;
  if (db) std::cout << "; " << study->entries.size() << " records appended to " << db->path();
  std::cout << "\n";
  for (const bench::StudyEntry& e : study->entries)
    if (!e.ok()) return 1;  // the table says which and why
  return 0;
}

}  // namespace

void addPassSelectionCommands(CLI::App& passes, int& exitCode) {
  auto* space = passes.add_subcommand(
      "space", "Print a model's pruned pass space: kept passes in ordering-rule order, dropped ones with the reason, "
               "and how many pass orderings pruning removed");
  auto s = std::make_shared<SpaceOptions>();
  addModelOptions(*space, s->model, false);
  addBackendOption(*space, s->backend, "cpu");
  space->add_flag("--json", s->json, "Print a kiln-space/1 JSON record");
  space->callback([s, &exitCode] { exitCode = printSpace(*s); });

  auto* cmp = passes.add_subcommand(
      "compare", "Compare pass selection strategies on a model: compile and measure every pipeline they propose, print "
                 "a table, write JSON and an SVG chart, append each pipeline to the experiment database");
  auto o = std::make_shared<CompareOptions>();
  addModelOptions(*cmp, o->model, false);
  addBackendOption(*cmp, o->backend, "cpu");
  cmp->add_option("--strategies", o->strategies,
                  "Comma-separated: O0..O3, arch, random:N, exhaustive[:K], evolve[:P[xG]], learned[:K]")
      ->default_val("O3,arch,random:8");
  cmp->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  cmp->add_option("--seed", o->study.seed, "Seed of the strategies and the random inputs")->default_val(0);
  cmp->add_option("--threads", o->threads, "Threads for the backend (0: its default)")->default_val(0);
  cmp->add_option("--warmup", o->study.bench.warmup, "Untimed runs before measuring each distinct IR")
      ->default_val(10)
      ->check(CLI::NonNegativeNumber);
  cmp->add_option("--runs", o->study.bench.runs, "Timed runs of each distinct IR")->default_val(100)->check(CLI::PositiveNumber);
  cmp->add_option("--max-seconds", o->study.bench.maxSeconds, "Stop one IR's timed runs after this long (0: no limit)")
      ->default_val(10)
      ->check(CLI::NonNegativeNumber);
  cmp->add_option("--rounds", o->study.rounds,
                  "Measurement rounds: after the strategies, measure every distinct IR again rounds-1 times in turn "
                  "(latency: the median of those)")
      ->default_val(4)
      ->check(CLI::Range(1, 20));
  cmp->add_option("--compile-repeats", o->study.compileRepeats, "Runs of each pass pipeline and of code generation for each distinct IR (median times)")
      ->default_val(3)
      ->check(CLI::Range(1, 100));
  cmp->add_option("--tolerance", o->study.tolerance,
                  "Largest relative difference of an output from the reference interpreter (unoptimised graph) accepted")
      ->default_val(1e-3)
      ->check(CLI::PositiveNumber);
  cmp->add_option("--out", o->outDir, "Directory for <model>.json and <model>.svg")->default_val("kiln-compare");
  cmp->add_option("--db", o->database, "Experiment database (.jsonl) to append to and learn from (default OUT/experiments.jsonl)");
  cmp->add_flag("--no-db", o->noDatabase, "Do not read or append an experiment database");
  cmp->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmp->callback([o, &exitCode] { exitCode = compare(*o); });
}

}  // namespace kiln::cli
