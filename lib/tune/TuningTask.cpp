//===- lib/tune/TuningTask.cpp - Task extraction ----------------------------===//
//
// See kiln/tune/TuningTask.h. Each group is lowered once with its template's
// default configuration; kernelBodyKey of that kernel, hashed with the
// template's name and the target, is the signature.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/TuningTask.h"

#include <cstdio>
#include <map>

#include "kiln/support/Hash.h"
#include "kiln/tune/ScheduleFeatures.h"

namespace kiln::tune {

using namespace codegen;

namespace {

std::string hex16(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// "1x64x56x56"; a dynamic dim as its expression ("bx(s)x16").
std::string dimsText(const ir::Value* v) {
  if (!v->type().isTensor()) return "?";
  const ir::TensorType& t = v->tensorType();
  std::string out;
  for (int64_t i = 0; i < t.rank(); ++i) {
    std::optional<DimExpr> e = t.dim(i) < 0 ? t.dimExpr(i) : std::nullopt;
    const std::string text = e ? e->str() : std::to_string(t.dim(i));
    out += (out.empty() ? "" : "x") + (e && e->symbols().size() == 1 && text == *e->symbols().begin() ? text : e ? "(" + text + ")" : text);
  }
  return out.empty() ? "scalar" : out;
}

/// "b=2,s=8": the opt value of each dynamic dim a kernel takes (what it is measured at); "" for none.
std::string optText(const LoweredKernel& k, const KernelGroup& g) {
  std::string out;
  for (const std::string& symbol : k.extentSymbols) {
    auto r = g.dimRanges ? g.dimRanges->find(symbol) : ir::DimRanges::const_iterator();
    if (!g.dimRanges || r == g.dimRanges->end()) continue;
    out += (out.empty() ? "" : ",") + symbol + "=" + std::to_string(r->second.opt);
  }
  return out;
}

/// "Conv 1x64x56x56 -> 1x256x56x56 +Add+Relu": the anchor (or first op), its
/// first operand and result shapes, then the other ops of the group.
std::string describe(const KernelGroup& g) {
  const ir::Node* main = g.anchor ? g.anchor : g.nodes.front();
  std::string out = main->qualifiedOpType();
  if (main->numInputs() && main->input(0)) out += " " + dimsText(main->input(0));
  if (!g.outputs.empty()) out += " -> " + dimsText(g.outputs.front());
  for (const ir::Node* n : g.nodes)
    if (n != main) out += "+" + n->qualifiedOpType();
  return out;
}

/// The space search may pick from: approximate knobs only at their default.
KnobSpace searchable(KnobSpace space) {
  for (Knob& k : space.knobs)
    if (k.approximate) k.values = {k.defaultValue};
  return space;
}

}  // namespace

const char* targetName(KernelTarget target) { return target == KernelTarget::Cpu ? "cpu" : "cuda"; }

std::vector<std::string> TuningTask::groupNames() const {
  std::vector<std::string> names;
  for (const KernelGroup* g : groups) names.push_back(g->name());
  return names;
}

Expected<GroupSignature> signatureOf(const KernelGroup& group, KernelTarget target) {
  KILN_ASSIGN(const ScheduleTemplate* t, templateFor(group));
  GroupSignature s;
  s.templateName = t->name();
  KILN_ASSIGN(s.fullSpace, t->knobSpace(group, target));
  KILN_ASSIGN(LoweredKernel lowered, lowerGroup(group, target, nullptr));
  uint64_t h = hashString(kernelBodyKey(lowered.kernel), hashString(s.templateName));
  s.opt = optText(lowered, group);
  if (!s.opt.empty()) h = hashString(s.opt, h);
  s.signature = s.templateName + "-" + targetName(target) + "-" + hex16(hashCombine(h, uint64_t(target)));
  s.spaceVersion = hex16(hashString(s.fullSpace.str()));
  s.flops = kernelStats(lowered.kernel).flops;
  return s;
}

bool TuningTask::hasLibraryCall() const { return libraryCallOf(*this).has_value(); }

std::optional<TaskLibraryCall> libraryCallOf(const TuningTask& task) {
  if (task.target != KernelTarget::Gpu || task.groups.empty()) return std::nullopt;
  const codegen::KernelGroup& group = *task.groups.front();
  if (std::optional<codegen::LibraryMatch> whole = codegen::libraryCallFor(group, /*allowTf32=*/false))
    return TaskLibraryCall{std::move(*whole), std::nullopt};
  std::optional<codegen::LibrarySplit> split;
  if (task.plan) split = codegen::splitForLibrary(*task.plan, group, codegen::LibraryTactics::All, /*allowTf32=*/false);
  if (!split) return std::nullopt;
  codegen::LibraryMatch head = split->head;
  return TaskLibraryCall{std::move(head), std::move(split)};
}

Expected<TaskSet> extractTasks(ir::Graph& graph, KernelTarget target, const std::string& fusionPlanText,
                               const ir::DimRanges& ranges) {
  TaskSet out;
  KILN_ASSIGN(FusionPlan plan, FusionPlan::build(graph));
  out.plan = std::make_unique<FusionPlan>(std::move(plan));
  if (!ranges.empty()) {
    out.ranges = std::make_unique<ir::DimRanges>(ranges);
    out.plan->setDimRanges(out.ranges.get());
  }
  if (!fusionPlanText.empty()) KILN_TRY(out.plan->applyDecisions(fusionPlanText));
  std::map<std::string, size_t> bySignature;
  for (const KernelGroup& g : out.plan->groups()) {
    ++out.groups;
    if (g.role == KernelRole::Extern) {
      ++out.untunableGroups;
      continue;
    }
    Expected<GroupSignature> s = signatureOf(g, target);
    if (!s && s.error().code() == ErrorCode::CodegenUnsupported) {  // a host step
      ++out.untunableGroups;
      continue;
    }
    if (!s) return std::move(s).error();
    KnobSpace space = searchable(s->fullSpace);
    if (space.size() <= 1) {
      ++out.untunableGroups;
      continue;
    }
    auto [it, fresh] = bySignature.try_emplace(s->signature, out.tasks.size());
    if (fresh) {
      TuningTask task;
      task.signature = s->signature;
      task.templateName = s->templateName;
      task.description = describe(g) + (s->opt.empty() ? "" : " @ " + s->opt);
      task.target = target;
      task.space = std::move(space);
      task.spaceVersion = s->spaceVersion;
      task.flops = s->flops;
      task.plan = out.plan.get();
      out.tasks.push_back(std::move(task));
    }
    out.tasks[it->second].groups.push_back(&g);
  }
  return out;
}

}  // namespace kiln::tune
