//===- lib/codegen/ModelLowering.cpp - Plan, lower, build the Executable ----===//
//
// lowerModel: builds the fusion plan (applying saved decisions), orders the
// groups topologically and turns each into steps of the Executable (a host
// step, a library step, a kernel, or nothing for empty results), then binds
// the outputs and places the intermediates with the memory planner from
// their lifetimes over the steps. Buffers are made on first use: graph
// inputs, weights (Constant values a step reads, or their packed copies),
// outputs and intermediates. With options.releaseConsumedWeights each
// constant leaves the graph once its last reader is lowered, and a last
// reader that packs it may write the panels over its storage.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/ModelLowering.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "MemoryPlanner.h"
#include "TensorExpr.h"
#include "kiln/ir/Node.h"
#include "kiln/ir/Printer.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/StringPool.h"

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
  if (!p || p->op() != ir::Op::Constant || !p->hasAttr("value")) return nullptr;
  return &p->getTensor("value");
}

/// Constants that only the groups of `order` read (not graph outputs, not
/// read from inside a subgraph), each with its count of groups.
std::map<const ir::Value*, size_t> constantReaders(const ir::Graph& graph,
                                                   const std::vector<const KernelGroup*>& order) {
  std::map<const ir::Value*, size_t> readers;
  for (const KernelGroup* g : order)
    for (const ir::Value* v : g->inputs)
      if (constantTensor(v)) ++readers[v];
  std::erase_if(readers, [&](const auto& entry) {
    const auto& uses = entry.first->uses();
    return std::any_of(uses.begin(), uses.end(),
                       [&](const ir::Use& u) { return u.isGraphOutput() || u.user->graph() != &graph; });
  });
  return readers;
}

/// The strings that i64 constants of `graph` and its subgraphs name by id
/// (string tensors are ids into the string pool), sorted: an artifact
/// carries them so that the ids resolve where it runs.
std::vector<std::string> stringsAmongConstants(const ir::Graph& graph) {
  std::set<std::string> strings;
  std::vector<const ir::Graph*> pending{&graph};
  while (!pending.empty()) {
    const ir::Graph* g = pending.back();
    pending.pop_back();
    for (const ir::Node* n : g->nodes()) {
      for (const ir::Graph* sub : n->subgraphs()) pending.push_back(sub);
      const Tensor* t = n->op() == ir::Op::Constant ? constantTensor(n->output(0)) : nullptr;
      if (!t || t->dtype() != DType::I64) continue;
      for (int64_t i = 0; i < t->numElements(); ++i)
        if (int64_t id = t->data<int64_t>()[i]; id != 0)
          if (std::optional<std::string_view> s = pooledString(id)) strings.emplace(*s);
    }
  }
  return {strings.begin(), strings.end()};
}

/// Constants with at most this many elements are copied into host graphs;
/// larger ones are weight buffers (stored once, shared by kernels).
constexpr int64_t kInlineConstantElements = 64;

/// One lowering of a graph into an Executable; run() does it, once.
class ModelLowering {
 public:
  ModelLowering(ir::Graph& graph, KernelTarget target, const CompileOptions& options)
      : graph_(graph), target_(target), options_(options), exe_(std::make_shared<runtime::Executable>()) {}

  Expected<LoweredModel> run();

 private:
  // Buffers.
  Expected<uint32_t> addBuffer(const ir::Value* v, runtime::BufferKind kind);
  uint32_t addWeight(runtime::BufferSpec b, Tensor t);
  Expected<uint32_t> constantBuffer(const ir::Value* v, const Tensor& t);
  Expected<uint32_t> resultBuffer(const ir::Value* v);
  Expected<uint32_t> readBuffer(const ir::Value* v, const std::string& reader);
  Status addInputs();
  Status addDimSymbols();
  // Steps.
  Status addGroupSteps(const KernelGroup* g);
  Status addHostStep(const KernelGroup& g, const std::string& reason);
  // Compiled If (a branch step, the then block, a jump, the else block).
  struct BranchBlock {
    const ir::Graph* graph = nullptr;
    std::unique_ptr<FusionPlan> plan;  ///< its groups, or null when the branch is one host step:
    KernelGroup host;                  ///< the host step's group (every node of the branch)
  };
  std::optional<std::array<BranchBlock, 2>> compilableBranches(const KernelGroup& g) const;
  Status addIfSteps(const KernelGroup& g, std::array<BranchBlock, 2> blocks);
  Status addBranchBlock(BranchBlock block, const std::vector<uint32_t>& results);
  Status addLibraryStep(const LibraryMatch& match);
  Status addKernelStep(const KernelGroup* g);
  const Config* configFor(const KernelGroup* g, Config& approximate) const;
  Expected<uint32_t> kernelArgBuffer(const LoweredKernel& lk, size_t a);
  Expected<uint32_t> packedWeightBuffer(const LoweredKernel& lk, size_t a);
  void addKernel(LoweredKernel lk, runtime::KernelStep step);
  // The end.
  Status addOutputs();
  void planArena();

  ir::Graph& graph_;
  const KernelTarget target_;
  const CompileOptions& options_;
  LoweredModel out_;
  std::shared_ptr<runtime::Executable> exe_;
  std::map<const ir::Value*, uint32_t> bufferOf_;
  std::set<const ir::Value*> graphOutputs_;
  std::map<std::string, uint32_t> kernelByBody_;
  std::map<std::string, uint32_t> packedWeights_;  ///< constant + pack -> weight buffer
  /// With releaseConsumedWeights, the groups yet to read each constant, and
  /// where a constant's last reader packs it in place, the copy it packs from.
  std::map<const ir::Value*, size_t> readersLeft_;
  std::shared_ptr<kiln::Buffer> packScratch_;
  size_t branchGroups_ = 0;  ///< groups lowered inside compiled If branches
};

Expected<LoweredModel> ModelLowering::run() {
  Stopwatch timer;
  KILN_ASSIGN(FusionPlan plan, FusionPlan::build(graph_));
  out_.plan = std::make_unique<FusionPlan>(std::move(plan));
  if (!options_.dimRanges.empty()) out_.plan->setDimRanges(&options_.dimRanges);
  if (!options_.fusionPlanText.empty()) KILN_TRY(out_.plan->applyDecisions(options_.fusionPlanText));
  out_.stats.planMs = timer.elapsedMs();
  timer.restart();

  exe_->target = target_ == KernelTarget::Cpu ? "cpu" : "cuda";
  exe_->strings = stringsAmongConstants(graph_);
  for (uint32_t i = 0; i < graph_.inputs().size(); ++i)
    if (options_.stringInputs.count(graph_.inputs()[i]->name())) exe_->stringInputs.push_back(i);
  for (uint32_t i = 0; i < graph_.outputs().size(); ++i)
    if (options_.stringOutputs.count(graph_.outputs()[i]->name())) exe_->stringOutputs.push_back(i);
  KILN_TRY(addInputs());
  KILN_TRY(addDimSymbols());
  graphOutputs_ = std::set<const ir::Value*>(graph_.outputs().begin(), graph_.outputs().end());
  std::vector<const KernelGroup*> order = topologicalGroups(*out_.plan);
  if (order.size() != out_.plan->groups().size())
    return makeError(ErrorCode::Internal, "fusion plan groups form a cycle");
  if (options_.releaseConsumedWeights) readersLeft_ = constantReaders(graph_, order);
  for (const KernelGroup* g : order) {
    KILN_TRY(addGroupSteps(g));
    for (const ir::Value* v : g->inputs)
      if (auto it = readersLeft_.find(v); it != readersLeft_.end() && --it->second == 0)
        v->producer()->removeAttr("value");
  }
  KILN_TRY(addOutputs());
  const bool anyExtents = std::any_of(exe_->kernelExtentMax.begin(), exe_->kernelExtentMax.end(),
                                      [](const std::vector<int64_t>& m) { return !m.empty(); });
  if (!anyExtents) exe_->kernelExtentMax.clear();
  planArena();
  KILN_TRY(exe_->validate());
  out_.stats.groups = order.size() + branchGroups_;
  out_.stats.kernels = out_.kernels.size();
  out_.stats.lowerMs = timer.elapsedMs();
  out_.executable = std::move(exe_);
  return std::move(out_);
}

Expected<uint32_t> ModelLowering::addBuffer(const ir::Value* v, runtime::BufferKind kind) {
  runtime::BufferSpec b;
  bool dynamicOk = kind == runtime::BufferKind::Intermediate || kind == runtime::BufferKind::Output;
  if (hasDynamicDims(v) && kind != runtime::BufferKind::Weight) {  // sized for the maxima, shaped per run
    KILN_ASSIGN(b.dims, dimsAt(v, &options_.dimRanges, DimPoint::Max));
    KILN_TRY(elementDims(v).status());
    b.shape = *v->tensorType().dimExprs();
  } else if (Expected<Dims> dims = staticDims(v)) {
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
  exe_->buffers.push_back(b);
  uint32_t id = uint32_t(exe_->buffers.size() - 1);
  bufferOf_[v] = id;
  return id;
}

/// A weight buffer holding `t` (made at compile time: a table or a packed copy).
uint32_t ModelLowering::addWeight(runtime::BufferSpec b, Tensor t) {
  b.dtype = t.dtype();
  b.dims = t.dims();
  b.kind = runtime::BufferKind::Weight;
  b.index = uint32_t(exe_->weights.size());
  exe_->buffers.push_back(b);
  out_.stats.weightBytes += t.byteSize();
  exe_->weights.push_back(std::move(t));
  return uint32_t(exe_->buffers.size() - 1);
}

/// A constant's weight buffer (created on first use).
Expected<uint32_t> ModelLowering::constantBuffer(const ir::Value* v, const Tensor& t) {
  if (auto it = bufferOf_.find(v); it != bufferOf_.end()) return it->second;
  KILN_ASSIGN(uint32_t id, addBuffer(v, runtime::BufferKind::Weight));
  exe_->buffers[id].index = uint32_t(exe_->weights.size());
  // As it is: an initializer kept in its protobuf string's storage is only 16-byte
  // aligned, and the CPU executor copies such weights to 64-byte aligned storage when it
  // is created; `kiln compile` only writes them to the artifact and needs no copy.
  exe_->weights.push_back(t);
  out_.stats.weightBytes += t.byteSize();
  return id;
}

Expected<uint32_t> ModelLowering::resultBuffer(const ir::Value* v) {
  if (auto it = bufferOf_.find(v); it != bufferOf_.end()) return it->second;
  return addBuffer(v, graphOutputs_.count(v) ? runtime::BufferKind::Output : runtime::BufferKind::Intermediate);
}

/// The buffer of a value step `reader` reads: computed earlier, or a constant's weight buffer.
Expected<uint32_t> ModelLowering::readBuffer(const ir::Value* v, const std::string& reader) {
  if (auto it = bufferOf_.find(v); it != bufferOf_.end()) return it->second;
  const Tensor* t = constantTensor(v);
  if (!t) return makeError(ErrorCode::Internal, reader, " reads ", v->name(), " before it exists");
  return constantBuffer(v, *t);
}

Status ModelLowering::addInputs() {
  for (const ir::Value* v : graph_.inputs()) {
    KILN_ASSIGN(uint32_t id, addBuffer(v, runtime::BufferKind::Input));
    exe_->buffers[id].index = uint32_t(exe_->inputs.size());
    exe_->inputs.push_back(id);
  }
  return Status::ok();
}

/// The dynamic dims, each read from the first input dim that is exactly its symbol.
Status ModelLowering::addDimSymbols() {
  for (const auto& [symbol, range] : options_.dimRanges) {
    std::optional<runtime::DimSymbol> found;
    for (uint32_t i = 0; i < exe_->inputs.size() && !found; ++i) {
      const std::vector<DimExpr>& shape = exe_->buffers[exe_->inputs[i]].shape;
      for (uint32_t axis = 0; axis < shape.size() && !found; ++axis)
        if (shape[axis] == DimExpr::symbol(symbol)) found = runtime::DimSymbol{symbol, i, axis, range.min, range.opt, range.max};
    }
    if (!found)
      return makeError(ErrorCode::CodegenUnsupported, "dynamic dim '", symbol, "' is not a dim of any graph input");
    exe_->symbols.push_back(*found);
  }
  return Status::ok();
}

/// One group's steps: a host step, nothing (empty results), a library step, or a kernel.
Status ModelLowering::addGroupSteps(const KernelGroup* g) {
  if (g->role == KernelRole::Extern) {
    if (std::optional<std::array<BranchBlock, 2>> blocks = compilableBranches(*g)) return addIfSteps(*g, std::move(*blocks));
    return addHostStep(*g, "no kernel template (extern op or data-dependent shape)");
  }
  // A group whose results are all empty has nothing to compute.
  bool empty = true;
  for (const ir::Value* v : g->outputs) {
    KILN_ASSIGN(Dims dims, elementDims(v));  // -1 at a dynamic dim: not empty
    empty &= product(dims) == 0;
  }
  if (empty) {
    for (ir::Value* v : g->outputs) KILN_TRY(resultBuffer(v).status());
    return Status::ok();
  }
  // Under auto, what kiln tune measured for the group decides, else the heuristic. A configuration given for the
  // group keeps it generated, unless its library call measured faster (the tuning database still gives the
  // kernel's best configuration, for --library-tactics off). A group with dynamic dims stays generated: the
  // runtime plans library calls for fixed shapes.
  auto measured = options_.libraryMeasuredFaster.find(g->name());
  const bool byMeasurement =
      options_.libraryTactics == LibraryTactics::Auto && measured != options_.libraryMeasuredFaster.end();
  const bool measuredFaster = measured != options_.libraryMeasuredFaster.end() && measured->second;
  if (target_ == KernelTarget::Gpu && options_.libraryTactics != LibraryTactics::Off && !hasDynamicDims(*g) &&
      (measuredFaster || !options_.configs.count(g->name()))) {
    if (std::optional<LibraryMatch> match = libraryCallFor(*g, options_.allowTf32);
        match && (byMeasurement ? measured->second : useLibrary(options_.libraryTactics, *match)))
      return addLibraryStep(*match);
    const LibraryTactics splitTactics =
        byMeasurement ? (measured->second ? LibraryTactics::All : LibraryTactics::Off) : options_.libraryTactics;
    if (std::optional<LibrarySplit> split = splitForLibrary(*out_.plan, *g, splitTactics, options_.allowTf32)) {
      KILN_TRY(addLibraryStep(split->head));
      out_.libraryTails.push_back(std::make_unique<KernelGroup>(std::move(split->tail)));
      return addKernelStep(out_.libraryTails.back().get());
    }
  }
  return addKernelStep(g);
}

/// A group the runtime runs with its reference kernels: its nodes, with small
/// constants inlined, extracted into a graph printed as text IR.
Status ModelLowering::addHostStep(const KernelGroup& g, const std::string& reason) {
  const ir::Node* first = g.nodes.front();
  auto unsupported = [&](auto&&... parts) {
    return makeError(ErrorCode::CodegenUnsupported, parts...).atNode(first->displayName(), first->opType());
  };
  if (!options_.allowHostSteps) return unsupported(reason, " (host steps are disabled)");
  if (hasDynamicDims(g))
    return unsupported(reason, " (a group with dynamic dims has no host-step fallback)");
  runtime::KernelStep step;
  step.kind = runtime::StepKind::Host;
  std::vector<const ir::Node*> nodes;
  std::vector<ir::Value*> reads;
  for (ir::Value* v : g.inputs) {
    if (!v->type().isTensor())
      return unsupported("value '", v->name(), "' is a ", v->type().str(), "; only tensors pass between steps");
    const Tensor* t = constantTensor(v);
    if (t && t->numElements() <= kInlineConstantElements) {
      nodes.push_back(v->producer());
      continue;
    }
    if (!bufferOf_.count(v) && !t)
      return makeError(ErrorCode::Internal, "host step of ", first->displayName(), " reads ", v->name(),
                       " before it exists");
    KILN_ASSIGN(uint32_t id, bufferOf_.count(v) ? Expected<uint32_t>(bufferOf_[v]) : constantBuffer(v, *t));
    reads.push_back(v);
    step.args.push_back(id);
  }
  nodes.insert(nodes.end(), g.nodes.begin(), g.nodes.end());
  for (ir::Value* v : g.outputs) {
    if (!v->type().isTensor())
      return unsupported("value '", v->name(), "' is a ", v->type().str(), "; only tensors pass between steps");
    KILN_ASSIGN(uint32_t id, resultBuffer(v));
    step.args.push_back(id);
  }
  runtime::HostGraph h;
  h.name = "h" + g.name().substr(1);
  h.numInputs = uint32_t(reads.size());
  h.numOutputs = uint32_t(g.outputs.size());
  for (const ir::Node* n : g.nodes)
    if (n->op() != ir::Op::Constant) h.ops.push_back(n->qualifiedOpType());
  ir::Module module(ir::extractGraph(nodes, reads, g.outputs, h.name));
  h.text = ir::printModule(module);
  step.kernel = uint32_t(exe_->hostGraphs.size());
  out_.stats.hostSteps.push_back({h.name, h.ops, reason});
  exe_->hostGraphs.push_back(std::move(h));
  exe_->steps.push_back(std::move(step));
  return Status::ok();
}

/// Whether branch output `v` can be written straight into the If's result buffer by the branch's host
/// step: a result of one of the branch's nodes, output once.
bool writtenInPlace(const ir::Graph& branch, const ir::Value* v) {
  return v->producer() && v->producer()->graph() == &branch &&
         std::count(branch.outputs().begin(), branch.outputs().end(), v) == 1;
}

bool sameStaticType(const ir::Value* a, const ir::Value* b) {
  Expected<Dims> da = staticDims(a), db = staticDims(b);
  return da && db && *da == *db && a->tensorType().dtype() == b->tensorType().dtype();
}

/// Whether shape inference typed every value `graph`'s nodes compute as a tensor of a known element type
/// (what passes between steps; the shape may be known only at run time).
bool computesTypedTensors(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes())
    for (const ir::Value* v : n->outputs())
      if (!v->type().isTensor() || v->tensorType().dtype() == DType::Undefined) return false;
  return true;
}

/// A whole branch as one host step's group: its nodes, the values they read from enclosing graphs
/// (subgraphs' captures included), and the branch results its nodes compute.
KernelGroup branchHostGroup(const ir::Graph& branch, std::string scope) {
  KernelGroup host;
  host.role = KernelRole::Extern;
  host.scope = std::move(scope);
  auto inside = [&](const ir::Value* v) { return v->producer() && v->producer()->graph() == &branch; };
  auto read = [&](ir::Value* v) {
    if (v && !inside(v) && std::find(host.inputs.begin(), host.inputs.end(), v) == host.inputs.end())
      host.inputs.push_back(v);
  };
  for (ir::Node* n : branch.nodes()) {
    host.nodes.push_back(n);
    for (ir::Value* v : n->inputs()) read(v);
    for (ir::Value* v : ir::capturedValues(*n)) read(v);
  }
  for (ir::Value* v : branch.outputs())
    if (inside(v) && std::find(host.outputs.begin(), host.outputs.end(), v) == host.outputs.end())
      host.outputs.push_back(v);
  return host;
}

/// For a group that is one If node with static results and a one-element condition, its two branches as
/// blocks: each with its fusion plan, or as one host step where its values are not all tensors (a branch
/// shape inference could not type, one that cannot run on these shapes); such a branch's results go
/// straight into the If's buffers, checked at run time. Nothing when the If runs as a host step: neither
/// branch compiles, or a branch result does not have the If's static type.
std::optional<std::array<ModelLowering::BranchBlock, 2>> ModelLowering::compilableBranches(const KernelGroup& g) const {
  const ir::Node& n = *g.nodes.front();
  if (g.nodes.size() != 1 || n.op() != ir::Op::If || !n.hasAttr("then_branch") || !n.hasAttr("else_branch"))
    return std::nullopt;
  Expected<Dims> condition = staticDims(n.input(0));
  if (!condition || product(*condition) != 1) return std::nullopt;
  for (const ir::Value* v : n.outputs())
    if (!staticDims(v)) return std::nullopt;
  std::array<BranchBlock, 2> blocks;
  const char* attrs[] = {"then_branch", "else_branch"};
  for (size_t b = 0; b < 2; ++b) {
    ir::Graph& branch = *const_cast<ir::Node&>(n).getGraph(attrs[b]);
    if (branch.outputs().size() != n.numOutputs()) return std::nullopt;
    const std::string scope = g.scope + std::to_string(g.id) + "tf"[b] + "_";
    blocks[b].graph = &branch;
    if (computesTypedTensors(branch)) {
      for (size_t i = 0; i < n.numOutputs(); ++i)
        if (!sameStaticType(branch.outputs()[i], n.output(i))) return std::nullopt;
      Expected<FusionPlan> plan = FusionPlan::build(branch, scope);
      if (!plan) return std::nullopt;
      blocks[b].plan = std::make_unique<FusionPlan>(std::move(*plan));
      continue;
    }
    blocks[b].host = branchHostGroup(branch, scope);
    if (blocks[b].host.nodes.empty()) return std::nullopt;
    for (const ir::Value* v : blocks[b].host.inputs)
      if (!v->type().isTensor()) return std::nullopt;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      const ir::Value* out = branch.outputs()[i];
      if (!(writtenInPlace(branch, out) ? out->type().isTensor() : sameStaticType(out, n.output(i))))
        return std::nullopt;
    }
  }
  if (!blocks[0].plan && !blocks[1].plan) return std::nullopt;
  return blocks;
}

/// An If as steps: a branch step to the else block when the condition is false, the then block, a jump
/// past the else block, the else block.
Status ModelLowering::addIfSteps(const KernelGroup& g, std::array<BranchBlock, 2> blocks) {
  const ir::Node& n = *g.nodes.front();
  runtime::KernelStep branch;
  branch.kind = runtime::StepKind::Branch;
  KILN_ASSIGN(uint32_t condition, readBuffer(n.input(0), "If " + n.displayName()));
  branch.args = {condition};
  std::vector<uint32_t> results;
  for (ir::Value* v : n.outputs()) {
    KILN_ASSIGN(uint32_t id, resultBuffer(v));
    results.push_back(id);
  }
  const size_t branchAt = exe_->steps.size();
  exe_->steps.push_back(branch);
  KILN_TRY(addBranchBlock(std::move(blocks[0]), results));
  const size_t jumpAt = exe_->steps.size();
  runtime::KernelStep jump;
  jump.kind = runtime::StepKind::Jump;
  exe_->steps.push_back(jump);
  exe_->steps[branchAt].kernel = uint32_t(exe_->steps.size());
  KILN_TRY(addBranchBlock(std::move(blocks[1]), results));
  exe_->steps[jumpAt].kernel = uint32_t(exe_->steps.size());
  ++out_.stats.compiledIfs;
  return Status::ok();
}

/// One branch's steps: its groups' steps, or one host step of the whole branch writing the If's buffers
/// for the results it computes once; then copies of the other results into the If's buffers.
Status ModelLowering::addBranchBlock(BranchBlock block, const std::vector<uint32_t>& results) {
  const ir::Graph& branch = *block.graph;
  if (block.plan) {
    std::vector<const KernelGroup*> order = topologicalGroups(*block.plan);
    if (order.size() != block.plan->groups().size())
      return makeError(ErrorCode::Internal, "fusion plan groups of ", branch.name(), " form a cycle");
    for (const KernelGroup* g : order) KILN_TRY(addGroupSteps(g));
    branchGroups_ += order.size();
    out_.branchPlans.push_back(std::move(block.plan));
  } else {
    for (size_t i = 0; i < results.size(); ++i)
      if (writtenInPlace(branch, branch.outputs()[i])) bufferOf_[branch.outputs()[i]] = results[i];
    KILN_TRY(addHostStep(block.host, "a branch whose values shape inference could not type"));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const ir::Value* out = branch.outputs()[i];
    if (auto it = bufferOf_.find(out); it != bufferOf_.end() && it->second == results[i]) continue;  // in place
    runtime::KernelStep copy;
    copy.kind = runtime::StepKind::Copy;
    KILN_ASSIGN(uint32_t from, readBuffer(out, "branch " + branch.name()));
    copy.args = {from, results[i]};
    exe_->steps.push_back(std::move(copy));
  }
  return Status::ok();
}

/// A group a vendor library runs (LibraryTactics.h).
Status ModelLowering::addLibraryStep(const LibraryMatch& match) {
  runtime::KernelStep step;
  step.kind = runtime::StepKind::Library;
  KILN_TRY(resultBuffer(match.operands.back()).status());
  for (const ir::Value* v : match.operands) {
    KILN_ASSIGN(uint32_t id, readBuffer(v, "library call " + match.call.name));
    step.args.push_back(id);
  }
  step.kernel = uint32_t(exe_->libraryCalls.size());
  exe_->libraryCalls.push_back(match.call);
  exe_->steps.push_back(std::move(step));
  ++out_.stats.librarySteps;
  return Status::ok();
}

/// The configuration a group lowers with: the one given for it, or on the GPU
/// with TF32 allowed its template's defaults with the approximate knobs at
/// their opt-in value (kept in `approximate`); null for the template's defaults.
const Config* ModelLowering::configFor(const KernelGroup* g, Config& approximate) const {
  if (auto it = options_.configs.find(g->name()); it != options_.configs.end()) return &it->second;
  if (!options_.allowTf32 || target_ != KernelTarget::Gpu) return nullptr;
  Expected<const ScheduleTemplate*> t = templateFor(*g);
  Expected<KnobSpace> space = t ? (*t)->knobSpace(*g, target_) : Expected<KnobSpace>(t.error());
  if (!space) return nullptr;  // a group without a knob space lowers, or not, as usual
  approximate = space->defaultConfig();
  bool any = false;
  for (const Knob& k : space->knobs)
    if (k.approximate) approximate[k.name] = k.values.back(), any = true;
  return any ? &approximate : nullptr;
}

/// A group as a generated kernel (a host step where no template lowers it).
Status ModelLowering::addKernelStep(const KernelGroup* g) {
  Config approximate;
  const Config* config = configFor(g, approximate);
  Expected<LoweredKernel> lowered = lowerGroup(*g, target_, config);
  if (!lowered && lowered.error().code() == ErrorCode::CodegenUnsupported && !config)
    return addHostStep(*g, lowered.error().message());
  if (!lowered) return std::move(lowered).error();
  // Outputs first (so a kernel's own results exist), then the values it reads.
  runtime::KernelStep step;
  for (ir::Value* v : g->outputs) KILN_TRY(resultBuffer(v).status());
  for (size_t a = 0; a < lowered->args.size(); ++a) {
    KILN_ASSIGN(uint32_t id, kernelArgBuffer(*lowered, a));
    step.args.push_back(id);
  }
  for (const std::string& symbol : lowered->extentSymbols) step.extents.push_back(DimExpr::symbol(symbol));
  addKernel(std::move(*lowered), std::move(step));
  return Status::ok();
}

/// The buffer of a lowered kernel's argument `a`: a table made at compile
/// time, a workspace, a packed constant, or a value computed or stored.
Expected<uint32_t> ModelLowering::kernelArgBuffer(const LoweredKernel& lk, size_t a) {
  const ir::Value* v = lk.args[a];
  const bool packed = a < lk.packs.size() && !lk.packs[a].kind.empty();
  if (packed && lk.packs[a].kind == "table") {
    runtime::BufferSpec b;
    b.name = lk.kernel.name + "." + lk.kernel.params[a]->name;
    return addWeight(b, lk.packs[a].table);
  }
  if (!v) {  // a workspace: arena space for this step only
    const Buffer& w = lk.kernel.params[a];
    runtime::BufferSpec b;
    b.name = lk.kernel.name + "." + w->name;
    b.dtype = dtypeOfScalar(w->type);
    b.dims = {w->size};
    exe_->buffers.push_back(b);
    return uint32_t(exe_->buffers.size() - 1);
  }
  if (packed) return packedWeightBuffer(lk, a);
  return readBuffer(v, "kernel " + lk.kernel.name);
}

/// A constant in a compile-time layout, packed once per constant and layout.
Expected<uint32_t> ModelLowering::packedWeightBuffer(const LoweredKernel& lk, size_t a) {
  const ir::Value* v = lk.args[a];
  const PackSpec& pack = lk.packs[a];
  std::string key = v->name() + "#" + pack.kind + std::to_string(pack.width) + (pack.transposed ? "t" : "");
  if (auto it = packedWeights_.find(key); it != packedWeights_.end()) return it->second;
  const Tensor* t = constantTensor(v);
  if (!t) return makeError(ErrorCode::Internal, "kernel ", lk.kernel.name, " packs ", v->name(), ", not a constant");
  // The constant's last reader, reading nothing else of it: the graph gives it up now, and its storage may
  // take the panels.
  auto left = readersLeft_.find(v);
  const bool lastRead =
      left != readersLeft_.end() && left->second == 1 && std::count(lk.args.begin(), lk.args.end(), v) == 1;
  Tensor source = lastRead ? *t : Tensor();
  if (lastRead) v->producer()->removeAttr("value");
  KILN_ASSIGN(Tensor packed,
              lastRead ? packConstantInPlace(std::move(source), pack, packScratch_) : packConstant(*t, pack));
  runtime::BufferSpec b;
  b.name = v->name() + ".packed" + std::to_string(pack.width);
  const uint32_t id = addWeight(b, std::move(packed));
  packedWeights_.emplace(key, id);
  return id;
}

/// Adds the step; identical kernels (same IR up to parameter names) share code.
void ModelLowering::addKernel(LoweredKernel lk, runtime::KernelStep step) {
  auto [it, fresh] = kernelByBody_.try_emplace(kernelBodyKey(lk.kernel), uint32_t(out_.kernels.size()));
  if (fresh) {
    exe_->kernelNames.push_back(lk.kernel.name);
    std::vector<uint64_t> paramBytes;
    for (size_t a = 0; a < lk.kernel.params.size(); ++a) {
      const Buffer& b = lk.kernel.params[a];
      // An empty tensor's parameter is declared with one element (the IR has no empty buffers) but is never read.
      bool empty = exe_->buffers[step.args[a]].bytes() == 0;
      paramBytes.push_back(empty ? 0 : uint64_t(b->size) * scalarTypeSize(b->type));
    }
    exe_->kernelParamBytes.push_back(std::move(paramBytes));
    std::vector<int64_t> extentMax;
    for (const RunTimeExtent& e : lk.kernel.extents) extentMax.push_back(e.max);
    exe_->kernelExtentMax.push_back(std::move(extentMax));
    out_.kernels.push_back(std::move(lk));
  }
  step.kernel = it->second;
  exe_->steps.push_back(std::move(step));
}

/// Outputs in graph order; values no kernel computes (inputs, constants) are copied.
Status ModelLowering::addOutputs() {
  for (const ir::Value* v : graph_.outputs()) {
    auto it = bufferOf_.find(v);
    uint32_t id;
    if (it != bufferOf_.end() && exe_->buffers[it->second].kind == runtime::BufferKind::Output &&
        std::find(exe_->outputs.begin(), exe_->outputs.end(), it->second) == exe_->outputs.end()) {
      id = it->second;
    } else {
      int32_t source = -1;
      if (it != bufferOf_.end()) {
        source = int32_t(it->second);
      } else if (const Tensor* t = constantTensor(v)) {
        KILN_ASSIGN(uint32_t w, constantBuffer(v, *t));
        source = int32_t(w);
      } else {
        return makeError(ErrorCode::CodegenUnsupported, "graph output '", v->name(), "' is not computed by any kernel");
      }
      KILN_ASSIGN(id, addBuffer(v, runtime::BufferKind::Output));
      exe_->buffers[id].aliasOf = source;
    }
    exe_->buffers[id].index = uint32_t(exe_->outputs.size());
    exe_->outputs.push_back(id);
  }
  return Status::ok();
}

/// The memory plan over the static intermediates' lifetimes (first to last step using each).
void ModelLowering::planArena() {
  std::vector<Lifetime> lifetimes;
  std::vector<uint32_t> intermediates;
  for (uint32_t id = 0; id < exe_->buffers.size(); ++id)
    if (exe_->buffers[id].kind == runtime::BufferKind::Intermediate && !exe_->buffers[id].dynamic) {
      intermediates.push_back(id);
      lifetimes.push_back({exe_->buffers[id].bytes(), SIZE_MAX, 0});
    }
  std::map<uint32_t, size_t> slot;
  for (size_t i = 0; i < intermediates.size(); ++i) slot[intermediates[i]] = i;
  for (size_t s = 0; s < exe_->steps.size(); ++s)
    for (uint32_t a : exe_->steps[s].args)
      if (auto it = slot.find(a); it != slot.end()) {
        Lifetime& l = lifetimes[it->second];
        l.first = std::min(l.first, s);
        l.last = std::max(l.last, s);
      }
  MemoryPlan memory = planMemory(lifetimes);
  for (size_t i = 0; i < intermediates.size(); ++i) exe_->buffers[intermediates[i]].offset = memory.offsets[i];
  exe_->arenaBytes = memory.arenaBytes;
  out_.stats.arenaBytes = memory.arenaBytes;
  out_.stats.unsharedBytes = memory.unsharedBytes;
}

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
  return ModelLowering(graph, target, options).run();
}

}  // namespace kiln::codegen
