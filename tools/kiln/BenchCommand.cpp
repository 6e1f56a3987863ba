//===- tools/kiln/BenchCommand.cpp - `kiln bench` ---------------------------===//
//
// Benchmarks a model on a backend: import (timed), preparation by the backend
// (passes and code generation, timed per phase), then the measurement loop of
// kiln/bench/BenchRunner.h (defaults: 100 warm-up and 1000 timed runs, as in
// the pass-selection research). Prints a table, or the kiln-bench/1 JSON
// record with --format json; --json FILE appends the record as one line.
// --profile N then times every kernel on the device over N more runs and
// prints where the time goes (kiln/bench/KernelProfile.h: the slowest 25;
// every kernel, on stderr, with --format json, so stdout stays one record).
// --versus-untuned (with --tuning-db) prepares the model a second time without
// the database, --versus-pipeline P a second time with pipeline P, and the two
// copies alternate run by run (kiln/bench/BenchRunner.h runPairedBenchmark):
// on a machine whose speed drifts by more than tuning or a pass gains, the
// paired ratio still says which is faster. A compiled .kiln artifact is
// measured as it was compiled, through the embedding API (kiln.h), at the
// shapes of its --input files (any shape in its ranges) or its opt dims;
// --versus-artifact B alternates its runs with B's on the same inputs (an
// artifact compiled for shape ranges against one for a single shape).
// --trace FILE then writes --trace-runs more runs, every step timed, as a
// Chrome trace (kiln.h: RunTrace, chromeTraceJson).
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "Commands.h"
#include "kiln/passes/OptLevels.h"
#include "ModelInputs.h"
#include "ModelLoader.h"
#include "kiln/bench/BenchRunner.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::cli {
namespace {

struct BenchCommandOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::string backend = "interpreter";
  bench::BenchOptions bench;
  int threads = 0;
  uint64_t seed = 0;
  std::string format = "table";
  std::string jsonFile;
  bool quiet = false;
  int profileRuns = 0;
  std::string traceFile;
  int traceRuns = 3;
  std::string tuningDb;
  bool versusUntuned = false;
  std::string versusPipeline;
  std::string versusArtifact;
  bool baselineFirst = false;
};

/// The baseline of a paired measurement: what it is called and how its copy is loaded and prepared.
struct Baseline {
  std::string name;
  ModelOptions model;
  std::string tuningDb;
};

Expected<std::optional<Baseline>> pairedBaseline(const BenchCommandOptions& o) {
  if (o.versusUntuned && !o.versusPipeline.empty())
    return Error(ErrorCode::InvalidArgument, "give --versus-untuned or --versus-pipeline, not both (one baseline per measurement)");
  if (o.versusUntuned && o.tuningDb.empty())
    return Error(ErrorCode::InvalidArgument, "--versus-untuned compares against --tuning-db: give the database");
  if (o.versusUntuned) return std::optional<Baseline>(Baseline{"untuned", o.model, ""});
  if (o.versusPipeline.empty() && o.baselineFirst)
    return Error(ErrorCode::InvalidArgument, "--baseline-first orders the copies of --versus-untuned or --versus-pipeline: give one");
  if (o.versusPipeline.empty()) return std::optional<Baseline>();
  Baseline b{o.versusPipeline, o.model, o.tuningDb};  // the same database: the pipelines differ, nothing else
  b.model.pipeline = o.versusPipeline;
  b.model.optLevel = -1;
  return std::optional<Baseline>(std::move(b));
}

/// Prints the record (table or JSON) and appends it to --json's file.
int writeRecord(const BenchCommandOptions& o, const bench::BenchRecord& record) {
  std::string line = bench::toJsonLine(record);
  if (o.format == "json") std::cout << line << "\n";
  else bench::printTable(std::cout, record);
  if (!o.jsonFile.empty()) {
    std::ofstream out(o.jsonFile, std::ios::app);
    out << line << "\n";
    if (!out) return reportError(Error(ErrorCode::IoError, "cannot append to '" + o.jsonFile + "'"));
  }
  return 0;
}

/// --trace: `o.traceRuns` runs with each step timed, as a Chrome trace in `o.traceFile`.
int writeTrace(const BenchCommandOptions& o, bench::Backend& backend, const std::vector<RuntimeValue>& inputs,
               const std::string& process, std::ostream* progress) {
  std::vector<RunTrace> runs;
  for (int i = 0; i < o.traceRuns; ++i) {
    auto trace = backend.traceRun(inputs);
    if (!trace) return reportError(trace.error());
    runs.push_back(std::move(*trace));
  }
  if (Status s = writeFile(o.traceFile, chromeTraceJson(runs, process)); !s.isOk()) return reportError(s.error());
  if (progress)
    *progress << "kiln bench: " << o.traceRuns << " traced runs in " << o.traceFile
              << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

/// A compiled artifact as a bench backend: runs go through the embedding API.
class ArtifactBackend final : public bench::Backend {
 public:
  ArtifactBackend(std::unique_ptr<Model> model, int threads) : model_(std::move(model)), threads_(threads) {}
  std::string name() const override { return "artifact-" + model_->compiledFor(); }
  int threads() const override { return threads_ > 0 ? threads_ : int(std::thread::hardware_concurrency()); }
  Status prepare(std::unique_ptr<ir::Module>, bench::CompilePhases&) override { return Status::ok(); }
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs) override {
    KILN_ASSIGN(std::vector<Tensor> tensors, bench::tensorInputs(inputs, name()));
    KILN_ASSIGN(std::vector<Tensor> outputs, model_->run(tensors));
    return bench::tensorValues(std::move(outputs));
  }
  Expected<RunTrace> traceRun(const std::vector<RuntimeValue>& inputs) override {
    KILN_ASSIGN(std::vector<Tensor> tensors, bench::tensorInputs(inputs, name()));
    RunTrace trace;
    KILN_TRY(model_->run(tensors, trace).status());
    return trace;
  }

 private:
  std::unique_ptr<Model> model_;
  int threads_;
};

/// `kiln bench model.kiln`: the artifact as it was compiled (no import, passes or code generation).
int benchArtifact(const BenchCommandOptions& o) {
  if (o.model.optLevel >= 0 || !o.model.pipeline.empty() || !o.tuningDb.empty() || o.versusUntuned ||
      !o.versusPipeline.empty() || o.profileRuns > 0 || o.model.precision != "f32" || !o.model.libraryTactics.empty())
    return reportError(Error(ErrorCode::InvalidArgument,
                             "an artifact is measured as it was compiled: -O, --pipeline, --precision, --library-tactics, "
                             "--tuning-db, --versus-untuned, --versus-pipeline and --profile apply to models (.onnx, .kir)"));
  if (o.threads > 0) Model::setThreads(o.threads);
  // The baseline artifact first when asked (which loads first can shift the two a little).
  std::unique_ptr<Model> baseline;
  auto loadBaseline = [&]() -> Status {
    if (o.versusArtifact.empty()) return Status::ok();
    KILN_ASSIGN(baseline, Model::load(o.versusArtifact));
    return Status::ok();
  };
  if (o.baselineFirst)
    if (Status s = loadBaseline(); !s.isOk()) return reportError(s.error());
  Stopwatch timer;
  auto model = Model::load(o.model.path);
  if (!model) return reportError(model.error());
  if (!o.baselineFirst)
    if (Status s = loadBaseline(); !s.isOk()) return reportError(s.error());
  bench::BenchRecord record;
  record.compileMs.importMs = timer.elapsedMs();  // the artifact's load
  auto tensors = artifactInputs((*model)->inputs(), o.inputs, o.seed);
  if (!tensors) return reportError(tensors.error());
  record.runtimeVersion = KILN_VERSION;
  record.modelPath = o.model.path;
  record.model = std::filesystem::path(o.model.path).filename().string();
  record.seed = o.seed;
  record.options = "artifact";
  for (size_t i = 0; i < tensors->size(); ++i) record.inputShapes.emplace_back((*model)->inputs()[i].name, (*tensors)[i].dims());
  ArtifactBackend backend(std::move(*model), o.threads);
  std::ostream* progress = o.quiet ? nullptr : &std::cerr;
  if (progress)
    *progress << "kiln bench: " << o.bench.warmup << " warm-up and " << o.bench.runs << " timed runs"
              << (baseline ? " of each, alternating with " + o.versusArtifact : "") << "\n" << std::flush;
  const std::vector<RuntimeValue> inputs = bench::tensorValues(std::move(*tensors));
  Status measured = Status::ok();
  if (baseline) {
    ArtifactBackend other(std::move(baseline), o.threads);
    measured = bench::runPairedBenchmark(backend, other, o.versusArtifact, inputs, o.bench, record, progress);
  } else {
    measured = bench::runBenchmark(backend, inputs, o.bench, record, progress);
  }
  if (!measured.isOk()) return reportError(measured.error());
  if (int status = writeRecord(o, record)) return status;
  return o.traceFile.empty() ? 0 : writeTrace(o, backend, inputs, record.model + " (" + backend.name() + ")", progress);
}

int benchModel(const BenchCommandOptions& o) {
  if (o.model.path.ends_with(".kiln")) return benchArtifact(o);
  if (!o.versusArtifact.empty())
    return reportError(Error(ErrorCode::InvalidArgument, "--versus-artifact compares two artifacts: measure a .kiln with it"));
  std::ostream* progress = o.quiet ? nullptr : &std::cerr;
  auto baseline = pairedBaseline(o);
  if (!baseline) return reportError(baseline.error());
  // The baseline is the model imported a second time. Which import comes first shifts the two
  // by up to 2.5% on a shared VM (where each lands in memory); --baseline-first swaps them.
  std::optional<Expected<ModelWithInputs>> baselineModel;
  auto loadBaseline = [&] { baselineModel = loadModelWithInputs((*baseline)->model, o.inputs, o.seed); };
  if (*baseline && o.baselineFirst) loadBaseline();
  auto model = loadModelWithInputs(o.model, o.inputs, o.seed);
  if (!model) return reportError(model.error());
  if (*baseline && !o.baselineFirst) loadBaseline();
  if (baselineModel && !*baselineModel) return reportError(baselineModel->error());
  if (Status s = checkPrecisionTarget(o.model, o.backend == "cuda"); !s.isOk()) return reportError(s.error());
  auto backendOptions = [&](const std::string& tuningDb) {
    return bench::BackendOptions{.threads = o.threads, .seed = o.seed, .allowTf32 = o.model.precision == "tf32",
                                 .libraryTactics = effectiveLibraryTactics(o.model, o.backend == "cuda"), .tuningDb = tuningDb};
  };
  auto backend = bench::createBackend(o.backend, backendOptions(o.tuningDb));
  if (!backend) return reportError(backend.error());
  if (!o.tuningDb.empty() && o.backend != "cpu" && o.backend != "cuda")
    return reportError(Error(ErrorCode::InvalidArgument,
                             "--tuning-db applies to the cpu and cuda backends only (kiln tune --target cpu|cuda)"));
  if (o.profileRuns > 0 && !(*backend)->usesGpu()) return reportError(bench::Backend::noKernelsToProfile(o.backend));

  bench::BenchRecord record;
  record.runtimeVersion = KILN_VERSION;
  record.modelPath = o.model.path;
  record.model = std::filesystem::path(o.model.path).filename().string();
  record.seed = o.seed;
  record.options = o.model.pipeline.empty() ? "-O" + std::to_string(o.model.optLevel < 0 ? passes::kDefaultOptLevel : o.model.optLevel) : "--pipeline " + o.model.pipeline;
  if (o.model.pipeline == "arch") record.options += " (" + model->pipeline + ")";
  if (o.model.precision != "f32") record.options += " --precision " + o.model.precision;
  const std::string tactics = effectiveLibraryTactics(o.model, o.backend == "cuda");
  if (tactics != "off") record.options += " --library-tactics " + tactics;
  const ir::Graph& g = model->module->graph();
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (model->inputs[i].isTensor()) record.inputShapes.emplace_back(g.inputs()[i]->name(), model->inputs[i].tensor().dims());
  record.compileMs.importMs = model->importMs;
  record.compileMs.passesMs = model->passesMs;
  if (progress) *progress << "kiln bench: preparing " << record.model << " for " << o.backend << "\n";
  Status prepared = (*backend)->prepare(std::move(model->module), record.compileMs);
  if (!prepared.isOk()) return reportError(prepared.error());
  // The baseline's copy, prepared after the timed preparation.
  std::unique_ptr<bench::Backend> other;
  if (*baseline) {
    auto b = bench::createBackend(o.backend, backendOptions((*baseline)->tuningDb));
    if (!b) return reportError(b.error());
    if (progress)
      *progress << "kiln bench: preparing " << o.model.path << " as the baseline '" << (*baseline)->name
                << "' (pipeline " << (*baselineModel)->pipeline << "), to alternate with it\n";
    bench::CompilePhases ignored;
    if (Status s = (*b)->prepare(std::move((*baselineModel)->module), ignored); !s.isOk()) return reportError(s.error());
    other = std::move(*b);
  }
  record.launch = (*backend)->launchSummary();
  if (!o.tuningDb.empty()) {
    record.options += " --tuning-db " + o.tuningDb;
    if (progress) *progress << "kiln bench: " << (*backend)->tuningSummary() << "\n";
  }
  if (progress)
    *progress << "kiln bench: " << o.bench.warmup << " warm-up and " << o.bench.runs << " timed runs"
              << (other ? " of each, alternating with the baseline '" + (*baseline)->name + "'" : "") << "\n"
              << std::flush;
  Status measured = other ? bench::runPairedBenchmark(**backend, *other, (*baseline)->name, model->inputs, o.bench, record, progress)
                          : bench::runBenchmark(**backend, model->inputs, o.bench, record, progress);
  if (!measured.isOk()) return reportError(measured.error());

  if (int status = writeRecord(o, record)) return status;
  if (o.profileRuns > 0) {
    if (progress) *progress << "kiln bench: profiling every kernel over " << o.profileRuns << " runs\n" << std::flush;
    auto profile = (*backend)->profileKernels(model->inputs, o.profileRuns);
    if (!profile) return reportError(profile.error());
    if (o.format == "json")  // for a script to keep: every kernel
      bench::printKernelProfile(std::cerr, *profile, o.profileRuns, profile->size());
    else
      bench::printKernelProfile(std::cout, *profile, o.profileRuns);
  }
  if (!o.traceFile.empty()) return writeTrace(o, **backend, model->inputs, record.model + " (" + o.backend + ")", progress);
  return 0;
}

}  // namespace

void addBenchCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency, throughput, compile time and memory on a backend");
  auto o = std::make_shared<BenchCommandOptions>();
  addModelOptions(*cmd, o->model, true);
  addBackendOption(*cmd, o->backend);
  cmd->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  cmd->add_option("--warmup", o->bench.warmup, "Untimed runs before measuring")->default_val(100)->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", o->bench.runs, "Timed runs")->default_val(1000)->check(CLI::PositiveNumber);
  cmd->add_option("--max-seconds", o->bench.maxSeconds, "Stop the timed runs after this long (0: run them all)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sigmas", o->bench.sigmas, "Drop timings further than this many standard deviations from the mean")
      ->default_val(3);
  cmd->add_option("--batch", o->bench.batch, "Inferences per run, for throughput (the model's batch size)")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads, "Threads for the backend (0: its default)")->default_val(0);
  cmd->add_option("--seed", o->seed, "Seed for random inputs and random ops")->default_val(0);
  cmd->add_option("--format", o->format, "Output on stdout: table or json (the kiln-bench/1 record)")
      ->default_val("table")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--json", o->jsonFile, "Append the record to this .jsonl file");
  cmd->add_option("--tuning-db", o->tuningDb, "cpu and cuda backends: use the schedules this tuning database holds for this CPU or GPU (kiln tune)");
  cmd->add_flag("--versus-untuned", o->versusUntuned,
                "With --tuning-db: also prepare the model without it and alternate the runs one by one (untuned, tuned, "
                "untuned, ...), so the machine's drift hits both alike; prints both latencies, the p50 ratio, the "
                "median ratio of each tuned run to the untuned runs beside it, and in how many pairs the tuned run "
                "was faster");
  cmd->add_option(
      "--versus-pipeline", o->versusPipeline,
      "Also prepare the model with this pipeline (any --pipeline form: O3, arch, pass lists) and alternate the runs "
      "one by one with it, as --versus-untuned does; e.g. --pipeline arch --versus-pipeline O3");
  cmd->add_option("--versus-artifact", o->versusArtifact,
                  "With a .kiln artifact: also load this artifact and alternate the runs one by one with it on the same "
                  "inputs (e.g. an artifact compiled for shape ranges against one compiled for the inputs' shape)");
  cmd->add_flag("--baseline-first,--untuned-first", o->baselineFirst,
                "With --versus-untuned or --versus-pipeline: import the baseline's copy first (which comes first "
                "shifts the two by up to 2.5% on a shared VM; alternate it over several processes)");
  cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmd->add_option("--profile", o->profileRuns,
                  "After measuring, time every kernel on the device over this many runs and print the slowest "
                  "(cuda backend; every kernel, on stderr, with --format json)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--trace", o->traceFile,
                  "After measuring, write --trace-runs runs with each kernel launch, host step and copy timed as a "
                  "Chrome trace (JSON; opens in Perfetto and chrome://tracing; cpu backend and CPU artifacts)");
  cmd->add_option("--trace-runs", o->traceRuns, "Runs in the --trace file")->default_val(3)->check(CLI::PositiveNumber);
  cmd->callback([=, &exitCode] {
    o->model.target = o->backend;
    exitCode = benchModel(*o);
  });
}

}  // namespace kiln::cli
