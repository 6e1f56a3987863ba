//===- lib/passes/CanonicalizeCast.cpp - canonicalize-cast ------------------===//
//
// Removes Casts that cannot change a value:
//   Cast(x: T, to=T)                  -> x
//   Cast(Cast(x: S, to=M), to=T)      -> Cast(x, to=T), or x when T == S,
//                                        when every S value is exactly an M value
// ("M is a lossless widening of S": f16/bf16 -> f32 -> f64, smaller to larger
// integers of a signedness that holds them, small integers to floats whose
// mantissa holds them, bool to any number). Such a double cast computes
// exactly what the single one does, so fusion later sees one fewer op.
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// Bits of a type's exactly representable integer range (mantissa+1 for floats).
int integerBits(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::I8: case DType::U8: return 8;
    case DType::I16: case DType::U16: return 16;
    case DType::I32: case DType::U32: return 32;
    case DType::I64: case DType::U64: return 64;
    case DType::F16: return 11;
    case DType::BF16: return 8;
    case DType::F32: return 24;
    case DType::F64: return 53;
    default: return 0;
  }
}

/// True when every value of `from` is exactly representable in `to`.
bool losslessWidening(DType from, DType to) {
  if (from == to) return true;
  if (from == DType::Bool) return to != DType::Undefined;
  if (isFloat(from)) {
    if (!isFloat(to)) return false;
    if (to == DType::F64) return true;
    return to == DType::F32 && (from == DType::F16 || from == DType::BF16);
  }
  if (!isInteger(from)) return false;
  bool fromSigned = isSignedInteger(from);
  if (isFloat(to)) return integerBits(from) <= integerBits(to);
  if (!isInteger(to)) return false;
  bool toSigned = isSignedInteger(to);
  if (fromSigned && !toSigned) return false;
  return toSigned && !fromSigned ? integerBits(to) > integerBits(from) : integerBits(to) >= integerBits(from);
}

DType castTarget(const ir::Node& cast) { return dtypeFromOnnx(int(cast.getInt("to"))).value_or(DType::Undefined); }

DType elementType(const ir::Value* v) { return v->type().isTensor() ? v->tensorType().dtype() : DType::Undefined; }

/// What a Cast reduces to: 0 no rule, 1 drop it, 2 cast the inner Cast's operand.
int ruleFor(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Cast)) return 0;
  DType in = elementType(n.input(0));
  if (in != DType::Undefined && in == castTarget(n)) return 1;
  const ir::Node* inner = n.input(0)->producer();
  if (!isOp(inner, ir::Op::Cast)) return 0;
  DType source = elementType(inner->input(0));
  return source != DType::Undefined && losslessWidening(source, castTarget(*inner)) ? 2 : 0;
}

/// Cast(x) to x's own type -> x (a graph input kept as an output becomes an Identity).
class DropNoOpCast final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return ruleFor(n) == 1; }
  Status rewrite(ir::Node& n) const override {
    replaceValue(n.output(0), n.input(0));
    eraseWithDeadProducers(&n);
    return Status::ok();
  }
};

/// Cast(Cast(x)) with a lossless inner Cast -> Cast(x); DropNoOpCast may then drop it.
class ShortenCastChain final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return ruleFor(n) == 2; }
  Status rewrite(ir::Node& n) const override {
    ir::Node* inner = n.input(0)->producer();
    n.setInput(0, inner->input(0));
    if (!inner->output(0)->hasUses()) eraseWithDeadProducers(inner);
    return Status::ok();
  }
};

}  // namespace

PassInfo canonicalizeCastPass() {
  PassInfo p;
  p.name = "canonicalize-cast";
  p.summary = "Remove casts that cannot change a value";
  p.description =
      "Drops Cast to the operand's own type and shortens Cast(Cast(x)) to one Cast when the inner one is a "
      "lossless widening (f16/bf16->f32->f64, wider integers, small integers to floats, bool to numbers), "
      "removing it entirely when the result type is x's. Exact.";
  p.classes = {"BL", "RN"};  // Table 4: CanonicalizeCast is BL; RN
  p.optLevel = 3;
  setPatterns(p, {std::make_shared<DropNoOpCast>(), std::make_shared<ShortenCastChain>()});
  return p;
}

}  // namespace kiln::passes
