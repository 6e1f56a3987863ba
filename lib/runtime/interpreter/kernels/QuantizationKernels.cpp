//===- lib/runtime/interpreter/kernels/QuantizationKernels.cpp - (De)quantisation -===//
//
// QuantizeLinear / DequantizeLinear (per tensor or per axis) and
// DynamicQuantizeLinear, computing in float32 and rounding half to even as
// ONNX Runtime does.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Index into per-axis parameters for element i (0 for per-tensor ones).
struct AxisIndexer {
  int64_t inner = 1, n = 1;
  bool perAxis = false;
  int64_t operator()(int64_t i) const { return perAxis ? (i / inner) % n : 0; }
};

Expected<AxisIndexer> axisIndexer(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  AxisIndexer ix;
  if (scale.numElements() <= 1 && scale.rank() <= 1) return ix;
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  if (scale.numElements() != x.dim(axis)) return kernelError("per-axis scale does not match the axis size");
  ix.perAxis = true;
  ix.n = x.dim(axis);
  for (int64_t d = axis + 1; d < x.rank(); ++d) ix.inner *= x.dim(d);
  return ix;
}

template <class Q>
Q saturate(double v) {
  return Q(std::clamp(v, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max())));
}

/// Operands of Quantize/DequantizeLinear: x, its scale(s) and zero point(s).
struct LinearQuantization {
  AxisIndexer ix;
  std::vector<double> x, scale, zero;
  double scaleAt(int64_t i) const { return scale[size_t(ix(i))]; }
  double zeroAt(int64_t i) const { return zero[zero.size() == 1 ? 0 : size_t(ix(i))]; }
};

Expected<LinearQuantization> linearQuantization(const KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &scale = ctx.input(1);
  LinearQuantization q;
  KILN_ASSIGN(q.ix, axisIndexer(ctx, x, scale));
  q.x = x.toDoubles();
  q.scale = scale.toDoubles();
  q.zero = ctx.hasInput(2) ? ctx.input(2).toDoubles() : std::vector<double>{0.0};
  if (q.zero.size() != q.scale.size() && q.zero.size() != 1) return kernelError("zero point and scale sizes differ");
  return q;
}

Status kQuantize(KernelContext& ctx) {
  KILN_ASSIGN(LinearQuantization q, linearQuantization(ctx));
  Tensor& y = ctx.allocate(0);
  return forInteger(y.dtype(), [&]<class Q>() {
    for (int64_t i = 0; i < y.numElements(); ++i)
      y.mutableData<Q>()[i] = saturate<Q>(std::nearbyint(float(q.x[size_t(i)]) / float(q.scaleAt(i))) + q.zeroAt(i));
  });
}

Status kDequantize(KernelContext& ctx) {
  KILN_ASSIGN(LinearQuantization q, linearQuantization(ctx));
  Tensor& y = ctx.allocate(0);
  return forFloat(y.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < y.numElements(); ++i)
      y.mutableData<T>()[i] = T(float(q.x[size_t(i)] - q.zeroAt(i)) * float(q.scaleAt(i)));
  });
}

Status kDynamicQuantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* p = x.data<float>();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  float scale = (hi - lo) / 255.0f;
  float zero = scale == 0 ? 0 : std::clamp(std::nearbyint(0.0f - lo / scale), 0.0f, 255.0f);
  Tensor& y = ctx.allocate(0);
  for (int64_t i = 0; i < x.numElements(); ++i)
    y.mutableData<uint8_t>()[i] = scale == 0 ? uint8_t(0) : saturate<uint8_t>(std::nearbyint(p[i] / scale) + zero);
  ctx.allocate(1).mutableData<float>()[0] = scale;
  ctx.allocate(2).mutableData<uint8_t>()[0] = uint8_t(zero);
  return Status::ok();
}

}  // namespace

void registerQuantizationKernels(KernelRegistry& r) {
  r.add("QuantizeLinear", kQuantize);
  r.add("DequantizeLinear", kDequantize);
  r.add("DynamicQuantizeLinear", kDynamicQuantize);
}

}  // namespace kiln::runtime
