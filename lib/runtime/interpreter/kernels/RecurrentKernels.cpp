//===- lib/runtime/interpreter/kernels/RecurrentKernels.cpp - RNN, GRU, LSTM -===//
//
// The ONNX recurrent equations, step by step in double: forward, reverse or
// bidirectional, both layouts, per-batch sequence lengths, clipping, custom
// activations (with activation_alpha/beta), GRU linear_before_reset, LSTM
// peepholes and input_forget.
//
//===----------------------------------------------------------------------===//
#include <map>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(x, 0.0);
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

Expected<std::vector<Activation>> activations(const ir::Node& n, size_t perDir, int64_t dirs,
                                              const std::vector<std::string>& defaults) {
  const auto& names = n.getStrings("activations");
  std::vector<std::string> list = names;
  if (list.empty())
    for (int64_t d = 0; d < dirs; ++d) list.insert(list.end(), defaults.begin(), defaults.end());
  if (list.size() != perDir * size_t(dirs))
    return kernelError("activations must list " + std::to_string(perDir * size_t(dirs)) + " functions");
  const auto& alphas = n.getFloats("activation_alpha");
  const auto& betas = n.getFloats("activation_beta");
  static const std::map<std::string, std::pair<double, double>> kDefaults = {
      {"Sigmoid", {0, 0}},   {"Tanh", {0, 0}},      {"Relu", {0, 0}},        {"Affine", {1, 0}},
      {"LeakyRelu", {0.01, 0}}, {"ThresholdedRelu", {1, 0}}, {"ScaledTanh", {1, 1}}, {"HardSigmoid", {0.2, 0.5}},
      {"Elu", {1, 0}},       {"Softsign", {0, 0}},  {"Softplus", {0, 0}}};
  std::vector<Activation> out;
  size_t ai = 0, bi = 0;
  for (const auto& name : list) {
    auto it = kDefaults.find(name);
    if (it == kDefaults.end()) return kernelError("unknown activation '" + name + "'");
    Activation a{name, it->second.first, it->second.second};
    bool usesAlpha = name == "Affine" || name == "LeakyRelu" || name == "ThresholdedRelu" || name == "ScaledTanh" ||
                     name == "HardSigmoid" || name == "Elu";
    bool usesBeta = name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid";
    if (usesAlpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (usesBeta && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

enum class Cell { Rnn, Gru, Lstm };

template <Cell cell>
Status kRecurrent(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const Tensor &x = ctx.input(0), &w = ctx.input(1), &r = ctx.input(2);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  constexpr int64_t G = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const std::string& dir = n.getString("direction");
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  bool batchFirst = n.getInt("layout") != 0;
  int64_t seq = x.dim(batchFirst ? 1 : 0), batch = x.dim(batchFirst ? 0 : 1), in = x.dim(2);
  int64_t H = n.hasAttr("hidden_size") ? n.getInt("hidden_size") : w.dim(1) / G;
  if (w.dims() != Dims{dirs, G * H, in} || r.dims() != Dims{dirs, G * H, H})
    return kernelError("W or R has the wrong shape for hidden_size " + std::to_string(H));
  std::vector<std::string> defaults = cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Tanh"};
  KILN_ASSIGN(std::vector<Activation> acts, activations(n, defaults.size(), dirs, defaults));
  std::optional<double> clip;
  if (n.hasAttr("clip")) clip = n.getFloat("clip");
  bool lbr = cell == Cell::Gru && n.getInt("linear_before_reset");
  bool inputForget = cell == Cell::Lstm && n.getInt("input_forget");
  std::vector<double> xv = x.toDoubles(), wv = w.toDoubles(), rv = r.toDoubles();
  std::vector<double> bv(size_t(dirs * 2 * G * H), 0.0);
  if (ctx.hasInput(3)) bv = ctx.input(3).toDoubles();
  if (int64_t(bv.size()) != dirs * 2 * G * H) return kernelError("B has the wrong size");
  std::vector<int64_t> lens(size_t(batch), seq);
  if (ctx.hasInput(4)) lens = ctx.input(4).toInt64s();
  if (int64_t(lens.size()) != batch) return kernelError("sequence_lens must have one entry per batch");
  for (int64_t l : lens)
    if (l < 0 || l > seq) return kernelError("sequence length out of range");
  auto stateInput = [&](size_t i) -> Expected<std::vector<double>> {
    std::vector<double> s(size_t(dirs * batch * H), 0.0);
    if (!ctx.hasInput(i)) return s;
    std::vector<double> v = ctx.input(i).toDoubles();
    if (v.size() != s.size()) return kernelError("initial state has the wrong size");
    if (!batchFirst) return v;
    for (int64_t b = 0; b < batch; ++b)  // [batch, dirs, H] -> [dirs, batch, H]
      for (int64_t d = 0; d < dirs; ++d)
        for (int64_t h = 0; h < H; ++h) s[size_t((d * batch + b) * H + h)] = v[size_t((b * dirs + d) * H + h)];
    return s;
  };
  KILN_ASSIGN(std::vector<double> hState, stateInput(5));
  KILN_ASSIGN(std::vector<double> cState, stateInput(6));
  std::vector<double> peep(size_t(dirs * 3 * H), 0.0);
  if (cell == Cell::Lstm && ctx.hasInput(7)) peep = ctx.input(7).toDoubles();
  if (int64_t(peep.size()) != dirs * 3 * H) return kernelError("P has the wrong size");
  std::vector<double> y(size_t(seq * dirs * batch * H), 0.0);
  auto xAt = [&](int64_t t, int64_t b, int64_t i) {
    return xv[size_t(batchFirst ? (b * seq + t) * in + i : (t * batch + b) * in + i)];
  };
  auto clipped = [&](double v) { return clip ? std::clamp(v, -*clip, *clip) : v; };
  std::vector<double> gx(size_t(G * H)), gh(size_t(G * H));
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = dir == "reverse" || d == 1;
    const Activation* f = &acts[size_t(d) * defaults.size()];
    const double* W = wv.data() + d * G * H * in;
    const double* R = rv.data() + d * G * H * H;
    const double* Wb = bv.data() + d * 2 * G * H;
    const double* Rb = Wb + G * H;
    const double* P = peep.data() + d * 3 * H;
    for (int64_t b = 0; b < batch; ++b) {
      double* h = hState.data() + (d * batch + b) * H;
      double* c = cState.data() + (d * batch + b) * H;
      for (int64_t s = 0; s < lens[size_t(b)]; ++s) {
        int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
        for (int64_t g = 0; g < G * H; ++g) {
          double ax = Wb[g], ah = Rb[g];
          for (int64_t i = 0; i < in; ++i) ax += W[g * in + i] * xAt(t, b, i);
          for (int64_t k = 0; k < H; ++k) ah += R[g * H + k] * h[k];
          gx[size_t(g)] = ax;
          gh[size_t(g)] = ah;
        }
        std::vector<double> next(static_cast<size_t>(H)), resetGate(static_cast<size_t>(H));
        if constexpr (cell == Cell::Gru)
          for (int64_t j = 0; j < H; ++j) resetGate[size_t(j)] = f[0](clipped(gx[size_t(H + j)] + gh[size_t(H + j)]));
        for (int64_t k = 0; k < H; ++k) {
          if constexpr (cell == Cell::Rnn) {
            next[size_t(k)] = f[0](clipped(gx[size_t(k)] + gh[size_t(k)]));
          } else if constexpr (cell == Cell::Gru) {
            double z = f[0](clipped(gx[size_t(k)] + gh[size_t(k)]));
            double rr = resetGate[size_t(k)];
            double hh;
            if (lbr) {
              hh = f[1](clipped(gx[size_t(2 * H + k)] + rr * gh[size_t(2 * H + k)]));
            } else {
              double acc = Rb[2 * H + k];
              for (int64_t j = 0; j < H; ++j) acc += R[(2 * H + k) * H + j] * resetGate[size_t(j)] * h[j];
              hh = f[1](clipped(gx[size_t(2 * H + k)] + acc));
            }
            next[size_t(k)] = (1 - z) * hh + z * h[k];
          } else {
            double ig = f[0](clipped(gx[size_t(k)] + gh[size_t(k)] + P[k] * c[k]));
            double fg = inputForget ? 1 - ig : f[0](clipped(gx[size_t(2 * H + k)] + gh[size_t(2 * H + k)] + P[2 * H + k] * c[k]));
            double cc = f[1](clipped(gx[size_t(3 * H + k)] + gh[size_t(3 * H + k)]));
            double cNew = fg * c[k] + ig * cc;
            double og = f[0](clipped(gx[size_t(H + k)] + gh[size_t(H + k)] + P[H + k] * cNew));
            next[size_t(k)] = og * f[2](cNew);
            c[k] = cNew;  // c[k] is only read for gate k above
          }
        }
        std::copy(next.begin(), next.end(), h);
        for (int64_t k = 0; k < H; ++k) y[size_t(((t * dirs + d) * batch + b) * H + k)] = h[k];
      }
    }
  }
  auto store = [&](size_t out, const Dims& dims, auto&& at) {
    if (ctx.numOutputs() <= out) return;
    Tensor& t = ctx.allocate(out, x.dtype(), dims);
    dispatchDType(x.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < t.numElements(); ++i) t.mutableData<T>()[i] = convertValue<T, double>(at(i));
    });
  };
  // Y: [seq, dirs, batch, H] or (layout 1) [batch, seq, dirs, H].
  store(0, batchFirst ? Dims{batch, seq, dirs, H} : Dims{seq, dirs, batch, H}, [&](int64_t i) {
    if (!batchFirst) return y[size_t(i)];
    int64_t k = i % H, d = (i / H) % dirs, t = (i / (H * dirs)) % seq, b = i / (H * dirs * seq);
    return y[size_t(((t * dirs + d) * batch + b) * H + k)];
  });
  auto stateAt = [&](const std::vector<double>& s) {
    return [&, batchFirst](int64_t i) {
      if (!batchFirst) return s[size_t(i)];
      int64_t k = i % H, d = (i / H) % dirs, b = i / (H * dirs);
      return s[size_t((d * batch + b) * H + k)];
    };
  };
  Dims stateDims = batchFirst ? Dims{batch, dirs, H} : Dims{dirs, batch, H};
  store(1, stateDims, stateAt(hState));
  if constexpr (cell == Cell::Lstm) store(2, stateDims, stateAt(cState));
  return Status::ok();
}

}  // namespace

void registerRecurrentKernels(KernelRegistry& r) {
  r.add("RNN", kRecurrent<Cell::Rnn>);
  r.add("GRU", kRecurrent<Cell::Gru>);
  r.add("LSTM", kRecurrent<Cell::Lstm>);
}

}  // namespace kiln::runtime
