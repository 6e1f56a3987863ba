//===- lib/frontend/onnx/StringForms.cpp - Ops on string tensors at import -===//
//
// kiln holds a STRING tensor as i64 ids into the string pool
// (kiln/support/StringPool.h). The ops that move, select or compare elements
// (Reshape, Gather, Concat, Where, Equal, ...) run on the ids unchanged;
// this file rewrites the ones that read what a string says:
//   Cast / CastLike to STRING    -> kiln::CastToString
//   Cast / CastLike from STRING  -> kiln::CastFromString (STRING to STRING: Identity)
//   Unique on strings            refused: its sorted order is the strings', not the ids'
//
//===----------------------------------------------------------------------===//
#include "NewerOpsetForms.h"
#include "kiln/support/StringPool.h"

namespace kiln::onnx {
namespace {

bool stringInput(const NodeDraft& d, const DraftBuilder& b, size_t i) {
  return hasInput(d, i) && b.isString(d.inputs[i]);
}

/// The ONNX type code a Cast or CastLike converts to; 0 when the draft does not say.
Expected<int> castTarget(const NodeDraft& d, const DraftBuilder& b) {
  if (d.opType == "Cast") {
    KILN_ASSIGN(const ir::Attribute* to, d.attrAs("to", ir::AttrKind::Int));
    return to ? int(to->i()) : 0;
  }
  if (!hasInput(d, 1)) return 0;
  if (b.isString(d.inputs[1])) return kOnnxStringCode;
  if (auto narrow = b.narrowType(d.inputs[1])) return int(*narrow);
  KILN_ASSIGN(DType like, inputDType(d, 1));
  return onnxDTypeCode(like);
}

Status castFromString(NodeDraft& d, int to) {
  ir::Value* x = d.inputs[0];
  if (to == kOnnxStringCode) return finishWith(d, x);
  if (narrowTypeFromOnnx(to))
    return refuseForm(d, std::string("a cast from STRING to ") + onnxDTypeCodeName(to));
  if (!dtypeFromOnnx(to))
    return Error(ErrorCode::BadAttribute, "a cast from STRING to type code " + std::to_string(to) +
                                              ", which kiln cannot hold");
  d.domain = "kiln";
  becomeNode(d, "CastFromString", {x}, {});
  d.set("to", int64_t(to));
  return Status::ok();
}

Status castToString(NodeDraft& d, const DraftBuilder& b) {
  ir::Value* x = d.inputs[0];
  if (auto narrow = b.narrowType(x)) return refuseForm(d, std::string("a cast from ") + narrowTypeName(*narrow) + " to STRING");
  d.domain = "kiln";
  becomeNode(d, "CastToString", {x}, {});
  return Status::ok();
}

}  // namespace

Status stringForm(NodeDraft& d, DraftBuilder& b) {
  if (d.opType == "Cast" || d.opType == "CastLike") {
    if (!hasInput(d, 0)) return Status::ok();  // the op's own checks report it
    KILN_ASSIGN(int to, castTarget(d, b));
    if (stringInput(d, b, 0)) return castFromString(d, to);
    if (to == kOnnxStringCode) return castToString(d, b);
    return Status::ok();
  }
  if (d.opType == "Unique" && stringInput(d, b, 0)) return refuseForm(d, "Unique on strings");
  return Status::ok();
}

bool castsToString(const NodeDraft& d, const DraftBuilder& b) {
  if (d.opType != "Cast" && d.opType != "CastLike") return false;
  Expected<int> to = castTarget(d, b);
  return to.isOk() && *to == kOnnxStringCode;
}

}  // namespace kiln::onnx
