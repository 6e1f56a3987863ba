//===- tests/unit/FuseTest.cpp - Fusion search: evaluator, data, model, search ===//
//
// kiln/fuse on a small graph of two convolution blocks with elementwise
// ops between them: the evaluator caches by partition and compiles only
// new kernels, rejects a configuration whose outputs are wrong, and refuses
// malformed configurations; neighbourhoods grow with the radius; edge
// features describe the configuration, and edge classes join repeated
// edges; Gibbs sampling writes a dataset that reads back, and corrupt
// datasets are refused by line; the advantage model learns a known
// function, saves and loads; searches are reproducible per seed, guided
// search draws only the edges the model ranks on top and ranked search
// first moves the class it predicts to gain; mutated datasets, databases
// and model files are refused, never a crash.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include "ScratchDir.h"
#include "kiln/fuse/AdvantageModel.h"
#include "kiln/fuse/EdgeFeatures.h"
#include "kiln/fuse/FusionDatabase.h"
#include "kiln/fuse/FusionSearch.h"
#include "kiln/fuse/GibbsSampling.h"
#include "kiln/ir/Parser.h"
#include "kiln/support/File.h"

using namespace kiln;
using namespace kiln::fuse;

namespace {

const char* kBlocks = R"(module @m {
  graph @main(%x: f32[1,4,8,8]) {
    %w1 = Constant() {value = tensor<f32[4,4,1,1]: [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.5, 0.25, 0.3, 0.2, -0.1, 0.4, 0.9, -0.6, 0.7, 0.05]>} : f32[4,4,1,1]
    %w2 = Constant() {value = tensor<f32[4,4,1,1]: [0.1, 0.2, 0.3, 0.4, -0.5, 0.6, -0.7, 0.8, 0.25, -0.5, 0.75, -1.0, 0.6, 0.4, 0.2, -0.3]>} : f32[4,4,1,1]
    %c1 = Conv(%x, %w1) : f32[1,4,8,8]
    %r1 = Relu(%c1) : f32[1,4,8,8]
    %m = Mul(%r1, %r1) : f32[1,4,8,8]
    %c2 = Conv(%m, %w2) : f32[1,4,8,8]
    %r2 = Relu(%c2) : f32[1,4,8,8]
    %s = Add(%r2, %r1) : f32[1,4,8,8]
    %t = Sigmoid(%s) : f32[1,4,8,8]
    return %t
  }
})";

struct Fixture {
  std::unique_ptr<ir::Module> module;
  std::unique_ptr<FusionEvaluator> evaluator;
  explicit Fixture(EvaluatorOptions options = {}) {
    auto m = ir::parseModule(kBlocks, "fuse.kir");
    REQUIRE(m.isOk());
    module = std::move(*m);
    std::vector<float> x(4 * 8 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 17) - 8) / 8.0f;
    options.repeats = 2, options.minSampleMs = 0.1;
    auto e = FusionEvaluator::create(module->graph(), {Tensor::fromVector<float>({1, 4, 8, 8}, x)}, options);
    REQUIRE(e.isOk());
    evaluator = std::move(*e);
  }
};

/// A configuration whose partition differs from the default's (the first edge flip that changes it).
Decisions otherPartition(FusionEvaluator& e) {
  REQUIRE(e.evaluate(e.defaultDecisions()).isOk());
  for (size_t i = 0; i < e.edgeCount(); ++i) {
    Decisions d = e.defaultDecisions();
    d[i] = !d[i];
    if (!e.evaluated(d)) return d;
  }
  FAIL("no edge flip changes the partition");
  return {};
}

size_t featureIndex(const std::string& name) {
  const auto& names = edgeFeatureNames();
  return size_t(std::find(names.begin(), names.end(), name) - names.begin());
}

}  // namespace

TEST_CASE("the evaluator measures a partition once and compiles only new kernels", "[fuse]") {
  Fixture f;
  FusionEvaluator& e = *f.evaluator;
  REQUIRE(e.edgeCount() >= 5);
  auto first = e.evaluate(e.defaultDecisions());
  REQUIRE(first.isOk());
  CHECK(first->ok());
  CHECK(first->ms > 0);
  CHECK(!first->cached);
  CHECK(first->kernelsCompiled == e.plan().groups().size());
  auto again = e.evaluate(e.defaultDecisions());
  REQUIRE(again.isOk());
  CHECK(again->cached);
  CHECK(again->kernelsCompiled == 0);
  CHECK(again->ms == first->ms);

  const Decisions other = otherPartition(e);
  auto changed = e.evaluate(other);
  REQUIRE(changed.isOk());
  REQUIRE(changed->ok());
  CHECK(!changed->cached);
  // One flip regroups one or two kernels; the others come from the cache.
  CHECK(changed->kernelsCompiled >= 1);
  CHECK(changed->kernelsCompiled <= 2);
  CHECK(e.partitionsMeasured() == 2);
  CHECK(e.evaluated(other));

  auto ratio = e.pairedRatio(other, e.defaultDecisions(), 3);
  REQUIRE(ratio.isOk());
  CHECK(*ratio > 0);

  // The plan text names every edge and applies as kiln compile --fusion-plan reads it.
  const std::string text = e.planText(other);
  CHECK(text.find("edge e0 ") != std::string::npos);
  CHECK(e.evaluate(Decisions(e.edgeCount() + 1)).error().code() == ErrorCode::InvalidArgument);
}

TEST_CASE("a configuration whose outputs differ from the interpreter's is rejected", "[fuse]") {
  EvaluatorOptions strict;
  strict.tolerance = -1;  // no output can be this close
  Fixture f(strict);
  auto e = f.evaluator->evaluate(f.evaluator->defaultDecisions());
  REQUIRE(e.isOk());
  CHECK(e->status == EvaluationStatus::WrongOutput);
  CHECK(e->error.find("differs from the interpreter") != std::string::npos);
  CHECK(e->ms == 0);
  SearchOptions o;
  o.trials = 2;
  auto r = searchFusion(*f.evaluator, o);
  REQUIRE(!r.isOk());
  CHECK(r.error().message().find("the default fusion plan fails") != std::string::npos);
}

TEST_CASE("neighbourhoods and edge features follow the plan and the configuration", "[fuse]") {
  Fixture f;
  FusionEvaluator& e = *f.evaluator;
  const codegen::FusionPlan& plan = e.plan();
  for (size_t i = 0; i < e.edgeCount(); ++i) {
    CHECK(edgeNeighbourhood(plan, i, 0) == std::vector<size_t>{i});
    const std::vector<size_t> one = edgeNeighbourhood(plan, i, 1), two = edgeNeighbourhood(plan, i, 2);
    CHECK(one.front() == i);
    CHECK(two.size() >= one.size());
    for (size_t j : one) {
      if (j == i) continue;
      const codegen::FusionEdge &a = plan.edges()[i], &b = plan.edges()[j];
      CHECK((a.producer == b.producer || a.producer == b.consumer || a.consumer == b.producer ||
             a.consumer == b.consumer));
    }
  }
  Decisions none(e.edgeCount(), false);
  const std::vector<std::vector<float>> split = edgeFeatures(e.planUnder(none), 1);
  const std::vector<std::vector<float>> byDefault = edgeFeatures(e.planUnder(e.defaultDecisions()), 1);
  REQUIRE(split.size() == e.edgeCount());
  // Every value an edge carries is f32[1,4,8,8], so each is one equal share of their bytes.
  std::set<const ir::Value*> carried;
  for (const codegen::FusionEdge& edge : plan.edges()) carried.insert(edge.producer->output(0));
  for (size_t i = 0; i < split.size(); ++i) {
    REQUIRE(split[i].size() == edgeFeatureNames().size());
    float kinds = 0;
    for (const char* k : {"kind_chain", "kind_epilogue", "kind_prologue", "kind_host"}) kinds += split[i][featureIndex(k)];
    CHECK(kinds == 1);
    CHECK(split[i][featureIndex("fuse")] == 0);
    CHECK(split[i][featureIndex("honored")] == 0);
    CHECK(byDefault[i][featureIndex("fuse")] == float(e.defaultDecisions()[i]));
    CHECK(split[i][featureIndex("log2_edge_bytes")] == Approx(std::log2(1 + 4 * 8 * 8 * 4.0)));
    CHECK(split[i][featureIndex("log2_edge_bytes_share")] == Approx(-std::log2(double(carried.size()))));
    CHECK(split[i][featureIndex("log2_producer_flops_share")] < 0);
    CHECK(split[i][featureIndex("log2_consumer_flops_share")] < 0);
  }
  for (size_t i = 0; i < e.edgeCount(); ++i) CHECK(edgeFeatures(e.planUnder(e.defaultDecisions()), i, 1) == byDefault[i]);
  // The two blocks' Conv -> Relu edges are one class; edges between other ops are not in it.
  const std::vector<size_t> classes = edgeClasses(plan);
  REQUIRE(classes.size() == e.edgeCount());
  std::vector<size_t> convRelu;
  for (size_t i = 0; i < classes.size(); ++i) {
    const codegen::FusionEdge& edge = plan.edges()[i];
    if (edge.producer->opType() == "Conv" && edge.consumer->opType() == "Relu") convRelu.push_back(i);
  }
  REQUIRE(convRelu.size() == 2);
  for (size_t i = 0; i < classes.size(); ++i)
    CHECK((classes[i] == classes[convRelu[0]]) == (i == convRelu[0] || i == convRelu[1]));
}

TEST_CASE("Gibbs sampling writes a dataset that reads back, and corrupt datasets are refused by line", "[fuse]") {
  Fixture f;
  const std::string dir = testing::scratchDir("fuse-gibbs");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/blocks.jsonl";
  GibbsOptions g;
  g.sweeps = 2, g.model = "blocks", g.seed = 3;
  std::ostringstream out;
  auto n = gibbsSample(*f.evaluator, g, out);
  REQUIRE(n.isOk());
  CHECK(*n == 2 * f.evaluator->edgeCount());  // every configuration of this graph is valid
  REQUIRE(writeFile(path, out.str()).isOk());
  auto d = AdvantageDataset::read(path);
  REQUIRE(d.isOk());
  CHECK(d->model == "blocks");
  CHECK(d->samples.size() == *n);
  for (const AdvantageSample& s : d->samples) CHECK((s.fuseMs > 0 && s.splitMs > 0));

  const std::string header = out.str().substr(0, out.str().find('\n') + 1);
  const std::pair<std::string, std::string> corrupt[] = {
      {"{\"schema\": \"other\"}\n", ":1: not a fusion dataset"},
      {header + "{\"features\": [1, 2]}\n", ":2: a sample needs"},
      {header + "not json\n", ":2: not a JSON object"},
      {"", "empty fusion dataset"},
  };
  for (const auto& [text, message] : corrupt) {
    REQUIRE(writeFile(path, text).isOk());
    auto bad = AdvantageDataset::read(path);
    REQUIRE(!bad.isOk());
    CHECK(bad.error().message().find(message) != std::string::npos);
  }
}

/// A dataset whose |advantage| is large exactly on epilogue edges.
AdvantageDataset epilogueDataset(FusionEvaluator& e) {
  AdvantageDataset d;
  d.model = "synthetic";
  const std::vector<std::vector<float>> rows = edgeFeatures(e.planUnder(e.defaultDecisions()), 1);
  for (int copy = 0; copy < 20; ++copy)
    for (const std::vector<float>& row : rows) {
      const bool epilogue = row[featureIndex("kind_epilogue")] == 1;
      d.samples.push_back({row, 1.0, epilogue ? 2.0 + 0.01 * copy : 1.0});
    }
  return d;
}

TEST_CASE("the advantage model learns a known function and round-trips through its file", "[fuse]") {
  Fixture f;
  const AdvantageDataset d = epilogueDataset(*f.evaluator);
  auto model = AdvantageModel::train({d});
  REQUIRE(model.isOk());
  std::vector<std::vector<float>> x;
  for (const AdvantageSample& s : d.samples) x.push_back(s.features);
  auto predicted = (*model)->predict(x);
  REQUIRE(predicted.isOk());
  float lowestEpilogue = 1e9f, highestOther = -1e9f;
  for (size_t i = 0; i < x.size(); ++i) {
    float& bound = x[i][featureIndex("kind_epilogue")] == 1 ? lowestEpilogue : highestOther;
    bound = x[i][featureIndex("kind_epilogue")] == 1 ? std::min(bound, (*predicted)[i]) : std::max(bound, (*predicted)[i]);
  }
  CHECK(lowestEpilogue > 0.5f);  // the labels: log(1 + 1) and more
  CHECK(highestOther < 0.1f);    // log(1 + 0)
  const std::string dir = testing::scratchDir("fuse-model");
  std::filesystem::create_directories(dir);
  REQUIRE((*model)->save(dir + "/m.json").isOk());
  auto loaded = AdvantageModel::load(dir + "/m.json");
  REQUIRE(loaded.isOk());
  CHECK((*loaded)->trainedOn() == std::vector<std::string>{"synthetic"});
  auto again = (*loaded)->predict(x);
  REQUIRE(again.isOk());
  CHECK(*again == *predicted);

  REQUIRE(writeFile(dir + "/bad.json", "{\"schema\": \"kiln-advantage/1\", \"features\": [\"x\"], \"xgboost\": {}}").isOk());
  auto bad = AdvantageModel::load(dir + "/bad.json");
  REQUIRE(!bad.isOk());
  CHECK(bad.error().message().find("other edge features") != std::string::npos);
  REQUIRE(!AdvantageModel::train({AdvantageDataset{}}).isOk());
}

TEST_CASE("searches are reproducible per seed and the guided strategy follows the model", "[fuse]") {
  Fixture f;
  FusionEvaluator& e = *f.evaluator;
  auto model = AdvantageModel::train({epilogueDataset(e)});
  REQUIRE(model.isOk());
  SearchOptions o;
  o.trials = 12, o.seed = 7, o.radius = 0, o.acceptPairs = 0, o.redraws = 0;
  o.advantage = model->get();

  // Each search on a fresh evaluator: a partition measured before is skipped, which changes the trials.
  auto sequence = [&](const std::string& strategy, uint64_t seed) {
    Fixture fresh;
    SearchOptions s = o;
    s.strategy = strategy, s.seed = seed;
    auto r = searchFusion(*fresh.evaluator, s);
    REQUIRE(r.isOk());
    std::vector<std::string> configs;
    for (const SearchTrial& t : r->trials) configs.push_back(decisionString(t.decisions));
    return std::pair{configs, *r};
  };
  // Until a trial is kept (which timing decides), the proposals are the seed's alone.
  auto [a, ra] = sequence("random", 7);
  auto [b, rb] = sequence("random", 7);
  REQUIRE(a.size() > 1);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    CHECK(a[i] == b[i]);
    if (i > 0 && (ra.trials[i].kept || rb.trials[i].kept)) break;
  }

  // Guided with alpha at the epilogue share draws only epilogue edges (radius 0: one edge per trial).
  const auto& edges = e.plan().edges();
  const size_t epilogues = size_t(std::count_if(edges.begin(), edges.end(), [](const codegen::FusionEdge& x) {
    return x.kind == codegen::EdgeKind::Epilogue;
  }));
  REQUIRE(epilogues >= 1);
  REQUIRE(epilogues < edges.size());
  o.alpha = double(epilogues) / double(edges.size());
  {
    auto [configs, result] = sequence("guided", 11);
    Decisions best = result.trials.front().decisions;
    std::set<size_t> drawn;
    for (size_t t = 1; t < result.trials.size(); ++t) {
      const Decisions& d = result.trials[t].decisions;
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] != best[i]) {
          drawn.insert(i);
          CHECK(edges[i].kind == codegen::EdgeKind::Epilogue);
        }
      if (result.trials[t].kept) best = d;
    }
    CHECK(!drawn.empty());
  }
  // Ranked from a random start first fuses the split epilogue edges of one class: the only flips the
  // model predicts to gain (fusing an epilogue is faster in its data), all of a class in one move.
  o.fromRandom = true;
  const std::vector<size_t> classes = edgeClasses(e.plan());
  int checked = 0;
  for (uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    auto [configs, result] = sequence("ranked", seed);
    REQUIRE(result.trials.size() > 1);
    const Decisions& start = result.trials[0].decisions;
    bool splitEpilogue = false;
    for (size_t i = 0; i < start.size(); ++i) splitEpilogue |= edges[i].kind == codegen::EdgeKind::Epilogue && !start[i];
    if (!splitEpilogue) continue;
    ++checked;
    const Decisions& first = result.trials[1].decisions;
    std::set<size_t> flippedClasses;
    for (size_t i = 0; i < first.size(); ++i)
      if (first[i] != start[i]) {
        flippedClasses.insert(classes[i]);
        CHECK(edges[i].kind == codegen::EdgeKind::Epilogue);
        CHECK(first[i]);
      }
    REQUIRE(flippedClasses.size() == 1);
    for (size_t i = 0; i < first.size(); ++i)  // the whole class moved
      if (classes[i] == *flippedClasses.begin()) CHECK(first[i]);
  }
  CHECK(checked > 0);
  o.fromRandom = false;

  o.advantage = nullptr;
  o.strategy = "guided";
  auto refused = searchFusion(e, o);
  REQUIRE(!refused.isOk());
  CHECK(refused.error().message().find("needs an advantage model") != std::string::npos);
}

namespace {

/// `text` with a few random edits: bytes flipped, spans cut, duplicated or truncated.
std::string mutate(const std::string& text, std::mt19937& rng) {
  std::string s = text;
  const int edits = 1 + int(rng() % 4);
  for (int k = 0; k < edits && !s.empty(); ++k) {
    const size_t at = rng() % s.size(), span = 1 + rng() % std::min<size_t>(s.size() - at, 40);
    switch (rng() % 5) {
      case 0: s[at] = char(rng() % 256); break;
      case 1: s.erase(at, span); break;
      case 2: s.insert(at, s.substr(at, span)); break;
      case 3: s.resize(at); break;
      default: s[at] = "{}[]\":,0-9ex"[rng() % 12]; break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("the dataset, database and model readers survive mutated files", "[fuse]") {
  Fixture f;
  const std::string dir = testing::scratchDir("fuse-mutants");
  std::filesystem::create_directories(dir);
  std::ostringstream data;
  GibbsOptions g;
  REQUIRE(gibbsSample(*f.evaluator, g, data).isOk());
  REQUIRE(f.evaluator->useDatabase(dir + "/db.jsonl").isOk());
  Decisions none(f.evaluator->edgeCount(), false);
  REQUIRE(f.evaluator->evaluate(none).isOk());
  auto db = readFile(dir + "/db.jsonl");
  REQUIRE(db.isOk());
  REQUIRE(!db->empty());
  auto model = AdvantageModel::train({epilogueDataset(*f.evaluator)});
  REQUIRE(model.isOk());
  REQUIRE((*model)->save(dir + "/model.json").isOk());
  auto modelText = readFile(dir + "/model.json");
  REQUIRE(modelText.isOk());

  std::mt19937 rng(5);
  const std::string path = dir + "/mutant";
  size_t refused = 0;
  for (int i = 0; i < 300; ++i) {
    REQUIRE(writeFile(path, mutate(data.str(), rng)).isOk());
    refused += !AdvantageDataset::read(path).isOk();
    REQUIRE(writeFile(path, mutate(*db, rng)).isOk());
    refused += !FusionDatabase::open(path, 1).isOk();
    if (i % 10 == 0) {  // the model file is large: fewer mutants
      REQUIRE(writeFile(path, mutate(*modelText, rng)).isOk());
      refused += !AdvantageModel::load(path).isOk();
    }
  }
  CHECK(refused > 100);  // most mutants are refused, with an error, and none crashes
}
