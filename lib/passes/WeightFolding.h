//===- lib/passes/WeightFolding.h - Per-channel affine maps into weights -*- C++ -*-===//
//
// y = op(x) * scale[c] + shift[c] over output channel c equals op'(x) with
// weights scaled per channel and bias scale*b + shift, for Conv (channel =
// axis 1 of the result), Gemm and MatMul with a constant right operand
// (channel = last axis; MatMul has no bias, so only shift == 0 folds).
// simplify-inference uses it for BatchNormalization, forward-fold-scale-axis
// for Mul/Add by per-channel constants, alter-op-layout for the BatchNorm
// after a conv whose weights it packs (the scale applied to the packed
// copy: one write of the weights, not two). Weights are computed in double
// and rounded once to f32. Private to lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::passes {

/// Number of output channels when `node` is a Conv/Gemm/MatMul whose weights
/// (and bias, if any) are f32 constants and whose result has a static channel
/// dim; nullopt otherwise. `needBias`: the fold will add a shift.
std::optional<int64_t> foldableOutputChannels(const ir::Node& node, bool needBias);

/// Creates the op' described above before `node` and returns its result (the
/// caller replaces the value the affine map produced). `scale` and `shift`
/// have one entry per channel.
Expected<ir::Value*> foldAffineIntoWeights(ir::Node& node, const std::vector<double>& scale,
                                           const std::vector<double>& shift);

/// s and t of an inference BatchNormalization with f32 constant statistics
/// and no used mean/variance outputs (y = x * s + t per channel):
/// s = scale / sqrt(var + eps), t = B - mean * s; nullopt otherwise.
std::optional<std::pair<std::vector<double>, std::vector<double>>> inferenceBatchNormAffine(const ir::Node& n);

/// The bias of op' (above) and its name: scale * b + shift per channel, or
/// nullopt when `node` has no bias and every shift is 0.
std::optional<std::pair<Tensor, std::string>> foldedBias(const ir::Node& node, const std::vector<double>& scale,
                                                         const std::vector<double>& shift);

/// Per-channel values of a constant that broadcasts along channel axis `axis`
/// of a result of rank `rank` with `channels` channels (shape [C,1,1], [1,C,1,1],
/// [C] for the last axis, or a single value); nullopt when it is not such a
/// constant or not f32.
std::optional<std::vector<double>> perChannelValues(const ir::Value* constant, int64_t axis, int64_t rank,
                                                    int64_t channels);

}  // namespace kiln::passes
