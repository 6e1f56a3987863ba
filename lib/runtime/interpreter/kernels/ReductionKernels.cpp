//===- lib/runtime/interpreter/kernels/ReductionKernels.cpp - Reduce*, ArgMax/Min -===//
//
// Reductions over any set of axes. Floats accumulate in double; integer sums
// and products accumulate in 64 bits and wrap; Max/Min compare in the element
// type. ReduceLogSumExp subtracts the maximum first for stability.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// Axes of the reduction, normalised (empty: all), and whether it is a no-op.
Expected<std::pair<std::vector<int64_t>, bool>> reductionAxes(const KernelContext& ctx, int64_t rank) {
  const ir::Node& n = ctx.node();
  std::vector<int64_t> axes;
  bool fromInput = ctx.hasInput(1);
  if (fromInput) axes = ctx.input(1).toInt64s();
  else if (const ir::Attribute* a = n.findAttr("axes")) axes = a->ints();
  bool noop = axes.empty() && n.schema().findAttr("noop_with_empty_axes") && n.getInt("noop_with_empty_axes");
  KILN_ASSIGN(axes, ir::normalizeAxes(axes, rank));
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  return std::make_pair(axes, noop);
}

/// Strides mapping each input dim to the output (0 for reduced dims).
Dims outputMapStrides(const Dims& in, const std::vector<int64_t>& axes) {
  Dims kept;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d]) kept.push_back(in[d]);
  Dims keptStrides = stridesOf(kept);
  Dims map(in.size(), 0);
  size_t k = 0;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d]) map[d] = keptStrides[k++];
  return map;
}

template <Red op>
Status kReduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(auto axesNoop, reductionAxes(ctx, x.rank()));
  if (axesNoop.second) {
    ctx.setOutput(0, x);
    return Status::ok();
  }
  Tensor& out = ctx.allocate(0);
  std::array<Dims, 1> map = {outputMapStrides(x.dims(), axesNoop.first)};
  int64_t count = out.numElements() == 0 ? 0 : x.numElements() / std::max<int64_t>(1, out.numElements());
  return forNumeric(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    T* o = out.mutableData<T>();
    size_t n = size_t(out.numElements());
    if constexpr (op == Red::Max || op == Red::Min) {
      using C = ComputeType<T>;
      std::vector<C> acc(n, op == Red::Max ? (std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                                                    : std::numeric_limits<C>::lowest())
                                           : (std::numeric_limits<C>::has_infinity ? std::numeric_limits<C>::infinity()
                                                                                    : std::numeric_limits<C>::max()));
      forEachBroadcast<1>(x.dims(), map, [&](int64_t i, const std::array<int64_t, 1>& off) {
        C v = C(p[i]);
        C& a = acc[size_t(off[0])];
        if (v != v) a = v;  // NaN wins
        else if (a == a) a = op == Red::Max ? std::max(a, v) : std::min(a, v);
      });
      for (size_t i = 0; i < n; ++i) o[i] = T(acc[i]);
    } else if constexpr (isFloatLike<T>) {
      std::vector<double> maxv;
      if constexpr (op == Red::LogSumExp) {
        maxv.assign(n, -std::numeric_limits<double>::infinity());
        forEachBroadcast<1>(x.dims(), map, [&](int64_t i, const std::array<int64_t, 1>& off) {
          maxv[size_t(off[0])] = std::max(maxv[size_t(off[0])], double(ComputeType<T>(p[i])));
        });
      }
      std::vector<double> acc(n, op == Red::Prod ? 1.0 : 0.0);
      forEachBroadcast<1>(x.dims(), map, [&](int64_t i, const std::array<int64_t, 1>& off) {
        double v = double(ComputeType<T>(p[i]));
        double& a = acc[size_t(off[0])];
        if constexpr (op == Red::Prod) a *= v;
        else if constexpr (op == Red::L1) a += std::fabs(v);
        else if constexpr (op == Red::L2 || op == Red::SumSquare) a += v * v;
        else if constexpr (op == Red::LogSumExp) a += std::exp(v - maxv[size_t(off[0])]);
        else a += v;
      });
      for (size_t i = 0; i < n; ++i) {
        double a = acc[i];
        if constexpr (op == Red::Mean) a = count ? a / double(count) : std::nan("");
        if constexpr (op == Red::L2) a = std::sqrt(a);
        if constexpr (op == Red::LogSum) a = std::log(a);
        if constexpr (op == Red::LogSumExp) a = std::isinf(maxv[i]) ? maxv[i] : std::log(a) + maxv[i];
        o[i] = T(a);
      }
    } else {
      using A = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      std::vector<A> acc(n, op == Red::Prod ? A(1) : A(0));
      forEachBroadcast<1>(x.dims(), map, [&](int64_t i, const std::array<int64_t, 1>& off) {
        A v = A(p[i]);
        A& a = acc[size_t(off[0])];
        if constexpr (op == Red::Prod) a = wrapMul(a, v);
        else if constexpr (op == Red::L1) a = wrapAdd(a, v < 0 ? wrapSub<A>(0, v) : v);
        else if constexpr (op == Red::L2 || op == Red::SumSquare) a = wrapAdd(a, wrapMul(v, v));
        else a = wrapAdd(a, v);
      });
      for (size_t i = 0; i < n; ++i) {
        A a = acc[i];
        if constexpr (op == Red::Mean) a = count ? A(a / A(count)) : A(0);
        if constexpr (op == Red::L2) a = A(std::sqrt(double(a)));
        if constexpr (op == Red::LogSum) a = A(std::log(double(a)));
        if constexpr (op == Red::LogSumExp) a = A(std::log(double(a)));
        o[i] = T(a);
      }
    }
  });
}

template <bool isMax>
Status kArgReduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  bool last = ctx.node().getInt("select_last_index") != 0;
  Tensor& out = ctx.allocate(0);
  if (x.dim(axis) == 0) return kernelError("ArgMax/ArgMin over an empty axis");
  int64_t outer = 1, inner = 1, n = x.dim(axis);
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  int64_t* o = out.mutableData<int64_t>();
  return forNumeric(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t c = 0; c < inner; ++c) {
        int64_t best = 0;
        auto bv = ComputeType<T>(p[a * n * inner + c]);
        for (int64_t k = 1; k < n; ++k) {
          auto v = ComputeType<T>(p[(a * n + k) * inner + c]);
          bool better = isMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          if (better) {
            bv = v;
            best = k;
          }
        }
        o[a * inner + c] = best;
      }
  });
}

}  // namespace

void registerReductionKernels(KernelRegistry& r) {
  r.add("ReduceSum", kReduce<Red::Sum>);
  r.add("ReduceMean", kReduce<Red::Mean>);
  r.add("ReduceMax", kReduce<Red::Max>);
  r.add("ReduceMin", kReduce<Red::Min>);
  r.add("ReduceProd", kReduce<Red::Prod>);
  r.add("kiln::ReduceMax", kReduce<Red::Max>);
  r.add("kiln::ReduceMin", kReduce<Red::Min>);
  r.add("kiln::ReduceProd", kReduce<Red::Prod>);
  r.add("ReduceL1", kReduce<Red::L1>);
  r.add("ReduceL2", kReduce<Red::L2>);
  r.add("ReduceLogSum", kReduce<Red::LogSum>);
  r.add("ReduceLogSumExp", kReduce<Red::LogSumExp>);
  r.add("ReduceSumSquare", kReduce<Red::SumSquare>);
  r.add("ArgMax", kArgReduce<true>);
  r.add("ArgMin", kArgReduce<false>);
}

}  // namespace kiln::runtime
