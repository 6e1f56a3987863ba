//===- lib/passes/LowerRecurrent.cpp - lower-recurrent ----------------------===//
//
// Unrolls an RNN, GRU or LSTM with constant weights and static shapes over
// its time steps into MatMul, Add, Mul, Slice and activation nodes, which
// have kernel templates on every target (the recurrent ops have none: they
// run as host steps on the reference kernels). Per direction:
//   the input projection of every step at once,
//     P = MatMul(X as [seq * batch, in], W^T) + Wb (+ Rb where it only adds),
//   then per step t (from the end for the reverse direction)
//     gates = P[t] + MatMul(H, R^T), sliced into the cell's gates, activated,
//   and the state update of the ONNX equations: LSTM peepholes,
//   input_forget and clip; GRU's linear_before_reset (its reset gate applied
//   before or after the recurrent product). Y stacks every step's H, Y_h and
//   Y_c are the last step's; both layouts. Sequence lengths shorter than the
//   input, activations without an ONNX op (Affine, ScaledTanh), non-f32 ops
//   and more than 256 steps over all directions (the graph grows by a dozen
//   nodes a step) are left alone. Exact up to the summation order.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// Steps (over all directions) up to which a recurrent op is unrolled.
constexpr int64_t kMaxUnrolledSteps = 256;

enum class Cell { Rnn, Gru, Lstm };

/// An activation function as the ONNX op that computes it.
struct Activation {
  std::string op;
  std::vector<std::pair<std::string, ir::Attribute>> attrs;
};

struct Recurrent {
  Cell cell = Cell::Lstm;
  int64_t gates = 1, seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batchFirst = false, reverse = false, linearBeforeReset = false, inputForget = false;
  std::optional<float> clip;
  std::vector<Activation> acts;  ///< per direction, the cell's functions in ONNX order
  Tensor w, r, b, p;             ///< f32 constants; b and p undefined when absent
};

/// The activations of `n` for `dirs` directions as ops; nullopt for one without an op of its own.
std::optional<std::vector<Activation>> activationsOf(const ir::Node& n, size_t perDir, int64_t dirs,
                                                    const std::vector<std::string>& defaults) {
  std::vector<std::string> names = n.getStrings("activations");
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != perDir * size_t(dirs)) return std::nullopt;
  const std::vector<float>& alphas = n.getFloats("activation_alpha");
  const std::vector<float>& betas = n.getFloats("activation_beta");
  // Each function's default alpha and beta (NaN: it takes none), as the ONNX recurrent ops define them.
  const float none = std::nanf("");
  static const std::map<std::string, std::pair<float, float>> kParameters = {
      {"Sigmoid", {none, none}},  {"Tanh", {none, none}},  {"Relu", {none, none}},
      {"Softsign", {none, none}}, {"Softplus", {none, none}}, {"LeakyRelu", {0.01f, none}},
      {"ThresholdedRelu", {1.0f, none}}, {"Elu", {1.0f, none}}, {"HardSigmoid", {0.2f, 0.5f}}};
  std::vector<Activation> out;
  size_t alphaAt = 0, betaAt = 0;
  for (const std::string& name : names) {
    auto it = kParameters.find(name);
    if (it == kParameters.end()) return std::nullopt;
    Activation a{name, {}};
    if (!std::isnan(it->second.first))
      a.attrs.push_back({"alpha", ir::Attribute(alphaAt < alphas.size() ? alphas[alphaAt++] : it->second.first)});
    if (!std::isnan(it->second.second))
      a.attrs.push_back({"beta", ir::Attribute(betaAt < betas.size() ? betas[betaAt++] : it->second.second)});
    out.push_back(std::move(a));
  }
  return out;
}

/// The f32 constant operand `i` of `n`, or nothing.
std::optional<Tensor> f32Constant(const ir::Node& n, size_t i) {
  const Tensor* t = n.hasInput(i) ? constantValue(n.input(i)) : nullptr;
  if (!t || t->dtype() != DType::F32) return std::nullopt;
  return *t;
}

std::optional<Recurrent> recurrentOf(const ir::Node& n) {
  Recurrent s;
  if (isOp(&n, ir::Op::LSTM)) s.cell = Cell::Lstm, s.gates = 4;
  else if (isOp(&n, ir::Op::GRU)) s.cell = Cell::Gru, s.gates = 3;
  else if (isOp(&n, ir::Op::RNN)) s.cell = Cell::Rnn, s.gates = 1;
  else return std::nullopt;
  const ir::Value* x = n.input(0);
  if (!x->type().isTensor() || !x->tensorType().isStatic() || x->tensorType().rank() != 3 ||
      x->tensorType().dtype() != DType::F32)
    return std::nullopt;
  std::optional<Tensor> w = f32Constant(n, 1), r = f32Constant(n, 2);
  if (!w || !r || w->rank() != 3) return std::nullopt;
  const std::string direction = n.getString("direction");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.batchFirst = n.getInt("layout") != 0;
  const Dims& xd = x->tensorType().dims();
  s.seq = xd[s.batchFirst ? 1 : 0];
  s.batch = xd[s.batchFirst ? 0 : 1];
  s.input = xd[2];
  s.hidden = n.hasAttr("hidden_size") ? n.getInt("hidden_size") : w->dim(1) / s.gates;
  const int64_t gh = s.gates * s.hidden;
  if (w->dims() != Dims{s.dirs, gh, s.input} || r->dims() != Dims{s.dirs, gh, s.hidden}) return std::nullopt;
  if (s.seq < 1 || s.seq * s.dirs > kMaxUnrolledSteps) return std::nullopt;
  s.w = std::move(*w);
  s.r = std::move(*r);
  if (n.hasInput(3)) {
    std::optional<Tensor> b = f32Constant(n, 3);
    if (!b || b->numElements() != s.dirs * 2 * gh) return std::nullopt;
    s.b = std::move(*b);
  }
  if (n.hasInput(4)) {  // sequence lengths: only the full length
    const Tensor* lens = constantValue(n.input(4));
    if (!lens) return std::nullopt;
    for (int64_t l : lens->toInt64s())
      if (l != s.seq) return std::nullopt;
  }
  for (size_t i : {size_t(5), size_t(6)})
    if (n.hasInput(i) && (!n.input(i)->type().isTensor() || !n.input(i)->tensorType().isStatic() ||
                          n.input(i)->tensorType().dtype() != DType::F32))
      return std::nullopt;
  if (s.cell == Cell::Lstm && n.hasInput(7)) {
    std::optional<Tensor> p = f32Constant(n, 7);
    if (!p || p->numElements() != s.dirs * 3 * s.hidden) return std::nullopt;
    s.p = std::move(*p);
  }
  if (n.hasAttr("clip")) s.clip = n.getFloat("clip");
  s.linearBeforeReset = s.cell == Cell::Gru && n.getInt("linear_before_reset") != 0;
  s.inputForget = s.cell == Cell::Lstm && n.getInt("input_forget") != 0;
  const std::vector<std::string> defaults = s.cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : s.cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                  : std::vector<std::string>{"Tanh"};
  std::optional<std::vector<Activation>> acts = activationsOf(n, defaults.size(), s.dirs, defaults);
  if (!acts) return std::nullopt;
  s.acts = std::move(*acts);
  return s;
}

/// Rows [first, first + rows) of direction `d` of a [dirs, R, C] tensor, transposed to [C, rows].
Tensor transposedRows(const Tensor& t, int64_t d, int64_t first, int64_t rows) {
  const int64_t R = t.dim(1), C = t.dim(2);
  const float* from = t.data<float>() + d * R * C;
  Tensor out = Tensor::forWrite(DType::F32, {C, rows});
  float* to = out.mutableData<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < C; ++c) to[c * rows + i] = from[(first + i) * C + c];
  return out;
}

/// Entries [first, first + count) of direction `d` of a [dirs, n] tensor read as flat.
Tensor entries(const Tensor& t, int64_t perDir, int64_t d, int64_t first, int64_t count) {
  Tensor out = Tensor::forWrite(DType::F32, {count});
  for (int64_t i = 0; i < count; ++i) out.mutableData<float>()[i] = t.data<float>()[d * perDir + first + i];
  return out;
}

/// One recurrent node's unrolled form, built before it.
class Unroller {
 public:
  Unroller(ir::Node* n, const Recurrent& s) : n_(n), s_(s), b_(n) {}

  Status run() {
    std::vector<std::vector<ir::Value*>> hs(size_t(s_.dirs));  // per direction, H after each time step
    std::vector<ir::Value*> lastH, lastC;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      KILN_TRY(direction(d, hs[size_t(d)]));
      lastH.push_back(h_);
      lastC.push_back(c_);
    }
    std::vector<ir::Value*> results(3, nullptr);
    if (used(0)) {
      KILN_ASSIGN(results[0], stackedY(hs));
    }
    if (used(1)) {
      KILN_ASSIGN(results[1], stackedState(lastH, "_y_h"));
    }
    if (s_.cell == Cell::Lstm && used(2)) {
      KILN_ASSIGN(results[2], stackedState(lastC, "_y_c"));
    }
    for (size_t i = 0; i < n_->numOutputs(); ++i) {
      if (!results[i]) continue;
      ir::Value* out = n_->output(i);
      if (out->type().isTensor() && out->tensorType().isStatic() && out->type() != results[i]->type())
        return makeError(ErrorCode::Internal, "lower-recurrent made ", results[i]->type().str(), " for ", out->name(),
                         " of type ", out->type().str());
      replaceValue(out, results[i], true);
    }
    eraseWithDeadProducers(n_);
    return Status::ok();
  }

 private:
  bool used(size_t i) const { return i < n_->numOutputs() && n_->output(i)->hasUses(); }
  std::string step(int64_t d, int64_t t) const { return "_d" + std::to_string(d) + "_t" + std::to_string(t); }

  ir::Value* cached(const std::string& key, const std::function<ir::Value*()>& make) {
    auto [it, fresh] = constants_.try_emplace(key, nullptr);
    if (fresh) it->second = make();
    return it->second;
  }
  ir::Value* scalar(float v) {
    return cached("f" + std::to_string(v), [&] { return b_.constant(Tensor::fromVector<float>({}, {v}), "_scalar"); });
  }
  ir::Value* index(int64_t i) {
    return cached("i" + std::to_string(i), [&] { return b_.constant(Tensor::fromVector<int64_t>({}, {i}), "_index"); });
  }
  ir::Value* ints(const std::vector<int64_t>& v) {
    std::string key = "v";
    for (int64_t x : v) key += std::to_string(x) + ",";
    return cached(key, [&] { return b_.ints(v, "_ints"); });
  }

  Expected<ir::Value*> op(const std::string& name, const std::vector<ir::Value*>& in, const std::string& suffix,
                          const std::vector<std::pair<std::string, ir::Attribute>>& attrs = {}) {
    return b_.node(name, in, attrs, suffix);
  }
  /// Columns [first, first + count) of a [batch, k] value.
  Expected<ir::Value*> columns(ir::Value* v, int64_t first, int64_t count, const std::string& suffix) {
    return op("Slice", {v, ints({first}), ints({first + count}), ints({1})}, suffix);
  }
  /// f(clip(x)) for activation `a` of direction `d`.
  Expected<ir::Value*> activate(size_t a, int64_t d, ir::Value* x, const std::string& suffix) {
    if (s_.clip) {
      KILN_ASSIGN(x, op("Clip", {x, scalar(-*s_.clip), scalar(*s_.clip)}, suffix + "_clip"));
    }
    const Activation& f = s_.acts[size_t(d) * s_.acts.size() / size_t(s_.dirs) + a];
    return op(f.op, {x}, suffix, f.attrs);
  }
  /// A direction's initial H (input 5) or C (input 6) as [batch, hidden]; zeros when absent.
  Expected<ir::Value*> initialState(size_t input, int64_t d) {
    if (!n_->hasInput(input))
      return cached("zeros", [&] { return b_.constant(Tensor::zeros(DType::F32, {s_.batch, s_.hidden}), "_zero_state"); });
    return op("Gather", {n_->input(input), index(d)}, "_initial" + std::to_string(input) + "_d" + std::to_string(d),
              {{"axis", int64_t(s_.batchFirst ? 1 : 0)}});
  }

  /// Every step's input projection, [seq, batch, gates * hidden].
  Expected<ir::Value*> inputProjection(int64_t d) {
    const int64_t gh = s_.gates * s_.hidden, H = s_.hidden;
    ir::Value* x = n_->input(0);
    if (s_.batchFirst) {
      KILN_ASSIGN(x, op("Transpose", {x}, "_time_major", {{"perm", std::vector<int64_t>{1, 0, 2}}}));
    }
    KILN_ASSIGN(ir::Value * rows, b_.reshape(x, {s_.seq * s_.batch, s_.input}, "_steps"));
    const std::string dir = "_d" + std::to_string(d);
    KILN_ASSIGN(ir::Value * p, op("MatMul", {rows, b_.constant(transposedRows(s_.w, d, 0, gh), dir + "_w")}, dir + "_x"));
    if (s_.b.defined()) {
      Tensor bias = entries(s_.b, 2 * gh, d, 0, gh);
      Tensor recurrent = entries(s_.b, 2 * gh, d, gh, gh);
      for (int64_t g = 0; g < gh; ++g)  // GRU with linear_before_reset applies Rb_h inside the reset gate
        if (!(s_.linearBeforeReset && g >= 2 * H)) bias.mutableData<float>()[g] += recurrent.data<float>()[g];
      KILN_ASSIGN(p, op("Add", {p, b_.constant(std::move(bias), dir + "_bias")}, dir + "_x_bias"));
    }
    return b_.reshape(p, {s_.seq, s_.batch, gh}, dir + "_x_steps");
  }

  /// Unrolls direction `d`: h_ and c_ end as its last state, `hs[t]` holds H after time step t.
  Status direction(int64_t d, std::vector<ir::Value*>& hs) {
    KILN_ASSIGN(ir::Value * projected, inputProjection(d));
    KILN_ASSIGN(h_, initialState(5, d));
    if (s_.cell == Cell::Lstm) {
      KILN_ASSIGN(c_, initialState(6, d));
    }
    hs.assign(size_t(s_.seq), nullptr);
    const bool reverse = s_.reverse || d == 1;
    for (int64_t k = 0; k < s_.seq; ++k) {
      const int64_t t = reverse ? s_.seq - 1 - k : k;
      KILN_ASSIGN(ir::Value * xt, op("Gather", {projected, index(t)}, step(d, t) + "_x", {{"axis", int64_t(0)}}));
      if (s_.cell == Cell::Lstm) KILN_TRY(lstmStep(d, t, xt));
      else if (s_.cell == Cell::Gru) KILN_TRY(gruStep(d, t, xt));
      else KILN_TRY(rnnStep(d, t, xt));
      hs[size_t(t)] = h_;
    }
    return Status::ok();
  }

  /// H R^T for rows [first, first + rows) of direction d's R.
  Expected<ir::Value*> recurrentProduct(ir::Value* h, int64_t d, int64_t first, int64_t rows, const std::string& suffix) {
    ir::Value* rt = cached("r" + std::to_string(d) + "_" + std::to_string(first), [&] {
      return b_.constant(transposedRows(s_.r, d, first, rows), "_d" + std::to_string(d) + "_r");
    });
    return op("MatMul", {h, rt}, suffix);
  }

  /// A [hidden] slice of the peephole weights P (i, o, f) of direction d.
  ir::Value* peephole(int64_t d, int64_t which) {
    return cached("p" + std::to_string(d) + "_" + std::to_string(which), [&] {
      return b_.constant(entries(s_.p, 3 * s_.hidden, d, which * s_.hidden, s_.hidden), "_peephole");
    });
  }

  Status rnnStep(int64_t d, int64_t t, ir::Value* xt) {
    const std::string at = step(d, t);
    KILN_ASSIGN(ir::Value * hr, recurrentProduct(h_, d, 0, s_.hidden, at + "_h"));
    KILN_ASSIGN(ir::Value * pre, op("Add", {xt, hr}, at + "_pre"));
    KILN_ASSIGN(h_, activate(0, d, pre, at + "_h_next"));
    return Status::ok();
  }

  Status lstmStep(int64_t d, int64_t t, ir::Value* xt) {
    const int64_t H = s_.hidden;
    const std::string at = step(d, t);
    KILN_ASSIGN(ir::Value * hr, recurrentProduct(h_, d, 0, 4 * H, at + "_h"));
    KILN_ASSIGN(ir::Value * gates, op("Add", {xt, hr}, at + "_gates"));
    std::vector<ir::Value*> g(4);  // i, o, f, c in ONNX's order
    const char* names[] = {"_i", "_o", "_f", "_c"};
    for (int64_t k = 0; k < 4; ++k) {
      KILN_ASSIGN(g[size_t(k)], columns(gates, k * H, H, at + names[k] + "_pre"));
    }
    if (s_.p.defined()) {
      for (int64_t k : {0, 2}) {  // i and f see the previous cell state
        KILN_ASSIGN(ir::Value * peek, op("Mul", {c_, peephole(d, k == 0 ? 0 : 2)}, at + names[k] + "_peephole"));
        KILN_ASSIGN(g[size_t(k)], op("Add", {g[size_t(k)], peek}, at + names[k] + "_peeped"));
      }
    }
    KILN_ASSIGN(ir::Value * i, activate(0, d, g[0], at + "_input_gate"));
    ir::Value* f = nullptr;
    if (s_.inputForget) {
      KILN_ASSIGN(f, op("Sub", {scalar(1.0f), i}, at + "_forget_gate"));
    } else {
      KILN_ASSIGN(f, activate(0, d, g[2], at + "_forget_gate"));
    }
    KILN_ASSIGN(ir::Value * candidate, activate(1, d, g[3], at + "_candidate"));
    KILN_ASSIGN(ir::Value * kept, op("Mul", {f, c_}, at + "_kept"));
    KILN_ASSIGN(ir::Value * added, op("Mul", {i, candidate}, at + "_added"));
    KILN_ASSIGN(c_, op("Add", {kept, added}, at + "_c_next"));
    ir::Value* o = g[1];
    if (s_.p.defined()) {  // o sees the new cell state
      KILN_ASSIGN(ir::Value * peek, op("Mul", {c_, peephole(d, 1)}, at + "_o_peephole"));
      KILN_ASSIGN(o, op("Add", {o, peek}, at + "_o_peeped"));
    }
    KILN_ASSIGN(o, activate(0, d, o, at + "_output_gate"));
    KILN_ASSIGN(ir::Value * squashed, activate(2, d, c_, at + "_c_squashed"));
    KILN_ASSIGN(h_, op("Mul", {o, squashed}, at + "_h_next"));
    return Status::ok();
  }

  Status gruStep(int64_t d, int64_t t, ir::Value* xt) {
    const int64_t H = s_.hidden;
    const std::string at = step(d, t);
    KILN_ASSIGN(ir::Value * xzr, columns(xt, 0, 2 * H, at + "_x_zr"));
    KILN_ASSIGN(ir::Value * xh, columns(xt, 2 * H, H, at + "_x_h"));
    ir::Value* hzr = nullptr;
    ir::Value* hh = nullptr;  // linear_before_reset: H R_h^T + Rb_h, before the reset gate
    if (s_.linearBeforeReset) {
      KILN_ASSIGN(ir::Value * hr, recurrentProduct(h_, d, 0, 3 * H, at + "_h"));
      KILN_ASSIGN(hzr, columns(hr, 0, 2 * H, at + "_h_zr"));
      KILN_ASSIGN(hh, columns(hr, 2 * H, H, at + "_h_h"));
      if (s_.b.defined()) {
        ir::Value* rbh = cached("rbh" + std::to_string(d), [&] {
          return b_.constant(entries(s_.b, 6 * H, d, 5 * H, H), "_d" + std::to_string(d) + "_rb_h");
        });
        KILN_ASSIGN(hh, op("Add", {hh, rbh}, at + "_h_h_bias"));
      }
    } else {
      KILN_ASSIGN(hzr, recurrentProduct(h_, d, 0, 2 * H, at + "_h_zr"));
    }
    KILN_ASSIGN(ir::Value * zr, op("Add", {xzr, hzr}, at + "_zr"));
    KILN_ASSIGN(ir::Value * zPre, columns(zr, 0, H, at + "_z_pre"));
    KILN_ASSIGN(ir::Value * rPre, columns(zr, H, H, at + "_r_pre"));
    KILN_ASSIGN(ir::Value * z, activate(0, d, zPre, at + "_update_gate"));
    KILN_ASSIGN(ir::Value * reset, activate(0, d, rPre, at + "_reset_gate"));
    ir::Value* recurrent = nullptr;
    if (s_.linearBeforeReset) {
      KILN_ASSIGN(recurrent, op("Mul", {reset, hh}, at + "_h_reset"));
    } else {
      KILN_ASSIGN(ir::Value * resetH, op("Mul", {reset, h_}, at + "_reset_h"));
      KILN_ASSIGN(recurrent, recurrentProduct(resetH, d, 2 * H, H, at + "_h_reset"));
    }
    KILN_ASSIGN(ir::Value * candidatePre, op("Add", {xh, recurrent}, at + "_candidate_pre"));
    KILN_ASSIGN(ir::Value * candidate, activate(1, d, candidatePre, at + "_candidate"));
    KILN_ASSIGN(ir::Value * keep, op("Sub", {scalar(1.0f), z}, at + "_one_minus_z"));
    KILN_ASSIGN(ir::Value * fresh, op("Mul", {keep, candidate}, at + "_fresh"));
    KILN_ASSIGN(ir::Value * old, op("Mul", {z, h_}, at + "_old"));
    KILN_ASSIGN(h_, op("Add", {fresh, old}, at + "_h_next"));
    return Status::ok();
  }

  /// Y: [seq, dirs, batch, hidden], or [batch, seq, dirs, hidden] with layout 1.
  Expected<ir::Value*> stackedY(const std::vector<std::vector<ir::Value*>>& hs) {
    std::vector<ir::Value*> perDir;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      std::vector<ir::Value*> steps;
      for (int64_t t = 0; t < s_.seq; ++t) {
        KILN_ASSIGN(ir::Value * one, op("Unsqueeze", {hs[size_t(d)][size_t(t)], ints({0, 1})}, step(d, t) + "_y"));
        steps.push_back(one);
      }
      KILN_ASSIGN(ir::Value * y, concat(steps, 0, "_y_d" + std::to_string(d)));
      perDir.push_back(y);
    }
    KILN_ASSIGN(ir::Value * y, concat(perDir, 1, "_y"));
    if (!s_.batchFirst) return y;
    return op("Transpose", {y}, "_y_batch_major", {{"perm", std::vector<int64_t>{2, 0, 1, 3}}});
  }

  /// Y_h or Y_c: [dirs, batch, hidden], or [batch, dirs, hidden] with layout 1.
  Expected<ir::Value*> stackedState(const std::vector<ir::Value*>& last, const std::string& suffix) {
    std::vector<ir::Value*> parts;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      KILN_ASSIGN(ir::Value * one, op("Unsqueeze", {last[size_t(d)], ints({0})}, suffix + "_d" + std::to_string(d)));
      parts.push_back(one);
    }
    KILN_ASSIGN(ir::Value * state, concat(parts, 0, suffix));
    if (!s_.batchFirst) return state;
    return op("Transpose", {state}, suffix + "_batch_major", {{"perm", std::vector<int64_t>{1, 0, 2}}});
  }

  Expected<ir::Value*> concat(const std::vector<ir::Value*>& parts, int64_t axis, const std::string& suffix) {
    if (parts.size() == 1) return parts[0];
    return op("Concat", parts, suffix, {{"axis", axis}});
  }

  ir::Node* n_;
  const Recurrent& s_;
  NodeBuilder b_;
  std::map<std::string, ir::Value*> constants_;
  ir::Value* h_ = nullptr;
  ir::Value* c_ = nullptr;
};

class LowerRecurrent final : public MatchingPattern<Recurrent> {
 public:
  std::optional<Recurrent> match(ir::Node& n) const override { return recurrentOf(n); }
  Status apply(ir::Node& n, const Recurrent& s) const override { return Unroller(&n, s).run(); }
};

}  // namespace

PassInfo lowerRecurrentPass() {
  PassInfo p;
  p.name = "lower-recurrent";
  p.summary = "Unroll RNN, GRU and LSTM with constant weights into matmuls and element-wise ops";
  p.description =
      "Turns an f32 RNN, GRU or LSTM with constant weights, static shapes, full sequence lengths and at most 256 "
      "steps over its directions into one input-projection MatMul per direction and, per time step, a recurrent "
      "MatMul, gate slices, activations and the state update (LSTM peepholes, input_forget and clip; GRU "
      "linear_before_reset), so it runs on kernel templates instead of the reference kernel as a host step. "
      "Activations without an ONNX op (Affine, ScaledTanh) stay. Exact up to the summation order (1e-5).";
  // Speech and sequence models of any class carry recurrent layers; a model
  // without one prunes the pass as not applicable.
  p.classes = {"BL", "RN", "MN", "SSD", "BR"};
  p.tolerance = 1e-5;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<LowerRecurrent>()});
  return p;
}

}  // namespace kiln::passes
