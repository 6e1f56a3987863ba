//===- kiln/select/ArchitectureFeatures.h - What a model's graph is made of -*- C++ -*-===//
//
// The first half of architecture-aware pass selection (issue 7, the research
// in shared/seeds/001): features computed from the graph alone, before any
// pass runs, that tell the architecture classes apart. Counts cover the main
// graph and its subgraphs; constants are parameters, not nodes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kiln/ir/Graph.h"

namespace kiln::select {

/// The features:
/// - convolutions: dense (group 1), depthwise (group = input channels > 1),
///   other grouped, pointwise (1x1 kernels, group 1);
/// - residual adds: Adds of two computed tensors of the same static shape
///   (a skip connection joining its branch), those of rank 4 or 5 between feature
///   maps (2-D images, 3-D video volumes);
/// - attention blocks: a Softmax fed by a MatMul (or two-operand Einsum) of
///   two computed operands (through scaling, masking and casts) and feeding
///   another such product,
///   or an already fused attention op;
/// - layer norms: LayerNormalization ops or the ReduceMean pairs of an
///   unfused one; mobile activations: Clip (ReLU6), HardSwish, HardSigmoid;
/// - detection post-processing: NonMaxSuppression (or a fused NMS op);
///   multi-scale heads: a Concat of three or more reshaped per-scale outputs;
///   box heads: those joining per-scale predictions [N, boxes, k] along the
///   boxes axis (a single-shot detector's heads, also exported without NMS);
/// - layers (convolutions + MatMul/Gemm with a constant operand) and parameter bytes;
///   channels-last pointwise layers: MatMul/Gemm with a constant operand over a
///   rank-4 activation, a 1x1 convolution written as a fully connected layer on
///   NHWC feature maps (ConvNeXt's and Swin's MLPs).
struct ArchitectureFeatures {
  std::map<std::string, int64_t> opHistogram;  ///< qualified op type -> nodes (Constants excluded)
  int64_t nodes = 0, constants = 0;
  int64_t parameters = 0, parameterBytes = 0;  ///< elements and bytes of every constant
  int64_t convs = 0, depthwiseConvs = 0, groupedConvs = 0, pointwiseConvs = 0;
  int64_t denseMatmuls = 0;     ///< MatMul/Gemm with a constant operand (fully connected layers)
  int64_t channelsLastPointwise = 0;  ///< those of them over rank-4 activations (1x1 convs on NHWC maps)
  int64_t residualAdds = 0, featureMapResidualAdds = 0;
  int64_t attentionBlocks = 0;
  int64_t layerNorms = 0;
  int64_t mobileActivations = 0;
  int64_t nmsOps = 0;
  int64_t multiScaleHeads = 0;
  int64_t boxHeads = 0;  ///< multi-scale heads joining rank-3 predictions along axis 1

  int64_t layers() const { return convs + denseMatmuls; }
  /// Depthwise convolutions as a share of all convolutions (0 without convolutions).
  double depthwiseShare() const { return convs ? double(depthwiseConvs) / double(convs) : 0.0; }
  /// Convolutions (channels-last pointwise layers included) as a share of the layers.
  double convShare() const { return layers() ? double(convs + channelsLastPointwise) / double(layers()) : 0.0; }
};

ArchitectureFeatures computeFeatures(const ir::Graph& graph);

}  // namespace kiln::select
