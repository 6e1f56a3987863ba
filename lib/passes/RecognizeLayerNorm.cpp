//===- lib/passes/RecognizeLayerNorm.cpp - recognize-layer-norm -------------===//
//
// Exporters spell LayerNorm out in primitive ops (PyTorch at opset < 17):
//   m = ReduceMean(x, axes); d = x - m; v = ReduceMean(d², axes)
//   y = d / Sqrt(v + eps) [* gamma] [+ beta]
// (d² as Pow(d, 2) or Mul(d, d)). The nine ops become one
// LayerNormalization(x, gamma, beta){axis, epsilon}, which code generation
// lowers to one fused reduction kernel (anchor: ONNX Runtime's
// LayerNormFusion, TVM's layer_norm pattern). The axes must be the trailing
// dims; every intermediate must have no other user. Statistics are then
// computed in one pass instead of rounded op by op: tolerance 1e-5.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Match {
  ir::Node* div = nullptr;
  ir::Node* last = nullptr;  ///< the node whose result the LayerNorm replaces
  ir::Value* x = nullptr;
  ir::Value* gamma = nullptr;
  ir::Value* beta = nullptr;
  int64_t axis = 0;
  float epsilon = 0;
};

ir::Node* producerIf(const ir::Value* v, ir::Op op) {
  ir::Node* p = v ? v->producer() : nullptr;
  return isOp(p, op) && soleUser(v) && !isGraphOutput(v) ? p : nullptr;
}

/// The first normalised axis when `mean` reduces x's trailing dims (keepdims).
std::optional<int64_t> trailingAxis(const ir::Node& mean, const ir::Value* x) {
  if (!x->type().isTensor() || !x->tensorType().hasRank() || mean.getInt("keepdims") != 1 || !mean.hasAttr("axes"))
    return std::nullopt;
  int64_t rank = x->tensorType().rank();
  auto axes = ir::normalizeAxes(mean.getInts("axes"), rank);
  if (!axes || axes->empty()) return std::nullopt;
  std::vector<int64_t> a = *axes;
  std::sort(a.begin(), a.end());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != rank - int64_t(a.size()) + int64_t(i)) return std::nullopt;
  return a.front();
}

/// A constant broadcasting over exactly the normalised dims.
bool fitsNormDims(const ir::Value* c, const ir::Value* x, int64_t axis) {
  const Tensor* t = constantValue(c);
  if (!t || t->dtype() != DType::F32) return false;
  const Dims& xd = x->tensorType().dims();
  Dims norm(xd.begin() + axis, xd.end());
  return t->dims() == norm || (norm.size() == 1 && t->rank() == 1 && t->dim(0) == norm[0]);
}

std::optional<Match> findMatch(ir::Node* div) {
  if (!isOp(div, ir::Op::Div)) return std::nullopt;
  ir::Value* d = div->input(0);
  ir::Node* sub = d->producer();
  ir::Node* sqrt = producerIf(div->input(1), ir::Op::Sqrt);
  if (!isOp(sub, ir::Op::Sub) || !sqrt || isGraphOutput(d)) return std::nullopt;
  ir::Node* add = producerIf(sqrt->input(0), ir::Op::Add);
  if (!add) return std::nullopt;
  int epsSide = constantValue(add->input(1)) ? 1 : 0;
  const Tensor* eps = constantValue(add->input(epsSide));
  if (!eps || eps->numElements() != 1 || eps->dtype() != DType::F32) return std::nullopt;
  ir::Node* var = producerIf(add->input(1 - epsSide), ir::Op::ReduceMean);
  ir::Node* sq = var ? producerIf(var->input(0), ir::Op::Pow) : nullptr;
  if (!sq && var) sq = producerIf(var->input(0), ir::Op::Mul);
  if (!sq || sq->input(0) != d) return std::nullopt;
  if (isOp(sq, ir::Op::Pow) ? !isConstantFilledWith(sq->input(1), 2) : sq->input(1) != d) return std::nullopt;
  for (const ir::Use& u : d->uses())
    if (u.user != sq && u.user != div) return std::nullopt;
  ir::Value* x = sub->input(0);
  ir::Node* mean = producerIf(sub->input(1), ir::Op::ReduceMean);
  if (!mean || mean->input(0) != x || x->tensorType().dtype() != DType::F32) return std::nullopt;
  auto axis = trailingAxis(*mean, x);
  if (!axis || trailingAxis(*var, x) != axis || mean->getInts("axes") != var->getInts("axes")) return std::nullopt;
  Match m{div, div, x, nullptr, nullptr, *axis, float(eps->data<float>()[0])};
  if (ir::Node* mul = soleUser(div->output(0)); isOp(mul, ir::Op::Mul) && !isGraphOutput(div->output(0))) {
    ir::Value* g = mul->input(0) == div->output(0) ? mul->input(1) : mul->input(0);
    if (fitsNormDims(g, x, *axis) && mul->output(0)->type() == div->output(0)->type()) {
      m.gamma = g;
      m.last = mul;
    }
  }
  if (ir::Node* plus = soleUser(m.last->output(0)); isOp(plus, ir::Op::Add) && !isGraphOutput(m.last->output(0))) {
    ir::Value* b = plus->input(0) == m.last->output(0) ? plus->input(1) : plus->input(0);
    if (fitsNormDims(b, x, *axis) && plus->output(0)->type() == m.last->output(0)->type()) {
      m.beta = b;
      m.last = plus;
    }
  }
  return m;
}

Status rewriteMatch(const Match& m) {
  ir::Graph& g = *m.div->graph();
  ir::Value* gamma = m.gamma;
  if (!gamma) {
    const Dims& xd = m.x->tensorType().dims();
    Dims norm(xd.begin() + m.axis, xd.end());
    Tensor ones = Tensor::zeros(DType::F32, norm);
    std::fill_n(ones.mutableData<float>(), ones.numElements(), 1.0f);
    gamma = makeConstant(g, std::move(ones), nameBase(*m.div) + "_scale", m.last);
  }
  std::vector<ir::Value*> operands{m.x, gamma};
  if (m.beta) operands.push_back(m.beta);
  return replaceWithNewNode(m.last, "LayerNormalization", operands, {{"axis", m.axis}, {"epsilon", m.epsilon}},
                            nameBase(*m.last) + "_layernorm")
      .status();
}

/// Rescans after each rewrite: the match reads users several levels down.
class RecognizeLayerNormPattern final : public MatchingPattern<Match> {
 public:
  std::optional<Match> match(ir::Node& n) const override { return findMatch(&n); }
  Status apply(ir::Node&, const Match& m) const override { return rewriteMatch(m); }
  int usersRead() const override { return kAnywhere; }
};

}  // namespace

PassInfo recognizeLayerNormPass() {
  PassInfo p;
  p.name = "recognize-layer-norm";
  p.summary = "Turn spelled-out LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div, ...) into LayerNormalization";
  p.description =
      "Matches mean/variance normalisation over trailing axes written in primitive ops (optionally followed by "
      "a constant scale Mul and shift Add) and replaces it by one LayerNormalization (anchor: ONNX Runtime's "
      "LayerNormFusion). Statistics computed in one pass: within 1e-5 relative.";
  p.classes = {"BR"};  // not in Table 4: kiln adds it for exported BERT models
  p.tolerance = 1e-5;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<RecognizeLayerNormPattern>()});
  return p;
}

}  // namespace kiln::passes
