//===- tools/kiln/CompileDriver.h - A model to a lowered artifact ---------===//
//
// What `kiln compile` and the Python package's kiln.compile share: import
// with shape bindings, the -O pipeline, the fusion plan, the tuning database,
// and lowering for the CPU or CUDA target. Reporting stays with the caller.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>

#include "ModelLoader.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/NvrtcCache.h"

namespace kiln::cli {

struct CompileOptions {
  ModelOptions model;
  std::string target = "cpu";
  std::string output;
  std::string fusionPlan, saveFusionPlan;
  std::string dotFusion;  ///< write the fusion plan as Graphviz DOT here
  std::string emitCuda;
  std::string tuningDb;
  std::string tuningDevice;  ///< cuda: whose records apply (default: this machine's GPU, or the database's only GPU)
  bool showTuning = false;
  std::string cacheDir = codegen::NvrtcCache::defaultDir();
  bool noCache = false;
  bool quiet = false;
  bool noHostSteps = false;
};

struct CompiledModel {
  codegen::LoweredModel lowered;
  bool cuda = false;
  double importMs = 0, passesMs = 0;
  std::string tuningSummary;  ///< with --tuning-db: what it applied (one line)
};

/// Whether `target` names the CUDA target ("cuda", "cuda:sm_80,...").
bool isCudaTarget(const std::string& target);

/// Imports, optimises and lowers the model as the options ask; `progress`
/// receives one line per phase (not called with quiet).
Expected<CompiledModel> compileModel(const CompileOptions& o, const std::function<void(const std::string&)>& progress);

}  // namespace kiln::cli
