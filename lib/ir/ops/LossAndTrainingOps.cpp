//===- lib/ir/ops/LossAndTrainingOps.cpp - Loss functions and optimisers ---===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, and the optimiser
// steps of the ai.onnx.preview.training domain (Adagrad, Adam, Momentum).
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

inline const char* kTrainingDomain = "ai.onnx.preview.training";

Status inferLoss(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType target, ctx.inputTensor(1));
  if (target.dtype() != DType::I32 && target.dtype() != DType::I64)
    return shapeError("target must be int32 or int64, got " + target.str());
  const std::string& red = ctx.node().getString("reduction");
  if (red != "none" && red != "sum" && red != "mean") return attrError("reduction must be none, sum or mean");
  if (x.hasRank() && x.rank() < 2) return shapeError("input must be [N, C, ...], got " + x.str());
  if (x.hasRank() && target.hasRank() && target.rank() != x.rank() - 1)
    return shapeError("target " + target.str() + " must have rank " + std::to_string(x.rank() - 1));
  if (red == "none") ctx.setOutputType(0, target.withDType(x.dtype()));
  else setOut(ctx, 0, x.dtype(), {});
  if (ctx.numOutputs() > 1) ctx.setOutputType(1, x);
  return Status::ok();
}

/// Optimiser steps: result i has the type of the i-th optimised input.
Status inferOptimizer(InferenceContext& ctx) {
  const std::string& op = ctx.node().opType();
  size_t perTensorIn = op == "Adam" ? 4 : 3, perTensorOut = op == "Adagrad" || op == "Momentum" ? 2 : 3;
  if (ctx.numInputs() < 2 || (ctx.numInputs() - 2) % perTensorIn != 0)
    return shapeError(op + " needs R, T and " + std::to_string(perTensorIn) + " inputs per optimised tensor");
  size_t n = (ctx.numInputs() - 2) / perTensorIn;
  if (ctx.numOutputs() != n * perTensorOut)
    return shapeError(op + " with " + std::to_string(n) + " tensors must have " + std::to_string(n * perTensorOut) +
                      " results");
  for (size_t k = 0; k < perTensorOut; ++k) {
    // Results: new X, then (Momentum/Adagrad) new V or H, (Adam) new V and H.
    size_t inGroup = k == 0 ? 0 : k + 1;
    for (size_t i = 0; i < n; ++i) ctx.setOutputType(k * n + i, ctx.inputType(2 + inGroup * n + i));
  }
  return Status::ok();
}

}  // namespace

void registerLossAndTrainingOps(OpRegistry& r) {
  r.add(SchemaBuilder("NegativeLogLikelihoodLoss").inputs(2, 3, {"input", "target", "weight"}).outputs(1, 1, {"loss"})
            .optionalAttr("ignore_index", AttrKind::Int).attr("reduction", "mean")
            .pattern(FusionPattern::Opaque).infer(inferLoss)
            .doc("-input[n, target[n], ...] weighted, reduced by none, sum or (weighted) mean.").build());
  r.add(SchemaBuilder("SoftmaxCrossEntropyLoss").inputs(2, 3, {"scores", "labels", "weights"})
            .outputs(1, 2, {"output", "log_prob"}).optionalAttr("ignore_index", AttrKind::Int).attr("reduction", "mean")
            .pattern(FusionPattern::Opaque).infer(inferLoss)
            .doc("NegativeLogLikelihoodLoss of LogSoftmax(scores, axis=1); optionally returns the log-probabilities.")
            .build());
  r.add(SchemaBuilder("Adagrad", kTrainingDomain).inputs(2, INT_MAX, {"R", "T", "inputs"}).outputs(1, INT_MAX, {"outputs"})
            .attr("decay_factor", 0.0f).attr("epsilon", 1e-6f).attr("norm_coefficient", 0.0f)
            .pattern(FusionPattern::Opaque).infer(inferOptimizer)
            .doc("One Adagrad step for each (X, G, H) triple.").build());
  r.add(SchemaBuilder("Adam", kTrainingDomain).inputs(2, INT_MAX, {"R", "T", "inputs"}).outputs(1, INT_MAX, {"outputs"})
            .attr("alpha", 0.9f).attr("beta", 0.999f).attr("epsilon", 1e-6f).attr("norm_coefficient", 0.0f)
            .attr("norm_coefficient_post", 0.0f).pattern(FusionPattern::Opaque).infer(inferOptimizer)
            .doc("One Adam step for each (X, G, V, H) quadruple.").build());
  r.add(SchemaBuilder("Momentum", kTrainingDomain).inputs(2, INT_MAX, {"R", "T", "inputs"}).outputs(1, INT_MAX, {"outputs"})
            .requiredAttr("alpha", AttrKind::Float).requiredAttr("beta", AttrKind::Float)
            .requiredAttr("mode", AttrKind::String).requiredAttr("norm_coefficient", AttrKind::Float)
            .pattern(FusionPattern::Opaque).infer(inferOptimizer)
            .doc("One SGD-with-momentum step (standard or Nesterov) for each (X, G, V) triple.").build());
}

}  // namespace kiln::ir
