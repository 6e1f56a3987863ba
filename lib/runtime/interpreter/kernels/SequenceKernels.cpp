//===- lib/runtime/interpreter/kernels/SequenceKernels.cpp - Sequences and optionals -===//
//
// Sequence construction and access (with ONNX's negative positions), splitting
// a tensor into a sequence and concatenating/stacking one, and optionals.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Position operand resolved against a sequence of `n` (insert allows n).
Expected<int64_t> position(const KernelContext& ctx, size_t i, int64_t n, bool forInsert, int64_t fallback) {
  if (!ctx.hasInput(i)) return fallback;
  KILN_ASSIGN(int64_t pos, scalarIntOperand(ctx, i, "position"));
  int64_t limit = forInsert ? n : n - 1;
  if (pos < -n || pos > limit)
    return kernelError("position " + std::to_string(pos) + " is out of range for a sequence of " + std::to_string(n));
  return pos < 0 ? pos + n : pos;
}

Status kSequenceEmpty(KernelContext& ctx) {
  ctx.setOutput(0, RuntimeValue::sequence(ctx.outputType(0).element().tensor().dtype(), {}));
  return Status::ok();
}

Status kSequenceConstruct(KernelContext& ctx) {
  std::vector<Tensor> elems;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.input(i).dtype() != ctx.input(0).dtype()) return kernelError("sequence elements must share one element type");
    elems.push_back(ctx.input(i));
  }
  ctx.setOutput(0, RuntimeValue::sequence(ctx.input(0).dtype(), elems));
  return Status::ok();
}

Status kSequenceInsert(KernelContext& ctx) {
  const RuntimeValue& seq = ctx.value(0);
  if (!ctx.value(1).isTensor()) return kernelError("only tensors can be inserted");
  const Tensor& t = ctx.value(1).tensor();
  if (!seq.elements().empty() && t.dtype() != seq.sequenceElementType())
    return kernelError("tensor type differs from the sequence's element type");
  std::vector<Tensor> elems = seq.elements();
  KILN_ASSIGN(int64_t pos, position(ctx, 2, int64_t(elems.size()), true, int64_t(elems.size())));
  elems.insert(elems.begin() + pos, t);
  ctx.setOutput(0, RuntimeValue::sequence(t.dtype(), elems));
  return Status::ok();
}

Status kSequenceAt(KernelContext& ctx) {
  const auto& elems = ctx.value(0).elements();
  KILN_ASSIGN(int64_t pos, position(ctx, 1, int64_t(elems.size()), false, 0));
  ctx.setOutput(0, elems[size_t(pos)]);
  return Status::ok();
}

Status kSequenceErase(KernelContext& ctx) {
  std::vector<Tensor> elems = ctx.value(0).elements();
  if (elems.empty()) return kernelError("cannot erase from an empty sequence");
  KILN_ASSIGN(int64_t pos, position(ctx, 1, int64_t(elems.size()), false, int64_t(elems.size()) - 1));
  elems.erase(elems.begin() + pos);
  ctx.setOutput(0, RuntimeValue::sequence(ctx.value(0).sequenceElementType(), elems));
  return Status::ok();
}

Status kSequenceLength(KernelContext& ctx) {
  ctx.setOutput(0, Tensor::scalar<int64_t>(int64_t(ctx.value(0).elements().size())));
  return Status::ok();
}

Status kSplitToSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  int64_t n = x.dim(axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.hasInput(1)) {
    sizes.assign(size_t(n), 1);
    squeeze = ctx.node().getInt("keepdims") == 0;
  } else if (ctx.input(1).rank() == 0) {
    int64_t chunk = ctx.input(1).toInt64s()[0];
    if (chunk <= 0) return kernelError("split must be positive");
    for (int64_t s = 0; s < n; s += chunk) sizes.push_back(std::min(chunk, n - s));
  } else {
    sizes = ctx.input(1).toInt64s();
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return kernelError("split sizes must be non-negative");
      sum += s;
    }
    if (sum != n) return kernelError("split sizes do not add up to the axis size");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  size_t es = dtypeSize(x.dtype());
  std::vector<Tensor> elems;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    Dims dims = x.dims();
    dims[size_t(axis)] = s;
    Tensor t = Tensor::zeros(x.dtype(), dims);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(t.mutableRawData()) + size_t(o * s * inner) * es,
                  static_cast<const uint8_t*>(x.rawData()) + size_t((o * n + offset) * inner) * es, size_t(s * inner) * es);
    if (squeeze) {
      dims.erase(dims.begin() + axis);
      t = t.reshaped(dims);
    }
    elems.push_back(t);
    offset += s;
  }
  ctx.setOutput(0, RuntimeValue::sequence(x.dtype(), elems));
  return Status::ok();
}

Status kConcatFromSequence(KernelContext& ctx) {
  const auto& elems = ctx.value(0).elements();
  if (elems.empty()) return kernelError("cannot concatenate an empty sequence");
  bool newAxis = ctx.node().getInt("new_axis") != 0;
  const Tensor& first = elems[0];
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), first.rank() + (newAxis ? 1 : 0)));
  std::vector<Tensor> parts;
  int64_t total = 0;
  for (const Tensor& e : elems) {
    if (e.dtype() != first.dtype() || e.rank() != first.rank()) return kernelError("sequence elements differ in type or rank");
    Tensor p = e;
    if (newAxis) {
      Dims d = e.dims();
      d.insert(d.begin() + axis, 1);
      p = e.reshaped(d);
    }
    const Tensor& ref = parts.empty() ? p : parts[0];
    for (int64_t d = 0; d < p.rank(); ++d)
      if (d != axis && p.dim(d) != ref.dim(d)) return kernelError("sequence elements differ in a non-concatenated dim");
    total += p.dim(axis);
    parts.push_back(p);
  }
  Dims dims = parts[0].dims();
  dims[size_t(axis)] = total;
  Tensor out = Tensor::zeros(first.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[size_t(d)];
  for (int64_t d = axis + 1; d < int64_t(dims.size()); ++d) inner *= dims[size_t(d)];
  size_t es = dtypeSize(first.dtype());
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    int64_t rows = p.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(out.mutableRawData()) + size_t(o * total * inner + offset) * es,
                  static_cast<const uint8_t*>(p.rawData()) + size_t(o * rows) * es, size_t(rows) * es);
    offset += rows;
  }
  ctx.setOutput(0, out);
  return Status::ok();
}

Status kOptional(KernelContext& ctx) {
  ctx.setOutput(0, RuntimeValue::some(ctx.value(0)));
  return Status::ok();
}

Status kOptionalHasElement(KernelContext& ctx) {
  bool has = ctx.hasInput(0) && (!ctx.value(0).isOptional() || ctx.value(0).hasValue());
  ctx.setOutput(0, Tensor::scalar<bool>(has));
  return Status::ok();
}

Status kOptionalGetElement(KernelContext& ctx) {
  const RuntimeValue& v = ctx.value(0);
  if (!v.isOptional()) {
    ctx.setOutput(0, v);
    return Status::ok();
  }
  if (!v.hasValue()) return kernelError("the optional is empty");
  ctx.setOutput(0, v.value());
  return Status::ok();
}

}  // namespace

void registerSequenceKernels(KernelRegistry& r) {
  r.add("SequenceEmpty", kSequenceEmpty);
  r.add("SequenceConstruct", kSequenceConstruct);
  r.add("SequenceInsert", kSequenceInsert);
  r.add("SequenceAt", kSequenceAt);
  r.add("SequenceErase", kSequenceErase);
  r.add("SequenceLength", kSequenceLength);
  r.add("SplitToSequence", kSplitToSequence);
  r.add("ConcatFromSequence", kConcatFromSequence);
  r.add("Optional", kOptional);
  r.add("OptionalHasElement", kOptionalHasElement);
  r.add("OptionalGetElement", kOptionalGetElement);
}

}  // namespace kiln::runtime
