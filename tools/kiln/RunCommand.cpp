//===- tools/kiln/RunCommand.cpp - `kiln run` -------------------------------===//
//
// Runs a model once on a backend (default: the reference interpreter), or a
// compiled .kiln artifact through the embedding API (kiln.h). Inputs
// come from .npy or ONNX TensorProto (.pb) files (dynamic dims are bound from
// them) or are random (seeded: uniform [-1, 1) for floats, [0, 10) for
// integers); see ModelInputs.h. Outputs are
// summarised on stdout and, with --output-dir, written as DIR/<name>.npy with
// characters outside [A-Za-z0-9_.-] replaced by '_'; string outputs are
// printed as their strings and written as unicode arrays.
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>

#include "Commands.h"
#include "ModelLoader.h"
#include "ModelInputs.h"
#include "kiln/bench/Backend.h"
#include "kiln/support/File.h"
#include "kiln/support/Npy.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/StringPool.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> inputs;  ///< name=path
  std::string backend = "interpreter";
  std::string outputDir;
  uint64_t seed = 0;
  int printLimit = 8;
};

void printTensor(const std::string& name, const Tensor& t, int limit) {
  std::vector<double> v = t.toDoubles();
  std::cout << "  " << printable(name) << ": " << t.typeString();
  if (!v.empty()) {
    double lo = v[0], hi = v[0], sum = 0;
    for (double x : v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    std::cout << "  min " << lo << "  max " << hi << "  mean " << sum / double(v.size());
  }
  std::cout << "\n    [";
  for (size_t i = 0; i < v.size() && int(i) < limit; ++i) std::cout << (i ? ", " : "") << std::setprecision(6) << v[i];
  if (int(v.size()) > limit) std::cout << ", ...";
  std::cout << "]\n";
}

/// A string output: its strings, quoted, with control characters escaped.
Status printStrings(const std::string& name, const Tensor& t, int limit) {
  KILN_ASSIGN(std::vector<std::string> strings, tensorStrings(t));
  std::cout << "  " << printable(name) << ": string[" << dimsToString(t.dims()) << "]\n    [";
  for (size_t i = 0; i < strings.size() && int(i) < limit; ++i) std::cout << (i ? ", " : "") << '"' << printable(strings[i]) << '"';
  if (int(strings.size()) > limit) std::cout << ", ...";
  std::cout << "]\n";
  return Status::ok();
}

Status printOutput(const std::string& name, const RuntimeValue& v, bool strings, int limit) {
  if (v.isTensor() && strings) return printStrings(name, v.tensor(), limit);
  if (v.isTensor()) printTensor(name, v.tensor(), limit);
  else std::cout << "  " << printable(name) << ": " << v.describe() << "\n";
  return Status::ok();
}

Status writeOutput(const std::string& dir, const std::string& name, const RuntimeValue& v, bool strings,
                   std::vector<std::string>& written) {
  std::string base = dir + "/" + sanitizeFileName(name);
  if (v.isTensor()) {
    KILN_TRY(strings ? writeStringNpy(base + ".npy", v.tensor()) : writeNpy(base + ".npy", v.tensor()));
    written.push_back(base + ".npy");
  } else if (v.isSequence()) {
    for (size_t i = 0; i < v.elements().size(); ++i) {
      KILN_TRY(writeNpy(base + "." + std::to_string(i) + ".npy", v.elements()[i]));
      written.push_back(base + "." + std::to_string(i) + ".npy");
    }
  } else if (v.hasValue()) {
    return writeOutput(dir, name, v.value(), strings, written);
  }
  return Status::ok();
}

/// Writes each output to DIR/<name>.npy; those named in `stringOutputs` as unicode arrays.
Status writeOutputs(const std::string& dir, const std::vector<std::string>& names, const std::vector<RuntimeValue>& outs,
                    const std::set<std::string>& stringOutputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error(ErrorCode::IoError, "cannot create '" + dir + "': " + ec.message());
  std::vector<std::string> written;
  for (size_t i = 0; i < outs.size(); ++i) KILN_TRY(writeOutput(dir, names[i], outs[i], stringOutputs.count(names[i]) != 0, written));
  for (const auto& w : written) std::cout << "wrote " << w << "\n";
  return Status::ok();
}

/// `kiln run model.kiln`: the artifact through the embedding API, no compiler involved.
int runArtifact(const RunOptions& o) {
  if (o.backend != "interpreter" && o.backend != "cpu")
    return reportError(Error(ErrorCode::InvalidArgument, "an artifact runs on the target it was compiled for; drop --backend"));
  if (o.model.precision != "f32" || o.model.optLevel >= 0 || !o.model.pipeline.empty() || !o.model.libraryTactics.empty())
    return reportError(Error(ErrorCode::InvalidArgument, "an artifact runs as it was compiled; give -O, --pipeline, "
                                                         "--precision and --library-tactics to kiln compile instead"));
  Stopwatch timer;
  auto model = Model::load(o.model.path);
  if (!model) return reportError(model.error());
  double loadMs = timer.elapsedMs();
  auto inputs = artifactInputs((*model)->inputs(), o.inputs, o.seed);
  if (!inputs) return reportError(inputs.error());
  timer.restart();
  auto outs = (*model)->run(*inputs);
  if (!outs) return reportError(outs.error());
  double runMs = timer.elapsedMs();
  std::cout << "ran " << o.model.path << " (compiled for " << (*model)->compiledFor() << "; load " << std::fixed
            << std::setprecision(1) << loadMs << " ms, run " << runMs << " ms)\n" << std::defaultfloat << std::setprecision(6);
  std::cout << "outputs:\n";
  std::vector<std::string> names;
  std::vector<RuntimeValue> values;
  std::set<std::string> stringOutputs;
  for (size_t i = 0; i < outs->size(); ++i) {
    names.push_back((*model)->outputs()[i].name);
    if ((*model)->outputs()[i].strings) stringOutputs.insert(names.back());
    values.emplace_back((*outs)[i]);
    if (Status s = printOutput(names.back(), values.back(), stringOutputs.count(names.back()) != 0, o.printLimit); !s.isOk())
      return reportError(s.error());
  }
  if (!o.outputDir.empty())
    if (Status s = writeOutputs(o.outputDir, names, values, stringOutputs); !s.isOk()) return reportError(s.error());
  return 0;
}

int runModel(const RunOptions& o) {
  if (o.model.path.ends_with(".kiln")) return runArtifact(o);
  if (Status s = checkPrecisionTarget(o.model, o.backend == "cuda"); !s.isOk()) return reportError(s.error());
  auto model = loadModelWithInputs(o.model, o.inputs, o.seed);
  if (!model) return reportError(model.error());
  bench::BackendOptions backendOptions;
  backendOptions.seed = o.seed;
  backendOptions.allowTf32 = o.model.precision == "tf32";
  backendOptions.libraryTactics = effectiveLibraryTactics(o.model, o.backend == "cuda");
  auto backend = bench::createBackend(o.backend, backendOptions);
  if (!backend) return reportError(backend.error());
  std::vector<ir::Value*> graphOutputs = model->module->graph().outputs();
  std::vector<std::string> outputNames;
  for (const ir::Value* v : graphOutputs) outputNames.push_back(v->name());
  const std::set<std::string> stringOutputs = model->module->stringOutputs;
  bench::CompilePhases phases;
  phases.importMs = model->importMs;
  phases.passesMs = model->passesMs;
  Stopwatch timer;
  Status prepared = (*backend)->prepare(std::move(model->module), phases);
  if (!prepared.isOk()) return reportError(prepared.error());
  double prepareMs = timer.elapsedMs();
  timer.restart();
  auto outs = (*backend)->run(model->inputs);
  if (!outs) return reportError(outs.error());
  double runMs = timer.elapsedMs();
  std::cout << "ran " << o.model.path << " on " << (*backend)->name() << " (import " << std::fixed
            << std::setprecision(1) << model->importMs << " ms, ";
  if (model->passesMs) std::cout << "passes " << *model->passesMs << " ms, ";
  std::cout << "prepare " << prepareMs << " ms, run " << runMs
            << " ms)\n" << std::defaultfloat << std::setprecision(6);
  std::cout << "outputs:\n";
  for (size_t i = 0; i < outs->size(); ++i)
    if (Status s = printOutput(outputNames[i], (*outs)[i], stringOutputs.count(outputNames[i]) != 0, o.printLimit);
        !s.isOk())
      return reportError(s.error());
  if (!o.outputDir.empty())
    if (Status s = writeOutputs(o.outputDir, outputNames, *outs, stringOutputs); !s.isOk()) return reportError(s.error());
  return 0;
}

}  // namespace

void addRunCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("run", "Run a model (.onnx, .kir) or a compiled artifact (.kiln) once and print or save its outputs");
  auto o = std::make_shared<RunOptions>();
  addModelOptions(*cmd, o->model, true);
  cmd->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  addBackendOption(*cmd, o->backend);
  cmd->add_option("--output-dir", o->outputDir, "Write each output to DIR/<output name>.npy");
  cmd->add_option("--seed", o->seed, "Seed for random inputs and random ops")->default_val(0);
  cmd->add_option("--print-limit", o->printLimit, "Values printed per output")->default_val(8);
  cmd->callback([=, &exitCode] {
    o->model.target = o->backend;
    exitCode = runModel(*o);
  });
}

}  // namespace kiln::cli
