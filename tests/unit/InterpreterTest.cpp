//===- tests/unit/InterpreterTest.cpp - Unit tests of the reference interpreter -===//
//
// Data-dependent shapes (NonZero, Compress, TopK, NonMaxSuppression), control
// flow (If, Loop with scan outputs), sequences, run-time errors that name
// the failing node, and ImageDecoder on hostile streams.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "kiln/ir/Parser.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/support/File.h"

using namespace kiln;

namespace {

std::unique_ptr<ir::Module> parse(const std::string& text) {
  auto m = ir::parseModule(text, "test.kir");
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  return std::move(m).value();
}

std::vector<RuntimeValue> run(const ir::Module& m, std::vector<RuntimeValue> inputs) {
  runtime::Interpreter interp(m.graph(), {.checkStaticTypes = true});
  auto r = interp.run(inputs);
  INFO((r.isOk() ? std::string() : r.error().str()));
  REQUIRE(r.isOk());
  return std::move(r).value();
}

Error runError(const ir::Module& m, std::vector<RuntimeValue> inputs) {
  runtime::Interpreter interp(m.graph());
  auto r = interp.run(inputs);
  REQUIRE_FALSE(r.isOk());
  return r.error();
}

/// A u8 stream of a file under tests/data/images.
Tensor imageStream(const std::string& file) {
  auto bytes = readFile(std::string(KILN_SOURCE_DIR) + "/tests/data/images/" + file);
  REQUIRE(bytes.isOk());
  return Tensor::fromVector<uint8_t>({int64_t(bytes->size())}, std::vector<uint8_t>(bytes->begin(), bytes->end()));
}

/// `stream` with 1 to 4 bytes set to random values, and cut short one time in four.
Tensor mutant(const Tensor& stream, std::mt19937& rng) {
  std::vector<uint8_t> bytes(stream.data<uint8_t>(), stream.data<uint8_t>() + stream.numElements());
  for (int k = 1 + int(rng() % 4); k > 0; --k) bytes[rng() % bytes.size()] = uint8_t(rng());
  if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
  return Tensor::fromVector<uint8_t>({int64_t(bytes.size())}, bytes);
}

}  // namespace

TEST_CASE("kiln::ImageDecoder decodes PNG and JPEG, names formats it lacks, and survives mutated streams",
          "[runtime][errors]") {
  auto m = parse(R"(module @m {
  graph @main(%s: u8[?]) {
    %rgb = kiln::ImageDecoder(%s) : u8[?,?,3] loc("decode")
    %gray = kiln::ImageDecoder(%s) {pixel_format = "Grayscale"} : u8[?,?,1] loc("gray")
    return %rgb, %gray
  }
}
)");
  for (const char* file : {"gradient.png", "gradient.jpg"}) {
    INFO(file);
    const Tensor stream = imageStream(file);
    auto out = run(*m, {stream});
    CHECK(out[0].tensor().dims() == Dims{9, 13, 3});
    CHECK(out[1].tensor().dims() == Dims{9, 13, 1});
    std::mt19937 rng(7);
    int decoded = 0, empty = 0;
    for (int i = 0; i < 600; ++i) {
      runtime::Interpreter interp(m->graph());
      auto r = interp.run({mutant(stream, rng)});
      if (!r.isOk()) {
        CHECK((r.error().code() == ErrorCode::ExecFailure || r.error().code() == ErrorCode::ExecUnsupported));
        continue;
      }
      const Dims& dims = (*r)[0].tensor().dims();
      REQUIRE(dims.size() == 3);
      CHECK(dims[2] == 3);
      CHECK((*r)[1].tensor().dims() == Dims{dims[0], dims[1], 1});
      (dims[0] == 0 ? empty : decoded) += 1;
    }
    CHECK(empty > 0);  // the spec's result for a stream that is no image
    INFO("decoded " << decoded << ", empty " << empty);
  }
  // A BMP: recognized, not decoded, refused by name at the node.
  Error e = runError(*m, {imageStream("gradient.bmp")});
  CHECK(e.nodeName() == "decode");
  CHECK(e.code() == ErrorCode::ExecUnsupported);
  CHECK_THAT(e.message(), Catch::Contains("BMP"));
}

TEST_CASE("NonZero, Compress and TopK produce data-dependent shapes", "[runtime]") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2,3], %k: i64[1]) {
    %nz = NonZero(%x) : i64[2,?]
    %zero = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %pos = Greater(%x, %zero) : bool[2,3]
    %shape = Constant() {value = tensor<i64[1]: [6]>} : i64[1]
    %flat = Reshape(%pos, %shape) : bool[6]
    %xs = Reshape(%x, %shape) : f32[6]
    %kept = Compress(%xs, %flat) : f32[?]
    %vals, %idx = TopK(%x, %k) {axis = 1} : f32[2,?], i64[2,?]
    return %nz, %kept, %vals, %idx
  }
}
)");
  auto out = run(*m, {Tensor::fromVector<float>({2, 3}, {0, 3, -1, 2, 0, 5}), Tensor::fromVector<int64_t>({1}, {2})});
  CHECK(out[0].tensor().dims() == Dims{2, 4});
  CHECK(out[0].tensor().toInt64s() == std::vector<int64_t>{0, 0, 1, 1, 1, 2, 0, 2});
  CHECK(out[1].tensor().toDoubles() == std::vector<double>{3, 2, 5});
  CHECK(out[2].tensor().toDoubles() == std::vector<double>{3, 0, 5, 2});
  CHECK(out[3].tensor().toInt64s() == std::vector<int64_t>{1, 0, 2, 0});
}

TEST_CASE("NonMaxSuppression keeps the best non-overlapping boxes", "[runtime]") {
  auto m = parse(R"(module @m {
  graph @main(%boxes: f32[1,3,4], %scores: f32[1,1,3]) {
    %max = Constant() {value = tensor<i64[1]: [3]>} : i64[1]
    %iou = Constant() {value = tensor<f32[1]: [0.5]>} : f32[1]
    %sel = NonMaxSuppression(%boxes, %scores, %max, %iou) : i64[?,3]
    return %sel
  }
}
)");
  auto out = run(*m, {Tensor::fromVector<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}),
                      Tensor::fromVector<float>({1, 1, 3}, {0.9f, 0.8f, 0.7f})});
  CHECK(out[0].tensor().toInt64s() == std::vector<int64_t>{0, 0, 0, 0, 0, 2});
}

TEST_CASE("NonMaxSuppression's grid search keeps exactly what the greedy scan keeps", "[runtime]") {
  // Random boxes in clusters far apart (as a detector's class offsets make
  // them), sizes from degenerate to large, some flipped corners; compared with
  // a plain O(n^2) greedy scan written here.
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(0, 1);
  const int64_t n = 600;
  std::vector<float> boxes, scores;
  for (int64_t i = 0; i < n; ++i) {
    float offset = float(i % 7) * 1000.0f, y = offset + u(gen) * 300, x = offset + u(gen) * 300;
    float h = i % 50 == 0 ? 0.0f : u(gen) * (i % 3 ? 60 : 250), w = u(gen) * 80;
    if (i % 11 == 0) boxes.insert(boxes.end(), {y + h, x + w, y, x});  // flipped
    else boxes.insert(boxes.end(), {y, x, y + h, x + w});
    scores.push_back(u(gen));
  }
  auto greedy = [&](float threshold) {
    auto area = [](const float* b) { return (std::max(b[0], b[2]) - std::min(b[0], b[2])) * (std::max(b[1], b[3]) - std::min(b[1], b[3])); };
    std::vector<int64_t> order(n), kept;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[size_t(a)] > scores[size_t(b)]; });
    for (int64_t i : order) {
      bool keep = true;
      for (int64_t k : kept) {
        const float *a = &boxes[size_t(i) * 4], *b = &boxes[size_t(k) * 4];
        double ih = std::max(0.0, double(std::min(std::max(a[0], a[2]), std::max(b[0], b[2]))) - std::max(std::min(a[0], a[2]), std::min(b[0], b[2])));
        double iw = std::max(0.0, double(std::min(std::max(a[1], a[3]), std::max(b[1], b[3]))) - std::max(std::min(a[1], a[3]), std::min(b[1], b[3])));
        double uni = double(area(a)) + area(b) - ih * iw;
        if ((uni > 0 ? ih * iw / uni : 0.0) > threshold) keep = false;
      }
      if (keep) kept.push_back(i);
    }
    std::vector<int64_t> triples;
    for (int64_t k : kept) triples.insert(triples.end(), {0, 0, k});
    return triples;
  };
  for (float threshold : {0.0f, 0.3f, 0.7f}) {
    auto m = parse(R"(module @m {
  graph @main(%boxes: f32[1,600,4], %scores: f32[1,1,600]) {
    %max = Constant() {value = tensor<i64[1]: [100000]>} : i64[1]
    %iou = Constant() {value = tensor<f32[1]: [)" + std::to_string(threshold) + R"(]>} : f32[1]
    %sel = NonMaxSuppression(%boxes, %scores, %max, %iou) : i64[?,3]
    return %sel
  }
}
)");
    auto out = run(*m, {Tensor::fromVector<float>({1, n, 4}, boxes), Tensor::fromVector<float>({1, 1, n}, scores)});
    INFO("threshold " << threshold);
    CHECK(out[0].tensor().toInt64s() == greedy(threshold));
  }
}

TEST_CASE("If and Loop run their bodies, with scan outputs stacked", "[runtime][control-flow]") {
  auto m = parse(R"(module @m {
  graph @main(%n: i64[], %c: bool[], %x: f32[2]) {
    %y = If(%c) {else_branch = graph @else() {
        %neg = Neg(%x) : f32[2]
        return %neg
      }, then_branch = graph @then() {
        return %x
      }} : f32[2]
    %sum, %steps = Loop(%n, none, %y) {body = graph @body(%i: i64[], %cond: bool[], %acc: f32[2]) {
        %next = Add(%acc, %x) : f32[2]
        %keep = Identity(%cond) : bool[]
        %step = Identity(%i) : i64[]
        return %keep, %next, %step
      }} : f32[2], i64[?]
    return %sum, %steps
  }
}
)");
  auto out = run(*m, {Tensor::scalar<int64_t>(3), Tensor::scalar<bool>(false), Tensor::fromVector<float>({2}, {1, 2})});
  CHECK(out[0].tensor().toDoubles() == std::vector<double>{2, 4});  // -x + 3x
  CHECK(out[1].tensor().toInt64s() == std::vector<int64_t>{0, 1, 2});
  auto zero = run(*m, {Tensor::scalar<int64_t>(0), Tensor::scalar<bool>(true), Tensor::fromVector<float>({2}, {1, 2})});
  CHECK(zero[0].tensor().toDoubles() == std::vector<double>{1, 2});
  CHECK(zero[1].tensor().dims() == Dims{0});
}

TEST_CASE("sequences are built, indexed and concatenated", "[runtime][sequence]") {
  auto m = parse(R"(module @m {
  graph @main(%a: f32[2], %b: f32[2]) {
    %s = SequenceConstruct(%a, %b) : seq<f32[2]>
    %pos = Constant() {value = tensor<i64[]: [-1]>} : i64[]
    %last = SequenceAt(%s, %pos) : f32[2]
    %len = SequenceLength(%s) : i64[]
    %cat = ConcatFromSequence(%s) {axis = 0, new_axis = 1} : f32[?,2]
    return %last, %len, %cat
  }
}
)");
  auto out = run(*m, {Tensor::fromVector<float>({2}, {1, 2}), Tensor::fromVector<float>({2}, {3, 4})});
  CHECK(out[0].tensor().toDoubles() == std::vector<double>{3, 4});
  CHECK(out[1].tensor().toInt64s() == std::vector<int64_t>{2});
  CHECK(out[2].tensor().dims() == Dims{2, 2});
}

TEST_CASE("run-time errors name the failing node", "[runtime][errors]") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[4], %i: i64[2], %d: i32[2]) {
    %g = Gather(%x, %i) : f32[2] loc("gather")
    %q = Div(%d, %d) : i32[2] loc("div")
    return %g, %q
  }
}
)");
  Error e = runError(*m, {Tensor::fromVector<float>({4}, {1, 2, 3, 4}), Tensor::fromVector<int64_t>({2}, {0, 9}),
                          Tensor::fromVector<int32_t>({2}, {1, 2})});
  CHECK(e.code() == ErrorCode::ExecFailure);
  CHECK(e.nodeName() == "gather");
  CHECK_THAT(e.message(), Catch::Contains("index 9 is out of range"));
  e = runError(*m, {Tensor::fromVector<float>({4}, {1, 2, 3, 4}), Tensor::fromVector<int64_t>({2}, {0, -1}),
                    Tensor::fromVector<int32_t>({2}, {0, 2})});
  CHECK(e.nodeName() == "div");
  CHECK_THAT(e.message(), Catch::Contains("division by zero"));
  e = runError(*m, {Tensor::fromVector<float>({3}, {1, 2, 3}), Tensor::fromVector<int64_t>({2}, {0, 1}),
                    Tensor::fromVector<int32_t>({2}, {1, 2})});
  CHECK(e.code() == ErrorCode::ExecInput);
  CHECK_THAT(e.message(), Catch::Contains("input 'x' must have shape f32[4]"));
}

TEST_CASE("integer arithmetic wraps instead of overflowing", "[runtime]") {
  auto m = parse(R"(module @m {
  graph @main(%a: i64[2], %b: i64[2]) {
    %s = Add(%a, %b) : i64[2]
    %n = Neg(%a) : i64[2]
    %q = Div(%a, %b) : i64[2]
    return %s, %n, %q
  }
}
)");
  int64_t mn = std::numeric_limits<int64_t>::min(), mx = std::numeric_limits<int64_t>::max();
  auto out = run(*m, {Tensor::fromVector<int64_t>({2}, {mx, mn}), Tensor::fromVector<int64_t>({2}, {1, -1})});
  CHECK(out[0].tensor().toInt64s() == std::vector<int64_t>{mn, mx});
  CHECK(out[1].tensor().toInt64s() == std::vector<int64_t>{mn + 1, mn});
  CHECK(out[2].tensor().toInt64s() == std::vector<int64_t>{mx, mn});
}

TEST_CASE("kiln::TensorScatter writes a KV cache and refuses writes past its end", "[runtime][errors]") {
  auto m = parse(R"(module @m {
  graph @main(%cache: f32[2,4,1], %update: f32[2,2,1], %at: i64[2]) {
    %linear = kiln::TensorScatter(%cache, %update, %at) {axis = 1} : f32[2,4,1] loc("write")
    %ring = kiln::TensorScatter(%cache, %update, %at) {axis = 1, mode = "circular"} : f32[2,4,1] loc("ring")
    return %linear, %ring
  }
}
)");
  Tensor cache = Tensor::fromVector<float>({2, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0});
  Tensor update = Tensor::fromVector<float>({2, 2, 1}, {1, 2, 3, 4});
  auto out = run(*m, {cache, update, Tensor::fromVector<int64_t>({2}, {0, 2})});
  CHECK(out[0].tensor().toDoubles() == std::vector<double>{1, 2, 0, 0, 0, 0, 3, 4});
  CHECK(out[1].tensor().toDoubles() == std::vector<double>{1, 2, 0, 0, 0, 0, 3, 4});
  // Row 1 starts at 3: the ring wraps its second step to 0; the linear write does not fit.
  Error e = runError(*m, {cache, update, Tensor::fromVector<int64_t>({2}, {0, 3})});
  CHECK(e.nodeName() == "write");
  CHECK_THAT(e.message(), Catch::Contains("does not fit an axis of 4"));
}

TEST_CASE("kiln::DeformConv with zero offsets and a unit mask is the Conv", "[runtime]") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[1,2,4,4], %w: f32[3,2,3,3], %off: f32[1,18,4,4], %mask: f32[1,9,4,4]) {
    %d = kiln::DeformConv(%x, %w, %off, none, %mask) {pads = [1, 1, 1, 1]} : f32[1,3,4,4]
    %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,3,4,4]
    return %d, %c
  }
}
)");
  std::vector<float> x(32), w(54);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 5) * 0.25f - 0.5f;
  auto out = run(*m, {Tensor::fromVector<float>({1, 2, 4, 4}, x), Tensor::fromVector<float>({3, 2, 3, 3}, w),
                      Tensor::fromVector<float>({1, 18, 4, 4}, std::vector<float>(288, 0.0f)),
                      Tensor::fromVector<float>({1, 9, 4, 4}, std::vector<float>(144, 1.0f))});
  std::vector<double> deform = out[0].tensor().toDoubles(), conv = out[1].tensor().toDoubles();
  REQUIRE(deform.size() == conv.size());
  for (size_t i = 0; i < conv.size(); ++i) CHECK(deform[i] == Approx(conv[i]).margin(1e-5));
}
