//===- lib/ir/ops/ControlFlowOps.cpp - If, Loop and Scan -------------------===//
//
// Control flow with subgraph bodies. Inference types the bodies from the
// node's operands (re-inferring a Loop body until loop-carried types are
// stable) and derives the node's results from the bodies' outputs.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

#include "kiln/ir/Graph.h"

namespace kiln::ir {
using namespace infer;

namespace {

/// Forgets every type in `g` (and its bodies) that inference wrote.
void clearTypes(Graph& g) {
  for (Node* n : g.nodes()) {
    for (Graph* sub : n->subgraphs()) clearTypes(*sub);
    for (Value* v : n->outputs()) v->setType(Type());
  }
}

Status inferIf(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType cond, ctx.inputTensor(0));
  if (cond.dtype() != DType::Bool) return shapeError("condition must be bool, got " + cond.str());
  Graph* thenG = ctx.node().getGraph("then_branch");
  Graph* elseG = ctx.node().getGraph("else_branch");
  if (!thenG->inputs().empty() || !elseG->inputs().empty()) return shapeError("If branches must not have inputs");
  Status thenOk = ctx.inferSubgraph(*thenG, {});
  Status elseOk = ctx.inferSubgraph(*elseG, {});
  // A branch whose shapes contradict the operands' (Silero VAD's 8 kHz branch
  // when 16 kHz windows are bound) cannot be the one that runs: its values
  // lose their types and the results take the other branch's; taking it
  // anyway fails at run time, where its shapes contradict.
  if (!thenOk.isOk() && !elseOk.isOk()) return thenOk;
  if (!thenOk.isOk() || !elseOk.isOk()) {
    Graph* infeasible = thenOk.isOk() ? elseG : thenG;
    Graph* taken = thenOk.isOk() ? thenG : elseG;
    clearTypes(*infeasible);
    if (taken->outputs().size() != ctx.numOutputs())
      return shapeError("a branch has " + std::to_string(taken->outputs().size()) + " outputs, node " +
                        std::to_string(ctx.numOutputs()));
    for (size_t i = 0; i < ctx.numOutputs(); ++i) ctx.setOutputType(i, taken->outputs()[i]->type());
    return Status::ok();
  }
  if (thenG->outputs().size() != ctx.numOutputs() || elseG->outputs().size() != ctx.numOutputs())
    return shapeError("then_branch has " + std::to_string(thenG->outputs().size()) + " outputs, else_branch " +
                      std::to_string(elseG->outputs().size()) + ", node " + std::to_string(ctx.numOutputs()));
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    KILN_ASSIGN(Type t, mergeTypes(thenG->outputs()[i]->type(), elseG->outputs()[i]->type()));
    ctx.setOutputType(i, t);
  }
  return Status::ok();
}

/// Generalises the types of the first `count` entries of `types` to also cover `next`.
Expected<bool> relax(std::vector<Type>& types, size_t offset, const std::vector<Value*>& next, size_t nextOffset,
                     size_t count) {
  bool changed = false;
  for (size_t i = 0; i < count; ++i) {
    KILN_ASSIGN(Type merged, mergeTypes(types[offset + i], next[nextOffset + i]->type()));
    if (!(merged == types[offset + i])) {
      types[offset + i] = merged;
      changed = true;
    }
  }
  return changed;
}

Status inferLoop(InferenceContext& ctx) {
  Graph* body = ctx.node().getGraph("body");
  size_t carried = ctx.numInputs() - 2;
  if (ctx.numInputs() < 2) return shapeError("Loop needs inputs M and cond (either may be empty)");
  if (body->inputs().size() != carried + 2)
    return shapeError("body has " + std::to_string(body->inputs().size()) + " inputs, expected " +
                      std::to_string(carried + 2) + " (iteration, condition, loop-carried values)");
  if (body->outputs().size() < carried + 1)
    return shapeError("body has too few outputs for " + std::to_string(carried) + " loop-carried values");
  size_t scans = body->outputs().size() - 1 - carried;
  if (ctx.numOutputs() != carried + scans)
    return shapeError("Loop has " + std::to_string(ctx.numOutputs()) + " results, body implies " +
                      std::to_string(carried + scans));
  std::vector<Type> types = {TensorType(DType::I64, {}), TensorType(DType::Bool, {})};
  for (size_t i = 0; i < carried; ++i) types.push_back(ctx.inputType(i + 2));
  for (int round = 0; round < 4; ++round) {
    KILN_TRY(ctx.inferSubgraph(*body, types));
    KILN_ASSIGN(bool changed, relax(types, 2, body->outputs(), 1, carried));
    if (!changed) break;
  }
  for (size_t i = 0; i < carried; ++i) ctx.setOutputType(i, types[i + 2]);
  int64_t trips = kUnknownDim;
  if (auto m = knownInts(ctx, 0); m && !ctx.hasInput(1) && m->size() == 1) trips = (*m)[0];
  for (size_t k = 0; k < scans; ++k) {
    const Type& t = body->outputs()[1 + carried + k]->type();
    if (!t.isTensor()) return shapeError("Loop scan outputs must be tensors");
    const TensorType& tt = t.tensor();
    if (!tt.hasRank()) {
      setUnranked(ctx, carried + k, tt.dtype());
      continue;
    }
    Dims d = tt.dims();
    d.insert(d.begin(), trips);
    setOut(ctx, carried + k, tt.dtype(), d);
  }
  return Status::ok();
}

Status inferScan(InferenceContext& ctx) {
  const Node& n = ctx.node();
  Graph* body = n.getGraph("body");
  int64_t numScan = n.getInt("num_scan_inputs");
  int64_t numState = int64_t(ctx.numInputs()) - numScan;
  if (numScan <= 0 || numState < 0) return attrError("num_scan_inputs is out of range");
  int64_t numScanOut = int64_t(body->outputs().size()) - numState;
  if (int64_t(body->inputs().size()) != numState + numScan || numScanOut < 0 ||
      int64_t(ctx.numOutputs()) != numState + numScanOut)
    return shapeError("Scan body inputs/outputs do not match the node's operands and results");
  auto axesOr = [&](const char* name, int64_t count) -> Expected<std::vector<int64_t>> {
    if (const Attribute* a = n.findAttr(name)) {
      if (int64_t(a->ints().size()) != count) return attrError(std::string(name) + " has the wrong length");
      return a->ints();
    }
    return std::vector<int64_t>(size_t(count), 0);
  };
  KILN_ASSIGN(auto inAxes, axesOr("scan_input_axes", numScan));
  KILN_ASSIGN(auto outAxes, axesOr("scan_output_axes", numScanOut));
  std::vector<Type> types;
  for (int64_t i = 0; i < numState; ++i) types.push_back(ctx.inputType(static_cast<size_t>(i)));
  int64_t seqLen = kUnknownDim;
  for (int64_t i = 0; i < numScan; ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(size_t(numState + i)));
    if (!t.hasRank()) {
      types.push_back(TensorType::unranked(t.dtype()));
      continue;
    }
    KILN_ASSIGN(int64_t axis, normalizeAxis(inAxes[size_t(i)], t.rank(), "scan_input_axes"));
    Dims d = t.dims();
    seqLen = d[size_t(axis)];
    d.erase(d.begin() + axis);
    types.push_back(TensorType(t.dtype(), d));
  }
  for (int round = 0; round < 4; ++round) {
    KILN_TRY(ctx.inferSubgraph(*body, types));
    KILN_ASSIGN(bool changed, relax(types, 0, body->outputs(), 0, size_t(numState)));
    if (!changed) break;
  }
  for (int64_t i = 0; i < numState; ++i) ctx.setOutputType(size_t(i), types[size_t(i)]);
  for (int64_t k = 0; k < numScanOut; ++k) {
    const Type& t = body->outputs()[size_t(numState + k)]->type();
    if (!t.isTensor()) return shapeError("Scan outputs must be tensors");
    const TensorType& tt = t.tensor();
    if (!tt.hasRank()) {
      setUnranked(ctx, size_t(numState + k), tt.dtype());
      continue;
    }
    KILN_ASSIGN(int64_t axis, normalizeAxis(outAxes[size_t(k)], tt.rank() + 1, "scan_output_axes"));
    Dims d = tt.dims();
    d.insert(d.begin() + axis, seqLen);
    setOut(ctx, size_t(numState + k), tt.dtype(), d);
  }
  return Status::ok();
}

}  // namespace

void registerControlFlowOps(OpRegistry& r) {
  r.add(SchemaBuilder("If").inputs(1, 1, {"cond"}).outputs(1, INT_MAX, {"outputs"})
            .requiredAttr("then_branch", AttrKind::Graph).requiredAttr("else_branch", AttrKind::Graph)
            .pattern(FusionPattern::Opaque).infer(inferIf)
            .doc("Runs then_branch or else_branch by a bool scalar; results are the branch's outputs.").build());
  r.add(SchemaBuilder("Loop").inputs(2, INT_MAX, {"M", "cond", "v_initial"}).outputs(1, INT_MAX, {"v_final_and_scan_outputs"}).requiredInputs(0)
            .requiredAttr("body", AttrKind::Graph).pattern(FusionPattern::Opaque).infer(inferLoop)
            .doc("Runs body up to M times while cond holds; loop-carried values and stacked scan outputs.").build());
  r.add(SchemaBuilder("Scan").inputs(1, INT_MAX, {"initial_state_and_scan_inputs"}).outputs(1, INT_MAX, {"final_state_and_scan_outputs"})
            .requiredAttr("body", AttrKind::Graph).requiredAttr("num_scan_inputs", AttrKind::Int)
            .optionalAttr("scan_input_axes", AttrKind::Ints).optionalAttr("scan_input_directions", AttrKind::Ints)
            .optionalAttr("scan_output_axes", AttrKind::Ints).optionalAttr("scan_output_directions", AttrKind::Ints)
            .pattern(FusionPattern::Opaque).infer(inferScan)
            .doc("Iterates body over slices of the scan inputs, carrying state; stacks scan outputs.").build());
}

}  // namespace kiln::ir
