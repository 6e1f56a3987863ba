//===- lib/passes/ToMixedPrecision.cpp - to-mixed-precision -----------------===//
//
// Runs the ops that tolerate it in 16-bit floats (TVM's ToMixedPrecision):
// each f32 op on the allow list is rebuilt over f16 (or bf16) operands -
// constants are converted once, other operands get a Cast - and its results
// are cast back to f32 for users that stay in f32. Chains of allowed ops pass
// 16-bit values directly; Casts that end up unused are removed. Precision-
// sensitive ops are not on the allow list and stay f32: LayerNorm, Softmax,
// every reduction, BatchNorm, Exp/Log/Pow/Div/Sqrt/Erf, attention. Options:
//   dtype = f16 | bf16 (default f16)
//   deny  = ops taken off the allow list, separated by ';' (default none)
// 16-bit rounding of weights and activations: documented tolerance 2e-2
// relative (f16 is typically near 1e-3; bf16 keeps 8 bits).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

const std::set<ir::Op>& allowList() {
  using ir::Op;
  static const std::set<Op> ops = {
      Op::Conv,      Op::ConvTranspose, Op::MatMul,  Op::Gemm,        Op::Add,               Op::Sub,
      Op::Mul,       Op::Relu,          Op::Clip,    Op::LeakyRelu,   Op::Sigmoid,           Op::HardSigmoid,
      Op::HardSwish, Op::MaxPool,       Op::AveragePool, Op::GlobalAveragePool, Op::Concat, Op::Reshape,
      Op::Transpose, Op::Flatten,       Op::Squeeze, Op::Unsqueeze,   Op::Slice,             Op::Identity,
      Op::KilnGelu,  Op::KilnDense};
  return ops;
}

struct Settings {
  DType dtype = DType::F16;
  std::set<ir::Op> allowed;
};

Expected<Settings> settingsFrom(const PassOptions& o) {
  Settings s;
  const std::string& d = o.getString("dtype");
  if (d == "bf16") s.dtype = DType::BF16;
  else if (d != "f16") return Error(ErrorCode::InvalidArgument, "to-mixed-precision: dtype must be f16 or bf16, got '" + d + "'");
  s.allowed = allowList();
  std::string denied = o.getString("deny");
  std::replace(denied.begin(), denied.end(), ',', ';');
  std::stringstream deny(denied);
  for (std::string op; std::getline(deny, op, ';');) {
    if (op.empty()) continue;
    const std::optional<ir::Op> denied = ir::findOp(op);
    if (!denied || !s.allowed.erase(*denied))
      return Error(ErrorCode::InvalidArgument, "to-mixed-precision: deny names '" + op + "', which is not on the allow list");
  }
  return s;
}

bool isF32(const ir::Value* v) { return v && v->type().isTensor() && v->tensorType().dtype() == DType::F32; }

bool convertible(const ir::Node& n, const Settings& s) {
  if (!s.allowed.count(n.op()) || !n.subgraphs().empty()) return false;
  bool anyF32 = false;
  for (const ir::Value* in : n.inputs()) anyF32 |= isF32(in);
  for (const ir::Value* r : n.outputs())
    if (!isF32(r)) return false;  // every result must be an f32 tensor
  return anyF32;
}

class Converter {
 public:
  Converter(ir::Graph& g, const Settings& s) : g_(g), s_(s) {}

  Expected<bool> run() {
    bool changed = false;
    for (ir::Node* n : g_.nodes()) {
      if (!convertible(*n, s_)) continue;
      std::vector<ir::Value*> operands;
      for (ir::Value* in : n->inputs()) operands.push_back(isF32(in) ? narrow(in, n) : in);
      KILN_ASSIGN(ir::Node * narrowNode, createTypedNode(g_, n->qualifiedOpType(), operands, n->attributes(), n->name(), n, n->numOutputs()));
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        KILN_ASSIGN(ir::Node * widen, createTypedNode(g_, "Cast", {narrowNode->output(i)},
                                                      {{"to", int64_t(onnxDTypeCode(DType::F32))}}, "", n));
        narrowOf_[widen->output(0)] = narrowNode->output(i);
        replaceValue(n->output(i), widen->output(0), true);
      }
      eraseWithDeadProducers(n);  // and f32 weights only it used
      changed = true;
    }
    // Casts back to f32 that only converted ops used are now dead.
    for (ir::Node* n : g_.nodes())
      if (isOp(n, ir::Op::Cast) && !n->output(0)->hasUses()) eraseWithDeadProducers(n);
    return changed;
  }

 private:
  /// The 16-bit version of f32 value `v`, for a use by `user`.
  ir::Value* narrow(ir::Value* v, ir::Node* user) {
    if (auto it = narrowOf_.find(v); it != narrowOf_.end()) return it->second;
    ir::Value* n;
    if (const Tensor* c = constantValue(v)) {
      n = makeConstant(g_, c->castTo(s_.dtype), v->name() + "_" + dtypeName(s_.dtype), user);
    } else {
      ir::Node* cast = g_.createNode(ir::opSchema("Cast"), std::vector<ir::Value*>{v}, 1, "", user);
      cast->setAttr("to", int64_t(onnxDTypeCode(s_.dtype)));
      cast->output(0)->setType(v->tensorType().withDType(s_.dtype));
      n = cast->output(0);
    }
    narrowOf_[v] = n;
    return n;
  }

  ir::Graph& g_;
  const Settings& s_;
  std::unordered_map<const ir::Value*, ir::Value*> narrowOf_;
};

bool hasConvertible(const ir::Graph& g, const Settings& s) {
  for (const ir::Node* n : g.nodes())
    if (convertible(*n, s)) return true;
  return false;
}

}  // namespace

PassInfo toMixedPrecisionPass() {
  PassInfo p;
  p.name = "to-mixed-precision";
  p.summary = "Run convolutions, matmuls and elementwise ops in f16 or bf16";
  p.description =
      "Rebuilds f32 ops of the allow list (Conv, MatMul, Gemm, kiln::Dense, elementwise and data-movement ops, GELU) over 16-bit "
      "operands with Casts at the f32 boundaries; LayerNorm, Softmax, reductions, BatchNorm and exp/log/pow/div/"
      "sqrt/erf stay f32 (anchor: TVM's ToMixedPrecision). Options: dtype f16|bf16, deny ops. Within 2e-2 relative.";
  p.classes = {"AD"};  // Table 4: ToMixedPrecision is AD (the user's intent decides)
  p.tolerance = 2e-2;
  p.optLevel = 3;
  p.options = {{"dtype", PassOptionSpec::Kind::String, "f16", "16-bit type: f16 or bf16"},
               {"deny", PassOptionSpec::Kind::String, "", "ops to keep in f32, e.g. Add;Mul (separated by ';' or ',')"}};
  p.applicable = [](const ir::Graph& g, const PassOptions&) {
    Settings s;
    s.allowed = allowList();
    return hasConvertible(g, s);
  };
  p.run = [](ir::Graph& g, const PassOptions& o, const PassContext&) -> Expected<bool> {
    KILN_ASSIGN(Settings s, settingsFrom(o));
    return Converter(g, s).run();
  };
  return p;
}

}  // namespace kiln::passes
