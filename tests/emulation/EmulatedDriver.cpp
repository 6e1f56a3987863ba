//===- tests/emulation/EmulatedDriver.cpp - libcuda on the CPU ------------===//
//
// A stand-in for the NVIDIA driver library, so that kiln's CUDA runtime
// (CudaExecutor: module loading, the device memory plan, launches, host
// steps, copies) runs end to end on a machine without a GPU. The runtime
// loads it in place of libcuda.so.1 when KILN_CUDA_DRIVER names it.
//
//===----------------------------------------------------------------------===//
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// What is emulated, and how it checks its callers.
//
// One emulated device, "kiln CPU emulation", of compute capability
// KILN_EMULATED_SM (default 90). Device memory is host memory; every copy
// is checked against the allocation it touches. A module's image (cubin or
// PTX) cannot run on the CPU, so the kernels come from the emulation
// library KILN_EMULATED_KERNELS (built by CudaEmulator from the same CUDA C
// the artifact was compiled from): cuModuleGetFunction finds the launcher
// kiln_emulate_<name> (and its parameter count), and cuLaunchKernel runs it over the grid and block
// the runtime passes. Launches and copies run synchronously.
//
// CUDA graphs are kept as their nodes (kernels, child graphs, and the
// emulated libraries' calls) and dependency lists; a launch runs them in a
// valid order that differs from the order they were added in (of the nodes
// whose dependencies are done, the one added last runs first), so a
// dependency the runtime forgot shows up as a wrong result. Stream capture
// (cuStreamBeginCapture / cuStreamEndCapture) records a stream's kernel
// launches and library calls as a chain of nodes; a copy, a wait or an
// event on a capturing stream is refused and invalidates the capture, as
// the driver refuses what a graph cannot hold. The emulated libraries
// enqueue their calls through kiln_emulated_enqueue: run at once, or
// recorded while the stream is captured (KILN_EMULATED_LIBRARY_CAPTURE=0
// refuses them there, as a library whose call cannot be captured does).
// KILN_EMULATED_MEMORY_LIMIT (bytes) makes device allocations beyond it
// fail with CUDA_ERROR_OUT_OF_MEMORY. Pinned host memory is ordinary memory.
//
// kiln_emulated_live_objects() reports what is still allocated (memory,
// modules, streams, graphs, pinned blocks, retained contexts) so tests can check the runtime
// releases everything it takes; kiln_emulated_in_device_memory() lets the
// emulated cuBLASLt check the operands it is given.

namespace {

using LaunchFn = int (*)(const unsigned* grid, const unsigned* block, void* const* args, char* error,
                         unsigned long errorSize);

struct Function {
  LaunchFn launch = nullptr;
  int params = 0;
};

struct Module {
  void* library = nullptr;
  std::map<std::string, Function> functions;
};

/// A library call recorded in a graph (kiln_emulated_enqueue): run at every
/// launch, released with the last graph holding it.
struct HostWork {
  void (*run)(void*) = nullptr;
  void* data = nullptr;
  void (*release)(void*) = nullptr;
  HostWork(void (*r)(void*), void* d, void (*f)(void*)) : run(r), data(d), release(f) {}
  HostWork(const HostWork&) = delete;
  HostWork& operator=(const HostWork&) = delete;
  ~HostWork() {
    if (release) release(data);
  }
};

struct Graph;

/// A kernel launch (function set), a library call (host set) or a child graph (child set).
struct Node {
  const Function* function = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::vector<CUdeviceptr> args;
  std::shared_ptr<const HostWork> host;
  std::shared_ptr<const Graph> child;
  std::vector<size_t> dependencies;  ///< indices of earlier nodes
};

struct Graph {
  std::vector<Node> nodes;
  /// Appends `n` after the graph's last node (a captured stream's order).
  void chain(Node n) {
    if (!nodes.empty()) n.dependencies = {nodes.size() - 1};
    nodes.push_back(std::move(n));
  }
};

/// A stream: the graph it is being captured into, if any.
struct Stream {
  Graph* capture = nullptr;
  bool invalidated = false;  ///< something the capture cannot hold was enqueued
};

struct State {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;  ///< base -> bytes
  size_t allocatedBytes = 0;
  int modules = 0, streams = 0, contexts = 0, graphs = 0, pinned = 0, events = 0;
  uint64_t graphLaunches = 0;
  std::string lastError;  ///< the last failed launch's message (for cuGetErrorString)
};

State& state() {
  static State s;
  return s;
}

/// Adds `delta` to one of the live-object counts (or the launch count) under the lock.
template <class T>
void count(T State::*field, int delta) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().*field += T(delta);
}

int emulatedSm() {
  const char* env = std::getenv("KILN_EMULATED_SM");
  return env ? std::atoi(env) : 90;
}

/// True when [ptr, ptr + bytes) lies inside one allocation.
bool inDeviceMemory(CUdeviceptr ptr, size_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.upper_bound(uintptr_t(ptr));
  if (it == s.allocations.begin()) return false;
  --it;
  return uintptr_t(ptr) >= it->first && uintptr_t(ptr) + bytes <= it->first + it->second;
}

CUresult copy(void* to, const void* from, size_t bytes) {
  if (bytes) std::memcpy(to, from, bytes);
  return CUDA_SUCCESS;
}

size_t memoryLimit() {
  const char* env = std::getenv("KILN_EMULATED_MEMORY_LIMIT");
  return env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(64) << 30;
}

CUresult run(const Function& f, const unsigned grid[3], const unsigned block[3], void** args) {
  if (uint64_t(block[0]) * block[1] * block[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
  char error[512] = {0};
  if (f.launch(grid, block, args, error, sizeof error) != 0) {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().lastError = error;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

/// Runs a graph's nodes, of those whose dependencies are done the one added last first.
CUresult runGraph(const Graph& g) {
  std::vector<bool> done(g.nodes.size(), false);
  for (size_t finished = 0; finished < g.nodes.size(); ++finished) {
    size_t next = g.nodes.size();
    for (size_t i = g.nodes.size(); i-- > 0 && next == g.nodes.size();) {
      if (done[i]) continue;
      bool ready = true;
      for (size_t d : g.nodes[i].dependencies) ready = ready && done[d];
      if (ready) next = i;
    }
    const Node& n = g.nodes[next];
    if (n.host) {
      n.host->run(n.host->data);
    } else if (n.child) {
      if (CUresult r = runGraph(*n.child)) return r;
    } else {
      std::vector<void*> args;
      for (CUdeviceptr p : n.args) args.push_back(reinterpret_cast<void*>(uintptr_t(p)));
      if (CUresult r = run(*n.function, n.grid, n.block, args.data())) return r;
    }
    done[next] = true;
  }
  return CUDA_SUCCESS;
}

/// The stream's capture state (null for the legacy stream, which is never captured).
Stream* streamOf(CUstream stream) { return reinterpret_cast<Stream*>(stream); }

bool capturing(CUstream stream) { return streamOf(stream) && streamOf(stream)->capture; }

/// Refuses an operation a captured graph cannot hold: the capture becomes invalid.
CUresult refuseInCapture(CUstream stream) {
  streamOf(stream)->invalidated = true;
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/// Adds `n` to `g` after `dependencies` (1-based node handles); `*handle` is its handle.
CUresult addNode(CUgraphNode* handle, Graph& g, const CUgraphNode* dependencies, size_t numDependencies, Node n) {
  for (size_t d = 0; d < numDependencies; ++d) {
    size_t index = size_t(reinterpret_cast<uintptr_t>(dependencies[d])) - 1;
    if (index >= g.nodes.size()) return CUDA_ERROR_INVALID_VALUE;
    n.dependencies.push_back(index);
  }
  g.nodes.push_back(std::move(n));
  *handle = reinterpret_cast<CUgraphNode>(uintptr_t(g.nodes.size()));
  return CUDA_SUCCESS;
}

/// The kernel's device-pointer arguments, read from the launch's parameter array.
CUresult readParams(const Function& f, void** params, std::vector<CUdeviceptr>& out) {
  out.assign(size_t(f.params), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!params || !params[i]) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(&out[i], params[i], sizeof out[i]);
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

int kiln_emulated_live_objects() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return int(s.allocations.size()) + s.modules + s.streams + s.contexts + s.graphs + s.pinned + s.events;
}

/// How many CUDA graph launches this process made.
unsigned long long kiln_emulated_graph_launches() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().graphLaunches;
}

/// Whether [ptr, ptr + bytes) lies in one device allocation (for the emulated cuBLASLt's checks).
int kiln_emulated_in_device_memory(const void* ptr, unsigned long long bytes) {
  return inDeviceMemory(CUdeviceptr(uintptr_t(ptr)), size_t(bytes)) ? 1 : 0;
}

/// An emulated library's call on `stream`: `run(data)` now, or, while the
/// stream is captured, a graph node that runs it at each launch; `release`
/// frees `data` once nothing holds the call any more. CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
/// (and the capture invalidated) under KILN_EMULATED_LIBRARY_CAPTURE=0.
int kiln_emulated_enqueue(void* stream, void (*run)(void*), void* data, void (*release)(void*)) {
  auto work = std::make_shared<const HostWork>(run, data, release);
  CUstream s = static_cast<CUstream>(stream);
  if (!capturing(s)) {
    work->run(work->data);
    return CUDA_SUCCESS;
  }
  const char* allowed = std::getenv("KILN_EMULATED_LIBRARY_CAPTURE");
  if (allowed && std::string(allowed) == "0") return refuseInCapture(s);
  Node n;
  n.host = std::move(work);
  streamOf(s)->capture->chain(std::move(n));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = emulatedSm() / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = emulatedSm() % 10; return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, size_t(length), "kiln CPU emulation");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  static int primary;
  *context = reinterpret_cast<CUcontext>(&primary);
  count(&State::contexts, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().contexts == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --state().contexts;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext context) { return context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* context) {
  if (context) *context = nullptr;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  const char* path = std::getenv("KILN_EMULATED_KERNELS");
  if (!image || !path) return CUDA_ERROR_INVALID_IMAGE;
  auto* m = new Module;
  m->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!m->library) {
    delete m;
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  *module = reinterpret_cast<CUmodule>(m);
  count(&State::modules, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  auto* m = reinterpret_cast<Module*>(module);
  dlclose(m->library);
  delete m;
  count(&State::modules, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  auto* m = reinterpret_cast<Module*>(module);
  auto launch = reinterpret_cast<LaunchFn>(dlsym(m->library, (std::string("kiln_emulate_") + name).c_str()));
  auto params = static_cast<const int*>(dlsym(m->library, (std::string("kiln_emulate_params_") + name).c_str()));
  if (!launch || !params) return CUDA_ERROR_NOT_FOUND;
  Function& f = m->functions[name];
  f = {launch, *params};
  *function = reinterpret_cast<CUfunction>(&f);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (state().allocatedBytes + bytes > memoryLimit()) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = CUdeviceptr(uintptr_t(p));
  std::lock_guard<std::mutex> lock(state().mutex);
  state().allocations[uintptr_t(p)] = bytes;
  state().allocatedBytes += bytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    auto it = state().allocations.find(uintptr_t(ptr));
    if (it == state().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
    state().allocatedBytes -= it->second;
    state().allocations.erase(it);
  }
  std::free(reinterpret_cast<void*>(uintptr_t(ptr)));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *totalBytes = memoryLimit();
  *freeBytes = *totalBytes - state().allocatedBytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost(void** ptr, size_t bytes) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *ptr = std::malloc(bytes);
  if (!*ptr) return CUDA_ERROR_OUT_OF_MEMORY;
  count(&State::pinned, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void* ptr) {
  std::free(ptr);
  count(&State::pinned, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr to, const void* from, size_t bytes) {
  if (!inDeviceMemory(to, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(reinterpret_cast<void*>(uintptr_t(to)), from, bytes);
}

CUresult CUDAAPI cuMemcpyDtoH(void* to, CUdeviceptr from, size_t bytes) {
  if (!inDeviceMemory(from, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(to, reinterpret_cast<const void*>(uintptr_t(from)), bytes);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr to, const void* from, size_t bytes, CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  return cuMemcpyHtoD(to, from, bytes);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void* to, CUdeviceptr from, size_t bytes, CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  return cuMemcpyDtoH(to, from, bytes);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
  if (!inDeviceMemory(to, bytes) || !inDeviceMemory(from, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(reinterpret_cast<void*>(uintptr_t(to)), reinterpret_cast<const void*>(uintptr_t(from)), bytes);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  return cuMemcpyDtoD(to, from, bytes);
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = reinterpret_cast<CUstream>(new Stream);
  count(&State::streams, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  Stream* s = streamOf(stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture) count(&State::graphs, -1);
  delete s->capture;
  delete s;
  count(&State::streams, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  Stream* s = streamOf(stream);
  if (!s) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream
  if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = new Graph;
  s->invalidated = false;
  count(&State::graphs, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  Stream* s = streamOf(stream);
  if (!s || !s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  Graph* captured = s->capture;
  s->capture = nullptr;
  *graph = nullptr;
  if (s->invalidated) {
    delete captured;
    count(&State::graphs, -1);
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = reinterpret_cast<CUgraph>(captured);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned sharedBytes, CUstream stream, void** params, void** extra) {
  if (extra || sharedBytes) return CUDA_ERROR_NOT_SUPPORTED;
  const Function& f = *reinterpret_cast<const Function*>(function);
  // Parameters arrive as pointers to the values; every kiln kernel parameter is a device pointer.
  std::vector<CUdeviceptr> values;
  if (CUresult r = readParams(f, params, values)) return r;
  if (capturing(stream)) {
    Node n;
    n.function = &f;
    n.grid[0] = gx, n.grid[1] = gy, n.grid[2] = gz, n.block[0] = bx, n.block[1] = by, n.block[2] = bz;
    n.args = std::move(values);
    streamOf(stream)->capture->chain(std::move(n));
    return CUDA_SUCCESS;
  }
  std::vector<void*> args;
  for (CUdeviceptr p : values) args.push_back(reinterpret_cast<void*>(uintptr_t(p)));
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return run(f, grid, block, args.data());
}

// Events hold the host time they were recorded at: launches run synchronously,
// so the time between two events is the time of the work between them.
struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new Event);
  count(&State::events, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  delete reinterpret_cast<Event*>(event);
  count(&State::events, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  auto* e = reinterpret_cast<Event*>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  return reinterpret_cast<Event*>(event)->recorded ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  const auto* a = reinterpret_cast<Event*>(start);
  const auto* b = reinterpret_cast<Event*>(end);
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphCreate(CUgraph* graph, unsigned int flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  *graph = reinterpret_cast<CUgraph>(new Graph);
  count(&State::graphs, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  delete reinterpret_cast<Graph*>(graph);
  count(&State::graphs, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* p) {
  auto* g = reinterpret_cast<Graph*>(graph);
  if (!p || !p->func || p->extra || p->sharedMemBytes) return CUDA_ERROR_INVALID_VALUE;
  Node n;
  n.function = reinterpret_cast<const Function*>(p->func);
  n.grid[0] = p->gridDimX, n.grid[1] = p->gridDimY, n.grid[2] = p->gridDimZ;
  n.block[0] = p->blockDimX, n.block[1] = p->blockDimY, n.block[2] = p->blockDimZ;
  if (CUresult r = readParams(*n.function, p->kernelParams, n.args)) return r;
  return addNode(node, *g, dependencies, numDependencies, std::move(n));
}

CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                          size_t numDependencies, CUgraph childGraph) {
  if (!childGraph) return CUDA_ERROR_INVALID_VALUE;
  Node n;
  n.child = std::make_shared<const Graph>(*reinterpret_cast<const Graph*>(childGraph));  // cloned, as the driver does
  return addNode(node, *reinterpret_cast<Graph*>(graph), dependencies, numDependencies, std::move(n));
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* instance, CUgraph graph, unsigned long long flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  *instance = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph*>(graph)));
  count(&State::graphs, +1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec instance) {
  delete reinterpret_cast<Graph*>(instance);
  count(&State::graphs, -1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec instance, CUstream stream) {
  if (capturing(stream)) return refuseInCapture(stream);
  count(&State::graphLaunches, +1);
  return runGraph(*reinterpret_cast<const Graph*>(instance));
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    case CUDA_ERROR_ILLEGAL_STATE: *name = "CUDA_ERROR_ILLEGAL_STATE"; break;
    default: *name = "CUDA_ERROR (emulated)"; break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  static thread_local std::string message;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    message = error == CUDA_ERROR_LAUNCH_FAILED ? state().lastError : "emulated driver error";
  }
  *text = message.c_str();
  return CUDA_SUCCESS;
}

}  // extern "C"
