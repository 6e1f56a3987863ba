//===- lib/runtime/interpreter/kernels/LossAndTrainingKernels.cpp - Losses and optimisers -===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (weights, ignore_index,
// none/sum/mean reductions), and single steps of the Adagrad, Adam and
// Momentum optimisers of the ai.onnx.preview.training domain.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// NLL of log-probabilities `logp` [N, C, d...] against `target` [N, d...].
Status nll(KernelContext& ctx, const std::vector<double>& logp, const Dims& dims, Tensor& out) {
  const Tensor& target = ctx.input(1);
  int64_t n = dims[0], c = dims[1], d = 1;
  for (size_t k = 2; k < dims.size(); ++k) d *= dims[k];
  if (target.numElements() != n * d) return kernelError("target does not match the input's shape");
  std::vector<int64_t> t = target.toInt64s();
  std::vector<double> weight;
  if (ctx.hasInput(2)) {
    weight = ctx.input(2).toDoubles();
    if (int64_t(weight.size()) != c) return kernelError("weight must have one value per class");
  }
  const ir::Attribute* ignoreAttr = ctx.node().findAttr("ignore_index");
  std::optional<int64_t> ignore;
  if (ignoreAttr) ignore = ignoreAttr->i();
  const std::string& reduction = ctx.node().getString("reduction");
  std::vector<double> loss(size_t(n * d)), w(size_t(n * d), 1.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      int64_t cls = t[size_t(i * d + k)];
      if (ignore && cls == *ignore) {
        w[size_t(i * d + k)] = 0;
        loss[size_t(i * d + k)] = 0;
        continue;
      }
      if (cls < 0 || cls >= c) return kernelError("target class " + std::to_string(cls) + " is out of range");
      if (!weight.empty()) w[size_t(i * d + k)] = weight[size_t(cls)];
      loss[size_t(i * d + k)] = -logp[size_t((i * c + cls) * d + k)] * w[size_t(i * d + k)];
    }
  if (reduction == "none") {
    storeValues(out, loss);
    return Status::ok();
  }
  double sum = 0, wsum = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    sum += loss[i];
    wsum += w[i];
  }
  bool weighted = !weight.empty() || ignore;
  double v = reduction == "sum" ? sum : (weighted ? sum / wsum : sum / double(loss.size()));
  storeValues(out, std::vector<double>{v});
  return Status::ok();
}

Status kNll(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  return nll(ctx, x.toDoubles(), x.dims(), ctx.allocate(0));
}

Status kSoftmaxCrossEntropy(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  int64_t n = x.dim(0), c = x.dim(1), d = x.numElements() / std::max<int64_t>(1, n * c);
  std::vector<double> v = x.toDoubles(), logp(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < c; ++j) mx = std::max(mx, v[size_t((i * c + j) * d + k)]);
      for (int64_t j = 0; j < c; ++j) sum += std::exp(v[size_t((i * c + j) * d + k)] - mx);
      for (int64_t j = 0; j < c; ++j) logp[size_t((i * c + j) * d + k)] = v[size_t((i * c + j) * d + k)] - mx - std::log(sum);
    }
  KILN_TRY(nll(ctx, logp, x.dims(), ctx.allocate(0)));
  if (ctx.numOutputs() > 1) storeValues(ctx.allocate(1), logp);
  return Status::ok();
}

enum class Optimizer { Adagrad, Adam, Momentum };

template <Optimizer op>
Status kOptimizer(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  KILN_ASSIGN(double r, scalarOperand(ctx, 0, "R"));
  KILN_ASSIGN(double t, scalarOperand(ctx, 1, "T"));
  size_t per = op == Optimizer::Adam ? 4 : 3, n = (ctx.numInputs() - 2) / per;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    std::vector<double> xv = x.toDoubles(), g = ctx.input(2 + n + i).toDoubles(), s1 = ctx.input(2 + 2 * n + i).toDoubles();
    if (g.size() != xv.size() || s1.size() != xv.size()) return kernelError("optimiser inputs differ in size");
    std::vector<double> xNew(xv.size()), s1New(xv.size()), s2New;
    if constexpr (op == Optimizer::Adagrad) {
      double decay = node.getFloat("decay_factor"), eps = node.getFloat("epsilon"), norm = node.getFloat("norm_coefficient");
      double rate = r / (1 + t * decay);
      for (size_t k = 0; k < xv.size(); ++k) {
        double gr = norm * xv[k] + g[k];
        s1New[k] = s1[k] + gr * gr;
        xNew[k] = xv[k] - rate * gr / (std::sqrt(s1New[k]) + eps);
      }
    } else if constexpr (op == Optimizer::Momentum) {
      double alpha = node.getFloat("alpha"), beta = node.getFloat("beta"), norm = node.getFloat("norm_coefficient");
      bool nesterov = node.getString("mode") == "nesterov";
      double b = t > 0 ? beta : 1.0;
      for (size_t k = 0; k < xv.size(); ++k) {
        double gr = norm * xv[k] + g[k];
        s1New[k] = alpha * s1[k] + b * gr;
        xNew[k] = nesterov ? xv[k] - r * (gr + alpha * s1New[k]) : xv[k] - r * s1New[k];
      }
    } else {
      std::vector<double> h = ctx.input(2 + 3 * n + i).toDoubles();
      if (h.size() != xv.size()) return kernelError("optimiser inputs differ in size");
      double alpha = node.getFloat("alpha"), beta = node.getFloat("beta"), eps = node.getFloat("epsilon");
      double norm = node.getFloat("norm_coefficient"), post = node.getFloat("norm_coefficient_post");
      double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
      s2New.resize(xv.size());
      for (size_t k = 0; k < xv.size(); ++k) {
        double gr = norm * xv[k] + g[k];
        s1New[k] = alpha * s1[k] + (1 - alpha) * gr;
        s2New[k] = beta * h[k] + (1 - beta) * gr * gr;
        xNew[k] = (1 - post) * (xv[k] - rate * (s1New[k] / (std::sqrt(s2New[k]) + eps)));
      }
    }
    storeValues(ctx.allocate(i, x.dtype(), x.dims()), xNew);
    storeValues(ctx.allocate(n + i, x.dtype(), x.dims()), s1New);
    if constexpr (op == Optimizer::Adam) storeValues(ctx.allocate(2 * n + i, x.dtype(), x.dims()), s2New);
  }
  return Status::ok();
}

}  // namespace

void registerLossAndTrainingKernels(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", kNll);
  r.add("SoftmaxCrossEntropyLoss", kSoftmaxCrossEntropy);
  r.add("ai.onnx.preview.training::Adagrad", kOptimizer<Optimizer::Adagrad>);
  r.add("ai.onnx.preview.training::Adam", kOptimizer<Optimizer::Adam>);
  r.add("ai.onnx.preview.training::Momentum", kOptimizer<Optimizer::Momentum>);
}

}  // namespace kiln::runtime
