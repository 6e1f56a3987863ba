//===- lib/runtime/interpreter/kernels/ControlFlowKernels.cpp - If, Loop, Scan, SequenceMap -===//
//
// Control flow runs subgraph bodies through the interpreter (which gives them
// access to enclosing values). Loop and Scan stack per-iteration outputs;
// every iteration's outputs must agree in type and shape.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"
#include "kiln/ir/Graph.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Stacks equally shaped tensors along a new `axis` (`empty` gives the result's
/// element type and dims when there are no slices).
Expected<Tensor> stack(const std::vector<Tensor>& slices, int64_t axis, const ir::Type& elementType) {
  if (slices.empty()) {
    DType dt = elementType.isTensor() ? elementType.tensor().dtype() : DType::F32;
    Dims dims = {0};
    if (elementType.isTensor() && elementType.tensor().isStatic()) {
      dims = elementType.tensor().dims();
      dims.insert(dims.begin() + std::min<int64_t>(axis, int64_t(dims.size())), 0);
    }
    return Tensor::zeros(dt == DType::Undefined ? DType::F32 : dt, dims);
  }
  const Tensor& first = slices[0];
  for (const Tensor& t : slices)
    if (t.dims() != first.dims() || t.dtype() != first.dtype())
      return kernelError("per-iteration outputs differ in shape: " + first.typeString() + " vs " + t.typeString());
  KILN_ASSIGN(int64_t ax, ir::normalizeAxis(axis, first.rank() + 1));
  Dims dims = first.dims();
  dims.insert(dims.begin() + ax, int64_t(slices.size()));
  Tensor out = Tensor::zeros(first.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= first.dim(d);
  for (int64_t d = ax; d < first.rank(); ++d) inner *= first.dim(d);
  size_t es = dtypeSize(first.dtype());
  int64_t n = int64_t(slices.size());
  for (int64_t s = 0; s < n; ++s)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(out.mutableRawData()) + size_t((o * n + s) * inner) * es,
                  static_cast<const uint8_t*>(slices[size_t(s)].rawData()) + size_t(o * inner) * es, size_t(inner) * es);
  return out;
}

/// Slice `index` of `t` along `axis` (the axis removed).
Tensor sliceAt(const Tensor& t, int64_t axis, int64_t index) {
  Dims dims = t.dims();
  int64_t n = dims[size_t(axis)];
  dims.erase(dims.begin() + axis);
  Tensor out = Tensor::zeros(t.dtype(), dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  size_t es = dtypeSize(t.dtype());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<uint8_t*>(out.mutableRawData()) + size_t(o * inner) * es,
                static_cast<const uint8_t*>(t.rawData()) + size_t((o * n + index) * inner) * es, size_t(inner) * es);
  return out;
}

Expected<bool> boolValue(const RuntimeValue& v, const char* what) {
  if (!v.isTensor() || v.tensor().numElements() != 1) return kernelError(std::string(what) + " must be a single bool");
  return elementAsDouble(v.tensor(), 0) != 0;
}

Status kIf(KernelContext& ctx) {
  KILN_ASSIGN(bool cond, boolValue(ctx.value(0), "cond"));
  const ir::Graph* branch = ctx.node().getGraph(cond ? "then_branch" : "else_branch");
  KILN_ASSIGN(std::vector<RuntimeValue> outs, ctx.runSubgraph(*branch, {}));
  for (size_t i = 0; i < outs.size() && i < ctx.numOutputs(); ++i) ctx.setOutput(i, outs[i]);
  return Status::ok();
}

Status kLoop(KernelContext& ctx) {
  const ir::Graph& body = *ctx.node().getGraph("body");
  int64_t trips = std::numeric_limits<int64_t>::max();
  if (ctx.hasInput(0)) {
    KILN_ASSIGN(trips, scalarIntOperand(ctx, 0, "M"));
  }
  bool cond = true;
  if (ctx.hasInput(1)) {
    KILN_ASSIGN(cond, boolValue(ctx.value(1), "cond"));
  }
  size_t carried = ctx.numInputs() - 2, scans = ctx.numOutputs() - carried;
  std::vector<RuntimeValue> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.value(i + 2));
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t it = 0; it < trips && cond; ++it) {
    std::vector<RuntimeValue> ins = {Tensor::scalar<int64_t>(it), Tensor::scalar<bool>(cond)};
    ins.insert(ins.end(), state.begin(), state.end());
    KILN_ASSIGN(std::vector<RuntimeValue> outs, ctx.runSubgraph(body, ins));
    KILN_ASSIGN(cond, boolValue(outs[0], "the body's condition output"));
    for (size_t i = 0; i < carried; ++i) state[i] = outs[1 + i];
    for (size_t k = 0; k < scans; ++k) {
      if (!outs[1 + carried + k].isTensor()) return kernelError("Loop scan outputs must be tensors");
      scanned[k].push_back(outs[1 + carried + k].tensor());
    }
  }
  for (size_t i = 0; i < carried; ++i) ctx.setOutput(i, state[i]);
  for (size_t k = 0; k < scans; ++k) {
    KILN_ASSIGN(Tensor t, stack(scanned[k], 0, body.outputs()[1 + carried + k]->type()));
    ctx.setOutput(carried + k, t);
  }
  return Status::ok();
}

Status kScan(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Graph& body = *n.getGraph("body");
  int64_t numScan = n.getInt("num_scan_inputs"), numState = int64_t(ctx.numInputs()) - numScan;
  int64_t numScanOut = int64_t(ctx.numOutputs()) - numState;
  auto listOr = [&](const char* name, int64_t count) {
    const ir::Attribute* a = n.findAttr(name);
    return a ? a->ints() : std::vector<int64_t>(size_t(count), 0);
  };
  std::vector<int64_t> inAxes = listOr("scan_input_axes", numScan), inDirs = listOr("scan_input_directions", numScan);
  std::vector<int64_t> outAxes = listOr("scan_output_axes", numScanOut), outDirs = listOr("scan_output_directions", numScanOut);
  if (int64_t(inDirs.size()) != numScan || int64_t(outDirs.size()) != numScanOut) return kernelError("scan direction lists have the wrong length");
  int64_t length = -1;
  for (int64_t i = 0; i < numScan; ++i) {
    const Tensor& t = ctx.input(size_t(numState + i));
    KILN_ASSIGN(inAxes[size_t(i)], ir::normalizeAxis(inAxes[size_t(i)], t.rank(), "scan_input_axes"));
    int64_t len = t.dim(inAxes[size_t(i)]);
    if (length >= 0 && len != length) return kernelError("scan inputs have different sequence lengths");
    length = len;
  }
  std::vector<RuntimeValue> state;
  for (int64_t i = 0; i < numState; ++i) state.push_back(ctx.value(static_cast<size_t>(i)));
  std::vector<std::vector<Tensor>> scanned(static_cast<size_t>(numScanOut));
  for (int64_t t = 0; t < std::max<int64_t>(length, 0); ++t) {
    std::vector<RuntimeValue> ins = state;
    for (int64_t i = 0; i < numScan; ++i) {
      const Tensor& x = ctx.input(size_t(numState + i));
      ins.push_back(sliceAt(x, inAxes[size_t(i)], inDirs[size_t(i)] ? length - 1 - t : t));
    }
    KILN_ASSIGN(std::vector<RuntimeValue> outs, ctx.runSubgraph(body, ins));
    for (int64_t i = 0; i < numState; ++i) state[size_t(i)] = outs[size_t(i)];
    for (int64_t k = 0; k < numScanOut; ++k) {
      if (!outs[size_t(numState + k)].isTensor()) return kernelError("Scan outputs must be tensors");
      scanned[size_t(k)].push_back(outs[size_t(numState + k)].tensor());
    }
  }
  for (int64_t i = 0; i < numState; ++i) ctx.setOutput(size_t(i), state[size_t(i)]);
  for (int64_t k = 0; k < numScanOut; ++k) {
    auto& slices = scanned[size_t(k)];
    if (outDirs[size_t(k)]) std::reverse(slices.begin(), slices.end());
    KILN_ASSIGN(Tensor t, stack(slices, outAxes[size_t(k)], body.outputs()[size_t(numState + k)]->type()));
    ctx.setOutput(size_t(numState + k), t);
  }
  return Status::ok();
}

Status kSequenceMap(KernelContext& ctx) {
  const ir::Graph& body = *ctx.node().getGraph("body");
  size_t n = ctx.value(0).elements().size();
  for (size_t i = 1; i < ctx.numInputs(); ++i)
    if (ctx.value(i).isSequence() && ctx.value(i).elements().size() != n)
      return kernelError("input sequences have different lengths");
  std::vector<std::vector<Tensor>> outs(ctx.numOutputs());
  for (size_t j = 0; j < n; ++j) {
    std::vector<RuntimeValue> ins;
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      ins.push_back(ctx.value(i).isSequence() ? RuntimeValue(ctx.value(i).elements()[j]) : ctx.value(i));
    KILN_ASSIGN(std::vector<RuntimeValue> res, ctx.runSubgraph(body, ins));
    for (size_t k = 0; k < res.size(); ++k) {
      if (!res[k].isTensor()) return kernelError("SequenceMap body outputs must be tensors");
      outs[k].push_back(res[k].tensor());
    }
  }
  for (size_t k = 0; k < ctx.numOutputs(); ++k) {
    DType dt = ctx.outputType(k).element().tensor().dtype();
    if (!outs[k].empty()) dt = outs[k][0].dtype();
    ctx.setOutput(k, RuntimeValue::sequence(dt, outs[k]));
  }
  return Status::ok();
}

}  // namespace

void registerControlFlowKernels(KernelRegistry& r) {
  r.add("If", kIf);
  r.add("Loop", kLoop);
  r.add("Scan", kScan);
  r.add("SequenceMap", kSequenceMap);
}

}  // namespace kiln::runtime
