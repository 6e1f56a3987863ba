//===- kiln/ir/ResizeTaps.h - Resize sampling positions and weights -*- C++ -*-===//
//
// What a Resize reads for each output coordinate of one dim, following the
// ONNX reference: the coordinate maps back by coordinate_transformation_mode,
// then becomes 1 (nearest), 2 (linear) or 4 (cubic) input indices with
// weights (edges clamp, exclude_outside renormalises, tf_crop_and_resize
// marks coordinates outside the image). Shared by the interpreter's kernel
// and the code generator, which turns the taps into constant tables.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

struct ResizeTaps {
  bool outside = false;  ///< tf_crop_and_resize: use the extrapolation value
  std::vector<std::pair<int64_t, double>> taps;  ///< (input index, weight)
};

/// Taps of every output coordinate of one dim (input length `in`, output
/// length `out`, scale and ROI for that dim), from the node's attributes.
Expected<std::vector<ResizeTaps>> resizeTaps(const Node& n, int64_t in, int64_t out, double scale, double roiStart,
                                             double roiEnd);

/// Keys' cubic convolution weights of the 4 taps around fraction r (coefficient a).
std::array<double, 4> cubicCoeffs(double r, double a);

}  // namespace kiln::ir
