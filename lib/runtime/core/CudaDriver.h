//===- lib/runtime/core/CudaDriver.h - The CUDA driver API, loaded lazily -===//
//
// The runtime library must load and run CPU artifacts on machines without
// an NVIDIA driver, so it does not link libcuda: the first CUDA artifact
// dlopens libcuda.so.1 and resolves the driver entry points it uses (by
// their versioned symbol names). Types and enums come from the toolkit's
// cuda.h. Every failure becomes an Error naming the call: no driver or no
// device is KE5005 (device-unavailable), a failing call KE5006.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

#include "kiln/support/Status.h"

namespace kiln::runtime {

struct CudaDriver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuCtxPushCurrent) ctxPush = nullptr;
  decltype(&::cuCtxPopCurrent) ctxPop = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemcpyHtoD) memcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  decltype(&::cuMemcpyDtoD) memcpyDtoD = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuMemGetInfo) memGetInfo = nullptr;
  decltype(&::cuMemAllocHost) memAllocHost = nullptr;
  decltype(&::cuMemFreeHost) memFreeHost = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&::cuGraphCreate) graphCreate = nullptr;
  decltype(&::cuGraphAddKernelNode) graphAddKernelNode = nullptr;
  decltype(&::cuGraphInstantiate) graphInstantiate = nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;
  decltype(&::cuGraphAddChildGraphNode) graphAddChildGraphNode = nullptr;
  decltype(&::cuStreamBeginCapture) streamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) streamEndCapture = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;

  /// The process-wide driver (loaded and cuInit-ed once); KE5005 when absent.
  static Expected<const CudaDriver*> get();
  /// OK, or KE5006 "<what> failed: CUDA_ERROR_...: <description>".
  Status check(CUresult result, const std::string& what) const;
};

/// Makes a context current on this thread for a scope (push, then pop).
class CudaContextScope {
 public:
  CudaContextScope(const CudaDriver& cu, CUcontext context) : cu_(cu) { cu_.ctxPush(context); }
  ~CudaContextScope() {
    CUcontext popped;
    cu_.ctxPop(&popped);
  }
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;

 private:
  const CudaDriver& cu_;
};

/// The device kiln uses: KILN_CUDA_DEVICE (default 0).
struct CudaDevice {
  CUdevice device = 0;
  uint32_t sm = 0;   ///< 90 for sm_90
  std::string name;  ///< the driver's device name and SM number ("<name> (sm_90)")
};
/// KE5005 without a device or with KILN_CUDA_DEVICE out of range.
Expected<CudaDevice> selectCudaDevice(const CudaDriver& cu);

/// What `enqueue` puts on `stream`, recorded into a graph by stream capture
/// (thread-local mode); `what` names it in errors. The capture always ends,
/// so the stream is usable after a refusal; an error from `enqueue` (a
/// library refusing capture) comes before the driver's.
Expected<CUgraph> captureGraph(const CudaDriver& cu, CUstream stream, const std::string& what,
                               const std::function<Status()>& enqueue);
/// An executable instance of `graph`, which is destroyed either way.
Expected<CUgraphExec> instantiateGraph(const CudaDriver& cu, CUgraph graph, const std::string& what);

}  // namespace kiln::runtime
