//===- kiln/tune/TuningTask.h - The distinct kernels of a model --*- C++ -*-===//
//
// A tuning task is one distinct kernel of a model: the fusion-plan groups
// whose default-schedule kernels are identical (same IR up to names) share
// it, so a ResNet's repeated bottleneck convolutions are tuned once. Its
// signature (template, target and a hash of that kernel) keys the tuning
// database; the knob space's version (a hash of its text) tells a record
// made for an older space from a current one. Approximate knobs (TF32) are
// held at their default: search never trades precision on its own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/codegen/LibraryTactics.h"
#include "kiln/codegen/ScheduleTemplate.h"

namespace kiln::tune {

struct TuningTask {
  std::string signature;     ///< "<template>-<target>-<16 hex digits>"
  std::string templateName;
  std::string description;   ///< anchor op and shapes, e.g. "Conv 1x64x56x56 -> 1x256x56x56 +Add+Relu"
  codegen::KernelTarget target = codegen::KernelTarget::Cpu;
  std::vector<const codegen::KernelGroup*> groups;  ///< every group this kernel computes (first: representative)
  const codegen::FusionPlan* plan = nullptr;        ///< the plan the groups belong to (TaskSet::plan)
  codegen::KnobSpace space;  ///< what search may pick from (approximate knobs: the default only)
  std::string spaceVersion;  ///< hash of the template's full knob space text
  double flops = 0;          ///< arithmetic of one run (default schedule's kernel IR)
  std::vector<std::string> groupNames() const;
  /// Whether a library call computes its groups (libraryCallOf).
  bool hasLibraryCall() const;
};

/// The library call kiln tune --target cuda measures beside a GPU task's
/// kernels, in f32: a cuBLASLt matmul or cuDNN convolution computing the
/// whole group, or (split set) the head the compiler splits off for one,
/// with the rest as a kernel of its own. What the measurer times, batch
/// mode exports and applying a database expects, from this one place.
struct TaskLibraryCall {
  codegen::LibraryMatch match;
  std::optional<codegen::LibrarySplit> split;
};
std::optional<TaskLibraryCall> libraryCallOf(const TuningTask& task);

/// The tasks of a graph: its fusion plan (defaults, or `fusionPlanText`) and
/// one task per distinct kernel a template lowers, in first-use order. Groups
/// that run as host steps or whose knob space has one configuration are not
/// tasks. With `ranges` (a graph with dynamic dims) kernels take them as
/// run-time extents and are measured at the opt values.
struct TaskSet {
  std::unique_ptr<ir::DimRanges> ranges;  ///< what the plan's groups read (null: static shapes)
  std::unique_ptr<codegen::FusionPlan> plan;
  std::vector<TuningTask> tasks;
  size_t groups = 0;          ///< kernel groups in the plan
  size_t untunableGroups = 0; ///< host steps and groups with a single configuration
};
Expected<TaskSet> extractTasks(ir::Graph& graph, codegen::KernelTarget target, const std::string& fusionPlanText = "",
                               const ir::DimRanges& ranges = {});

/// The signature and knob-space version of one group (what extractTasks and
/// applying the tuning database both compute); error when no template lowers
/// it. A kernel over dynamic dims is keyed by its code (which holds each
/// run-time extent's maximum) and the opt values it is measured at, so a
/// record never applies to a kernel measured at other values.
struct GroupSignature {
  std::string signature, spaceVersion, templateName;
  std::string opt;  ///< "b=2,s=8": the opt values a kernel over dynamic dims is measured at ("" for none)
  codegen::KnobSpace fullSpace;
  double flops = 0;
};
Expected<GroupSignature> signatureOf(const codegen::KernelGroup& group, codegen::KernelTarget target);

const char* targetName(codegen::KernelTarget target);

}  // namespace kiln::tune
