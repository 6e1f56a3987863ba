//===- kiln/codegen/ModelLowering.h - Graph to Executable ---------*- C++ -*-===//
//
// The target-independent half of code generation: fusion plan -> one kernel
// per group (template default or given configs; identical kernels share code)
// -> the Executable's buffers, steps and memory plan. Groups no template
// lowers (extern ops, data-dependent shapes, operands a kernel needs constant)
// become host steps that the runtime runs with its reference kernels, unless
// disallowed; on the GPU, groups a vendor library runs become library steps.
// The CPU (Compiler.h) and CUDA (CudaCompiler.h) targets compile the kernels.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/codegen/LibraryTactics.h"
#include "kiln/codegen/ScheduleTemplate.h"
#include "kiln/runtime/Executable.h"

namespace kiln::codegen {

struct CompileOptions {
  std::string fusionPlanText;             ///< decisions to apply (FusionPlan::print form); empty: defaults
  std::map<std::string, Config> configs;  ///< per kernel group name (k3_conv1): knob values
  bool allowHostSteps = true;             ///< false: a group no template lowers is an error
  /// GPU: f32 matmuls and ungrouped convs run on TF32 tensor cores (inputs
  /// rounded to 10 mantissa bits, f32 accumulation): their approximate `mma`
  /// knob is set to 1 unless a config is given.
  bool allowTf32 = false;
  /// GPU: which groups run as library steps (LibraryTactics.h); a config given for a group keeps it generated.
  LibraryTactics libraryTactics = LibraryTactics::Off;
  /// GPU, per group name: whether its library call measured faster than its
  /// generated kernel (kiln tune --target cuda). Under `auto` this decides
  /// instead of the heuristic and of a config given for the group; `off`
  /// and `all` are not overridden.
  std::map<std::string, bool> libraryMeasuredFaster;
  /// The caller is done with the graph's weights once it is lowered (`kiln
  /// compile`, the benchmark backends): a Constant loses its value as soon
  /// as the last group reading it is lowered, since the executable holds
  /// what it needs (the tensor, shared, or its packed copy). A packed
  /// weight's memory then takes the packed panels that follow instead of
  /// fresh pages (docs/notes/performance-log.md, "Weights released as they
  /// are packed"). The graph is not fit to run, print or lower again afterwards:
  /// a later reader of such a constant finds no value (lowering reports an
  /// internal error, other readers stop on a failed check), never old data.
  bool releaseConsumedWeights = false;
  /// The ranges of the dynamic dims the graph's types refer to (the module's
  /// dimRanges): the executable serves every shape in them, its buffers sized
  /// for their maxima; empty for a graph of static shapes.
  ir::DimRanges dimRanges;
  /// The graph inputs and outputs that hold string tensors, by name (the
  /// module's stringInputs and stringOutputs): the executable marks them.
  std::set<std::string> stringInputs, stringOutputs;
};

/// A group that runs as a host step, and why.
struct HostStepInfo {
  std::string name;  ///< h<group id>_<op>
  std::vector<std::string> ops;
  std::string reason;  ///< "extern op or dynamic shape", or the lowering error
};

struct CompileStats {
  size_t groups = 0, kernels = 0;  ///< kernel groups, distinct kernels after sharing
  double planMs = 0, lowerMs = 0, llvmMs = 0, nvrtcMs = 0,
         emitMs = 0;                          ///< llvm: CPU code; emit, nvrtc: CUDA C and its cubins
  size_t nvrtcCompiled = 0, nvrtcCached = 0;  ///< CUDA: cubins and PTX compiled now / taken from the NVRTC cache
  uint64_t arenaBytes = 0, unsharedBytes = 0, weightBytes = 0;
  std::vector<HostStepInfo> hostSteps;
  size_t librarySteps = 0;  ///< CUDA: groups run by a library (cuBLASLt, cuDNN)
  size_t compiledIfs = 0;   ///< If nodes run as branch steps around their branches' own steps
  /// "NonZero x90, TopK x90" (ops in host steps, most frequent first); "" when none.
  std::string hostOpSummary() const;
};

/// The target-independent part: plan, lowered kernels, executable without code.
struct LoweredModel {
  std::unique_ptr<FusionPlan> plan;
  std::vector<LoweredKernel> kernels;  ///< distinct kernels, executable.kernelNames order
  /// Tails of groups split for library steps (LibraryTactics.h: splitForLibrary); kernels point into them.
  std::vector<std::unique_ptr<KernelGroup>> libraryTails;
  /// The plans of compiled If branches (ModelLowering.cpp); kernels point into them.
  std::vector<std::unique_ptr<FusionPlan>> branchPlans;
  std::shared_ptr<runtime::Executable> executable;
  CompileStats stats;
};

Expected<LoweredModel> lowerModel(ir::Graph& graph, KernelTarget target, const CompileOptions& options);

}  // namespace kiln::codegen
