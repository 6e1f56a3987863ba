//===- tests/unit/EvolveTest.cpp - GEVO-ML in kiln: patches, search, data -===//
//
// kiln/evolve on small graphs: patches read back from JSON and malformed
// ones are refused by edit; each edit kind rewires as it says, with the
// seed's repairs (slice, pad with 1, reshape) computing what a reference
// computes; edits that do not fit are refused, never applied; mutation
// draws edits that apply, reproducibly per seed, and crossover recombines
// edits; NSGA-II's sort, crowding and selection on known points; datasets
// load, split and score by each metric; a short search on a classifier
// admits crossover children and repaired variants; mutated patches and
// datasets are refused, never a crash.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "ScratchDir.h"
#include "kiln/evolve/Dataset.h"
#include "kiln/evolve/Evolution.h"
#include "kiln/evolve/Nsga2.h"
#include "kiln/evolve/Patch.h"
#include "kiln/evolve/Variation.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Verifier.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/support/Npy.h"

using namespace kiln;
using namespace kiln::evolve;

namespace {

const char* kTwoBranches = R"(module @m {
  graph @main(%x: f32[2,3], %y: f32[3,5], %z: f32[4]) {
    %a = Relu(%x) : f32[2,3]
    %b = Relu(%y) : f32[3,5]
    %c = Sigmoid(%b) : f32[3,5]
    %d = Tanh(%a) : f32[2,3]
    %e = Neg(%z) : f32[4]
    return %c, %d, %e
  }
})";

std::unique_ptr<ir::Module> parse(const char* text) {
  auto m = ir::parseModule(text, "evolve.kir");
  REQUIRE(m.isOk());
  return std::move(*m);
}

Tensor ramp(Dims dims, float start) {
  std::vector<float> v(size_t(std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<>())));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + 0.25f * float(i);
  return Tensor::fromVector<float>(dims, v);
}

/// The graph's outputs on the ramps x, y, z, by output name.
std::map<std::string, std::vector<float>> outputsOf(const ir::Module& m) {
  runtime::Interpreter interpreter(m.graph());
  auto out = interpreter.run(std::vector<RuntimeValue>{ramp({2, 3}, -0.5f), ramp({3, 5}, -1.0f), ramp({4}, 0.5f)});
  REQUIRE(out.isOk());
  std::map<std::string, std::vector<float>> byName;
  for (size_t i = 0; i < out->size(); ++i) {
    const Tensor& t = (*out)[i].tensor();
    byName[m.graph().outputs()[i]->name()] = std::vector<float>(t.data<float>(), t.data<float>() + t.numElements());
  }
  return byName;
}

float relu(float v) { return v > 0 ? v : 0; }
float sigmoid(float v) { return 1 / (1 + std::exp(-v)); }

Edit operand(const std::string& node, uint32_t input, const std::string& value) {
  return Edit{EditKind::Operand, node, {value}, "", "", input};
}

std::unique_ptr<ir::Module> applied(const ir::Module& m, const Patch& patch, PatchReport* report = nullptr) {
  auto variant = patchedModule(m, patch, report);
  REQUIRE(variant.isOk());
  REQUIRE(ir::verify((*variant)->graph()).isOk());
  return std::move(*variant);
}

}  // namespace

TEST_CASE("A patch reads back from its JSON, and malformed ones are refused by edit", "[evolve]") {
  const Patch patch = {Edit{EditKind::Delete, "a", {"x"}, "", "", 0},
                       Edit{EditKind::Copy, "d", {"a"}, "c", "d.copy7", 0}, operand("d", 0, "x")};
  auto back = patchFromJson(patchToJson(patch));
  REQUIRE(back.isOk());
  CHECK(*back == patch);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[]", "a patch must be a JSON object"},
      {R"({"schema": "kiln-patch/2", "edits": []})", "\"schema\""},
      {R"({"schema": "kiln-patch/1"})", "\"edits\""},
      {R"({"schema": "kiln-patch/1", "edits": [{"edit": "swap", "node": "a"}]})", "edit 0: \"edit\" must be"},
      {R"({"schema": "kiln-patch/1", "edits": [{"edit": "delete", "node": "a", "with": []}]})", "edit 0: \"with\""},
      {R"({"schema": "kiln-patch/1", "edits": [{"edit": "operand", "node": "d", "input": -1, "value": "x"}]})",
       "edit 0: \"input\""},
      {R"({"schema": "kiln-patch/1", "edits": [{"edit": "operand", "node": "d", "input": 0, "value": "x"},
          {"edit": "copy", "node": "d", "operands": ["a"], "into": "c", "input": 0}]})", "edit 1: \"as\""},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    auto p = patchFromJson(text);
    REQUIRE_FALSE(p.isOk());
    CHECK(p.error().code() == ErrorCode::PatchFormat);
    CHECK_THAT(p.error().message(), Catch::Contains(message));
  }
}

TEST_CASE("Operand edits read other values, sliced, padded with 1 or reshaped to fit", "[evolve]") {
  auto m = parse(kTwoBranches);
  // d = Tanh(b[0:2, 0:3]); c = Sigmoid(pad(a, 1) to 3x5); e = Neg(z as 1x4 cut to... f32[4] from a: reshape)
  PatchReport report;
  auto v = applied(*m, {operand("d", 0, "b"), operand("c", 0, "a"), operand("e", 0, "a")}, &report);
  CHECK(report.edits.size() == 3);
  CHECK_THAT(report.edits[0], Catch::Contains("'b' through Slice"));
  CHECK_THAT(report.edits[1], Catch::Contains("'a' through Pad"));
  CHECK_THAT(report.edits[2], Catch::Contains("'a' through Slice, Reshape, Pad"));
  CHECK(report.repairNodes > 0);
  auto out = outputsOf(*v);
  const Tensor x = ramp({2, 3}, -0.5f), y = ramp({3, 5}, -1.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(out["d"][size_t(i * 3 + j)] == Approx(std::tanh(relu(y.data<float>()[i * 5 + j]))));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      const float a = i < 2 && j < 3 ? relu(x.data<float>()[i * 3 + j]) : 1.0f;  // padded with 1
      CHECK(out["c"][size_t(i * 5 + j)] == Approx(sigmoid(a)));
    }
  // f32[2,3] to f32[4]: the first row kept (the surplus leading axis cut), then padded with 1.
  const std::vector<float> e = {-relu(x.data<float>()[0]), -relu(x.data<float>()[1]), -relu(x.data<float>()[2]), -1.0f};
  CHECK(out["e"] == e);
}

TEST_CASE("A deleted node's users read another value and a graph output keeps its name", "[evolve]") {
  auto m = parse(kTwoBranches);
  auto v = applied(*m, {Edit{EditKind::Delete, "a", {"x"}, "", "", 0}, Edit{EditKind::Delete, "e", {"z"}, "", "", 0}});
  CHECK(v->graph().outputs()[2]->name() == "e");
  auto out = outputsOf(*v);
  const Tensor x = ramp({2, 3}, -0.5f);
  for (int i = 0; i < 6; ++i) CHECK(out["d"][size_t(i)] == Approx(std::tanh(x.data<float>()[i])));  // no Relu
  CHECK(out["e"] == std::vector<float>{0.5f, 0.75f, 1.0f, 1.25f});                                    // no Neg
  for (const ir::Node* n : v->graph().nodes()) {
    CHECK(n->output(0)->name() != "a");
    CHECK(n->opType() != "Neg");
  }
}

TEST_CASE("A copied node reads repaired operands and feeds another node", "[evolve]") {
  auto m = parse(kTwoBranches);
  // A copy of Tanh reading y (cut to 2x3), its result padded to 3x5 for Sigmoid.
  auto v = applied(*m, {Edit{EditKind::Copy, "d", {"y"}, "c", "tanh.copy", 0}});
  auto out = outputsOf(*v);
  const Tensor y = ramp({3, 5}, -1.0f);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      const float t = i < 2 && j < 3 ? std::tanh(y.data<float>()[i * 5 + j]) : 1.0f;
      CHECK(out["c"][size_t(i * 5 + j)] == Approx(sigmoid(t)));
    }
  // A later edit names the copy by its `as`.
  auto w = applied(*m, {Edit{EditKind::Copy, "d", {"y"}, "c", "tanh.copy", 0}, operand("d", 0, "tanh.copy")});
  CHECK(outputsOf(*w)["d"][0] == Approx(std::tanh(std::tanh(y.data<float>()[0]))));
}

TEST_CASE("Edits that do not fit the graph are refused with the edit's index", "[evolve]") {
  auto m = parse(kTwoBranches);
  const std::vector<std::pair<Patch, std::string>> cases = {
      {{operand("nothing", 0, "x")}, "edit 0 (operand 'nothing'): the graph has no node"},
      {{operand("d", 0, "nowhere")}, "no value 'nowhere'"},
      {{operand("c", 0, "d")}, "'d' is not computed before"},
      {{operand("d", 3, "x")}, "has no operand 3"},
      {{operand("d", 0, "x"), Edit{EditKind::Delete, "a", {"x", "x"}, "", "", 0}}, "edit 1 (delete 'a'): the node has 1 results"},
      {{Edit{EditKind::Copy, "d", {"y"}, "c", "a", 0}}, "the name 'a' is taken"},
      {{Edit{EditKind::Copy, "d", {}, "c", "t2", 0}}, "the node has 1 operands, the edit gives 0"},
  };
  for (const auto& [patch, message] : cases) {
    INFO(patchToJson(patch));
    auto v = patchedModule(*m, patch);
    REQUIRE_FALSE(v.isOk());
    CHECK(v.error().code() == ErrorCode::PatchFormat);
    CHECK_THAT(v.error().message(), Catch::Contains(message));
  }
}

TEST_CASE("Mutation draws edits that apply, reproducibly per seed, and crossover recombines them", "[evolve]") {
  auto m = parse(kTwoBranches);
  std::set<EditKind> kinds;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::mt19937_64 a(seed), b(seed);
    std::optional<Patch> pa = Patch{}, pb = Patch{};
    for (int k = 0; k < 3 && pa; ++k) pa = mutated(*m, *pa, a);
    for (int k = 0; k < 3 && pb; ++k) pb = mutated(*m, *pb, b);
    REQUIRE(pa.has_value());
    REQUIRE(pb.has_value());
    CHECK(*pa == *pb);
    applied(*m, *pa);
    for (const Edit& e : *pa) kinds.insert(e.kind);
  }
  CHECK(kinds == std::set<EditKind>{EditKind::Delete, EditKind::Copy, EditKind::Operand});

  const Patch p = {operand("d", 0, "b"), operand("c", 0, "a")}, q = {Edit{EditKind::Delete, "e", {"z"}, "", "", 0}};
  std::mt19937_64 rng(1);
  std::multiset<std::string> before, after;
  for (const Patch* x : {&p, &q})
    for (const Edit& e : *x) before.insert(patchToJson({e}));
  auto [c1, c2] = messyCrossover(p, q, rng);
  for (const Patch* x : {&c1, &c2})
    for (const Edit& e : *x) after.insert(patchToJson({e}));
  CHECK(before == after);
  std::mt19937_64 again(1);
  CHECK(messyCrossover(p, q, again) == std::pair{c1, c2});
}

TEST_CASE("NSGA-II sorts into fronts, crowds their ends apart and selects fronts first", "[evolve]") {
  CHECK(dominates({1, 1}, {1, 2}));
  CHECK_FALSE(dominates({1, 2}, {1, 2}));
  CHECK_FALSE(dominates({1, 3}, {2, 1}));
  const std::vector<Objectives> pop = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 2}};
  const auto fronts = nondominatedFronts(pop);
  REQUIRE(fronts.size() == 4);
  CHECK(std::set<size_t>(fronts[0].begin(), fronts[0].end()) == std::set<size_t>{0, 2, 5});
  CHECK(fronts[1] == std::vector<size_t>{1});  // (2, 3): only (2, 2) dominates it
  CHECK(fronts[2] == std::vector<size_t>{3});
  CHECK(fronts[3] == std::vector<size_t>{4});
  // Front 0 along latency: 0 (1), 5 (2), 2 (4): the middle one's distance is (4-1)/3 + (5-1)/4.
  const std::vector<double> d = crowdingDistances(pop, {0, 5, 2});
  CHECK(std::isinf(d[0]));
  CHECK(std::isinf(d[2]));
  CHECK(d[1] == Approx(1.0 + 1.0));
  const std::vector<size_t> best = selectNsga2(pop, 4);
  CHECK(std::set<size_t>(best.begin(), best.begin() + 3) == std::set<size_t>{0, 2, 5});
  const std::vector<Nsga2Rank> ranks = nsga2Ranks(pop);
  std::mt19937_64 rng(0);
  int wins = 0;
  for (int t = 0; t < 200; ++t) wins += tournament(ranks, rng) != 4;
  CHECK(wins > 150);  // the dominated point wins only against itself
}

TEST_CASE("Datasets load by input name, split, and score by each metric", "[evolve]") {
  const auto root = std::filesystem::path(testing::scratchDir("evolve-data"));
  std::filesystem::create_directories(root);
  auto m = parse(kTwoBranches);
  REQUIRE(writeNpy((root / "x.npy").string(), ramp({10, 2, 3}, 0)).isOk());
  REQUIRE(writeNpy((root / "y.npy").string(), ramp({10, 3, 5}, 0)).isOk());
  auto missing = loadDataSplit(root.string(), m->graph(), 0.2, 0);
  REQUIRE_FALSE(missing.isOk());
  CHECK_THAT(missing.error().message(), Catch::Contains("no z.npy for the model's input 'z'"));
  REQUIRE(writeNpy((root / "z.npy").string(), ramp({10, 5}, 0)).isOk());
  auto wrong = loadDataSplit(root.string(), m->graph(), 0.2, 0);
  REQUIRE_FALSE(wrong.isOk());
  CHECK_THAT(wrong.error().message(), Catch::Contains("needs samples of f32[4] along a leading axis"));
  REQUIRE(writeNpy((root / "z.npy").string(), ramp({10, 4}, 0)).isOk());
  REQUIRE(writeNpy((root / "labels.npy").string(), Tensor::fromVector<int64_t>({10}, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0})).isOk());
  auto split = loadDataSplit(root.string(), m->graph(), 0.2, 0);
  REQUIRE(split.isOk());
  CHECK(split->train.size() == 8);
  CHECK(split->test.size() == 2);
  CHECK(split->train.sample(0)[0].dims() == Dims{2, 3});

  Dataset three;
  three.inputs = {ramp({3, 1}, 0)};
  three.labels = Tensor::fromVector<int64_t>({3}, {2, 0, 1});
  const std::vector<Tensor> outputs = {Tensor::fromVector<float>({3}, {0, 1, 5}), Tensor::fromVector<float>({3}, {9, 1, 5}),
                                       Tensor::fromVector<float>({3}, {0, 1, 0.5f})};
  CHECK(*datasetError(Metric::Top1, outputs, three, {}) == Approx(0.0));
  const std::vector<Tensor> other = {outputs[1], outputs[1], outputs[2]};
  CHECK(*datasetError(Metric::Agreement, outputs, three, other) == Approx(1.0 / 3));
  Dataset values;
  values.inputs = three.inputs;
  values.labels = Tensor::fromVector<float>({3, 1}, {1, 2, 3});
  const std::vector<Tensor> scalars = {Tensor::fromVector<float>({1}, {1.5f}), Tensor::fromVector<float>({1}, {2}),
                                       Tensor::fromVector<float>({1}, {1})};
  CHECK(*datasetError(Metric::Mae, scalars, values, {}) == Approx((0.5 + 0 + 2) / 3));
  auto noLabels = datasetError(Metric::Top1, outputs, Dataset{three.inputs, Tensor()}, {});
  REQUIRE_FALSE(noLabels.isOk());
  CHECK_THAT(noLabels.error().message(), Catch::Contains("needs labels.npy"));
}

TEST_CASE("A short search on a classifier admits crossover children and repaired variants", "[evolve]") {
  // A two-layer classifier on 6 features whose labels are its own predictions.
  const char* mlp = R"(module @m {
  graph @main(%x: f32[1,6]) {
    %w1 = Constant() {value = tensor<f32[6,6]: [0.5, -0.2, 0.1, 0.3, -0.4, 0.2, 0.1, 0.6, -0.3, 0.2, 0.1, -0.5, -0.2, 0.1, 0.7, -0.1, 0.3, 0.2, 0.3, -0.3, 0.2, 0.5, -0.2, 0.1, -0.1, 0.2, 0.1, -0.2, 0.6, 0.3, 0.2, -0.1, -0.3, 0.1, 0.2, 0.4]>} : f32[6,6]
    %w2 = Constant() {value = tensor<f32[6,3]: [0.3, -0.2, 0.5, -0.1, 0.4, 0.2, 0.6, 0.1, -0.3, -0.4, 0.2, 0.3, 0.1, -0.5, 0.2, 0.2, 0.3, -0.1]>} : f32[6,3]
    %h = MatMul(%x, %w1) : f32[1,6]
    %r = Relu(%h) : f32[1,6]
    %s = Sigmoid(%r) : f32[1,6]
    %t = Add(%r, %s) : f32[1,6]
    %o = MatMul(%t, %w2) : f32[1,3]
    return %o
  }
})";
  auto m = parse(mlp);
  DataSplit data;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> xs(40 * 6);
  for (float& v : xs) v = normal(rng);
  data.train.inputs = {Tensor::fromVector<float>({30, 1, 6}, std::vector<float>(xs.begin(), xs.begin() + 180))};
  data.test.inputs = {Tensor::fromVector<float>({10, 1, 6}, std::vector<float>(xs.begin() + 180, xs.end()))};
  auto pipeline = passes::optLevelPipeline(3, "cpu");
  REQUIRE(pipeline.isOk());
  auto evaluator = VariantEvaluator::create(*m, data, Metric::Agreement, *pipeline);
  REQUIRE(evaluator.isOk());
  CHECK((*evaluator)->original().trainError == 0);
  CHECK((*evaluator)->original().ms > 0);
  EvolveOptions o;
  o.population = 8, o.generations = 3, o.elites = 4, o.seed = 2;
  std::vector<int> generations;
  auto result = evolve::evolve(*m, **evaluator, o, [&](const GenerationReport& g) { generations.push_back(g.generation); });
  REQUIRE(result.isOk());
  CHECK(generations == std::vector<int>{0, 1, 2, 3});
  CHECK(result->population.size() == 8);
  CHECK(result->crossovers > 0);
  CHECK(result->repaired > 0);
  REQUIRE_FALSE(result->front.empty());
  for (size_t i = 1; i < result->front.size(); ++i) {
    CHECK(result->front[i - 1].score.ms <= result->front[i].score.ms);
    CHECK(result->front[i - 1].score.trainError >= result->front[i].score.trainError);
  }
  for (const Individual& i : result->population) {
    CHECK(i.score.valid);
    applied(*m, i.patch);
  }
}

TEST_CASE("Mutated patches are refused or applied, never a crash", "[evolve][fuzz]") {
  auto m = parse(kTwoBranches);
  const std::string valid = patchToJson({Edit{EditKind::Copy, "d", {"y"}, "c", "t", 0}, operand("e", 0, "a"),
                                         Edit{EditKind::Delete, "a", {"x"}, "", "", 0}});
  std::mt19937_64 rng(7);
  int parsed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = valid;
    for (int k = 0; k < 1 + int(rng() % 3); ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = char(rng() % 128); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "0123456789\"[]{},:abcdexyz"[rng() % 25]);
      }
      if (text.empty()) text = "{";
    }
    auto p = patchFromJson(text);
    if (!p.isOk()) {
      CHECK(p.error().code() == ErrorCode::PatchFormat);
      continue;
    }
    ++parsed;
    auto v = patchedModule(*m, *p);
    if (v.isOk()) CHECK(ir::verify((*v)->graph()).isOk());
    else CHECK(v.error().code() == ErrorCode::PatchFormat);
  }
  CHECK(parsed > 20);
}
