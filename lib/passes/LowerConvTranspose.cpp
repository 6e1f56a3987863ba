//===- lib/passes/LowerConvTranspose.cpp - lower-conv-transpose -------------===//
//
// Rewrites a ConvTranspose with constant weights as a Conv, which has kernel
// templates on every target (ConvTranspose has none: it runs as a host step on
// the reference kernel):
//  - kernel == stride, no padding, dilation 1, group 1 (the 2x upsampling of
//    U-Nets and DBNet's detection head): the windows do not overlap, so the
//    result is a 1x1 Conv to Cout * prod(kernel) channels whose channels are
//    then moved into space,
//      Conv(x, W2, B2) -> Reshape [N, Cout, k1.., L1..] -> Transpose
//        [N, Cout, L1, k1, L2, k2, ..] -> Reshape [N, Cout, L1 k1, L2 k2, ..]
//    with W2[co * prod(k) + kidx, ci] = W[ci, co, kidx] and the bias repeated;
//  - otherwise: the input upsampled with stride - 1 zeros after each element
//    (Reshape to [N, C, L1, 1, ..], Pad the unit axes, Reshape back), then a
//    stride-1 Conv with the kernel flipped and its channel axes swapped per
//    group, padded (or the upsampled input sliced) so the result has the
//    ConvTranspose's geometry (its pads, output_padding, output_shape or
//    auto_pad, from ShapeUtils).
// Exact up to the summation order.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <optional>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Geometry {
  ir::WindowGeometry window;
  Dims in;      ///< input spatial dims
  int64_t batch = 0, cin = 0, cout = 0, group = 1;
  const Tensor* weight = nullptr;
  bool nonOverlapping() const {
    for (size_t i = 0; i < in.size(); ++i)
      if (window.kernel[i] != window.strides[i] || window.dilations[i] != 1 || window.padsBegin[i] != 0 ||
          window.padsEnd[i] != 0 || window.output[i] != in[i] * window.strides[i])
        return false;
    return group == 1;
  }
};

std::optional<Geometry> geometryOf(const ir::Node& n) {
  if (!isOp(&n, ir::Op::ConvTranspose) || n.numInputs() < 2) return std::nullopt;
  const ir::Value* x = n.input(0);
  if (!x->type().isTensor() || !x->tensorType().isStatic() || x->tensorType().rank() < 3) return std::nullopt;
  if (!n.output(0)->type().isTensor() || !n.output(0)->tensorType().isStatic()) return std::nullopt;
  Geometry g;
  g.weight = constantValue(n.input(1));
  if (!g.weight || g.weight->rank() != x->tensorType().rank()) return std::nullopt;
  if (n.numInputs() > 2 && n.input(2) && !constantValue(n.input(2))) return std::nullopt;
  const Dims& xd = x->tensorType().dims();
  g.batch = xd[0];
  g.cin = xd[1];
  g.in.assign(xd.begin() + 2, xd.end());
  g.group = n.getInt("group");
  g.cout = g.weight->dim(1) * g.group;
  Dims kernel(g.weight->dims().begin() + 2, g.weight->dims().end());
  auto window = ir::computeConvTransposeGeometry(n, g.in, kernel);
  if (!window.isOk()) return std::nullopt;
  g.window = *window;
  return g;
}

std::vector<int64_t> withLead(std::vector<int64_t> lead, const Dims& rest) {
  lead.insert(lead.end(), rest.begin(), rest.end());
  return lead;
}

int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

/// Copies element `from` of `src` to element `to` of `dst` (same dtype, any type).
void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  size_t size = dtypeSize(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.mutableRawData()) + size_t(to) * size,
              static_cast<const uint8_t*>(src.rawData()) + size_t(from) * size, size);
}

/// W [Cin, Cout, k..] as the 1x1 Conv weight [Cout * prod(k), Cin, 1..].
Tensor pointwiseWeight(const Tensor& w) {
  int64_t cin = w.dim(0), cout = w.dim(1), taps = w.numElements() / (cin * cout);
  Dims dims = {cout * taps, cin};
  dims.resize(size_t(w.rank()), 1);
  Tensor out = Tensor::forWrite(w.dtype(), dims);
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t co = 0; co < cout; ++co)
      for (int64_t t = 0; t < taps; ++t) copyElement(w, (ci * cout + co) * taps + t, out, (co * taps + t) * cin + ci);
  return out;
}

/// Each bias entry repeated `taps` times: the pointwise Conv's bias.
Tensor repeatedBias(const Tensor& b, int64_t taps) {
  Tensor out = Tensor::forWrite(b.dtype(), {b.numElements() * taps});
  for (int64_t c = 0; c < b.numElements(); ++c)
    for (int64_t t = 0; t < taps; ++t) copyElement(b, c, out, c * taps + t);
  return out;
}

/// W [Cin, Cout / g, k..] as the equivalent forward Conv's weight
/// [Cout, Cin / g, k..]: channel axes swapped within each group, taps flipped.
Tensor flippedWeight(const Tensor& w, int64_t group) {
  int64_t cin = w.dim(0), coutG = w.dim(1), cinG = cin / group, taps = w.numElements() / (cin * coutG);
  Dims dims = w.dims();
  dims[0] = coutG * group;
  dims[1] = cinG;
  Tensor out = Tensor::forWrite(w.dtype(), dims);
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t ci = 0; ci < cinG; ++ci)
      for (int64_t co = 0; co < coutG; ++co)
        for (int64_t t = 0; t < taps; ++t)
          copyElement(w, ((gi * cinG + ci) * coutG + co) * taps + t, out,
                      ((gi * coutG + co) * cinG + ci) * taps + (taps - 1 - t));
  return out;
}

Status lowerNonOverlapping(ir::Node* n, const Geometry& geo) {
  NodeBuilder b(n);
  const Dims kernel = geo.window.kernel;
  size_t r = geo.in.size();
  int64_t taps = product(kernel);
  std::vector<ir::Value*> convInputs = {n->input(0), b.constant(pointwiseWeight(*geo.weight), "_pointwise_weight")};
  if (ir::Value* bias = n->numInputs() > 2 ? n->input(2) : nullptr) convInputs.push_back(b.constant(repeatedBias(*constantValue(bias), taps), "_pointwise_bias"));
  KILN_ASSIGN(ir::Value* y, b.node("Conv", convInputs, {{"kernel_shape", std::vector<int64_t>(r, 1)}}, "_pointwise"));
  KILN_ASSIGN(ir::Value* split, b.reshape(y, withLead(withLead({geo.batch, geo.cout}, kernel), geo.in), "_taps"));
  std::vector<int64_t> perm = {0, 1};
  Dims out;
  for (size_t i = 0; i < r; ++i) {
    perm.push_back(int64_t(2 + r + i));  // L_i
    perm.push_back(int64_t(2 + i));      // k_i
    out.push_back(geo.in[i] * kernel[i]);
  }
  KILN_ASSIGN(ir::Value* spaced, b.node("Transpose", {split}, {{"perm", perm}}, "_to_space"));
  KILN_ASSIGN(ir::Value* result, b.reshape(spaced, withLead({geo.batch, geo.cout}, out), "_upsampled"));
  return replaceNode(n, result, "lower-conv-transpose");
}

/// x with stride - 1 zeros after each element of each spatial axis ([N, C, L_i * s_i]).
Expected<ir::Value*> zeroUpsampled(NodeBuilder& b, ir::Value* x, const Geometry& geo) {
  size_t r = geo.in.size();
  std::vector<int64_t> unit = {geo.batch, geo.cin}, pads(2 * (2 + 2 * r), 0), up = {geo.batch, geo.cin};
  for (size_t i = 0; i < r; ++i) {
    unit.push_back(geo.in[i]);
    unit.push_back(1);
    pads[(2 + 2 * r) + 2 + 2 * i + 1] = geo.window.strides[i] - 1;  // end of the unit axis after L_i
    up.push_back(geo.in[i] * geo.window.strides[i]);
  }
  KILN_ASSIGN(ir::Value* u, b.reshape(x, unit, "_unit_axes"));
  KILN_ASSIGN(ir::Value* p, b.node("Pad", {u, b.ints(pads, "_zero_pads")}, {}, "_zeros"));
  return b.reshape(p, up, "_zero_upsampled");
}

Status lowerGeneral(ir::Node* n, const Geometry& geo) {
  NodeBuilder b(n);
  size_t r = geo.in.size();
  const ir::WindowGeometry& w = geo.window;
  ir::Value* x = n->input(0);
  bool strided = false;
  for (int64_t s : w.strides) strided |= s != 1;
  if (strided) {
    KILN_ASSIGN(x, zeroUpsampled(b, x, geo));
  }
  // Conv pads around the upsampled input (its length L * s holds s - 1 trailing zeros).
  std::vector<int64_t> pads(2 * r), starts, ends, axes;
  bool crop = false;
  for (size_t i = 0; i < r; ++i) {
    int64_t span = (w.kernel[i] - 1) * w.dilations[i];
    int64_t len = geo.in[i] * w.strides[i];
    int64_t begin = span - w.padsBegin[i];
    int64_t end = w.output[i] + span - begin - len;  // the conv's output is len + begin + end - span
    starts.push_back(std::max<int64_t>(0, -begin));
    ends.push_back(len + std::min<int64_t>(0, end));
    axes.push_back(int64_t(2 + i));
    crop |= begin < 0 || end < 0;
    pads[i] = std::max<int64_t>(0, begin);
    pads[i + r] = std::max<int64_t>(0, end);
  }
  if (crop) {
    KILN_ASSIGN(x, b.node("Slice", {x, b.ints(starts, "_crop_starts"), b.ints(ends, "_crop_ends"), b.ints(axes, "_crop_axes")},
                          {}, "_cropped"));
  }
  std::vector<ir::Value*> convInputs = {x, b.constant(flippedWeight(*geo.weight, geo.group), "_flipped_weight")};
  if (ir::Value* bias = n->numInputs() > 2 ? n->input(2) : nullptr) convInputs.push_back(bias);
  KILN_ASSIGN(ir::Value* y, b.node("Conv", convInputs,
                                   {{"kernel_shape", w.kernel}, {"pads", pads}, {"dilations", w.dilations},
                                    {"group", geo.group}},
                                   "_as_conv"));
  return replaceNode(n, y, "lower-conv-transpose");
}

class LowerConvTranspose final : public MatchingPattern<Geometry> {
 public:
  std::optional<Geometry> match(ir::Node& n) const override { return geometryOf(n); }
  Status apply(ir::Node& n, const Geometry& geo) const override {
    return geo.nonOverlapping() ? lowerNonOverlapping(&n, geo) : lowerGeneral(&n, geo);
  }
};

}  // namespace

PassInfo lowerConvTransposePass() {
  PassInfo p;
  p.name = "lower-conv-transpose";
  p.summary = "Rewrite ConvTranspose with constant weights as Conv";
  p.description =
      "Turns a ConvTranspose with constant weights and static shapes into ops with kernel templates: a 1x1 Conv "
      "whose channels move into space when kernel equals stride (no padding, dilation 1, group 1), else a "
      "stride-1 Conv with the flipped kernel over the input upsampled with zeros, padded or cropped to the "
      "ConvTranspose's output geometry. Exact up to the summation order (1e-5).";
  // Decoders and detection heads of any class upsample with ConvTranspose; a
  // model without one prunes the pass as not applicable.
  p.classes = {"BL", "RN", "MN", "SSD", "BR"};
  p.tolerance = 1e-5;
  p.optLevel = 1;
  setPatterns(p, {std::make_shared<LowerConvTranspose>()});
  return p;
}

}  // namespace kiln::passes
