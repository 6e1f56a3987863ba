//===- tests/unit/TuningCudaTest.cpp - The CUDA measurer without a GPU -----===//
//
// The CUDA measurer (lib/tune/CudaMeasurer.cpp, runtime::CudaKernelTimer)
// end to end on the emulated driver (tests/emulation/EmulatedDriver.cpp):
// candidates of a convolution task are lowered for the GPU, printed as CUDA
// C and compiled by NVRTC (real cubins), loaded, launched, checked against
// the interpreter and timed with CUDA events (warm and with the L2 flush);
// the driver runs an emulation library built from the same CUDA C. An
// unknown knob value is a lower error, a reference that disagrees makes a
// candidate wrong, and a candidate the driver cannot load is a run error
// that does not stop the measurement.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <cstdlib>

#include "CudaEmulator.h"
#include "ScratchDir.h"
#include "kiln/codegen/CudaCompiler.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/ir/Parser.h"
#include "kiln/tune/Measurer.h"

using namespace kiln;
using namespace kiln::tune;

namespace {

const char* kConvBlock = R"(module @m {
  graph @main(%x: f32[1,8,6,6]) {
    %w = Constant() {value = tensor<f32[8,8,1,1]: [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.5, 0.25, 0.3, 0.2, -0.1, 0.4, 0.9, -0.6, 0.7, 0.05, 0.1, 0.2, 0.3, 0.4, -0.5, 0.6, -0.7, 0.8, 0.25, -0.5, 0.75, -1.0, 0.6, 0.4, 0.2, -0.3, 0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.5, 0.25, 0.3, 0.2, -0.1, 0.4, 0.9, -0.6, 0.7, 0.05, 0.1, 0.2, 0.3, 0.4, -0.5, 0.6, -0.7, 0.8, 0.25, -0.5, 0.75, -1.0, 0.6, 0.4, 0.2, -0.3]>} : f32[8,8,1,1]
    %c = Conv(%x, %w) : f32[1,8,6,6]
    %r = Relu(%c) : f32[1,8,6,6]
    return %r
  }
})";

}  // namespace

TEST_CASE("the CUDA measurer builds, checks and times candidates (emulated driver)") {
  auto m = ir::parseModule(kConvBlock, "tune-cuda.kir");
  REQUIRE(m.isOk());
  ir::Graph& g = (*m)->graph();
  auto tasks = extractTasks(g, codegen::KernelTarget::Gpu);
  INFO((tasks.isOk() ? std::string() : tasks.error().str()));
  REQUIRE(tasks.isOk());
  REQUIRE(tasks->tasks.size() == 1);
  const TuningTask& t = tasks->tasks.front();
  CHECK(t.signature.find("-cuda-") != std::string::npos);
  REQUIRE(t.space.size() >= 3);
  std::vector<float> x(8 * 6 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 17) - 8) / 8.0f;
  auto reference = codegen::referenceValues(g, {Tensor::fromVector<float>({1, 8, 6, 6}, x)});
  REQUIRE(reference.isOk());

  // Candidates 0..2 as the measurer names them (tune_<i>); the emulation library holds their CUDA C.
  std::vector<codegen::Config> configs{t.space.defaultConfig(), t.space.configAt(1), t.space.configAt(2)};
  std::vector<codegen::CudaKernel> sources;
  for (size_t i = 0; i < configs.size(); ++i) {
    auto lowered = codegen::lowerGroup(*t.groups.front(), codegen::KernelTarget::Gpu, &configs[i]);
    REQUIRE(lowered.isOk());
    lowered->kernel.name = "tune_" + std::to_string(i);
    auto source = codegen::emitCuda(lowered->kernel, codegen::fusedOpsOf(*t.groups.front()));
    REQUIRE(source.isOk());
    sources.push_back(std::move(*source));
  }
  auto lib = emulation::EmulatedKernels::build(sources, testing::scratchDir("tune-cuda"));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  ::setenv("KILN_CUDA_DRIVER", KILN_EMULATED_DRIVER, 1);
  ::setenv("KILN_EMULATED_KERNELS", (*lib)->libraryPath().c_str(), 1);
  ::unsetenv("KILN_EMULATED_SM");

  MeasureOptions o;
  o.repeats = 2;
  o.minSampleMs = 0.05;
  auto measurer = createCudaMeasurer(*reference, o);
  INFO((measurer.isOk() ? std::string() : measurer.error().str()));
  REQUIRE(measurer.isOk());
  CHECK((*measurer)->target() == "cuda");
  CHECK((*measurer)->device() == "kiln CPU emulation (sm_90)");
  CHECK((*measurer)->toolkit().find("NVRTC") != std::string::npos);

  codegen::Config bad = t.space.defaultConfig();
  bad.begin()->second = 12345;  // not a value of that knob
  auto results = (*measurer)->measure(t, {configs[0], configs[1], configs[2], bad});
  REQUIRE(results.isOk());
  REQUIRE(results->size() == 4);
  for (size_t i = 0; i < 3; ++i) {
    INFO("candidate " << i << ": " << (*results)[i].error);
    CHECK((*results)[i].ok());
    CHECK((*results)[i].ms > 0);
    CHECK((*results)[i].maxError < 1e-5);
    CHECK((*results)[i].buildMs > 0);
  }
  CHECK((*results)[3].status == MeasureStatus::LowerError);

  SECTION("cold caches: an L2 flush before every timed launch") {
    MeasureOptions cold = o;
    cold.flushL2 = true;
    auto flushed = createCudaMeasurer(*reference, cold);
    REQUIRE(flushed.isOk());
    auto r = (*flushed)->measure(t, {configs[0]});
    REQUIRE(r.isOk());
    INFO(r->front().error);
    CHECK(r->front().ok());
    CHECK(r->front().ms > 0);
  }
  SECTION("a reference that disagrees makes the candidate wrong") {
    auto wrongRef = *reference;
    for (auto& [name, value] : wrongRef)
      if (name == "r") value = Tensor::fromVector<float>(value.dims(), std::vector<float>(value.numElements(), 42.0f));
    auto wrong = createCudaMeasurer(wrongRef, o);
    REQUIRE(wrong.isOk());
    auto r = (*wrong)->measure(t, {configs[0]});
    REQUIRE(r.isOk());
    CHECK(r->front().status == MeasureStatus::WrongOutput);
  }
  SECTION("a candidate the driver cannot load is a run error, the others are still measured") {
    // Candidate 3 (tune_3) has no kernel in the emulation library: the driver's module load finds no function.
    codegen::Config fourth = t.space.configAt(3);
    auto r = (*measurer)->measure(t, {configs[0], configs[1], configs[2], fourth});
    REQUIRE(r.isOk());
    CHECK((*r)[0].ok());
    CHECK((*r)[3].status == MeasureStatus::RunError);
    CHECK((*r)[3].error.find("tune_3") != std::string::npos);
  }
}
