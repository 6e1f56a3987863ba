//===- lib/evolve/ApplyPatch.cpp - Edits applied to a graph -----------------===//
//
// See kiln/evolve/Patch.h. Each edit looks its names up afresh (earlier
// edits add and remove values), checks that every value it reads is
// computed before the place that reads it (a graph input, or a result of an
// earlier node of the root graph), repairs the value's type, and rewires.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Patch.h"

#include <unordered_map>

#include "PatchRepair.h"
#include "RewriteUtils.h"
#include "kiln/ir/CloneModule.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/Verifier.h"

namespace kiln::evolve {

namespace {

class EditApplier {
 public:
  EditApplier(ir::Graph& graph, size_t index, const Edit& edit, PatchReport& report)
      : g_(graph), k_(index), edit_(edit), report_(report) {
    for (ir::Value* v : g_.inputs()) values_[v->name()] = v;
    size_t position = 0;
    for (ir::Node* n : g_.nodes()) {
      position_[n] = position++;
      for (ir::Value* v : n->outputs()) values_[v->name()] = v;
    }
  }

  Status apply() {
    switch (edit_.kind) {
      case EditKind::Delete: return deleteNode();
      case EditKind::Copy: return copyNode();
      case EditKind::Operand: return replaceOperand();
    }
    return Status::ok();
  }

 private:
  template <class... Args>
  Error bad(Args&&... args) const {
    return makeError(ErrorCode::PatchFormat, "edit ", k_, " (", editKindName(edit_.kind), " '", edit_.node,
                     "'): ", std::forward<Args>(args)...);
  }

  Expected<ir::Node*> nodeNamed(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end() || it->second->isGraphInput())
      return bad("the graph has no node whose first result is '", name, "'");
    ir::Node* n = it->second->producer();
    if (n->output(0) != it->second) return bad("'", name, "' is not the first result of its node");
    return n;
  }

  /// The value `name`, checked to be computed before `place`.
  Expected<ir::Value*> valueBefore(const std::string& name, ir::Node* place) const {
    auto it = values_.find(name);
    if (it == values_.end()) return bad("the graph has no value '", name, "'");
    ir::Value* v = it->second;
    if (!v->isGraphInput() && position_.at(v->producer()) >= position_.at(place))
      return bad("'", name, "' is not computed before '", place->displayName(), "', which would read it");
    return v;
  }

  /// The value `name`, repaired to `target`, for `place` to read.
  Expected<ir::Value*> readable(const std::string& name, ir::Node* place, const ir::TensorType& target,
                                std::string& how) {
    KILN_ASSIGN(ir::Value * v, valueBefore(name, place));
    auto repaired = repairToType(v, target, place, k_);
    if (!repaired) return bad(repaired.error().message());
    report_.repairNodes += repaired->nodes;
    if (!repaired->how.empty()) how += " ('" + name + "' through " + repaired->how + ")";
    return repaired->value;
  }

  /// The static tensor type operand `i` of `user` has.
  Expected<ir::TensorType> operandType(ir::Node* user, uint32_t i) const {
    if (i >= user->numInputs() || !user->hasInput(i))
      return bad("'", user->displayName(), "' has no operand ", i);
    const ir::Type& t = user->input(i)->type();
    if (!t.isTensor() || !t.tensor().isStatic())
      return bad("operand ", i, " of '", user->displayName(), "' is not a tensor of static shape");
    return t.tensor();
  }

  Status deleteNode() {
    KILN_ASSIGN(ir::Node * n, nodeNamed(edit_.node));
    if (edit_.values.size() != n->numOutputs())
      return bad("the node has ", n->numOutputs(), " results, the edit gives ", edit_.values.size(), " values");
    std::string how;
    std::vector<std::pair<ir::Value*, std::string>> keepNames;  // graph outputs keep their names
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      ir::Value* out = n->output(i);
      if (!out->type().isTensor()) return bad("result '", out->name(), "' is not a tensor");
      KILN_ASSIGN(ir::Value * with, readable(edit_.values[i], n, out->tensorType(), how));
      if (passes::isGraphOutput(out)) {
        KILN_ASSIGN(ir::Node * id, passes::createTypedNode(g_, "Identity", {with}, {}, "", n));
        ++report_.repairNodes;
        with = id->output(0);
        keepNames.emplace_back(with, out->name());
      }
      out->replaceAllUsesWith(with);
    }
    report_.edits.push_back("deleted " + n->opType() + " '" + n->displayName() + "'; its users read " +
                            joinedValues() + how);
    g_.eraseNode(n);
    for (auto& [v, name] : keepNames) v->setName(name);
    return Status::ok();
  }

  Status copyNode() {
    KILN_ASSIGN(ir::Node * src, nodeNamed(edit_.node));
    KILN_ASSIGN(ir::Node * into, nodeNamed(edit_.into));
    if (!src->subgraphs().empty()) return bad("a node with subgraphs is not copied");
    if (edit_.values.size() != src->numInputs())
      return bad("the node has ", src->numInputs(), " operands, the edit gives ", edit_.values.size());
    KILN_ASSIGN(ir::TensorType target, operandType(into, edit_.input));
    std::string how;
    std::vector<ir::Value*> operands;
    for (size_t i = 0; i < src->numInputs(); ++i) {
      if (!src->hasInput(i) || edit_.values[i].empty()) {
        if (src->hasInput(i) != !edit_.values[i].empty())
          return bad("operand ", i, " must be given exactly where the node has one");
        operands.push_back(nullptr);
        continue;
      }
      KILN_ASSIGN(ir::TensorType want, operandType(src, uint32_t(i)));
      KILN_ASSIGN(ir::Value * v, readable(edit_.values[i], into, want, how));
      operands.push_back(v);
    }
    std::vector<std::string> names;
    for (size_t j = 0; j < src->numOutputs(); ++j) {
      names.push_back(j == 0 ? edit_.as : edit_.as + "_" + std::to_string(j));
      if (g_.isValueNameTaken(names.back())) return bad("the name '", names.back(), "' is taken");
    }
    ir::Node* copy = g_.createNode(src->schema(), operands, names, src->name().empty() ? "" : edit_.as, into);
    for (const auto& [name, attr] : src->attributes()) copy->setAttr(name, attr);
    if (Status s = ir::inferNodeTypes(*copy); !s.isOk()) return bad("the copy is ill-typed: ", s.error().message());
    auto result = repairToType(copy->output(0), target, into, k_);
    if (!result) return bad(result.error().message());
    report_.repairNodes += result->nodes;
    if (!result->how.empty()) how += " (the copy through " + result->how + ")";
    into->setInput(edit_.input, result->value);
    report_.edits.push_back("copied " + src->opType() + " '" + src->displayName() + "' as '" + edit_.as + "' before '" +
                            into->displayName() + "' as its operand " + std::to_string(edit_.input) +
                            ", reading " + joinedValues() + how);
    return Status::ok();
  }

  Status replaceOperand() {
    KILN_ASSIGN(ir::Node * user, nodeNamed(edit_.node));
    if (edit_.values.size() != 1) return bad("an operand edit gives one value");
    KILN_ASSIGN(ir::TensorType target, operandType(user, edit_.input));
    std::string how;
    KILN_ASSIGN(ir::Value * v, readable(edit_.values[0], user, target, how));
    report_.edits.push_back("operand " + std::to_string(edit_.input) + " of " + user->opType() + " '" +
                            user->displayName() + "' reads '" + edit_.values[0] + "' instead of '" +
                            user->input(edit_.input)->name() + "'" + how);
    user->setInput(edit_.input, v);
    return Status::ok();
  }

  std::string joinedValues() const {
    std::string out;
    for (const std::string& v : edit_.values) out += (out.empty() ? "'" : ", '") + (v.empty() ? "-" : v) + "'";
    return out;
  }

  ir::Graph& g_;
  size_t k_;
  const Edit& edit_;
  PatchReport& report_;
  std::unordered_map<std::string, ir::Value*> values_;
  std::unordered_map<const ir::Node*, size_t> position_;
};

/// Erases the nodes none of whose results is used, last first, so that a
/// chain that fed only erased nodes goes too.
int removeDeadNodes(ir::Graph& graph) {
  int removed = 0;
  std::vector<ir::Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    bool used = false;
    for (ir::Value* v : (*it)->outputs()) used = used || v->hasUses();
    if (!used) graph.eraseNode(*it), ++removed;
  }
  return removed;
}

}  // namespace

Expected<PatchReport> applyPatch(ir::Graph& graph, const Patch& patch) {
  PatchReport report;
  for (size_t k = 0; k < patch.size(); ++k) KILN_TRY(EditApplier(graph, k, patch[k], report).apply());
  report.removedDead = removeDeadNodes(graph);
  if (Status s = ir::verify(graph); !s.isOk())
    return makeError(ErrorCode::PatchFormat, "the patched graph fails verification: ", s.error().message());
  return report;
}

Expected<std::unique_ptr<ir::Module>> patchedModule(const ir::Module& module, const Patch& patch,
                                                    PatchReport* report) {
  std::unique_ptr<ir::Module> copy = ir::cloneModule(module);
  KILN_ASSIGN(PatchReport r, applyPatch(copy->graph(), patch));
  if (report) *report = std::move(r);
  return copy;
}

}  // namespace kiln::evolve
