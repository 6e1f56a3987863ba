//===- tools/kiln/ModelLoader.h - Loading models for the CLI --------------===//
//
// Loads a model from .onnx (ONNX import) or .kir (text IR), binding dynamic
// input dims given with --shape (or giving them ranges), and validates the optimisation level; the
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
  /// --min-shapes / --opt-shapes / --max-shapes ("name:1x3x48x80"; commands that add them).
  std::vector<std::string> minShapes, optShapes, maxShapes;
  int optLevel = -1;      ///< -O; -1 when not given (then -O3 unless --pipeline)
  std::string pipeline;  ///< --pipeline: passes to run after import, instead of -O; "arch": the arch strategy's for the model
  std::string target;    ///< the backend the passes prepare for (cpu, cuda, interpreter; empty: none): -O3 adds its layout
  std::vector<std::string> disabledPasses;  ///< --disable-pass
  std::string precision = "f32";  ///< --precision: f16 / bf16 append to-mixed-precision to the pipeline; tf32 allows TF32 (cuda)
  std::string libraryTactics;  ///< --library-tactics (cuda): off | auto | all (codegen/LibraryTactics.h); empty: not given
};

/// The library tactics a compile for `cuda` (or not) uses: those given, else auto on the GPU and off elsewhere.
std::string effectiveLibraryTactics(const ModelOptions& options, bool cuda);

/// Adds the model path, --shape and (for commands that execute) -O and --pipeline.
void addModelOptions(CLI::App& cmd, ModelOptions& options, bool withOptLevel);

/// Adds --min-shapes, --opt-shapes and --max-shapes (trtexec's shape ranges).
void addShapeRangeOptions(CLI::App& cmd, ModelOptions& options);

/// Adds --backend (default "interpreter" unless given, checked against the registry).
void addBackendOption(CLI::App& cmd, std::string& backend, const std::string& defaultBackend = "interpreter");

/// Loads the model; `extraShapes` are bindings derived by the command (from input files).
Expected<std::unique_ptr<ir::Module>> loadModel(const ModelOptions& options,
                                                const std::vector<std::string>& extraShapes = {});

/// The pipeline the options ask for: --pipeline, else the -O level's (default
/// -O3), then to-mixed-precision for --precision f16 / bf16; giving both -O and --pipeline is an error.
/// --pipeline arch depends on the graph: runSelectedPipeline runs it.
Expected<std::vector<passes::PipelineEntry>> selectedPipeline(const ModelOptions& options);

/// Runs the pipeline the options ask for on `graph`: selectedPipeline's, or
/// for --pipeline arch the arch strategy for the target's backend
/// (kiln/select/ArchPipeline.h: what `kiln passes compare --strategies arch`
/// runs) followed by the --precision passes.
Expected<passes::PassReport> runSelectedPipeline(ir::Graph& graph, const ModelOptions& options,
                                                 const passes::RunOptions& run);
/// The pass context the options ask for (--disable-pass), verify-each as given.
passes::PassContext selectedContext(const ModelOptions& options, bool verifyEach);

/// Runs the selected pipeline on the module and verifies the result; the
/// report says what each pass did.
Expected<passes::PassReport> applyPipeline(ir::Module& module, const ModelOptions& options);

/// KE4003 unless --precision tf32 and --library-tactics other than off go
/// with a CUDA target or backend (`cuda` says whether it does).
Status checkPrecisionTarget(const ModelOptions& options, bool cuda);

/// The SM numbers a --target names: "cuda" -> the default architectures,
/// "cuda:sm_80,sm_90" -> {80, 90} (kiln compile, kiln tune).
Expected<std::vector<int>> cudaArchitectures(const std::string& target);

/// Prints an error to stderr and returns the exit code for it.
int reportError(const Error& e);

}  // namespace kiln::cli
