//===- tests/unit/PassEquivalenceTest.cpp - Passes keep model outputs ------===//
//
// The numerical before/after test of every pass on real models: each tiny zoo
// model (default and raw forms) and the bundled tiny_cnn is run by the
// interpreter on seeded inputs drawn from models/zoo.json, then every
// registered pass alone and every -O pipeline is applied (IR verified after
// each pass) and the outputs must agree within the tolerance each pass
// documents (the sum over a pipeline; a detector's NMS outputs only under
// tight tolerances, see checkPipeline). The test also checks that -O2 and -O3
// change the raw forms (BatchNorm folded, shape arithmetic removed), so a
// pipeline that silently does nothing fails. No zoo model has an Einsum, so
// lower-einsum is checked on a hand-written graph of them.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/runtime/Interpreter.h"

using namespace kiln;

namespace {

const std::string kModels = std::string(KILN_SOURCE_DIR) + "/models/";

/// Seeded inputs in the ranges models/zoo.json gives (uniform [-1, 1] otherwise).
std::vector<RuntimeValue> makeInputs(const ir::Graph& g, const std::string& zooName) {
  nlohmann::json spec;
  std::ifstream f(kModels + "zoo.json");
  nlohmann::json zoo = nlohmann::json::parse(f);
  for (const auto& m : zoo["models"])
    if (m["name"] == zooName) spec = m["inputs"];
  std::mt19937_64 gen(7);
  std::vector<RuntimeValue> out;
  for (const ir::Value* in : g.inputs()) {
    const ir::TensorType& t = in->tensorType();
    REQUIRE(t.isStatic());
    double low = -1, high = 1;
    if (spec.contains(in->name())) {
      low = spec[in->name()]["low"].get<double>();
      high = spec[in->name()]["high"].get<double>();
    }
    Tensor x = Tensor::zeros(t.dtype(), t.dims());
    for (int64_t i = 0; i < x.numElements(); ++i) {
      if (t.dtype() == DType::F32) {
        x.mutableData<float>()[i] = float(std::uniform_real_distribution<double>(low, high)(gen));
      } else {
        REQUIRE(t.dtype() == DType::I64);
        x.mutableData<int64_t>()[i] = std::uniform_int_distribution<int64_t>(int64_t(low), int64_t(high) - 1)(gen);
      }
    }
    out.emplace_back(std::move(x));
  }
  return out;
}

/// A text-IR Constant line `%name` of f32[dims] with `count` small distinct values.
std::string constantText(const std::string& name, const std::string& dims, int64_t count) {
  std::string values;
  for (int64_t i = 0; i < count; ++i) values += (i ? ", " : "") + std::to_string(double((i * 7) % 13 - 6) * 0.25);
  const std::string type = "f32[" + dims + "]";
  return "    %" + name + " = Constant() {value = tensor<" + type + ": [" + values + "]>} : " + type + "\n";
}

/// Imports a model; tiny_cnn's dynamic batch is bound to 1 as the demo does.
std::unique_ptr<ir::Module> load(const std::string& file) {
  onnx::ImportOptions options;
  if (file.ends_with("tiny_cnn.onnx")) options.inputShapes["input"] = {1, 3, 32, 32};
  auto m = onnx::importOnnxFile(kModels + file, options);
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  return std::move(m).value();
}

std::vector<RuntimeValue> run(const ir::Graph& g, const std::vector<RuntimeValue>& inputs) {
  runtime::Interpreter interp(g, {.checkStaticTypes = true});
  auto r = interp.run(inputs);
  INFO((r.isOk() ? std::string() : r.error().str()));
  REQUIRE(r.isOk());
  return std::move(r).value();
}

/// max|a - b| / max|b| over outputs [first, end) (shapes and types must match).
double relativeError(const std::vector<RuntimeValue>& got, const std::vector<RuntimeValue>& want, size_t first = 0) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = first; i < got.size(); ++i) {
    const Tensor& a = got[i].tensor();
    const Tensor& b = want[i].tensor();
    REQUIRE(a.dtype() == b.dtype());
    REQUIRE(a.dims() == b.dims());
    std::vector<double> x = a.toDoubles(), y = b.toDoubles();
    double diff = 0, scale = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      diff = std::max(diff, std::abs(x[k] - y[k]));
      scale = std::max(scale, std::abs(y[k]));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

/// A hand-written text-IR graph after `pipeline` ran on it (IR verified after
/// each pass), and its outputs' relative error against the interpreter's before.
struct RewrittenText {
  std::unique_ptr<ir::Module> module;
  passes::PassReport report;
  double error = 0;
};

RewrittenText rewriteText(const std::string& text, const std::string& pipelineText) {
  auto module = ir::parseModule(text);
  INFO((module.isOk() ? std::string() : module.error().str()));
  REQUIRE(module.isOk());
  ir::Graph& g = (*module)->graph();
  std::vector<RuntimeValue> inputs = makeInputs(g, "");
  std::vector<RuntimeValue> reference = run(g, inputs);
  auto pipeline = passes::parsePipeline(pipelineText);
  REQUIRE(pipeline.isOk());
  auto report = passes::runPipeline(g, *pipeline, {.context = {.verifyEach = true}});
  INFO((report.isOk() ? std::string() : report.error().str()));
  REQUIRE(report.isOk());
  const double error = relativeError(run(g, inputs), reference);
  return {std::move(*module), std::move(*report), error};
}

struct Case {
  std::string file, zooName;
};

const std::vector<Case> kCases = {
    {"tiny/resnet_tiny-default.onnx", "resnet_tiny"},     {"tiny/resnet_tiny-raw.onnx", "resnet_tiny"},
    {"tiny/mobilenet_tiny-default.onnx", "mobilenet_tiny"}, {"tiny/mobilenet_tiny-raw.onnx", "mobilenet_tiny"},
    {"tiny/ssdlite_tiny-default.onnx", "ssdlite_tiny"},   {"tiny/ssdlite_tiny-raw.onnx", "ssdlite_tiny"},
    {"tiny/bert_tiny-default.onnx", "bert_tiny"},         {"tiny/bert_tiny-raw.onnx", "bert_tiny"},
    {"tiny/tiny_cnn.onnx", ""},
};

/// Runs `pipeline` on a fresh import and checks the outputs; returns the report.
passes::PassReport checkPipeline(const Case& c, const std::vector<passes::PipelineEntry>& pipeline,
                                 const std::vector<RuntimeValue>& inputs, const std::vector<RuntimeValue>& reference) {
  auto module = load(c.file);
  auto report = passes::runPipeline(module->graph(), pipeline, {.context = {.verifyEach = true}});
  INFO((report.isOk() ? std::string() : report.error().str()));
  REQUIRE(report.isOk());
  double tolerance = 0;
  for (const auto& e : pipeline) tolerance += e.pass->tolerance;
  // A detector's boxes/scores/labels (outputs 0-2) come out of NMS, which is
  // discontinuous: a 16-bit rounding may legitimately select other boxes.
  // Under such a tolerance only its head outputs (cls_logits, bbox_regression)
  // are compared; exact and near-exact pipelines compare everything.
  size_t first = c.zooName == "ssdlite_tiny" && tolerance > 1e-4 ? 3 : 0;
  double err = relativeError(run(module->graph(), inputs), reference, first);
  INFO("relative error " << err << ", tolerance " << tolerance);
  CHECK(err <= tolerance);
  return std::move(report).value();
}

}  // namespace

TEST_CASE("Every pass alone keeps every tiny model's outputs within its tolerance", "[passes][models]") {
  for (const Case& c : kCases) {
    auto reference_module = load(c.file);
    std::vector<RuntimeValue> inputs = makeInputs(reference_module->graph(), c.zooName);
    std::vector<RuntimeValue> reference = run(reference_module->graph(), inputs);
    for (const passes::PassInfo& p : passes::allPasses()) {
      INFO(c.file << " with " << p.name);
      auto pipeline = passes::parsePipeline(p.name);
      REQUIRE(pipeline.isOk());
      checkPipeline(c, *pipeline, inputs, reference);
    }
  }
}

TEST_CASE("The O1, O2 and O3 pipelines keep every tiny model's outputs and change the raw forms", "[passes][models]") {
  for (const Case& c : kCases) {
    auto reference_module = load(c.file);
    std::vector<RuntimeValue> inputs = makeInputs(reference_module->graph(), c.zooName);
    std::vector<RuntimeValue> reference = run(reference_module->graph(), inputs);
    for (int level = 0; level <= passes::kMaxOptLevel; ++level) {
      INFO(c.file << " at -O" << level);
      auto pipeline = passes::optLevelPipeline(level);
      REQUIRE(pipeline.isOk());
      passes::PassReport report = checkPipeline(c, *pipeline, inputs, reference);
      bool changed = false;
      for (const auto& r : report.passes) changed |= r.changed;
      if (level == 0) CHECK(report.passes.empty());
      if (level >= 1 && c.file.find("-raw") != std::string::npos) CHECK(changed);
    }
  }
}

TEST_CASE("The transformer chain recognises every LayerNorm, GELU and attention of the BERT models", "[passes][models]") {
  // fast-math last, so it also approximates the recognised GELUs.
  const char* chain = "fold-constant,simplify-expr,recognize-layer-norm,recognize-gelu,canonicalize-ops,fuse-attention,fast-math,"
                      "dead-code-elimination";
  auto pipeline = passes::parsePipeline(chain);
  REQUIRE(pipeline.isOk());
  for (const Case& c : kCases) {
    INFO(c.file);
    auto reference_module = load(c.file);
    std::vector<RuntimeValue> inputs = makeInputs(reference_module->graph(), c.zooName);
    std::vector<RuntimeValue> reference = run(reference_module->graph(), inputs);
    passes::PassReport report = checkPipeline(c, *pipeline, inputs, reference);
    if (c.zooName != "bert_tiny") continue;
    for (const auto& r : report.passes) {
      INFO(r.pass);
      if (r.pass.starts_with("recognize") || r.pass == "fuse-attention" || r.pass == "fast-math") CHECK(r.changed);
    }
  }
}

TEST_CASE("combine-parallel-conv2d merges resnet_tiny's unaligned branches when asked, outputs unchanged", "[passes][models]") {
  // By default the 4- and 16-channel branches stay apart (channel-multiple 8);
  // with channel-multiple=1 they merge, and the merged conv must be exact.
  const Case c = kCases[1];  // resnet_tiny-raw
  auto reference_module = load(c.file);
  std::vector<RuntimeValue> inputs = makeInputs(reference_module->graph(), c.zooName);
  std::vector<RuntimeValue> reference = run(reference_module->graph(), inputs);
  for (const char* options : {"", "{channel-multiple=1}"}) {
    INFO("combine-parallel-conv2d" << options);
    auto pipeline = passes::parsePipeline(std::string("simplify-inference,combine-parallel-conv2d") + options);
    REQUIRE(pipeline.isOk());
    passes::PassReport report = checkPipeline(c, *pipeline, inputs, reference);
    REQUIRE(report.passes.size() == 2);
    CHECK(report.passes[1].changed == (options[0] != '\0'));
  }
}

TEST_CASE("lower-einsum keeps the values of matrix-product Einsums in every label order", "[passes]") {
  // Operands and results in orders that need no Transpose, one on either
  // operand, and one on the result; ellipsis batch dims; a diagonal that stays.
  RewrittenText r = rewriteText(R"(module @m {
  graph @main(%q: f32[2,3,4,5], %k: f32[2,3,6,5], %p: f32[2,3,4,6], %a: f32[5,4], %b: f32[6,5], %c: f32[7,3,4], %s: f32[4,4]) {
    %scores = Einsum(%q, %k) {equation = "bhid,bhjd->bhij"} : f32[2,3,4,6]
    %mixed = Einsum(%p, %k) {equation = "bhij,bhjd->bhid"} : f32[2,3,4,5]
    %swapped = Einsum(%k, %q) {equation = "bhjd,bhid->hbji"} : f32[3,2,6,4]
    %plain = Einsum(%a, %b) {equation = "ki,jk->ij"} : f32[4,6]
    %ellipsis = Einsum(%c, %s) {equation = "...ij,jk->...ik"} : f32[7,3,4]
    %diag = Einsum(%s, %s) {equation = "ii,ij->j"} : f32[4]
    return %scores, %mixed, %swapped, %plain, %ellipsis, %diag
  }
})", "lower-einsum");
  CHECK(r.report.passes[0].changed);
  int einsums = 0;
  for (const ir::Node* n : r.module->graph().nodes()) einsums += n->opType() == "Einsum";
  CHECK(einsums == 1);  // the diagonal
  INFO("relative error " << r.error);
  CHECK(r.error <= passes::findPass("lower-einsum")->tolerance);
}

TEST_CASE("combine-parallel-dense joins weights read through their Transpose in one write, values exact", "[passes]") {
  // A raw export's dense layers: MatMul(x, Transpose(W [N, K])). Widths around
  // the 32-wide tiles of the transposing write, a plain [K, N] branch and a
  // kiln::Dense (W [N, K] as stored) among them, and a transpose that is also
  // a graph output, which stays.
  const std::string text = "module @m {\n  graph @main(%x: f32[2,37]) {\n" + constantText("wq", "45,37", 45 * 37) +
                           constantText("wk", "37,3", 37 * 3) + constantText("wv", "33,37", 33 * 37) +
                           constantText("wo", "40,37", 40 * 37) + constantText("bq", "45", 45) + constantText("bk", "3", 3) + constantText("bv", "33", 33) + constantText("wd", "7,37", 7 * 37) + constantText("bd", "7", 7) + R"(    %wqt = Transpose(%wq) {perm = [1, 0]} : f32[37,45]
    %q0 = MatMul(%x, %wqt) : f32[2,45]
    %q = Add(%q0, %bq) : f32[2,45]
    %k0 = MatMul(%x, %wk) : f32[2,3]
    %k = Add(%bk, %k0) : f32[2,3]
    %wvt = Transpose(%wv) : f32[37,33]
    %v0 = MatMul(%x, %wvt) : f32[2,33]
    %v = Add(%v0, %bv) : f32[2,33]
    %wot = Transpose(%wo) {perm = [1, 0]} : f32[37,40]
    %o = MatMul(%x, %wot) : f32[2,40]
    %d0 = kiln::Dense(%x, %wd) : f32[2,7]
    %d = Add(%d0, %bd) : f32[2,7]
    return %q, %k, %v, %o, %wot, %d
  }
})";
  RewrittenText r = rewriteText(text, "combine-parallel-dense");
  CHECK(r.report.passes[0].changed);
  int transposes = 0, matmuls = 0, dense = 0;
  for (const ir::Node* n : r.module->graph().nodes()) {
    transposes += n->opType() == "Transpose";
    matmuls += n->opType() == "MatMul";
    dense += n->qualifiedOpType() == "kiln::Dense";
  }
  CHECK(transposes == 1);  // the one that is also an output
  CHECK(matmuls == 2);     // q, k, v and d joined (130 columns); o apart
  CHECK(dense == 0);
  CHECK(r.error == 0);
}

TEST_CASE("alter-op-layout keeps an FPN neck blocked through its resizes, values unchanged", "[passes]") {
  // A narrow backbone's 20 channels (no block of their own: one input block),
  // a nearest 2x upsampling by scales added to a lateral conv, then a linear
  // one by sizes: every op between the convs runs on the blocks, so only the
  // inputs' transforms and the result's remain.
  const std::string text = "module @m {\n  graph @main(%x: f32[1,20,4,4], %y: f32[1,8,8,8]) {\n" +
                           constantText("w1", "8,20,1,1", 160) + constantText("w2", "8,8,1,1", 64) + R"(    %a = Conv(%x, %w1) : f32[1,8,4,4]
    %b = Conv(%y, %w2) : f32[1,8,8,8]
    %s = Constant() {value = tensor<f32[4]: [1.0, 1.0, 2.0, 2.0]>} : f32[4]
    %u = Resize(%a, none, %s) {coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "floor"} : f32[1,8,8,8]
    %t = Add(%b, %u) : f32[1,8,8,8]
    %sz = Constant() {value = tensor<i64[4]: [1, 8, 13, 11]>} : i64[4]
    %v = Resize(%t, none, none, %sz) {mode = "linear"} : f32[1,8,13,11]
    %o = Conv(%v, %w2) : f32[1,8,13,11]
    return %o
  }
})";
  RewrittenText r = rewriteText(text, "alter-op-layout");
  int transposes = 0, blockedConvs = 0, blockedResizes = 0;
  for (const ir::Node* n : r.module->graph().nodes()) {
    transposes += n->opType() == "Transpose";
    blockedConvs += n->qualifiedOpType() == "kiln::ConvNCHWc";
    blockedResizes += n->opType() == "Resize" && n->output(0)->tensorType().rank() == 5;
  }
  CHECK(blockedConvs == 3);
  CHECK(blockedResizes == 2);
  CHECK(transposes == 3);  // x and y into blocks, the result out of them
  INFO("relative error " << r.error);
  CHECK(r.error <= passes::findPass("alter-op-layout")->tolerance);
}

TEST_CASE("Every pass alone and the O3 pipelines keep models with symbolic dims correct at several shapes",
          "[passes][models][dynamic]") {
  // The committed models with dynamic dims imported with shape ranges: the tiny CNN over its batch, the GPT
  // decoder over its sequence and cache length. Passes that need static shapes leave the dynamic parts alone;
  // the graph stays valid (verified after each pass) and computes what it did at every shape.
  struct RangedCase {
    std::string file;
    std::map<std::string, Dims> min, max;
    std::vector<std::map<std::string, Dims>> shapes;
  };
  auto gptShapes = [](int64_t seq, int64_t past) {
    std::map<std::string, Dims> s{{"input_ids", {1, seq}}};
    for (const char* name : {"past_key_values.0.key", "past_key_values.0.value", "past_key_values.1.key", "past_key_values.1.value"})
      s[name] = {1, 4, past, 16};
    return s;
  };
  const std::vector<RangedCase> cases = {
      {"tiny/tiny_cnn.onnx", {{"input", {1, 3, 32, 32}}}, {{"input", {8, 3, 32, 32}}},
       {{{"input", {1, 3, 32, 32}}}, {{"input", {5, 3, 32, 32}}}}},
      {"tiny/gpt_tiny-raw.onnx", gptShapes(1, 0), gptShapes(16, 64), {gptShapes(1, 0), gptShapes(3, 9), gptShapes(1, 40)}},
  };
  for (const RangedCase& c : cases) {
    auto ranged = [&] {
      onnx::ImportOptions options;
      options.minShapes = c.min, options.maxShapes = c.max;
      auto m = onnx::importOnnxFile(kModels + c.file, options);
      INFO((m.isOk() ? std::string() : m.error().str()));
      REQUIRE(m.isOk());
      REQUIRE_FALSE((*m)->dimRanges.empty());
      return std::move(m).value();
    };
    auto reference = ranged();
    // Inputs at each shape, and the unoptimized graph's outputs on them.
    std::vector<std::vector<RuntimeValue>> inputs;
    std::vector<std::vector<RuntimeValue>> want;
    std::mt19937_64 gen(11);
    for (const auto& shape : c.shapes) {
      std::vector<RuntimeValue> in;
      for (const ir::Value* v : reference->graph().inputs()) {
        const Dims& dims = shape.at(v->name());
        Tensor x = Tensor::zeros(v->tensorType().dtype(), dims);
        for (int64_t i = 0; i < x.numElements(); ++i) {
          if (x.dtype() == DType::F32) x.mutableData<float>()[i] = float(std::uniform_real_distribution<double>(-1, 1)(gen));
          else x.mutableData<int64_t>()[i] = std::uniform_int_distribution<int64_t>(0, 511)(gen);
        }
        in.emplace_back(std::move(x));
      }
      want.push_back(run(reference->graph(), in));
      inputs.push_back(std::move(in));
    }
    std::vector<std::string> pipelines;
    for (const passes::PassInfo& p : passes::allPasses()) pipelines.push_back(p.name);
    pipelines.push_back("O3");
    for (const std::string& text : pipelines) {
      INFO(c.file << " with " << text);
      auto module = ranged();
      auto pipeline = passes::parsePipeline(text, "cpu");
      REQUIRE(pipeline.isOk());
      auto report = passes::runPipeline(module->graph(), *pipeline, {.context = {.verifyEach = true}});
      INFO((report.isOk() ? std::string() : report.error().str()));
      REQUIRE(report.isOk());
      double tolerance = 1e-5;
      for (const auto& e : *pipeline) tolerance += e.pass->tolerance;
      if (text == "O3" && c.file.find("tiny_cnn") != std::string::npos) {  // the convs run blocked over the dynamic batch
        size_t blocked = 0;
        for (const ir::Node* n : module->graph().nodes()) blocked += n->qualifiedOpType() == "kiln::ConvNCHWc";
        CHECK(blocked == 3);
      }
      for (size_t s = 0; s < inputs.size(); ++s) {
        runtime::Interpreter interp(module->graph());
        auto got = interp.run(inputs[s]);
        INFO("shape " << s << ": " << (got.isOk() ? std::string() : got.error().str()));
        REQUIRE(got.isOk());
        CHECK(relativeError(*got, want[s]) <= tolerance);
      }
    }
  }
}
