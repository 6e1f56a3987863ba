//===- tests/unit/SelectTest.cpp - Architecture features and classes -------===//
//
// kiln_select on the tiny zoo (every model in both export forms gets its
// class, SSDLite also MN) and on hand-written graphs whose feature counts
// are known: depthwise / grouped / pointwise convolutions, residual adds
// (constant bias adds and broadcasts excluded), attention through scaling
// and masking (and a Dropout with a mask output), attention written as
// Einsum (MaxViT), NMS and multi-scale heads, a CNN trunk under a transformer
// (DETR), detection heads without NMS (YOLO),
// 1x1 layers written as MatMuls over NHWC maps (ConvNeXt).
//
//===----------------------------------------------------------------------===//
#include <algorithm>

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

TEST_CASE("a convolutional backbone under a transformer is a CNN too (DETR), a patch embedding is not (ViT)") {
  // The counts `kiln passes classify` gives a DETR (torchvision's ResNet-50 trunk, a 1x1 projection, six
  // encoder and six decoder layers): its convolutions are under half the layers.
  select::ArchitectureFeatures detr;
  detr.convs = 54;
  detr.pointwiseConvs = 37;
  detr.denseMatmuls = 69;
  detr.residualAdds = 46;
  detr.featureMapResidualAdds = 16;
  detr.attentionBlocks = 18;
  detr.layerNorms = 32;
  REQUIRE(detr.convShare() < 0.5);
  std::vector<select::ClassScore> scores = select::classify(detr);
  CHECK(select::classesOf(scores) == std::vector<std::string>{"BR", "RN"});
  CHECK(scores[0].score == Approx(0.8));  // attention and layer norms, but a convolutional backbone
  CHECK(scores[1].score == Approx(0.8));  // a residual CNN with attention

  // ViT-B/16: one conv (the patch embedding) under twelve encoder layers; with DETR's trunk cut to 15
  // convolutions it is no CNN either.
  select::ArchitectureFeatures vit = detr;
  vit.convs = 1;
  vit.pointwiseConvs = 0;
  vit.featureMapResidualAdds = 0;
  vit.denseMatmuls = 49;
  CHECK(select::classesOf(select::classify(vit)) == std::vector<std::string>{"BR"});
  select::ArchitectureFeatures shallow = detr;
  shallow.convs = 15;
  CHECK(select::classesOf(select::classify(shallow)) == std::vector<std::string>{"BR"});
}

TEST_CASE("a detector's heads joined along the boxes make it SSD without NMS (YOLO), a pyramid of maps does not (RAFT)") {
  // Three scales' 1x1 heads, each reshaped to [N, boxes, 6] and joined along the boxes; and the same
  // maps reshaped to [N, H, W, k] and joined along the last axis (RAFT's correlation pyramid).
  const char* heads = R"(module @m {
  graph @main(%x: f32[1,4,8,8], %w: f32[4,4,3,3], %h: f32[6,4,1,1]) {
    %a = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %b = Conv(%a, %w) {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,4,4,4]
    %c = Conv(%b, %w) {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,4,2,2]
    %p = Conv(%a, %h) : f32[1,6,8,8]
    %q = Conv(%b, %h) : f32[1,6,4,4]
    %r = Conv(%c, %h) : f32[1,6,2,2]
    %s3 = Constant() {value = tensor<i64[3]: [1, -1, 6]>} : i64[3]
    %p3 = Reshape(%p, %s3) : f32[1,64,6]
    %q3 = Reshape(%q, %s3) : f32[1,16,6]
    %r3 = Reshape(%r, %s3) : f32[1,4,6]
    %y = Concat(%p3, %q3, %r3) {axis = 1} : f32[1,84,6]
    return %y
  }
})";
  select::ArchitectureFeatures yolo = featuresOf(heads);
  CHECK(yolo.multiScaleHeads == 1);
  CHECK(yolo.boxHeads == 1);
  CHECK(yolo.nmsOps == 0);
  std::vector<std::string> classes = select::classesOf(select::classify(yolo));
  std::sort(classes.begin(), classes.end());
  CHECK(classes == std::vector<std::string>{"RN", "SSD"});  // both at 0.6: a plain CNN, heads without NMS

  std::string pyramid = heads;
  const auto replace = [&](const std::string& from, const std::string& to) {
    pyramid.replace(pyramid.find(from), from.size(), to);
  };
  replace("tensor<i64[3]: [1, -1, 6]>} : i64[3]", "tensor<i64[4]: [1, 2, 2, -1]>} : i64[4]");
  replace("f32[1,64,6]", "f32[1,2,2,96]");
  replace("f32[1,16,6]", "f32[1,2,2,24]");
  replace("f32[1,4,6]", "f32[1,2,2,6]");
  replace("{axis = 1} : f32[1,84,6]", "{axis = -1} : f32[1,2,2,126]");
  select::ArchitectureFeatures raft = featuresOf(pyramid);
  CHECK(raft.multiScaleHeads == 1);
  CHECK(raft.boxHeads == 0);
  CHECK(select::classesOf(select::classify(raft)) == std::vector<std::string>{"RN"});
}
