//===- lib/codegen/Compiler.cpp - Plan, lower, build the Executable --------===//
//
// lowerModel: builds the fusion plan (applying saved decisions), orders the
// groups topologically, lowers each with its template, shares identical
// kernels (same IR apart from the name), then assigns buffers: graph inputs,
// weights (Constant values a kernel reads), outputs, and intermediates placed
// by the memory planner from their lifetimes over the steps. A group that is
// extern (or fails to lower with CodegenUnsupported) becomes a host step: its
// nodes, with small constants inlined, are extracted into a graph printed as
// text IR; its results with data-dependent shapes become dynamic buffers.
// On the GPU, a group that options.libraryTactics (or, under auto, the
// tuning database's measurement) gives to a library becomes a library step
// (LibraryTactics.h) instead of a kernel, and a matmul group whose epilogue
// goes on past what cuBLASLt fuses becomes a library step and a kernel for
// the rest (splitForLibrary). With options.releaseConsumedWeights each
// constant leaves the graph once its last reader is lowered, and a last
// reader that packs it may write the panels over its storage.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/Compiler.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "MemoryPlanner.h"
#include "TensorExpr.h"
#include "kiln/ir/Node.h"
#include "kiln/ir/Printer.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::codegen {
namespace {

int64_t product(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Groups in an order where every group runs after the groups it reads from
/// (Kahn's algorithm, ties broken by graph position).
std::vector<const KernelGroup*> topologicalGroups(const FusionPlan& plan) {
  const auto& groups = plan.groups();
  std::map<const ir::Node*, int> groupOfNode;
  for (const KernelGroup& g : groups)
    for (const ir::Node* n : g.nodes) groupOfNode[n] = g.id;
  std::vector<std::set<int>> successors(groups.size());
  std::vector<int> indegree(groups.size(), 0);
  for (const KernelGroup& g : groups)
    for (const ir::Value* v : g.inputs)
      if (v->producer() && groupOfNode.count(v->producer())) {
        int from = groupOfNode[v->producer()];
        if (from != g.id && successors[size_t(from)].insert(g.id).second) ++indegree[size_t(g.id)];
      }
  std::set<int> ready;
  for (const KernelGroup& g : groups)
    if (indegree[size_t(g.id)] == 0) ready.insert(g.id);
  std::vector<const KernelGroup*> order;
  while (!ready.empty()) {
    int id = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(&groups[size_t(id)]);
    for (int s : successors[size_t(id)])
      if (--indegree[size_t(s)] == 0) ready.insert(s);
  }
  return order;
}

const Tensor* constantTensor(const ir::Value* v) {
  const ir::Node* p = v->producer();
  if (!p || p->opType() != "Constant" || !p->domain().empty() || !p->hasAttr("value")) return nullptr;
  return &p->getTensor("value");
}

/// Constants that only the groups of `order` read (not graph outputs, not
/// read from inside a subgraph), each with its count of groups.
std::map<const ir::Value*, size_t> constantReaders(const ir::Graph& graph, const std::vector<const KernelGroup*>& order) {
  std::map<const ir::Value*, size_t> readers;
  for (const KernelGroup* g : order)
    for (const ir::Value* v : g->inputs)
      if (constantTensor(v)) ++readers[v];
  std::erase_if(readers, [&](const auto& entry) {
    const auto& uses = entry.first->uses();
    return std::any_of(uses.begin(), uses.end(), [&](const ir::Use& u) { return u.isGraphOutput() || u.user->graph() != &graph; });
  });
  return readers;
}

/// Constants with at most this many elements are copied into host graphs;
/// larger ones are weight buffers (stored once, shared by kernels).
constexpr int64_t kInlineConstantElements = 64;

}  // namespace

std::string CompileStats::hostOpSummary() const {
  std::map<std::string, int> counts;
  for (const HostStepInfo& h : hostSteps)
    for (const std::string& op : h.ops) ++counts[op];
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [op, n] : sorted) out += (out.empty() ? "" : ", ") + op + (n > 1 ? " x" + std::to_string(n) : "");
  return out;
}

Expected<LoweredModel> lowerModel(ir::Graph& graph, KernelTarget target, const CompileOptions& options) {
  LoweredModel out;
  Stopwatch timer;
  KILN_ASSIGN(FusionPlan plan, FusionPlan::build(graph));
  out.plan = std::make_unique<FusionPlan>(std::move(plan));
  if (!options.fusionPlanText.empty()) KILN_TRY(out.plan->applyDecisions(options.fusionPlanText));
  out.stats.planMs = timer.elapsedMs();
  timer.restart();

  auto exe = std::make_shared<runtime::Executable>();
  exe->target = target == KernelTarget::Cpu ? "cpu" : "cuda";
  std::map<const ir::Value*, uint32_t> bufferOf;
  auto addBuffer = [&](const ir::Value* v, runtime::BufferKind kind) -> Expected<uint32_t> {
    runtime::BufferSpec b;
    bool dynamicOk = kind == runtime::BufferKind::Intermediate || kind == runtime::BufferKind::Output;
    if (Expected<Dims> dims = staticDims(v)) {
      b.dims = *dims;
    } else if (dynamicOk && v->type().isTensor()) {  // computed on the host at run time
      b.dynamic = true;
      b.unknownRank = !v->tensorType().hasRank();
      if (!b.unknownRank)
        for (int64_t d : v->tensorType().dims()) b.dims.push_back(d == ir::kUnknownDim ? -1 : d);
    } else {
      return std::move(dims).error();
    }
    b.name = v->name();
    b.dtype = v->tensorType().dtype();
    b.kind = kind;
    exe->buffers.push_back(b);
    uint32_t id = uint32_t(exe->buffers.size() - 1);
    bufferOf[v] = id;
    return id;
  };
  for (const ir::Value* v : graph.inputs()) {
    KILN_ASSIGN(uint32_t id, addBuffer(v, runtime::BufferKind::Input));
    exe->buffers[id].index = uint32_t(exe->inputs.size());
    exe->inputs.push_back(id);
  }
  std::set<const ir::Value*> graphOutputs(graph.outputs().begin(), graph.outputs().end());
  // A constant's weight buffer (created on first use).
  auto constantBuffer = [&](const ir::Value* v, const Tensor& t) -> Expected<uint32_t> {
    if (auto it = bufferOf.find(v); it != bufferOf.end()) return it->second;
    KILN_ASSIGN(uint32_t id, addBuffer(v, runtime::BufferKind::Weight));
    exe->buffers[id].index = uint32_t(exe->weights.size());
    // As it is: an initializer kept in its protobuf string's storage is only 16-byte
    // aligned, and the CPU executor copies such weights to 64-byte aligned storage when it
    // is created; `kiln compile` only writes them to the artifact and needs no copy.
    exe->weights.push_back(t);
    out.stats.weightBytes += t.byteSize();
    return id;
  };
  auto resultBuffer = [&](const ir::Value* v) -> Expected<uint32_t> {
    if (auto it = bufferOf.find(v); it != bufferOf.end()) return it->second;
    return addBuffer(v, graphOutputs.count(v) ? runtime::BufferKind::Output : runtime::BufferKind::Intermediate);
  };
  // A group the runtime runs with its reference kernels.
  auto addHostStep = [&](const KernelGroup& g, const std::string& reason) -> Status {
    const ir::Node* first = g.nodes.front();
    auto unsupported = [&](auto&&... parts) {
      return makeError(ErrorCode::CodegenUnsupported, parts...).atNode(first->displayName(), first->opType());
    };
    if (!options.allowHostSteps) return unsupported(reason, " (host steps are disabled)");
    runtime::KernelStep step;
    step.kind = runtime::StepKind::Host;
    std::vector<const ir::Node*> nodes;
    std::vector<ir::Value*> reads;
    for (ir::Value* v : g.inputs) {
      if (!v->type().isTensor()) return unsupported("value '", v->name(), "' is a ", v->type().str(), "; only tensors pass between steps");
      const Tensor* t = constantTensor(v);
      if (t && t->numElements() <= kInlineConstantElements) {
        nodes.push_back(v->producer());
        continue;
      }
      if (!bufferOf.count(v) && !t)
        return makeError(ErrorCode::Internal, "host step of ", first->displayName(), " reads ", v->name(), " before it exists");
      KILN_ASSIGN(uint32_t id, bufferOf.count(v) ? Expected<uint32_t>(bufferOf[v]) : constantBuffer(v, *t));
      reads.push_back(v);
      step.args.push_back(id);
    }
    nodes.insert(nodes.end(), g.nodes.begin(), g.nodes.end());
    for (ir::Value* v : g.outputs) {
      if (!v->type().isTensor()) return unsupported("value '", v->name(), "' is a ", v->type().str(), "; only tensors pass between steps");
      KILN_ASSIGN(uint32_t id, resultBuffer(v));
      step.args.push_back(id);
    }
    runtime::HostGraph h;
    h.name = "h" + g.name().substr(1);
    h.numInputs = uint32_t(reads.size());
    h.numOutputs = uint32_t(g.outputs.size());
    for (const ir::Node* n : g.nodes) h.ops.push_back(n->qualifiedOpType());
    ir::Module module(ir::extractGraph(nodes, reads, g.outputs, h.name));
    h.text = ir::printModule(module);
    step.kernel = uint32_t(exe->hostGraphs.size());
    out.stats.hostSteps.push_back({h.name, h.ops, reason});
    exe->hostGraphs.push_back(std::move(h));
    exe->steps.push_back(std::move(step));
    return Status::ok();
  };

  // The buffer of a value step `reader` reads: computed earlier, or a constant's weight buffer.
  auto readBuffer = [&](const ir::Value* v, const std::string& reader) -> Expected<uint32_t> {
    if (auto it = bufferOf.find(v); it != bufferOf.end()) return it->second;
    const Tensor* t = constantTensor(v);
    if (!t) return makeError(ErrorCode::Internal, reader, " reads ", v->name(), " before it exists");
    return constantBuffer(v, *t);
  };
  // A group a vendor library runs (LibraryTactics.h).
  auto addLibraryStep = [&](const LibraryMatch& match) -> Status {
    runtime::KernelStep step;
    step.kind = runtime::StepKind::Library;
    KILN_TRY(resultBuffer(match.operands.back()).status());
    for (const ir::Value* v : match.operands) {
      KILN_ASSIGN(uint32_t id, readBuffer(v, "library call " + match.call.name));
      step.args.push_back(id);
    }
    step.kernel = uint32_t(exe->libraryCalls.size());
    exe->libraryCalls.push_back(match.call);
    exe->steps.push_back(std::move(step));
    ++out.stats.librarySteps;
    return Status::ok();
  };

  std::map<std::string, uint32_t> kernelByBody;
  std::map<std::string, uint32_t> packedWeights;  ///< constant + pack -> weight buffer
  // With releaseConsumedWeights, the groups yet to read each constant (filled once the order is known), and where
  // a constant's last reader packs it in place, the copy it packs from.
  std::map<const ir::Value*, size_t> readersLeft;
  std::shared_ptr<kiln::Buffer> packScratch;
  // A group as a generated kernel (a host step where no template lowers it).
  auto addKernelStep = [&](const KernelGroup* g) -> Status {
    const Config* config = nullptr;
    Config approximate;
    if (auto it = options.configs.find(g->name()); it != options.configs.end()) {
      config = &it->second;
    } else if (options.allowTf32 && target == KernelTarget::Gpu) {
      // The user allowed the precision trade-off: approximate knobs take their
      // opt-in value (a group without a knob space lowers, or not, as usual).
      Expected<const ScheduleTemplate*> t = templateFor(*g);
      Expected<KnobSpace> space = t ? (*t)->knobSpace(*g, target) : Expected<KnobSpace>(t.error());
      if (space) {
        approximate = space->defaultConfig();
        bool any = false;
        for (const Knob& k : space->knobs)
          if (k.approximate) approximate[k.name] = k.values.back(), any = true;
        if (any) config = &approximate;
      }
    }
    Expected<LoweredKernel> lowered = lowerGroup(*g, target, config);
    if (!lowered && lowered.error().code() == ErrorCode::CodegenUnsupported && !config) {
      KILN_TRY(addHostStep(*g, lowered.error().message()));
      return Status::ok();
    }
    if (!lowered) return std::move(lowered).error();
    LoweredKernel lk = std::move(*lowered);
    // Outputs first (so a kernel's own results exist), then the values it reads.
    runtime::KernelStep step;
    for (ir::Value* v : g->outputs) KILN_TRY(resultBuffer(v).status());
    for (size_t a = 0; a < lk.args.size(); ++a) {
      const ir::Value* v = lk.args[a];
      if (a < lk.packs.size() && lk.packs[a].kind == "table") {  // a table made at compile time
        runtime::BufferSpec b;
        b.name = lk.kernel.name + "." + lk.kernel.params[a]->name;
        b.dtype = lk.packs[a].table.dtype();
        b.dims = lk.packs[a].table.dims();
        b.kind = runtime::BufferKind::Weight;
        b.index = uint32_t(exe->weights.size());
        exe->buffers.push_back(b);
        exe->weights.push_back(lk.packs[a].table);
        out.stats.weightBytes += lk.packs[a].table.byteSize();
        step.args.push_back(uint32_t(exe->buffers.size() - 1));
        continue;
      }
      if (!v) {  // a workspace: arena space for this step only
        const Buffer& w = lk.kernel.params[a];
        runtime::BufferSpec b;
        b.name = lk.kernel.name + "." + w->name;
        b.dtype = dtypeOfScalar(w->type);
        b.dims = {w->size};
        exe->buffers.push_back(b);
        step.args.push_back(uint32_t(exe->buffers.size() - 1));
        continue;
      }
      if (a < lk.packs.size() && !lk.packs[a].kind.empty()) {  // a constant in a compile-time layout
        const PackSpec& pack = lk.packs[a];
        std::string key = v->name() + "#" + pack.kind + std::to_string(pack.width) + (pack.transposed ? "t" : "");
        auto it = packedWeights.find(key);
        if (it == packedWeights.end()) {
          const Tensor* t = constantTensor(v);
          if (!t) return makeError(ErrorCode::Internal, "kernel ", lk.kernel.name, " packs ", v->name(), ", not a constant");
          // The constant's last reader, reading nothing else of it: the graph gives it up now, and its storage may
          // take the panels.
          auto left = readersLeft.find(v);
          const bool lastRead = left != readersLeft.end() && left->second == 1 &&
                                std::count(lk.args.begin(), lk.args.end(), v) == 1;
          Tensor source = lastRead ? *t : Tensor();
          if (lastRead) v->producer()->removeAttr("value");
          KILN_ASSIGN(Tensor packed, lastRead ? packConstantInPlace(std::move(source), pack, packScratch) : packConstant(*t, pack));
          runtime::BufferSpec b;
          b.name = v->name() + ".packed" + std::to_string(pack.width);
          b.dtype = packed.dtype();
          b.dims = packed.dims();
          b.kind = runtime::BufferKind::Weight;
          b.index = uint32_t(exe->weights.size());
          exe->buffers.push_back(b);
          exe->weights.push_back(packed);
          out.stats.weightBytes += packed.byteSize();
          it = packedWeights.emplace(key, uint32_t(exe->buffers.size() - 1)).first;
        }
        step.args.push_back(it->second);
        continue;
      }
      KILN_ASSIGN(uint32_t id, readBuffer(v, "kernel " + lk.kernel.name));
      step.args.push_back(id);
    }
    // Identical kernels (same IR up to parameter names) share code.
    auto [it, fresh] = kernelByBody.try_emplace(kernelBodyKey(lk.kernel), uint32_t(out.kernels.size()));
    if (fresh) {
      exe->kernelNames.push_back(lk.kernel.name);
      std::vector<uint64_t> paramBytes;
      for (size_t a = 0; a < lk.kernel.params.size(); ++a) {
        const Buffer& b = lk.kernel.params[a];
        // An empty tensor's parameter is declared with one element (the IR has no empty buffers) but is never read.
        bool empty = exe->buffers[step.args[a]].bytes() == 0;
        paramBytes.push_back(empty ? 0 : uint64_t(b->size) * scalarTypeSize(b->type));
      }
      exe->kernelParamBytes.push_back(std::move(paramBytes));
      out.kernels.push_back(std::move(lk));
    }
    step.kernel = it->second;
    exe->steps.push_back(std::move(step));
    return Status::ok();
  };

  std::vector<const KernelGroup*> order = topologicalGroups(*out.plan);
  if (order.size() != out.plan->groups().size())
    return makeError(ErrorCode::Internal, "fusion plan groups form a cycle");
  // One group's steps: a host step, nothing (empty results), a library step, or a kernel.
  auto addGroupSteps = [&](const KernelGroup* g) -> Status {
    if (g->role == KernelRole::Extern) {
      KILN_TRY(addHostStep(*g, "no kernel template (extern op or data-dependent shape)"));
      return Status::ok();
    }
    // A group whose results are all empty has nothing to compute.
    bool empty = true;
    for (const ir::Value* v : g->outputs) {
      KILN_ASSIGN(Dims dims, staticDims(v));
      empty &= product(dims) == 0;
    }
    if (empty) {
      for (ir::Value* v : g->outputs) KILN_TRY(resultBuffer(v).status());
      return Status::ok();
    }
    // Under auto, what kiln tune measured for the group decides, else the heuristic. A configuration given for the
    // group keeps it generated, unless its library call measured faster (the tuning database still gives the
    // kernel's best configuration, for --library-tactics off).
    auto measured = options.libraryMeasuredFaster.find(g->name());
    const bool byMeasurement = options.libraryTactics == LibraryTactics::Auto && measured != options.libraryMeasuredFaster.end();
    const bool measuredFaster = measured != options.libraryMeasuredFaster.end() && measured->second;
    if (target == KernelTarget::Gpu && options.libraryTactics != LibraryTactics::Off &&
        (measuredFaster || !options.configs.count(g->name()))) {
      if (std::optional<LibraryMatch> match = libraryCallFor(*g, options.allowTf32);
          match && (byMeasurement ? measured->second : useLibrary(options.libraryTactics, *match))) {
        KILN_TRY(addLibraryStep(*match));
        return Status::ok();
      }
      const LibraryTactics splitTactics =
          byMeasurement ? (measured->second ? LibraryTactics::All : LibraryTactics::Off) : options.libraryTactics;
      if (std::optional<LibrarySplit> split = splitForLibrary(*out.plan, *g, splitTactics, options.allowTf32)) {
        KILN_TRY(addLibraryStep(split->head));
        out.libraryTails.push_back(std::make_unique<KernelGroup>(std::move(split->tail)));
        KILN_TRY(addKernelStep(out.libraryTails.back().get()));
        return Status::ok();
      }
    }
    return addKernelStep(g);
  };
  if (options.releaseConsumedWeights) readersLeft = constantReaders(graph, order);
  for (const KernelGroup* g : order) {
    KILN_TRY(addGroupSteps(g));
    for (const ir::Value* v : g->inputs)
      if (auto it = readersLeft.find(v); it != readersLeft.end() && --it->second == 0) v->producer()->removeAttr("value");
  }
  // Outputs in graph order; values no kernel computes (inputs, constants) are copied.
  for (const ir::Value* v : graph.outputs()) {
    auto it = bufferOf.find(v);
    uint32_t id;
    if (it != bufferOf.end() && exe->buffers[it->second].kind == runtime::BufferKind::Output &&
        std::find(exe->outputs.begin(), exe->outputs.end(), it->second) == exe->outputs.end()) {
      id = it->second;
    } else {
      int32_t source = -1;
      if (it != bufferOf.end()) source = int32_t(it->second);
      else if (const Tensor* t = constantTensor(v)) {
        KILN_ASSIGN(uint32_t w, constantBuffer(v, *t));
        source = int32_t(w);
      } else {
        return makeError(ErrorCode::CodegenUnsupported, "graph output '", v->name(), "' is not computed by any kernel");
      }
      KILN_ASSIGN(id, addBuffer(v, runtime::BufferKind::Output));
      exe->buffers[id].aliasOf = source;
    }
    exe->buffers[id].index = uint32_t(exe->outputs.size());
    exe->outputs.push_back(id);
  }
  // Memory plan over the intermediates' lifetimes.
  std::vector<Lifetime> lifetimes;
  std::vector<uint32_t> intermediates;
  for (uint32_t id = 0; id < exe->buffers.size(); ++id)
    if (exe->buffers[id].kind == runtime::BufferKind::Intermediate && !exe->buffers[id].dynamic) {
      intermediates.push_back(id);
      lifetimes.push_back({exe->buffers[id].bytes(), SIZE_MAX, 0});
    }
  std::map<uint32_t, size_t> slot;
  for (size_t i = 0; i < intermediates.size(); ++i) slot[intermediates[i]] = i;
  for (size_t s = 0; s < exe->steps.size(); ++s)
    for (uint32_t a : exe->steps[s].args)
      if (auto it = slot.find(a); it != slot.end()) {
        Lifetime& l = lifetimes[it->second];
        l.first = std::min(l.first, s);
        l.last = std::max(l.last, s);
      }
  MemoryPlan memory = planMemory(lifetimes);
  for (size_t i = 0; i < intermediates.size(); ++i) exe->buffers[intermediates[i]].offset = memory.offsets[i];
  exe->arenaBytes = memory.arenaBytes;
  KILN_TRY(exe->validate());
  out.stats.groups = order.size();
  out.stats.kernels = out.kernels.size();
  out.stats.arenaBytes = memory.arenaBytes;
  out.stats.unsharedBytes = memory.unsharedBytes;
  out.stats.lowerMs = timer.elapsedMs();
  out.executable = std::move(exe);
  return out;
}

Expected<CpuModel> compileForCpu(ir::Graph& graph, const CompileOptions& options) {
  CpuModel model;
  KILN_ASSIGN(model.lowered, lowerModel(graph, KernelTarget::Cpu, options));
  Stopwatch timer;
  KILN_ASSIGN(model.jit, CpuJit::create());
  std::vector<const Kernel*> kernels;
  for (const LoweredKernel& k : model.lowered.kernels) kernels.push_back(&k.kernel);
  KILN_ASSIGN(std::vector<CpuKernelFn> fns, model.jit->compile(kernels));
  model.lowered.executable->cpu = model.jit->hostCpu();
  model.lowered.stats.llvmMs = timer.elapsedMs();
  std::vector<runtime::KernelEntry> entries(fns.begin(), fns.end());
  KILN_ASSIGN(model.executor, runtime::CpuExecutor::create(model.lowered.executable, std::move(entries)));
  return model;
}

Expected<LoweredModel> compileCpuArtifact(ir::Graph& graph, const CompileOptions& options) {
  KILN_ASSIGN(LoweredModel model, lowerModel(graph, KernelTarget::Cpu, options));
  Stopwatch timer;
  std::vector<const Kernel*> kernels;
  for (const LoweredKernel& k : model.kernels) kernels.push_back(&k.kernel);
  KILN_ASSIGN(std::vector<CpuObject> objects, compileToObjects(kernels));
  for (CpuObject& object : objects) model.executable->objectCode.push_back(std::move(object.bytes));
  model.executable->cpu = objects.front().cpu;
  model.executable->cpuFeatures = objects.front().requiredFeatures;
  model.stats.llvmMs = timer.elapsedMs();
  return model;
}

}  // namespace kiln::codegen
