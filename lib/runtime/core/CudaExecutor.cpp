//===- lib/runtime/core/CudaExecutor.cpp - Running CUDA kernel steps ------===//
//
// See CudaExecutor.h. Device memory: one allocation per input, output and
// weight buffer and one arena for the intermediates (offsets from the memory
// plan); dynamic values (host steps' data-dependent results) stay on the
// host. Inputs and outputs pass through one pinned host staging block with
// asynchronous copies, so a run is enqueued whole and waited for once (or
// once per host step). Each run of kernel steps between host steps is a
// CUDA graph built at load time from the steps' data dependencies
// (StepDependencies.h): replayed with one launch, its independent branches
// run concurrently; KILN_CUDA_GRAPHS=0 launches the steps one by one. The
// device's primary context is pushed around every driver call sequence, so
// the executor works from any thread; the stream is a blocking one, so the
// synchronous copies of host steps order with its work. Library steps
// (cuBLASLt, cuDNN: LibrarySteps.h) are planned and tried once at load, then
// recorded by stream capture into child graphs of their segment's graph;
// where a library refuses capture they run on the stream between the
// graphs (graphSummary() says which). With dynamic dims, kernels take their
// run-time extents after the buffers, inputs and outputs are copied at the
// run's size, and dim values seen a second time get a graph set (the most
// recent kGraphShapes kept): a recurring shape replays in one launch, a
// shape seen once (a decoder's growing cache) launches its steps directly.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/CudaExecutor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "CudaDriver.h"
#include "HostProgram.h"
#include "LibrarySteps.h"
#include "kiln/runtime/StepDependencies.h"

namespace kiln::runtime {

namespace {

/// Two events per kernel or library step (recorded around it) while profiling.
struct StepTimer {
  const CudaDriver& cu;
  std::vector<CUevent> before, after;  ///< per step; null for host steps
  /// Per library step, its call captured in a graph of its own (null where the library refused capture):
  /// replayed between the events, the call's host-side cost (tens of microseconds for a cuDNN call, which
  /// a model's graph replay does not pay) is not timed as device time.
  std::vector<CUgraphExec> library;
  std::vector<char> ran;  ///< per step: its events were recorded in the current run (a branch can skip it)
  StepTimer(const CudaDriver& driver, size_t steps)
      : cu(driver), before(steps, nullptr), after(steps, nullptr), library(steps, nullptr), ran(steps, 0) {}
  /// Records step `s`'s first (`start`) or second event on `stream`; nothing without a timer.
  static Status record(StepTimer* timer, size_t s, bool start, CUstream stream) {
    if (!timer) return Status::ok();
    timer->ran[s] = 1;
    return timer->cu.check(timer->cu.eventRecord(start ? timer->before[s] : timer->after[s], stream), "cuEventRecord");
  }
  ~StepTimer() {
    for (CUevent e : before)
      if (e) cu.eventDestroy(e);
    for (CUevent e : after)
      if (e) cu.eventDestroy(e);
    for (CUgraphExec g : library)
      if (g) cu.graphExecDestroy(g);
  }
};

}  // namespace

/// Graph sets an executable with dynamic dims keeps, one per recurring dim
/// values (a server's batch sizes); each holds an instantiated graph per segment.
constexpr size_t kGraphShapes = 16;

struct CudaExecutor::Impl {
  const CudaDriver* cu = nullptr;
  std::shared_ptr<const Executable> exe;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string deviceName;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;
  std::vector<CUdeviceptr> pointers;  ///< per buffer id (0: none, dynamic or empty)
  std::vector<CUdeviceptr> owned;     ///< allocations to free
  std::vector<std::unique_ptr<HostProgram>> hostPrograms;
  std::unique_ptr<LibrarySteps> librarySteps;  ///< planned when there are library steps
  CUdeviceptr libraryWorkspace = 0;
  std::vector<KernelSegment> segments;  ///< with library steps unless their capture failed
  std::vector<CUgraphExec> graphs;      ///< one per segment; empty with KILN_CUDA_GRAPHS=0 or dynamic dims
  bool useGraphs = true;                ///< false with KILN_CUDA_GRAPHS=0
  /// Dynamic dims: the graph sets built for the dim values of recent runs, the most recent last,
  /// and the values of recent runs seen once (no graphs yet).
  mutable std::vector<std::pair<SymbolValues, std::vector<CUgraphExec>>> shapeGraphs;
  mutable std::vector<SymbolValues> seenOnce;
  std::string captureRefused;           ///< why library steps run between the graphs (empty: captured)
  uint8_t* staging = nullptr;       ///< pinned host memory for inputs and outputs
  std::vector<uint64_t> inputStaging, outputStaging;  ///< offsets in staging
  uint64_t deviceBytesNeeded = 0, allocatedBytes = 0;
  std::mutex runMutex;

  /// The buffer an output's data comes from (itself, or what it aliases).
  uint32_t outputSource(uint32_t id) const {
    const BufferSpec& b = exe->buffers[id];
    return b.aliasOf >= 0 ? uint32_t(b.aliasOf) : id;
  }

  /// Whether an output's data is copied back from the device.
  bool onDevice(uint32_t source) const {
    const BufferSpec& b = exe->buffers[source];
    return !b.dynamic && b.bytes() && (b.kind == BufferKind::Intermediate || b.kind == BufferKind::Output);
  }

  /// Makes the device's context current for a scope.
  struct Current : CudaContextScope {
    explicit Current(const Impl& i) : CudaContextScope(*i.cu, i.context) {}
  };

  Expected<CUdeviceptr> allocate(uint64_t bytes, const std::string& what) {
    if (!bytes) return CUdeviceptr(0);
    CUdeviceptr p = 0;
    CUresult r = cu->memAlloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      size_t freeBytes = 0, totalBytes = 0;
      cu->memGetInfo(&freeBytes, &totalBytes);
      freeBytes += allocatedBytes;
      return makeError(ErrorCode::DeviceOutOfMemory, "out of device memory allocating ", what, " (", mib(bytes),
                       "): the model needs ", mib(deviceBytesNeeded), " on ", deviceName, " (arena ", mib(exe->arenaBytes),
                       " + weights, inputs and outputs); ", mib(freeBytes), " of ", mib(totalBytes),
                       " were free before kiln's allocations");
    }
    KILN_TRY(cu->check(r, "cuMemAlloc of " + std::to_string(bytes) + " bytes for " + what));
    owned.push_back(p);
    allocatedBytes += bytes;
    return p;
  }

  static std::string mib(uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1 << 20));
    return text;
  }

  /// A kernel step's parameters: the device pointers of its buffers, then
  /// its run-time extents at `values` (`params` points at them; the
  /// kernels take extents as `long long`).
  struct KernelParams {
    std::vector<CUdeviceptr> args;
    std::vector<long long> extents;
    std::vector<void*> params;
  };
  Status kernelParams(const KernelStep& step, const SymbolValues& values, KernelParams& k) const {
    k.args.clear(), k.extents.clear(), k.params.clear();
    for (uint32_t a : step.args) k.args.push_back(pointers[a]);
    for (const DimExpr& e : step.extents) {  // validate() bounds each by the kernel's maximum
      KILN_ASSIGN(int64_t v, e.evaluate(values));
      k.extents.push_back(static_cast<long long>(v));
    }
    for (CUdeviceptr& p : k.args) k.params.push_back(&p);
    for (long long& e : k.extents) k.params.push_back(&e);
    return Status::ok();
  }

  /// Library step `s` recorded by stream capture into a graph of its own
  /// (the library enqueues kernels of its choosing; capture is how a graph
  /// gets them); the stream is usable after a refusal.
  Expected<CUgraph> captureLibraryStep(size_t s) const {
    return captureGraph(*cu, stream, "library step " + exe->libraryCalls[exe->steps[s].kernel].name,
                        [&] { return librarySteps->enqueue(s, libraryWorkspace, stream); });
  }

  /// Adds step `s` to `graph` after `before`: a kernel node (its extents at
  /// `values`), or a library step's captured graph as a child node.
  Status addStepNode(uint32_t s, const SymbolValues& values, CUgraph graph, const std::vector<CUgraphNode>& before,
                     CUgraphNode& added) const {
    const KernelStep& step = exe->steps[s];
    if (step.kind == StepKind::Library) {
      KILN_ASSIGN(CUgraph child, captureLibraryStep(s));
      Status status = cu->check(cu->graphAddChildGraphNode(&added, graph, before.data(), before.size(), child),
                                "cuGraphAddChildGraphNode " + exe->libraryCalls[step.kernel].name);
      cu->graphDestroy(child);  // the node holds a clone
      return status;
    }
    KernelParams k;
    KILN_TRY(kernelParams(step, values, k));
    const CudaKernelCode& c = exe->cudaKernels[step.kernel];
    CUDA_KERNEL_NODE_PARAMS node{};
    node.func = functions[step.kernel];
    node.gridDimX = c.grid[0], node.gridDimY = c.grid[1], node.gridDimZ = c.grid[2];
    node.blockDimX = c.block[0], node.blockDimY = c.block[1], node.blockDimZ = c.block[2];
    node.kernelParams = k.params.data();
    return cu->check(cu->graphAddKernelNode(&added, graph, before.data(), before.size(), &node),
                     "cuGraphAddKernelNode " + exe->kernelNames[step.kernel]);
  }

  /// Builds and instantiates one CUDA graph per segment, its kernels' extents at `values`.
  Expected<std::vector<CUgraphExec>> buildGraphs(const SymbolValues& values) const {
    std::vector<CUgraphExec> built;
    auto destroyBuilt = [&] {
      for (CUgraphExec g : built) cu->graphExecDestroy(g);
    };
    for (const KernelSegment& segment : segments) {
      CUgraph graph = nullptr;
      KILN_TRY(cu->check(cu->graphCreate(&graph, 0), "cuGraphCreate"));
      std::vector<CUgraphNode> nodes;
      Status status = Status::ok();
      std::vector<std::vector<uint32_t>> deps = kernelStepDependencies(*exe, segment);
      for (uint32_t s = segment.begin; s < segment.end && status.isOk(); ++s) {
        std::vector<CUgraphNode> before;
        for (uint32_t d : deps[s - segment.begin]) before.push_back(nodes[d - segment.begin]);
        CUgraphNode added = nullptr;
        status = addStepNode(s, values, graph, before, added);
        nodes.push_back(added);
      }
      CUgraphExec instance = nullptr;
      if (status.isOk()) status = cu->check(cu->graphInstantiate(&instance, graph, 0), "cuGraphInstantiate");
      cu->graphDestroy(graph);
      if (!status.isOk()) {
        destroyBuilt();
        return status.error();
      }
      built.push_back(instance);
    }
    return built;
  }

  /// The graphs of a run at `values`: the static ones, or (dynamic dims) the
  /// set built for these values, built now when a recent run had them too;
  /// null the first time (the steps are launched directly).
  Expected<const std::vector<CUgraphExec>*> graphsFor(const SymbolValues& values) const {
    if (exe->symbols.empty()) return &graphs;
    for (size_t i = 0; i < shapeGraphs.size(); ++i) {
      if (shapeGraphs[i].first != values) continue;
      std::rotate(shapeGraphs.begin() + long(i), shapeGraphs.begin() + long(i) + 1, shapeGraphs.end());  // now the most recent
      return &shapeGraphs.back().second;
    }
    auto seen = std::find(seenOnce.begin(), seenOnce.end(), values);
    if (seen == seenOnce.end()) {
      if (seenOnce.size() == kGraphShapes) seenOnce.erase(seenOnce.begin());
      seenOnce.push_back(values);
      return static_cast<const std::vector<CUgraphExec>*>(nullptr);
    }
    seenOnce.erase(seen);
    KILN_ASSIGN(std::vector<CUgraphExec> built, buildGraphs(values));
    if (shapeGraphs.size() == kGraphShapes) {  // the least recently used set goes
      for (CUgraphExec g : shapeGraphs.front().second) cu->graphExecDestroy(g);
      shapeGraphs.erase(shapeGraphs.begin());
    }
    shapeGraphs.emplace_back(values, std::move(built));
    return &shapeGraphs.back().second;
  }

  /// The graphs, with the library steps captured in them where the libraries
  /// allow it (with dynamic dims, the segments only: graphs come per run's dims).
  Status buildGraphsCapturingLibraries() {
    segments = kernelSegments(*exe, true);
    if (!exe->symbols.empty()) return Status::ok();
    Expected<std::vector<CUgraphExec>> built = buildGraphs({});
    if (!built.isOk() && !exe->libraryCalls.empty()) {
      captureRefused = built.error().message();
      segments = kernelSegments(*exe, false);
      built = buildGraphs({});
    }
    KILN_TRY(built.status());
    graphs = std::move(*built);
    return Status::ok();
  }

  /// Enqueues a segment's steps one by one (no CUDA graphs); with `timer`,
  /// each between two of its events.
  Status launchSegment(const KernelSegment& segment, const SymbolValues& values, StepTimer* timer) const {
    KernelParams k;
    for (uint32_t s = segment.begin; s < segment.end; ++s) {
      const KernelStep& step = exe->steps[s];
      if (step.kind == StepKind::Library) {
        KILN_TRY(enqueueLibraryStep(s, timer));
        continue;
      }
      const CudaKernelCode& c = exe->cudaKernels[step.kernel];
      KILN_TRY(kernelParams(step, values, k));
      KILN_TRY(StepTimer::record(timer, s, true, stream));
      KILN_TRY(cu->check(cu->launchKernel(functions[step.kernel], c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                                          c.block[2], 0, stream, k.params.data(), nullptr),
                         "launching " + exe->kernelNames[step.kernel]));
      KILN_TRY(StepTimer::record(timer, s, false, stream));
    }
    return Status::ok();
  }

  /// Enqueues library step `s` on the stream (between two of `timer`'s events when profiling,
  /// as a replay of its captured graph where the timer holds one).
  Status enqueueLibraryStep(size_t s, StepTimer* timer) const {
    KILN_TRY(StepTimer::record(timer, s, true, stream));
    if (timer && timer->library[s])
      KILN_TRY(cu->check(cu->graphLaunch(timer->library[s], stream), "launching the captured library step " +
                                                                         exe->libraryCalls[exe->steps[s].kernel].name));
    else
      KILN_TRY(librarySteps->enqueue(s, libraryWorkspace, stream));
    return StepTimer::record(timer, s, false, stream);
  }

  /// Plans every library step (once the buffers have device memory), with their shared workspace,
  /// and tries each once on the arena's scratch contents.
  Status planLibrarySteps() {
    if (exe->libraryCalls.empty()) return Status::ok();
    KILN_ASSIGN(libraryWorkspace, allocate(kLibraryWorkspaceBytes, "the library steps' workspace"));
    KILN_ASSIGN(librarySteps, LibrarySteps::plan(*exe, pointers));
    KILN_TRY(librarySteps->tryEach(libraryWorkspace, stream));
    return cu->check(cu->streamSynchronize(stream), "the library steps' trial run at load");
  }

  Expected<std::vector<Tensor>> runOnce(const std::vector<Tensor>& inputs, const SymbolValues& values, StepTimer* timer) const;

  ~Impl() {
    if (!cu || !context) return;
    {
      Current current(*this);
      librarySteps.reset();
      for (CUgraphExec g : graphs) cu->graphExecDestroy(g);
      for (auto& [values, set] : shapeGraphs)
        for (CUgraphExec g : set) cu->graphExecDestroy(g);
      for (CUdeviceptr p : owned) cu->memFree(p);
      if (staging) cu->memFreeHost(staging);
      for (CUmodule m : modules) cu->moduleUnload(m);
      if (stream) cu->streamDestroy(stream);
    }
    cu->primaryCtxRelease(device);
  }
};


CudaExecutor::CudaExecutor() : impl_(std::make_unique<Impl>()) {}
CudaExecutor::~CudaExecutor() = default;
const std::string& CudaExecutor::device() const { return impl_->deviceName; }
uint64_t CudaExecutor::deviceBytes() const { return impl_->allocatedBytes; }

Expected<uint32_t> CudaExecutor::deviceArchitecture() {
  KILN_ASSIGN(const CudaDriver* cu, CudaDriver::get());
  KILN_ASSIGN(CudaDevice selected, selectCudaDevice(*cu));
  return selected.sm;
}

Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::create(std::shared_ptr<const Executable> exe) {
  KILN_TRY(exe->validate());
  if (exe->target != "cuda")
    return makeError(ErrorCode::ArtifactVersion, "compiled for target '", exe->target, "', not cuda");
  if (exe->cudaKernels.size() != exe->kernelNames.size())
    return makeError(ErrorCode::ArtifactCorrupt, "executable has ", exe->kernelNames.size(), " kernels but CUDA code for ",
                     exe->cudaKernels.size());
  // Library steps are planned for fixed shapes once, at load.
  if (!exe->symbols.empty() && !exe->libraryCalls.empty())
    return makeError(ErrorCode::ExecUnsupported, "the executable has dynamic dims (", exe->symbols.front().name,
                     ", ...) and library steps, which run fixed shapes only");
  KILN_ASSIGN(const CudaDriver* cu, CudaDriver::get());
  std::unique_ptr<CudaExecutor> e(new CudaExecutor);
  Impl& m = *e->impl_;
  m.cu = cu;
  m.exe = exe;
  KILN_ASSIGN(CudaDevice selected, selectCudaDevice(*cu));
  m.device = selected.device;
  const uint32_t sm = selected.sm;
  m.deviceName = selected.name;
  KILN_TRY(cu->check(cu->primaryCtxRetain(&m.context, m.device), "cuDevicePrimaryCtxRetain"));
  Impl::Current current(m);
  KILN_TRY(cu->check(cu->streamCreate(&m.stream, CU_STREAM_DEFAULT), "cuStreamCreate"));
  // Code: the cubin built for this architecture, else PTX the driver can JIT.
  for (size_t k = 0; k < exe->cudaKernels.size(); ++k) {
    const CudaKernelCode& c = exe->cudaKernels[k];
    const void* image = nullptr;
    for (size_t i = 0; i < c.cubinArchs.size(); ++i)
      if (c.cubinArchs[i] == sm) image = c.cubins[i].data();
    if (!image && !c.ptx.empty() && c.ptxArch <= sm) image = c.ptx.c_str();
    if (!image)
      return makeError(ErrorCode::ArtifactVersion, "the artifact has code for ", exe->cpu, " (PTX for compute_", c.ptxArch,
                       "); this GPU is ", m.deviceName, " (recompile with --target cuda:sm_", sm, ")");
    CUmodule module = nullptr;
    KILN_TRY(cu->check(cu->moduleLoadData(&module, image), "cuModuleLoadData of kernel " + exe->kernelNames[k]));
    m.modules.push_back(module);
    CUfunction fn = nullptr;
    KILN_TRY(cu->check(cu->moduleGetFunction(&fn, module, exe->kernelNames[k].c_str()),
                       "cuModuleGetFunction " + exe->kernelNames[k]));
    m.functions.push_back(fn);
  }
  // Memory: the arena, then a buffer per input, output and weight (weights uploaded now).
  m.deviceBytesNeeded = exe->arenaBytes + (exe->libraryCalls.empty() ? 0 : kLibraryWorkspaceBytes);
  for (const BufferSpec& b : exe->buffers)
    if (!b.dynamic && b.kind != BufferKind::Intermediate) m.deviceBytesNeeded += b.bytes();
  KILN_ASSIGN(CUdeviceptr arena, m.allocate(exe->arenaBytes, "the arena"));
  m.pointers.assign(exe->buffers.size(), 0);
  for (size_t id = 0; id < exe->buffers.size(); ++id) {
    const BufferSpec& b = exe->buffers[id];
    if (b.dynamic || !b.bytes()) continue;
    if (b.kind == BufferKind::Intermediate) {
      m.pointers[id] = arena + b.offset;
      continue;
    }
    KILN_ASSIGN(m.pointers[id], m.allocate(b.bytes(), b.name));
    if (b.kind == BufferKind::Weight)
      KILN_TRY(cu->check(cu->memcpyHtoD(m.pointers[id], exe->weights[b.index].rawData(), b.bytes()),
                         "uploading weight " + b.name));
  }
  // Pinned staging: each input, then each output computed on the device, 256-byte aligned.
  uint64_t stagingBytes = 0;
  auto reserve = [&](uint64_t bytes) {
    uint64_t at = stagingBytes;
    stagingBytes += (bytes + 255) / 256 * 256;
    return at;
  };
  for (uint32_t id : exe->inputs) m.inputStaging.push_back(reserve(exe->buffers[id].bytes()));
  for (uint32_t id : exe->outputs) m.outputStaging.push_back(reserve(exe->buffers[m.outputSource(id)].bytes()));
  if (stagingBytes) {
    void* pinned = nullptr;
    KILN_TRY(cu->check(cu->memAllocHost(&pinned, stagingBytes), "cuMemAllocHost of " + Impl::mib(stagingBytes) + " staging"));
    m.staging = static_cast<uint8_t*>(pinned);
  }
  for (const HostGraph& h : exe->hostGraphs) {
    KILN_ASSIGN(std::unique_ptr<HostProgram> program, HostProgram::create(h));
    m.hostPrograms.push_back(std::move(program));
  }
  KILN_TRY(m.planLibrarySteps());
  const char* graphs = std::getenv("KILN_CUDA_GRAPHS");
  m.useGraphs = !(graphs && std::string(graphs) == "0");
  if (!m.useGraphs) m.segments = kernelSegments(*exe, true);
  else KILN_TRY(m.buildGraphsCapturingLibraries());
  return e;
}

std::string CudaExecutor::graphSummary() const {
  const Impl& m = *impl_;
  size_t librarySteps = 0;
  for (const KernelStep& step : m.exe->steps) librarySteps += step.kind == StepKind::Library;
  if (!m.useGraphs)
    return m.segments.empty() ? "no kernel steps" : "CUDA graphs off (KILN_CUDA_GRAPHS=0): every step launched on the stream";
  if (!m.exe->symbols.empty())
    return std::to_string(m.segments.size()) + " CUDA graph(s) per run, built for dynamic dims seen twice (the last " +
           std::to_string(kGraphShapes) + " shapes kept; a shape seen once launches its steps one by one)";
  if (m.graphs.empty()) return "no kernel steps";
  std::string text = std::to_string(m.graphs.size()) + (m.graphs.size() == 1 ? " CUDA graph" : " CUDA graphs") + " per run";
  if (!librarySteps) return text;
  if (m.captureRefused.empty()) return text + " (" + std::to_string(librarySteps) + " library calls captured in them)";
  return text + "; " + std::to_string(librarySteps) + " library calls run between them (capture refused: " + m.captureRefused + ")";
}

Expected<std::vector<Tensor>> CudaExecutor::run(const std::vector<Tensor>& inputs) const {
  KILN_ASSIGN(const SymbolValues values, impl_->exe->checkInputs(inputs));
  std::lock_guard<std::mutex> lock(impl_->runMutex);
  Impl::Current current(*impl_);
  return impl_->runOnce(inputs, values, nullptr);
}

Expected<std::vector<KernelStepTime>> CudaExecutor::profile(const std::vector<Tensor>& inputs, int runs) const {
  const Impl& m = *impl_;
  const Executable& exe = *m.exe;
  KILN_ASSIGN(const SymbolValues values, exe.checkInputs(inputs));
  if (runs < 1) return makeError(ErrorCode::InvalidArgument, "profiling needs at least one run, not ", runs);
  std::lock_guard<std::mutex> lock(impl_->runMutex);
  Impl::Current current(m);
  std::vector<KernelStepTime> times;
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const KernelStep& step = exe.steps[s];
    if (step.kind == StepKind::Library) times.push_back({uint32_t(s), exe.libraryCalls[step.kernel].name, {0, 0, 0}, {0, 0, 0}, 0.0});
    if (step.kind != StepKind::Kernel) continue;
    const CudaKernelCode& c = exe.cudaKernels[step.kernel];
    times.push_back({uint32_t(s), exe.kernelNames[step.kernel], c.grid, c.block, 0.0});
  }
  StepTimer timer(*m.cu, exe.steps.size());  // events for the timed steps only
  for (const KernelStepTime& t : times) {
    KILN_TRY(m.cu->check(m.cu->eventCreate(&timer.before[t.step], CU_EVENT_DEFAULT), "cuEventCreate"));
    KILN_TRY(m.cu->check(m.cu->eventCreate(&timer.after[t.step], CU_EVENT_DEFAULT), "cuEventCreate"));
    if (exe.steps[t.step].kind != StepKind::Library) continue;
    Expected<CUgraph> captured = m.captureLibraryStep(t.step);
    if (!captured.isOk()) continue;  // refused: the call is timed launched directly, host-side cost included
    KILN_ASSIGN(timer.library[t.step], instantiateGraph(*m.cu, *captured, t.kernel));
  }
  for (int r = 0; r < runs; ++r) {
    std::fill(timer.ran.begin(), timer.ran.end(), 0);
    KILN_TRY(m.runOnce(inputs, values, &timer).status());  // waits for the device: every event has completed
    for (KernelStepTime& t : times) {
      float ms = 0;
      if (!timer.ran[t.step]) continue;  // in the branch these inputs do not take: 0 ms
      KILN_TRY(m.cu->check(m.cu->eventElapsedTime(&ms, timer.before[t.step], timer.after[t.step]), "cuEventElapsedTime"));
      t.meanMs += double(ms) / runs;
    }
  }
  return times;
}

Expected<std::vector<Tensor>> CudaExecutor::Impl::runOnce(const std::vector<Tensor>& inputs, const SymbolValues& values,
                                                          StepTimer* timer) const {
  const Impl& m = *this;
  const Executable& exe = *m.exe;
  const CudaDriver& cu = *m.cu;
  for (size_t i = 0; i < inputs.size(); ++i) {  // at this run's size (checkInputs: within the capacity)
    const BufferSpec& b = exe.buffers[exe.inputs[i]];
    const uint64_t bytes = b.bytes() ? inputs[i].byteSize() : 0;
    if (!bytes) continue;
    uint8_t* staged = m.staging + m.inputStaging[i];
    std::memcpy(staged, inputs[i].rawData(), bytes);
    KILN_TRY(cu.check(cu.memcpyHtoDAsync(m.pointers[exe.inputs[i]], staged, bytes, m.stream), "copying input " + b.name));
  }
  const std::vector<CUgraphExec>* graphs = nullptr;
  if (m.useGraphs && !timer) {
    KILN_ASSIGN(graphs, m.graphsFor(values));
  }
  std::vector<Tensor> dynamicValues(exe.buffers.size());
  // A host step's operand, copied from the device (or a dynamic value).
  auto toHost = [&](uint32_t id) -> Expected<Tensor> {
    const BufferSpec& b = exe.buffers[id];
    if (b.dynamic) {
      if (!dynamicValues[id].buffer()) return makeError(ErrorCode::Internal, "dynamic value ", b.name, " read before it is computed");
      return dynamicValues[id];
    }
    if (b.kind == BufferKind::Input) return inputs[b.index];
    if (b.kind == BufferKind::Weight) return exe.weights[b.index];
    Tensor t(b.dtype, b.dims, Buffer::allocate(b.bytes()));
    if (b.bytes()) KILN_TRY(cu.check(cu.memcpyDtoH(t.mutableRawData(), m.pointers[id], b.bytes()), "copying " + b.name + " to the host"));
    return t;
  };
  size_t segment = 0;
  for (size_t s = 0; s < exe.steps.size();) {
    const KernelStep& step = exe.steps[s];
    while (segment < m.segments.size() && m.segments[segment].begin < s) ++segment;  // skipped by a jump
    if (segment < m.segments.size() && m.segments[segment].begin == s) {
      const KernelSegment& seg = m.segments[segment];
      if (!graphs) KILN_TRY(m.launchSegment(seg, values, timer));
      else KILN_TRY(cu.check(cu.graphLaunch((*graphs)[segment], m.stream), "launching the CUDA graph of steps " +
                                                                             std::to_string(seg.begin) + ".." + std::to_string(seg.end - 1)));
      ++segment;
      s = seg.end;
      continue;
    }
    if (step.kind == StepKind::Library) {
      KILN_TRY(m.enqueueLibraryStep(s++, timer));
      continue;
    }
    if (step.kind == StepKind::Jump) {
      s = step.kernel;
      continue;
    }
    if (step.kind == StepKind::Copy) {
      const uint64_t bytes = exe.buffers[step.args[1]].bytes();
      if (bytes)
        KILN_TRY(cu.check(cu.memcpyDtoDAsync(m.pointers[step.args[1]], m.pointers[step.args[0]], bytes, m.stream),
                          "copying " + exe.buffers[step.args[0]].name + " to " + exe.buffers[step.args[1]].name));
      ++s;
      continue;
    }
    if (step.kind == StepKind::Branch) {  // the condition, read once the kernels computing it are done
      KILN_TRY(cu.check(cu.streamSynchronize(m.stream), "kernels before branch step"));
      KILN_ASSIGN(Tensor condition, toHost(step.args[0]));
      s = conditionHolds(condition.rawData(), condition.byteSize()) ? s + 1 : step.kernel;
      continue;
    }
    ++s;
    KILN_TRY(cu.check(cu.streamSynchronize(m.stream), "kernels before host step"));
    const HostGraph& h = exe.hostGraphs[step.kernel];
    std::vector<Tensor> operands;
    for (size_t i = 0; i < h.numInputs; ++i) {
      KILN_ASSIGN(Tensor t, toHost(step.args[i]));
      operands.push_back(std::move(t));
    }
    KILN_ASSIGN(std::vector<Tensor> results, m.hostPrograms[step.kernel]->run(std::move(operands)));
    for (size_t i = 0; i < h.numOutputs; ++i) {
      uint32_t id = step.args[h.numInputs + i];
      const BufferSpec& b = exe.buffers[id];
      if (!b.accepts(results[i]))
        return makeError(ErrorCode::ExecFailure, "host step ", h.name, " computed ", b.name, " as ", results[i].typeString(),
                         "; the compiled code expects ", dtypeName(b.dtype), " ", dimsToString(b.dims));
      if (b.dynamic) dynamicValues[id] = results[i];
      else if (b.bytes())
        KILN_TRY(cu.check(cu.memcpyHtoD(m.pointers[id], results[i].rawData(), b.bytes()), "copying " + b.name + " to the device"));
    }
  }
  // Outputs the device computed come back through the staging block, all before one wait, at this run's dims.
  std::vector<Dims> outputDims(exe.outputs.size());
  for (size_t o = 0; o < exe.outputs.size(); ++o) {
    uint32_t source = m.outputSource(exe.outputs[o]);
    KILN_ASSIGN(outputDims[o], exe.buffers[source].runDims(values));
    if (!m.onDevice(source)) continue;
    const BufferSpec& from = exe.buffers[source];
    const uint64_t bytes = uint64_t(numElements(outputDims[o])) * dtypeSize(from.dtype);
    KILN_TRY(cu.check(cu.memcpyDtoHAsync(m.staging + m.outputStaging[o], m.pointers[source], bytes, m.stream),
                      "copying output " + from.name));
  }
  KILN_TRY(cu.check(cu.streamSynchronize(m.stream), "running the kernels"));
  std::vector<Tensor> outputs(exe.outputs.size());
  for (size_t o = 0; o < exe.outputs.size(); ++o) {
    const BufferSpec& b = exe.buffers[exe.outputs[o]];
    uint32_t source = m.outputSource(exe.outputs[o]);
    const BufferSpec& from = exe.buffers[source];
    if (from.dynamic) {
      if (!dynamicValues[source].buffer()) return makeError(ErrorCode::Internal, "output ", b.name, " was never computed");
      outputs[o] = dynamicValues[source];
    } else if (from.kind == BufferKind::Input) {
      outputs[o] = inputs[from.index].clone();
    } else if (from.kind == BufferKind::Weight) {
      outputs[o] = exe.weights[from.index].clone();
    } else {
      const uint64_t bytes = uint64_t(numElements(outputDims[o])) * dtypeSize(from.dtype);
      Tensor t(from.dtype, outputDims[o], Buffer::allocate(bytes));
      if (bytes) std::memcpy(t.mutableRawData(), m.staging + m.outputStaging[o], bytes);
      outputs[o] = std::move(t);
    }
  }
  return outputs;
}

}  // namespace kiln::runtime
