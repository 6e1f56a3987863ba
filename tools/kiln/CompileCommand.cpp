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
#include <sstream>

#include "Commands.h"
#include "CompileDriver.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/StepDependencies.h"
#include "kiln/support/File.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {


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

/// The CUDA target's report lines after saveAndReport's.
void reportCuda(const CompileOptions& o, const CompiledModel& c) {
  const codegen::LoweredModel& model = c.lowered;
  const codegen::CompileStats& st = model.stats;
  std::cout << "  weights        " << size(st.weightBytes) << "\n";
  std::cout << "  schedules      " << gpuScheduleSummary(model.kernels) << "\n";
  if (!c.tuningSummary.empty()) std::cout << "  " << c.tuningSummary << "\n";
  // What the runtime's CUDA graphs can overlap: steps that need not wait for the step before them.
  const runtime::StepOverlap overlap = runtime::stepOverlap(*model.executable, true);
  std::cout << "  cuda graphs    " << overlap.segments << " (kernel and library steps between host steps); " << overlap.independent
            << " of " << overlap.steps << " steps may run beside the step before them\n";
  std::cout << "  time ms        import " << c.importMs << ", passes " << c.passesMs << ", plan " << st.planMs << ", lower "
            << st.lowerMs << ", emit " << st.emitMs << ", nvrtc " << st.nvrtcMs << "\n";
  std::cout << "  nvrtc          " << st.nvrtcCompiled << " compiled, " << st.nvrtcCached << " from the cache"
            << (o.noCache || o.cacheDir.empty() ? std::string(" (off)") : " in " + o.cacheDir) << "\n";
}

/// The CPU target's report lines after saveAndReport's.
void reportCpu(const CompiledModel& c) {
  const codegen::CompileStats& st = c.lowered.stats;
  const runtime::Executable& exe = *c.lowered.executable;
  std::cout << "  weights        " << size(st.weightBytes) << ", object code " << size(exe.objectCodeBytes()) << " in "
            << exe.objectCode.size() << (exe.objectCode.size() == 1 ? " part" : " parts") << " (KILN_COMPILE_THREADS="
            << codegen::compileThreads() << ")\n";
  if (!c.tuningSummary.empty()) std::cout << "  " << c.tuningSummary << "\n";
  std::cout << "  time ms        import " << c.importMs << ", passes " << c.passesMs << ", plan " << st.planMs << ", lower "
            << st.lowerMs << ", llvm " << st.llvmMs << "\n";
}

int compileCommand(const CompileOptions& o) {
  const std::string output = o.output.empty() ? o.model.path.substr(0, o.model.path.rfind('.')) + ".kiln" : o.output;
  auto compiled = compileModel(o, [&](const std::string& msg) {
    if (!o.quiet) std::cerr << "kiln: " << msg << "\n";
  });
  if (!compiled) return reportError(compiled.error());
  std::string kernelsNote;
  if (compiled->cuda) {
    uint64_t cubinBytes = 0;
    for (const runtime::CudaKernelCode& c : compiled->lowered.executable->cudaKernels)
      for (const auto& cubin : c.cubins) cubinBytes += cubin.size();
    kernelsNote = " (" + size(cubinBytes) + " of cubins, PTX for the oldest)";
  }
  if (Status s = saveAndReport(o, compiled->lowered, output, kernelsNote); !s.isOk()) return reportError(s.error());
  if (compiled->cuda) reportCuda(o, *compiled);
  else reportCpu(*compiled);
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
  cmd->add_option("--dot-fusion", o->dotFusion,
                  "Write the fusion plan as Graphviz DOT to FILE: one cluster per kernel, host steps filled "
                  "(render with `dot -Tsvg FILE -o plan.svg`)");
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
    exitCode = compileCommand(*o);
  });
}

}  // namespace kiln::cli
