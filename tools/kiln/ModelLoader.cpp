//===- tools/kiln/ModelLoader.cpp - Loading models for the CLI ------------===//
//
// Format detection by extension, --shape parsing and binding (for text IR:
// input types are rebound and the graph re-inferred), -O validation.
//
//===----------------------------------------------------------------------===//
#include "ModelLoader.h"

#include <iostream>

#include "kiln/bench/Backend.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/Verifier.h"
#include "kiln/support/File.h"

namespace kiln::cli {

void addModelOptions(CLI::App& cmd, ModelOptions& o, bool withOptLevel) {
  cmd.add_option("model", o.path, "Model file (.onnx or .kir text IR)")->required()->check(CLI::ExistingFile);
  cmd.add_option("--shape", o.shapes,
                 "Bind an input's dims, e.g. --shape input:1x3x224x224 (repeatable; binds dynamic dims)");
  if (withOptLevel)
    cmd.add_option("-O", o.optLevel, "Optimisation level (0; 1-3 arrive with the pass library)")
        ->default_val(0)
        ->check(CLI::Range(0, 3));
  if (withOptLevel)
    cmd.add_option("--pipeline", o.pipeline,
                   "Passes to run after import, e.g. dead-code-elimination (see `kiln passes list`)");
}

void addBackendOption(CLI::App& cmd, std::string& backend) {
  std::string names;
  for (const auto& n : bench::backendNames()) names += (names.empty() ? "" : ", ") + n;
  cmd.add_option("--backend", backend, "What to run the model on: " + names)
      ->default_val("interpreter")
      ->check(CLI::IsMember(bench::backendNames()));
}

Expected<std::unique_ptr<ir::Module>> loadModel(const ModelOptions& o, const std::vector<std::string>& extraShapes) {
  if (o.optLevel != 0)
    return Error(ErrorCode::InvalidArgument, "-O" + std::to_string(o.optLevel) +
                                                 " needs the pass library, which is not built yet; use -O0");
  onnx::ImportOptions import;
  for (const auto& s : extraShapes) KILN_TRY(onnx::parseShapeBinding(s, import));
  for (const auto& s : o.shapes) KILN_TRY(onnx::parseShapeBinding(s, import));  // explicit --shape wins
  if (o.path.ends_with(".kir")) {
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
  return onnx::importOnnxFile(o.path, import);
}

Expected<passes::PassReport> applyPipeline(ir::Module& module, const ModelOptions& options) {
  if (options.pipeline.empty()) return passes::PassReport{};
  KILN_ASSIGN(auto pipeline, passes::parsePipeline(options.pipeline));
  KILN_ASSIGN(passes::PassReport report, passes::runPipeline(module.graph(), pipeline));
  KILN_TRY(ir::verify(module.graph()));
  return report;
}

int reportError(const Error& e) {
  std::cerr << "kiln: " << e.str() << "\n";
  return 1;
}

}  // namespace kiln::cli
