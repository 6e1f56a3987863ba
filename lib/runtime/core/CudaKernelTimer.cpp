//===- lib/runtime/core/CudaKernelTimer.cpp - One CUDA kernel, timed -------===//
//
// See kiln/runtime/CudaKernelTimer.h. The timer holds the device's primary
// context (pushed around each call, as CudaExecutor does), a stream, one
// device buffer per argument and, with flushL2, two scratch buffers of the
// L2 size (64 MiB where the driver does not report it). A library call is
// a one-step executable's LibrarySteps over those buffers, with the
// executor's workspace size. Timed launches are replays of a CUDA graph of
// back-to-back calls recorded by stream capture, as a model's steps run in
// CudaExecutor's graphs: a library call's host-side cost (tens of
// microseconds for a cuDNN convolution, more than the kernels it enqueues
// on a small map) is paid once at capture, not in every sample. A call the
// library refuses to have captured is timed launched directly, as before.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/CudaKernelTimer.h"

#include <algorithm>

#include "CudaDriver.h"
#include "LibrarySteps.h"
#include "kiln/support/Statistics.h"

namespace kiln::runtime {

struct CudaKernelTimer::Impl {
  const CudaDriver* cu = nullptr;
  CudaDevice device;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  CudaKernelLaunch launch;  ///< a library call: its name only
  Executable libraryExe;    ///< a library call as a one-step executable (its plan points into it)
  std::unique_ptr<LibrarySteps> library;
  CUdeviceptr workspace = 0;
  std::vector<CUdeviceptr> buffers;  ///< per argument (0 for an empty one)
  std::vector<CUdeviceptr> flush;    ///< L2-sized source and destination, allocated on first use
  size_t flushBytes = 0;
  CUevent start = nullptr, end = nullptr;
  CUgraphExec graph = nullptr;  ///< `graphCalls` back-to-back launches, captured
  int graphCalls = 0;

  /// Makes the device's context current for a scope.
  struct Current : CudaContextScope {
    explicit Current(const Impl& i) : CudaContextScope(*i.cu, i.context) {}
  };

  ~Impl() {
    if (!cu || !context) return;
    Current current(*this);
    library.reset();  // descriptors and handles before the context goes
    if (workspace) cu->memFree(workspace);
    for (CUdeviceptr p : buffers)
      if (p) cu->memFree(p);
    for (CUdeviceptr p : flush) cu->memFree(p);
    if (graph) cu->graphExecDestroy(graph);
    if (start) cu->eventDestroy(start);
    if (end) cu->eventDestroy(end);
    if (module) cu->moduleUnload(module);
    if (stream) cu->streamDestroy(stream);
    cu->primaryCtxRelease(device.device);
  }

  Status launchOnce() const {
    if (library) return library->enqueue(0, workspace, stream);
    std::vector<CUdeviceptr> values(buffers);
    std::vector<long long> extents(launch.extents.begin(), launch.extents.end());
    std::vector<void*> params;
    for (CUdeviceptr& p : values) params.push_back(&p);
    for (long long& e : extents) params.push_back(&e);
    return cu->check(cu->launchKernel(function, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
                                      launch.block[1], launch.block[2], 0, stream, params.data(), nullptr),
                     "launching kernel " + launch.entry);
  }

  /// Back to direct launches (a graph of an earlier time() is not replayed by the next one's calibration).
  void dropGraph() {
    if (graph) cu->graphExecDestroy(graph);
    graph = nullptr;
    graphCalls = 0;
  }

  /// Records `calls` back-to-back launches into `graph` by stream capture;
  /// false (and no graph) where the call cannot be captured.
  Expected<bool> capture(int calls) {
    dropGraph();
    Expected<CUgraph> captured = captureGraph(*cu, stream, launch.entry, [&] {
      Status enqueued = Status::ok();
      for (int i = 0; i < calls && enqueued.isOk(); ++i) enqueued = launchOnce();
      return enqueued;
    });
    if (!captured.isOk()) return false;
    KILN_ASSIGN(graph, instantiateGraph(*cu, *captured, launch.entry));
    graphCalls = calls;
    return true;
  }

  /// Milliseconds of `repeats` replays of the captured graph, or without
  /// one of `repeats` direct launches, optionally after an L2 flush.
  Expected<double> sample(int repeats, bool flushL2) {
    if (flushL2) {
      KILN_TRY(cu->check(cu->streamSynchronize(stream), "cuStreamSynchronize"));
      KILN_TRY(cu->check(cu->memcpyDtoD(flush[1], flush[0], flushBytes), "flushing the L2 cache"));
    }
    KILN_TRY(cu->check(cu->eventRecord(start, stream), "cuEventRecord"));
    for (int i = 0; i < repeats; ++i)
      KILN_TRY(graph ? cu->check(cu->graphLaunch(graph, stream), "launching the graph of " + launch.entry) : launchOnce());
    KILN_TRY(cu->check(cu->eventRecord(end, stream), "cuEventRecord"));
    KILN_TRY(cu->check(cu->eventSynchronize(end), "waiting for kernel " + launch.entry));
    float ms = 0;
    KILN_TRY(cu->check(cu->eventElapsedTime(&ms, start, end), "cuEventElapsedTime"));
    return double(ms);
  }
};

CudaKernelTimer::CudaKernelTimer() : impl_(std::make_unique<Impl>()) {}
CudaKernelTimer::~CudaKernelTimer() = default;

Expected<std::pair<std::string, uint32_t>> CudaKernelTimer::device() {
  KILN_ASSIGN(const CudaDriver* cu, CudaDriver::get());
  KILN_ASSIGN(CudaDevice d, selectCudaDevice(*cu));
  return std::make_pair(d.name, d.sm);
}

/// A timer on the selected device with its context, stream, events and
/// `args` uploaded; `name` (the kernel's or call's) for errors.
Expected<std::unique_ptr<CudaKernelTimer>> CudaKernelTimer::open(const std::string& name, const std::vector<Tensor>& args) {
  KILN_ASSIGN(const CudaDriver* cu, CudaDriver::get());
  std::unique_ptr<CudaKernelTimer> t(new CudaKernelTimer);
  Impl& m = *t->impl_;
  KILN_ASSIGN(m.device, selectCudaDevice(*cu));
  KILN_TRY(cu->check(cu->primaryCtxRetain(&m.context, m.device.device), "cuDevicePrimaryCtxRetain"));
  m.cu = cu;
  m.launch.entry = name;
  Impl::Current current(m);
  KILN_TRY(cu->check(cu->streamCreate(&m.stream, CU_STREAM_DEFAULT), "cuStreamCreate"));
  KILN_TRY(cu->check(cu->eventCreate(&m.start, CU_EVENT_DEFAULT), "cuEventCreate"));
  KILN_TRY(cu->check(cu->eventCreate(&m.end, CU_EVENT_DEFAULT), "cuEventCreate"));
  for (size_t a = 0; a < args.size(); ++a) {
    CUdeviceptr p = 0;
    const uint64_t bytes = args[a].byteSize();
    if (bytes) {
      KILN_TRY(cu->check(cu->memAlloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes for argument " +
                                                      std::to_string(a) + " of " + name));
      m.buffers.push_back(p);
      KILN_TRY(cu->check(cu->memcpyHtoD(p, args[a].rawData(), bytes), "uploading argument " + std::to_string(a)));
    } else {
      m.buffers.push_back(0);
    }
  }
  return t;
}

Expected<std::unique_ptr<CudaKernelTimer>> CudaKernelTimer::create(const std::vector<uint8_t>& image,
                                                                   const CudaKernelLaunch& launch,
                                                                   const std::vector<Tensor>& args) {
  if (image.empty()) return makeError(ErrorCode::InvalidArgument, "kernel ", launch.entry, ": empty code image");
  KILN_ASSIGN(std::unique_ptr<CudaKernelTimer> t, open(launch.entry, args));
  Impl& m = *t->impl_;
  m.launch = launch;
  Impl::Current current(m);
  KILN_TRY(m.cu->check(m.cu->moduleLoadData(&m.module, image.data()), "cuModuleLoadData of kernel " + launch.entry));
  KILN_TRY(m.cu->check(m.cu->moduleGetFunction(&m.function, m.module, launch.entry.c_str()),
                       "cuModuleGetFunction " + launch.entry));
  return t;
}

Expected<std::unique_ptr<CudaKernelTimer>> CudaKernelTimer::createLibrary(const LibraryCall& call,
                                                                          const std::vector<Tensor>& args) {
  const std::vector<uint64_t> elements = call.operandElements();
  if (args.size() != elements.size())
    return makeError(ErrorCode::InvalidArgument, "library call ", call.name, " takes ", elements.size(), " operands, got ",
                     args.size());
  for (size_t a = 0; a < args.size(); ++a)
    if (uint64_t(args[a].numElements()) != elements[a] || args[a].dtype() != call.dtype)
      return makeError(ErrorCode::InvalidArgument, "library call ", call.name, ": operand ", a, " is ",
                       dtypeName(args[a].dtype()), " with ", args[a].numElements(), " elements, the call needs ",
                       dtypeName(call.dtype), " with ", elements[a]);
  KILN_ASSIGN(std::unique_ptr<CudaKernelTimer> t, open(call.name, args));
  Impl& m = *t->impl_;
  Impl::Current current(m);
  Executable& exe = m.libraryExe;  // one library step over buffers 0..n-1
  exe.libraryCalls = {call};
  KernelStep step;
  step.kind = StepKind::Library;
  for (uint32_t a = 0; a < args.size(); ++a) step.args.push_back(a);
  exe.steps = {step};
  KILN_ASSIGN(m.library, LibrarySteps::plan(exe, m.buffers));
  KILN_TRY(m.cu->check(m.cu->memAlloc(&m.workspace, kLibraryWorkspaceBytes), "cuMemAlloc of the library workspace"));
  KILN_TRY(m.library->tryEach(m.workspace, m.stream));
  KILN_TRY(m.cu->check(m.cu->streamSynchronize(m.stream), "trying library call " + call.name));
  return t;
}

Status CudaKernelTimer::runOnce(std::vector<Tensor>& args, const std::vector<size_t>& outputs) {
  Impl& m = *impl_;
  Impl::Current current(m);
  KILN_TRY(m.launchOnce());
  KILN_TRY(m.cu->check(m.cu->streamSynchronize(m.stream), "running " + m.launch.entry));
  for (size_t a : outputs) {
    if (a >= args.size() || a >= m.buffers.size())
      return makeError(ErrorCode::InvalidArgument, "kernel ", m.launch.entry, " has no argument ", a);
    if (m.buffers[a])
      KILN_TRY(m.cu->check(m.cu->memcpyDtoH(args[a].mutableRawData(), m.buffers[a], args[a].byteSize()),
                           "copying output argument " + std::to_string(a) + " of " + m.launch.entry));
  }
  return Status::ok();
}

Expected<double> CudaKernelTimer::time(const CudaTimingOptions& options) {
  Impl& m = *impl_;
  Impl::Current current(m);
  if (options.flushL2 && m.flush.empty()) {
    int l2 = 0;
    m.flushBytes = m.cu->deviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, m.device.device) == CUDA_SUCCESS && l2 > 0
                       ? size_t(l2)
                       : size_t(64) << 20;
    for (int i = 0; i < 2; ++i) {
      CUdeviceptr p = 0;
      KILN_TRY(m.cu->check(m.cu->memAlloc(&p, m.flushBytes), "cuMemAlloc of the L2 flush buffer"));
      m.flush.push_back(p);
    }
  }
  m.dropGraph();
  for (int i = 0; i < options.warmup; ++i) KILN_TRY(m.launchOnce());
  // Calibration: how many launches make a sample of minSampleMs (one each when
  // flushing), from one direct launch (an upper bound: it includes the host's cost).
  KILN_ASSIGN(double once, m.sample(1, options.flushL2));
  int launches = 1;
  if (!options.flushL2 && once < options.minSampleMs)
    launches = int(std::min(100000.0, options.minSampleMs / std::max(once, 1e-4))) + 1;
  // Those launches as replays of a graph of at most kGraphCalls calls; with
  // the host's cost gone a replay is shorter, so the replays are re-counted.
  constexpr int kGraphCalls = 32;
  KILN_ASSIGN(bool captured, m.capture(std::min(launches, kGraphCalls)));
  int repeats = launches;
  if (captured) {
    repeats = (launches + m.graphCalls - 1) / m.graphCalls;
    KILN_ASSIGN(double replay, m.sample(1, options.flushL2));
    if (!options.flushL2 && replay * repeats < options.minSampleMs)
      repeats = int(std::min(100000.0, options.minSampleMs / std::max(replay, 1e-4))) + 1;
  }
  const int perSample = repeats * (captured ? m.graphCalls : 1);
  std::vector<double> perLaunch;
  for (int r = 0; r < std::max(options.repeats, 1); ++r) {
    KILN_ASSIGN(double ms, m.sample(repeats, options.flushL2));
    perLaunch.push_back(ms / perSample);
  }
  return median(std::move(perLaunch));
}

}  // namespace kiln::runtime
