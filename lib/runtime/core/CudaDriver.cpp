//===- lib/runtime/core/CudaDriver.cpp - The CUDA driver API, loaded lazily ===//
//
// See CudaDriver.h. Symbols are looked up by the names cuda.h's macros map
// the API to (cuMemAlloc -> cuMemAlloc_v2, ...), the default-stream forms.
// KILN_CUDA_DRIVER names another driver library to load instead (the tests
// use the CPU emulation's, tests/emulation/EmulatedDriver.cpp).
//
//===----------------------------------------------------------------------===//
#include "CudaDriver.h"

#include <cstdlib>

#include "SharedLibrary.h"

namespace kiln::runtime {
namespace {

struct Loaded {
  CudaDriver driver;
  Status status = Status::ok();
};

Loaded load() {
  Loaded l;
  SharedLibrary library = openSharedLibrary("KILN_CUDA_DRIVER", {"libcuda.so.1"});
  const std::string& path = library.path;
  if (!library.handle) {
    l.status = Error(ErrorCode::DeviceUnavailable, "no NVIDIA driver on this machine (" + path +
                                                       " not found); CUDA artifacts need a GPU");
    return l;
  }
  CudaDriver& d = l.driver;
  auto need = [&](const char* symbol, auto& fn) { library.need(symbol, fn); };
  need("cuInit", d.init);
  need("cuDeviceGetCount", d.deviceGetCount);
  need("cuDeviceGet", d.deviceGet);
  need("cuDeviceGetAttribute", d.deviceGetAttribute);
  need("cuDeviceGetName", d.deviceGetName);
  need("cuDevicePrimaryCtxRetain", d.primaryCtxRetain);
  need("cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease);
  need("cuCtxPushCurrent_v2", d.ctxPush);
  need("cuCtxPopCurrent_v2", d.ctxPop);
  need("cuModuleLoadData", d.moduleLoadData);
  need("cuModuleUnload", d.moduleUnload);
  need("cuModuleGetFunction", d.moduleGetFunction);
  need("cuMemAlloc_v2", d.memAlloc);
  need("cuMemFree_v2", d.memFree);
  need("cuMemcpyHtoD_v2", d.memcpyHtoD);
  need("cuMemcpyDtoH_v2", d.memcpyDtoH);
  need("cuMemcpyDtoD_v2", d.memcpyDtoD);
  need("cuStreamCreate", d.streamCreate);
  need("cuStreamDestroy_v2", d.streamDestroy);
  need("cuStreamSynchronize", d.streamSynchronize);
  need("cuLaunchKernel", d.launchKernel);
  need("cuMemGetInfo_v2", d.memGetInfo);
  need("cuMemAllocHost_v2", d.memAllocHost);
  need("cuMemFreeHost", d.memFreeHost);
  need("cuMemcpyHtoDAsync_v2", d.memcpyHtoDAsync);
  need("cuMemcpyDtoHAsync_v2", d.memcpyDtoHAsync);
  need("cuMemcpyDtoDAsync_v2", d.memcpyDtoDAsync);
  need("cuGraphCreate", d.graphCreate);
  need("cuGraphAddKernelNode_v2", d.graphAddKernelNode);
  need("cuGraphInstantiateWithFlags", d.graphInstantiate);
  need("cuGraphLaunch", d.graphLaunch);
  need("cuGraphExecDestroy", d.graphExecDestroy);
  need("cuGraphDestroy", d.graphDestroy);
  need("cuGraphAddChildGraphNode", d.graphAddChildGraphNode);
  need("cuStreamBeginCapture_v2", d.streamBeginCapture);
  need("cuStreamEndCapture", d.streamEndCapture);
  need("cuEventCreate", d.eventCreate);
  need("cuEventDestroy_v2", d.eventDestroy);
  need("cuEventRecord", d.eventRecord);
  need("cuEventSynchronize", d.eventSynchronize);
  need("cuEventElapsedTime_v2", d.eventElapsedTime);
  need("cuGetErrorName", d.getErrorName);
  need("cuGetErrorString", d.getErrorString);
  if (library.missing) {
    l.status = Error(ErrorCode::DeviceUnavailable, std::string("the NVIDIA driver's " + path + " lacks ") + library.missing +
                                                       " (driver too old for this runtime)");
    return l;
  }
  CUresult r = d.init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    l.status = Error(ErrorCode::DeviceUnavailable, "no CUDA device on this machine (cuInit: CUDA_ERROR_NO_DEVICE)");
    return l;
  }
  if (r != CUDA_SUCCESS) {
    Status st = d.check(r, "cuInit");
    l.status = Error(ErrorCode::DeviceUnavailable, st.error().message());
  }
  return l;
}

}  // namespace

Expected<const CudaDriver*> CudaDriver::get() {
  static const Loaded loaded = load();
  if (!loaded.status.isOk()) return loaded.status.error();
  return &loaded.driver;
}

Status CudaDriver::check(CUresult result, const std::string& what) const {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (getErrorName) getErrorName(result, &name);
  if (getErrorString) getErrorString(result, &text);
  return Error(ErrorCode::DeviceFailure, what + " failed: " + (name ? name : "CUDA error " + std::to_string(int(result))) +
                                             (text ? std::string(": ") + text : std::string()));
}

Expected<CudaDevice> selectCudaDevice(const CudaDriver& cu) {
  int count = 0;
  KILN_TRY(cu.check(cu.deviceGetCount(&count), "cuDeviceGetCount"));
  int ordinal = 0;
  if (const char* env = std::getenv("KILN_CUDA_DEVICE")) ordinal = std::atoi(env);
  if (count == 0) return makeError(ErrorCode::DeviceUnavailable, "no CUDA device on this machine");
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::DeviceUnavailable, "KILN_CUDA_DEVICE=", ordinal, " but this machine has ", count, " CUDA devices");
  CudaDevice d;
  KILN_TRY(cu.check(cu.deviceGet(&d.device, ordinal), "cuDeviceGet"));
  int major = 0, minor = 0;
  KILN_TRY(cu.check(cu.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device), "cuDeviceGetAttribute"));
  KILN_TRY(cu.check(cu.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device), "cuDeviceGetAttribute"));
  d.sm = uint32_t(major * 10 + minor);
  char name[256] = {0};
  cu.deviceGetName(name, sizeof name - 1, d.device);
  d.name = std::string(name) + " (sm_" + std::to_string(d.sm) + ")";
  return d;
}

Expected<CUgraph> captureGraph(const CudaDriver& cu, CUstream stream, const std::string& what,
                               const std::function<Status()>& enqueue) {
  KILN_TRY(cu.check(cu.streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture for " + what));
  Status enqueued = enqueue();
  CUgraph captured = nullptr;
  Status ended = cu.check(cu.streamEndCapture(stream, &captured), "capturing " + what);
  if (enqueued.isOk() && ended.isOk()) return captured;
  if (captured) cu.graphDestroy(captured);
  return enqueued.isOk() ? ended.error() : enqueued.error();
}

Expected<CUgraphExec> instantiateGraph(const CudaDriver& cu, CUgraph graph, const std::string& what) {
  CUgraphExec instance = nullptr;
  Status made = cu.check(cu.graphInstantiate(&instance, graph, 0), "cuGraphInstantiate for " + what);
  cu.graphDestroy(graph);
  KILN_TRY(made);
  return instance;
}

}  // namespace kiln::runtime
