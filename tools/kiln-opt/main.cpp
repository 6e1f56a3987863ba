//===- tools/kiln-opt/main.cpp - Text IR in, text IR out -------------------===//
//
// The test driver for IR-level tests (FileCheck): reads text IR (.kir) or ONNX,
// verifies it, runs a pass pipeline (--pipeline, with the per-pass report on
// stderr), and prints the result as text IR (or writes ONNX). With --emit it
// prints what code generation makes of the result instead: the fusion plan,
// the kernels (kernel IR, CPU or --gpu schedules), their LLVM IR or CUDA C;
// or checks/profiles every compiled kernel, or times each one's LLVM compile.
//
//===----------------------------------------------------------------------===//
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <iterator>

#include <random>

#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"

using namespace kiln;

namespace {

int fail(const Error& e) {
  std::cerr << "kiln-opt: " << e.str() << "\n";
  return 1;
}

/// --emit check: every kernel against the interpreter on random inputs (seed 0);
/// --emit profile: the mean time of each step over five runs after a warm-up run instead.
int checkCompiledKernels(ir::Graph& graph, const codegen::CompileOptions& options, bool profile) {
  auto model = codegen::compileForCpu(graph, options);
  if (!model) return fail(model.error());
  std::vector<Tensor> inputs;
  std::mt19937_64 gen(0);
  for (const ir::Value* v : graph.inputs()) {
    Tensor t = Tensor::zeros(v->tensorType().dtype(), v->tensorType().dims());
    std::vector<double> values(size_t(t.numElements()));
    for (double& x : values)
      x = isFloat(t.dtype()) ? std::uniform_real_distribution<double>(-1, 1)(gen) : double(gen() % 10);
    inputs.push_back(Tensor::fromVector<double>(t.dims(), values).castTo(t.dtype()));
  }
  if (profile) {
    std::vector<double> ms;
    // One untimed run first: its first touches of every buffer (a page fault per page, ten microseconds or more on
    // a VM) would otherwise dominate a small kernel's mean.
    if (auto warm = model->executor->run(inputs); !warm) return fail(warm.error());
    for (int i = 0; i < 5; ++i) (void)model->executor->run(inputs, &ms);
    const auto& exe = *model->lowered.executable;
    for (size_t s = 0; s < ms.size(); ++s) {
      const runtime::KernelStep& step = exe.steps[s];
      if (step.kind == runtime::StepKind::Host)
        std::cout << "profile " << ms[s] / 5 << " ms " << exe.hostGraphs[step.kernel].name << " host\n";
      else if (step.kind != runtime::StepKind::Kernel)
        std::cout << "profile " << ms[s] / 5 << " ms step " << s << " " << runtime::stepKindName(step.kind) << "\n";
      else
        std::cout << "profile " << ms[s] / 5 << " ms " << exe.kernelNames[step.kernel] << " "
                  << codegen::configToString(model->lowered.kernels[step.kernel].config) << "\n";
    }
    return 0;
  }
  auto results = codegen::checkKernels(graph, *model, inputs);
  if (!results) return fail(results.error());
  for (const auto& r : *results)
    std::cout << r.kernel << " " << r.templateName << " max-rel-error " << r.maxRelError << " (" << r.worstValue << ")\n";
  return 0;
}

/// `config` over the group's defaults when its knob space names every knob
/// in it, and with `onlyValid` when the space has each value too (without it
/// values are unchecked: lowering reports a bad one); nothing otherwise.
std::optional<codegen::Config> mergedConfig(const codegen::KernelGroup& g, codegen::KernelTarget target,
                                            const codegen::Config& config, bool onlyValid) {
  auto t = codegen::templateFor(g);
  if (!t) return std::nullopt;
  auto space = (*t)->knobSpace(g, target);
  if (!space) return std::nullopt;
  codegen::Config merged = space->defaultConfig();
  for (const auto& [knob, value] : config) {
    if (!merged.count(knob)) return std::nullopt;
    merged[knob] = value;
  }
  if (onlyValid && !space->check(merged).isOk()) return std::nullopt;
  return merged;
}

/// --emit compile-time: each distinct kernel's LLVM compile (optimization and
/// object code) on its own, one module and one thread, slowest first; what a
/// compile's llvm phase spends, kernel by kernel, before it is split over threads.
int timeKernelCompiles(ir::Graph& graph, const codegen::CompileOptions& options) {
  auto lowered = codegen::lowerModel(graph, codegen::KernelTarget::Cpu, options);
  if (!lowered) return fail(lowered.error());
  if (lowered->kernels.empty()) return fail(Error(ErrorCode::InvalidArgument, "the graph has no kernels to compile"));
  // LLVM's one-time start-up (target registration, option parsing) is no kernel's cost.
  if (auto warm = codegen::compileToObject({&lowered->kernels.front().kernel}); !warm) return fail(warm.error());
  std::vector<std::pair<double, const codegen::LoweredKernel*>> times;
  double total = 0;
  for (const codegen::LoweredKernel& k : lowered->kernels) {
    Stopwatch watch;
    if (auto object = codegen::compileToObject({&k.kernel}); !object) return fail(object.error());
    times.emplace_back(watch.elapsedMs(), &k);
    total += times.back().first;
  }
  std::stable_sort(times.begin(), times.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::cout << std::fixed << std::setprecision(2);
  for (const auto& [ms, k] : times) std::cout << "compile-time " << ms << " ms " << k->kernel.name << " " << k->templateName << "\n";
  std::cout << "compile-time total " << total << " ms, kernels " << times.size() << "\n";
  return 0;
}

/// --emit fusion-plan|kernels|llvm|cuda: what code generation makes of the graph.
int emitCode(ir::Graph& graph, const std::string& emit, const std::string& planFile, const std::string& configText,
             bool printKnobs, bool gpu) {
  gpu |= emit == "cuda";
  if (gpu && emit != "kernels" && emit != "cuda") return fail(Error(ErrorCode::InvalidArgument, "--gpu applies to --emit kernels and cuda"));
  const codegen::KernelTarget target = gpu ? codegen::KernelTarget::Gpu : codegen::KernelTarget::Cpu;
  codegen::CompileOptions options;
  if (!planFile.empty()) {
    auto text = readFile(planFile);
    if (!text) return fail(text.error());
    options.fusionPlanText = *text;
  }
  auto plan = codegen::FusionPlan::build(graph);
  if (!plan) return fail(plan.error());
  if (!options.fusionPlanText.empty())
    if (Status s = plan->applyDecisions(options.fusionPlanText); !s.isOk()) return fail(s.error());
  if (emit == "fusion-plan") {
    std::cout << plan->print();
    return 0;
  }
  std::optional<codegen::Config> config;
  if (!configText.empty()) {
    auto c = codegen::parseConfig(configText);
    if (!c) return fail(c.error());
    config = *c;
  }
  if (emit == "check" || emit == "profile" || emit == "compile-time") {
    // --config overrides the named knobs of every kernel whose knob space
    // accepts the values (the others keep their defaults).
    if (config)
      for (const codegen::KernelGroup& g : plan->groups()) {
        if (g.role == codegen::KernelRole::Extern) continue;
        if (auto merged = mergedConfig(g, codegen::KernelTarget::Cpu, *config, true)) options.configs[g.name()] = *merged;
      }
    if (emit == "compile-time") return timeKernelCompiles(graph, options);
    return checkCompiledKernels(graph, options, emit == "profile");
  }
  // As the compiler does: extern groups, and groups no template lowers, are
  // host steps (printed as a comment line in place of a kernel).
  std::vector<codegen::LoweredKernel> kernels;
  std::vector<std::string> hostSteps;
  // --config applies to each kernel whose knob space names every knob given (the
  // others from its defaults; a value the space lacks is an error), the other
  // kernels keep their defaults; a config no kernel takes is an error.
  bool configUsed = false;
  for (const codegen::KernelGroup& g : plan->groups()) {
    std::string reason = "no kernel template (extern op or data-dependent shape)";
    if (g.role != codegen::KernelRole::Extern) {
      std::optional<codegen::Config> merged;
      if (config) merged = mergedConfig(g, target, *config, false);
      configUsed |= merged.has_value();
      auto k = codegen::lowerGroup(g, target, merged ? &*merged : nullptr);
      if (k) {
        kernels.push_back(std::move(*k));
        continue;
      }
      if (k.error().code() != ErrorCode::CodegenUnsupported || merged) return fail(k.error());
      reason = k.error().message();
    }
    std::string ops;
    for (const ir::Node* n : g.nodes) ops += (ops.empty() ? "" : ", ") + n->qualifiedOpType();
    hostSteps.push_back("// host step h" + g.name().substr(1) + " (" + ops + "): " + reason + "\n");
  }
  if (config && !configUsed)
    return fail(Error(ErrorCode::InvalidArgument, "--config " + configText + ": no kernel has all these knobs (--knobs lists them)"));
  if (emit == "kernels") {
    for (const std::string& h : hostSteps) std::cout << h;
    for (const codegen::LoweredKernel& k : kernels) {
      if (printKnobs) {
        auto space = (*codegen::templateFor(*k.group))->knobSpace(*k.group, target);
        std::cout << "// template " << k.templateName << " knobs " << (space ? space->str() : "?") << " config "
                  << codegen::configToString(k.config) << "\n";
      }
      std::cout << codegen::printKernel(k.kernel);
    }
    return 0;
  }
  if (emit == "cuda") {
    for (const std::string& h : hostSteps) std::cout << h;
    for (const codegen::LoweredKernel& k : kernels) {
      auto cuda = codegen::emitCuda(k.kernel, codegen::fusedOpsOf(*k.group));
      if (!cuda) return fail(cuda.error());
      std::cout << cuda->source;
    }
    return 0;
  }
  std::vector<const codegen::Kernel*> list;
  for (const codegen::LoweredKernel& k : kernels) list.push_back(&k.kernel);
  auto text = codegen::emitLlvmText(list, true);
  if (!text) return fail(text.error());
  std::cout << *text;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln-opt: reads text IR or ONNX, verifies it, runs a pass pipeline and prints text IR.\n"
               "Reads stdin when the input is '-'."};
  std::string input = "-", output = "-";
  bool elide = false, printHash = false, noVerifyTypes = false;
  int64_t inlineLimit = 16;
  app.add_option("input", input, "Input .kir or .onnx file ('-' for text IR on stdin)");
  app.add_option("-o,--output", output, "Output file: .kir, .onnx, or '-' for stdout");
  app.add_flag("--elide-weights", elide, "Print large tensors by reference only (not parseable)");
  app.add_option("--inline-limit", inlineLimit, "Largest tensor printed inline (elements)")->default_val(16);
  app.add_flag("--print-hash", printHash, "Print the structural hash instead of the IR");
  app.add_flag("--no-verify-types", noVerifyTypes, "Verify structure only, not types against inference");
  std::string pipelineText, report = "none";
  bool verifyEach = false, printAfterChange = false, printKnobs = false;
  int optLevel = -1;
  app.add_option("-O", optLevel, "Run the pipeline of this opt level (0-3) instead of -p")
      ->check(CLI::Range(0, passes::kMaxOptLevel));
  app.add_option("-p,--pipeline", pipelineText, "Passes to run, e.g. 'dead-code-elimination' (see `kiln passes list`; O0..O3 stand for a level's passes)");
  app.add_flag("--verify-each", verifyEach, "Verify the IR and its types after every pass");
  app.add_flag("--print-after-change", printAfterChange, "Print the IR to stderr after each pass that changed it");
  app.add_option("--report", report, "Per-pass report on stderr: none, table or json")
      ->default_val("none")
      ->check(CLI::IsMember({"none", "table", "json"}));
  std::string emit = "ir", planFile, configText;
  app.add_option("--emit", emit,
                 "What to print: ir (text IR), fusion-plan, kernels (kernel IR), llvm (optimized LLVM IR), "
                 "check (run each compiled kernel on random inputs against the interpreter; error per kernel), "
                 "profile (time per kernel launch, mean of 5 runs after one warm-up run), compile-time (each distinct "
                 "kernel's LLVM compile on its own, slowest first), cuda (CUDA C of the GPU schedules)")
      ->default_val("ir")
      ->check(CLI::IsMember({"ir", "fusion-plan", "kernels", "llvm", "check", "profile", "compile-time", "cuda"}));
  app.add_option("--fusion-plan", planFile, "Fusion decisions to apply (a file in the --emit fusion-plan form)");
  app.add_option("--config", configText, "Knob values, e.g. tm=2,tn=16 (kernels/llvm/cuda: for each kernel whose space has all the knobs named, over its defaults; check/profile/compile-time: overrides the defaults where the values are valid)");
  app.add_flag("--knobs", printKnobs, "With --emit kernels: print each kernel's template and knob space");
  bool gpu = false;
  app.add_flag("--gpu", gpu, "With --emit kernels: the templates' GPU schedules (--emit cuda implies it)");
  CLI11_PARSE(app, argc, argv);

  Expected<std::unique_ptr<ir::Module>> module = Error(ErrorCode::Internal, "no input");
  if (input.size() > 5 && input.substr(input.size() - 5) == ".onnx") {
    module = onnx::importOnnxFile(input);
  } else {
    std::string text;
    if (input == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      auto t = readFile(input);
      if (!t) return fail(t.error());
      text = *t;
    }
    module = ir::parseModule(text, input == "-" ? "<stdin>" : input);
  }
  if (!module) return fail(module.error());
  if (Status s = ir::verify((*module)->graph(), {.checkTypes = !noVerifyTypes}); !s.isOk()) return fail(s.error());
  if (optLevel >= 0 && !pipelineText.empty()) return fail(Error(ErrorCode::InvalidArgument, "give -O or -p, not both"));
  if (!pipelineText.empty() || optLevel >= 0) {
    auto pipeline = optLevel >= 0 ? passes::optLevelPipeline(optLevel) : passes::parsePipeline(pipelineText);
    if (!pipeline) return fail(pipeline.error());
    passes::RunOptions run{.context = {.verifyEach = verifyEach}};
    if (printAfterChange) run.afterChange = passes::printIrAfterChange(std::cerr, false);
    auto result = passes::runPipeline((*module)->graph(), *pipeline, run);
    if (!result) return fail(result.error());
    if (report == "table") passes::printReportTable(std::cerr, *result);
    if (report == "json") std::cerr << passes::reportToJson(*result) << "\n";
  }
  if (emit != "ir") return emitCode((*module)->graph(), emit, planFile, configText, printKnobs, gpu);
  if (printHash) {
    std::cout << ir::structuralHashHex((*module)->graph()) << "\n";
    return 0;
  }
  if (output.size() > 5 && output.substr(output.size() - 5) == ".onnx") {
    if (Status s = onnx::exportOnnxFile(**module, output); !s.isOk()) return fail(s.error());
    return 0;
  }
  std::string text = ir::printModule(**module, {.inlineTensorLimit = inlineLimit, .elideResources = elide});
  if (output == "-") {
    std::cout << text;
    return 0;
  }
  if (Status s = writeFile(output, text); !s.isOk()) return fail(s.error());
  return 0;
}
