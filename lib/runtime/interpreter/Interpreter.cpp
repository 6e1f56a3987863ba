//===- lib/runtime/interpreter/Interpreter.cpp - Reference graph executor -===//
//
// Runs nodes in graph order. For each node it infers the result types from the
// concrete operands with the op table's own inference function, calls the
// op's kernel, and checks the results against those types (and, optionally,
// against the IR's static types). Values are freed after their last use;
// subgraphs run in a child environment that sees the enclosing values.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/Interpreter.h"

#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "KernelContext.h"
#include "kernels/KernelFamilies.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::runtime {

// --- kernel registry --------------------------------------------------------

const KernelRegistry& KernelRegistry::global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    registerElementwiseKernels(*r);
    registerReductionKernels(*r);
    registerConvKernels(*r);
    registerPoolKernels(*r);
    registerNormalizationKernels(*r);
    registerLinearAlgebraKernels(*r);
    registerShapeKernels(*r);
    registerResamplingKernels(*r);
    registerIndexingKernels(*r);
    registerControlFlowKernels(*r);
    registerSequenceKernels(*r);
    registerRecurrentKernels(*r);
    registerQuantizationKernels(*r);
    registerSignalKernels(*r);
    registerLossAndTrainingKernels(*r);
    registerDetectionKernels(*r);
    registerRandomKernels(*r);
    registerKilnKernels(*r);
    registerStringKernels(*r);
    registerImageKernels(*r);
    return r;
  }();
  return *registry;
}

KernelFn KernelRegistry::find(const std::string& op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : it->second;
}

void KernelRegistry::add(const std::string& op, KernelFn fn) {
  size_t sep = op.find("::");
  std::string domain = sep == std::string::npos ? "" : op.substr(0, sep);
  std::string name = sep == std::string::npos ? op : op.substr(sep + 2);
  KILN_CHECK(ir::OpRegistry::global().find(domain, name), "kernel for unknown op ", op);
  KILN_CHECK(kernels_.emplace(op, fn).second, "kernel ", op, " registered twice");
}

std::vector<std::string> KernelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : kernels_) out.push_back(k);
  return out;
}

std::vector<std::string> interpreterKernelNames() { return KernelRegistry::global().names(); }

Tensor& KernelContext::allocate(size_t i) {
  const ir::Type& t = outputTypes_[i];
  KILN_CHECK(t.isTensor() && t.tensor().isStatic(), "allocate(", i, ") of ", node_.opType(), " with non-static type ",
             t.str());
  return allocate(i, t.tensor().dtype(), t.tensor().dims());
}

Tensor& KernelContext::allocate(size_t i, DType dtype, const Dims& dims) {
  auto n = checkedNumElements(dims);
  // Refuse absurd sizes up front (reported as out of memory by the interpreter).
  if (!n || *n > (int64_t(1) << 40) / int64_t(dtypeSize(dtype))) throw std::bad_alloc();
  outputs_[i] = RuntimeValue(Tensor::zeros(dtype, dims));
  return const_cast<Tensor&>(outputs_[i].tensor());
}

// --- execution ----------------------------------------------------------------

namespace {

ir::Type typeOfValue(const RuntimeValue& v) {
  switch (v.kind()) {
    case RuntimeValue::Kind::Tensor: return ir::TensorType::of(v.tensor());
    case RuntimeValue::Kind::Sequence: return ir::Type::sequence(ir::TensorType::unranked(v.sequenceElementType()));
    case RuntimeValue::Kind::Optional:
      return ir::Type::optional(v.hasValue() ? typeOfValue(v.value()) : ir::Type(ir::TensorType()));
  }
  return ir::Type();
}

class RuntimeInferenceContext final : public ir::InferenceContext {
 public:
  RuntimeInferenceContext(const ir::Node& node, const std::vector<const RuntimeValue*>& inputs)
      : InferenceContext(node), inputs_(inputs), outputs_(node.numOutputs()) {
    for (const RuntimeValue* v : inputs) types_.push_back(v ? typeOfValue(*v) : ir::Type());
  }
  const ir::Type& inputType(size_t i) const override { return types_[i]; }
  const Tensor* inputValue(size_t i) const override {
    const RuntimeValue* v = i < inputs_.size() ? inputs_[i] : nullptr;
    return v && v->isTensor() ? &v->tensor() : nullptr;
  }
  void setOutputType(size_t i, ir::Type type) override { outputs_[i] = std::move(type); }
  bool isRuntime() const override { return true; }
  std::vector<ir::Type> takeOutputs() { return std::move(outputs_); }

 private:
  const std::vector<const RuntimeValue*>& inputs_;
  std::vector<ir::Type> types_;
  std::vector<ir::Type> outputs_;
};

/// Ops whose operands may be sequences or optionals.
bool acceptsNonTensors(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Identity", "If", "Loop", "Scan", "SequenceMap", "SequenceInsert", "SequenceAt", "SequenceErase",
      "SequenceLength", "ConcatFromSequence", "Optional", "OptionalHasElement", "OptionalGetElement"};
  return kOps.count(op) != 0;
}

struct Env {
  std::unordered_map<const ir::Value*, RuntimeValue> values;
  const Env* parent = nullptr;
  const RuntimeValue* find(const ir::Value* v) const {
    for (const Env* e = this; e; e = e->parent) {
      auto it = e->values.find(v);
      if (it != e->values.end()) return &it->second;
    }
    return nullptr;
  }
};

struct GraphPlan {
  std::vector<ir::Node*> nodes;                              // in execution order
  std::vector<std::vector<const ir::Value*>> releaseAfter;  // per node index
};

/// Values used by a subgraph tree that it does not define.
void collectCaptures(const ir::Graph& g, std::unordered_set<const ir::Value*>& out) {
  std::unordered_set<const ir::Value*> defined(g.inputs().begin(), g.inputs().end());
  for (ir::Node* n : g.nodes()) {
    for (ir::Value* v : n->inputs())
      if (v && !defined.count(v)) out.insert(v);
    for (ir::Graph* sub : n->subgraphs()) {
      std::unordered_set<const ir::Value*> inner;
      collectCaptures(*sub, inner);
      for (const ir::Value* v : inner)
        if (!defined.count(v)) out.insert(v);
    }
    for (ir::Value* r : n->outputs()) defined.insert(r);
  }
  for (ir::Value* v : g.outputs())
    if (!defined.count(v)) out.insert(v);
}

GraphPlan buildPlan(const ir::Graph& g) {
  std::vector<ir::Node*> nodes = g.nodes();
  std::unordered_map<const ir::Value*, size_t> lastUse;
  std::unordered_set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ir::Value* v : nodes[i]->inputs())
      if (v) lastUse[v] = i;
    for (ir::Graph* sub : nodes[i]->subgraphs()) {
      std::unordered_set<const ir::Value*> caps;
      collectCaptures(*sub, caps);
      for (const ir::Value* v : caps) lastUse[v] = i;
    }
    for (ir::Value* r : nodes[i]->outputs())
      if (!lastUse.count(r)) lastUse[r] = i;  // unused results die at once
  }
  GraphPlan plan;
  plan.nodes = nodes;
  plan.releaseAfter.resize(nodes.size());
  for (const auto& [v, i] : lastUse)
    if (v->graph() == &g && !outputs.count(v)) plan.releaseAfter[i].push_back(v);
  return plan;
}

Error located(Error e, const ir::Node& n) {
  e.atNode(n.displayName(), n.qualifiedOpType());
  return e;
}

Status checkResult(const ir::Node& n, size_t i, const RuntimeValue& v, const ir::Type& inferred, bool checkStatic) {
  auto fail = [&](const std::string& msg) {
    return located(Error(ErrorCode::Internal, "result " + std::to_string(i) + " ('" + n.output(i)->name() + "') " + msg), n);
  };
  ir::Type actual = typeOfValue(v);
  if (v.isTensor() && !v.tensor().defined()) return fail("was not produced by the kernel");
  if (actual.kind() != inferred.kind()) return fail("is a " + actual.str() + ", inference says " + inferred.str());
  if (v.isTensor()) {
    const ir::TensorType& want = inferred.tensor();
    if (want.dtype() != DType::Undefined && want.dtype() != v.tensor().dtype())
      return fail("has type " + actual.str() + ", inference says " + want.str());
    if (!want.accepts(v.tensor().dims())) return fail("has shape " + actual.str() + ", inference says " + want.str());
    if (checkStatic) {
      const ir::Type& stat = n.output(i)->type();
      if (stat.isTensor() && !stat.tensor().accepts(v.tensor().dims()))
        return fail("has shape " + actual.str() + " but the IR's static type is " + stat.str());
    }
  }
  return Status::ok();
}

}  // namespace

struct Interpreter::Impl {
  const ir::Graph& graph;
  InterpreterOptions options;
  std::mt19937_64 rng;
  std::mutex planMutex;
  std::unordered_map<const ir::Graph*, GraphPlan> plans;

  Impl(const ir::Graph& g, InterpreterOptions o) : graph(g), options(o), rng(o.seed) {}

  const GraphPlan& planFor(const ir::Graph& g) {
    std::lock_guard<std::mutex> lock(planMutex);
    auto it = plans.find(&g);
    if (it == plans.end()) it = plans.emplace(&g, buildPlan(g)).first;
    return it->second;
  }

  Status runNode(const ir::Node& n, Env& env) {
    std::vector<const RuntimeValue*> ins;
    for (ir::Value* v : n.inputs()) {
      const RuntimeValue* rv = v ? env.find(v) : nullptr;
      KILN_CHECK(!v || rv, "value '", v ? v->name() : "", "' has no run-time value");
      if (rv && !rv->isTensor() && !acceptsNonTensors(n.opType()))
        return located(Error(ErrorCode::ExecInput, "operand '" + v->name() + "' is a " + rv->describe() + ", not a tensor"), n);
      ins.push_back(rv);
    }
    RuntimeInferenceContext ictx(n, ins);
    if (Status s = n.schema().infer(ictx); !s.isOk()) return located(std::move(s).error(), n);
    KernelFn fn = KernelRegistry::global().find(n.qualifiedOpType());
    if (!fn) return located(Error(ErrorCode::ExecUnsupported, "the interpreter has no kernel for this op"), n);
    std::vector<ir::Type> outTypes = ictx.takeOutputs();
    KernelContext kctx(n, ins, outTypes,
                       [this, &env](const ir::Graph& g, const std::vector<RuntimeValue>& inputs) {
                         return execute(g, inputs, &env);
                       },
                       rng);
    try {
      if (Status s = fn(kctx); !s.isOk()) return located(std::move(s).error(), n);
    } catch (const std::bad_alloc&) {
      return located(Error(ErrorCode::ExecFailure, "out of memory"), n);
    } catch (const std::length_error&) {
      return located(Error(ErrorCode::ExecFailure, "out of memory (a result is too large)"), n);
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      KILN_TRY(checkResult(n, i, kctx.outputs()[i], outTypes[i], options.checkStaticTypes));
      env.values[n.output(i)] = std::move(kctx.outputs()[i]);
    }
    return Status::ok();
  }

  Expected<std::vector<RuntimeValue>> execute(const ir::Graph& g, const std::vector<RuntimeValue>& inputs,
                                              const Env* outer) {
    if (inputs.size() != g.inputs().size())
      return Error(ErrorCode::ExecInput, "graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) +
                                             " inputs, got " + std::to_string(inputs.size()));
    Env env;
    env.parent = outer;
    for (size_t i = 0; i < inputs.size(); ++i) env.values[g.inputs()[i]] = inputs[i];
    const GraphPlan& plan = planFor(g);  // built once per graph, reused by every loop iteration
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      KILN_TRY(runNode(*plan.nodes[i], env));
      for (const ir::Value* v : plan.releaseAfter[i]) env.values.erase(v);
    }
    std::vector<RuntimeValue> out;
    for (ir::Value* v : g.outputs()) {
      const RuntimeValue* rv = env.find(v);
      KILN_CHECK(rv, "graph output '", v->name(), "' has no value");
      out.push_back(*rv);
    }
    return out;
  }
};

Interpreter::Interpreter(const ir::Graph& graph, InterpreterOptions options)
    : impl_(std::make_unique<Impl>(graph, options)) {}
Interpreter::~Interpreter() = default;

Expected<std::vector<RuntimeValue>> Interpreter::run(const std::vector<RuntimeValue>& inputs) {
  const ir::Graph& g = impl_->graph;
  if (inputs.size() != g.inputs().size())
    return Error(ErrorCode::ExecInput, "the model takes " + std::to_string(g.inputs().size()) + " inputs, got " +
                                           std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* in = g.inputs()[i];
    const ir::Type& want = in->type();
    const RuntimeValue& v = inputs[i];
    ir::Type got = typeOfValue(v);
    auto bad = [&](const std::string& why) {
      return Error(ErrorCode::ExecInput, "input '" + in->name() + "' " + why);
    };
    if (got.kind() != want.kind()) return bad("must be a " + want.str() + ", got " + v.describe());
    if (v.isTensor()) {
      if (!v.tensor().defined()) return bad("is missing");
      const ir::TensorType& t = want.tensor();
      if (t.dtype() != DType::Undefined && t.dtype() != v.tensor().dtype())
        return bad("must have element type " + std::string(dtypeName(t.dtype())) + ", got " + v.describe());
      if (!t.accepts(v.tensor().dims())) return bad("must have shape " + t.str() + ", got " + v.describe());
    }
  }
  return impl_->execute(g, inputs, nullptr);
}

Expected<std::vector<RuntimeValue>> Interpreter::run(const std::map<std::string, RuntimeValue>& named) {
  const ir::Graph& g = impl_->graph;
  std::vector<RuntimeValue> inputs;
  for (ir::Value* in : g.inputs()) {
    auto it = named.find(in->name());
    if (it == named.end()) return Error(ErrorCode::ExecInput, "input '" + in->name() + "' is not given");
    inputs.push_back(it->second);
  }
  for (const auto& [name, v] : named) {
    bool known = false;
    for (ir::Value* in : g.inputs()) known |= in->name() == name;
    if (!known) return Error(ErrorCode::ExecInput, "'" + name + "' is not an input of the model");
  }
  return run(inputs);
}

Expected<std::vector<RuntimeValue>> evaluateNode(const ir::Node& node, const std::vector<const RuntimeValue*>& inputs) {
  KILN_CHECK(inputs.size() == node.numInputs(), "evaluateNode: ", inputs.size(), " operands for ", node.numInputs());
  Interpreter::Impl impl(*node.graph(), {});
  Env env;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (node.input(i)) {
      KILN_CHECK(inputs[i], "evaluateNode: operand ", i, " of ", node.displayName(), " has no value");
      env.values[node.input(i)] = *inputs[i];
    }
  KILN_TRY(impl.runNode(node, env));
  std::vector<RuntimeValue> out;
  for (ir::Value* r : node.outputs()) out.push_back(std::move(env.values[r]));
  return out;
}

}  // namespace kiln::runtime
