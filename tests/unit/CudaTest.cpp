//===- tests/unit/CudaTest.cpp - CUDA target without a GPU -----------------===//
//
// What the CUDA target proves on a machine with the toolkit and no GPU:
// GPU-scheduled kernels print as CUDA C that NVRTC compiles to sm_80 and
// sm_90 cubins and PTX; the emulation harness honours threads, shared
// memory, barriers and warp shuffles (and reports a divergent barrier);
// every schedule template's GPU schedule, under every configuration of its
// GPU knob space, runs its exact CUDA source under emulation and matches the
// interpreter kernel by kernel (f16 and bf16 matrix products also on their
// tensor-core schedules, whose PTX mma the harness emulates lane by lane);
// and every tiny zoo model lowers for the GPU with all its kernels compiling
// and matching.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "CudaEmulator.h"
#include "ScratchDir.h"
#include "TemplateCases.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/Pipeline.h"
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
  // The matmul's shared-tile schedule (gemm = 0): a 2-D thread block.
  auto m = testing::parse(testing::templateCases("matmul").front().text);
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  const KernelGroup& group = plan->groups().front();
  auto space = (*templateFor(group))->knobSpace(group, KernelTarget::Gpu);
  REQUIRE(space.isOk());
  CompileOptions options;
  options.configs[group.name()] = space->defaultConfig();
  options.configs[group.name()]["gemm"] = 0;
  auto model = lowerModel(m->graph(), KernelTarget::Gpu, options);
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

TEST_CASE("GPU kernels with run-time extents launch blocks for the maxima and run at every extent under emulation") {
  // out[o] = in[o] + n for o < n, n <= 256: 64 threads a block, blocks for
  // ceil(n / 64) that grow with n, so the launch takes the maximum's 4.
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 256);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 256);
  Var n = makeVar("n"), b = makeVar("b"), t = makeVar("t");
  Expr o = varRef(b) * 64 + varRef(t);
  Stmt body = forLoop(b, floorDiv(varRef(n) + 63, 64), LoopKind::BlockX,
                      forLoop(t, intImm(64), LoopKind::ThreadX,
                              ifThen(binary(BinaryOp::Lt, o, varRef(n)),
                                     store(out, o, load(in, o) + cast(ScalarType::F32, varRef(n))))));
  Kernel k{"add_count", KernelTarget::Gpu, {in, out}, body, {{n, 256}}};
  auto cuda = emitCuda(k);
  INFO((cuda.isOk() ? std::string() : cuda.error().str()));
  REQUIRE(cuda.isOk());
  CHECK(cuda->grid == std::array<int64_t, 3>{4, 1, 1});
  CHECK(cuda->paramTypes == std::vector<std::string>{"const float*", "float*", "long long"});
  for (int sm : {80, 90}) {
    auto cubin = compileCubin(cuda->source, "add_count.cu", sm);
    INFO(cuda->source);
    INFO((cubin.isOk() ? std::string() : cubin.error().str()));
    REQUIRE(cubin.isOk());
  }
  auto lib = emulation::EmulatedKernels::build({*cuda}, testing::scratchDir("runtime-extents"));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  for (int64_t count : {1, 63, 64, 65, 200, 256}) {
    std::vector<float> x(256), y(256, -1.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    void* args[] = {x.data(), y.data(), reinterpret_cast<void*>(intptr_t(count))};
    REQUIRE((*lib)->launch(0, args).isOk());
    INFO("n = " << count);
    for (int64_t i = 0; i < 256; ++i) CHECK(y[size_t(i)] == (i < count ? float(i + count) : -1.0f));
  }
  // A block extent that does not grow with n has no maximum to launch for.
  Kernel shrinking = k;
  shrinking.body = forLoop(b, intImm(300) - varRef(n), LoopKind::BlockX,
                           forLoop(t, intImm(64), LoopKind::ThreadX, store(out, varRef(t), floatImm(0))));
  auto refused = emitCuda(shrinking);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.error().message().find("no upper bound") != std::string::npos);
}

namespace {

/// Lowers the group anchored by `c.anchorOp` under every configuration of
/// its GPU knob space (at most `c.limit` of them when set: a sample spread by
/// a stride coprime to the space's size), compiles each with NVRTC and checks
/// it under emulation against the interpreter; returns the knob space.
KnobSpace checkEveryConfiguration(const testing::TemplateCase& c, double tolerance) {
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
  std::vector<uint64_t> picked;
  const uint64_t count = c.limit ? std::min<uint64_t>(c.limit, space->size()) : space->size();
  for (uint64_t n = 0; n < count; ++n) picked.push_back(count == space->size() ? n : n * 1000003 % space->size());
  for (uint64_t i : picked) {
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
    const Config config = space->configAt(picked[i]);
    INFO("configuration " << configToString(config));
    // An approximate knob away from its default (TF32) rounds f32 inputs to 10 mantissa bits.
    bool approximate = false;
    for (const Knob& k : space->knobs) approximate |= k.approximate && config.at(k.name) != k.defaultValue;
    checkUnderEmulation(g, models[i], kernels, **lib, first[i], inputs, approximate ? std::max(tolerance, 1e-2) : tolerance);
  }
  return std::move(*space);
}

}  // namespace

TEST_CASE("every template's GPU schedule matches the interpreter under emulation across its knob space") {
  for (const testing::TemplateCase& c : testing::templateCases()) checkEveryConfiguration(c, 2e-5);
}

TEST_CASE("graph values named like kernel-local buffers or workspaces get parameter names of their own") {
  // A conv whose input, weights and bias are named acc, As and col: the
  // names of the GEMM's accumulator, shared tile and the CPU's im2col workspace.
  const testing::TemplateCase c{"names", R"(module @m {
  graph @main(%acc: f32[1,3,8,8], %As: f32[8,3,3,3], %col: f32[8]) {
    %c = Conv(%acc, %As, %col) {pads = [1, 1, 1, 1]} : f32[1,8,8,8]
    return %c
  }
})", "Conv", 12};
  checkEveryConfiguration(c, 2e-5);
  auto m = testing::parse(c.text);
  CompileOptions options;
  options.allowHostSteps = false;
  auto cpu = lowerModel(m->graph(), KernelTarget::Cpu, options);
  INFO((cpu.isOk() ? std::string() : cpu.error().str()));
  REQUIRE(cpu.isOk());
  std::vector<std::string> names;
  for (const codegen::Buffer& b : cpu->kernels.front().kernel.params) names.push_back(b->name);
  CHECK(std::find(names.begin(), names.end(), "acc") == names.end());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());  // the graph's col and the workspace
  CHECK(names.size() == 5);
}

TEST_CASE("vectorized GPU loops read and write aligned unit-stride f32 accesses as float4") {
  // The injective case over [3, 8]: x and the broadcast bias are read as
  // float4, the transposed operand lane by lane, the result written as float4.
  testing::TemplateCase c = testing::templateCases("injective").back();
  auto m = testing::parse(c.text);
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  const KernelGroup& group = plan->groups().front();
  auto space = (*templateFor(group))->knobSpace(group, KernelTarget::Gpu);
  REQUIRE(space.isOk());
  CHECK(space->defaultConfig().at("vector") == 4);
  for (int64_t vector : {1, 4}) {
    Config config = space->defaultConfig();
    config["vector"] = vector;
    auto lowered = lowerGroup(group, KernelTarget::Gpu, &config);
    REQUIRE(lowered.isOk());
    auto cuda = emitCuda(lowered->kernel);
    REQUIRE(cuda.isOk());
    INFO(cuda->source);
    const std::string& src = cuda->source;
    auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(count("reinterpret_cast<const float4*>") == (vector == 4 ? 2u : 0u));
    CHECK(count("reinterpret_cast<float4*>") == (vector == 4 ? 1u : 0u));
    CHECK(cuda->grid[0] * cuda->block[0] >= 24 / vector);
  }
}

TEST_CASE("kiln's mma fragment layouts agree with the emulated PTX instruction for f16, bf16 and tf32") {
  // One warp multiplies a 16 x k matrix by a k x 8 one: each lane loads its
  // fragment elements at the positions kiln's layout functions give (index
  // tables made here from mmaFragmentA/B/C), issues the mma, and stores its
  // accumulator elements at their positions. The emulation's own reading of
  // the PTX tables must produce the exact product (values are small
  // multiples of 1/8, exact in every input type).
  std::vector<CudaKernel> kernels;
  const MmaKind kinds[] = {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16, MmaKind::TF32_M16N8K8};
  for (MmaKind kind : kinds) {
    const MmaShape shape = mmaShape(kind);
    auto global = [](const char* name, ScalarType t, int64_t size) { return makeBuffer(name, t, MemoryScope::Global, size); };
    codegen::Buffer a = global("a", ScalarType::F32, shape.m * shape.k), b = global("b", ScalarType::F32, shape.k * shape.n);
    codegen::Buffer c = global("c", ScalarType::F32, shape.m * shape.n);
    codegen::Buffer ai = global("ai", ScalarType::I64, 32 * shape.aElements), bi = global("bi", ScalarType::I64, 32 * shape.bElements);
    codegen::Buffer ci = global("ci", ScalarType::I64, 32 * shape.cElements);
    codegen::Buffer af = makeBuffer("af", ScalarType::F32, MemoryScope::Local, shape.aElements);
    codegen::Buffer bf = makeBuffer("bf", ScalarType::F32, MemoryScope::Local, shape.bElements);
    codegen::Buffer acc = makeBuffer("acc", ScalarType::F32, MemoryScope::Local, shape.cElements);
    Var blk = makeVar("blk"), lane = makeVar("lane"), i = makeVar("i"), j = makeVar("j"), z = makeVar("z"), o = makeVar("o");
    auto gather = [&](const codegen::Buffer& dst, const codegen::Buffer& src, const codegen::Buffer& table, const Var& v) {
      return forLoop(v, intImm(dst->size), LoopKind::Unrolled,
                     store(dst, varRef(v), load(src, load(table, varRef(lane) * dst->size + varRef(v)))));
    };
    Stmt body = seq({forLoop(z, intImm(shape.cElements), LoopKind::Unrolled, store(acc, varRef(z), floatImm(0))),
                     gather(af, a, ai, i), gather(bf, b, bi, j), mmaSync(kind, acc, intImm(0), af, intImm(0), bf, intImm(0)),
                     forLoop(o, intImm(shape.cElements), LoopKind::Unrolled,
                             store(c, load(ci, varRef(lane) * shape.cElements + varRef(o)), load(acc, varRef(o))))});
    Kernel k;
    k.name = std::string("mma_layout_") + std::to_string(int(kind));
    k.target = KernelTarget::Gpu;
    k.params = {a, b, c, ai, bi, ci};
    k.body = forLoop(blk, intImm(1), LoopKind::BlockX,
                     forLoop(lane, intImm(32), LoopKind::ThreadX, allocate(af, allocate(bf, allocate(acc, body)))));
    REQUIRE(verifyKernel(k).isOk());
    CHECK_THAT(printKernel(k), Catch::Contains(std::string("mma.") + mmaKindName(kind)));
    auto cuda = emitCuda(k);
    REQUIRE(cuda.isOk());
    auto cubin = compileCubin(cuda->source, k.name + ".cu", 80);
    INFO((cubin.isOk() ? std::string() : cubin.error().str()));
    REQUIRE(cubin.isOk());
    kernels.push_back(*cuda);
  }
  auto lib = emulation::EmulatedKernels::build(kernels, testing::scratchDir("mma-layouts"));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  for (size_t kindIndex = 0; kindIndex < 3; ++kindIndex) {
    const MmaKind kind = kinds[kindIndex];
    INFO(mmaKindName(kind));
    const MmaShape shape = mmaShape(kind);
    std::vector<float> a(size_t(shape.m * shape.k)), b(size_t(shape.k * shape.n)), c(size_t(shape.m * shape.n), -1);
    for (size_t x = 0; x < a.size(); ++x) a[x] = float(int(x * 7 % 17) - 8) / 8;
    for (size_t x = 0; x < b.size(); ++x) b[x] = float(int(x * 5 % 13) - 6) / 8;
    std::vector<int64_t> ai, bi, ci;
    for (int64_t l = 0; l < 32; ++l) {
      for (int64_t e = 0; e < shape.aElements; ++e) {
        auto [r, col] = mmaFragmentA(kind, l, e);
        ai.push_back(r * shape.k + col);
      }
      for (int64_t e = 0; e < shape.bElements; ++e) {
        auto [r, col] = mmaFragmentB(kind, l, e);
        bi.push_back(r * shape.n + col);
      }
      for (int64_t e = 0; e < shape.cElements; ++e) {
        auto [r, col] = mmaFragmentC(kind, l, e);
        ci.push_back(r * shape.n + col);
      }
    }
    void* args[] = {a.data(), b.data(), c.data(), ai.data(), bi.data(), ci.data()};
    REQUIRE((*lib)->launch(kindIndex, args).isOk());
    for (int64_t r = 0; r < shape.m; ++r)
      for (int64_t col = 0; col < shape.n; ++col) {
        double want = 0;
        for (int64_t x = 0; x < shape.k; ++x) want += double(a[size_t(r * shape.k + x)]) * b[size_t(x * shape.n + col)];
        INFO("C[" << r << "][" << col << "]");
        CHECK(c[size_t(r * shape.n + col)] == Approx(want).margin(1e-6));
      }
  }
}

TEST_CASE("f16 and bf16 matrix products and convolutions run on tensor cores (mma.sync) and match under emulation") {
  // Shapes that are not multiples of the warp tiles (masked rows, columns and
  // k tail), a batched product with a fused bias + Relu epilogue, a bf16
  // Gemm with transB and alpha, and one large enough for 2 x 2 warps of 2 x 4 fragments.
  const std::vector<std::pair<testing::TemplateCase, double>> cases{
      {{"mma-f16", R"(module @m {
  graph @main(%x: f16[2,37,40], %w: f16[40,45], %b: f16[45]) {
    %m = MatMul(%x, %w) : f16[2,37,45]
    %a = Add(%m, %b) : f16[2,37,45]
    %r = Relu(%a) : f16[2,37,45]
    return %r
  }
})", "MatMul", 24},
       2e-3},
      {{"mma-bf16", R"(module @m {
  graph @main(%x: bf16[20,24], %w: bf16[33,24]) {
    %g = Gemm(%x, %w) {transB = 1, alpha = 0.5} : bf16[20,33]
    return %g
  }
})", "Gemm", 24},
       1e-2},
      {{"mma-f16-large", R"(module @m {
  graph @main(%x: f16[70,64], %w: f16[64,130]) {
    %m = MatMul(%x, %w) : f16[70,130]
    return %m
  }
})", "MatMul", 24},
       2e-3},
  };
  for (const auto& [c, tolerance] : cases) {
    KnobSpace space = checkEveryConfiguration(c, tolerance);
    // The tensor-core knobs exist, and tensor cores are the default for these operand types.
    CHECK(space.defaultConfig().at("mma") == 1);
    CHECK(space.size() == 3 * 2 * 2 * 2 * 2 * 2);  // tile, gemm, block, mma, warps, frags
  }
  // Convolutions as implicit GEMMs: padded, strided and dilated with bias and
  // Relu (taps outside the image read zero), and a 1x1 conv with a residual add.
  const std::vector<testing::TemplateCase> convs{
      {"mma-conv", R"(module @m {
  graph @main(%x: f16[2,5,9,11], %w: f16[12,5,3,3], %b: f16[12]) {
    %c = Conv(%x, %w, %b) {strides = [2, 1], pads = [1, 1, 1, 1], dilations = [1, 2]} : f16[2,12,5,9]
    %r = Relu(%c) : f16[2,12,5,9]
    return %r
  }
})", "Conv", 48},
      {"mma-conv-1x1", R"(module @m {
  graph @main(%x: f16[1,40,6,7], %w: f16[36,40,1,1], %y: f16[1,36,6,7]) {
    %c = Conv(%x, %w) : f16[1,36,6,7]
    %a = Add(%c, %y) : f16[1,36,6,7]
    return %a
  }
})", "Conv", 48},
  };
  for (const testing::TemplateCase& c : convs) {
    KnobSpace space = checkEveryConfiguration(c, 2e-3);
    CHECK(space.defaultConfig().at("mma") == 1);
    CHECK(space.size() == 4 * 2 * 2 * 2 * 2 * 2);  // threads, gemm, tile, mma, warps, frags
  }
  // f32 products get the mma knob as an approximate one (TF32), off by default.
  auto m = testing::parse(testing::templateCases("matmul").front().text);
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  for (const KernelGroup& k : plan->groups())
    if (k.anchor && k.anchor->opType() == "MatMul") {
      auto space = (*templateFor(k))->knobSpace(k, KernelTarget::Gpu);
      REQUIRE(space.isOk());
      CHECK(space->defaultConfig().at("mma") == 0);
      for (const Knob& knob : space->knobs) CHECK(knob.approximate == (knob.name == "mma"));
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

TEST_CASE("arch's BERT pipeline (dense layers as kiln::Dense, weights as stored) lowers for the GPU and matches under emulation") {
  passes::registerAllPasses();
  auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/bert_tiny-raw.onnx");
  REQUIRE(module.isOk());
  ir::Graph& g = (*module)->graph();
  auto pipeline = passes::parsePipeline("simplify-fc-transpose,fold-constant,simplify-expr,recognize-layer-norm,recognize-gelu,fast-math");
  REQUIRE(pipeline.isOk());
  REQUIRE(passes::runPipeline(g, *pipeline, {}).isOk());
  auto model = lowerModel(g, KernelTarget::Gpu, {});
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  // Every dense layer is a kiln::Dense whose weights the GPU reads as the transposed pack made at compile time.
  size_t dense = 0, transposedPacks = 0;
  for (const LoweredKernel& lk : model->kernels) {
    dense += lk.group->anchor && lk.group->anchor->qualifiedOpType() == "kiln::Dense";
    for (const PackSpec& p : lk.packs) transposedPacks += p.kind == "panels" && p.transposed;
  }
  CHECK(dense >= 4);  // the projections, the feed-forward layers
  CHECK(transposedPacks == dense);
  std::vector<CudaKernel> kernels = emitAndCompile(*model, "");
  auto lib = emulation::EmulatedKernels::build(kernels, testing::scratchDir("bert_tiny-raw-arch"));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  checkUnderEmulation(g, *model, kernels, **lib, 0, testing::randomInputs(g, 11), 1e-4);
}

TEST_CASE("a mixed-precision (f16) model, or f32 with TF32 allowed, lowers for the GPU with tensor cores and matches under emulation") {
  passes::registerAllPasses();
  for (const char* file : {"resnet_tiny-raw.onnx", "bert_tiny-raw.onnx"})
    for (const bool tf32 : {false, true}) {
    INFO(file << (tf32 ? " f32, TF32 allowed" : " f16"));
    auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/" + file);
    REQUIRE(module.isOk());
    ir::Graph& g = (*module)->graph();
    auto pipeline = passes::optLevelPipeline(3);
    REQUIRE(pipeline.isOk());
    auto mixed = passes::parsePipeline("to-mixed-precision");
    REQUIRE(mixed.isOk());
    if (!tf32) pipeline->insert(pipeline->end(), mixed->begin(), mixed->end());
    REQUIRE(passes::runPipeline(g, *pipeline, {}).isOk());
    CompileOptions options;
    options.allowTf32 = tf32;
    auto model = lowerModel(g, KernelTarget::Gpu, options);
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    size_t tensorCoreKernels = 0;
    for (const LoweredKernel& lk : model->kernels) tensorCoreKernels += lk.config.count("mma") && lk.config.at("mma") == 1;
    CHECK(tensorCoreKernels > 0);
    const std::string variant = tf32 ? "_tf32" : "_f16";
    std::vector<CudaKernel> kernels = emitAndCompile(*model, variant);
    auto lib = emulation::EmulatedKernels::build(kernels, testing::scratchDir(std::string(file) + variant));
    INFO((lib.isOk() ? std::string() : lib.error().str()));
    REQUIRE(lib.isOk());
    // Kernel by kernel on the same inputs: only f16 rounding of results (or TF32 rounding of inputs) differs.
    checkUnderEmulation(g, *model, kernels, **lib, 0, testing::randomInputs(g, 11), tf32 ? 1e-2 : 5e-3);
  }
}

TEST_CASE("GEMM tiles default to the large tile only where it leaves enough blocks to fill the GPU") {
  // BERT-base's projections: 128 x 768 outputs are 24 blocks of 64 x 64 at
  // batch 1 (most of a 132-SM GPU idle) and 768 blocks at batch 32.
  auto defaults = [](int batch) {
    const std::string b = std::to_string(batch);
    auto m = testing::parse(R"(module @m {
  graph @main(%x: f16[)" + b + R"(,128,768], %w: f16[768,768]) {
    %y = MatMul(%x, %w) : f16[)" + b + R"(,128,768]
    return %y
  }
})");
    auto plan = FusionPlan::build(m->graph());
    REQUIRE(plan.isOk());
    const KernelGroup& group = plan->groups().front();
    auto space = (*templateFor(group))->knobSpace(group, KernelTarget::Gpu);
    REQUIRE(space.isOk());
    return space->defaultConfig();
  };
  Config one = defaults(1), many = defaults(32);
  CHECK(one["block"] == 32);
  CHECK(one["frags"] == 1);
  CHECK(many["block"] == 64);
  CHECK(many["frags"] == 2);
  CHECK(one["mma"] == 1);  // f16 on tensor cores either way
  CHECK(many["mma"] == 1);
}
