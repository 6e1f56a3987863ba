//===- tests/unit/CudaTest.cpp - CUDA target without a GPU -----------------===//
//
// What the CUDA target proves on a machine with the toolkit and no GPU:
// GPU-scheduled kernels print as CUDA C that NVRTC compiles to sm_80 and
// sm_90 cubins and PTX; the emulation harness honours threads, shared
// memory, barriers and warp shuffles (and reports a divergent barrier);
// every schedule template's GPU schedule, under every configuration of its
// GPU knob space, runs its exact CUDA source under emulation and matches the
// interpreter kernel by kernel; and every tiny zoo model lowers for the GPU
// with all its kernels compiling and matching.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "CudaEmulator.h"
#include "ScratchDir.h"
#include "TemplateCases.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/CudaBackend.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"

using namespace kiln;
using namespace kiln::codegen;

namespace {

/// The kernels of a model lowered for the GPU, as CUDA C; every source also
/// compiled by NVRTC for sm_80 and sm_90. `suffix` makes names unique when
/// several lowerings share one emulation library.
std::vector<CudaKernel> emitAndCompile(const LoweredModel& model, const std::string& suffix) {
  std::vector<CudaKernel> out;
  for (const LoweredKernel& lk : model.kernels) {
    Kernel k = lk.kernel;
    k.name += suffix;
    auto cuda = emitCuda(k, lk.templateName);
    INFO((cuda.isOk() ? std::string() : cuda.error().str()));
    REQUIRE(cuda.isOk());
    for (int sm : {80, 90}) {
      auto cubin = compileCubin(cuda->source, k.name + ".cu", sm);
      INFO(cuda->source);
      INFO((cubin.isOk() ? std::string() : cubin.error().str()));
      REQUIRE(cubin.isOk());
      CHECK(cubin->cubin.size() > 4);
    }
    out.push_back(std::move(*cuda));
  }
  return out;
}

/// Checks every kernel of `model` under emulation against the interpreter.
void checkUnderEmulation(ir::Graph& g, const LoweredModel& model, const std::vector<CudaKernel>& kernels,
                         const emulation::EmulatedKernels& lib, size_t firstKernel, const std::vector<Tensor>& inputs,
                         double tolerance) {
  auto results = checkKernels(g, model, inputs, [&](size_t kernel, void* const* args) {
    return lib.launch(firstKernel + kernel, args);
  });
  INFO((results.isOk() ? std::string() : results.error().str()));
  REQUIRE(results.isOk());
  CHECK(results->size() >= std::min<size_t>(1, kernels.size()));  // one result per kernel step
  for (const KernelCheckResult& r : *results) {
    INFO(r.kernel << " (" << r.templateName << ") worst on " << r.worstValue);
    CHECK(r.maxRelError < tolerance);
  }
}

}  // namespace

TEST_CASE("GPU kernels print as CUDA C that NVRTC compiles for sm_80 and sm_90, with PTX") {
  auto m = testing::parse(testing::templateCases("matmul").front().text);
  auto model = lowerModel(m->graph(), KernelTarget::Gpu, {});
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  REQUIRE(model->kernels.size() == 1);
  auto cuda = emitCuda(model->kernels[0].kernel, "MatMul + Add + Relu");
  REQUIRE(cuda.isOk());
  const std::string& src = cuda->source;
  CHECK(src.find("// " + model->kernels[0].kernel.name + ": MatMul + Add + Relu") == 0);
  CHECK(src.find("extern \"C\" __global__ void __launch_bounds__(256) " + cuda->name + "(") != std::string::npos);
  CHECK(src.find("__shared__ float As[256];") != std::string::npos);
  CHECK(src.find("__syncthreads();") != std::string::npos);
  CHECK(src.find("blockIdx.z") != std::string::npos);
  CHECK(src.find("threadIdx.y") != std::string::npos);
  CHECK(src.find("const float* __restrict__") != std::string::npos);
  CHECK(cuda->grid == std::array<int64_t, 3>{1, 1, 2});
  CHECK(cuda->block == std::array<int64_t, 3>{16, 16, 1});
  CHECK(cuda->sharedBytes == 2 * 256 * 4);
  for (int sm : defaultCudaArchitectures()) {
    auto cubin = compileCubin(src, cuda->name + ".cu", sm);
    INFO((cubin.isOk() ? std::string() : cubin.error().str()));
    REQUIRE(cubin.isOk());
    REQUIRE(cubin->cubin.size() > 4);
    CHECK(std::string(cubin->cubin.begin(), cubin->cubin.begin() + 4) == "\x7f" "ELF");
  }
  auto ptx = compilePtx(src, cuda->name + ".cu", 90);
  REQUIRE(ptx.isOk());
  CHECK(ptx->find(".entry " + cuda->name) != std::string::npos);
  CHECK(ptx->find(".target sm_90") != std::string::npos);
  CHECK(nvrtcVersion() != "unknown");

  // A CPU kernel is refused, and a compile failure shows NVRTC's log and the file.
  auto cpu = lowerModel(m->graph(), KernelTarget::Cpu, {});
  REQUIRE(cpu.isOk());
  auto refused = emitCuda(cpu->kernels[0].kernel);
  REQUIRE(!refused.isOk());
  CHECK(refused.error().message().find("GPU schedule") != std::string::npos);
  auto broken = compileCubin("extern \"C\" __global__ void f() { undeclared = 1; }", "broken.cu", 90);
  REQUIRE(!broken.isOk());
  CHECK(broken.error().message().find("broken.cu") != std::string::npos);
  CHECK(broken.error().message().find("undeclared") != std::string::npos);
}

TEST_CASE("the emulation harness honours threads, shared memory, barriers and warp shuffles") {
  // A block sum: a shared-memory tree over 256 threads down to one warp, then
  // shuffles; written as kiln would emit it and compiled by NVRTC as well.
  const std::string source = R"(extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ out) {
  __shared__ float partial[256];
  const long long t = threadIdx.x;
  partial[t] = x[blockIdx.x * 256 + t] * (float)(t % 3 + 1);
  __syncthreads();
  for (int half = 128; half >= 32; half /= 2) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t < 32) {
    float v = partial[t];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    float first = __shfl_sync(0xffffffffu, v, 0);
    float mirrored = __shfl_xor_sync(0xffffffffu, (float)t, 31);
    if (t == 0) out[blockIdx.x * 2] = first;
    if (t == 5) out[blockIdx.x * 2 + 1] = mirrored;
  }
}
)";
  for (int sm : {80, 90}) REQUIRE(compileCubin(source, "block_sum.cu", sm).isOk());
  CudaKernel k;
  k.name = "block_sum";
  k.source = source;
  k.paramTypes = {"const float*", "float*"};
  k.grid = {3, 1, 1};
  k.block = {256, 1, 1};
  CudaKernel divergent;
  divergent.name = "divergent";
  divergent.source = R"(extern "C" __global__ void divergent(float* __restrict__ out) {
  if (threadIdx.x < 8) __syncthreads();
  out[threadIdx.x] = 1.0f;
}
)";
  divergent.paramTypes = {"float*"};
  divergent.block = {32, 1, 1};
  auto lib = emulation::EmulatedKernels::build({k, divergent}, testing::scratchDir("harness"));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  std::vector<float> x(3 * 256), out(6, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) * 0.25f;
  void* args[] = {x.data(), out.data()};
  REQUIRE((*lib)->launch(0, args).isOk());
  for (int b = 0; b < 3; ++b) {
    double want = 0;
    for (int t = 0; t < 256; ++t) want += double(x[size_t(b * 256 + t)]) * double(t % 3 + 1);
    CHECK(out[size_t(b * 2)] == Approx(want).epsilon(1e-6));
    CHECK(out[size_t(b * 2 + 1)] == 26.0f);  // lane 5 reads lane 5 ^ 31 = 26
  }
  std::vector<float> sink(32);
  void* args2[] = {sink.data()};
  Status st = (*lib)->launch(1, args2);
  REQUIRE(!st.isOk());
  CHECK(st.error().message().find("divergence") != std::string::npos);
}

TEST_CASE("every template's GPU schedule matches the interpreter under emulation, in every configuration") {
  for (const testing::TemplateCase& c : testing::templateCases()) {
    INFO(c.family << " case anchored by " << c.anchorOp);
    auto m = testing::parse(c.text);
    ir::Graph& g = m->graph();
    auto plan = FusionPlan::build(g);
    REQUIRE(plan.isOk());
    const KernelGroup* group = c.anchorOp == "injective" ? &plan->groups().front() : nullptr;
    for (const KernelGroup& k : plan->groups())
      if (k.anchor && k.anchor->opType() == c.anchorOp) group = &k;
    REQUIRE(group != nullptr);
    auto space = (*templateFor(*group))->knobSpace(*group, KernelTarget::Gpu);
    INFO((space.isOk() ? std::string() : space.error().str()));
    REQUIRE(space.isOk());
    REQUIRE(space->size() >= 3);
    // Every configuration lowered, emitted and compiled; one emulation library for all.
    std::vector<LoweredModel> models;
    std::vector<CudaKernel> kernels;
    std::vector<size_t> first;
    for (uint64_t i = 0; i < space->size(); ++i) {
      CompileOptions options;
      options.configs[group->name()] = space->configAt(i);
      options.allowHostSteps = false;
      auto model = lowerModel(g, KernelTarget::Gpu, options);
      INFO(configToString(options.configs[group->name()]));
      INFO((model.isOk() ? std::string() : model.error().str()));
      REQUIRE(model.isOk());
      std::vector<CudaKernel> emitted = emitAndCompile(*model, "_c" + std::to_string(i));
      first.push_back(kernels.size());
      kernels.insert(kernels.end(), emitted.begin(), emitted.end());
      models.push_back(std::move(*model));
    }
    auto lib = emulation::EmulatedKernels::build(kernels, testing::scratchDir(c.family + "-" + c.anchorOp));
    INFO((lib.isOk() ? std::string() : lib.error().str()));
    REQUIRE(lib.isOk());
    std::vector<Tensor> inputs = testing::randomInputs(g, 7);
    for (size_t i = 0; i < models.size(); ++i) {
      INFO("configuration " << configToString(space->configAt(i)));
      checkUnderEmulation(g, models[i], kernels, **lib, first[i], inputs, 2e-5);
    }
  }
}

TEST_CASE("tiny zoo models lower for the GPU, every kernel compiles with NVRTC and matches under emulation") {
  passes::registerAllPasses();
  for (const char* file : {"resnet_tiny-raw.onnx", "mobilenet_tiny-raw.onnx", "ssdlite_tiny-raw.onnx", "bert_tiny-raw.onnx"}) {
    INFO(file);
    auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/" + file);
    INFO((module.isOk() ? std::string() : module.error().str()));
    REQUIRE(module.isOk());
    ir::Graph& g = (*module)->graph();
    auto pipeline = passes::optLevelPipeline(3);
    REQUIRE(pipeline.isOk());
    REQUIRE(passes::runPipeline(g, *pipeline, {}).isOk());
    auto model = lowerModel(g, KernelTarget::Gpu, {});
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    REQUIRE(!model->kernels.empty());
    // The GPU schedules cover every group the CPU target compiles: the host
    // steps (extern ops, data-dependent shapes) are the same on both.
    auto cpu = lowerModel(g, KernelTarget::Cpu, {});
    REQUIRE(cpu.isOk());
    std::vector<std::string> gpuHost, cpuHost;
    for (const HostStepInfo& h : model->stats.hostSteps) gpuHost.push_back(h.name + ": " + h.reason);
    for (const HostStepInfo& h : cpu->stats.hostSteps) cpuHost.push_back(h.name + ": " + h.reason);
    CHECK(gpuHost == cpuHost);
    CHECK(model->kernels.size() == cpu->kernels.size());
    std::vector<CudaKernel> kernels = emitAndCompile(*model, "");
    auto lib = emulation::EmulatedKernels::build(kernels, testing::scratchDir(file));
    INFO((lib.isOk() ? std::string() : lib.error().str()));
    REQUIRE(lib.isOk());
    checkUnderEmulation(g, *model, kernels, **lib, 0, testing::randomInputs(g, 11), 1e-4);
  }
}
