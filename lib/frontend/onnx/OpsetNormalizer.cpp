//===- lib/frontend/onnx/OpsetNormalizer.cpp - Legacy op forms -> opset 17 -===//
//
// One rewrite per op whose form changed between opsets 7 and 17:
//   Slice(<10), Pad(<11), Clip(<11): attributes become inputs;
//   Squeeze/Unsqueeze/ReduceSum/Split(<13), TopK(<10): ditto;
//   Softmax/LogSoftmax/Hardmax(<13): 2-D coercion expressed with Flatten+Reshape;
//   Upsample, Resize(10): become Resize(13) with the old coordinate rules;
//   RoiAlign(<16): its fixed sampling, output_half_pixel, made explicit;
//   Scatter: becomes ScatterElements; Dropout/BatchNormalization: drop
//   attributes that no longer exist; Constant: value_* become value.
//
//===----------------------------------------------------------------------===//
#include "OpsetNormalizer.h"

#include <limits>

#include "kiln/support/StringPool.h"

namespace kiln::onnx {

const ir::Attribute* NodeDraft::attr(const std::string& n) const {
  for (const auto& [k, v] : attrs)
    if (k == n) return &v;
  return nullptr;
}

std::optional<ir::Attribute> NodeDraft::take(const std::string& n) {
  for (auto it = attrs.begin(); it != attrs.end(); ++it)
    if (it->first == n) {
      ir::Attribute a = std::move(it->second);
      attrs.erase(it);
      return a;
    }
  return std::nullopt;
}

static Error wrongKind(const std::string& n, ir::AttrKind want, const ir::Attribute& a) {
  return Error(ErrorCode::BadAttribute, "attribute '" + n + "' must be " + ir::attrKindName(want) + ", got " +
                                            ir::attrKindName(a.kind()));
}

Expected<std::optional<ir::Attribute>> NodeDraft::takeAs(const std::string& n, ir::AttrKind kind) {
  std::optional<ir::Attribute> a = take(n);
  if (a && a->kind() != kind) return wrongKind(n, kind, *a);
  return a;
}

Expected<float> NodeDraft::takeFloat(const std::string& n, float dflt) {
  KILN_ASSIGN(auto a, takeAs(n, ir::AttrKind::Float));
  return a ? a->f() : dflt;
}

Expected<int64_t> NodeDraft::takeInt(const std::string& n, int64_t dflt) {
  KILN_ASSIGN(auto a, takeAs(n, ir::AttrKind::Int));
  return a ? a->i() : dflt;
}

Expected<const ir::Attribute*> NodeDraft::attrAs(const std::string& n, ir::AttrKind kind) const {
  const ir::Attribute* a = attr(n);
  if (a && a->kind() != kind) return wrongKind(n, kind, *a);
  return a;
}

void NodeDraft::set(const std::string& n, ir::Attribute a) {
  for (auto& [k, v] : attrs)
    if (k == n) {
      v = std::move(a);
      return;
    }
  attrs.emplace_back(n, std::move(a));
}

namespace {

Error legacyError(const std::string& msg) { return Error(ErrorCode::BadAttribute, msg); }

/// Moves an ints attribute into input slot `slot` as an i64 constant (absent: left empty).
Status intsAttrToInput(NodeDraft& d, const char* attrName, size_t slot, DraftBuilder& b, bool required) {
  KILN_ASSIGN(auto a, d.takeAs(attrName, ir::AttrKind::Ints));
  if (!a) {
    if (required) return legacyError(std::string("required attribute '") + attrName + "' is missing");
    return Status::ok();
  }
  growInputs(d, slot + 1);
  KILN_ASSIGN(d.inputs[slot], b.constant(Tensor::fromVector<int64_t>({int64_t(a->ints().size())}, a->ints())));
  return Status::ok();
}

Status normalizeConstant(NodeDraft& d) {
  if (d.attr("value")) return Status::ok();
  KILN_ASSIGN(auto f, d.takeAs("value_float", ir::AttrKind::Float));
  KILN_ASSIGN(auto i, d.takeAs("value_int", ir::AttrKind::Int));
  KILN_ASSIGN(auto fs, d.takeAs("value_floats", ir::AttrKind::Floats));
  KILN_ASSIGN(auto is, d.takeAs("value_ints", ir::AttrKind::Ints));
  KILN_ASSIGN(auto str, d.takeAs("value_string", ir::AttrKind::String));
  KILN_ASSIGN(auto strs, d.takeAs("value_strings", ir::AttrKind::Strings));
  if (str) {
    KILN_ASSIGN(Tensor t, stringTensor({}, {str->s()}));
    d.set("value", std::move(t));
  } else if (strs) {
    KILN_ASSIGN(Tensor t, stringTensor({int64_t(strs->strings().size())}, strs->strings()));
    d.set("value", std::move(t));
  } else if (f) d.set("value", Tensor::scalar<float>(f->f()));
  else if (i) d.set("value", Tensor::scalar<int64_t>(i->i()));
  else if (fs) d.set("value", Tensor::fromVector<float>({int64_t(fs->floats().size())}, fs->floats()));
  else if (is) d.set("value", Tensor::fromVector<int64_t>({int64_t(is->ints().size())}, is->ints()));
  else if (d.attr("sparse_value"))
    return Error(ErrorCode::UnsupportedType, "sparse constants are not supported by kiln");
  else
    return legacyError("Constant has no value attribute");
  return Status::ok();
}

/// Softmax-family ops before opset 13 coerce the input to 2-D at `axis`.
Status normalizeLegacySoftmax(NodeDraft& d, DraftBuilder& b) {
  int64_t axis = 1;
  KILN_ASSIGN(auto a, d.takeAs("axis", ir::AttrKind::Int));
  if (a) axis = a->i();
  if (d.inputs.empty() || !d.inputs[0]) return Status::ok();
  const ir::Type& t = d.inputs[0]->type();
  if (t.isTensor() && t.tensor().hasRank()) {
    int64_t rank = t.tensor().rank();
    if (axis < 0) axis += rank;
    if (axis == rank - 1) {  // coercion is the identity: plain last-axis op
      d.set("axis", int64_t(-1));
      return Status::ok();
    }
  }
  ir::Value* x = d.inputs[0];
  KILN_ASSIGN(ir::Value* flat, b.node("Flatten", {x}, {{"axis", ir::Attribute(axis)}}));
  KILN_ASSIGN(ir::Value* op, b.node(d.opType, {flat}, {{"axis", ir::Attribute(int64_t(-1))}}));
  KILN_ASSIGN(ir::Value* shape, b.node("Shape", {x}, {}));
  d.opType = "Reshape";
  d.inputs = {op, shape};
  d.attrs.clear();
  return Status::ok();
}

Status normalizeUpsample(NodeDraft& d, int64_t opset, DraftBuilder& b) {
  std::string mode = "nearest";
  KILN_ASSIGN(auto modeAttr, d.takeAs("mode", ir::AttrKind::String));
  if (modeAttr) mode = modeAttr->s();
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") return legacyError("Upsample mode '" + mode + "' is not supported");
  ir::Value* scales = d.inputs.size() > 1 ? d.inputs[1] : nullptr;
  KILN_ASSIGN(auto scalesAttr, d.takeAs("scales", ir::AttrKind::Floats));
  if (scalesAttr) {
    KILN_ASSIGN(scales, b.constant(Tensor::fromVector<float>({int64_t(scalesAttr->floats().size())}, scalesAttr->floats())));
  }
  if (!scales) return legacyError("Upsample needs scales");
  d.opType = "Resize";
  d.inputs = {d.inputs[0], nullptr, scales};
  d.attrs.clear();
  d.set("mode", mode);
  d.set("coordinate_transformation_mode", "asymmetric");
  d.set("nearest_mode", "floor");
  return Status::ok();
}

}  // namespace

void growInputs(NodeDraft& d, size_t n) {
  if (d.inputs.size() < n) d.inputs.resize(n, nullptr);
}

Tensor scalarOf(DType dtype, double v) { return Tensor::scalar<double>(v).castTo(dtype); }

Expected<DType> inputDType(const NodeDraft& d, size_t i) {
  if (i >= d.inputs.size() || !d.inputs[i] || !d.inputs[i]->type().isTensor() ||
      d.inputs[i]->type().tensor().dtype() == DType::Undefined)
    return Error(ErrorCode::ShapeMismatch, "the element type of input " + std::to_string(i) + " is unknown");
  return d.inputs[i]->type().tensor().dtype();
}

Expected<std::vector<int64_t>> knownInputInts(const NodeDraft& d, size_t i, const DraftBuilder& b, const char* what) {
  const Tensor* t = i < d.inputs.size() && d.inputs[i] ? b.knownValue(d.inputs[i]) : nullptr;
  if (!t || !isInteger(t->dtype()))
    return Error(ErrorCode::OnnxUnsupportedOp,
                 std::string("input '") + what + "' must be known at import (a constant or computed from constants)");
  return t->toInt64s();
}

Expected<Dims> staticInputDims(const NodeDraft& d, size_t i, const char* why) {
  const ir::Value* v = i < d.inputs.size() ? d.inputs[i] : nullptr;
  if (!v || !v->type().isTensor() || !v->type().tensor().hasRank() || !v->type().tensor().isStatic())
    return Error(ErrorCode::ShapeMismatch, "input " + std::to_string(i) + " needs a static shape " + why +
                                               " (give the model's dynamic dims with --shape)");
  return v->type().tensor().dims();
}

Expected<int64_t> inputRank(const NodeDraft& d, size_t i) {
  const ir::Value* v = i < d.inputs.size() ? d.inputs[i] : nullptr;
  if (!v || !v->type().isTensor() || !v->type().tensor().hasRank())
    return Error(ErrorCode::ShapeMismatch, "the rank of input " + std::to_string(i) + " is unknown");
  return v->type().tensor().rank();
}

Expected<std::vector<int64_t>> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return Error(ErrorCode::BadAttribute, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    out.push_back(a < 0 ? a + rank : a);
  }
  return out;
}

bool hasInput(const NodeDraft& d, size_t i) { return i < d.inputs.size() && d.inputs[i]; }

Status requireInputs(const NodeDraft& d, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (i >= d.inputs.size() || !d.inputs[i])
      return Error(ErrorCode::BadAttribute, d.opType + " needs input " + std::to_string(i));
  return Status::ok();
}

Status normalizeDraft(NodeDraft& d, int64_t opset, DraftBuilder& b) {
  if (!d.domain.empty() && d.domain != "ai.onnx") return Status::ok();
  d.domain.clear();
  const std::string& op = d.opType;
  // Trailing omitted inputs carry no meaning.
  while (!d.inputs.empty() && !d.inputs.back()) d.inputs.pop_back();

  if (op == "Constant") return normalizeConstant(d);
  if (op == "Upsample") return normalizeUpsample(d, opset, b);
  if (op == "Scan" && opset < 9)
    return Error(ErrorCode::OnnxUnsupportedOp, "Scan before opset 9 (with a batch axis) is not supported");
  if (op == "Scatter") {
    d.opType = "ScatterElements";
    return Status::ok();
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) return normalizeLegacySoftmax(d, b);
  if (op == "Slice" && opset < 10) {
    ir::Value* data = d.inputs.empty() ? nullptr : d.inputs[0];
    d.inputs = {data};
    KILN_TRY(intsAttrToInput(d, "starts", 1, b, true));
    KILN_TRY(intsAttrToInput(d, "ends", 2, b, true));
    KILN_TRY(intsAttrToInput(d, "axes", 3, b, false));
    return Status::ok();
  }
  if (op == "Pad" && opset < 11) {
    KILN_TRY(intsAttrToInput(d, "pads", 1, b, true));
    KILN_ASSIGN(auto v, d.takeAs("value", ir::AttrKind::Float));
    if (v && v->f() != 0.0f) {
      KILN_ASSIGN(DType dt, inputDType(d, 0));
      growInputs(d, 3);
      KILN_ASSIGN(d.inputs[2], b.constant(scalarOf(dt, v->f())));
    }
    return Status::ok();
  }
  if (op == "Clip" && opset < 11) {
    KILN_ASSIGN(auto lo, d.takeAs("min", ir::AttrKind::Float));
    KILN_ASSIGN(auto hi, d.takeAs("max", ir::AttrKind::Float));
    if (lo || hi) {
      KILN_ASSIGN(DType dt, inputDType(d, 0));
      growInputs(d, 3);
      if (lo) {
        KILN_ASSIGN(d.inputs[1], b.constant(scalarOf(dt, lo->f())));
      }
      if (hi) {
        KILN_ASSIGN(d.inputs[2], b.constant(scalarOf(dt, hi->f())));
      }
    }
    return Status::ok();
  }
  if ((op == "Squeeze" || op == "Unsqueeze") && opset < 13)
    return intsAttrToInput(d, "axes", 1, b, op == "Unsqueeze");
  if (op == "ReduceSum" && opset < 13) return intsAttrToInput(d, "axes", 1, b, false);
  if (op == "Split" && opset < 13) return intsAttrToInput(d, "split", 1, b, false);
  if (op == "TopK" && opset < 10) {
    KILN_ASSIGN(auto k, d.takeAs("k", ir::AttrKind::Int));
    if (!k) return legacyError("required attribute 'k' is missing");
    growInputs(d, 2);
    KILN_ASSIGN(d.inputs[1], b.constant(Tensor::fromVector<int64_t>({1}, {k->i()})));
    return Status::ok();
  }
  if (op == "Resize" && opset < 11) {
    // Resize-10: (X, scales) with asymmetric coordinates and floor rounding.
    if (d.inputs.size() < 2) return legacyError("Resize needs scales");
    d.inputs = {d.inputs[0], nullptr, d.inputs[1]};
    d.set("coordinate_transformation_mode", "asymmetric");
    KILN_ASSIGN(const ir::Attribute* mode, d.attrAs("mode", ir::AttrKind::String));
    if (!mode || mode->s() == "nearest") d.set("nearest_mode", "floor");
    return Status::ok();
  }
  if (op == "RoiAlign" && opset < 16) {
    // RoiAlign-10 has no coordinate_transformation_mode: it samples as output_half_pixel
    // does (no half-pixel shift); opset 16 added the attribute, defaulting to half_pixel.
    d.set("coordinate_transformation_mode", "output_half_pixel");
    return Status::ok();
  }
  if (op == "Dropout") {
    d.take("is_test");
    if (opset < 12) d.take("ratio");
    return Status::ok();
  }
  if (op == "BatchNormalization") {
    d.take("is_test");
    d.take("consumed_inputs");
    KILN_ASSIGN(auto spatial, d.takeAs("spatial", ir::AttrKind::Int));
    if (spatial && spatial->i() == 0)
      return legacyError("BatchNormalization with spatial=0 is not supported");
    // Opset < 14 training outputs (saved mean/var) are only allowed when unused.
    if (d.outputs.size() > 3) d.outputs.resize(3);
    return Status::ok();
  }
  return Status::ok();
}

}  // namespace kiln::onnx
