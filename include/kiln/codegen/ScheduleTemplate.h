//===- kiln/codegen/ScheduleTemplate.h - Templates, knobs, lowering -*- C++ -*-===//
//
// A schedule template turns one kernel group (a fusion-plan group with its
// anchor op) into kernel IR, parameterized by knobs: tile sizes, vector width,
// unrolling, loop order, parallelism. Each template declares its knob space
// for a given group as data (name, candidate values, default), so the tuner
// can enumerate, sample and featurize configurations without knowing the
// template. lowerGroup picks the template for a group and instantiates it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {

class ElementBuilder;

/// Knob name -> chosen value.
using Config = std::map<std::string, int64_t>;

struct Knob {
  std::string name;
  std::vector<int64_t> values;  ///< candidates, in increasing order
  int64_t defaultValue = 0;
  std::string doc;
  /// Values other than the default change results (a precision trade-off,
  /// e.g. TF32 tensor cores for f32): used only when the user allows it
  /// (CompileOptions::allowTf32), never picked by search on its own.
  bool approximate = false;
};

struct KnobSpace {
  std::vector<Knob> knobs;
  /// Number of configurations (product of candidate counts).
  uint64_t size() const;
  Config defaultConfig() const;
  /// The i-th configuration in mixed-radix order (i < size()).
  Config configAt(uint64_t i) const;
  /// Knob values as numbers, in knob order (for cost models).
  std::vector<double> features(const Config& c) const;
  /// Checks that `c` names each knob once with a candidate value.
  Status check(const Config& c) const;
  std::string str() const;
};
std::string configToString(const Config& c);
/// Parses "tm=4,tn=32".
Expected<Config> parseConfig(const std::string& text);

class ScheduleTemplate {
 public:
  virtual ~ScheduleTemplate() = default;
  virtual const char* name() const = 0;
  /// Whether the template lowers groups with this role (and the group's op).
  virtual bool matches(const KernelGroup& group) const = 0;
  virtual Expected<KnobSpace> knobSpace(const KernelGroup& group, KernelTarget target) const = 0;
  /// Builds the kernel body; `elements` belongs to the group and collects the parameters.
  virtual Expected<Stmt> instantiate(ElementBuilder& elements, const Config& config, KernelTarget target) const = 0;
};

/// Every template, in matching priority.
const std::vector<const ScheduleTemplate*>& allTemplates();
/// The template that lowers `group`; CodegenUnsupported naming the op when none does.
Expected<const ScheduleTemplate*> templateFor(const KernelGroup& group);

/// A constant operand a kernel reads in a rearranged layout, made once at
/// compile time (or a lookup table code generation computed, e.g. Resize
/// sampling positions): "panels" turns a [K, N] matrix (or [N, K] when transposed)
/// into [ceil(N / width), K, width] column panels, zero-padded, so a GEMM
/// reads its B operand contiguously.
struct PackSpec {
  std::string kind;        ///< "" (none), "panels", or "table" (a constant made by code generation)
  int64_t width = 0;
  bool transposed = false;  ///< the source is [N, K]
  Tensor table;             ///< "table": the data
};
/// Applies a pack to a constant 2-D tensor (f32/f64/f16/bf16 data as stored).
Expected<Tensor> packConstant(const Tensor& source, const PackSpec& spec);
/// packConstant for a source its caller gives up: where nothing else holds
/// its storage, the storage is writable and the panels fill it exactly (N a
/// multiple of the width), the panels are written over it from a copy in
/// `scratch` (replaced by a larger one as needed, reused across calls)
/// instead of into fresh memory; otherwise as packConstant.
Expected<Tensor> packConstantInPlace(Tensor&& source, const PackSpec& spec, std::shared_ptr<kiln::Buffer>& scratch);

/// A lowered kernel: its IR, how it was made, and which graph value each parameter holds.
struct LoweredKernel {
  Kernel kernel;
  const KernelGroup* group = nullptr;
  std::string templateName;
  Config config;
  std::vector<const ir::Value*> args;  ///< one per kernel.params; null for a workspace
  std::vector<PackSpec> packs;         ///< one per kernel.params: how a constant is rearranged
  std::vector<std::string> extentSymbols;  ///< one per kernel.extents: the dynamic dim it holds
};

/// Lowers a group with `config` (the template's default when null), verified.
Expected<LoweredKernel> lowerGroup(const KernelGroup& group, KernelTarget target, const Config* config = nullptr);

}  // namespace kiln::codegen
