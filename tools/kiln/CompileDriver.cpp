//===- tools/kiln/CompileDriver.cpp - A model to a lowered artifact -------===//
//
// The phases of a compile without their report: the target and precision
// checks, import, the pipeline, the fusion plan and tuning database read
// into codegen's options, and the CPU or CUDA lowering.
//
//===----------------------------------------------------------------------===//
#include "CompileDriver.h"

#include <iostream>
#include <set>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/runtime/CudaKernelTimer.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/Strings.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::cli {
namespace {

/// The GPU whose CUDA records --tuning-db applies: --tuning-device, else
/// this machine's GPU, else the only GPU the database has records of.
Expected<std::string> tuningGpu(const CompileOptions& o, const tune::TuningDatabase& db) {
  if (!o.tuningDevice.empty()) return o.tuningDevice;
  if (auto gpu = runtime::CudaKernelTimer::device()) return gpu->first;
  std::set<std::string> gpus;
  for (const tune::TuningRecord& r : db.records())
    if (r.target == "cuda") gpus.insert(r.device);
  if (gpus.size() > 1)
    return makeError(ErrorCode::InvalidArgument, o.tuningDb, " holds CUDA records of ", gpus.size(), " GPUs (",
                     joinStrings(std::vector<std::string>(gpus.begin(), gpus.end()), "; "),
                     "): choose one with --tuning-device");
  return gpus.empty() ? std::string() : *gpus.begin();
}

/// --tuning-db: the configurations the database gives this machine's CPU,
/// or (cuda) the GPU tuningGpu picks; corrupt lines and (with
/// --show-tuning) every kernel's status on stderr.
Expected<tune::TuningApplication> applyTuning(const CompileOptions& o, ir::Graph& graph, const codegen::CompileOptions& options,
                                              bool cuda) {
  KILN_ASSIGN(tune::TuningDatabase db, tune::TuningDatabase::open(o.tuningDb, true));
  for (const std::string& p : db.problems()) std::cerr << "kiln: warning: " << p << "\n";
  KILN_ASSIGN(tune::TaskSet tasks, tune::extractTasks(graph, cuda ? codegen::KernelTarget::Gpu : codegen::KernelTarget::Cpu,
                                                      options.fusionPlanText, options.dimRanges));
  std::string device = tune::cpuDeviceName();
  if (cuda) {
    KILN_ASSIGN(device, tuningGpu(o, db));
    if (!o.quiet && !device.empty()) std::cerr << "kiln: applying the CUDA tuning records of " << device << "\n";
  }
  tune::TuningApplication applied = tune::applyTuningDatabase(tasks, db, cuda ? "cuda" : "cpu", device,
                                                              cuda ? tune::cudaToolkitName() : tune::cpuToolkitName());
  if (o.showTuning)
    for (const tune::KernelApplication& k : applied.kernels) {
      std::cerr << "kiln: tuning " << k.group << " [" << k.description << "]: " << tune::applyStatusName(k.status);
      if (k.status == tune::ApplyStatus::Applied) std::cerr << " " << codegen::configToString(k.config);
      if (k.status == tune::ApplyStatus::Library) std::cerr << " " << k.library;
      if (k.tunedMs > 0 && k.defaultMs > 0)
        std::cerr << " (tuned " << k.tunedMs << " ms, default " << k.defaultMs << " ms"
                  << (k.libraryMs > 0 ? ", " + k.library + " " + std::to_string(k.libraryMs) + " ms" : std::string()) << ")";
      if (!k.why.empty()) std::cerr << " (" << k.why << ")";
      if (!k.libraryUnused.empty()) std::cerr << " (library call records not used: " << k.libraryUnused << ")";
      std::cerr << "\n";
    }
  return applied;
}

/// The lowered plan as DOT, its host steps marked (the plan's graph is still alive here).
Status writeFusionDot(const std::string& path, const codegen::LoweredModel& lowered) {
  std::vector<std::string> hostSteps;
  for (const codegen::HostStepInfo& h : lowered.stats.hostSteps) hostSteps.push_back(h.name);
  return writeFile(path, codegen::fusionPlanDot(*lowered.plan, hostSteps));
}

}  // namespace

bool isCudaTarget(const std::string& target) { return target == "cuda" || target.rfind("cuda:", 0) == 0; }

Expected<CompiledModel> compileModel(const CompileOptions& o, const std::function<void(const std::string&)>& progress) {
  CompiledModel out;
  out.cuda = isCudaTarget(o.target);
  std::vector<int> archs;
  if (out.cuda) {
    KILN_ASSIGN(archs, cudaArchitectures(o.target));
  } else if (o.target != "cpu") {
    return Error(ErrorCode::InvalidArgument, "unknown target '" + o.target + "' (targets: cpu, cuda[:sm_XX,...])");
  } else if (!o.emitCuda.empty()) {
    return Error(ErrorCode::InvalidArgument, "--emit-cuda needs --target cuda");
  }
  KILN_TRY(checkPrecisionTarget(o.model, out.cuda));
  Stopwatch timer;
  progress("importing " + o.model.path);
  KILN_ASSIGN(std::unique_ptr<ir::Module> module, loadModel(o.model));
  out.importMs = timer.elapsedMs();
  timer.restart();
  KILN_TRY(applyPipeline(*module, o.model).status());
  out.passesMs = timer.elapsedMs();
  codegen::CompileOptions options;
  options.allowHostSteps = !o.noHostSteps;
  options.releaseConsumedWeights = true;  // after lowering only the executable is kept
  options.dimRanges = module->dimRanges;
  options.stringInputs = module->stringInputs;
  options.stringOutputs = module->stringOutputs;
  options.allowTf32 = o.model.precision == "tf32";
  KILN_ASSIGN(options.libraryTactics, codegen::parseLibraryTactics(effectiveLibraryTactics(o.model, out.cuda)));
  if (!o.fusionPlan.empty()) {
    KILN_ASSIGN(options.fusionPlanText, readFile(o.fusionPlan));
  }
  if (!o.tuningDb.empty()) {
    KILN_ASSIGN(tune::TuningApplication applied, applyTuning(o, module->graph(), options, out.cuda));
    applied.applyTo(options);
    out.tuningSummary = applied.summary(options.libraryTactics);
  }
  if (out.cuda) {
    progress("generating kernels with GPU schedules, compiling them with NVRTC " + codegen::nvrtcVersion());
    codegen::CudaCompileOptions cuda;
    cuda.archs = archs;
    cuda.emitDir = o.emitCuda;
    if (!o.noCache) cuda.cacheDir = o.cacheDir;
    KILN_ASSIGN(out.lowered, codegen::compileCudaArtifact(module->graph(), options, cuda));
  } else {
    progress("generating kernels and object code for this CPU");
    KILN_ASSIGN(out.lowered, codegen::compileCpuArtifact(module->graph(), options));
  }
  if (!o.dotFusion.empty()) KILN_TRY(writeFusionDot(o.dotFusion, out.lowered));
  return out;
}

}  // namespace kiln::cli
