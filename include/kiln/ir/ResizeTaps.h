//===- kiln/ir/ResizeTaps.h - Resize sampling positions and weights -*- C++ -*-===//
//
// What a Resize reads for each output coordinate of one dim, following the
// ONNX reference: the coordinate maps back by coordinate_transformation_mode,
// then becomes 1 (nearest), 2 (linear) or 4 (cubic) input indices with
// weights (edges clamp, exclude_outside renormalises, tf_crop_and_resize
// marks coordinates outside the image), or into the wider antialiased
// filters. Shared by the interpreter's kernel, the code generator, which
// turns the taps into constant tables, and the importer's antialias lowering.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

struct ResizeTaps {
  bool outside = false;  ///< tf_crop_and_resize: use the extrapolation value
  std::vector<std::pair<int64_t, double>> taps;  ///< (input index, weight)
};

/// The attributes that decide a Resize's taps (a Resize node's, or an
/// importer's before the node exists).
struct ResizeSampling {
  std::string coordinateMode = "half_pixel", mode = "nearest", nearestMode = "round_prefer_floor";
  bool excludeOutside = false;
  /// Resize-18's antialias: linear and cubic filters that downsample widen
  /// by 1 / scale (the importer lowers such Resizes; opset 17 cannot spell them).
  bool antialias = false;
  double cubicCoeffA = -0.75;
  static ResizeSampling of(const Node& n);
};

/// Taps of every output coordinate of one dim (input length `in`, output
/// length `out`, scale and ROI for that dim).
Expected<std::vector<ResizeTaps>> resizeTaps(const ResizeSampling& s, int64_t in, int64_t out, double scale,
                                             double roiStart, double roiEnd);
/// The same, from a Resize node's attributes.
Expected<std::vector<ResizeTaps>> resizeTaps(const Node& n, int64_t in, int64_t out, double scale, double roiStart,
                                             double roiEnd);

/// The output length of a dim of length `in` resized by `scale` (floored,
/// with a little slack for scales stored in f32).
int64_t resizedLength(int64_t in, double scale);

/// Whether Resize `n` takes its output dims from sizes rather than scales:
/// sizes is given and not empty. `knownSizes` is its value where the caller
/// knows it (null otherwise: then a given sizes counts).
bool resizesBySizes(const Node& n, const Tensor* knownSizes);

/// Keys' cubic convolution weights of the 4 taps around fraction r (coefficient a).
std::array<double, 4> cubicCoeffs(double r, double a);

}  // namespace kiln::ir
