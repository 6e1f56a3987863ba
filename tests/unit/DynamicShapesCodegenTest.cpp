//===- tests/unit/DynamicShapesCodegenTest.cpp - Kernels over shape ranges --===//
//
// A graph whose inputs have dynamic dims (symbolic, with ranges) compiled
// once for the CPU: its kernels take the dims as run-time extents, its
// buffers are sized for the maxima, and one executable runs every shape in
// the ranges as the interpreter does, refuses shapes outside them by name,
// and round-trips through the artifact format. Groups no template takes with
// dynamic dims are refused by node, never run on the host.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <random>

#include "kiln/c_api.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/ir/Module.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/Pipeline.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Interpreter.h"
#include "TemplateCases.h"

using namespace kiln;
using testing::parse;

namespace {

const DimExpr kB = DimExpr::symbol("b"), kS = DimExpr::symbol("s");

/// A self-attention block over x: f32[b, s, 16] with every template that
/// takes dynamic dims: layer normalization, matmuls whose rows, columns and
/// reduction are dynamic, a softmax along s, a reduction over s, the shape
/// arithmetic exporters write (Shape, Gather, Concat, Reshape), Range and
/// ConstantOfShape.
const char* kAttention = R"(module @m {
  graph @main(%x: f32[?,?,16]) {
    %g = Constant() {value = tensor<f32[16]: [1.0, 0.9, 1.1, 1.2, 0.8, 1.0, 0.7, 1.3, 1.0, 0.9, 1.1, 1.2, 0.8, 1.0, 0.7, 1.3]>} : f32[16]
    %n = LayerNormalization(%x, %g) {axis = -1} : f32[?,?,16]
    %shape = Shape(%n) : i64[3]
    %i1 = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %sdim = Gather(%shape, %i1) : i64[1]
    %zero = Constant() {value = tensor<i64[]: [0]>} : i64[]
    %one = Constant() {value = tensor<i64[]: [1]>} : i64[]
    %slen = Squeeze(%sdim) : i64[]
    %pos = Range(%zero, %slen, %one) : i64[?]
    %posf = Cast(%pos) {to = 1} : f32[?]
    %c = Constant() {value = tensor<f32[]: [0.01]>} : f32[]
    %posc = Mul(%posf, %c) : f32[?]
    %ones = ConstantOfShape(%sdim) {value = tensor<f32[1]: [0.5]>} : f32[?]
    %bias = Add(%posc, %ones) : f32[?]
    %kt = Transpose(%n) {perm = [0, 2, 1]} : f32[?,16,?]
    %scores = MatMul(%n, %kt) : f32[?,?,?]
    %biased = Add(%scores, %bias) : f32[?,?,?]
    %p = Softmax(%biased) {axis = -1} : f32[?,?,?]
    %o = MatMul(%p, %n) : f32[?,?,16]
    %y = Add(%o, %x) : f32[?,?,16]
    %heads = Constant() {value = tensor<i64[4]: [0, 0, 4, 4]>} : i64[4]
    %yh = Reshape(%y, %heads) : f32[?,?,4,4]
    %pooled = ReduceMean(%y) {axes = [1], keepdims = 0} : f32[?,16]
    return %yh, %pooled
  }
}
)";

/// The module with input 0 of dims `dims` and ranges b 1..3 (opt 2), s 1..20 (opt 8), types inferred.
std::unique_ptr<ir::Module> ranged(const char* text, const std::vector<DimExpr>& dims) {
  auto m = parse(text);
  ir::Graph& g = m->graph();
  g.inputs()[0]->setType(ir::TensorType::ofExprs(DType::F32, dims));
  m->dimRanges = {{"b", {1, 2, 3}}, {"s", {1, 8, 20}}};
  Status s = ir::inferTypes(g, m->dimRanges);
  INFO((s.isOk() ? std::string() : s.error().str()));
  REQUIRE(s.isOk());
  return m;
}

/// `m` compiled for the CPU with its ranges; the test stops on an error.
codegen::CpuModel compileRanged(ir::Module& m) {
  codegen::CompileOptions options;
  options.dimRanges = m.dimRanges;
  auto model = codegen::compileForCpu(m.graph(), options);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  return std::move(*model);
}

Tensor randomTensor(const Dims& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return Tensor::fromVector<float>(dims, v);
}

/// Runs `executor` and the interpreter (on the unranged graph `text`) on `x`; every output agrees.
void agreesWithInterpreter(runtime::CpuExecutor& executor, const char* text, const Tensor& x) {
  auto reference = parse(text);
  runtime::Interpreter interpreter(reference->graph());
  auto want = interpreter.run({RuntimeValue(x)});
  REQUIRE(want.isOk());
  auto got = executor.run({x});
  INFO(x.typeString() << ": " << (got.isOk() ? std::string() : got.error().str()));
  REQUIRE(got.isOk());
  testing::checkOutputsMatch(*got, *want, 1e-5);
}

}  // namespace

TEST_CASE("one executable compiled for shape ranges runs every shape in them like the interpreter",
          "[codegen][dynamic]") {
  auto m = ranged(kAttention, {kB, kS, DimExpr(16)});
  codegen::CpuModel model = compileRanged(*m);
  const runtime::Executable& exe = *model.lowered.executable;
  REQUIRE(exe.symbols.size() == 2);
  CHECK(exe.symbols[0].name == "b");
  CHECK(exe.symbols[0].axis == 0);
  CHECK(exe.symbols[1].name == "s");
  CHECK(exe.symbols[1].axis == 1);
  CHECK(exe.symbols[1].max == 20);
  CHECK(model.lowered.stats.hostSteps.empty());
  // Outputs are sized for the maxima and shaped per run.
  const runtime::BufferSpec& out = exe.buffers[exe.outputs[0]];
  CHECK(out.dims == Dims{3, 20, 4, 4});
  CHECK(out.shape == std::vector<DimExpr>{kB, kS, DimExpr(4), DimExpr(4)});
  // Every kernel over the sequence takes it as a run-time extent.
  size_t dynamicKernels = 0;
  for (const codegen::LoweredKernel& k : model.lowered.kernels) {
    REQUIRE(k.kernel.extents.size() == k.extentSymbols.size());
    dynamicKernels += !k.kernel.extents.empty();
    for (size_t i = 0; i < k.extentSymbols.size(); ++i)
      CHECK(k.kernel.extents[i].max == (k.extentSymbols[i] == "b" ? 3 : 20));
  }
  CHECK(dynamicKernels == model.lowered.kernels.size());

  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 8}, {3, 20}, {1, 13}, {3, 5}})
    agreesWithInterpreter(*model.executor, kAttention, randomTensor({b, s, 16}, uint32_t(b * 100 + s)));

  auto tooLong = model.executor->run({randomTensor({1, 21, 16}, 1)});
  REQUIRE_FALSE(tooLong.isOk());
  CHECK(tooLong.error().code() == ErrorCode::ExecInput);
  CHECK(tooLong.error().message().find("input 'x' dim 1 ('s') is 21; this executable serves 1..20") != std::string::npos);
  auto wrongWidth = model.executor->run({randomTensor({1, 4, 8}, 1)});
  REQUIRE_FALSE(wrongWidth.isOk());
  CHECK(wrongWidth.error().message().find("input 'x' must be f32 [b,s,16] = 1x4x16 in this run, got f32[1,4,8]") != std::string::npos);

  auto bytes = runtime::serializeExecutable(exe);
  auto loaded = runtime::deserializeExecutable(bytes.data(), bytes.size());
  INFO((loaded.isOk() ? std::string() : loaded.error().str()));
  REQUIRE(loaded.isOk());
  CHECK(loaded->symbols.size() == 2);
  CHECK(loaded->kernelExtentMax == exe.kernelExtentMax);
  CHECK(loaded->validate().isOk());
}

TEST_CASE("a dynamic batch alone keeps static rows, and kernels with static shapes stay as they were",
          "[codegen][dynamic]") {
  // Only b varies: s is fixed at 6, so the sequence loops keep constant extents.
  auto m = ranged(kAttention, {kB, DimExpr(6), DimExpr(16)});
  m->dimRanges.erase("s");
  codegen::CpuModel model = compileRanged(*m);
  for (const codegen::LoweredKernel& k : model.lowered.kernels)
    for (const std::string& symbol : k.extentSymbols) CHECK(symbol == "b");
  for (int64_t b : {1, 2, 3}) agreesWithInterpreter(*model.executor, kAttention, randomTensor({b, 6, 16}, uint32_t(b)));

  // The same graph at one static shape compiles to the kernels it always had: no run-time extents.
  auto fixed = ranged(kAttention, {DimExpr(2), DimExpr(6), DimExpr(16)});
  auto staticModel = codegen::compileForCpu(fixed->graph());
  REQUIRE(staticModel.isOk());
  for (const codegen::LoweredKernel& k : staticModel->lowered.kernels) CHECK(k.kernel.extents.empty());
  CHECK(staticModel->lowered.executable->kernelExtentMax.empty());
  CHECK(staticModel->lowered.executable->symbols.empty());
}

TEST_CASE("convolutions and pools over a dynamic batch run every batch in the range like the interpreter",
          "[codegen][dynamic]") {
  // A padded 3x3 conv (bordered copy, im2col), a depthwise conv (direct), a
  // max pool (bordered windows), a global average pool (checked windows).
  const char* cnn = R"(module @m {
  graph @main(%x: f32[?,2,6,6]) {
    %w = Constant() {value = tensor<f32[4,2,3,3]: [0.1, -0.2, 0.3, 0.05, 0.4, -0.1, 0.2, 0.0, -0.3, 0.15, 0.25, -0.05, 0.3, 0.1, -0.2, 0.05, 0.2, 0.1, -0.1, 0.2, 0.3, -0.4, 0.1, 0.05, 0.0, 0.2, -0.1, 0.3, -0.2, 0.1, 0.05, 0.1, 0.2, -0.3, 0.25, 0.1, 0.2, -0.1, 0.05, 0.3, 0.1, -0.2, 0.15, 0.2, -0.05, 0.1, 0.3, 0.2, -0.1, 0.05, 0.1, -0.2, 0.3, 0.1, -0.15, 0.2, 0.1, 0.05, -0.3, 0.2, 0.1, 0.05, -0.1, 0.2, 0.3, -0.2, 0.1, 0.05, 0.2, -0.1, 0.3, 0.1]>} : f32[4,2,3,3]
    %c = Conv(%x, %w) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[?,4,6,6]
    %r = Relu(%c) : f32[?,4,6,6]
    %dw = Constant() {value = tensor<f32[4,1,3,3]: [0.1, 0.2, 0.1, 0.0, 0.5, 0.0, -0.1, 0.2, 0.1, 0.3, 0.1, -0.2, 0.1, 0.2, 0.1, 0.0, -0.1, 0.2, 0.2, 0.1, 0.0, 0.1, 0.4, 0.1, 0.0, 0.1, 0.2, -0.2, 0.1, 0.3, 0.1, 0.2, 0.1, 0.3, 0.0, 0.1]>} : f32[4,1,3,3]
    %d = Conv(%r, %dw) {kernel_shape = [3, 3], group = 4} : f32[?,4,4,4]
    %p = MaxPool(%d) {kernel_shape = [2, 2], strides = [2, 2]} : f32[?,4,2,2]
    %g = GlobalAveragePool(%r) : f32[?,4,1,1]
    return %p, %g
  }
}
)";
  auto m = ranged(cnn, {kB, DimExpr(2), DimExpr(6), DimExpr(6)});
  m->dimRanges.erase("s");
  codegen::CpuModel model = compileRanged(*m);
  CHECK(model.lowered.stats.hostSteps.empty());
  for (const codegen::LoweredKernel& k : model.lowered.kernels) CHECK(k.extentSymbols == std::vector<std::string>{"b"});
  for (int64_t b : {1, 2, 3, 2, 1}) agreesWithInterpreter(*model.executor, cnn, randomTensor({b, 2, 6, 6}, uint32_t(b)));
}

TEST_CASE("convolutions and pools over a dynamic batch and image width run every shape, blocked and NCHW",
          "[codegen][dynamic]") {
  // A padded 3x3 conv, a depthwise one, a max pool halving the width, an
  // average pool, a squeeze-excite scale and a global pool, over x: f32[b, 16, 6, w].
  const std::string cnn = R"(module @m {
  graph @main(%x: f32[?,16,6,?]) {
    %w = Constant() {value = )" + testing::literal({16, 16, 3, 3}, 41) + R"(} : f32[16,16,3,3]
    %c = Conv(%x, %w) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[?,16,6,?]
    %r = Relu(%c) : f32[?,16,6,?]
    %dw = Constant() {value = )" + testing::literal({16, 1, 3, 3}, 42) + R"(} : f32[16,1,3,3]
    %d = Conv(%r, %dw) {kernel_shape = [3, 3], group = 16, pads = [1, 1, 1, 1]} : f32[?,16,6,?]
    %g = GlobalAveragePool(%d) : f32[?,16,1,1]
    %sg = Sigmoid(%g) : f32[?,16,1,1]
    %se = Mul(%d, %sg) : f32[?,16,6,?]
    %p = MaxPool(%se) {kernel_shape = [2, 2], strides = [2, 2]} : f32[?,16,3,?]
    %a = AveragePool(%p) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[?,16,3,?]
    return %a, %g
  }
}
)";
  const DimExpr width = DimExpr::symbol("w");
  for (const bool blocked : {false, true}) {
    auto m = parse(cnn);
    ir::Graph& g = m->graph();
    g.inputs()[0]->setType(ir::TensorType::ofExprs(DType::F32, {kB, DimExpr(16), DimExpr(6), width}));
    m->dimRanges = {{"b", {1, 2, 3}}, {"w", {4, 9, 20}}};
    REQUIRE(ir::inferTypes(g, m->dimRanges).isOk());
    if (blocked) {
      auto pipeline = passes::parsePipeline("alter-op-layout", "cpu");
      REQUIRE(pipeline.isOk());
      auto report = passes::runPipeline(g, *pipeline);
      INFO((report.isOk() ? std::string() : report.error().str()));
      REQUIRE(report.isOk());
      // Both convs and the pools run blocked; the transforms between them cancel.
      size_t convs = 0, transposes = 0;
      for (const ir::Node* n : g.nodes()) {
        convs += n->qualifiedOpType() == "kiln::ConvNCHWc";
        transposes += n->op() == ir::Op::Transpose;
      }
      CHECK(convs == 2);
      CHECK(transposes <= 3);
    }
    codegen::CompileOptions options;
    options.dimRanges = m->dimRanges;
    auto model = codegen::compileForCpu(g, options);
    INFO((blocked ? "blocked: " : "nchw: ") << (model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    CHECK(model->lowered.stats.hostSteps.empty());
    for (auto [b, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {2, 9}, {3, 20}, {1, 13}, {2, 5}})
      agreesWithInterpreter(*model->executor, cnn.c_str(), randomTensor({b, 16, 6, w}, uint32_t(b * 100 + w)));
  }
}

TEST_CASE("concatenations, slices and splits along a dynamic dim follow its run-time length", "[codegen][dynamic]") {
  // A KV cache's shape arithmetic: the cache and the step concatenated along
  // s, the last position sliced with a negative start, a split of the result.
  const char* cache = R"(module @m {
  graph @main(%x: f32[?,?,16]) {
    %t = Tanh(%x) : f32[?,?,16]
    %cat = Concat(%x, %t, %x) {axis = 1} : f32[?,?,16]
    %starts = Constant() {value = tensor<i64[1]: [-1]>} : i64[1]
    %ends = Constant() {value = tensor<i64[1]: [9223372036854775807]>} : i64[1]
    %axes = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %last = Slice(%cat, %starts, %ends, %axes) : f32[?,1,16]
    %from2 = Constant() {value = tensor<i64[1]: [2]>} : i64[1]
    %rest = Slice(%cat, %from2, %ends, %axes) : f32[?,?,16]
    %sizes = Constant() {value = tensor<i64[2]: [10, 6]>} : i64[2]
    %a, %b2 = Split(%rest, %sizes) {axis = 2} : f32[?,?,10], f32[?,?,6]
    return %last, %a, %b2
  }
}
)";
  auto m = ranged(cache, {kB, kS, DimExpr(16)});
  codegen::CpuModel model = compileRanged(*m);
  CHECK(model.lowered.stats.hostSteps.empty());
  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}, {3, 20}, {1, 7}})
    agreesWithInterpreter(*model.executor, cache, randomTensor({b, s, 16}, uint32_t(b * 10 + s)));
}

TEST_CASE("a group no template takes with dynamic dims is refused by node, not run on the host", "[codegen][dynamic]") {
  // Convolutions take a dynamic batch and image size, not dynamic channels.
  const char* conv = R"(module @m {
  graph @main(%x: f32[2,?,6,6]) {
    %w = Constant() {value = tensor<f32[1,2,1,1]: [0.5, -0.25]>} : f32[1,2,1,1]
    %y = Conv(%x, %w) {kernel_shape = [1, 1]} : f32[2,1,6,6]
    return %y
  }
}
)";
  auto m = ranged(conv, {DimExpr(2), kS, DimExpr(6), DimExpr(6)});
  m->dimRanges.erase("b");
  codegen::CompileOptions options;
  options.dimRanges = m->dimRanges;
  auto model = codegen::compileForCpu(m->graph(), options);
  REQUIRE_FALSE(model.isOk());
  CHECK(model.error().code() == ErrorCode::CodegenUnsupported);
  INFO(model.error().str());
  CHECK(model.error().str().find("Conv") != std::string::npos);
  CHECK(model.error().message().find("dim 1 of value 'x' (s) is dynamic; convolutions and pools take a dynamic batch and "
                                     "image size only") != std::string::npos);
}

TEST_CASE("the C API reports a ranged artifact's dim ranges and runs it at a run's dims", "[codegen][dynamic]") {
  auto m = ranged(kAttention, {kB, kS, DimExpr(16)});
  codegen::CompileOptions options;
  options.dimRanges = m->dimRanges;
  auto artifact = codegen::compileCpuArtifact(m->graph(), options);
  REQUIRE(artifact.isOk());
  const std::string path = "dynamic_capi_test.kiln";
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  kiln_model* model = nullptr;
  REQUIRE(kiln_model_load(path.c_str(), &model) == 0);
  CHECK(kiln_model_input_dims(model, 0)[0] == -1);
  CHECK(kiln_model_input_dims(model, 0)[2] == 16);
  CHECK(kiln_model_input_bytes(model, 0) == 0);
  CHECK(kiln_model_input_min_dims(model, 0)[1] == 1);
  CHECK(kiln_model_input_opt_dims(model, 0)[1] == 8);
  CHECK(kiln_model_input_max_dims(model, 0)[1] == 20);
  CHECK(kiln_model_input_max_dims(model, 1) == nullptr);

  Tensor x = randomTensor({2, 5, 16}, 9);
  const void* inputs[] = {x.rawData()};
  void* outputs[2] = {nullptr, nullptr};
  CHECK(kiln_model_run(model, inputs, outputs) != 0);  // no dims: refused, never read past the caller's data
  CHECK(std::string(kiln_last_error()).find("input x has dynamic dims") != std::string::npos);
  const int64_t dims[] = {2, 5, 16};
  const int64_t* inputDims[] = {dims};
  kiln_outputs* results = nullptr;
  REQUIRE(kiln_model_run_shaped(model, inputs, inputDims, &results) == 0);
  REQUIRE(kiln_outputs_rank(results, 0) == 4);
  CHECK(kiln_outputs_dims(results, 0)[1] == 5);
  auto reference = codegen::compileForCpu(ranged(kAttention, {kB, kS, DimExpr(16)})->graph(), options);
  REQUIRE(reference.isOk());
  auto want = reference->executor->run({x});
  REQUIRE(want.isOk());
  CHECK(kiln_outputs_bytes(results, 1) == (*want)[1].byteSize());
  CHECK(std::memcmp(kiln_outputs_data(results, 1), (*want)[1].rawData(), (*want)[1].byteSize()) == 0);
  kiln_outputs_free(results);
  Tensor longer = randomTensor({2, 21, 16}, 10);
  const void* longerInputs[] = {longer.rawData()};
  const int64_t tooLong[] = {2, 21, 16};
  const int64_t* tooLongDims[] = {tooLong};
  CHECK(kiln_model_run_shaped(model, longerInputs, tooLongDims, &results) == int(ErrorCode::ExecInput));
  CHECK(std::string(kiln_last_error()).find("dim 1 ('s') is 21; this executable serves 1..20") != std::string::npos);
  kiln_model_free(model);
  std::remove(path.c_str());
}
