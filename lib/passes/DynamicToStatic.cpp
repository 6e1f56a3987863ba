//===- lib/passes/DynamicToStatic.cpp - dynamic-to-static -------------------===//
//
// Exporters compute shapes at run time: Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape chains, even when every dim is known. This pass replaces Shape
// (when the dims it reads are known) and Size of static values by constants, folds the chains that
// become constant (with fold-constant's evaluator), and re-infers types so the
// ops at the end of the chains get static result types; it repeats until
// nothing more becomes static. Exact. With input dims bound (`--shape`), a
// model with symbolic dims becomes fully static.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "ConstantEvaluation.h"
#include "RewriteUtils.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// The constant a Shape or Size node computes, when the dims it reads are known.
std::optional<Tensor> staticShapeValue(const ir::Node& n) {
  bool shape = isOp(&n, ir::Op::Shape), size = isOp(&n, ir::Op::Size);
  if ((!shape && !size) || !n.input(0)->type().isTensor() || !n.input(0)->tensorType().hasRank()) return std::nullopt;
  const Dims& dims = n.input(0)->tensorType().dims();
  if (size) {
    if (!n.input(0)->tensorType().isStatic()) return std::nullopt;
    return Tensor::scalar<int64_t>(numElements(dims));
  }
  int64_t rank = int64_t(dims.size());
  auto clampAxis = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t(0), rank); };
  int64_t start = clampAxis(n.hasAttr("start") ? n.getInt("start") : 0);
  int64_t end = clampAxis(n.hasAttr("end") ? n.getInt("end") : rank);
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  for (int64_t d : out)
    if (d < 0) return std::nullopt;  // an unknown dim in the range read
  return Tensor::fromVector<int64_t>({int64_t(out.size())}, out);
}

bool replaceShapes(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* n : g.nodes()) {
    for (ir::Graph* sub : n->subgraphs()) changed |= replaceShapes(*sub);
    std::optional<Tensor> value = staticShapeValue(*n);
    if (!value) continue;
    replaceValue(n->output(0), makeConstant(g, std::move(*value), n->output(0)->name() + "_static", n));
    eraseWithDeadProducers(n);
    changed = true;
  }
  return changed;
}

Expected<bool> makeStatic(ir::Graph& g) {
  bool changed = false;
  for (int round = 0; round < 16; ++round) {
    bool c = replaceShapes(g);
    c |= foldConstants(g);
    if (!c) break;
    changed = true;
    if (Status s = ir::inferTypes(g); !s.isOk())
      return Error(ErrorCode::Internal, "types after dynamic-to-static: " + s.error().message());
  }
  return changed;
}

}  // namespace

PassInfo dynamicToStaticPass() {
  PassInfo p;
  p.name = "dynamic-to-static";
  p.summary = "Turn run-time shape computations on static shapes into constants";
  p.description =
      "Replaces Shape and Size of statically shaped values by constants, folds the Gather/Concat/Unsqueeze/"
      "arithmetic chains that become constant, re-infers types so Reshape/Expand/... results become static, "
      "and repeats until nothing changes. Exact.";
  p.classes = {"BL", "AD", "SSD", "BR"};  // Table 4: DynamicToStatic is AD; kiln also offers it to SSD and BR; in -O3 (BL)
  p.optLevel = 2;
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return anyNode(g, [](const ir::Node& n) { return staticShapeValue(n).has_value(); }); };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return makeStatic(g); };
  return p;
}

}  // namespace kiln::passes
