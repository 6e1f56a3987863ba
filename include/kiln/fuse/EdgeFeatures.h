//===- kiln/fuse/EdgeFeatures.h - What the advantage model sees of an edge -*- C++ -*-===//
//
// The features of one fusion edge and its k-neighbourhood under a
// configuration (shared/seeds/004, section 3): the edge's kind, its
// producer's and consumer's roles and op classes, their tensor sizes, bytes
// and FLOPs, fan-in and fan-out, the groups the partition puts them in, and
// the decisions of the neighbouring edges. Sizes are log-scaled, and given
// both as they are and as shares of the graph's totals, so that a model
// trained on small graphs ranks the edges of large ones alike. The plan
// must be partitioned under the configuration (FusionEvaluator::planUnder).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"

namespace kiln::fuse {

/// The names of the features, in row order.
const std::vector<std::string>& edgeFeatureNames();

/// One row per edge of `plan`, in edge order; `radius` is the neighbourhood's k.
std::vector<std::vector<float>> edgeFeatures(const codegen::FusionPlan& plan, int radius);
/// The row of one edge (as edgeFeatures(plan, radius)[edge], without the others).
std::vector<float> edgeFeatures(const codegen::FusionPlan& plan, size_t edge, int radius);

/// The edges within `radius` hops of `edge` in `plan` (itself first); two
/// edges are one hop apart when they share a node.
std::vector<size_t> edgeNeighbourhood(const codegen::FusionPlan& plan, size_t edge, int radius);

/// One class number per edge of `plan`: edges of one class join the same
/// ops (op type, input and output types) by the same kind of edge, as the
/// repeated blocks of a network do, so a decision that pays on one is
/// likely to pay on the others. Numbers count from 0 in first-edge order.
std::vector<size_t> edgeClasses(const codegen::FusionPlan& plan);

}  // namespace kiln::fuse
