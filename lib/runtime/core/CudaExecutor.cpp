//===- lib/runtime/core/CudaExecutor.cpp - Running CUDA kernel steps ------===//
//
// See CudaExecutor.h. Device memory: one allocation per input, output and
// weight buffer and one arena for the intermediates (offsets from the memory
// plan); dynamic values (host steps' data-dependent results) stay on the
// host. The primary context of the device is pushed around every driver
// call sequence, so the executor works from any thread. The stream is a
// blocking one: the synchronous copies (legacy default stream) order with
// its kernels.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/CudaExecutor.h"

#include <cstdlib>
#include <mutex>

#include "CudaDriver.h"
#include "HostProgram.h"

namespace kiln::runtime {

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
  std::mutex runMutex;

  /// Makes the device's context current for a scope.
  struct Current {
    const Impl& impl;
    explicit Current(const Impl& i) : impl(i) { impl.cu->ctxPush(impl.context); }
    ~Current() {
      CUcontext popped;
      impl.cu->ctxPop(&popped);
    }
  };

  Expected<CUdeviceptr> allocate(uint64_t bytes) {
    if (!bytes) return CUdeviceptr(0);
    CUdeviceptr p = 0;
    KILN_TRY(cu->check(cu->memAlloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes"));
    owned.push_back(p);
    return p;
  }

  ~Impl() {
    if (!cu || !context) return;
    {
      Current current(*this);
      for (CUdeviceptr p : owned) cu->memFree(p);
      for (CUmodule m : modules) cu->moduleUnload(m);
      if (stream) cu->streamDestroy(stream);
    }
    cu->primaryCtxRelease(device);
  }
};

CudaExecutor::CudaExecutor() : impl_(std::make_unique<Impl>()) {}
CudaExecutor::~CudaExecutor() = default;
const std::string& CudaExecutor::device() const { return impl_->deviceName; }

Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::create(std::shared_ptr<const Executable> exe) {
  KILN_TRY(exe->validate());
  if (exe->target != "cuda")
    return makeError(ErrorCode::ArtifactVersion, "compiled for target '", exe->target, "', not cuda");
  if (exe->cudaKernels.size() != exe->kernelNames.size())
    return makeError(ErrorCode::ArtifactCorrupt, "executable has ", exe->kernelNames.size(), " kernels but CUDA code for ",
                     exe->cudaKernels.size());
  KILN_ASSIGN(const CudaDriver* cu, CudaDriver::get());
  std::unique_ptr<CudaExecutor> e(new CudaExecutor);
  Impl& m = *e->impl_;
  m.cu = cu;
  m.exe = exe;
  int count = 0;
  KILN_TRY(cu->check(cu->deviceGetCount(&count), "cuDeviceGetCount"));
  int ordinal = 0;
  if (const char* env = std::getenv("KILN_CUDA_DEVICE")) ordinal = std::atoi(env);
  if (count == 0) return makeError(ErrorCode::DeviceUnavailable, "no CUDA device on this machine");
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::DeviceUnavailable, "KILN_CUDA_DEVICE=", ordinal, " but this machine has ", count, " CUDA devices");
  KILN_TRY(cu->check(cu->deviceGet(&m.device, ordinal), "cuDeviceGet"));
  int major = 0, minor = 0;
  KILN_TRY(cu->check(cu->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, m.device), "cuDeviceGetAttribute"));
  KILN_TRY(cu->check(cu->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, m.device), "cuDeviceGetAttribute"));
  const uint32_t sm = uint32_t(major * 10 + minor);
  char name[256] = {0};
  cu->deviceGetName(name, sizeof name - 1, m.device);
  m.deviceName = std::string(name) + " (sm_" + std::to_string(sm) + ")";
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
  KILN_ASSIGN(CUdeviceptr arena, m.allocate(exe->arenaBytes));
  m.pointers.assign(exe->buffers.size(), 0);
  for (size_t id = 0; id < exe->buffers.size(); ++id) {
    const BufferSpec& b = exe->buffers[id];
    if (b.dynamic || !b.bytes()) continue;
    if (b.kind == BufferKind::Intermediate) {
      m.pointers[id] = arena + b.offset;
      continue;
    }
    KILN_ASSIGN(m.pointers[id], m.allocate(b.bytes()));
    if (b.kind == BufferKind::Weight)
      KILN_TRY(cu->check(cu->memcpyHtoD(m.pointers[id], exe->weights[b.index].rawData(), b.bytes()),
                         "uploading weight " + b.name));
  }
  for (const HostGraph& h : exe->hostGraphs) {
    KILN_ASSIGN(std::unique_ptr<HostProgram> program, HostProgram::create(h));
    m.hostPrograms.push_back(std::move(program));
  }
  return e;
}

Expected<std::vector<Tensor>> CudaExecutor::run(const std::vector<Tensor>& inputs) const {
  Impl& m = *impl_;
  const Executable& exe = *m.exe;
  const CudaDriver& cu = *m.cu;
  KILN_TRY(exe.checkInputs(inputs));
  std::lock_guard<std::mutex> lock(m.runMutex);
  Impl::Current current(m);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BufferSpec& b = exe.buffers[exe.inputs[i]];
    if (b.bytes())
      KILN_TRY(cu.check(cu.memcpyHtoD(m.pointers[exe.inputs[i]], inputs[i].rawData(), b.bytes()), "copying input " + b.name));
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
  std::vector<CUdeviceptr> args;
  std::vector<void*> params;
  for (const KernelStep& step : exe.steps) {
    if (step.kind == StepKind::Kernel) {
      const CudaKernelCode& c = exe.cudaKernels[step.kernel];
      args.clear();
      params.clear();
      for (uint32_t a : step.args) args.push_back(m.pointers[a]);
      for (CUdeviceptr& p : args) params.push_back(&p);
      KILN_TRY(cu.check(cu.launchKernel(m.functions[step.kernel], c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                                        c.block[2], 0, m.stream, params.data(), nullptr),
                        "launching " + exe.kernelNames[step.kernel]));
      continue;
    }
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
  KILN_TRY(cu.check(cu.streamSynchronize(m.stream), "running the kernels"));
  std::vector<Tensor> outputs(exe.outputs.size());
  for (size_t o = 0; o < exe.outputs.size(); ++o) {
    uint32_t id = exe.outputs[o];
    const BufferSpec& b = exe.buffers[id];
    uint32_t source = b.aliasOf >= 0 ? uint32_t(b.aliasOf) : id;
    if (b.dynamic) {
      if (!dynamicValues[source].buffer()) return makeError(ErrorCode::Internal, "output ", b.name, " was never computed");
      outputs[o] = dynamicValues[source];
      continue;
    }
    const BufferSpec& from = exe.buffers[source];
    if (from.kind == BufferKind::Input) outputs[o] = inputs[from.index].clone();
    else if (from.kind == BufferKind::Weight) outputs[o] = exe.weights[from.index].clone();
    else {
      KILN_ASSIGN(outputs[o], toHost(source));
    }
  }
  return outputs;
}

}  // namespace kiln::runtime
