//===- lib/codegen/KernelCheck.cpp - Kernel-by-kernel verification --------===//
//
// See KernelCheck.h. Values are computed in graph order with
// runtime::evaluateNode; each step's arguments are bound to copies of those
// values (outputs to fresh buffers) so a kernel cannot disturb the oracle.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/KernelCheck.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "kiln/runtime/Interpreter.h"

namespace kiln::codegen {

namespace {

/// A node whose subgraphs read outer values (an If's branches): run alone as
/// a graph whose inputs are its operands and the values it captures.
Expected<std::vector<RuntimeValue>> evaluateCapturing(const ir::Node& n, const std::vector<ir::Value*>& captured,
                                                      const std::map<std::string, Tensor>& values) {
  std::vector<ir::Value*> inputs;
  for (ir::Value* v : n.inputs())
    if (v && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
  for (ir::Value* v : captured)
    if (std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
  std::map<std::string, RuntimeValue> bound;
  for (ir::Value* v : inputs) {
    auto it = values.find(v->name());
    if (it == values.end()) return makeError(ErrorCode::Internal, "value ", v->name(), " not computed");
    bound[v->name()] = RuntimeValue(it->second);
  }
  std::vector<ir::Value*> outputs = n.outputs();
  std::unique_ptr<ir::Graph> g = ir::extractGraph({&n}, inputs, outputs, "check_" + n.name());
  runtime::Interpreter interpreter(*g);
  return interpreter.run(bound);
}

}  // namespace

Expected<std::vector<KernelCheckResult>> checkKernels(ir::Graph& graph, const CpuModel& model,
                                                      const std::vector<Tensor>& inputs) {
  const auto& entries = model.executor->entries();
  return checkKernels(graph, model.lowered, inputs, [&](size_t kernel, void* const* args) {
    entries[kernel](args);
    return Status::ok();
  });
}

Expected<std::map<std::string, Tensor>> referenceValues(ir::Graph& graph, const std::vector<Tensor>& inputs) {
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < graph.inputs().size() && i < inputs.size(); ++i) values[graph.inputs()[i]->name()] = inputs[i];
  for (ir::Node* n : graph.nodes()) {
    std::vector<RuntimeValue> operands;
    std::vector<const RuntimeValue*> pointers;
    operands.reserve(n->numInputs());
    for (ir::Value* v : n->inputs()) {
      if (!v) {
        operands.emplace_back();
        continue;
      }
      auto it = values.find(v->name());
      if (it == values.end()) return makeError(ErrorCode::Internal, "value ", v->name(), " not computed");
      operands.emplace_back(it->second);
    }
    for (size_t i = 0; i < operands.size(); ++i) pointers.push_back(n->input(i) ? &operands[i] : nullptr);
    std::vector<RuntimeValue> results;
    if (std::vector<ir::Value*> captured = ir::capturedValues(*n); !captured.empty()) {
      KILN_ASSIGN(results, evaluateCapturing(*n, captured, values));
    } else {
      KILN_ASSIGN(results, runtime::evaluateNode(*n, pointers));
    }
    for (size_t r = 0; r < results.size() && r < n->numOutputs(); ++r)
      if (results[r].isTensor()) values[n->output(r)->name()] = results[r].tensor();
  }
  return values;
}

Expected<std::vector<KernelCheckResult>> checkKernels(ir::Graph& graph, const LoweredModel& model,
                                                      const std::vector<Tensor>& inputs, const KernelRunner& run) {
  KILN_ASSIGN(auto values, referenceValues(graph, inputs));
  const runtime::Executable& exe = *model.executable;
  std::vector<KernelCheckResult> out;
  std::set<uint32_t> touched;
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const runtime::KernelStep& step = exe.steps[s];
    if (step.kind == runtime::StepKind::Branch) {
      // A compiled If: its blocks compute values of the branches, which have no reference values here; the
      // then block ends with a jump past the else block.
      const runtime::KernelStep& last = exe.steps[step.kernel - 1];
      const size_t end = last.kind == runtime::StepKind::Jump ? last.kernel : step.kernel;
      for (size_t t = s; t < end; ++t) touched.insert(exe.steps[t].args.begin(), exe.steps[t].args.end());
      s = end - 1;
      continue;
    }
    if (step.kind != runtime::StepKind::Kernel) {  // reference kernels or copies: nothing generated to check
      touched.insert(step.args.begin(), step.args.end());
      continue;
    }
    const LoweredKernel& lk = model.kernels[step.kernel];
    std::vector<Tensor> bound;
    std::vector<void*> args;
    for (uint32_t id : step.args) {
      const runtime::BufferSpec& b = exe.buffers[id];
      if (b.kind == runtime::BufferKind::Intermediate && b.dims.size() == 1 && b.name.find('.') != std::string::npos &&
          !values.count(b.name)) {  // a workspace
        bound.push_back(Tensor::zeros(b.dtype, b.dims));
        args.push_back(bound.back().mutableRawData());
        continue;
      }
      if (b.kind == runtime::BufferKind::Weight) {  // as stored (possibly packed)
        bound.push_back(exe.weights[b.index].clone());
        args.push_back(bound.back().mutableRawData());
        continue;
      }
      auto it = values.find(b.name);
      if (it == values.end()) return makeError(ErrorCode::Internal, "buffer ", b.name, " has no reference value");
      bound.push_back(it->second.clone());
      args.push_back(bound.back().mutableRawData());
    }
    // What this step writes: output and intermediate buffers no earlier step
    // touched. Filled with NaN bits first, so a missed store cannot pass.
    std::vector<bool> written(step.args.size(), false);
    KernelCheckResult r{exe.kernelNames[step.kernel], lk.templateName, "", 0, 0};
    for (size_t a = 0; a < step.args.size(); ++a) {
      const runtime::BufferSpec& b = exe.buffers[step.args[a]];
      if ((b.kind == runtime::BufferKind::Output || b.kind == runtime::BufferKind::Intermediate) &&
          !touched.count(step.args[a])) {
        written[a] = true;
        std::memset(args[a], 0xff, bound[a].byteSize());
      }
    }
    touched.insert(step.args.begin(), step.args.end());
    KILN_TRY(run(step.kernel, args.data()));
    for (size_t a = 0; a < step.args.size(); ++a) {
      if (!written[a] || !values.count(exe.buffers[step.args[a]].name)) continue;
      const Tensor& expected = values[exe.buffers[step.args[a]].name];
      std::vector<double> got = bound[a].toDoubles(), want = expected.toDoubles();
      for (size_t i = 0; i < want.size(); ++i) {
        double err = std::fabs(got[i] - want[i]);
        if (std::isnan(got[i]) != std::isnan(want[i])) err = INFINITY;
        if (std::isnan(err)) err = 0;  // both NaN
        double rel = err / std::max(1.0, std::fabs(want[i]));
        if (rel > r.maxRelError || r.worstValue.empty()) {
          r.maxRelError = std::max(r.maxRelError, rel);
          r.maxAbsError = std::max(r.maxAbsError, err);
          r.worstValue = exe.buffers[step.args[a]].name;
        }
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace kiln::codegen
