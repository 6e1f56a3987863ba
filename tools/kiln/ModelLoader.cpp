//===- tools/kiln/ModelLoader.cpp - Loading models for the CLI ------------===//
//
// Format detection by extension, --shape parsing and binding (for text IR:
// input types are rebound and the graph re-inferred), and the choice of
// pipeline: --pipeline, or an -O level (default -O3), then to-mixed-precision
// when --precision asks for 16-bit floats.
//
//===----------------------------------------------------------------------===//
#include "ModelLoader.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "kiln/bench/Backend.h"
#include "kiln/bench/PassStudy.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/Verifier.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/select/ArchPipeline.h"
#include "kiln/support/File.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {

void addModelOptions(CLI::App& cmd, ModelOptions& o, bool withOptLevel) {
  cmd.add_option("model", o.path, "Model file (.onnx or .kir text IR; kiln run also takes a compiled .kiln)")->required()->check(CLI::ExistingFile);
  cmd.add_option("--shape", o.shapes,
                 "Bind an input's dims, e.g. --shape input:1x3x224x224 (repeatable; binds dynamic dims)");
  if (!withOptLevel) return;
  cmd.add_option("-O", o.optLevel, "Optimisation level 0-3 (default 3; `kiln passes list` shows each pass's level; on the cpu target -O3 also runs alter-op-layout, --disable-pass alter-op-layout keeps NCHW convolutions)")
      ->check(CLI::Range(0, passes::kMaxOptLevel));
  cmd.add_option("--pipeline", o.pipeline,
                 "Passes to run after import instead of an -O level, e.g. fold-constant,dead-code-elimination; O0..O3 stand for a "
                 "level's passes for the target (O3,combine-parallel-conv2d; on the cpu target -O3 ends with alter-op-layout: "
                 "channel-blocked convolutions); 'arch' alone is the pipeline `kiln passes compare --strategies arch` "
                 "selects for this model and target (its architecture classes' passes in ordering-rule order)");
  cmd.add_option("--disable-pass", o.disabledPasses, "Skip this pass wherever the pipeline names it (repeatable)");
  cmd.add_option("--precision", o.precision,
                 "f32 (default); tf32: the GPU's f32 matmuls and convs on TF32 tensor cores (cuda only); f16 / bf16: "
                 "run the ops that tolerate it in 16-bit floats (the to-mixed-precision pass after the pipeline; on "
                 "the GPU their matmuls and convs use tensor cores)")
      ->check(CLI::IsMember({"f32", "tf32", "f16", "bf16"}));
  cmd.add_option("--library-tactics", o.libraryTactics,
                 "GPU: which matmuls run as cuBLASLt calls and convolutions as cuDNN calls (bias/residual/ReLU epilogues "
                 "fused) instead of generated kernels: auto (the default for cuda: where they measured faster "
                 "than the generated kernels, see docs/cuda-target.md), all (every one the libraries can express), off (generated kernels only; the "
                 "artifact then needs neither cuBLASLt nor cuDNN)")
      ->check(CLI::IsMember({"off", "auto", "all"}));
}

void addShapeRangeOptions(CLI::App& cmd, ModelOptions& o) {
  const char* what = " shape of a range, e.g. x:1x3x48x80 (comma-separated or repeated, one per input; a dim whose min "
                     "and max differ stays dynamic, and every dynamic dim needs a range)";
  cmd.add_option("--min-shapes", o.minShapes, std::string("Smallest") + what)->delimiter(',');
  cmd.add_option("--opt-shapes", o.optShapes, "Shape to tune for within the range (default: the max shape)")->delimiter(',');
  cmd.add_option("--max-shapes", o.maxShapes, std::string("Largest") + what)->delimiter(',');
}

void addBackendOption(CLI::App& cmd, std::string& backend, const std::string& defaultBackend) {
  cmd.add_option("--backend", backend, "What to run the model on: " + joinStrings(bench::backendNames(), ", "))
      ->default_val(defaultBackend)
      ->check(CLI::IsMember(bench::backendNames()));
}

Expected<std::unique_ptr<ir::Module>> loadModel(const ModelOptions& o, const std::vector<std::string>& extraShapes) {
  onnx::ImportOptions import;
  for (const auto& s : extraShapes) KILN_TRY(onnx::parseShapeBinding(s, import));
  for (const auto& s : o.shapes) KILN_TRY(onnx::parseShapeBinding(s, import));  // explicit --shape wins
  for (const auto& s : o.minShapes) KILN_TRY(onnx::parseShapeRange("--min-shapes", s, import.minShapes));
  for (const auto& s : o.optShapes) KILN_TRY(onnx::parseShapeRange("--opt-shapes", s, import.optShapes));
  for (const auto& s : o.maxShapes) KILN_TRY(onnx::parseShapeRange("--max-shapes", s, import.maxShapes));
  if (o.path.ends_with(".kir")) {
    if (!o.minShapes.empty() || !o.optShapes.empty() || !o.maxShapes.empty())
      return Error(ErrorCode::InvalidArgument, "shape ranges apply to ONNX models; a .kir model's shapes are fixed with --shape");
    KILN_ASSIGN(std::string text, readFile(o.path));
    KILN_ASSIGN(auto module, ir::parseModule(text, o.path));
    KILN_TRY(ir::verify(module->graph()));
    if (!import.inputShapes.empty()) {
      for (const auto& [name, dims] : import.inputShapes) {
        ir::Value* in = nullptr;
        for (ir::Value* v : module->graph().inputs())
          if (v->name() == name) in = v;
        if (!in || !in->type().isTensor())
          return Error(ErrorCode::ShapeBinding, "--shape names '" + name + "', which is not a tensor input");
        if (!in->tensorType().accepts(dims))
          return Error(ErrorCode::ShapeBinding, "input '" + name + "' is declared " + in->type().str() +
                                                    "; --shape " + dimsToString(dims) + " contradicts it");
        in->setType(ir::TensorType(in->tensorType().dtype(), dims));
      }
      KILN_TRY(ir::inferTypes(module->graph()));
    }
    return module;
  }
  if (!o.path.ends_with(".onnx"))
    std::cerr << "kiln: note: '" << o.path << "' has no .onnx/.kir extension; reading it as ONNX\n";
  // The importer copies the weights out of the file into heap buffers: have that memory mapped first.
  std::error_code sizeError;
  uintmax_t fileBytes = std::filesystem::file_size(o.path, sizeError);
  if (!sizeError) reserveHeapFor(size_t(fileBytes));
  return onnx::importOnnxFile(o.path, import);
}

namespace {

/// What every pipeline's options must satisfy: -O or --pipeline, not both; known --disable-pass names.
Status checkPipelineOptions(const ModelOptions& o) {
  if (!o.pipeline.empty() && o.optLevel >= 0)
    return Error(ErrorCode::InvalidArgument, "give either -O" + std::to_string(o.optLevel) + " or --pipeline, not both");
  for (const std::string& name : o.disabledPasses)
    if (!passes::findPass(name))
      return Error(ErrorCode::InvalidArgument, "--disable-pass: unknown pass '" + name + "' (see `kiln passes list`)");
  return Status::ok();
}

}  // namespace

Expected<std::vector<passes::PipelineEntry>> selectedPipeline(const ModelOptions& o) {
  KILN_TRY(checkPipelineOptions(o));
  std::vector<passes::PipelineEntry> pipeline;
  if (o.pipeline == "arch") {
    return Error(ErrorCode::InvalidArgument, "--pipeline arch is chosen per model: it has no fixed pass list");
  } else if (!o.pipeline.empty()) {
    KILN_ASSIGN(pipeline, passes::parsePipeline(o.pipeline, o.target));
  } else {
    KILN_ASSIGN(pipeline, passes::optLevelPipeline(o.optLevel >= 0 ? o.optLevel : passes::kDefaultOptLevel, o.target));
  }
  KILN_ASSIGN(auto mixed, passes::precisionPasses(o.precision));
  pipeline.insert(pipeline.end(), mixed.begin(), mixed.end());
  return pipeline;
}

passes::PassContext selectedContext(const ModelOptions& o, bool verifyEach) {
  passes::PassContext ctx;
  ctx.verifyEach = verifyEach;
  ctx.disabledPasses.insert(o.disabledPasses.begin(), o.disabledPasses.end());
  return ctx;
}

Expected<passes::PassReport> runSelectedPipeline(ir::Graph& graph, const ModelOptions& o, const passes::RunOptions& run) {
  if (o.pipeline != "arch") {
    KILN_ASSIGN(auto pipeline, selectedPipeline(o));
    return passes::runPipeline(graph, pipeline, run);
  }
  KILN_TRY(checkPipelineOptions(o));
  const std::string backend = o.target.empty() ? "interpreter" : o.target;
  KILN_ASSIGN(select::ArchRun arch, select::runArchPipeline(graph, {bench::backendExclusions(backend)}, run));
  passes::PassReport report = std::move(arch.report);
  KILN_ASSIGN(auto mixed, passes::precisionPasses(o.precision));
  if (mixed.empty()) return report;
  KILN_ASSIGN(passes::PassReport precision, passes::runPipeline(graph, mixed, run));
  report.pipeline += "," + precision.pipeline;
  report.passes.insert(report.passes.end(), precision.passes.begin(), precision.passes.end());
  report.totalMs += precision.totalMs;
  return report;
}

Expected<passes::PassReport> applyPipeline(ir::Module& module, const ModelOptions& options) {
  passes::RunOptions run{.context = selectedContext(options, false), .hashes = false};  // no report printed
  KILN_ASSIGN(passes::PassReport report, runSelectedPipeline(module.graph(), options, run));
  KILN_TRY(ir::verify(module.graph()));
  return report;
}

Status checkPrecisionTarget(const ModelOptions& o, bool cuda) {
  if (o.precision == "tf32" && !cuda)
    return Error(ErrorCode::InvalidArgument, "--precision tf32 is a GPU tensor-core mode: it needs --target cuda (compile) "
                                             "or --backend cuda (run, bench)");
  if (!o.libraryTactics.empty() && o.libraryTactics != "off" && !cuda)
    return Error(ErrorCode::InvalidArgument, "--library-tactics chooses cuBLASLt/cuDNN for GPU matmuls and convolutions: it needs --target cuda "
                                             "(compile) or --backend cuda (run, bench)");
  return Status::ok();
}

std::string effectiveLibraryTactics(const ModelOptions& o, bool cuda) {
  return !o.libraryTactics.empty() ? o.libraryTactics : cuda ? "auto" : "off";
}

Expected<std::vector<int>> cudaArchitectures(const std::string& target) {
  if (target == "cuda") return codegen::defaultCudaArchitectures();
  std::vector<int> archs;
  std::stringstream list(target.substr(5));
  for (std::string item; std::getline(list, item, ',');) {
    if (item.size() < 5 || item.rfind("sm_", 0) != 0 || item.find_first_not_of("0123456789", 3) != std::string::npos)
      return makeError(ErrorCode::InvalidArgument, "bad CUDA architecture '", item, "' in --target ", target,
                       " (expected e.g. cuda:sm_80,sm_90)");
    archs.push_back(std::stoi(item.substr(3)));
  }
  return archs;
}

int reportError(const Error& e) {
  std::cerr << "kiln: " << e.str() << "\n";
  return 1;
}

}  // namespace kiln::cli
