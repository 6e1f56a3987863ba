//===- tools/kiln/CompileCommand.cpp - `kiln compile` ----------------------===//
//
// Compiles a model for a target and writes one .kiln artifact: import (with
// --shape bindings), the -O pipeline, the fusion plan (defaults, or decisions
// from --fusion-plan; --save-fusion-plan writes them out for editing), one
// kernel per group from its schedule template, object code, and the memory
// plan. Prints what it made: kernels, host steps (ops the runtime runs with
// its reference kernels, listed by op), peak scratch memory, weights, time
// per phase. `kiln run model.kiln` and the embedding API load the result.
//
// --target cuda[:sm_XX,...] lowers with the templates' GPU schedules and
// compiles each kernel's CUDA C with NVRTC (in parallel) to a cubin per
// architecture and PTX for the oldest, all stored in the artifact; with
// --emit-cuda DIR the sources, cubins and PTX are also written there.
// NVRTC's outputs are cached by source hash (--cache-dir, --no-cache).
// --tuning-db applies the schedules `kiln tune` measured (cpu target, or
// cuda: the records of one GPU, --tuning-device).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/cuda/NvrtcCache.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/CudaKernelTimer.h"
#include "kiln/runtime/StepDependencies.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/Strings.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::cli {
namespace {

struct CompileOptions {
  ModelOptions model;
  std::string target = "cpu";
  std::string output;
  std::string fusionPlan, saveFusionPlan;
  std::string emitCuda;
  std::string tuningDb;
  std::string tuningDevice;  ///< cuda: whose records apply (default: this machine's GPU, or the database's only GPU)
  bool showTuning = false;
  std::string cacheDir = codegen::NvrtcCache::defaultDir();
  bool noCache = false;
  bool quiet = false;
  bool noHostSteps = false;
};

std::string size(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (bytes < (1u << 20)) os << double(bytes) / 1024.0 << " KiB";
  else os << double(bytes) / (1024.0 * 1024.0) << " MiB";
  return os.str();
}

/// Writes the fusion plan (if asked) and the artifact, then the report's
/// first lines; `kernelsNote` ends the kernels line. The caller prints the
/// target's own lines (weights, times) after these.
Status saveAndReport(const CompileOptions& o, const codegen::LoweredModel& model, const std::string& output,
                     const std::string& kernelsNote) {
  if (!o.saveFusionPlan.empty()) KILN_TRY(writeFile(o.saveFusionPlan, model.plan->print()));
  KILN_TRY(runtime::saveArtifact(*model.executable, output));
  const codegen::CompileStats& st = model.stats;
  const runtime::Executable& exe = *model.executable;
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "compiled " << o.model.path << " for " << exe.target << " (" << exe.cpu << ") -> " << output << "\n";
  const auto launches = std::count_if(exe.steps.begin(), exe.steps.end(),
                                      [](const runtime::KernelStep& s) { return s.kind == runtime::StepKind::Kernel; });
  std::cout << "  kernels        " << launches << " launches, " << st.kernels << " distinct kernels" << kernelsNote << "\n";
  if (st.compiledIfs)
    std::cout << "  branches       " << st.compiledIfs << " If nodes compiled (their branches' steps, one branch run per If)\n";
  if (st.librarySteps) {
    size_t convs = 0;
    for (const runtime::LibraryCall& c : exe.libraryCalls) convs += c.routine == runtime::LibraryRoutine::CudnnConv;
    std::cout << "  library steps  " << st.librarySteps << " (" << st.librarySteps - convs << " cuBLASLt matmuls, " << convs
              << " cuDNN convolutions; --library-tactics)\n";
  }
  if (!o.emitCuda.empty()) std::cout << "  sources        CUDA C, cubins and PTX in " << o.emitCuda << "\n";
  if (!st.hostSteps.empty())
    std::cout << "  host steps     " << st.hostSteps.size() << " (reference kernels): " << st.hostOpSummary() << "\n";
  std::cout << "  memory plan    " << size(st.arenaBytes) << " peak scratch (" << size(st.unsharedBytes)
            << " without reuse)\n";
  return Status::ok();
}

/// --target cuda: cubins and PTX for every kernel, into the artifact (and
/// with --emit-cuda, the CUDA C, cubins and PTX into a directory).
/// How the GPU kernels are scheduled, e.g. "3 tensor-core GEMM, 2 tiled GEMM,
/// 4 warp per row, 6 float4 elementwise, 12 one thread per output or row".
std::string gpuScheduleSummary(const std::vector<codegen::LoweredKernel>& kernels) {
  auto on = [](const codegen::Config& c, const char* knob, int64_t value) { return c.count(knob) && c.at(knob) == value; };
  size_t mma = 0, gemm = 0, warp = 0, vector = 0, simple = 0;
  for (const codegen::LoweredKernel& k : kernels) {
    if (on(k.config, "mma", 1)) ++mma;
    else if (on(k.config, "gemm", 1)) ++gemm;
    else if (on(k.config, "warp", 1)) ++warp;
    else if (on(k.config, "vector", 4)) ++vector;
    else ++simple;
  }
  std::string out;
  auto add = [&](size_t n, const char* what) {
    if (n) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(mma, "tensor-core GEMM");
  add(gemm, "tiled GEMM");
  add(warp, "warp per row");
  add(vector, "float4 elementwise");
  add(simple, "one thread per output or row (or shared-tile matmul)");
  return out;
}

int compileCuda(const CompileOptions& o, const std::vector<int>& archs, ir::Module& module,
                const codegen::CompileOptions& options, const std::string& output, double importMs, double passesMs,
                const std::string& tuningSummary) {
  if (!o.quiet)
    std::cerr << "kiln: generating kernels with GPU schedules, compiling them with NVRTC " << codegen::nvrtcVersion()
              << "\n";
  codegen::CudaCompileOptions cuda;
  cuda.archs = archs;
  cuda.emitDir = o.emitCuda;
  if (!o.noCache) cuda.cacheDir = o.cacheDir;
  auto model = codegen::compileCudaArtifact(module.graph(), options, cuda);
  if (!model) return reportError(model.error());
  uint64_t cubinBytes = 0;
  for (const runtime::CudaKernelCode& c : model->executable->cudaKernels)
    for (const auto& cubin : c.cubins) cubinBytes += cubin.size();
  if (Status s = saveAndReport(o, *model, output, " (" + size(cubinBytes) + " of cubins, PTX for the oldest)"); !s.isOk())
    return reportError(s.error());
  const codegen::CompileStats& st = model->stats;
  std::cout << "  weights        " << size(st.weightBytes) << "\n";
  std::cout << "  schedules      " << gpuScheduleSummary(model->kernels) << "\n";
  if (!tuningSummary.empty()) std::cout << "  " << tuningSummary << "\n";
  // What the runtime's CUDA graphs can overlap: steps that need not wait for the step before them.
  const runtime::StepOverlap overlap = runtime::stepOverlap(*model->executable, true);
  std::cout << "  cuda graphs    " << overlap.segments << " (kernel and library steps between host steps); " << overlap.independent
            << " of " << overlap.steps << " steps may run beside the step before them\n";
  std::cout << "  time ms        import " << importMs << ", passes " << passesMs << ", plan " << st.planMs << ", lower "
            << st.lowerMs << ", emit " << st.emitMs << ", nvrtc " << st.nvrtcMs << "\n";
  std::cout << "  nvrtc          " << st.nvrtcCompiled << " compiled, " << st.nvrtcCached << " from the cache"
            << (cuda.cacheDir.empty() ? std::string(" (off)") : " in " + cuda.cacheDir) << "\n";
  return 0;
}

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

int compileModel(const CompileOptions& o) {
  std::vector<int> archs;
  const bool cuda = o.target == "cuda" || o.target.rfind("cuda:", 0) == 0;
  if (cuda) {
    auto a = cudaArchitectures(o.target);
    if (!a) return reportError(a.error());
    archs = *a;
  } else if (o.target != "cpu") {
    return reportError(Error(ErrorCode::InvalidArgument, "unknown target '" + o.target + "' (targets: cpu, cuda[:sm_XX,...])"));
  } else if (!o.emitCuda.empty()) {
    return reportError(Error(ErrorCode::InvalidArgument, "--emit-cuda needs --target cuda"));
  }
  if (Status s = checkPrecisionTarget(o.model, cuda); !s.isOk()) return reportError(s.error());
  std::string output = o.output;
  if (output.empty()) {
    output = o.model.path.substr(0, o.model.path.rfind('.')) + ".kiln";
  }
  auto progress = [&](const std::string& msg) {
    if (!o.quiet) std::cerr << "kiln: " << msg << "\n";
  };
  Stopwatch timer;
  progress("importing " + o.model.path);
  auto module = loadModel(o.model);
  if (!module) return reportError(module.error());
  double importMs = timer.elapsedMs();
  timer.restart();
  auto report = applyPipeline(**module, o.model);
  if (!report) return reportError(report.error());
  double passesMs = timer.elapsedMs();
  codegen::CompileOptions options;
  options.allowHostSteps = !o.noHostSteps;
  options.releaseConsumedWeights = true;  // after lowering only the executable is written
  options.dimRanges = (*module)->dimRanges;
  options.stringInputs = (*module)->stringInputs;
  options.stringOutputs = (*module)->stringOutputs;
  options.allowTf32 = o.model.precision == "tf32";
  options.libraryTactics = *codegen::parseLibraryTactics(effectiveLibraryTactics(o.model, cuda));  // checked by CLI::IsMember
  if (!o.fusionPlan.empty()) {
    auto text = readFile(o.fusionPlan);
    if (!text) return reportError(text.error());
    options.fusionPlanText = *text;
  }
  std::string tuningSummary;
  if (!o.tuningDb.empty()) {
    auto applied = applyTuning(o, (*module)->graph(), options, cuda);
    if (!applied) return reportError(applied.error());
    applied->applyTo(options);
    tuningSummary = applied->summary(options.libraryTactics);
  }
  if (cuda) return compileCuda(o, archs, **module, options, output, importMs, passesMs, tuningSummary);
  progress("generating kernels and object code for this CPU");
  auto model = codegen::compileCpuArtifact((*module)->graph(), options);
  if (!model) return reportError(model.error());
  if (Status s = saveAndReport(o, *model, output, ""); !s.isOk()) return reportError(s.error());
  const codegen::CompileStats& st = model->stats;
  const runtime::Executable& exe = *model->executable;
  std::cout << "  weights        " << size(st.weightBytes) << ", object code " << size(exe.objectCodeBytes()) << " in "
            << exe.objectCode.size() << (exe.objectCode.size() == 1 ? " part" : " parts") << " (KILN_COMPILE_THREADS="
            << codegen::compileThreads() << ")\n";
  if (!tuningSummary.empty()) std::cout << "  " << tuningSummary << "\n";
  std::cout << "  time ms        import " << importMs << ", passes " << passesMs << ", plan " << st.planMs << ", lower "
            << st.lowerMs << ", llvm " << st.llvmMs << "\n";
  return 0;
}

}  // namespace

void addCompileCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("compile", "Compile a model into a .kiln artifact (kernels, launch and memory plan, weights)");
  auto o = std::make_shared<CompileOptions>();
  addModelOptions(*cmd, o->model, true);
  addShapeRangeOptions(*cmd, o->model);
  cmd->add_option("--target", o->target,
                  "Target: cpu (this machine's CPU), or cuda[:sm_XX,...] (default architectures sm_80, sm_86, sm_89, "
                  "sm_90)")
      ->default_val("cpu");
  cmd->add_option("--emit-cuda", o->emitCuda,
                  "With --target cuda: also write each kernel's CUDA C (KERNEL.cu), cubins (KERNEL.sm_XX.cubin) "
                  "and PTX (KERNEL.ptx) to DIR");
  cmd->add_option("--cache-dir", o->cacheDir,
                  "With --target cuda: reuse NVRTC's cubins and PTX cached in DIR by source hash (default "
                  "$KILN_CACHE_DIR/nvrtc, $XDG_CACHE_HOME/kiln/nvrtc or ~/.cache/kiln/nvrtc; KILN_CACHE_DIR=off: none)");
  cmd->add_flag("--no-cache", o->noCache, "With --target cuda: compile every kernel with NVRTC, read and write no cache");
  cmd->add_option("-o,--output", o->output, "Artifact to write (default: the model's name with .kiln)");
  cmd->add_option("--fusion-plan", o->fusionPlan, "Fusion decisions to apply (a file in the --save-fusion-plan form)");
  cmd->add_option("--save-fusion-plan", o->saveFusionPlan, "Write the fusion plan used (edges, decisions, kernels) to FILE");
  cmd->add_flag("--no-host-steps", o->noHostSteps,
                "Fail instead of running ops that no kernel template compiles (extern ops, data-dependent shapes) "
                "as host steps on the runtime's reference kernels");
  cmd->add_option("--tuning-db", o->tuningDb,
                  "Apply the fastest measured schedules from this tuning database (kiln tune); kernels without a record, "
                  "or whose tuned schedule was not faster than the default, keep the default");
  cmd->add_option("--tuning-device", o->tuningDevice,
                  "With --target cuda --tuning-db: apply the records of this GPU (as kiln tune names it, e.g. "
                  "'NVIDIA H100 80GB HBM3 (sm_90)'; default: this machine's GPU, else the database's only one)");
  cmd->add_flag("--show-tuning", o->showTuning, "With --tuning-db: print each kernel's status (applied, kept-default, missing, stale)");
  cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
  cmd->callback([=, &exitCode] {
    o->model.target = o->target.rfind("cuda", 0) == 0 ? "cuda" : o->target;
    exitCode = compileModel(*o);
  });
}

}  // namespace kiln::cli
