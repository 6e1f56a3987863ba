//===- lib/runtime/interpreter/kernels/NormalizationKernels.cpp - Normalisation -===//
//
// BatchNormalization (inference and training), Instance/Layer normalisation,
// LRN, MeanVarianceNormalization, LpNormalization, Softmax/LogSoftmax/Hardmax
// along one axis, and Dropout. Statistics are computed in double.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Splits dims around `axis` into outer * n * inner.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit splitAt(const Dims& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d) {
    if (d < axis) s.outer *= dims[size_t(d)];
    else if (d == axis) s.n = dims[size_t(d)];
    else s.inner *= dims[size_t(d)];
  }
  return s;
}

Status kBatchNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  double eps = ctx.node().getFloat("epsilon"), momentum = ctx.node().getFloat("momentum");
  bool training = ctx.node().getInt("training_mode") != 0;
  std::vector<double> xv = loadValues<double>(x), scale = loadValues<double>(ctx.input(1)), bias = loadValues<double>(ctx.input(2)),
                      mean = loadValues<double>(ctx.input(3)), var = loadValues<double>(ctx.input(4));
  AxisSplit s = splitAt(x.dims(), 1);
  for (const auto* v : {&scale, &bias, &mean, &var})
    if (int64_t(v->size()) != s.n) return kernelError("scale, B, mean and var must have one value per channel");
  std::vector<double> useMean = mean, useVar = var;
  if (training) {
    for (int64_t c = 0; c < s.n; ++c) {
      double sum = 0, sq = 0, cnt = double(s.outer * s.inner);
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          double v = xv[size_t((o * s.n + c) * s.inner + i)];
          sum += v;
          sq += v * v;
        }
      useMean[size_t(c)] = cnt ? sum / cnt : 0;
      useVar[size_t(c)] = cnt ? sq / cnt - useMean[size_t(c)] * useMean[size_t(c)] : 0;
    }
  }
  std::vector<double> y(xv.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.n; ++c) {
      double k = scale[size_t(c)] / std::sqrt(useVar[size_t(c)] + eps);
      for (int64_t i = 0; i < s.inner; ++i) {
        size_t idx = size_t((o * s.n + c) * s.inner + i);
        y[idx] = (xv[idx] - useMean[size_t(c)]) * k + bias[size_t(c)];
      }
    }
  storeValues(ctx.allocate(0), y);
  if (ctx.numOutputs() > 1) {
    std::vector<double> rm(size_t(s.n)), rv(size_t(s.n));
    for (int64_t c = 0; c < s.n; ++c) {
      rm[size_t(c)] = training ? mean[size_t(c)] * momentum + useMean[size_t(c)] * (1 - momentum) : mean[size_t(c)];
      rv[size_t(c)] = training ? var[size_t(c)] * momentum + useVar[size_t(c)] * (1 - momentum) : var[size_t(c)];
    }
    storeValues(ctx.allocate(1), rm);
    if (ctx.numOutputs() > 2) storeValues(ctx.allocate(2), rv);
  }
  return Status::ok();
}

Status kInstanceNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  double eps = ctx.node().getFloat("epsilon");
  std::vector<double> xv = loadValues<double>(x), scale = loadValues<double>(ctx.input(1)), bias = loadValues<double>(ctx.input(2));
  int64_t n = x.dim(0), c = x.dim(1), size = n * c != 0 ? x.numElements() / (n * c) : 0;
  if (int64_t(scale.size()) != c || int64_t(bias.size()) != c) return kernelError("scale and B need one value per channel");
  std::vector<double> y(xv.size());
  for (int64_t p = 0; p < n * c; ++p) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < size; ++i) sum += xv[size_t(p * size + i)];
    double mean = size ? sum / double(size) : 0;
    for (int64_t i = 0; i < size; ++i) sq += (xv[size_t(p * size + i)] - mean) * (xv[size_t(p * size + i)] - mean);
    double k = scale[size_t(p % c)] / std::sqrt((size ? sq / double(size) : 0) + eps);
    for (int64_t i = 0; i < size; ++i) y[size_t(p * size + i)] = (xv[size_t(p * size + i)] - mean) * k + bias[size_t(p % c)];
  }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

/// Values of `t` broadcast (unidirectionally) to `dims`.
Expected<std::vector<double>> broadcastTo(const Tensor& t, const Dims& dims, const char* what) {
  auto b = ir::broadcastDims(dims, t.dims());
  if (!b || *b != dims) return kernelError(std::string(what) + " " + t.typeString() + " does not broadcast to [" + dimsToString(dims) + "]");
  std::vector<double> src = t.toDoubles(), out(static_cast<size_t>(numElements(dims)));
  std::array<Dims, 1> strides = {broadcastStrides(t.dims(), dims)};
  forEachBroadcast<1>(dims, strides, [&](int64_t o, const std::array<int64_t, 1>& off) { out[size_t(o)] = src[size_t(off[0])]; });
  return out;
}

Status kLayerNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  double eps = ctx.node().getFloat("epsilon");
  Dims normDims(x.dims().begin() + axis, x.dims().end());
  int64_t size = numElements(normDims), rows = size ? x.numElements() / size : 0;
  KILN_ASSIGN(std::vector<double> scale, broadcastTo(ctx.input(1), normDims, "Scale"));
  std::vector<double> bias(size_t(size), 0.0);
  if (ctx.hasInput(2)) {
    KILN_ASSIGN(bias, broadcastTo(ctx.input(2), normDims, "B"));
  }
  std::vector<double> xv = loadValues<double>(x), y(xv.size()), means(static_cast<size_t>(rows)), inv(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < size; ++i) sum += xv[size_t(r * size + i)];
    double mean = sum / double(size);
    for (int64_t i = 0; i < size; ++i) sq += (xv[size_t(r * size + i)] - mean) * (xv[size_t(r * size + i)] - mean);
    double invStd = 1.0 / std::sqrt(sq / double(size) + eps);
    means[size_t(r)] = mean;
    inv[size_t(r)] = invStd;
    for (int64_t i = 0; i < size; ++i)
      y[size_t(r * size + i)] = (xv[size_t(r * size + i)] - mean) * invStd * scale[size_t(i)] + bias[size_t(i)];
  }
  storeValues(ctx.allocate(0), y);
  if (ctx.numOutputs() > 1) storeValues(ctx.allocate(1), means);
  if (ctx.numOutputs() > 2) storeValues(ctx.allocate(2), inv);
  return Status::ok();
}

Status kLRN(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype()) || x.rank() < 3) return kernelError("LRN needs a float tensor of rank >= 3");
  int64_t size = ctx.node().getInt("size");
  if (size <= 0) return kernelError("size must be positive");
  double alpha = ctx.node().getFloat("alpha"), beta = ctx.node().getFloat("beta"), bias = ctx.node().getFloat("bias");
  AxisSplit s = splitAt(x.dims(), 1);
  std::vector<double> xv = loadValues<double>(x), y(xv.size());
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.n; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(s.n - 1, c + hi); ++k) {
          double v = xv[size_t((o * s.n + k) * s.inner + i)];
          sq += v * v;
        }
        size_t idx = size_t((o * s.n + c) * s.inner + i);
        y[idx] = xv[idx] / std::pow(bias + alpha / double(size) * sq, beta);
      }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

Status kMVN(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  KILN_ASSIGN(std::vector<int64_t> axes, ir::normalizeAxes(ctx.node().getInts("axes"), x.rank()));
  std::vector<double> xv = loadValues<double>(x), y(xv.size());
  // Map each element to its statistics group (the dims not in axes).
  Dims kept;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(x.dim(d));
  Dims map(size_t(x.rank()), 0), keptStrides = stridesOf(kept);
  for (int64_t d = 0, k = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) map[size_t(d)] = keptStrides[size_t(k++)];
  int64_t groups = numElements(kept), count = groups ? x.numElements() / groups : 0;
  std::vector<double> sum(static_cast<size_t>(groups)), sq(static_cast<size_t>(groups));
  std::array<Dims, 1> strides = {map};
  forEachBroadcast<1>(x.dims(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    sum[size_t(off[0])] += xv[size_t(i)];
    sq[size_t(off[0])] += xv[size_t(i)] * xv[size_t(i)];
  });
  forEachBroadcast<1>(x.dims(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    double mean = sum[size_t(off[0])] / double(count);
    double var = sq[size_t(off[0])] / double(count) - mean * mean;
    y[size_t(i)] = (xv[size_t(i)] - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9);
  });
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

Status kLpNorm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  int64_t p = ctx.node().getInt("p");
  if (p != 1 && p != 2) return kernelError("p must be 1 or 2");
  AxisSplit s = splitAt(x.dims(), axis);
  std::vector<double> xv = loadValues<double>(x), y(xv.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < s.n; ++k) {
        double v = xv[size_t((o * s.n + k) * s.inner + i)];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < s.n; ++k) {
        size_t idx = size_t((o * s.n + k) * s.inner + i);
        y[idx] = norm == 0 ? 0 : xv[idx] / norm;
      }
    }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };
template <SoftmaxKind kind>
Status kSoftmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  AxisSplit s = splitAt(x.dims(), axis);
  std::vector<double> xv = loadValues<double>(x), y(xv.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t k) { return size_t((o * s.n + k) * s.inner + i); };
      double mx = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t k = 0; k < s.n; ++k)
        if (xv[at(k)] > mx) {
          mx = xv[at(k)];
          arg = k;
        }
      if constexpr (kind == SoftmaxKind::Hardmax) {
        for (int64_t k = 0; k < s.n; ++k) y[at(k)] = k == arg ? 1.0 : 0.0;
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += std::exp(xv[at(k)] - mx);
      for (int64_t k = 0; k < s.n; ++k)
        y[at(k)] = kind == SoftmaxKind::Softmax ? std::exp(xv[at(k)] - mx) / sum : xv[at(k)] - mx - std::log(sum);
    }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

Status kDropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  double ratio = ctx.hasInput(1) ? elementAsDouble(ctx.input(1), 0) : 0.5;
  bool training = ctx.hasInput(2) && elementAsDouble(ctx.input(2), 0) != 0;
  if (!training || ratio == 0) {
    ctx.setOutput(0, x);
    if (ctx.numOutputs() > 1) {
      Tensor& mask = ctx.allocate(1);
      std::fill_n(mask.mutableData<bool>(), mask.numElements(), true);
    }
    return Status::ok();
  }
  if (!(ratio >= 0 && ratio < 1)) return kernelError("ratio must be in [0, 1)");
  Tensor& y = ctx.allocate(0);
  Tensor* mask = ctx.numOutputs() > 1 ? &ctx.allocate(1) : nullptr;
  std::bernoulli_distribution keep(1 - ratio);
  return forFloat(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i) {
      bool k = keep(ctx.rng());
      y.mutableData<T>()[i] = k ? T(ComputeType<T>(x.data<T>()[i]) / ComputeType<T>(1 - ratio)) : T(0);
      if (mask) mask->mutableData<bool>()[i] = k;
    }
  });
}

}  // namespace

void registerNormalizationKernels(KernelRegistry& r) {
  r.add("BatchNormalization", kBatchNorm);
  r.add("InstanceNormalization", kInstanceNorm);
  r.add("LayerNormalization", kLayerNorm);
  r.add("LRN", kLRN);
  r.add("MeanVarianceNormalization", kMVN);
  r.add("LpNormalization", kLpNorm);
  r.add("Softmax", kSoftmax<SoftmaxKind::Softmax>);
  r.add("LogSoftmax", kSoftmax<SoftmaxKind::LogSoftmax>);
  r.add("Hardmax", kSoftmax<SoftmaxKind::Hardmax>);
  r.add("Dropout", kDropout);
}

}  // namespace kiln::runtime
