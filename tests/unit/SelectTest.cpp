//===- tests/unit/SelectTest.cpp - Architecture features and classes -------===//
//
// kiln_select on the tiny zoo (every model in both export forms gets its
// class, SSDLite also MN) and on hand-written graphs whose feature counts
// are known: depthwise / grouped / pointwise convolutions, residual adds
// (constant bias adds and broadcasts excluded), attention through scaling
// and masking (and a Dropout with a mask output), attention written as
// Einsum (MaxViT), NMS and multi-scale heads,
// 1x1 layers written as MatMuls over NHWC maps (ConvNeXt).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/select/ArchitectureClasses.h"

using namespace kiln;

namespace {

select::ArchitectureFeatures featuresOf(const std::string& text) {
  auto module = ir::parseModule(text);
  INFO((module.isOk() ? std::string() : module.error().str()));
  REQUIRE(module.isOk());
  return select::computeFeatures((*module)->graph());
}

}  // namespace

TEST_CASE("the tiny zoo models get their architecture classes in both export forms") {
  const std::pair<const char*, std::vector<std::string>> expected[] = {
      {"resnet_tiny", {"RN"}}, {"mobilenet_tiny", {"MN"}}, {"ssdlite_tiny", {"SSD", "MN"}}, {"bert_tiny", {"BR"}}};
  for (const auto& [model, classes] : expected)
    for (const char* form : {"-raw.onnx", "-default.onnx"}) {
      const std::string file = std::string(model) + form;
      INFO(file);
      auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/" + file);
      REQUIRE(module.isOk());
      std::vector<select::ClassScore> scores = select::classify(select::computeFeatures((*module)->graph()));
      CHECK(select::classesOf(scores) == classes);
      REQUIRE(scores.size() == 4);
      for (size_t i = 1; i < scores.size(); ++i) CHECK(scores[i - 1].score >= scores[i].score);
      CHECK(scores.back().score < 0.3);  // the classes that do not apply are clearly out
      for (const select::ClassScore& s : scores) CHECK(!s.reasons.empty());
    }
}

TEST_CASE("convolution kinds and residual adds are counted, bias adds and broadcasts are not") {
  select::ArchitectureFeatures f = featuresOf(R"(module @m {
  graph @main(%x: f32[1,8,8,8], %w1: f32[8,8,3,3], %w2: f32[8,1,3,3], %w3: f32[8,4,1,1], %w4: f32[8,8,1,1]) {
    %b = Constant() {value = tensor<f32[1,8,1,1]: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]>} : f32[1,8,1,1]
    %a = Conv(%x, %w1) {pads = [1, 1, 1, 1]} : f32[1,8,8,8]
    %d = Conv(%a, %w2) {group = 8, pads = [1, 1, 1, 1]} : f32[1,8,8,8]
    %g = Conv(%d, %w3) {group = 2} : f32[1,8,8,8]
    %p = Conv(%g, %w4) : f32[1,8,8,8]
    %r = Add(%p, %a) : f32[1,8,8,8]
    %c = Add(%r, %b) : f32[1,8,8,8]
    %s = ReduceMean(%c) {axes = [2, 3]} : f32[1,8,1,1]
    %t = Add(%c, %s) : f32[1,8,8,8]
    %y = Clip(%t) : f32[1,8,8,8]
    return %y
  }
})");
  CHECK(f.convs == 4);
  CHECK(f.depthwiseConvs == 1);
  CHECK(f.groupedConvs == 1);
  CHECK(f.pointwiseConvs == 1);
  CHECK(f.residualAdds == 1);  // %r only: %c adds a constant, %t broadcasts
  CHECK(f.featureMapResidualAdds == 1);
  CHECK(f.mobileActivations == 1);
  CHECK(f.parameters == 8);
  CHECK(f.parameterBytes == 32);
  CHECK(f.opHistogram.at("Conv") == 4);
  CHECK(f.depthwiseShare() == 0.25);
}

TEST_CASE("attention blocks are found through scaling and masking, NMS and multi-scale heads are counted") {
  select::ArchitectureFeatures f = featuresOf(R"(module @m {
  graph @main(%q: f32[1,2,4,8], %k: f32[1,2,8,4], %v: f32[1,2,4,8], %m: f32[1,1,1,4], %x: f32[1,4,8], %w: f32[8,8]) {
    %s = MatMul(%q, %k) : f32[1,2,4,4]
    %c = Constant() {value = tensor<f32[]: [0.35]>} : f32[]
    %d = Mul(%s, %c) : f32[1,2,4,4]
    %e = Add(%d, %m) : f32[1,2,4,4]
    %p = Softmax(%e) {axis = -1} : f32[1,2,4,4]
    %o = MatMul(%p, %v) : f32[1,2,4,8]
    %z = Softmax(%x) {axis = -1} : f32[1,4,8]
    %l = MatMul(%z, %w) : f32[1,4,8]
    return %o, %l
  }
})");
  CHECK(f.attentionBlocks == 1);  // %z: a Softmax feeding a MatMul, but of no product of activations
  CHECK(f.opHistogram.at("Softmax") == 2);
  std::vector<select::ClassScore> scores = select::classify(f);
  CHECK(select::classesOf(scores) == std::vector<std::string>{"BR"});
}

TEST_CASE("attention is found through a Dropout with a mask output, and 1x1 layers on NHWC maps count as convolutions") {
  // Swin's window attention: the probabilities pass a Dropout whose second output is its mask.
  select::ArchitectureFeatures swin = featuresOf(R"(module @m {
  graph @main(%q: f32[1,2,4,8], %k: f32[1,2,8,4], %v: f32[1,2,4,8]) {
    %s = MatMul(%q, %k) : f32[1,2,4,4]
    %p = Softmax(%s) {axis = -1} : f32[1,2,4,4]
    %r = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %d, %mask = Dropout(%p, %r) : f32[1,2,4,4], bool[1,2,4,4]
    %o = MatMul(%d, %v) : f32[1,2,4,8]
    return %o
  }
})");
  CHECK(swin.attentionBlocks == 1);

  // A ConvNeXt block: depthwise conv, then its pointwise layers as MatMuls over NHWC.
  select::ArchitectureFeatures convnext = featuresOf(R"(module @m {
  graph @main(%x: f32[1,2,4,4], %w0: f32[2,2,3,3], %dw: f32[2,1,7,7]) {
    %w1 = Constant() {value = tensor<f32[2,4]: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]>} : f32[2,4]
    %w2 = Constant() {value = tensor<f32[4,2]: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]>} : f32[4,2]
    %a = Conv(%x, %w0) {pads = [1, 1, 1, 1]} : f32[1,2,4,4]
    %b = Conv(%a, %w0) {pads = [1, 1, 1, 1]} : f32[1,2,4,4]
    %d = Conv(%b, %dw) {group = 2, pads = [3, 3, 3, 3]} : f32[1,2,4,4]
    %t = Transpose(%d) {perm = [0, 2, 3, 1]} : f32[1,4,4,2]
    %u = MatMul(%t, %w1) : f32[1,4,4,4]
    %g = Relu(%u) : f32[1,4,4,4]
    %o = MatMul(%g, %w2) : f32[1,4,4,2]
    %n = Transpose(%o) {perm = [0, 3, 1, 2]} : f32[1,2,4,4]
    %y = Add(%n, %b) : f32[1,2,4,4]
    return %y
  }
})");
  CHECK(convnext.denseMatmuls == 2);
  CHECK(convnext.channelsLastPointwise == 2);
  CHECK(convnext.convShare() == 1.0);
  std::vector<select::ClassScore> scores = select::classify(convnext);
  CHECK(select::classesOf(scores) == std::vector<std::string>{"MN"});
}

TEST_CASE("attention written as Einsum is found (MaxViT), a one-operand Einsum is no product") {
  // MaxViT's block attention: einsum("bghid,bghjd->bghij") of q and k, a relative-position bias, Softmax,
  // einsum("bghij,bghjd->bghid") with v. %t sums a single operand: no product of activations.
  select::ArchitectureFeatures f = featuresOf(R"(module @m {
  graph @main(%q: f32[1,4,2,3,8], %k: f32[1,4,2,3,8], %v: f32[1,4,2,3,8], %bias: f32[1,1,2,3,3], %x: f32[1,4,2,3,3]) {
    %s = Einsum(%q, %k) {equation = "bghid,bghjd->bghij"} : f32[1,4,2,3,3]
    %e = Add(%s, %bias) : f32[1,4,2,3,3]
    %p = Softmax(%e) {axis = -1} : f32[1,4,2,3,3]
    %o = Einsum(%p, %v) {equation = "bghij,bghjd->bghid"} : f32[1,4,2,3,8]
    %t = Einsum(%x) {equation = "bghij->bghji"} : f32[1,4,2,3,3]
    %z = Softmax(%t) {axis = -1} : f32[1,4,2,3,3]
    %y = Einsum(%z, %v) {equation = "bghij,bghjd->bghid"} : f32[1,4,2,3,8]
    return %o, %y
  }
})");
  CHECK(f.attentionBlocks == 1);  // %z feeds a product but comes from a transpose of an input
  CHECK(select::classesOf(select::classify(f)) == std::vector<std::string>{"BR"});
}
