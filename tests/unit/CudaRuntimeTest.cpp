//===- tests/unit/CudaRuntimeTest.cpp - CUDA artifacts through the runtime ===//
//
// The CUDA runtime (kiln::Model on a `--target cuda` artifact) proven
// without a GPU: the runtime loads the emulated driver
// (tests/emulation/EmulatedDriver.cpp) through KILN_CUDA_DRIVER, and the
// driver runs the artifact's kernels from an emulation library built from the
// very CUDA C the artifact's cubins were compiled from. Tiny zoo models
// (one with host steps and data-dependent shapes) are compiled, saved,
// loaded and run, from two threads at once, against the interpreter; the
// runtime must free everything it took; an artifact without code for the
// device's architecture, a corrupt one and wrong inputs get clear errors.
// Kernel steps replay as CUDA graphs (the emulated driver runs a graph's
// nodes in another valid order than they were added in, so a missing
// dependency edge shows as a wrong result); without graphs the results are
// bitwise the same; a model too big for the device is KE5007.
// The NVRTC cache hits on a recompile and survives damaged entries.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <random>
#include <thread>
#include <tuple>

#include "CudaEmulator.h"
#include "EmulatedDriverCounters.h"
#include "ScratchDir.h"
#include "TemplateCases.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/LibraryTactics.h"
#include "kiln/codegen/cuda/NvrtcCache.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/kiln.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/CudaExecutor.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/runtime/StepDependencies.h"
#include "kiln/support/File.h"

using namespace kiln;
using kiln::testing::graphLaunches;
using kiln::testing::liveDriverObjects;

namespace {

/// Loads `artifact` with the environment variable `name` set to `value` (unset again afterwards).
Expected<std::unique_ptr<Model>> loadWithEnv(const std::string& artifact, const char* name, const char* value) {
  ::setenv(name, value, 1);
  auto model = Model::load(artifact);
  ::unsetenv(name);
  return model;
}

/// Row order of detections (boxes [N,4], scores [N], labels [N]) by label,
/// then box: two detections whose scores tie to the last bits may come out of
/// NMS in either order, and both orders are right.
std::vector<size_t> detectionOrder(const Tensor& boxes, const Tensor& labels) {
  std::vector<double> b = boxes.toDoubles(), l = labels.toDoubles();
  std::vector<size_t> order(l.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (l[x] != l[y]) return l[x] < l[y];
    return std::lexicographical_compare(b.begin() + 4 * x, b.begin() + 4 * x + 4, b.begin() + 4 * y, b.begin() + 4 * y + 4);
  });
  return order;
}

/// Compares outputs element by element; with `detections`, outputs 0-2 are
/// SSD's boxes, scores and labels, compared in detectionOrder.
void requireClose(const std::vector<Tensor>& got, const std::vector<RuntimeValue>& want, double tolerance,
                  bool detections) {
  REQUIRE(got.size() == want.size());
  std::vector<size_t> gotRows, wantRows;
  if (detections) {
    REQUIRE(got.size() >= 3);
    gotRows = detectionOrder(got[0], got[2]);
    wantRows = detectionOrder(want[0].tensor(), want[2].tensor());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& w = want[i].tensor();
    INFO("output " << i << ": " << got[i].typeString() << " vs " << w.typeString());
    REQUIRE(got[i].dtype() == w.dtype());
    REQUIRE(got[i].dims() == w.dims());
    std::vector<double> a = got[i].toDoubles(), b = w.toDoubles();
    const size_t rowSize = i == 0 ? 4 : 1;
    for (size_t j = 0; j < a.size(); ++j) {
      size_t ja = j, jb = j;
      if (detections && i < 3) {
        ja = gotRows[j / rowSize] * rowSize + j % rowSize;
        jb = wantRows[j / rowSize] * rowSize + j % rowSize;
      }
      INFO("element " << ja);
      REQUIRE(std::fabs(a[ja] - b[jb]) <= tolerance * (1 + std::fabs(b[jb])));
    }
  }
}

/// A tiny zoo model, optimized, compiled for sm_80 into an artifact file, with
/// the emulation library of its kernels built and named for the driver.
struct CompiledModel {
  std::unique_ptr<ir::Module> module;
  std::string artifact;
  std::unique_ptr<emulation::EmulatedKernels> kernels;
};

/// `module`, optimized and compiled with `options` (scratch directory `name`).
CompiledModel compileModule(std::unique_ptr<ir::Module> module, const std::string& name,
                            const codegen::CompileOptions& options = {}) {
  passes::registerAllPasses();
  CompiledModel out;
  out.module = std::move(module);
  ir::Graph& g = out.module->graph();
  auto pipeline = passes::optLevelPipeline(3);
  REQUIRE(pipeline.isOk());
  REQUIRE(passes::runPipeline(g, *pipeline, {}).isOk());
  const std::string dir = testing::scratchDir(name);
  codegen::CudaCompileOptions cuda;
  cuda.archs = {80};
  cuda.emitDir = dir + "/cuda";
  auto model = codegen::compileCudaArtifact(g, options, cuda);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  // The emulation runs the sources the cubins were compiled from, as written to the emit directory.
  std::vector<codegen::CudaKernel> sources;
  for (const codegen::LoweredKernel& lk : model->kernels) {
    auto source = codegen::emitCuda(lk.kernel, codegen::fusedOpsOf(*lk.group));
    REQUIRE(source.isOk());
    auto emitted = readFile(cuda.emitDir + "/" + source->name + ".cu");
    REQUIRE(emitted.isOk());
    CHECK(*emitted == source->source);
    sources.push_back(std::move(*source));
  }
  auto lib = emulation::EmulatedKernels::build(sources, dir + "/emulation");
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  out.kernels = std::move(*lib);
  out.artifact = dir + "/model.kiln";
  REQUIRE(runtime::saveArtifact(*model->executable, out.artifact).isOk());
  ::setenv("KILN_CUDA_DRIVER", KILN_EMULATED_DRIVER, 1);
  ::setenv("KILN_EMULATED_KERNELS", out.kernels->libraryPath().c_str(), 1);
  ::unsetenv("KILN_EMULATED_SM");
  return out;
}

/// A tiny zoo model file, compiled as compileModule does.
CompiledModel compile(const std::string& file, const codegen::CompileOptions& options = {}) {
  auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/" + file);
  INFO((module.isOk() ? std::string() : module.error().str()));
  REQUIRE(module.isOk());
  return compileModule(std::move(*module), file + (options.libraryTactics == codegen::LibraryTactics::Off ? "" : "-lib"), options);
}

}  // namespace

TEST_CASE("CUDA artifacts load and run through the runtime on the emulated driver, matching the interpreter") {
  for (const char* file : {"mobilenet_tiny-raw.onnx", "ssdlite_tiny-raw.onnx", "bert_tiny-raw.onnx"}) {
    INFO(file);
    CompiledModel compiled = compile(file);
    runtime::Interpreter reference(compiled.module->graph());
    {
      auto model = Model::load(compiled.artifact);
      INFO((model.isOk() ? std::string() : model.error().str()));
      REQUIRE(model.isOk());
      CHECK((*model)->compiledFor() == "sm_80");
      CHECK(liveDriverObjects() > 0);
      // Two seeds, run from two threads at once: runs take turns on the device and both are right.
      std::vector<Tensor> inputs[2] = {testing::randomInputs(compiled.module->graph(), 3),
                                       testing::randomInputs(compiled.module->graph(), 4)};
      Expected<std::vector<Tensor>> got[2] = {Error(ErrorCode::Internal, "not run"), Error(ErrorCode::Internal, "not run")};
      std::thread second([&] { got[1] = (*model)->run(inputs[1]); });
      const unsigned long long launchesBefore = graphLaunches();
      got[0] = (*model)->run(inputs[0]);
      second.join();
      CHECK(graphLaunches() > launchesBefore);
      for (int i = 0; i < 2; ++i) {
        INFO("seed " << 3 + i << ": " << (got[i].isOk() ? std::string() : got[i].error().str()));
        REQUIRE(got[i].isOk());
        auto want = reference.run(std::vector<RuntimeValue>(inputs[i].begin(), inputs[i].end()));
        REQUIRE(want.isOk());
        requireClose(*got[i], *want, 1e-4, std::string(file).find("ssdlite") == 0);
      }
      // Wrong inputs are refused before anything reaches the device.
      auto wrong = (*model)->run({});
      REQUIRE(!wrong.isOk());
      CHECK(wrong.error().code() == ErrorCode::ExecInput);
    }
    CHECK(liveDriverObjects() == 0);  // memory, modules, the stream and the context all released
  }
}

TEST_CASE("a compiled If runs the branch its condition picks on the device, with the other branch's steps skipped") {
  auto parsed = ir::parseModule(R"(module @m {
  graph @main(%x: f32[2,8], %flag: bool[]) {
    %one = Constant() {value = tensor<f32[]: [1.0]>} : f32[]
    %s = Add(%x, %one) : f32[2,8]
    %r = If(%flag) {then_branch = graph @t() {
        %e = Exp(%s) : f32[2,8]
        %p = Mul(%e, %x) : f32[2,8]
        return %p
      }, else_branch = graph @f() {
        %n = Neg(%s) : f32[2,8]
        %t = Tanh(%n) : f32[2,8]
        return %t
      }} : f32[2,8]
    %y = Sub(%r, %x) : f32[2,8]
    return %y, %r
  }
})", "if.kir");
  REQUIRE(parsed.isOk());
  CompiledModel compiled = compileModule(std::move(*parsed), "compiled-if");
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  CHECK(std::count_if(exe->steps.begin(), exe->steps.end(),
                      [](const runtime::KernelStep& s) { return s.kind == runtime::StepKind::Branch; }) == 1);
  CHECK(exe->hostGraphs.empty());
  runtime::Interpreter reference(compiled.module->graph());
  auto model = Model::load(compiled.artifact);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  for (bool flag : {true, false, true}) {
    INFO("flag " << flag);
    std::vector<Tensor> inputs = {testing::randomInputs(compiled.module->graph(), 7)[0],
                                  Tensor::fromVector<double>({}, {flag ? 1.0 : 0.0}).castTo(DType::Bool)};
    auto got = (*model)->run(inputs);
    INFO((got.isOk() ? std::string() : got.error().str()));
    REQUIRE(got.isOk());
    auto want = reference.run(std::vector<RuntimeValue>(inputs.begin(), inputs.end()));
    REQUIRE(want.isOk());
    requireClose(*got, *want, 1e-5, false);
  }
}

TEST_CASE("a CUDA artifact without code for the device, or corrupt, gets a clear error") {
  CompiledModel compiled = compile("mobilenet_tiny-raw.onnx");
  // An sm_75 device can run neither the sm_80 cubin nor compute_80 PTX.
  auto old = loadWithEnv(compiled.artifact, "KILN_EMULATED_SM", "75");
  REQUIRE(!old.isOk());
  CHECK(old.error().code() == ErrorCode::ArtifactVersion);
  CHECK(old.error().message().find("recompile with --target cuda:sm_75") != std::string::npos);
  // A newer device without a cubin JIT-compiles the PTX (the emulated driver accepts the image).
  auto newer = loadWithEnv(compiled.artifact, "KILN_EMULATED_SM", "100");
  INFO((newer.isOk() ? std::string() : newer.error().str()));
  CHECK(newer.isOk());

  // The CUDA tables survive a round trip and a flipped byte is caught.
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  REQUIRE(!exe->cudaKernels.empty());
  std::vector<uint8_t> bytes = runtime::serializeExecutable(*exe);
  auto again = runtime::deserializeExecutable(bytes.data(), bytes.size());
  REQUIRE(again.isOk());
  REQUIRE(again->cudaKernels.size() == exe->cudaKernels.size());
  for (size_t k = 0; k < exe->cudaKernels.size(); ++k) {
    CHECK(again->cudaKernels[k].cubins == exe->cudaKernels[k].cubins);
    CHECK(again->cudaKernels[k].ptx == exe->cudaKernels[k].ptx);
    CHECK(again->cudaKernels[k].grid == exe->cudaKernels[k].grid);
  }
  bytes[bytes.size() / 2] ^= 0x5a;
  auto corrupt = runtime::deserializeExecutable(bytes.data(), bytes.size());
  REQUIRE(!corrupt.isOk());
  CHECK(corrupt.error().code() == ErrorCode::ArtifactCorrupt);

  // A launch shape no GPU accepts is refused when the executable is validated.
  runtime::Executable bad = *exe;
  bad.cudaKernels[0].block = {64, 32, 1};
  CHECK(!bad.validate().isOk());
  bad = *exe;
  bad.cudaKernels.pop_back();
  CHECK(!bad.validate().isOk());
}

TEST_CASE("kernel steps replay as CUDA graphs with concurrent branches, and without graphs the results are the same") {
  CompiledModel compiled = compile("ssdlite_tiny-raw.onnx");
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  // The detector's heads are independent branches: a step that does not wait for the step before it
  // (edges are transitively reduced, so no path joins them) can run beside it.
  const runtime::StepOverlap overlap = runtime::stepOverlap(*exe);
  INFO(overlap.independent << " of " << overlap.steps << " steps are independent of the step before them");
  CHECK(overlap.segments > 1);  // host steps split the detector's kernels
  CHECK(overlap.independent > 0);
  CHECK(overlap.independent < overlap.steps);

  std::vector<Tensor> inputs = testing::randomInputs(compiled.module->graph(), 7);
  auto runOnce = [&](bool graphs) {
    auto model = graphs ? Model::load(compiled.artifact) : loadWithEnv(compiled.artifact, "KILN_CUDA_GRAPHS", "0");
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    const unsigned long long before = graphLaunches();
    auto out = (*model)->run(inputs);
    INFO((out.isOk() ? std::string() : out.error().str()));
    REQUIRE(out.isOk());
    CHECK((graphLaunches() > before) == graphs);
    return *out;
  };
  std::vector<Tensor> withGraphs = runOnce(true), stepByStep = runOnce(false);
  REQUIRE(withGraphs.size() == stepByStep.size());
  for (size_t o = 0; o < withGraphs.size(); ++o) {
    REQUIRE(withGraphs[o].byteSize() == stepByStep[o].byteSize());
    CHECK(std::memcmp(withGraphs[o].rawData(), stepByStep[o].rawData(), withGraphs[o].byteSize()) == 0);
  }
  CHECK(liveDriverObjects() == 0);
}

TEST_CASE("a CUDA artifact compiled for shape ranges runs every shape, recurring shapes replaying as CUDA graphs") {
  // A transformer block's templates (layer normalization, matmuls whose rows and reduction are dynamic, a
  // softmax along the sequence, a reduction) and a CNN's (a padded conv as an implicit GEMM, a depthwise conv
  // one output per thread, pools) over x: f32[b, s, 16] and c: f32[b, 8, 6, s].
  const std::string text = R"(module @m {
  graph @main(%x: f32[?,?,16], %c: f32[?,8,6,?]) {
    %g = Constant() {value = )" + testing::literal({16}, 51) + R"(} : f32[16]
    %n = LayerNormalization(%x, %g) {axis = -1} : f32[?,?,16]
    %w = Constant() {value = )" + testing::literal({16, 16}, 52) + R"(} : f32[16,16]
    %q = MatMul(%n, %w) : f32[?,?,16]
    %kt = Transpose(%n) {perm = [0, 2, 1]} : f32[?,16,?]
    %scores = MatMul(%q, %kt) : f32[?,?,?]
    %p = Softmax(%scores) {axis = -1} : f32[?,?,?]
    %o = MatMul(%p, %n) : f32[?,?,16]
    %pooled = ReduceMean(%o) {axes = [1], keepdims = 0} : f32[?,16]
    %cw = Constant() {value = )" + testing::literal({8, 8, 3, 3}, 53) + R"(} : f32[8,8,3,3]
    %cv = Conv(%c, %cw) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[?,8,6,?]
    %dw = Constant() {value = )" + testing::literal({8, 1, 3, 3}, 54) + R"(} : f32[8,1,3,3]
    %d = Conv(%cv, %dw) {kernel_shape = [3, 3], group = 8, pads = [1, 1, 1, 1]} : f32[?,8,6,?]
    %mp = MaxPool(%d) {kernel_shape = [2, 2], strides = [2, 2]} : f32[?,8,3,?]
    %gp = GlobalAveragePool(%mp) : f32[?,8,1,1]
    return %o, %pooled, %mp, %gp
  }
}
)";
  const DimExpr b = DimExpr::symbol("b"), sq = DimExpr::symbol("s");
  auto ranged = ir::parseModule(text);
  REQUIRE(ranged.isOk());
  ir::Graph& g = (*ranged)->graph();
  g.inputs()[0]->setType(ir::TensorType::ofExprs(DType::F32, {b, sq, DimExpr(16)}));
  g.inputs()[1]->setType(ir::TensorType::ofExprs(DType::F32, {b, DimExpr(8), DimExpr(6), sq}));
  (*ranged)->dimRanges = {{"b", {1, 2, 3}}, {"s", {2, 8, 20}}};
  REQUIRE(ir::inferTypes(g, (*ranged)->dimRanges).isOk());
  codegen::CompileOptions options;
  options.dimRanges = (*ranged)->dimRanges;
  options.libraryTactics = codegen::LibraryTactics::Off;
  CompiledModel compiled = compileModule(std::move(*ranged), "ranged", options);
  auto reference = ir::parseModule(text);
  REQUIRE(reference.isOk());
  runtime::Interpreter interpreter((*reference)->graph());
  {
    auto model = Model::load(compiled.artifact);
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    CHECK((*model)->inputs()[0].maxDims == Dims{3, 20, 16});
    std::mt19937_64 gen(9);
    auto random = [&](const Dims& dims) {
      std::vector<float> v(size_t(numElements(dims)));
      for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(gen);
      return Tensor::fromVector<float>(dims, v);
    };
    // A shape seen once launches its steps one by one; seen again, it gets graphs that later runs replay.
    for (auto [bv, sv, graphed] : std::vector<std::tuple<int64_t, int64_t, bool>>{
             {1, 5, false}, {2, 17, false}, {1, 5, true}, {1, 5, true}, {3, 20, false}, {2, 17, true}, {3, 2, false}}) {
      INFO("b " << bv << ", s " << sv);
      std::vector<Tensor> inputs{random({bv, sv, 16}), random({bv, 8, 6, sv})};
      const unsigned long long before = graphLaunches();
      auto got = (*model)->run(inputs);
      INFO((got.isOk() ? std::string() : got.error().str()));
      REQUIRE(got.isOk());
      CHECK((graphLaunches() > before) == graphed);
      auto want = interpreter.run(std::vector<RuntimeValue>(inputs.begin(), inputs.end()));
      REQUIRE(want.isOk());
      requireClose(*got, *want, 1e-4, false);
    }
    auto outside = (*model)->run({random({1, 21, 16}), random({1, 8, 6, 21})});
    REQUIRE_FALSE(outside.isOk());
    CHECK(outside.error().code() == ErrorCode::ExecInput);
    CHECK(outside.error().message().find("is 21; this executable serves 2..20") != std::string::npos);
  }
  CHECK(liveDriverObjects() == 0);  // the graph sets built per shape are released too
}

TEST_CASE("a model whose device memory does not fit is KE5007 with both sizes") {
  CompiledModel compiled = compile("mobilenet_tiny-raw.onnx");
  auto model = loadWithEnv(compiled.artifact, "KILN_EMULATED_MEMORY_LIMIT", "4096");
  REQUIRE(!model.isOk());
  CHECK(model.error().code() == ErrorCode::DeviceOutOfMemory);
  CHECK(model.error().message().find("out of device memory allocating") != std::string::npos);
  CHECK(model.error().message().find("the model needs") != std::string::npos);
  CHECK(model.error().message().find("were free before kiln's allocations") != std::string::npos);
  CHECK(liveDriverObjects() == 0);  // what was allocated before the failure is released
}

TEST_CASE("NVRTC outputs are cached by source hash and a damaged entry is compiled again") {
  passes::registerAllPasses();
  auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/resnet_tiny-raw.onnx");
  REQUIRE(module.isOk());
  ir::Graph& g = (*module)->graph();
  codegen::CudaCompileOptions cuda;
  cuda.archs = {80};
  cuda.cacheDir = testing::scratchDir("nvrtc-cache");
  auto compileOnce = [&] {
    auto model = codegen::compileCudaArtifact(g, {}, cuda);
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    return std::move(*model);
  };
  codegen::LoweredModel first = compileOnce();
  const size_t jobs = first.executable->cudaKernels.size() * 2;  // a cubin and PTX per kernel
  CHECK(first.stats.nvrtcCompiled == jobs);
  CHECK(first.stats.nvrtcCached == 0);
  codegen::LoweredModel second = compileOnce();
  CHECK(second.stats.nvrtcCompiled == 0);
  CHECK(second.stats.nvrtcCached == jobs);
  for (size_t k = 0; k < jobs / 2; ++k) {
    CHECK(second.executable->cudaKernels[k].cubins == first.executable->cudaKernels[k].cubins);
    CHECK(second.executable->cudaKernels[k].ptx == first.executable->cudaKernels[k].ptx);
  }
  // Truncate one entry and flip a byte in another: both are compiled again, the rest still hit.
  const codegen::NvrtcCache cache(cuda.cacheDir);
  auto source = codegen::emitCuda(first.kernels[0].kernel, codegen::fusedOpsOf(*first.kernels[0].group));
  REQUIRE(source.isOk());
  const std::string cubinEntry = cache.pathOf(codegen::NvrtcCache::keyOf(source->source, "sm_80"));
  const std::string ptxEntry = cache.pathOf(codegen::NvrtcCache::keyOf(source->source, "compute_80"));
  REQUIRE(std::filesystem::exists(cubinEntry));
  REQUIRE(std::filesystem::exists(ptxEntry));
  std::filesystem::resize_file(cubinEntry, std::filesystem::file_size(cubinEntry) / 2);
  {
    std::fstream f(ptxEntry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('#');
  }
  codegen::LoweredModel third = compileOnce();
  CHECK(third.stats.nvrtcCompiled == 2);
  CHECK(third.stats.nvrtcCached == jobs - 2);
  CHECK(third.executable->cudaKernels[0].cubins == first.executable->cudaKernels[0].cubins);
  CHECK(third.executable->cudaKernels[0].ptx == first.executable->cudaKernels[0].ptx);
  // A different source is a different key; the same source for another target too.
  CHECK(codegen::NvrtcCache::keyOf(source->source + " ", "sm_80") != codegen::NvrtcCache::keyOf(source->source, "sm_80"));
  CHECK(cache.pathOf(codegen::NvrtcCache::keyOf(source->source, "sm_90")) != cubinEntry);
  CHECK(!cache.load("never stored").has_value());
  CHECK(!codegen::NvrtcCache("").load(codegen::NvrtcCache::keyOf(source->source, "sm_80")).has_value());
}

TEST_CASE("profile() times every kernel step with events and releases them") {
  CompiledModel compiled = compile("ssdlite_tiny-raw.onnx");  // kernel steps between host steps
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  const auto shared = std::make_shared<const runtime::Executable>(std::move(*exe));
  size_t kernelSteps = 0;
  for (const runtime::KernelStep& s : shared->steps) kernelSteps += s.kind == runtime::StepKind::Kernel;
  REQUIRE(kernelSteps < shared->steps.size());
  {
    auto executor = runtime::CudaExecutor::create(shared);
    REQUIRE(executor.isOk());
    std::vector<Tensor> inputs = testing::randomInputs(compiled.module->graph(), 5);
    auto steps = (*executor)->profile(inputs, 2);
    INFO((steps.isOk() ? std::string() : steps.error().str()));
    REQUIRE(steps.isOk());
    REQUIRE(steps->size() == kernelSteps);
    uint32_t previous = 0;
    for (size_t i = 0; i < steps->size(); ++i) {
      const runtime::KernelStepTime& t = (*steps)[i];
      CHECK((i == 0 || t.step > previous));
      previous = t.step;
      REQUIRE(t.step < shared->steps.size());
      const runtime::KernelStep& step = shared->steps[t.step];
      CHECK(step.kind == runtime::StepKind::Kernel);
      CHECK(t.kernel == shared->kernelNames[step.kernel]);
      CHECK(t.grid == shared->cudaKernels[step.kernel].grid);
      CHECK(t.block == shared->cudaKernels[step.kernel].block);
      CHECK(t.meanMs >= 0);
    }
    // Profiling leaves the executor as it was: a run after it is still right.
    auto out = (*executor)->run(inputs);
    REQUIRE(out.isOk());
    auto bad = (*executor)->profile(inputs, 0);
    REQUIRE(!bad.isOk());
    CHECK(bad.error().code() == ErrorCode::InvalidArgument);
  }
  CHECK(liveDriverObjects() == 0);  // the events too
}

namespace {

/// A counter of one of the emulated libraries (0 if it is not loaded yet: nothing has run).
template <class R>
R libraryCounter(const char* library, const char* symbol) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return 0;
  auto counter = reinterpret_cast<R (*)()>(dlsym(lib, symbol));
  REQUIRE(counter);
  R n = counter();
  dlclose(lib);
  return n;
}

/// Library calls the emulated cuBLASLt and cuDNN have run so far.
unsigned long long libraryCallsRun() {
  return libraryCounter<unsigned long long>(KILN_EMULATED_CUBLASLT, "kiln_emulated_cublaslt_matmuls") +
         libraryCounter<unsigned long long>(KILN_EMULATED_CUDNN, "kiln_emulated_cudnn_convolutions");
}

/// Loads and runs `compiled`'s artifact on the emulated driver, cuBLASLt and
/// cuDNN and checks it against the interpreter; returns the library steps it has.
size_t runWithLibrarySteps(CompiledModel& compiled, double tolerance) {
  ::setenv("KILN_CUBLASLT", KILN_EMULATED_CUBLASLT, 1);
  ::setenv("KILN_CUDNN", KILN_EMULATED_CUDNN, 1);
  auto exe = runtime::loadArtifact(compiled.artifact);  // the library calls survive the artifact file
  REQUIRE(exe.isOk());
  size_t librarySteps = 0;
  for (const runtime::KernelStep& s : exe->steps) librarySteps += s.kind == runtime::StepKind::Library;
  {
    auto model = Model::load(compiled.artifact);
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    std::vector<Tensor> inputs = testing::randomInputs(compiled.module->graph(), 11);
    const unsigned long long before = libraryCallsRun();
    auto got = (*model)->run(inputs);
    INFO((got.isOk() ? std::string() : got.error().str()));
    REQUIRE(got.isOk());
    CHECK(libraryCallsRun() - before == librarySteps);  // every library step ran in its library
    runtime::Interpreter reference(compiled.module->graph());
    auto want = reference.run(std::vector<RuntimeValue>(inputs.begin(), inputs.end()));
    REQUIRE(want.isOk());
    requireClose(*got, *want, tolerance, false);
  }
  CHECK(liveDriverObjects() == 0);
  // Descriptors and handles released.
  CHECK(libraryCounter<int>(KILN_EMULATED_CUBLASLT, "kiln_emulated_cublaslt_live_objects") == 0);
  CHECK(libraryCounter<int>(KILN_EMULATED_CUDNN, "kiln_emulated_cudnn_live_objects") == 0);
  return librarySteps;
}

/// `text` with every "T[" made `type`[, compiled with every library tactic the groups allow.
CompiledModel compileWithLibraries(std::string text, const std::string& type, const std::string& name) {
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at)) text.replace(at, 1, type);
  codegen::CompileOptions options;
  options.libraryTactics = codegen::LibraryTactics::All;
  return compileModule(testing::parse(text), name + "-" + type, options);
}

}  // namespace

TEST_CASE("matmuls run as cuBLASLt library steps (bias, residual, ReLU, transposes, strided batches) and match the interpreter") {
  for (const char* type : {"f32", "f16", "bf16"}) {
    INFO(type);
    std::string text = R"(module @m {
  graph @main(%x: T[2,6,12], %w: T[12,9], %b: T[9], %z: T[2,9,3], %y: T[5,7], %v: T[4,5], %c: T[4], %p: T[3,5], %k: T[12,12], %e: T[12], %d: T[7,12], %f: T[7]) {
    %m = MatMul(%x, %w) : T[2,6,9]
    %a = Add(%m, %b) : T[2,6,9]
    %r = Relu(%a) : T[2,6,9]
    %s = Softmax(%r) {axis = -1} : T[2,6,9]
    %q = MatMul(%s, %z) : T[2,6,3]
    %g = Gemm(%y, %v, %c) {transA = 1, transB = 1, alpha = 0.5} : T[7,4]
    %h = Relu(%g) : T[7,4]
    %u = MatMul(%q, %p) : T[2,6,5]
    %n = Relu(%u) : T[2,6,5]
    %o = MatMul(%x, %k) : T[2,6,12]
    %ob = Add(%o, %e) : T[2,6,12]
    %or = Add(%x, %ob) : T[2,6,12]
    %dn = kiln::Dense(%x, %d) : T[2,6,7]
    %db = Add(%dn, %f) : T[2,6,7]
    return %n, %h, %or, %db
  }
})";
    CompiledModel compiled = compileWithLibraries(text, type, "library");
    auto exe = runtime::loadArtifact(compiled.artifact);
    REQUIRE(exe.isOk());
    // What each call is: the batch folded into rows, a strided batch, Gemm's transposes and alpha, each epilogue.
    std::multiset<std::string> calls;
    for (const runtime::LibraryCall& c : exe->libraryCalls)
      calls.insert(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                   std::to_string(c.k) + (c.transA ? " tA" : "") + (c.transB ? " tB" : "") + (c.batchB ? "" : " B2d") +
                   " a=" + std::to_string(c.alpha).substr(0, 3) + " " + runtime::libraryEpilogueName(c.epilogue) +
                   (c.residual ? "+residual" : ""));
    // The last: BERT's output projections, a bias and the residual stream added (cuBLASLt's C, beta 1).
    CHECK(calls == std::multiset<std::string>{"1x12x9x12 B2d a=1.0 bias+relu", "2x6x3x9 a=1.0 none",
                                               "1x7x4x5 tA tB a=0.5 bias+relu", "1x12x5x3 B2d a=1.0 relu",
                                               "1x12x12x12 B2d a=1.0 bias+residual", "1x12x7x12 tB B2d a=1.0 bias"});
    CHECK(runWithLibrarySteps(compiled, std::string(type) == "f32" ? 1e-5 : 2e-2) == 6);
  }
}

TEST_CASE("a matmul whose epilogue goes past what cuBLASLt fuses runs as a library step and a kernel for the rest") {
  // BERT's FFN up projection: a bias, then the exact (erf) GELU, which no cuBLASLt epilogue computes.
  const std::string gelu = R"(module @m {
  graph @main(%x: T[2,6,12], %w: T[12,9], %b: T[9], %r: T[1], %h: T[1], %o: T[1]) {
    %m = MatMul(%x, %w) : T[2,6,9]
    %a = Add(%m, %b) : T[2,6,9]
    %d = Div(%a, %r) : T[2,6,9]
    %e = Erf(%d) : T[2,6,9]
    %f = Add(%e, %o) : T[2,6,9]
    %g = Mul(%a, %f) : T[2,6,9]
    %y = Mul(%g, %h) : T[2,6,9]
    return %y
  }
})";
  for (const char* type : {"f32", "f16"}) {
    INFO(type);
    CompiledModel compiled = compileWithLibraries(gelu, type, "split");
    auto exe = runtime::loadArtifact(compiled.artifact);
    REQUIRE(exe.isOk());
    REQUIRE(exe->libraryCalls.size() == 1);
    CHECK(exe->libraryCalls[0].describe() == std::string(type) + " 1x12x9x12 bias");
    size_t kernelSteps = 0;
    for (const runtime::KernelStep& s : exe->steps) kernelSteps += s.kind == runtime::StepKind::Kernel;
    CHECK(kernelSteps == 1);  // the GELU, reading the library step's result
    CHECK(runWithLibrarySteps(compiled, std::string(type) == "f32" ? 1e-5 : 2e-2) == 1);
  }
  // Off keeps the group whole; auto leaves a product this small generated; a tail that also reads the product
  // before its bias (not the head's result) is not split.
  std::string text = gelu;
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at)) text.replace(at, 1, "f32");
  auto m = testing::parse(text);
  auto plan = codegen::FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  REQUIRE(plan->groups().size() == 1);
  const codegen::KernelGroup& whole = plan->groups()[0];
  CHECK(!codegen::splitForLibrary(*plan, whole, codegen::LibraryTactics::Off, false).has_value());
  CHECK(!codegen::splitForLibrary(*plan, whole, codegen::LibraryTactics::Auto, false).has_value());
  CHECK(codegen::splitForLibrary(*plan, whole, codegen::LibraryTactics::All, false).has_value());
  std::string early = text;
  early.replace(early.find("%g = Mul(%a, %f)"), 16, "%g = Mul(%m, %f)");
  auto m2 = testing::parse(early);
  auto plan2 = codegen::FusionPlan::build(m2->graph());
  REQUIRE(plan2.isOk());
  for (const codegen::KernelGroup& g : plan2->groups())
    if (g.role == codegen::KernelRole::Matmul) CHECK(!codegen::splitForLibrary(*plan2, g, codegen::LibraryTactics::All, false).has_value());
}

TEST_CASE("convolutions run as cuDNN library steps (bias, residual, ReLU, groups, strides, dilations) and match the interpreter") {
  for (const char* type : {"f32", "f16", "bf16"}) {
    INFO(type);
    // Each epilogue path: fused bias+relu, bias+residual+relu (z), bias alone and relu alone (separate calls),
    // a channel-vector Add as the bias plus a residual without ReLU; depthwise stride 2, strides 2x1, dilations 2x1, groups 2.
    std::string text = R"(module @m {
  graph @main(%x: T[2,4,9,9], %w: T[8,4,3,3], %b: T[8], %v: T[8,1,3,3], %c: T[1,8,1,1], %u: T[6,4,3,3], %p: T[6,3,3,3], %q: T[6], %s: T[8,8,3,3], %t: T[8,4,3,3]) {
    %a = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]} : T[2,8,9,9]
    %r = Relu(%a) : T[2,8,9,9]
    %d = Conv(%r, %v, %b) {group = 8, strides = [2, 2], pads = [1, 1, 1, 1]} : T[2,8,5,5]
    %e = Conv(%x, %t, %b) {pads = [1, 1, 1, 1]} : T[2,8,9,9]
    %f = Add(%e, %r) : T[2,8,9,9]
    %g = Relu(%f) : T[2,8,9,9]
    %h = Conv(%x, %w) {strides = [2, 1]} : T[2,8,4,7]
    %i = Relu(%h) : T[2,8,4,7]
    %j = Conv(%g, %s) {pads = [1, 1, 1, 1]} : T[2,8,9,9]
    %k = Add(%j, %c) : T[2,8,9,9]
    %l = Add(%k, %r) : T[2,8,9,9]
    %m = Conv(%x, %u) {dilations = [2, 1], pads = [2, 1, 2, 1]} : T[2,6,9,9]
    %n = Conv(%m, %p, %q) {group = 2} : T[2,6,7,7]
    return %d, %i, %l, %n
  }
})";
    CompiledModel compiled = compileWithLibraries(text, type, "cudnn");
    auto exe = runtime::loadArtifact(compiled.artifact);
    REQUIRE(exe.isOk());
    std::multiset<std::string> calls;
    for (const runtime::LibraryCall& c : exe->libraryCalls) {
      CHECK(c.routine == runtime::LibraryRoutine::CudnnConv);
      calls.insert(c.describe().substr(c.describe().find(" conv ") + 6));
    }
    CHECK(calls == std::multiset<std::string>{
                       "2x4x9x9 -> 8 3x3 s1x1 p1x1 d1x1 g1 bias+relu", "2x8x9x9 -> 8 3x3 s2x2 p1x1 d1x1 g8 bias",
                       "2x4x9x9 -> 8 3x3 s1x1 p1x1 d1x1 g1 bias+relu+residual", "2x4x9x9 -> 8 3x3 s2x1 p0x0 d1x1 g1 relu",
                       "2x8x9x9 -> 8 3x3 s1x1 p1x1 d1x1 g1 bias+residual", "2x4x9x9 -> 6 3x3 s1x1 p2x1 d2x1 g1 none",
                       "2x6x9x9 -> 6 3x3 s1x1 p0x0 d1x1 g2 bias"});
    // bf16 keeps 8 bits: three chained convs of 36-72 products differ from the interpreter's roundings by a few ulps.
    const double tolerance = std::string(type) == "f32" ? 1e-5 : std::string(type) == "f16" ? 3e-2 : 1e-1;
    CHECK(runWithLibrarySteps(compiled, tolerance) == 7);
    if (std::string(type) != "f32") {
      // cuDNN refusing calls (as cuDNN 9 does for some f16 convolutions): the load-time trial switches those steps to
      // cudnnConvolutionForward + cudnnAddTensor + cudnnActivationForward, or to the next algorithm, with the same results.
      for (const char* refusal : {"KILN_EMULATED_CUDNN_REFUSE_FUSED", "KILN_EMULATED_CUDNN_REFUSE_PRECOMP"}) {
        INFO(refusal);
        ::setenv(refusal, "1", 1);
        CHECK(runWithLibrarySteps(compiled, tolerance) == 7);
        ::unsetenv(refusal);
      }
    }
  }
}

TEST_CASE("tiny zoo models with every matmul and convolution in a library match the interpreter") {
  for (const char* file : {"bert_tiny-raw.onnx", "mobilenet_tiny-raw.onnx", "resnet_tiny-raw.onnx"}) {
    INFO(file);
    codegen::CompileOptions options;
    options.libraryTactics = codegen::LibraryTactics::All;
    CompiledModel compiled = compile(file, options);
    CHECK(runWithLibrarySteps(compiled, 1e-4) > 0);
  }
}

TEST_CASE("library steps are captured into the CUDA graphs, and run between them with the same results where a library refuses capture") {
  ::setenv("KILN_CUBLASLT", KILN_EMULATED_CUBLASLT, 1);
  ::setenv("KILN_CUDNN", KILN_EMULATED_CUDNN, 1);
  codegen::CompileOptions options;
  options.libraryTactics = codegen::LibraryTactics::All;
  CompiledModel compiled = compile("resnet_tiny-raw.onnx", options);
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  auto shared = std::make_shared<const runtime::Executable>(std::move(*exe));
  size_t librarySteps = 0;
  for (const runtime::KernelStep& s : shared->steps) librarySteps += s.kind == runtime::StepKind::Library;
  REQUIRE(librarySteps > 1);
  const size_t withCapture = runtime::kernelSegments(*shared, true).size();
  const size_t withoutCapture = runtime::kernelSegments(*shared, false).size();
  CHECK(withCapture == 1);  // no host steps: the whole model is one graph
  CHECK(withoutCapture > 1);
  std::vector<Tensor> inputs = testing::randomInputs(compiled.module->graph(), 5);

  // Two runs each: the second replays the same graphs, so every captured library call runs again.
  auto runTwice = [&](size_t graphsPerRun, const std::string& summary) {
    auto executor = runtime::CudaExecutor::create(shared);
    INFO((executor.isOk() ? std::string() : executor.error().str()));
    REQUIRE(executor.isOk());
    CHECK_THAT((*executor)->graphSummary(), Catch::StartsWith(summary));
    std::vector<Tensor> out;
    for (int run = 0; run < 2; ++run) {
      const unsigned long long graphsBefore = graphLaunches(), callsBefore = libraryCallsRun();
      auto got = (*executor)->run(inputs);
      INFO((got.isOk() ? std::string() : got.error().str()));
      REQUIRE(got.isOk());
      CHECK(graphLaunches() - graphsBefore == graphsPerRun);
      CHECK(libraryCallsRun() - callsBefore == librarySteps);
      out = std::move(*got);
    }
    return out;
  };
  // profile() replays each library call from a graph of its own (its host-side cost is not device time);
  // where the library refuses capture, the calls are launched directly.
  auto profiledLibraryGraphs = [&]() {
    auto executor = runtime::CudaExecutor::create(shared);
    REQUIRE(executor.isOk());
    const unsigned long long before = graphLaunches();
    auto steps = (*executor)->profile(inputs, 2);
    INFO((steps.isOk() ? std::string() : steps.error().str()));
    REQUIRE(steps.isOk());
    CHECK(steps->size() == shared->steps.size());  // every step is a kernel or a library call
    return graphLaunches() - before;
  };
  const std::string n = std::to_string(librarySteps);
  std::vector<Tensor> captured = runTwice(1, "1 CUDA graph per run (" + n + " library calls captured in them)");
  CHECK(profiledLibraryGraphs() == 2 * librarySteps);
  ::setenv("KILN_EMULATED_LIBRARY_CAPTURE", "0", 1);  // the emulated libraries' calls refuse capture
  CHECK(profiledLibraryGraphs() == 0);
  // The refusal names the call and the library's error (the stem's convolution is the first one captured).
  std::vector<Tensor> between = runTwice(withoutCapture, std::to_string(withoutCapture) + " CUDA graphs per run; " + n +
                                                             " library calls run between them (capture refused: "
                                                             "cudnnConvolutionBiasActivationForward " +
                                                             shared->libraryCalls[0].name + " failed: CUDNN_STATUS_EXECUTION_FAILED)");
  ::unsetenv("KILN_EMULATED_LIBRARY_CAPTURE");

  runtime::Interpreter reference(compiled.module->graph());
  auto want = reference.run(std::vector<RuntimeValue>(inputs.begin(), inputs.end()));
  REQUIRE(want.isOk());
  requireClose(captured, *want, 1e-4, false);
  REQUIRE(captured.size() == between.size());
  for (size_t o = 0; o < captured.size(); ++o) {
    REQUIRE(captured[o].byteSize() == between[o].byteSize());
    CHECK(std::memcmp(captured[o].rawData(), between[o].rawData(), captured[o].byteSize()) == 0);
  }
  CHECK(liveDriverObjects() == 0);  // the captured graphs (and the refused capture's) released
}

TEST_CASE("library tactics: what cuBLASLt or cuDNN cannot fuse stays generated, auto keeps small products and depthwise convs generated") {
  auto groupsOf = [](const std::string& text) {
    auto m = testing::parse(text);
    auto plan = codegen::FusionPlan::build(m->graph());
    REQUIRE(plan.isOk());
    std::vector<std::optional<codegen::LibraryMatch>> matches;
    for (const codegen::KernelGroup& g : plan->groups())
      if (g.role == codegen::KernelRole::Matmul) matches.push_back(codegen::cublasLtCallFor(g, false));
    return std::make_pair(std::move(m), std::move(matches));
  };
  // A bias per row (not per column), a broadcast batch of A, a Sigmoid epilogue, an integer product: no library call.
  auto [m1, none] = groupsOf(R"(module @m {
  graph @main(%x: f32[6,12], %w: f32[12,9], %r: f32[6,1], %a: f32[12,9], %b: f32[3,9,4], %s: f32[4,5], %t: f32[5,3], %i: i32[4,5], %j: i32[5,3]) {
    %m = MatMul(%x, %w) : f32[6,9]
    %y = Add(%m, %r) : f32[6,9]
    %q = MatMul(%a, %b) : f32[3,12,4]
    %g = MatMul(%s, %t) : f32[4,3]
    %e = Sigmoid(%g) : f32[4,3]
    %k = MatMul(%i, %j) : i32[4,3]
    return %y, %q, %e, %k
  }
})");
  REQUIRE(none.size() == 4);
  for (const auto& match : none) CHECK(!match.has_value());
  // Under auto: BERT-base's projection (128 x 768 x 768) and a classifier (1 x 2048 x 1000) are library calls; a
  // 4 x 4 x 4 product and BERT's per-head attention products at batch 1 (12 x 128 x 128 x 64, 25 MFLOP) are not.
  auto [m2, two] = groupsOf(R"(module @m {
  graph @main(%x: f16[128,768], %w: f16[768,768], %s: f16[4,4], %t: f16[4,4], %c: f32[1,2048], %k: f32[2048,1000], %q: f32[12,128,64], %p: f32[12,64,128]) {
    %m = MatMul(%x, %w) : f16[128,768]
    %g = MatMul(%s, %t) : f16[4,4]
    %f = MatMul(%c, %k) : f32[1,1000]
    %a = MatMul(%q, %p) : f32[12,128,128]
    return %m, %g, %f, %a
  }
})");
  REQUIRE(two.size() == 4);
  for (const auto& match : two) REQUIRE(match.has_value());
  CHECK(codegen::useLibrary(codegen::LibraryTactics::Auto, *two[0]));
  CHECK(!codegen::useLibrary(codegen::LibraryTactics::Auto, *two[1]));
  CHECK(codegen::useLibrary(codegen::LibraryTactics::Auto, *two[2]));
  CHECK(!codegen::useLibrary(codegen::LibraryTactics::Auto, *two[3]));
  CHECK(codegen::useLibrary(codegen::LibraryTactics::All, *two[1]));
  CHECK(!codegen::useLibrary(codegen::LibraryTactics::Off, *two[0]));
  CHECK(!codegen::parseLibraryTactics("sometimes").isOk());
  // Convolutions: asymmetric padding, a Sigmoid epilogue, a 1-D conv, a bias per row, a residual after the ReLU: generated.
  auto plan3 = testing::parse(R"(module @m {
  graph @main(%x: f32[1,4,8,8], %w: f32[4,4,3,3], %b: f32[1,1,1,8], %z: f32[1,4,8,8], %s: f32[1,4,8], %v: f32[4,4,3]) {
    %a = Conv(%x, %w) {pads = [0, 0, 2, 2]} : f32[1,4,8,8]
    %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %d = Sigmoid(%c) : f32[1,4,8,8]
    %e = Conv(%s, %v) {pads = [1, 1]} : f32[1,4,8]
    %f = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %g = Add(%f, %b) : f32[1,4,8,8]
    %h = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %i = Relu(%h) : f32[1,4,8,8]
    %j = Add(%i, %z) : f32[1,4,8,8]
    return %a, %d, %e, %g, %j
  }
})");
  auto convPlan = codegen::FusionPlan::build(plan3->graph());
  REQUIRE(convPlan.isOk());
  size_t convGroups = 0;
  for (const codegen::KernelGroup& g : convPlan->groups()) {
    if (g.role != codegen::KernelRole::Conv) continue;
    ++convGroups;
    INFO(g.name());
    CHECK(!codegen::libraryCallFor(g, false).has_value());
  }
  CHECK(convGroups == 5);
  // Under auto (useLibrary's thresholds): at batch 1 3x3 convs go to cuDNN (ResNet-50's
  // layer-3 one, 14x14, and its layer-1 one, 56x56, in f16), as do 1x1 convs reducing over 256 channels or more
  // (MobileNetV2's 384 -> 96 at 14x14 in f16) and f32 ones from 100 MFLOP (ResNet-50's 64 -> 256 at 56x56); 1x1
  // convs reducing over 64 channels stay generated in f16 and, under 100 MFLOP, in f32; at batch 32 a 1x1 conv of
  // 231 MFLOP (32 x 144 x 28 x 28 -> 32) goes to cuDNN, and a depthwise one stays generated.
  auto plan4 = testing::parse(R"(module @m {
  graph @main(%x: f16[1,256,14,14], %w: f16[256,256,3,3], %y: f16[1,64,56,56], %v: f16[64,64,3,3], %u: f16[256,64,1,1], %p: f32[1,64,56,56], %q: f32[64,64,1,1], %r: f32[256,64,1,1], %k: f16[1,384,14,14], %l: f16[96,384,1,1], %z: f32[32,144,28,28], %t: f32[32,144,1,1], %d: f32[144,1,3,3]) {
    %a = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f16[1,256,14,14]
    %b = Conv(%y, %v) {pads = [1, 1, 1, 1]} : f16[1,64,56,56]
    %c = Conv(%y, %u) : f16[1,256,56,56]
    %g = Conv(%p, %q) : f32[1,64,56,56]
    %h = Conv(%p, %r) : f32[1,256,56,56]
    %i = Conv(%k, %l) : f16[1,96,14,14]
    %e = Conv(%z, %t) : f32[32,32,28,28]
    %f = Conv(%z, %d) {group = 144, pads = [1, 1, 1, 1]} : f32[32,144,28,28]
    return %a, %b, %c, %g, %h, %i, %e, %f
  }
})");
  auto autoPlan = codegen::FusionPlan::build(plan4->graph());
  REQUIRE(autoPlan.isOk());
  std::vector<bool> chosen;
  for (const codegen::KernelGroup& g : autoPlan->groups()) {
    INFO(g.name() << " role " << int(g.role));
    std::optional<codegen::LibraryMatch> match = codegen::libraryCallFor(g, false);
    REQUIRE(match.has_value());
    chosen.push_back(codegen::useLibrary(codegen::LibraryTactics::Auto, *match));
  }
  CHECK(chosen == std::vector<bool>{true, true, false, false, true, true, true, false});
}

TEST_CASE("a library step whose operands do not fit its call is a corrupt executable") {
  codegen::CompileOptions options;
  options.libraryTactics = codegen::LibraryTactics::All;
  CompiledModel compiled = compile("mobilenet_tiny-raw.onnx", options);
  auto exe = runtime::loadArtifact(compiled.artifact);
  REQUIRE(exe.isOk());
  REQUIRE(exe->validate().isOk());
  // One cuBLASLt and one cuDNN call, each with a shape its operands do not have.
  auto firstOf = [&](runtime::LibraryRoutine r) {
    auto it = std::find_if(exe->libraryCalls.begin(), exe->libraryCalls.end(),
                           [&](const runtime::LibraryCall& c) { return c.routine == r; });
    REQUIRE(it != exe->libraryCalls.end());
    return size_t(it - exe->libraryCalls.begin());
  };
  const size_t matmul = firstOf(runtime::LibraryRoutine::CublasLtMatmul), conv = firstOf(runtime::LibraryRoutine::CudnnConv);
  for (auto [call, change] : std::vector<std::pair<size_t, std::function<void(runtime::LibraryCall&)>>>{
           {matmul, [](runtime::LibraryCall& c) { c.k += 1; }},
           {conv, [](runtime::LibraryCall& c) { c.conv.kernelW += 1; }},
           {conv, [](runtime::LibraryCall& c) { c.residual = !c.residual; }}}) {
    runtime::Executable wrongShape = *exe;
    change(wrongShape.libraryCalls[call]);
    Status s = wrongShape.validate();
    REQUIRE(!s.isOk());
    CHECK(s.error().code() == ErrorCode::ArtifactCorrupt);
    CHECK(s.error().message().find("library call " + exe->libraryCalls[call].name + " takes") != std::string::npos);
  }
  // A convolution whose window does not fit, or whose groups do not divide its channels, is malformed.
  for (auto change : std::vector<std::function<void(runtime::ConvGeometry&)>>{
           [](runtime::ConvGeometry& g) { g.kernelH = g.height + 2 * g.padH + 1; },
           [](runtime::ConvGeometry& g) { g.groups = g.channels + 1; }, [](runtime::ConvGeometry& g) { g.strideW = 0; }}) {
    runtime::Executable malformed = *exe;
    change(malformed.libraryCalls[conv].conv);
    Status s = malformed.validate();
    REQUIRE(!s.isOk());
    CHECK(s.error().message().find("has a bad shape or epilogue") != std::string::npos);
  }
  runtime::Executable onCpu = *exe;
  onCpu.target = "cpu";
  onCpu.cudaKernels.clear();
  REQUIRE(!onCpu.validate().isOk());
  CHECK(onCpu.validate().error().message().find("a library step in a cpu executable") != std::string::npos);
}
