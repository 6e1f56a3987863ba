//===- tests/emulation/EmulatedDriver.cpp - libcuda on the CPU ------------===//
//
// A stand-in for the NVIDIA driver library, so that kiln's CUDA runtime
// (CudaExecutor: module loading, the device memory plan, launches, host
// steps, copies) runs end to end on a machine without a GPU. The runtime
// loads it in place of libcuda.so.1 when KILN_CUDA_DRIVER names it.
//
// One emulated device, "kiln CPU emulation", of compute capability
// KILN_EMULATED_SM (default 90). Device memory is host memory; every copy
// is checked against the allocation it touches. A module's image (cubin or
// PTX) cannot run on the CPU, so the kernels come from the emulation
// library KILN_EMULATED_KERNELS (built by CudaEmulator from the same CUDA C
// the artifact was compiled from): cuModuleGetFunction finds the launcher
// kiln_emulate_<name> (and its parameter count), and cuLaunchKernel runs it over the grid and block
// the runtime passes. Launches run synchronously.
//
// kiln_emulated_live_objects() reports what is still allocated (memory,
// modules, streams, retained contexts) so tests can check the runtime
// releases everything it takes.
//
//===----------------------------------------------------------------------===//
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

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

struct State {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;  ///< base -> bytes
  int modules = 0, streams = 0, contexts = 0;
  std::string lastError;  ///< the last failed launch's message (for cuGetErrorString)
};

State& state() {
  static State s;
  return s;
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

}  // namespace

extern "C" {

int kiln_emulated_live_objects() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return int(s.allocations.size()) + s.modules + s.streams + s.contexts;
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
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().contexts;
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
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().modules;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  auto* m = reinterpret_cast<Module*>(module);
  dlclose(m->library);
  delete m;
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().modules;
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
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = CUdeviceptr(uintptr_t(p));
  std::lock_guard<std::mutex> lock(state().mutex);
  state().allocations[uintptr_t(p)] = bytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!state().allocations.erase(uintptr_t(ptr))) return CUDA_ERROR_INVALID_VALUE;
  }
  std::free(reinterpret_cast<void*>(uintptr_t(ptr)));
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

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
  if (!inDeviceMemory(to, bytes) || !inDeviceMemory(from, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(reinterpret_cast<void*>(uintptr_t(to)), reinterpret_cast<const void*>(uintptr_t(from)), bytes);
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  static int streamObject;
  *stream = reinterpret_cast<CUstream>(&streamObject);
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().streams;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().streams;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned sharedBytes, CUstream, void** params, void** extra) {
  if (extra || sharedBytes) return CUDA_ERROR_NOT_SUPPORTED;
  if (uint64_t(bx) * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  const Function& f = *reinterpret_cast<const Function*>(function);
  // Parameters arrive as pointers to the values; every kiln kernel parameter is a device pointer.
  std::vector<void*> args(size_t(f.params));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!params || !params[i]) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p;
    std::memcpy(&p, params[i], sizeof p);
    args[i] = reinterpret_cast<void*>(uintptr_t(p));
  }
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  char error[512] = {0};
  if (f.launch(grid, block, args.data(), error, sizeof error) != 0) {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().lastError = error;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
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
