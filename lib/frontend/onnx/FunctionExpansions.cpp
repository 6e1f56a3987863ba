//===- lib/frontend/onnx/FunctionExpansions.cpp - Newer ops as opset-17 ops -===//
//
// Ops that ONNX added from opset 18 on and defines by a function body, written
// at import as the opset-17 ops of that body, so that kiln's passes see the
// patterns they already recognise (recognize-gelu fuses the erf form back into
// one kernel, layer-norm-like reductions fuse as usual):
//   Mish(x)            = x * tanh(softplus(x))
//   Gelu(x)            = x * (1 + erf(x / sqrt 2)) * 0.5, or its tanh form
//   Swish(x; alpha)    = x * sigmoid(alpha x)
//   RMSNormalization   = x / sqrt(mean(x^2 over axis..) + eps) * scale
//   GroupNormalization = mean and variance over [N, G, -1], then the per-group
//                        (18) or per-channel (21) scale and bias
//   CenterCropPad      = Slice and Pad around the centre (static shapes)
//   AffineGrid         = the constant base grid of `size` times theta transposed
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace {

/// The op's first input (the schema check comes after expansion).
Expected<ir::Value*> firstInput(const NodeDraft& d) {
  if (d.inputs.empty() || !d.inputs[0]) return Error(ErrorCode::BadAttribute, d.opType + " needs an input");
  return d.inputs[0];
}

/// Turns the draft into the binary op `op`(a, c), the expansion's last node.
Status finishAs(NodeDraft& d, const char* op, ir::Value* a, ir::Value* c) {
  becomeNode(d, op, {a, c}, {});
  return Status::ok();
}

/// The type the statistics are computed in: f32 for narrower inputs when stash_type is 1.
DType stashDType(DType dt, int64_t stash) { return stash == 1 && dt != DType::F64 ? DType::F32 : dt; }

}  // namespace

Expected<ir::Value*> scalar(DraftBuilder& b, DType dt, double v) { return b.constant(scalarOf(dt, v)); }

Expected<ir::Value*> int64Constant(DraftBuilder& b, const std::vector<int64_t>& v) {
  return b.constant(Tensor::fromVector<int64_t>({int64_t(v.size())}, v));
}

Expected<ir::Value*> castIfNeeded(DraftBuilder& b, ir::Value* x, DType from, DType to) {
  if (from == to) return x;
  return b.node("Cast", {x}, {{"to", ir::Attribute(int64_t(onnxDTypeCode(to)))}});
}

Status expandMish(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(ir::Value* x, firstInput(d));
  KILN_ASSIGN(ir::Value* sp, b.node("Softplus", {x}, {}));
  KILN_ASSIGN(ir::Value* th, b.node("Tanh", {sp}, {}));
  return finishAs(d, "Mul", x, th);
}

Expected<ir::Value*> buildGelu(DraftBuilder& b, ir::Value* x, DType dt, bool tanhForm) {
  KILN_ASSIGN(ir::Value* one, scalar(b, dt, 1.0));
  KILN_ASSIGN(ir::Value* half, scalar(b, dt, 0.5));
  ir::Value* inner = nullptr;
  if (!tanhForm) {
    KILN_ASSIGN(ir::Value* sqrt2, scalar(b, dt, std::sqrt(2.0)));
    KILN_ASSIGN(ir::Value* scaled, b.node("Div", {x, sqrt2}, {}));
    KILN_ASSIGN(inner, b.node("Erf", {scaled}, {}));
  } else {
    KILN_ASSIGN(ir::Value* x2, b.node("Mul", {x, x}, {}));
    KILN_ASSIGN(ir::Value* x3, b.node("Mul", {x2, x}, {}));
    KILN_ASSIGN(ir::Value* k, scalar(b, dt, 0.044715));
    KILN_ASSIGN(ir::Value* kx3, b.node("Mul", {x3, k}, {}));
    KILN_ASSIGN(ir::Value* sum, b.node("Add", {x, kx3}, {}));
    KILN_ASSIGN(ir::Value* c, scalar(b, dt, std::sqrt(2.0 / M_PI)));
    KILN_ASSIGN(ir::Value* arg, b.node("Mul", {sum, c}, {}));
    KILN_ASSIGN(inner, b.node("Tanh", {arg}, {}));
  }
  KILN_ASSIGN(ir::Value* plus1, b.node("Add", {inner, one}, {}));
  KILN_ASSIGN(ir::Value* xs, b.node("Mul", {x, plus1}, {}));
  return b.node("Mul", {xs, half}, {});
}

void becomeNode(NodeDraft& d, const char* op, std::vector<ir::Value*> inputs,
                std::vector<std::pair<std::string, ir::Attribute>> attrs) {
  d.opType = op;
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
}

void becomeNarrowCast(NodeDraft& d, ir::Value* x, NarrowType to, bool saturate) {
  d.domain = "kiln";
  becomeNode(d, "NarrowCast", {x}, {});
  d.set("to", int64_t(to));
  d.set("saturate", int64_t(saturate));
}

Status finishWith(NodeDraft& d, ir::Value* v) {
  becomeNode(d, "Identity", {v}, {});
  return Status::ok();
}

Status expandGelu(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(auto approx, d.takeAs("approximate", ir::AttrKind::String));
  std::string form = approx ? approx->s() : "none";
  if (form != "none" && form != "tanh")
    return Error(ErrorCode::BadAttribute, "approximate must be 'none' or 'tanh', got '" + form + "'");
  KILN_ASSIGN(ir::Value* x, firstInput(d));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(ir::Value* y, buildGelu(b, x, dt, form == "tanh"));
  return finishWith(d, y);
}

Status expandSwish(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(float alpha, d.takeFloat("alpha", 1.0f));
  KILN_ASSIGN(ir::Value* x, firstInput(d));
  ir::Value* arg = x;
  if (alpha != 1.0f) {
    KILN_ASSIGN(DType dt, inputDType(d, 0));
    KILN_ASSIGN(ir::Value* a, scalar(b, dt, alpha));
    KILN_ASSIGN(arg, b.node("Mul", {x, a}, {}));
  }
  KILN_ASSIGN(ir::Value* s, b.node("Sigmoid", {arg}, {}));
  return finishAs(d, "Mul", x, s);
}

Expected<ir::Value*> buildRmsNormalized(DraftBuilder& b, ir::Value* x, DType dt, const std::vector<int64_t>& axes,
                                        float eps, int64_t stash, ir::Value** invRms) {
  DType ct = stashDType(dt, stash);
  KILN_ASSIGN(ir::Value* xc, castIfNeeded(b, x, dt, ct));
  KILN_ASSIGN(ir::Value* sq, b.node("Mul", {xc, xc}, {}));
  KILN_ASSIGN(ir::Value* mean, b.node("ReduceMean", {sq}, {{"axes", ir::Attribute(axes)}, {"keepdims", ir::Attribute(int64_t(1))}}));
  KILN_ASSIGN(ir::Value* e, scalar(b, ct, eps));
  KILN_ASSIGN(ir::Value* var, b.node("Add", {mean, e}, {}));
  KILN_ASSIGN(ir::Value* rms, b.node("Sqrt", {var}, {}));
  if (invRms) {
    KILN_ASSIGN(*invRms, b.node("Reciprocal", {rms}, {}));
  }
  KILN_ASSIGN(ir::Value* norm, b.node("Div", {xc, rms}, {}));
  return castIfNeeded(b, norm, ct, dt);
}

Expected<std::vector<int64_t>> axesFrom(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return Error(ErrorCode::BadAttribute, "axis is out of range");
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  return axes;
}

Status expandRmsNormalization(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t axis, d.takeInt("axis", -1));
  KILN_ASSIGN(float eps, d.takeFloat("epsilon", 1e-5f));
  KILN_ASSIGN(int64_t stash, d.takeInt("stash_type", 1));
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  KILN_ASSIGN(std::vector<int64_t> axes, axesFrom(axis, rank));
  if (d.inputs.size() != 2 || !d.inputs[1]) return Error(ErrorCode::BadAttribute, d.opType + " takes X and scale");
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  ir::Value* invRms = nullptr;
  bool wantsInvRms = d.outputs.size() > 1 && !d.outputs[1].empty();
  KILN_ASSIGN(ir::Value* norm, buildRmsNormalized(b, d.inputs[0], dt, axes, eps, stash, wantsInvRms ? &invRms : nullptr));
  if (wantsInvRms) d.computedOutputs.emplace_back(d.outputs[1], invRms);
  d.outputs.resize(1);
  return finishAs(d, "Mul", norm, d.inputs[1]);
}

namespace {

/// X normalised over each of `groups` groups of channels: [N, G, -1], the
/// mean and variance over the last axis (as PyTorch exports a layer norm,
/// which the reduce templates compile), then (18) the per-group scale and
/// bias, back in X's shape.
Expected<ir::Value*> groupNormalized(DraftBuilder& b, ir::Value* x, DType dt, int64_t groups, float eps,
                                     ir::Value* scale, ir::Value* bias) {
  KILN_ASSIGN(ir::Value* shape3, int64Constant(b, {0, groups, -1}));
  KILN_ASSIGN(ir::Value* grouped, b.node("Reshape", {x, shape3}, {}));
  std::vector<std::pair<std::string, ir::Attribute>> lastAxis = {{"axes", ir::Attribute(std::vector<int64_t>{2})},
                                                                 {"keepdims", ir::Attribute(int64_t(1))}};
  KILN_ASSIGN(ir::Value* mean, b.node("ReduceMean", {grouped}, lastAxis));
  KILN_ASSIGN(ir::Value* centred, b.node("Sub", {grouped, mean}, {}));
  KILN_ASSIGN(ir::Value* two, scalar(b, dt, 2.0));
  KILN_ASSIGN(ir::Value* squared, b.node("Pow", {centred, two}, {}));
  KILN_ASSIGN(ir::Value* var, b.node("ReduceMean", {squared}, lastAxis));
  KILN_ASSIGN(ir::Value* e, scalar(b, dt, eps));
  KILN_ASSIGN(ir::Value* shifted, b.node("Add", {var, e}, {}));
  KILN_ASSIGN(ir::Value* deviation, b.node("Sqrt", {shifted}, {}));
  KILN_ASSIGN(ir::Value* norm, b.node("Div", {centred, deviation}, {}));
  if (scale) {
    KILN_ASSIGN(ir::Value* perGroup, int64Constant(b, {groups, 1}));
    KILN_ASSIGN(ir::Value* s, b.node("Reshape", {scale, perGroup}, {}));
    KILN_ASSIGN(ir::Value* c, b.node("Reshape", {bias, perGroup}, {}));
    KILN_ASSIGN(ir::Value* scaled, b.node("Mul", {norm, s}, {}));
    KILN_ASSIGN(norm, b.node("Add", {scaled, c}, {}));
  }
  KILN_ASSIGN(ir::Value* shape, b.node("Shape", {x}, {}));
  return b.node("Reshape", {norm, shape}, {});
}

Expected<int64_t> groupCount(NodeDraft& d) {
  KILN_ASSIGN(auto g, d.takeAs("num_groups", ir::AttrKind::Int));
  if (!g) return Error(ErrorCode::BadAttribute, "required attribute 'num_groups' is missing");
  if (g->i() < 1) return Error(ErrorCode::BadAttribute, "num_groups must be positive");
  if (d.inputs.size() != 3 || !d.inputs[1] || !d.inputs[2])
    return Error(ErrorCode::BadAttribute, "GroupNormalization takes X, scale and bias");
  return g->i();
}

}  // namespace

Status expandGroupNormalization18(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t groups, groupCount(d));
  KILN_ASSIGN(float eps, d.takeFloat("epsilon", 1e-5f));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(ir::Value* y, groupNormalized(b, d.inputs[0], dt, groups, eps, d.inputs[1], d.inputs[2]));
  d.opType = "Identity";
  d.inputs = {y};
  d.attrs.clear();
  return Status::ok();
}

Status expandGroupNormalization21(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t groups, groupCount(d));
  KILN_ASSIGN(float eps, d.takeFloat("epsilon", 1e-5f));
  KILN_ASSIGN(int64_t stash, d.takeInt("stash_type", 1));
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  if (rank < 3) return Error(ErrorCode::ShapeMismatch, "GroupNormalization needs an input of rank 3 or more");
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  DType ct = stashDType(dt, stash);
  KILN_ASSIGN(ir::Value* x, castIfNeeded(b, d.inputs[0], dt, ct));
  KILN_ASSIGN(ir::Value* norm, groupNormalized(b, x, ct, groups, eps, nullptr, nullptr));
  KILN_ASSIGN(norm, castIfNeeded(b, norm, ct, dt));
  std::vector<int64_t> perChannel(size_t(rank - 1), 1);
  perChannel[0] = -1;
  KILN_ASSIGN(ir::Value* shape, int64Constant(b, perChannel));
  KILN_ASSIGN(ir::Value* scale, b.node("Reshape", {d.inputs[1], shape}, {}));
  KILN_ASSIGN(ir::Value* bias, b.node("Reshape", {d.inputs[2], shape}, {}));
  KILN_ASSIGN(ir::Value* scaled, b.node("Mul", {norm, scale}, {}));
  return finishAs(d, "Add", scaled, bias);
}

Status expandCenterCropPad(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(Dims dims, staticInputDims(d, 0, "to crop or pad it around the centre"));
  KILN_ASSIGN(std::vector<int64_t> target, knownInputInts(d, 1, b, "shape"));
  KILN_ASSIGN(auto axesAttr, d.takeAs("axes", ir::AttrKind::Ints));
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> axes;
  if (axesAttr) {
    KILN_ASSIGN(axes, normalizedAxes(axesAttr->ints(), rank));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (target.size() != axes.size())
    return Error(ErrorCode::ShapeMismatch, "shape has " + std::to_string(target.size()) + " dims for " +
                                               std::to_string(axes.size()) + " axes");
  std::vector<int64_t> starts, ends, sliceAxes, pads(size_t(2 * rank), 0);
  bool pad = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t in = dims[size_t(axes[k])], out = target[k];
    if (out < 0) return Error(ErrorCode::ShapeMismatch, "shape holds a negative dim");
    if (in > out) {
      sliceAxes.push_back(axes[k]);
      starts.push_back((in - out) / 2);
      ends.push_back((in - out) / 2 + out);
    } else if (in < out) {
      pad = true;
      pads[size_t(axes[k])] = (out - in) / 2;
      pads[size_t(axes[k] + rank)] = out - in - (out - in) / 2;
    }
  }
  ir::Value* y = d.inputs[0];
  if (!sliceAxes.empty()) {
    KILN_ASSIGN(ir::Value* s, int64Constant(b, starts));
    KILN_ASSIGN(ir::Value* e, int64Constant(b, ends));
    KILN_ASSIGN(ir::Value* a, int64Constant(b, sliceAxes));
    KILN_ASSIGN(y, b.node("Slice", {y, s, e, a}, {}));
  }
  d.attrs.clear();
  if (pad) {
    KILN_ASSIGN(ir::Value* p, int64Constant(b, pads));
    d.opType = "Pad";
    d.inputs = {y, p};
  } else {
    d.opType = "Identity";
    d.inputs = {y};
  }
  return Status::ok();
}

namespace {

/// The normalised coordinates of `n` samples along one axis: pixel centres,
/// or (align_corners) the first and last samples at -1 and 1.
std::vector<double> gridAxis(int64_t n, bool alignCorners) {
  std::vector<double> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    c[size_t(i)] = alignCorners ? (n == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(n - 1))
                                : (2.0 * double(i) + 1.0) / double(n) - 1.0;
  return c;
}

/// The [points, spatial + 1] homogeneous coordinates (x fastest, then y, z) of a
/// grid of `spatial` dims (outermost first), each row ending in 1.
Tensor baseGrid(const std::vector<int64_t>& spatial, bool alignCorners) {
  int64_t points = 1, cols = int64_t(spatial.size()) + 1;
  for (int64_t s : spatial) points *= s;
  std::vector<std::vector<double>> axes;
  for (int64_t s : spatial) axes.push_back(gridAxis(s, alignCorners));
  std::vector<double> rows(size_t(points * cols), 1.0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (size_t a = spatial.size(); a-- > 0;) {  // innermost axis first: x, then y, then z
      int64_t i = rest % spatial[a];
      rest /= spatial[a];
      rows[size_t(p * cols) + (spatial.size() - 1 - a)] = axes[a][size_t(i)];
    }
  }
  return Tensor::fromVector<double>({points, cols}, rows);
}

}  // namespace

Status expandAffineGrid(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  KILN_ASSIGN(int64_t align, d.takeInt("align_corners", 0));
  KILN_ASSIGN(std::vector<int64_t> size, knownInputInts(d, 1, b, "size"));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  if (size.size() != 4 && size.size() != 5)
    return Error(ErrorCode::ShapeMismatch, "size must be [N, C, H, W] or [N, C, D, H, W]");
  for (int64_t s : size)
    if (s < 1) return Error(ErrorCode::ShapeMismatch, "size holds a dim below 1");
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  KILN_ASSIGN(ir::Value* base, b.constant(baseGrid(spatial, align != 0).castTo(dt)));
  KILN_ASSIGN(ir::Value* thetaT, b.node("Transpose", {d.inputs[0]}, {{"perm", ir::Attribute(std::vector<int64_t>{0, 2, 1})}}));
  KILN_ASSIGN(ir::Value* points, b.node("MatMul", {base, thetaT}, {}));
  std::vector<int64_t> shape = {size[0]};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  shape.push_back(int64_t(spatial.size()));
  KILN_ASSIGN(ir::Value* s, int64Constant(b, shape));
  d.opType = "Reshape";
  d.inputs = {points, s};
  d.attrs.clear();
  return Status::ok();
}

}  // namespace kiln::onnx
