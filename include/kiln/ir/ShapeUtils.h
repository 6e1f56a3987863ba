//===- kiln/ir/ShapeUtils.h - Shape arithmetic shared by inference and kernels -*- C++ -*-===//
//
// Broadcasting, axis normalisation and convolution/pooling geometry. Static
// inference and the interpreter's kernels call the same functions, so a shape
// is computed one way everywhere. Unknown dims (kUnknownDim) propagate.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Type.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

class Node;

/// Largest tensor rank kiln accepts (far beyond any real model; it bounds the
/// work a malformed model can ask for when a rank comes from data).
inline constexpr int64_t kMaxRank = 64;
/// An error when `rank` exceeds kMaxRank.
Status checkRank(int64_t rank, const std::string& what);

/// Numpy-style multidirectional broadcast of two shapes.
Expected<Dims> broadcastDims(const Dims& a, const Dims& b);
/// `axis` in [-rank, rank) mapped to [0, rank); an error naming `what` otherwise.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");
/// Normalises and checks a list of axes (no duplicates).
Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                             const char* what = "axes");

/// Resolved geometry of a convolution or pooling window over the spatial dims.
struct WindowGeometry {
  Dims kernel;     ///< per spatial dim
  Dims strides;
  Dims dilations;
  Dims padsBegin;
  Dims padsEnd;
  Dims output;     ///< output spatial dims (kUnknownDim if the input dim is unknown)
};

/// Computes window geometry from a Conv/Pool node's attributes (auto_pad, pads,
/// strides, dilations, ceil_mode) for the given input spatial dims and kernel.
Expected<WindowGeometry> computeWindowGeometry(const Node& node, const Dims& inputSpatial,
                                               const Dims& kernel, bool ceilMode);

/// Geometry of a ConvTranspose: pads resolved (from pads, auto_pad or
/// output_shape) and output spatial dims.
Expected<WindowGeometry> computeConvTransposeGeometry(const Node& node, const Dims& inputSpatial,
                                                      const Dims& kernel);

/// Result dims of numpy matmul (1-D operands promoted, batch dims broadcast).
Expected<Dims> matmulDims(const Dims& a, const Dims& b);

/// A parsed Einsum equation with ellipses expanded to per-operand labels.
struct EinsumSpec {
  std::vector<std::string> inputs;  ///< one label string per operand
  std::string output;
};
/// Parses `equation` for operands of the given ranks ("...": broadcast dims, given
/// labels '0'.. '9' internally); derives the implicit output when there is no "->".
Expected<EinsumSpec> parseEinsum(const std::string& equation, const std::vector<int64_t>& ranks);
/// Output dims of an einsum over operands with the given dims.
Expected<Dims> einsumDims(const EinsumSpec& spec, const std::vector<Dims>& inputs);

/// One dim of a resolved Slice: elements start, start+step, ... (count of them).
struct SliceDim {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};
/// Resolves ONNX Slice operands (clamping as the spec says) for input dims `in`
/// (all known). Dims not named in `axes` are taken whole.
Expected<std::vector<SliceDim>> computeSlice(const Dims& in, const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends,
                                             const std::vector<int64_t>& axes,
                                             const std::vector<int64_t>& steps);

/// Values of a small integer tensor as int64 (shape operands). Error if the tensor
/// is not integer-typed or not 0-D/1-D.
Expected<std::vector<int64_t>> shapeOperandValues(const Tensor& t, const char* what);

/// Largest tensor (in elements) whose value static inference propagates.
inline constexpr int64_t kMaxPropagatedElements = 4096;

/// Typed error helpers for inference functions.
Error shapeError(const std::string& message);
Error attrError(const std::string& message);

}  // namespace kiln::ir
