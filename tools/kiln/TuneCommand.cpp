//===- tools/kiln/TuneCommand.cpp - `kiln tune` ----------------------------===//
//
// Tunes the schedules of a model's kernels on this machine: import and -O
// pipeline as `kiln compile` does, extract the distinct kernels (tasks),
// compute every value of the model once with the reference interpreter (the
// measurer's inputs and expected outputs), then run the tuning loop
// (lib/tune/Tuner) with the chosen strategy and budget, appending every
// measurement to the tuning database. A live status line on a terminal,
// one log line per measurement round otherwise; a per-task table at the end.
// `kiln compile --tuning-db DB` applies the result. Batch mode:
// --export-candidates DIR writes candidates for kiln-measure instead of
// measuring, --import-results FILE brings its records into the database.
// --target cuda tunes the GPU schedules on this machine's GPU (the CUDA
// measurer: NVRTC cubins, CUDA events, optional L2 flush) and measures
// each kernel's library call (cuBLASLt, cuDNN) beside it (--no-library: not);
// --target cuda:sm_NN --export-candidates writes cubins for a GPU elsewhere.
// --replay TABLE looks the results up in a database measured earlier (the
// strategy comparison's oracle) instead of measuring. With shape ranges
// (--min/--opt/--max-shapes, as for kiln compile) the kernels are tuned over
// the dynamic dims, measured at the opt shape.
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelInputs.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/Strings.h"
#include "kiln/support/ThreadPool.h"
#include "kiln/tune/BatchMode.h"
#include "kiln/tune/Tuner.h"

namespace kiln::cli {
namespace {

struct TuneCommandOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::string target = "cpu";
  std::string database;
  std::string jsonFile;
  std::vector<std::string> kernels;  ///< --kernel filters
  std::string exportDir, importFile;  ///< batch mode
  std::string replayTable;            ///< --replay: results looked up, not measured
  std::string start = "auto";         ///< --start: where model-guided strategies begin
  tune::TuneOptions tune;
  tune::MeasureOptions measure;
  int threads = 0;
  bool quiet = false;
};

/// "  (cuBLASLt 0.0123 ms, faster)" for a task whose library call was measured.
std::string libraryNote(const tune::TaskOutcome& t) {
  if (t.library.empty()) return "";
  std::ostringstream os;
  os << std::setprecision(4) << std::fixed << "  (" << t.library << " ";
  if (t.libraryMs > 0) os << t.libraryMs << " ms" << (t.libraryFaster() ? ", faster" : "") << ")";
  else os << "failed: " << t.libraryError << ")";
  return os.str();
}

void printReport(const tune::TuneReport& r) {
  std::cout << std::fixed;
  std::cout << "tuned " << r.tasks.size() << " kernels with " << r.strategy << ": " << r.trials << " trials ("
            << r.invalid << " invalid candidates rejected, " << r.reused << " not measured: same code as a measured one) in " << std::setprecision(1) << r.seconds << " s on " << r.device
            << "\n";
  std::cout << "  default ms   tuned ms  speedup  trials  uses  kernel\n";
  for (const tune::TaskOutcome& t : r.tasks)
    if (!t.skipped.empty()) std::cout << "   (not tuned: " << t.skipped << ")  " << t.description << "\n";
    else std::cout << std::setprecision(4) << std::setw(11) << t.defaultMs << std::setw(11) << t.bestMs << std::setprecision(2)
              << std::setw(8) << t.defaultMs / t.bestMs << "x" << std::setw(8) << t.trials << std::setw(6) << t.groups
              << "  " << t.description << (t.keptDefault ? "  (default kept)" : "")
              << (t.transferRows ? "  (+" + std::to_string(t.transferRows) + " transfer rows)" : "") << libraryNote(t) << "\n";
  std::cout << std::setprecision(3) << "kernel time (sum of uses x time): default " << r.defaultKernelMs << " ms, tuned "
            << r.tunedKernelMs << " ms (" << std::setprecision(2) << r.defaultKernelMs / std::max(r.tunedKernelMs, 1e-12)
            << "x)\n";
  if (r.libraryTasks)
    std::cout << r.libraryTasks << " of " << r.tasks.size() << " kernels measured faster as library calls: "
              << "kiln compile --tuning-db runs them so under --library-tactics auto (the cuda default)\n";
}

std::string reportJson(const tune::TuneReport& r, const std::string& model) {
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
  for (const tune::TaskOutcome& t : r.tasks) {
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    for (const auto& [k, v] : t.bestConfig) config[k] = v;
    tasks.push_back({{"signature", t.signature}, {"description", t.description}, {"template", t.templateName},
                     {"uses", t.groups}, {"flops", t.flops}, {"default_ms", t.defaultMs}, {"best_ms", t.bestMs},
                     {"best_config", config}, {"kept_default", t.keptDefault}, {"trials", t.trials},
                     {"invalid", t.invalid}, {"reused", t.reused}, {"seconds", t.seconds}, {"curve_ms", t.curve}, {"skipped", t.skipped}, {"transfer_rows", t.transferRows},
                     {"library", t.library}, {"library_ms", t.libraryMs}, {"library_faster", t.libraryFaster()},
                     {"library_error", t.libraryError}});
  }
  nlohmann::ordered_json j{{"schema", "kiln-tune-report/1"}, {"model", model},       {"strategy", r.strategy},
                           {"target", r.target},             {"device", r.device},    {"trials", r.trials},
                           {"invalid", r.invalid},           {"reused", r.reused},    {"seconds", r.seconds},  {"default_kernel_ms", r.defaultKernelMs},
                           {"tuned_kernel_ms", r.tunedKernelMs}, {"library_tasks", r.libraryTasks}, {"tasks", tasks}};
  return j.dump(1);
}

/// The measurer of this machine's CPU or GPU, on reference values the
/// interpreter computes; with --export-candidates it writes the candidates
/// instead and returns no measurer.
Expected<std::unique_ptr<tune::Measurer>> createMeasurer(const TuneCommandOptions& o, ModelWithInputs& model,
                                                         const tune::TaskSet& tasks, tune::TuningDatabase& db, bool cuda,
                                                         int sm, std::ostream* log) {
  ir::Graph& graph = model.module->graph();
  std::vector<Tensor> inputs;
  for (const RuntimeValue& v : model.inputs) inputs.push_back(v.isTensor() ? v.tensor() : Tensor());
  if (log) *log << "kiln tune: computing reference values with the interpreter\n";
  Stopwatch refTimer;
  auto reference = codegen::referenceValues(graph, inputs);
  if (!reference) return reference.error();
  if (log) *log << "kiln tune: reference values in " << std::fixed << std::setprecision(1) << refTimer.elapsedMs() / 1000 << " s\n";
  if (!o.exportDir.empty()) {  // batch mode, step 1: candidates for kiln-measure
    tune::ExportOptions e;
    e.dir = o.exportDir;
    e.strategy = o.tune.strategy;
    e.candidates = o.tune.trials;
    e.batch = o.tune.batch;
    e.seed = o.tune.search.seed;
    e.target = cuda ? "cuda" : "cpu";
    e.sm = sm;
    auto exported = tune::exportCandidates(tasks, *reference, db, e);
    if (!exported) return exported.error();
    std::cout << "exported " << exported->candidates << " candidates of " << exported->tasks << " kernels"
              << (exported->libraryCalls ? " and " + std::to_string(exported->libraryCalls) + " library calls" : std::string())
              << " ("
              << exported->tensorFiles << " tensor files, " << std::fixed << std::setprecision(1)
              << double(exported->bytes) / (1 << 20) << " MiB) to " << o.exportDir << "\n";
    if (exported->copies || exported->measured)
      std::cout << "not exported: " << exported->copies << " proposals with the code of an exported candidate (recorded as "
                << "copies of its result), " << exported->measured << " with the code of a configuration the database holds\n";
    std::cout << "measure them with: kiln-measure " << o.exportDir << "; then: kiln tune " << o.model.path
              << " --import-results " << o.exportDir << "/results.jsonl --db " << o.database << "\n";
    return std::unique_ptr<tune::Measurer>();
  }
  return cuda ? tune::createCudaMeasurer(std::move(*reference), o.measure)
              : tune::createCpuMeasurer(std::move(*reference), o.measure);
}

int tuneModel(TuneCommandOptions o) {
  // --target cpu | cuda | cuda:sm_NN (the architecture: required to export cubins for another machine).
  const bool cuda = o.target.rfind("cuda", 0) == 0;
  if (!cuda && o.target != "cpu")
    return reportError(Error(ErrorCode::InvalidArgument, "--target " + o.target + ": expected cpu, cuda or cuda:sm_NN"));
  int sm = 0;
  if (cuda && o.target != "cuda") {
    Expected<std::vector<int>> archs = o.target[4] == ':' ? cudaArchitectures(o.target)
                                                          : Expected<std::vector<int>>(Error(ErrorCode::InvalidArgument, "not a target"));
    if (!archs || archs->size() != 1 || (sm = archs->front()) < 50 || sm > 200)
      return reportError(Error(ErrorCode::InvalidArgument, "--target " + o.target +
                                                               ": expected cpu, cuda or cuda:sm_NN with one architecture (e.g. cuda:sm_90)"));
  }
  if (cuda && !o.exportDir.empty() && !sm)
    return reportError(Error(ErrorCode::InvalidArgument,
                             "kiln tune --export-candidates for CUDA needs the measuring GPU's architecture: --target cuda:sm_NN"));
  if (!o.replayTable.empty() && o.database.empty())
    return reportError(Error(ErrorCode::InvalidArgument,
                             "kiln tune --replay needs --db: a replayed run's records are not measurements of this machine "
                             "and should not go into the model's tuning database"));
  o.tune.search.start = o.start == "incumbent" ? tune::SearchStart::Incumbent
                        : o.start == "random"  ? tune::SearchStart::Random
                                               : tune::SearchStart::Auto;
  if (o.database.empty()) o.database = o.model.path.substr(0, o.model.path.rfind('.')) + ".tune.jsonl";
  std::ostream* log = o.quiet ? nullptr : &std::cerr;
  if (o.threads > 0) ThreadPool::global().setThreads(o.threads);
  auto model = loadModelWithInputs(o.model, o.inputs, o.tune.search.seed);
  if (!model) return reportError(model.error());
  ir::Graph& graph = model->module->graph();
  const ir::DimRanges& ranges = model->module->dimRanges;
  if (!ranges.empty() && !o.exportDir.empty())
    return reportError(Error(ErrorCode::CodegenUnsupported,
                             "kiln tune over shape ranges measures on this machine; --export-candidates takes one shape "
                             "(--shape) (docs/notes/dynamic-shapes.md)"));
  auto tasks = tune::extractTasks(graph, cuda ? codegen::KernelTarget::Gpu : codegen::KernelTarget::Cpu, "", ranges);
  if (!tasks) return reportError(tasks.error());
  if (!o.kernels.empty()) {  // --kernel: only tasks whose description or signature contains one of the strings
    std::vector<tune::TuningTask> kept;
    for (tune::TuningTask& t : tasks->tasks)
      for (const std::string& k : o.kernels)
        if (t.description.find(k) != std::string::npos || t.signature.find(k) != std::string::npos) {
          kept.push_back(std::move(t));
          break;
        }
    if (kept.empty())
      return reportError(Error(ErrorCode::InvalidArgument, "--kernel matches none of the model's " +
                                                               std::to_string(tasks->tasks.size()) + " tunable kernels"));
    tasks->tasks = std::move(kept);
  }
  if (log)
    *log << "kiln tune: " << tasks->tasks.size() << " distinct tunable kernels in " << tasks->groups << " kernel groups ("
         << tasks->untunableGroups << " host steps or single-schedule groups)\n";
  auto db = tune::TuningDatabase::open(o.database);
  if (!db) return reportError(db.error());
  for (const std::string& p : db->problems()) std::cerr << "kiln tune: warning: " << p << "\n";
  if (!o.importFile.empty()) {  // batch mode, step 3: kiln-measure's records into the database
    auto imported = tune::importResults(o.importFile, *tasks, *db);
    if (!imported) return reportError(imported.error());
    for (const std::string& p : imported->problems) std::cerr << "kiln tune: warning: " << p << "\n";
    std::cout << "imported " << imported->imported << " records (" << imported->skipped << " skipped) from " << o.importFile
              << " into " << o.database << "\n";
    return imported->imported ? 0 : 1;
  }
  auto measurer = o.replayTable.empty() ? createMeasurer(o, *model, *tasks, *db, cuda, sm, log)
                                        : tune::createReplayMeasurer(o.replayTable, *tasks, cuda ? "cuda" : "cpu");
  if (!measurer) return reportError(measurer.error());
  if (!*measurer) return 0;  // batch mode: candidates exported instead
  if (sm && (*measurer)->device().find("(sm_" + std::to_string(sm) + ")") == std::string::npos)
    return reportError(Error(ErrorCode::InvalidArgument, "--target " + o.target + " but this machine's GPU is " +
                                                             (*measurer)->device() + " (use --target cuda)"));
  const bool live = log && isatty(STDERR_FILENO);
  if (log) {
    *log << "kiln tune: measuring the default schedules, then " << o.tune.trials << " trials with " << o.tune.strategy
         << " (batches of " << o.tune.batch << "), database " << o.database << "\n";
    o.tune.progress = [&](const tune::TuneProgress& p) {
      std::ostringstream line;
      line << std::fixed << "[task " << p.task + 1 << "/" << p.tasks << "] trials " << p.trials << "/" << p.budget << ", best "
           << std::setprecision(2) << p.bestGflops << " GFLOP/s (" << p.taskSpeedup << "x), elapsed " << clockText(p.elapsedS)
           << ", ETA " << clockText(p.etaS) << "  " << p.description;
      std::string text = line.str();
      if (live) *log << "\r\033[K" << text.substr(0, 150) << std::flush;
      else *log << "kiln tune: " << text << "\n";
    };
  }
  auto report = tune::tuneTasks(*tasks, **measurer, o.tune, &*db);
  if (live) *log << "\n";
  if (!report) return reportError(report.error());
  printReport(*report);
  if (!o.jsonFile.empty())
    if (Status s = writeFile(o.jsonFile, reportJson(*report, o.model.path) + "\n"); !s.isOk()) return reportError(s.error());
  std::cout << "tuning database: " << o.database << " (apply with kiln compile --tuning-db " << o.database << ")\n";
  return 0;
}

}  // namespace

void addTuneCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("tune", "Tune the schedules of a model's kernels on this machine (autotuning)");
  auto o = std::make_shared<TuneCommandOptions>();
  addModelOptions(*cmd, o->model, true);
  addShapeRangeOptions(*cmd, o->model);
  cmd->add_option("--target", o->target,
                  "Target whose kernels are tuned: cpu (this machine's CPU), cuda (its GPU, KILN_CUDA_DEVICE, default 0) "
                  "or cuda:sm_NN (with --export-candidates: cubins for a GPU of that architecture)")
      ->default_val("cpu");
  cmd->add_option("--trials", o->tune.trials, "Valid candidate measurements over all kernels (the budget)")
      ->default_val(64)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--strategy", o->tune.strategy, "Search strategy: " + joinStrings(tune::strategyNames(), ", "))
      ->default_val("sa-as")
      ->check(CLI::IsMember(tune::strategyNames()));
  cmd->add_option("--batch", o->tune.batch, "Candidates per measurement round")->default_val(8)->check(CLI::Range(1, 1024));
  cmd->add_option("--start", o->start,
                  "Where a model-guided strategy begins: incumbent (the default schedule's one-knob neighbours first, "
                  "then each round also tries the model's best neighbours of the fastest so far), random (a random "
                  "first round, as AutoTVM), auto (incumbent for sa-as and rl-as, random for sa and rl)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "incumbent", "random"}));
  cmd->add_option("--tasks", o->tune.maxTasks, "Tune only the N kernels with the most default time (0: all)")->default_val(0);
  cmd->add_option("--kernel", o->kernels,
                  "Tune only kernels whose description (e.g. 'Conv 1x64x56x56 -> 1x64x56x56') or signature contains "
                  "this text (repeatable)");
  cmd->add_option("--seed", o->tune.search.seed, "Seed of the strategies and the random inputs")->default_val(0);
  cmd->add_option("--db", o->database, "Tuning database to append to (default: the model's name with .tune.jsonl)");
  cmd->add_option("--json", o->jsonFile, "Also write the report (per kernel: times, best config, best-so-far curve) to FILE");
  cmd->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  cmd->add_option("--repeats", o->measure.repeats, "Timed samples per candidate (median)")->default_val(5)->check(CLI::Range(1, 1000));
  cmd->add_option("--min-sample-ms", o->measure.minSampleMs, "Each sample repeats the kernel for at least this long")
      ->default_val(1.0);
  cmd->add_option("--tolerance", o->measure.tolerance, "Relative error vs the interpreter above which a candidate is wrong")
      ->default_val(1e-3);
  cmd->add_flag("--flush-l2", o->measure.flushL2,
                "cuda: evict the GPU's L2 cache before every timed launch (cold-cache times; default: warm, back to back)");
  auto* interleaveOption = cmd->add_flag(
      "--interleave", o->measure.interleave,
      "cpu: time each batch in interleaved rounds (one sample of each candidate per round) together with the default "
      "configuration, whose time each record keeps (anchor_ms); the search compares candidates by their time relative "
      "to it, and --replay of such a table divides the machine's drift between batches out the same way");
  cmd->add_option("--threads", o->threads, "Kernel threads (0: one per core)")->default_val(0);
  cmd->add_option("--build-threads", o->measure.buildThreads, "Parallel candidate builds (0: one per core)")->default_val(0);
  auto* exportOption = cmd->add_option("--export-candidates", o->exportDir,
                  "Batch mode: write the next --trials candidates (object code or cubins, arguments, expected outputs) "
                  "to DIR for kiln-measure instead of measuring here");
  auto* importOption = cmd->add_option("--import-results", o->importFile,
                  "Batch mode: append kiln-measure's records (FILE) for this model's kernels to the database")
      ->excludes(exportOption);
  cmd->add_option("--replay", o->replayTable,
                  "Measure nothing: look every candidate's time up in TABLE, a tuning database holding the whole space "
                  "(e.g. from --strategy grid); for comparing strategies on one oracle (bench/tuning.py)")
      ->excludes(exportOption)
      ->excludes(importOption)
      ->excludes(interleaveOption);
  interleaveOption->excludes(exportOption)->excludes(importOption);
  cmd->add_flag("--no-transfer", [o](int64_t) { o->tune.transfer = false; },
                "Do not train the cost model on the database's records of similar kernels (other shapes of the same template)");
  cmd->add_flag("--no-library", [o](int64_t) { o->tune.libraries = false; },
                "cuda: do not measure the library call (cuBLASLt, cuDNN) that could run each kernel instead (by default "
                "it is measured, and kiln compile --tuning-db runs it where it is faster)");
  cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmd->callback([=, &exitCode] {
    o->model.target = o->target.rfind("cuda", 0) == 0 ? "cuda" : o->target;
    exitCode = tuneModel(*o);
  });
}

}  // namespace kiln::cli
