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
// that does not stop the measurement. Each kernel's library call (the
// emulated cuDNN and cuBLASLt) is measured by the tuning loop beside its
// kernel, and compiling with the database picks library or generated code
// by what was measured; records of another library version, or of a
// kernel no call computes, are set aside. Kernels and library calls are
// timed as replays of a captured CUDA graph, as a model runs them (a call
// refusing capture is launched directly).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "CudaEmulator.h"
#include "EmulatedDriverCounters.h"
#include "ScratchDir.h"
#include "TemplateCases.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/Tuner.h"

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

/// A matmul whose bias and ReLU cuBLASLt fuses (operands are inputs: no large constants).
const char* kMatmulBlock = R"(module @m {
  graph @main(%a: f32[16,32], %w: f32[32,64], %b: f32[64]) {
    %m = MatMul(%a, %w) : f32[16,64]
    %y = Add(%m, %b) : f32[16,64]
    %z = Relu(%y) : f32[16,64]
    return %z
  }
})";

/// The emulated driver running `sources`, with the emulated cuBLASLt and cuDNN.
void useEmulation(const std::vector<codegen::CudaKernel>& sources, const std::string& name) {
  auto lib = emulation::EmulatedKernels::build(sources, testing::scratchDir(name));
  INFO((lib.isOk() ? std::string() : lib.error().str()));
  REQUIRE(lib.isOk());
  static std::vector<std::unique_ptr<emulation::EmulatedKernels>> keep;  // the driver loads it during the test
  keep.push_back(std::move(*lib));
  ::setenv("KILN_CUDA_DRIVER", KILN_EMULATED_DRIVER, 1);
  ::setenv("KILN_EMULATED_KERNELS", keep.back()->libraryPath().c_str(), 1);
  ::setenv("KILN_CUBLASLT", KILN_EMULATED_CUBLASLT, 1);
  ::setenv("KILN_CUDNN", KILN_EMULATED_CUDNN, 1);
  ::unsetenv("KILN_EMULATED_SM");
}

/// A model with one GPU tuning task.
struct OneTask {
  std::unique_ptr<ir::Module> module;
  TaskSet tasks;
  ir::Graph& graph() { return module->graph(); }
  const TuningTask& task() const { return tasks.tasks.front(); }
};

OneTask oneTask(const char* text, const char* name) {
  auto m = ir::parseModule(text, name);
  REQUIRE(m.isOk());
  auto tasks = extractTasks((*m)->graph(), codegen::KernelTarget::Gpu);
  INFO((tasks.isOk() ? std::string() : tasks.error().str()));
  REQUIRE(tasks.isOk());
  REQUIRE(tasks->tasks.size() == 1);
  return {std::move(*m), std::move(*tasks)};
}

/// Short samples: the emulation's times mean nothing, only that they are taken.
MeasureOptions quickTiming() {
  MeasureOptions o;
  o.repeats = 2;
  o.minSampleMs = 0.05;
  return o;
}

/// `reference` with the value `name` replaced by 42s, which no kernel or call computing it matches.
std::map<std::string, Tensor> withWrongValue(std::map<std::string, Tensor> reference, const std::string& name) {
  Tensor& value = reference.at(name);
  value = Tensor::fromVector<float>(value.dims(), std::vector<float>(value.numElements(), 42.0f));
  return reference;
}

/// The CUDA C of `group` lowered with `config` (its template's default when null), its kernel named `name`.
codegen::CudaKernel sourceOf(const codegen::KernelGroup& group, const codegen::Config* config, const std::string& name) {
  auto lowered = codegen::lowerGroup(group, codegen::KernelTarget::Gpu, config);
  REQUIRE(lowered.isOk());
  lowered->kernel.name = name;
  auto source = codegen::emitCuda(lowered->kernel, codegen::fusedOpsOf(group));
  REQUIRE(source.isOk());
  return std::move(*source);
}

}  // namespace

TEST_CASE("the CUDA measurer builds, checks and times candidates (emulated driver)") {
  OneTask one = oneTask(kConvBlock, "tune-cuda.kir");
  ir::Graph& g = one.graph();
  const TuningTask& t = one.task();
  CHECK(t.signature.find("-cuda-") != std::string::npos);
  REQUIRE(t.space.size() >= 3);
  std::vector<float> x(8 * 6 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 17) - 8) / 8.0f;
  auto reference = codegen::referenceValues(g, {Tensor::fromVector<float>({1, 8, 6, 6}, x)});
  REQUIRE(reference.isOk());

  // Candidates 0..2 as the measurer names them (tune_<i>); the emulation library holds their CUDA C.
  std::vector<codegen::Config> configs{t.space.defaultConfig(), t.space.configAt(1), t.space.configAt(2)};
  std::vector<codegen::CudaKernel> sources;
  for (size_t i = 0; i < configs.size(); ++i) sources.push_back(sourceOf(*t.groups.front(), &configs[i], "tune_" + std::to_string(i)));
  useEmulation(sources, "tune-cuda");

  const MeasureOptions o = quickTiming();
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
    auto wrong = createCudaMeasurer(withWrongValue(*reference, "r"), o);
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

TEST_CASE("a kernel over dynamic dims is measured at the opt shape on the GPU and keyed by it (emulated driver)") {
  // The matmul block with a dynamic row count m in 1..40 (opt 12): the candidates take m as a run-time extent.
  auto m = ir::parseModule(kMatmulBlock, "tune-cuda-ranged.kir");
  REQUIRE(m.isOk());
  ir::Graph& g = (*m)->graph();
  const DimExpr rows = DimExpr::symbol("m");
  g.inputs()[0]->setType(ir::TensorType::ofExprs(DType::F32, {rows, DimExpr(32)}));
  const ir::DimRanges ranges{{"m", {1, 12, 40}}};
  REQUIRE(ir::inferTypes(g, ranges).isOk());
  auto tasks = extractTasks(g, codegen::KernelTarget::Gpu, "", ranges);
  INFO((tasks.isOk() ? std::string() : tasks.error().str()));
  REQUIRE(tasks.isOk());
  REQUIRE(tasks->tasks.size() == 1);
  const TuningTask& t = tasks->tasks.front();
  CHECK(t.description.find("@ m=12") != std::string::npos);
  // Another opt value is another kernel to tune: its records never apply here.
  const ir::DimRanges otherOpt{{"m", {1, 20, 40}}};
  auto other = extractTasks(g, codegen::KernelTarget::Gpu, "", otherOpt);
  REQUIRE(other.isOk());
  CHECK(other->tasks.front().signature != t.signature);

  std::vector<float> a(12 * 32), w(32 * 64), b(64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 13 % 11) - 5) / 8.0f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 9) - 4) / 16.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2) / 4.0f;
  auto reference = codegen::referenceValues(g, {Tensor::fromVector<float>({12, 32}, a), Tensor::fromVector<float>({32, 64}, w),
                                                Tensor::fromVector<float>({64}, b)});
  REQUIRE(reference.isOk());
  std::vector<codegen::Config> configs{t.space.defaultConfig(), t.space.configAt(1)};
  std::vector<codegen::CudaKernel> sources;
  for (size_t i = 0; i < configs.size(); ++i) sources.push_back(sourceOf(*t.groups.front(), &configs[i], "tune_" + std::to_string(i)));
  for (const codegen::CudaKernel& k : sources) CHECK(k.source.find("const long long") != std::string::npos);  // the extent
  useEmulation(sources, "tune-cuda-ranged");
  auto measurer = createCudaMeasurer(*reference, quickTiming());
  REQUIRE(measurer.isOk());
  auto results = (*measurer)->measure(t, configs);
  REQUIRE(results.isOk());
  for (const MeasureResult& r : *results) {
    INFO(r.error);
    CHECK(r.ok());
    CHECK(r.maxError < 1e-5);
  }
  SECTION("a reference that disagrees is a wrong output") {
    auto wrong = createCudaMeasurer(withWrongValue(*reference, "z"), quickTiming());
    REQUIRE(wrong.isOk());
    auto r = (*wrong)->measure(t, {configs[0]});
    REQUIRE(r.isOk());
    CHECK(r->front().status == MeasureStatus::WrongOutput);
  }
}

TEST_CASE("kernels and library calls are timed as CUDA graph replays, and a call refusing capture is launched directly") {
  // On a GPU a cuDNN call's host-side cost exceeds a small convolution's kernels: launched directly, every sample
  // would time the host (about 0.08 ms for every ResNet-50 conv at batch 1), which a model's graph does not pay.
  OneTask one = oneTask(kConvBlock, "tune-graphs.kir");
  const TuningTask& t = one.task();
  auto reference = codegen::referenceValues(one.graph(), testing::randomInputs(one.graph(), 5));
  REQUIRE(reference.isOk());
  useEmulation({sourceOf(*t.groups.front(), nullptr, "tune_0")}, "tune-graphs");
  auto measurer = createCudaMeasurer(*reference, quickTiming());
  REQUIRE(measurer.isOk());

  unsigned long long before = testing::graphLaunches();
  auto kernel = (*measurer)->measure(t, {t.space.defaultConfig()});
  REQUIRE(kernel.isOk());
  INFO(kernel->front().error);
  CHECK(kernel->front().ok());
  CHECK(testing::graphLaunches() > before);

  before = testing::graphLaunches();
  auto call = (*measurer)->measureLibrary(t);
  REQUIRE(call.isOk());
  REQUIRE(call->has_value());
  INFO((*call)->error);
  CHECK((*call)->ok());
  CHECK(testing::graphLaunches() > before);

  ::setenv("KILN_EMULATED_LIBRARY_CAPTURE", "0", 1);  // the emulated cuDNN refuses capture
  before = testing::graphLaunches();
  auto direct = (*measurer)->measureLibrary(t);
  ::unsetenv("KILN_EMULATED_LIBRARY_CAPTURE");
  REQUIRE(direct.isOk());
  REQUIRE(direct->has_value());
  INFO((*direct)->error);
  CHECK((*direct)->ok());
  CHECK((*direct)->ms > 0);
  CHECK(testing::graphLaunches() == before);
}

TEST_CASE("the tuning loop measures each kernel's library call, and compiling with its database follows the measurement") {
  OneTask one = oneTask(kConvBlock, "tune-library.kir");
  ir::Graph& g = one.graph();
  const TuningTask& t = one.task();
  auto reference = codegen::referenceValues(g, testing::randomInputs(g, 3));
  REQUIRE(reference.isOk());
  // The default schedule is the only generated kernel a run without trials measures (tune_0).
  useEmulation({sourceOf(*t.groups.front(), nullptr, "tune_0")}, "tune-library");

  const MeasureOptions mo = quickTiming();
  auto measurer = createCudaMeasurer(*reference, mo);
  REQUIRE(measurer.isOk());
  const std::string dbDir = testing::scratchDir("tune-library-db");
  std::filesystem::create_directories(dbDir);
  const std::string dbPath = dbDir + "/db.jsonl";
  std::filesystem::remove(dbPath);
  auto db = TuningDatabase::open(dbPath);
  REQUIRE(db.isOk());
  TuneOptions o;
  o.trials = 0;  // the default, the library call, and the library call again at the confirmation
  auto report = tuneTasks(one.tasks, **measurer, o, &*db);
  INFO((report.isOk() ? std::string() : report.error().str()));
  REQUIRE(report.isOk());
  const TaskOutcome& outcome = report->tasks.front();
  INFO(outcome.libraryError);
  CHECK(outcome.library == "cuDNN");
  CHECK(outcome.libraryMs > 0);
  CHECK(outcome.libraryFaster() == (outcome.libraryMs < outcome.bestMs));
  CHECK(report->libraryTasks == size_t(outcome.libraryFaster()));
  std::vector<std::string> strategies;
  for (const TuningRecord& r : db->records()) {
    strategies.push_back(r.strategy + (r.library.empty() ? "" : " " + r.library));
    if (r.library.empty()) continue;
    CHECK(r.config.empty());
    CHECK(r.status == MeasureStatus::Ok);
    CHECK(r.features.empty());  // not a configuration of the knob space: no transfer rows
    CHECK(!r.libraryVersion.empty());  // the version of the (emulated) cuDNN it ran on
    CHECK(r.libraryVersion == installedLibraryVersion("cuDNN"));
  }
  CHECK(strategies == std::vector<std::string>{"default", "library cuDNN", "confirm cuDNN"});

  // Applied: the group runs as the library call where that measured faster, generated otherwise.
  auto reopened = TuningDatabase::open(dbPath, true);
  REQUIRE(reopened.isOk());
  TuningApplication a = applyTuningDatabase(one.tasks, *reopened, "cuda", (*measurer)->device(), (*measurer)->toolkit());
  const std::string group = t.groups.front()->name();
  REQUIRE(a.libraryMeasuredFaster.count(group));
  const bool faster = a.libraryMeasuredFaster.at(group);
  CHECK(a.kernels.front().status == (faster ? ApplyStatus::Library : ApplyStatus::KeptDefault));
  CHECK(a.kernels.front().library == "cuDNN");
  codegen::CompileOptions options;
  options.libraryTactics = codegen::LibraryTactics::Auto;  // alone, auto keeps a conv this small generated
  auto plain = codegen::lowerModel(g, codegen::KernelTarget::Gpu, options);
  REQUIRE(plain.isOk());
  CHECK(plain->stats.librarySteps == 0);
  a.applyTo(options);
  auto tuned = codegen::lowerModel(g, codegen::KernelTarget::Gpu, options);
  REQUIRE(tuned.isOk());
  CHECK(tuned->stats.librarySteps == size_t(faster));

  SECTION("a matmul's cuBLASLt call is checked against the reference like a candidate") {
    OneTask mm = oneTask(kMatmulBlock, "tune-library-mm.kir");
    ir::Graph& mg = mm.graph();
    auto mref = codegen::referenceValues(mg, testing::randomInputs(mg, 5));
    REQUIRE(mref.isOk());
    auto mmeasurer = createCudaMeasurer(*mref, mo);
    REQUIRE(mmeasurer.isOk());
    auto r = (*mmeasurer)->measureLibrary(mm.task());
    REQUIRE(r.isOk());
    REQUIRE(r->has_value());
    INFO((*r)->error);
    CHECK((*r)->library == "cuBLASLt");
    CHECK((*r)->ok());
    CHECK((*r)->ms > 0);
    CHECK((*r)->maxError < 1e-5);
    CHECK((*r)->config.empty());
    // A reference that disagrees makes the call wrong, as it would a kernel.
    auto wrong = createCudaMeasurer(withWrongValue(*mref, "z"), mo);
    REQUIRE(wrong.isOk());
    auto w = (*wrong)->measureLibrary(mm.task());
    REQUIRE(w.isOk());
    REQUIRE(w->has_value());
    CHECK((*w)->status == MeasureStatus::WrongOutput);
  }
  SECTION("--no-library: no library records") {
    std::filesystem::remove(dbPath + ".none");
    auto db2 = TuningDatabase::open(dbPath + ".none");
    REQUIRE(db2.isOk());
    TuneOptions none = o;
    none.libraries = false;
    auto r = tuneTasks(one.tasks, **measurer, none, &*db2);
    REQUIRE(r.isOk());
    CHECK(r->tasks.front().library.empty());
    for (const TuningRecord& rec : db2->records()) CHECK(rec.library.empty());
  }
}

TEST_CASE("under auto a measured library choice overrides the heuristic, off and all are not overridden") {
  // BERT-base's projection shape (auto: cuBLASLt) and a 4 x 4 product (auto: generated), each its own task.
  auto m = ir::parseModule(R"(module @m {
  graph @main(%x: f16[128,768], %w: f16[768,768], %s: f16[4,4], %t: f16[4,4]) {
    %m = MatMul(%x, %w) : f16[128,768]
    %g = MatMul(%s, %t) : f16[4,4]
    return %m, %g
  }
})", "library-choice.kir");
  REQUIRE(m.isOk());
  ir::Graph& g = (*m)->graph();
  auto tasks = extractTasks(g, codegen::KernelTarget::Gpu);
  REQUIRE(tasks.isOk());
  REQUIRE(tasks->tasks.size() == 2);
  const std::string dir = testing::scratchDir("library-choice");
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/db.jsonl");
  auto db = TuningDatabase::open(dir + "/db.jsonl");
  REQUIRE(db.isOk());
  // The large product's kernel measured faster than cuBLASLt, the small one's slower, even tuned (0.008 ms).
  const double generated[] = {1.0, 0.01}, library[] = {2.0, 0.005};
  const TuningTask& small = tasks->tasks[1];
  REQUIRE(small.space.size() > 1);
  const codegen::Config tunedSmall = small.space.configAt(small.space.defaultConfig() == small.space.configAt(0) ? 1 : 0);
  for (size_t i = 0; i < 2; ++i) {
    const TuningTask& t = tasks->tasks[i];
    TuningRecord r;
    r.target = "cuda";
    r.device = "gpu";
    r.toolkit = "tk";
    r.signature = t.signature;
    r.spaceVersion = t.spaceVersion;
    r.config = t.space.defaultConfig();
    r.isDefault = true;
    r.ms = generated[i];
    REQUIRE(db->append(r).isOk());
    r.config.clear();
    r.isDefault = false;
    r.library = "cuBLASLt";
    r.strategy = "library";
    r.ms = library[i];
    REQUIRE(db->append(r).isOk());
  }
  TuningRecord tuned = db->records()[2];  // the small product's default, as a tuned configuration
  tuned.config = tunedSmall;
  tuned.isDefault = false;
  tuned.ms = 0.008;
  REQUIRE(db->append(tuned).isOk());
  auto back = TuningDatabase::open(dir + "/db.jsonl", true);
  REQUIRE(back.isOk());
  REQUIRE(back->problems().empty());
  CHECK(back->records()[1].library == "cuBLASLt");  // the field survives the file
  TuningApplication a = applyTuningDatabase(*tasks, *back, "cuda", "gpu", "tk");
  CHECK(a.count(ApplyStatus::Library) == 1);
  CHECK(a.count(ApplyStatus::KeptDefault) == 1);
  CHECK(a.summary().find("1 library calls (measured faster)") != std::string::npos);
  // The tuned configuration is still given (used with --library-tactics off).
  const std::string smallGroup = small.groups.front()->name();
  CHECK(a.configs.size() == 1);
  CHECK(a.configs.at(smallGroup) == tunedSmall);
  CHECK(a.kernels[1].libraryMs == Approx(0.005));
  CHECK(a.kernels[1].tunedMs == Approx(0.008));

  auto librarySizes = [&](codegen::LibraryTactics tactics, bool withDb) {
    codegen::CompileOptions options;
    options.libraryTactics = tactics;
    if (withDb) a.applyTo(options);
    auto model = codegen::lowerModel(g, codegen::KernelTarget::Gpu, options);
    REQUIRE(model.isOk());
    std::vector<int64_t> rows;
    for (const runtime::LibraryCall& c : model->executable->libraryCalls) rows.push_back(c.m);
    std::sort(rows.begin(), rows.end());
    return rows;
  };
  CHECK(librarySizes(codegen::LibraryTactics::Auto, false) == std::vector<int64_t>{128});  // the heuristic
  CHECK(librarySizes(codegen::LibraryTactics::Auto, true) == std::vector<int64_t>{4});     // the measurement
  CHECK(librarySizes(codegen::LibraryTactics::Off, true).empty());
  CHECK(librarySizes(codegen::LibraryTactics::All, true) == std::vector<int64_t>{4, 128});
  codegen::CompileOptions off;  // generated after all: with the tuned schedule
  a.applyTo(off);
  auto generatedModel = codegen::lowerModel(g, codegen::KernelTarget::Gpu, off);
  REQUIRE(generatedModel.isOk());
  bool sawSmall = false;
  for (const codegen::LoweredKernel& k : generatedModel->kernels)
    if (k.group->name() == smallGroup) {
      sawSmall = true;
      CHECK(k.config == tunedSmall);
    }
  CHECK(sawSmall);

}

TEST_CASE("library call records of another library version, or of a kernel no call computes, are set aside") {
  ::setenv("KILN_CUBLASLT", KILN_EMULATED_CUBLASLT, 1);  // the library whose version the records are checked against
  const std::string here = installedLibraryVersion("cuBLASLt");
  REQUIRE(!here.empty());
  auto m = ir::parseModule(R"(module @m {
  graph @main(%s: f32[4,4], %t: f32[4,4], %x: f32[8,32]) {
    %g = MatMul(%s, %t) : f32[4,4]
    %y = Softmax(%x) {axis = -1} : f32[8,32]
    return %g, %y
  }
})", "library-unused.kir");
  REQUIRE(m.isOk());
  auto tasks = extractTasks((*m)->graph(), codegen::KernelTarget::Gpu);
  REQUIRE(tasks.isOk());
  REQUIRE(tasks->tasks.size() == 2);
  CHECK(tasks->tasks[0].hasLibraryCall());
  CHECK(!tasks->tasks[1].hasLibraryCall());
  const std::string dir = testing::scratchDir("library-unused");
  std::filesystem::create_directories(dir);
  auto applied = [&](const std::string& matmulVersion) {
    std::filesystem::remove(dir + "/db.jsonl");
    auto db = TuningDatabase::open(dir + "/db.jsonl");
    REQUIRE(db.isOk());
    for (const TuningTask& t : tasks->tasks) {  // each: default 1 ms, a cuBLASLt call 0.5 ms
      TuningRecord r;
      r.target = "cuda", r.device = "gpu", r.toolkit = "tk", r.signature = t.signature, r.spaceVersion = t.spaceVersion;
      r.config = t.space.defaultConfig(), r.isDefault = true, r.ms = 1.0;
      REQUIRE(db->append(r).isOk());
      r.config.clear(), r.isDefault = false, r.library = "cuBLASLt", r.strategy = "library", r.ms = 0.5;
      r.libraryVersion = matmulVersion;
      REQUIRE(db->append(r).isOk());
    }
    auto back = TuningDatabase::open(dir + "/db.jsonl", true);
    REQUIRE(back.isOk());
    return applyTuningDatabase(*tasks, *back, "cuda", "gpu", "tk");
  };
  // Measured on this version (or, in older files, on an unknown one): the matmul runs as its call.
  for (const std::string& version : {here, std::string()}) {
    TuningApplication a = applied(version);
    CHECK(a.kernels[0].status == ApplyStatus::Library);
    CHECK(a.kernels[0].libraryUnused.empty());
    // No cuBLASLt call computes a softmax: its record is not used, and the report says so.
    CHECK(a.kernels[1].status == ApplyStatus::KeptDefault);
    CHECK(a.kernels[1].library.empty());
    CHECK(a.kernels[1].libraryUnused == "no cuBLASLt call computes this kernel");
    CHECK(a.summary().find("1 kernels' library call records not used") != std::string::npos);
    CHECK(!a.libraryMeasuredFaster.count(tasks->tasks[1].groups.front()->name()));
  }
  // Measured on another cuBLASLt: set aside, the kernel's own records decide.
  TuningApplication other = applied("0.0.1");
  CHECK(other.kernels[0].status == ApplyStatus::KeptDefault);
  CHECK(other.kernels[0].libraryUnused == "measured on cuBLASLt 0.0.1, this machine loads " + here);
  CHECK(other.summary().find("2 kernels' library call records not used") != std::string::npos);
  CHECK(!other.libraryMeasuredFaster.count(tasks->tasks[0].groups.front()->name()));
}

TEST_CASE("a group the compiler would split is measured as the split runs: the cuBLASLt call plus the rest's kernel") {
  // BERT's FFN up projection: a bias, then the exact (erf) GELU, which no cuBLASLt epilogue computes.
  OneTask one = oneTask(R"(module @m {
  graph @main(%x: f32[2,6,12], %w: f32[12,9], %b: f32[9], %r: f32[1], %h: f32[1], %o: f32[1]) {
    %m = MatMul(%x, %w) : f32[2,6,9]
    %a = Add(%m, %b) : f32[2,6,9]
    %d = Div(%a, %r) : f32[2,6,9]
    %e = Erf(%d) : f32[2,6,9]
    %f = Add(%e, %o) : f32[2,6,9]
    %g = Mul(%a, %f) : f32[2,6,9]
    %y = Mul(%g, %h) : f32[2,6,9]
    return %y
  }
})", "tune-split.kir");
  ir::Graph& g = one.graph();
  const TuningTask& t = one.task();
  const codegen::KernelGroup& group = *t.groups.front();
  REQUIRE(!codegen::libraryCallFor(group, false).has_value());  // not one call: split
  auto split = codegen::splitForLibrary(*one.tasks.plan, group, codegen::LibraryTactics::All, false);
  REQUIRE(split.has_value());
  auto reference = codegen::referenceValues(g, testing::randomInputs(g, 7));
  REQUIRE(reference.isOk());
  // The emulation holds the default schedule (tune_0) and the rest's kernel as the measurer names it.
  useEmulation({sourceOf(group, nullptr, "tune_0"), sourceOf(split->tail, nullptr, "tune_library_tail")}, "tune-split");
  const MeasureOptions mo = quickTiming();
  auto measurer = createCudaMeasurer(*reference, mo);
  REQUIRE(measurer.isOk());
  auto r = (*measurer)->measureLibrary(t);
  REQUIRE(r.isOk());
  REQUIRE(r->has_value());
  INFO((*r)->error);
  CHECK((*r)->library == "cuBLASLt");
  CHECK((*r)->ok());
  CHECK((*r)->maxError < 1e-4);  // the rest's output, the model's, against the interpreter
  CHECK((*r)->ms > 0);
  // A reference that disagrees with the rest's output makes the pair wrong.
  auto wrong = createCudaMeasurer(withWrongValue(*reference, "y"), mo);
  REQUIRE(wrong.isOk());
  auto w = (*wrong)->measureLibrary(t);
  REQUIRE(w.isOk());
  REQUIRE(w->has_value());
  CHECK((*w)->status == MeasureStatus::WrongOutput);

  // Compiled under auto with a measurement: split where the pair was faster, one generated kernel where it was not.
  for (bool faster : {true, false}) {
    codegen::CompileOptions options;
    options.libraryTactics = codegen::LibraryTactics::Auto;
    options.libraryMeasuredFaster[group.name()] = faster;
    auto model = codegen::lowerModel(g, codegen::KernelTarget::Gpu, options);
    REQUIRE(model.isOk());
    CHECK(model->stats.librarySteps == size_t(faster));
    CHECK(model->libraryTails.size() == size_t(faster));
  }
}
