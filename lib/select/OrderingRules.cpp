//===- lib/select/OrderingRules.cpp - The arch strategy's ordering rules ---===//
//
// One table: pass, rank, why. The ranks follow the constraints already stated
// in lib/passes/OptLevels.cpp and add those of the passes no opt level runs
// (recognition before canonicalisation, layout before fusion, fusion last).
// One rule depends on its company: simplify-inference moves after
// alter-op-layout when both run and the model has convs to block, since the
// layout pass folds each conv's BatchNorm into the weights it packs (one
// write of them, not two).
//
//===----------------------------------------------------------------------===//
#include "kiln/select/OrderingRules.h"

#include <algorithm>

#include "kiln/passes/Pipeline.h"

namespace kiln::select {

const std::vector<OrderingRule>& orderingRules() {
  static const std::vector<OrderingRule> rules = {
      {"defuse-ops", 0, "groups of a model saved after fusion are inlined first, so every later pass sees plain ops"},
      {"simplify-inference", 10, "BatchNorm statistics become weights before folding, so folds see plain Conv/Gemm weights; 83 when alter-op-layout runs too and has convs to block: that pass folds each conv's BatchNorm into the weights as it packs them (ResNet-50 raw: 100 MB written once, not twice), and simplify-inference then takes Dropout and the BatchNorms left"},
      {"combine-parallel-dense", 15, "parallel dense layers (Q/K/V) combine before fold-constant: weights a raw export stores transposed are then transposed in the one write that joins them (BERT-base: 85 MB written once, not twice)"},
      {"simplify-fc-transpose", 17, "dense layers read their [N, K] weights as stored (kiln::Dense) before fold-constant would write every Transpose(W) out (BERT-base raw: 340 MB) and canonicalize-ops a Gemm's; after combine-parallel-dense, which joins Q/K/V through those transposes"},
      {"fold-constant", 20, "constants next, so the algebraic rules see folded operands"},
      {"lower-einsum", 22, "matrix-product Einsums become MatMuls before simplify-expr merges their transposes and attention recognition looks for MatMuls"},
      {"lower-conv-transpose", 23, "ConvTranspose becomes Conv while its weights are plain constants, before simplify-expr merges the reshapes around it and the scale folds look at convolutions"},
      {"dynamic-to-static", 25, "shape arithmetic is constant only once fold-constant made the weights final"},
      {"lower-recurrent", 26, "recurrent layers unroll into MatMuls and element-wise ops once dynamic-to-static made their shapes static and inlined the Ifs on shapes around them, before simplify-expr merges the reshapes and slices they leave"},
      {"lower-narrow-conv", 27, "convolutions with few output positions become a window Gather and a MatMul once dynamic-to-static made their shapes static, before eliminate-common-subexpr merges the Gathers of convolutions over one input and fold-explicit-padding, the scale folds and alter-op-layout look at convolutions"},
      {"simplify-expr", 30, "x*1, x+0 and reshape chains on folded operands"},
      {"eliminate-common-subexpr", 35, "identical constants and the ops over them merge after folding"},
      {"fold-explicit-padding", 40, "Pad must merge into convolutions before scale folding looks at their operands"},
      {"forward-fold-scale-axis", 45, "folds a Gemm's scaling into its bias, which must happen before canonicalize-ops turns Gemm into MatMul"},
      {"recognize-layer-norm", 50, "matched on the exported ops, before canonicalize-ops rewrites constant Sub/Div forms"},
      {"recognize-gelu", 51, "matched on the exported ops, next to layer norms (both are elementwise epilogues for matmuls)"},
      {"fuse-attention", 52, "after layer norm and GELU recognition, so the attention block between them is plain"},
      {"combine-parallel-conv2d", 63, "parallel convolutions combine after BatchNorm and scale folding"},
      {"batching-ops", 64, "batches what the combine passes left"},
      {"canonicalize-ops", 70, "Gemm/Sub/Div become MatMul+Add/Add/Mul after every pass that matches the exported forms"},
      {"canonicalize-cast", 72, "cast cleanup after the rewrites that remove identities between casts"},
      {"fast-math", 75, "approximations replace the ops the rewrites above have settled"},
      {"convert-layout", 80, "layout before fusion (the research: FuseOps after AlterOpLayout fuses better)"},
      {"alter-op-layout", 82, "weight pre-transformation after the layout is chosen"},
      {"to-mixed-precision", 85, "precision last among rewrites: every pass above works on f32"},
      {"fuse-ops", 90, "fusion sees the final ops and layout"},
      {"merge-composite", 92, "composites are merged from what fusion left"},
      {"dead-code-elimination", 100, "last: any rewrite may orphan nodes"},
  };
  return rules;
}

bool hasOrderingRule(const std::string& pass) {
  for (const OrderingRule& r : orderingRules())
    if (r.pass == pass) return true;
  return false;
}

int orderingRank(const std::string& pass) {
  for (const OrderingRule& r : orderingRules())
    if (r.pass == pass) return r.rank;
  return kUnruledRank;
}

int orderingRankAmong(const std::string& pass, const std::vector<const passes::PassInfo*>& pipeline,
                      const ir::Graph* graph) {
  if (pass != "simplify-inference") return orderingRank(pass);
  auto layout = std::find_if(pipeline.begin(), pipeline.end(),
                             [](const passes::PassInfo* p) { return p->name == "alter-op-layout"; });
  // Without convs to block the layout pass folds nothing, and the passes ranked between want the BatchNorms folded.
  const bool blocksConvolutions =
      layout != pipeline.end() && (!graph || passes::applicableWithDefaults(**layout, *graph));
  return blocksConvolutions ? kSimplifyInferenceAfterLayoutRank : orderingRank(pass);
}

std::vector<const passes::PassInfo*> orderByRules(std::vector<const passes::PassInfo*> passes, const ir::Graph* graph) {
  std::vector<std::pair<int, const passes::PassInfo*>> ranked;
  for (const passes::PassInfo* p : passes) ranked.emplace_back(orderingRankAmong(p->name, passes, graph), p);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < ranked.size(); ++i) passes[i] = ranked[i].second;
  return passes;
}

}  // namespace kiln::select
