//===- lib/runtime/interpreter/kernels/IndexingKernels.cpp - Gather, scatter, selection -===//
//
// Gather/GatherElements/GatherND, ScatterElements/ScatterND (with
// reductions), OneHot, CumSum, CumProd, TensorScatter, and the data-dependent
// Compress, NonZero, TopK, Unique and ReverseSequence. Every index is bounds-checked: a bad index is
// an error, never an out-of-bounds access.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

void copyElement(const Tensor& src, int64_t si, Tensor& dst, int64_t di) {
  size_t es = dtypeSize(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.mutableRawData()) + size_t(di) * es,
              static_cast<const uint8_t*>(src.rawData()) + size_t(si) * es, es);
}

Status kGather(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &indices = ctx.input(1);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), data.rank()));
  Tensor& out = ctx.allocate(0);
  int64_t outer = 1, inner = 1, n = data.dim(axis);
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
  std::vector<int64_t> idx = indices.toInt64s();
  for (auto& i : idx) {
    KILN_ASSIGN(i, checkIndex(i, n, "index"));
  }
  size_t es = dtypeSize(data.dtype()), block = size_t(inner) * es;
  const auto* src = static_cast<const uint8_t*>(data.rawData());
  auto* dst = static_cast<uint8_t*>(out.mutableRawData());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < idx.size(); ++k)
      std::memcpy(dst + (size_t(o) * idx.size() + k) * block, src + size_t(o * n + idx[k]) * block, block);
  return Status::ok();
}

/// Flat offset in `data` of the element that element i of `indices` addresses:
/// same coordinates, except along `axis`, where the index value applies.
Expected<int64_t> elementOffset(const Tensor& indices, const Tensor& data, const Dims& dataStrides, int64_t axis,
                                int64_t i, int64_t index) {
  int64_t r = i, off = 0;
  for (int64_t d = indices.rank() - 1; d >= 0; --d) {
    int64_t c = r % indices.dim(d);
    r /= indices.dim(d);
    if (d == axis) {
      KILN_ASSIGN(c, checkIndex(index, data.dim(d), "index"));
    } else if (c >= data.dim(d)) {
      return kernelError("indices dim " + std::to_string(d) + " exceeds the data's");
    }
    off += c * dataStrides[size_t(d)];
  }
  return off;
}

Status kGatherElements(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &indices = ctx.input(1);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), data.rank()));
  Tensor& out = ctx.allocate(0);
  std::vector<int64_t> idx = indices.toInt64s();
  Dims dStrides = stridesOf(data.dims());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    KILN_ASSIGN(int64_t off, elementOffset(indices, data, dStrides, axis, i, idx[size_t(i)]));
    copyElement(data, off, out, i);
  }
  return Status::ok();
}

Status kGatherND(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &indices = ctx.input(1);
  int64_t b = ctx.node().getInt("batch_dims"), k = indices.dim(indices.rank() - 1);
  Tensor& out = ctx.allocate(0);
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d) batch *= data.dim(d);
  int64_t slice = 1;
  for (int64_t d = b + k; d < data.rank(); ++d) slice *= data.dim(d);
  for (int64_t d = 0; d < b; ++d)
    if (indices.dim(d) != data.dim(d)) return kernelError("batch dims of indices and data differ");
  int64_t tuples = numElements(Dims(indices.dims().begin() + b, indices.dims().end() - 1));
  Dims dStrides = stridesOf(data.dims());
  int64_t batchStride = b > 0 ? dStrides[size_t(b - 1)] : data.numElements();
  std::vector<int64_t> idx = indices.toInt64s();
  size_t es = dtypeSize(data.dtype());
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = bi * batchStride;
      for (int64_t j = 0; j < k; ++j) {
        KILN_ASSIGN(int64_t c, checkIndex(idx[size_t((bi * tuples + t) * k + j)], data.dim(b + j), "index"));
        off += c * dStrides[size_t(b + j)];
      }
      std::memcpy(static_cast<uint8_t*>(out.mutableRawData()) + size_t((bi * tuples + t) * slice) * es,
                  static_cast<const uint8_t*>(data.rawData()) + size_t(off) * es, size_t(slice) * es);
    }
  return Status::ok();
}

/// out[target] = reduce(out[target], update) for ScatterElements/ScatterND.
Status scatterApply(Tensor& out, int64_t target, const Tensor& updates, int64_t u, const std::string& reduction) {
  return forAny(out.dtype(), [&]<class T>() {
    T& dst = out.mutableData<T>()[target];
    T v = updates.data<T>()[u];
    if (reduction == "none") dst = v;
    else if constexpr (std::is_same_v<T, bool>) dst = reduction == "add" || reduction == "max" ? (dst || v) : (dst && v);
    else if (reduction == "add") dst = wrapAdd(dst, v);
    else if (reduction == "mul") dst = wrapMul(dst, v);
    else if (reduction == "max") dst = ComputeType<T>(v) > ComputeType<T>(dst) ? v : dst;
    else dst = ComputeType<T>(v) < ComputeType<T>(dst) ? v : dst;
  });
}

Status kScatterElements(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), data.rank()));
  if (indices.dims() != updates.dims() || indices.rank() != data.rank())
    return kernelError("indices and updates must have the same shape and the data's rank");
  const std::string& reduction = ctx.node().getString("reduction");
  Tensor out = data.clone();
  std::vector<int64_t> idx = indices.toInt64s();
  Dims dStrides = stridesOf(data.dims());
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    KILN_ASSIGN(int64_t off, elementOffset(indices, data, dStrides, axis, i, idx[size_t(i)]));
    KILN_TRY(scatterApply(out, off, updates, i, reduction));
  }
  ctx.setOutput(0, out);
  return Status::ok();
}

Status kScatterND(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  int64_t k = indices.dim(indices.rank() - 1);
  if (k > data.rank()) return kernelError("index tuples are longer than the data's rank");
  Tensor out = data.clone();
  int64_t slice = 1;
  for (int64_t d = k; d < data.rank(); ++d) slice *= data.dim(d);
  int64_t tuples = k ? indices.numElements() / k : 0;
  if (updates.numElements() != tuples * slice) return kernelError("updates do not match indices and data");
  Dims dStrides = stridesOf(data.dims());
  std::vector<int64_t> idx = indices.toInt64s();
  const std::string& reduction = ctx.node().getString("reduction");
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      KILN_ASSIGN(int64_t c, checkIndex(idx[size_t(t * k + j)], data.dim(j), "index"));
      off += c * dStrides[size_t(j)];
    }
    for (int64_t s = 0; s < slice; ++s) KILN_TRY(scatterApply(out, off + s, updates, t * slice + s, reduction));
  }
  ctx.setOutput(0, out);
  return Status::ok();
}

Status kOneHot(KernelContext& ctx) {
  const Tensor &indices = ctx.input(0), &values = ctx.input(2);
  KILN_ASSIGN(int64_t depth, scalarIntOperand(ctx, 1, "depth"));
  if (values.numElements() != 2) return kernelError("values must hold [off_value, on_value]");
  if (depth <= 0) return kernelError("depth must be positive");
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), indices.rank() + 1));
  Dims dims = indices.dims();
  dims.insert(dims.begin() + axis, depth);
  Tensor& out = ctx.allocate(0, values.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[size_t(d)];
  for (int64_t d = axis + 1; d < int64_t(dims.size()); ++d) inner *= dims[size_t(d)];
  std::vector<double> idx = indices.toDoubles();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t id = int64_t(idx[size_t(o * inner + i)]);
        if (id < 0) id += depth;
        copyElement(values, id == k ? 1 : 0, out, (o * depth + k) * inner + i);
      }
  return Status::ok();
}

/// CumSum (product false) and CumProd along the axis operand.
template <bool product>
Status kCumulative(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(int64_t axisIn, scalarIntOperand(ctx, 1, "axis"));
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(axisIn, x.rank()));
  bool exclusive = ctx.node().getInt("exclusive"), reverse = ctx.node().getInt("reverse");
  Tensor& y = ctx.allocate(0);
  int64_t outer = 1, inner = 1, n = x.dim(axis);
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  return forNumeric(x.dtype(), [&]<class T>() {
    using A = std::conditional_t<isFloatLike<T>, double, T>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        A acc = product ? 1 : 0;
        auto combine = [](A a, A v) { return product ? wrapMul(a, v) : wrapAdd(a, v); };
        for (int64_t s = 0; s < n; ++s) {
          int64_t k = reverse ? n - 1 - s : s;
          int64_t at = (o * n + k) * inner + i;
          A v = A(ComputeType<T>(x.data<T>()[at]));
          if (!exclusive) acc = combine(acc, v);
          y.mutableData<T>()[at] = T(acc);
          if (exclusive) acc = combine(acc, v);
        }
      }
  });
}

/// kiln::TensorScatter: past_cache copied, then for each batch row b the
/// update's slices s along axis land at write_indices[b] + s (mod the axis
/// length in circular mode; they must fit in linear mode).
Status kTensorScatter(KernelContext& ctx) {
  const Tensor &cache = ctx.input(0), &update = ctx.input(1);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), cache.rank()));
  bool circular = ctx.node().getString("mode") == "circular";
  Tensor& out = ctx.allocate(0);
  size_t es = dtypeSize(cache.dtype());
  std::memcpy(out.mutableRawData(), cache.rawData(), size_t(cache.numElements()) * es);
  if (update.rank() != cache.rank()) return kernelError("update must have past_cache's rank");
  for (int64_t d = 0; d < cache.rank(); ++d)
    if (d == axis ? update.dim(d) > cache.dim(d) : update.dim(d) != cache.dim(d))
      return kernelError("update does not fit past_cache along axis " + std::to_string(d));
  int64_t batch = cache.dim(0), outer = 1, inner = 1, length = cache.dim(axis), steps = update.dim(axis);
  for (int64_t d = 1; d < axis; ++d) outer *= cache.dim(d);
  for (int64_t d = axis + 1; d < cache.rank(); ++d) inner *= cache.dim(d);
  const Tensor* idx = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  if (idx && idx->numElements() != batch) return kernelError("write_indices must hold one index per batch row");
  auto* dst = static_cast<uint8_t*>(out.mutableRawData());
  const auto* src = static_cast<const uint8_t*>(update.rawData());
  for (int64_t b = 0; b < batch; ++b) {
    int64_t start = idx ? idx->data<int64_t>()[b] : 0;
    if (start < 0 || start >= std::max<int64_t>(length, 1) || (!circular && start + steps > length))
      return kernelError("write index " + std::to_string(start) + " with " + std::to_string(steps) +
                         " steps does not fit an axis of " + std::to_string(length));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < steps; ++s) {
        int64_t at = (start + s) % length;
        std::memcpy(dst + size_t(((b * outer + o) * length + at) * inner) * es,
                    src + size_t(((b * outer + o) * steps + s) * inner) * es, size_t(inner) * es);
      }
  }
  return Status::ok();
}

Status kCompress(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &cond = ctx.input(1);
  const bool* c = cond.data<bool>();
  if (!ctx.node().hasAttr("axis")) {
    if (cond.numElements() > x.numElements()) return kernelError("condition is longer than the input");
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numElements(); ++i)
      if (c[i]) keep.push_back(i);
    Tensor& y = ctx.allocate(0, x.dtype(), {int64_t(keep.size())});
    for (size_t i = 0; i < keep.size(); ++i) copyElement(x, keep[i], y, int64_t(i));
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  if (cond.numElements() > x.dim(axis)) return kernelError("condition is longer than the axis");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numElements(); ++i)
    if (c[i]) keep.push_back(i);
  Dims dims = x.dims();
  dims[size_t(axis)] = int64_t(keep.size());
  Tensor& y = ctx.allocate(0, x.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  size_t es = dtypeSize(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < keep.size(); ++k)
      std::memcpy(static_cast<uint8_t*>(y.mutableRawData()) + size_t((o * int64_t(keep.size()) + int64_t(k)) * inner) * es,
                  static_cast<const uint8_t*>(x.rawData()) + size_t((o * x.dim(axis) + keep[k]) * inner) * es,
                  size_t(inner) * es);
  return Status::ok();
}

Status kNonZero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  Status s = forAny(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i)
      if (ComputeType<T>(x.data<T>()[i]) != ComputeType<T>(0)) hits.push_back(i);
  });
  KILN_TRY(s);
  int64_t rank = x.rank(), n = int64_t(hits.size());
  Tensor& y = ctx.allocate(0, DType::I64, {rank, n});
  for (int64_t j = 0; j < n; ++j) {
    int64_t r = hits[size_t(j)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      y.mutableData<int64_t>()[d * n + j] = r % x.dim(d);
      r /= x.dim(d);
    }
  }
  return Status::ok();
}

Status kTopK(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(int64_t k, scalarIntOperand(ctx, 1, "K"));
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  int64_t n = x.dim(axis);
  if (k < 0 || k > n) return kernelError("K = " + std::to_string(k) + " is out of range for an axis of " + std::to_string(n));
  bool largest = ctx.node().getInt("largest") != 0;
  Dims dims = x.dims();
  dims[size_t(axis)] = k;
  Tensor& values = ctx.allocate(0, x.dtype(), dims);
  Tensor& indices = ctx.allocate(1, DType::I64, dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  return forNumeric(x.dtype(), [&]<class T>() {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return ComputeType<T>(x.data<T>()[(o * n + j) * inner + i]); };
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the lower index first (as a stable sort would); only the first k are ordered.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          auto va = at(a), vb = at(b);
          if (largest ? va > vb : va < vb) return true;
          if (largest ? vb > va : vb < va) return false;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          values.mutableData<T>()[(o * k + j) * inner + i] = x.data<T>()[(o * n + order[size_t(j)]) * inner + i];
          indices.mutableData<int64_t>()[(o * k + j) * inner + i] = order[size_t(j)];
        }
      }
  });
}

Status kUnique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool sorted = ctx.node().getInt("sorted") != 0;
  const ir::Attribute* axisAttr = ctx.node().findAttr("axis");
  int64_t axis = 0, outer = 1, n = x.numElements(), inner = 1;
  if (axisAttr) {
    KILN_ASSIGN(axis, ir::normalizeAxis(axisAttr->i(), x.rank()));
    n = x.dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  std::vector<double> v = x.toDoubles();
  // Slice j is the values at position j along the axis (a single element without an axis).
  auto slice = [&](int64_t j) {
    std::vector<double> s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s.push_back(v[size_t((o * n + j) * inner + i)]);
    return s;
  };
  std::map<std::vector<double>, int64_t> firstIndex;
  std::vector<std::vector<double>> uniques;
  std::vector<int64_t> firsts, inverse(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    auto s = slice(j);
    if (!firstIndex.count(s)) {
      firstIndex[s] = int64_t(uniques.size());
      uniques.push_back(s);
      firsts.push_back(j);
    }
  }
  std::vector<int64_t> order(uniques.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted) std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return uniques[size_t(a)] < uniques[size_t(b)]; });
  std::vector<int64_t> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[size_t(order[r])] = int64_t(r);
  std::vector<int64_t> counts(order.size(), 0);
  for (int64_t j = 0; j < n; ++j) {
    int64_t u = rank[size_t(firstIndex[slice(j)])];
    inverse[size_t(j)] = u;
    ++counts[size_t(u)];
  }
  int64_t m = int64_t(order.size());
  Dims dims = axisAttr ? x.dims() : Dims{m};
  if (axisAttr) dims[size_t(axis)] = m;
  Tensor& y = ctx.allocate(0, x.dtype(), dims);
  for (int64_t r = 0; r < m; ++r) {
    int64_t j = firsts[size_t(order[size_t(r)])];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) copyElement(x, (o * n + j) * inner + i, y, (o * m + r) * inner + i);
  }
  auto emit = [&](size_t out, const std::vector<int64_t>& vals) {
    if (ctx.numOutputs() <= out) return;
    Tensor& t = ctx.allocate(out, DType::I64, {int64_t(vals.size())});
    std::copy(vals.begin(), vals.end(), t.mutableData<int64_t>());
  };
  std::vector<int64_t> firstSorted;
  for (int64_t r = 0; r < m; ++r) firstSorted.push_back(firsts[size_t(order[size_t(r)])]);
  emit(1, firstSorted);
  emit(2, inverse);
  emit(3, counts);
  return Status::ok();
}

Status kReverseSequence(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &lens = ctx.input(1);
  int64_t batchAxis = ctx.node().getInt("batch_axis"), timeAxis = ctx.node().getInt("time_axis");
  int64_t batch = x.dim(batchAxis), time = x.dim(timeAxis);
  std::vector<int64_t> len = lens.toInt64s();
  if (int64_t(len.size()) != batch) return kernelError("sequence_lens must have one entry per batch");
  Tensor& y = ctx.allocate(0);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  for (int64_t b = 0; b < batch; ++b) {
    if (len[size_t(b)] < 0 || len[size_t(b)] > time) return kernelError("sequence length out of range");
    for (int64_t t = 0; t < time; ++t) {
      int64_t src = t < len[size_t(b)] ? len[size_t(b)] - 1 - t : t;
      auto flat = [&](int64_t tt) {
        return ((batchAxis == 0 ? b * time + tt : tt * batch + b)) * inner;
      };
      for (int64_t i = 0; i < inner; ++i) copyElement(x, flat(src) + i, y, flat(t) + i);
    }
  }
  return Status::ok();
}

}  // namespace

void registerIndexingKernels(KernelRegistry& r) {
  r.add("Gather", kGather);
  r.add("GatherElements", kGatherElements);
  r.add("GatherND", kGatherND);
  r.add("ScatterElements", kScatterElements);
  r.add("ScatterND", kScatterND);
  r.add("OneHot", kOneHot);
  r.add("CumSum", kCumulative<false>);
  r.add("kiln::CumProd", kCumulative<true>);
  r.add("kiln::TensorScatter", kTensorScatter);
  r.add("Compress", kCompress);
  r.add("NonZero", kNonZero);
  r.add("TopK", kTopK);
  r.add("Unique", kUnique);
  r.add("ReverseSequence", kReverseSequence);
}

}  // namespace kiln::runtime
