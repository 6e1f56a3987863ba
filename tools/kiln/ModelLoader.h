//===- tools/kiln/ModelLoader.h - Loading models for the CLI --------------===//
//
// Loads a model from .onnx (ONNX import) or .kir (text IR), binding dynamic
// input dims given with --shape, and validates the optimisation level; the
// --backend option of the commands that execute models.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/Module.h"
#include "kiln/passes/PassManager.h"
#include "kiln/support/Status.h"

namespace kiln::cli {

/// Options every model-consuming subcommand takes.
struct ModelOptions {
  std::string path;
  std::vector<std::string> shapes;  ///< "name:1x3x224x224"
  int optLevel = 0;
  std::string pipeline;  ///< --pipeline: passes to run after import
};

/// Adds the model path, --shape and (for commands that execute) -O and --pipeline.
void addModelOptions(CLI::App& cmd, ModelOptions& options, bool withOptLevel);

/// Adds --backend (default "interpreter", checked against the registry).
void addBackendOption(CLI::App& cmd, std::string& backend);

/// Loads the model; `extraShapes` are bindings derived by the command (from input files).
Expected<std::unique_ptr<ir::Module>> loadModel(const ModelOptions& options,
                                                const std::vector<std::string>& extraShapes = {});

/// Runs options.pipeline (if any) on the module and verifies the result;
/// the report says what each pass did. Empty report without a pipeline.
Expected<passes::PassReport> applyPipeline(ir::Module& module, const ModelOptions& options);

/// Prints an error to stderr and returns the exit code for it.
int reportError(const Error& e);

}  // namespace kiln::cli
