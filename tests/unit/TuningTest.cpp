//===- tests/unit/TuningTest.cpp - Tasks, features, model, strategies, db ---===//
//
// The autotuner's parts on a small graph with two identical convolution
// blocks: tasks deduplicate by signature; features follow the schedule; the
// XGBoost model ranks a known function; every strategy proposes distinct
// configurations of the space, reproducibly per seed; the RL explorer's
// agent learns the direction the model rewards; adaptive sampling
// clusters and synthesizes; the CPU measurer times valid candidates and
// rejects wrong ones; the tuning database round-trips, skips corrupt lines
// and applies best / keeps the default / reports missing and stale; the
// tuning loop keeps its budget and its curve falls monotonically, and
// compares interleaved candidates by their anchored times; the replay
// measurer answers from a table.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "ScratchDir.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/ir/Parser.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/tune/CostModel.h"
#include "kiln/tune/LibraryCallJson.h"
#include "kiln/tune/ScheduleFeatures.h"
#include "kiln/tune/Tuner.h"
#include "../../lib/tune/Exploration.h"

using namespace kiln;
using namespace kiln::tune;

namespace {

/// Two convolution blocks with the same shapes (one task), and a matmul.
const char* kTwoBlocks = R"(module @m {
  graph @main(%x: f32[1,4,8,8]) {
    %w1 = Constant() {value = tensor<f32[4,4,1,1]: [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.5, 0.25, 0.3, 0.2, -0.1, 0.4, 0.9, -0.6, 0.7, 0.05]>} : f32[4,4,1,1]
    %w2 = Constant() {value = tensor<f32[4,4,1,1]: [0.1, 0.2, 0.3, 0.4, -0.5, 0.6, -0.7, 0.8, 0.25, -0.5, 0.75, -1.0, 0.6, 0.4, 0.2, -0.3]>} : f32[4,4,1,1]
    %c1 = Conv(%x, %w1) : f32[1,4,8,8]
    %r1 = Relu(%c1) : f32[1,4,8,8]
    %c2 = Conv(%r1, %w2) : f32[1,4,8,8]
    %r2 = Relu(%c2) : f32[1,4,8,8]
    return %r2
  }
})";

struct Fixture {
  std::unique_ptr<ir::Module> module;
  TaskSet tasks;
  std::map<std::string, Tensor> reference;
  Fixture() {
    auto m = ir::parseModule(kTwoBlocks, "tune.kir");
    REQUIRE(m.isOk());
    module = std::move(*m);
    auto t = extractTasks(module->graph(), codegen::KernelTarget::Cpu);
    REQUIRE(t.isOk());
    tasks = std::move(*t);
    std::vector<float> x(4 * 8 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 17) - 8) / 8.0f;
    auto values = codegen::referenceValues(module->graph(), {Tensor::fromVector<float>({1, 4, 8, 8}, x)});
    REQUIRE(values.isOk());
    reference = std::move(*values);
  }
  const TuningTask& conv() const {
    for (const TuningTask& t : tasks.tasks)
      if (t.templateName == "conv2d") return t;
    FAIL("no conv task");
    return tasks.tasks.front();
  }
};

/// The CPU measurer with short samples (the tests' kernels are tiny).
Expected<std::unique_ptr<Measurer>> quickMeasurer(const std::map<std::string, Tensor>& reference, bool interleave = false) {
  MeasureOptions o;
  o.repeats = 2;
  o.minSampleMs = 0.05;
  o.interleave = interleave;
  return createCpuMeasurer(reference, o);
}

/// Tuning-loop options: `strategy` with a budget of `trials` in batches of `batch`, on at most `maxTasks` kernels (0: all).
TuneOptions tuneOptions(const std::string& strategy, size_t trials, size_t batch, size_t maxTasks = 0) {
  TuneOptions o;
  o.strategy = strategy;
  o.trials = trials;
  o.batch = batch;
  o.maxTasks = maxTasks;
  return o;
}

/// A new, empty tuning database in a scratch directory of its own.
Expected<TuningDatabase> scratchDatabase(const std::string& name) {
  const std::string dir = testing::scratchDir(name);
  std::filesystem::create_directories(dir);
  return TuningDatabase::open(dir + "/db.jsonl");
}

double spearman(const std::vector<float>& a, const std::vector<float>& b) {
  auto ranks = [](const std::vector<float>& v) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size(); ++i) r[order[i]] = double(i);
    return r;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double n = double(a.size()), d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

MeasureResult fakeResult(const codegen::Config& c, double ms) {
  MeasureResult r;
  r.config = c;
  r.ms = ms;
  return r;
}

}  // namespace

TEST_CASE("tuning tasks: identical kernels share one task and a stable signature") {
  Fixture f;
  REQUIRE(f.tasks.tasks.size() == 1);
  const TuningTask& t = f.conv();
  CHECK(t.groups.size() == 2);  // both conv blocks
  CHECK(t.signature.rfind("conv2d-cpu-", 0) == 0);
  CHECK(t.space.size() > 8);
  CHECK(t.flops > 0);
  CHECK(t.description.find("Conv 1x4x8x8 -> 1x4x8x8+Relu") == 0);
  // Same graph again (other value names): same signature and space version.
  std::string renamed = kTwoBlocks;
  for (size_t at; (at = renamed.find("%c1")) != std::string::npos;) renamed.replace(at, 3, "%zz");
  auto m = ir::parseModule(renamed, "renamed.kir");
  REQUIRE(m.isOk());
  auto again = extractTasks((*m)->graph(), codegen::KernelTarget::Cpu);
  REQUIRE(again.isOk());
  CHECK(again->tasks.front().signature == t.signature);
  CHECK(again->tasks.front().spaceVersion == t.spaceVersion);
  // A GPU lowering is another task.
  auto gpu = extractTasks((*m)->graph(), codegen::KernelTarget::Gpu);
  REQUIRE(gpu.isOk());
  CHECK(gpu->tasks.front().signature != t.signature);
}

TEST_CASE("kernels default to the thread pool only when big enough to pay for waking it") {
  auto m = ir::parseModule(R"(module @m {
  graph @main(%a: f32[4,8], %b: f32[8,8], %c: f32[256,256], %d: f32[256,256]) {
    %small = MatMul(%a, %b) : f32[4,8]
    %large = MatMul(%c, %d) : f32[256,256]
    return %small, %large
  }
})", "pool.kir");
  REQUIRE(m.isOk());
  auto tasks = extractTasks((*m)->graph(), codegen::KernelTarget::Cpu);
  REQUIRE(tasks.isOk());
  std::map<std::string, int64_t> parallel;
  for (const TuningTask& t : tasks->tasks) parallel[t.description] = t.space.defaultConfig().at("parallel");
  INFO(parallel.size() << " tasks");
  REQUIRE(parallel.size() == 2);
  for (const auto& [description, p] : parallel) {
    INFO(description);
    CHECK(p == (description.find("256") != std::string::npos ? 1 : 0));  // 16.7M multiply-adds vs 256
  }
}

TEST_CASE("elementwise kernels vectorize by default unless a transpose moves the last axis") {
  // %x * 2 + 1 and BERT's head split (a reshape: affine once simplifyIndices
  // has run) stay vectorized, the layout transform (the last axis moves) does
  // not; a chain of 12 ops over 128K elements is worth the pool, 2 ops are not.
  auto m = ir::parseModule(R"(module @m {
  graph @main(%x: f32[4,32,32,32], %s: f32[128,768], %c: f32[512,256]) {
    %two = Constant() {value = tensor<f32[]: [2.0]>} : f32[]
    %one = Constant() {value = tensor<f32[]: [1.0]>} : f32[]
    %scaled = Mul(%x, %two) : f32[4,32,32,32]
    %shifted = Add(%scaled, %one) : f32[4,32,32,32]
    %shape5 = Constant() {value = tensor<i64[5]: [4, 2, 16, 32, 32]>} : i64[5]
    %split = Reshape(%x, %shape5) : f32[4,2,16,32,32]
    %blocked = Transpose(%split) {perm = [0, 1, 3, 4, 2]} : f32[4,2,32,32,16]
    %shape4 = Constant() {value = tensor<i64[3]: [128, 12, 64]>} : i64[3]
    %heads = Reshape(%s, %shape4) : f32[128,12,64]
    %a1 = Add(%c, %one) : f32[512,256]
    %a2 = Mul(%a1, %two) : f32[512,256]
    %a3 = Add(%a2, %one) : f32[512,256]
    %a4 = Mul(%a3, %two) : f32[512,256]
    %a5 = Add(%a4, %one) : f32[512,256]
    %a6 = Mul(%a5, %two) : f32[512,256]
    %a7 = Add(%a6, %one) : f32[512,256]
    %a8 = Mul(%a7, %two) : f32[512,256]
    %a9 = Sqrt(%a8) : f32[512,256]
    %a10 = Exp(%a9) : f32[512,256]
    %a11 = Neg(%a10) : f32[512,256]
    %a12 = Abs(%a11) : f32[512,256]
    return %shifted, %blocked, %heads, %a12
  }
})", "injective.kir");
  REQUIRE(m.isOk());
  auto tasks = extractTasks((*m)->graph(), codegen::KernelTarget::Cpu);
  REQUIRE(tasks.isOk());
  std::map<std::string, codegen::Config> defaults;
  for (const TuningTask& t : tasks->tasks) defaults[t.description] = t.space.defaultConfig();
  auto find = [&](const std::string& text) {
    for (const auto& [description, config] : defaults)
      if (description.find(text) != std::string::npos) return config;
    FAIL("no kernel described with " << text);
    return codegen::Config{};
  };
  INFO(defaults.size() << " tasks");
  CHECK(find("Mul 4x32x32x32").at("vector") == 8);
  CHECK(find("Mul 4x32x32x32").at("parallel") == 0);  // 2 ops x 128K elements
  CHECK(find("Reshape 4x32x32x32").at("vector") == 1);
  CHECK(find("Reshape 128x768").at("vector") == 8);
  CHECK(find("Add 512x256").at("vector") == 8);
  CHECK(find("Add 512x256").at("parallel") == 1);  // 12 ops x 128K elements
}

TEST_CASE("schedule features follow the configuration") {
  Fixture f;
  const TuningTask& t = f.conv();
  TaskSpace space(t);
  std::set<std::vector<float>> distinct;
  size_t width = 0;
  for (uint64_t i = 0; i < space.size(); ++i) {
    const std::vector<float>* v = space.features(i);
    if (!v) continue;
    width = v->size();
    distinct.insert(*v);
  }
  CHECK(width == t.space.knobs.size() + kernelFeatureCount());
  CHECK(scheduleFeatureNames(t.space).size() == width);
  CHECK(distinct.size() > space.size() / 2);  // configurations are told apart
  // The parallel knob shows in the parallel extent statistic.
  codegen::Config serial = t.space.defaultConfig(), parallel = serial;
  serial["parallel"] = 0;
  parallel["parallel"] = 1;
  auto a = codegen::lowerGroup(*t.groups.front(), codegen::KernelTarget::Cpu, &serial);
  auto b = codegen::lowerGroup(*t.groups.front(), codegen::KernelTarget::Cpu, &parallel);
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(kernelStats(a->kernel).parallelExtent == 1);
  CHECK(kernelStats(b->kernel).parallelExtent > 1);
  CHECK(kernelStats(a->kernel).flops == Approx(kernelStats(b->kernel).flops).epsilon(0.5));
}

TEST_CASE("the XGBoost cost model ranks a function it was trained on") {
  SplitMix64 rng(7);
  auto f = [](const std::vector<float>& x) { return float(-std::pow(x[0] - 3, 2) - 0.5 * std::fabs(x[1] - 1) + x[2]); };
  std::vector<std::vector<float>> train, test;
  std::vector<float> y, truth;
  for (int i = 0; i < 300; ++i) {
    std::vector<float> x{float(rng.below(8)), float(rng.below(4)), float(rng.unit())};
    (i < 200 ? train : test).push_back(x);
    (i < 200 ? y : truth).push_back(f(x));
  }
  CostModel model({40, 6, 0.3, 1});
  CHECK_FALSE(model.trained());
  REQUIRE(model.fit(train, y).isOk());
  auto predicted = model.predict(test);
  REQUIRE(predicted.isOk());
  CHECK(spearman(*predicted, truth) > 0.8);
  // Rows of the wrong width are an error, not a crash.
  CHECK_FALSE(model.predict({{1.0f}}).isOk());
}

TEST_CASE("strategies propose distinct configurations of the space, reproducibly") {
  Fixture f;
  const TuningTask& t = f.conv();
  for (const std::string& name : strategyNames()) {
    INFO(name);
    auto run = [&](uint64_t seed) {
      StrategyOptions o;
      o.seed = seed;
      o.chains = 8;
      o.annealSteps = 10;
      auto s = makeStrategy(name, t, o);
      REQUIRE(s.isOk());
      std::vector<codegen::Config> all;
      for (int round = 0; round < 4; ++round) {
        auto batch = (*s)->next(4);
        REQUIRE(batch.isOk());
        CHECK(batch->size() <= 4);
        std::vector<MeasureResult> results;
        for (const codegen::Config& c : *batch) {
          CHECK(t.space.check(c).isOk());
          all.push_back(c);
          // A synthetic time: larger tw is faster, serial is slower.
          results.push_back(fakeResult(c, 1.0 / double(c.at("tw")) + (c.at("parallel") ? 0.0 : 0.5)));
        }
        REQUIRE((*s)->update(results).isOk());
      }
      return all;
    };
    std::vector<codegen::Config> a = run(1), b = run(1);
    CHECK(a == b);
    std::set<codegen::Config> distinct(a.begin(), a.end());
    CHECK(distinct.size() == a.size());
    CHECK(a.size() >= 4);
    if (name == "grid") CHECK(a.front() == t.space.configAt(0));
  }
  CHECK_FALSE(makeStrategy("annealing", t, {}).isOk());
  // A small space is exhausted exactly.
  auto grid = makeStrategy("grid", t, {});
  size_t total = 0;
  for (;;) {
    auto batch = (*grid)->next(64);
    REQUIRE(batch.isOk());
    if (batch->empty()) break;
    total += batch->size();
  }
  CHECK(total == t.space.size());
}

TEST_CASE("transfer data guides the first batch of a model-guided strategy") {
  Fixture f;
  const TuningTask& t = f.conv();
  TaskSpace space(t);
  // Another kernel's log in which wide, parallel, im2col schedules were fastest.
  auto score = [&](const codegen::Config& c) { return double(c.at("tw")) / 64.0 + double(c.at("parallel")) + double(c.at("algo")); };
  TransferData transfer;
  for (uint64_t i = 0; i < space.size(); i += 2)
    if (const std::vector<float>* x = space.features(i)) {
      transfer.x.push_back(*x);
      transfer.y.push_back(float(score(space.config(i)) / 3.0));
    }
  transfer.groups = {unsigned(transfer.x.size())};
  auto meanScore = [&](const std::string& name, const TransferData& data) {
    StrategyOptions o;
    o.seed = 5;
    o.transfer = data;
    auto s = makeStrategy(name, t, o);
    REQUIRE(s.isOk());
    auto batch = (*s)->next(8);
    REQUIRE(batch.isOk());
    REQUIRE(batch->size() == 8);
    double sum = 0;
    for (const codegen::Config& c : *batch) sum += score(c);
    return sum / 8;
  };
  double guided = meanScore("sa", transfer), unguided = meanScore("sa", {});
  CHECK(guided > unguided);
  CHECK(guided > 2.0);  // near the top of the 0..3 scale
}

TEST_CASE("sa-as and rl-as start from the incumbent: its neighbours first and then the model's best of them") {
  Fixture f;
  const TuningTask& t = f.conv();
  const codegen::Config base = t.space.defaultConfig();
  auto knobsMoved = [&](const codegen::Config& a, const codegen::Config& b) {
    int moved = 0;
    for (const auto& [knob, value] : a) moved += b.at(knob) != value;
    return moved;
  };
  TaskSpace space(t);
  const size_t round = space.neighbours(space.indexOf(base)).size();
  REQUIRE(round >= 4);
  size_t expected = 0;
  for (const codegen::Knob& k : t.space.knobs) expected += k.values.size() - 1;
  CHECK(round == expected);
  for (uint64_t i : space.neighbours(space.indexOf(base))) CHECK(knobsMoved(space.config(i), base) == 1);
  // How many configurations the first round after the default's measurement proposes, and how many of them are its neighbours.
  auto firstRound = [&](const std::string& name, SearchStart start) {
    StrategyOptions o;
    o.seed = 3;
    o.start = start;
    auto s = makeStrategy(name, t, o);
    REQUIRE(s.isOk());
    REQUIRE((*s)->update({fakeResult(base, 1.0)}).isOk());  // the tuner measures the default first
    auto batch = (*s)->next(round);
    REQUIRE(batch.isOk());
    REQUIRE(!batch->empty());
    size_t neighbours = 0;
    for (const codegen::Config& c : *batch) neighbours += knobsMoved(c, base) == 1;
    return std::make_pair(batch->size(), neighbours);
  };
  using Counts = std::pair<size_t, size_t>;
  for (const char* name : {"sa-as", "rl-as"}) {
    INFO(name);
    CHECK(firstRound(name, SearchStart::Auto) == Counts(round, round));  // every neighbour, none twice
    Counts random = firstRound(name, SearchStart::Random);  // the former behaviour: a clustered random sample
    CHECK(random.second < random.first);
  }
  Counts autotvm = firstRound("sa", SearchStart::Auto);  // AutoTVM's random first round
  CHECK(autotvm.first == round);
  CHECK(autotvm.second < round);
  CHECK(firstRound("sa", SearchStart::Incumbent) == Counts(round, round));

  // The first round takes the smallest steps first: a knob moved to the adjacent value in its list before further along.
  const std::vector<size_t> baseDigits = space.digits(space.indexOf(base));
  auto places = [&](const codegen::Config& c) {
    const std::vector<size_t> d = space.digits(space.indexOf(c));
    size_t moved = 0;
    for (size_t k = 0; k < d.size(); ++k) moved += d[k] > baseDigits[k] ? d[k] - baseDigits[k] : baseDigits[k] - d[k];
    return moved;
  };
  size_t adjacent = 0;
  for (uint64_t i : space.neighbours(space.indexOf(base))) adjacent += places(space.config(i)) == 1;
  REQUIRE(adjacent >= 2);
  REQUIRE(adjacent < round);  // some neighbours are further steps, so the order matters
  for (const char* name : {"sa-as", "rl-as"})
    for (uint64_t seed : {1, 2, 3}) {
      INFO(name << " seed " << seed);
      StrategyOptions o;
      o.seed = seed;
      for (size_t count : {adjacent, round}) {
        auto s = makeStrategy(name, t, o);
        REQUIRE(s.isOk());
        REQUIRE((*s)->update({fakeResult(base, 1.0)}).isOk());
        auto batch = (*s)->next(count);
        REQUIRE(batch.isOk());
        REQUIRE(batch->size() == count);
        for (size_t i = 0; i < batch->size(); ++i) {
          if (i < adjacent) CHECK(places((*batch)[i]) == 1);
          if (i > 0) CHECK(places((*batch)[i - 1]) <= places((*batch)[i]));
        }
      }
    }

  // Later rounds begin with the model's two best-predicted neighbours of the new incumbent.
  StrategyOptions o;
  o.seed = 3;
  auto s = makeStrategy("sa-as", t, o);
  REQUIRE(s.isOk());
  auto time = [](const codegen::Config& c) { return 1.0 / double(c.at("tw")) + (c.at("parallel") ? 0.0 : 0.5); };
  REQUIRE((*s)->update({fakeResult(base, time(base))}).isOk());
  std::vector<MeasureResult> results;
  for (int round = 0; round < 2; ++round) {
    auto batch = (*s)->next(4);
    REQUIRE(batch.isOk());
    REQUIRE(!batch->empty());
    if (round == 1) {
      codegen::Config incumbent = base;
      for (const MeasureResult& r : results)
        if (r.ms < time(incumbent)) incumbent = r.config;
      REQUIRE(batch->size() >= 2);
      CHECK(knobsMoved((*batch)[0], incumbent) == 1);
      CHECK(knobsMoved((*batch)[1], incumbent) == 1);
    }
    std::vector<MeasureResult> now;
    for (const codegen::Config& c : *batch) now.push_back(fakeResult(c, time(c)));
    REQUIRE((*s)->update(now).isOk());
    results.insert(results.end(), now.begin(), now.end());
  }

  // No incumbent (the default schedule failed): a clustered random sample, as before.
  auto failed = makeStrategy("sa-as", t, o);
  REQUIRE(failed.isOk());
  MeasureResult broken = fakeResult(base, 0);
  broken.status = MeasureStatus::WrongOutput;
  REQUIRE((*failed)->update({broken}).isOk());
  auto batch = (*failed)->next(4);
  REQUIRE(batch.isOk());
  CHECK(!batch->empty());
}

TEST_CASE("the RL explorer's PPO agent learns to move knobs the way the model rewards") {
  Fixture f;
  TaskSpace space(f.conv());
  // A cost model that predicts higher scores the higher every knob's value position.
  auto position = [&](uint64_t index) {
    std::vector<double> p = space.positions(index);
    return std::accumulate(p.begin(), p.end(), 0.0) / double(p.size());
  };
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  for (uint64_t i = 0; i < space.size(); ++i)
    if (const std::vector<float>* row = space.features(i)) x.push_back(*row), y.push_back(float(position(i)));
  CostModel model({60, 6, 0.3, 1});
  REQUIRE(model.fit(x, y).isOk());
  StrategyOptions o;
  o.seed = 11;
  o.chains = 16;
  std::unique_ptr<Explorer> rl = makeRlExplorer(o);
  // Every configuration the episodes of one call reach (nothing visited, no measured starts).
  auto reached = [&] {
    auto c = rl->explore(space, model, {}, space.size());
    REQUIRE(c.isOk());
    double mean = 0;
    for (uint64_t i : *c) mean += position(i);
    return std::make_pair(c->size(), mean / double(std::max<size_t>(c->size(), 1)));
  };
  auto [firstCount, firstPosition] = reached();
  for (int call = 0; call < 40; ++call) reached();
  auto [lastCount, lastPosition] = reached();
  INFO("reached " << firstCount << " configurations at mean position " << firstPosition << ", after training "
                  << lastCount << " at " << lastPosition);
  CHECK(lastPosition > firstPosition + 0.1);  // the walks climb where the model points
  CHECK(lastCount < firstCount);              // and crowd there instead of wandering
}

TEST_CASE("adaptive sampling measures one configuration per cluster and synthesizes") {
  Fixture f;
  TaskSpace space(f.conv());
  SplitMix64 rng(3);
  // Two tight clusters of candidates: far apart in every knob.
  std::vector<size_t> low(space.task().space.knobs.size(), 0), high = low;
  for (size_t k = 0; k < high.size(); ++k) high[k] = space.task().space.knobs[k].values.size() - 1;
  std::vector<uint64_t> candidates;
  for (size_t k = 0; k < low.size(); ++k) {
    std::vector<size_t> a = low, b = high;
    if (space.task().space.knobs[k].values.size() > 2) a[k] = 1, b[k] = b[k] - 1;
    candidates.push_back(space.fromDigits(a));
    candidates.push_back(space.fromDigits(b));
  }
  candidates.push_back(space.fromDigits(low));
  candidates.push_back(space.fromDigits(high));
  std::vector<uint64_t> picked = adaptiveSample(space, candidates, {}, 8, rng);
  CHECK(picked.size() >= 2);
  CHECK(picked.size() < candidates.size());  // fewer than the candidates: one per cluster
  // With every candidate measured, synthesis still yields unmeasured configurations or nothing.
  std::set<uint64_t> visited(candidates.begin(), candidates.end());
  for (uint64_t p : adaptiveSample(space, candidates, visited, 8, rng)) CHECK_FALSE(visited.count(p));
}

TEST_CASE("the CPU measurer times valid candidates and rejects wrong ones") {
  Fixture f;
  const TuningTask& t = f.conv();
  auto measurer = quickMeasurer(f.reference);
  REQUIRE(measurer.isOk());
  codegen::Config bad = t.space.defaultConfig();
  bad["tw"] = 3;  // not a candidate
  auto results = (*measurer)->measure(t, {t.space.defaultConfig(), t.space.configAt(1), bad});
  REQUIRE(results.isOk());
  REQUIRE(results->size() == 3);
  CHECK((*results)[0].ok());
  CHECK((*results)[0].ms > 0);
  CHECK((*results)[0].maxError < 1e-5);
  CHECK((*results)[1].ok());
  CHECK((*results)[2].status == MeasureStatus::LowerError);
  // A reference that disagrees makes every candidate wrong.
  auto wrongRef = f.reference;
  for (auto& [name, value] : wrongRef)
    if (name == "r1") {
      std::vector<float> v(value.numElements(), 42.0f);
      value = Tensor::fromVector<float>(value.dims(), v);
    }
  auto wrong = quickMeasurer(wrongRef);
  REQUIRE(wrong.isOk());
  auto w = (*wrong)->measure(t, {t.space.defaultConfig()});
  REQUIRE(w.isOk());
  CHECK(w->front().status == MeasureStatus::WrongOutput);
  CHECK(w->front().error.find("tolerance") != std::string::npos);
}

TEST_CASE("interleaved timing samples every run in turn and keeps their proportions") {
  // Two "kernels" that busy-wait 0.2 and 0.6 ms: timed in interleaved
  // rounds each keeps its own time (the rounds alternate, so a slow moment
  // would hit both), and each is warmed, calibrated and sampled as often as
  // the options say.
  auto spin = [](double ms, int& calls) {
    return [ms, &calls] {
      ++calls;
      Stopwatch t;
      while (t.elapsedMs() < ms) {
      }
    };
  };
  int shortCalls = 0, longCalls = 0;
  MeasureOptions o;
  o.warmup = 2;
  o.repeats = 5;
  o.minSampleMs = 0.1;
  std::vector<double> ms = timeInterleaved({spin(0.2, shortCalls), spin(0.6, longCalls)}, o);
  REQUIRE(ms.size() == 2);
  CHECK(ms[0] >= 0.2);
  CHECK(ms[1] >= 0.6);
  CHECK(ms[1] / ms[0] > 2.0);
  CHECK(ms[1] / ms[0] < 4.0);
  // Warm-up 2, calibration 1, then per round an untimed run and one timed run (each lasts minSampleMs alone).
  CHECK(shortCalls == 2 + 1 + 5 * 2);
  CHECK(longCalls == shortCalls);
  CHECK(timeInterleaved({}, o).empty());
}

TEST_CASE("the CPU measurer's interleaved timing measures the default beside the batch as its anchor") {
  Fixture f;
  const TuningTask& t = f.conv();
  auto measurer = quickMeasurer(f.reference, /*interleave=*/true);
  REQUIRE(measurer.isOk());
  codegen::Config bad = t.space.defaultConfig();
  bad["tw"] = 3;  // not a candidate
  // The default is not asked for: it is measured all the same, and only what was asked comes back.
  const codegen::Config other = t.space.configAt(1) == t.space.defaultConfig() ? t.space.configAt(2) : t.space.configAt(1);
  auto results = (*measurer)->measure(t, {other, bad});
  REQUIRE(results.isOk());
  REQUIRE(results->size() == 2);
  CHECK((*results)[0].ok());
  CHECK((*results)[0].ms > 0);
  CHECK((*results)[0].anchorMs > 0);
  CHECK((*results)[0].anchorMs != (*results)[0].ms);
  CHECK((*results)[1].status == MeasureStatus::LowerError);
  CHECK((*results)[1].anchorMs == 0);
  // Asked for, the default is its own anchor.
  auto withDefault = (*measurer)->measure(t, {t.space.defaultConfig(), other});
  REQUIRE(withDefault.isOk());
  CHECK((*withDefault)[0].anchorMs == (*withDefault)[0].ms);
  CHECK((*withDefault)[1].anchorMs == (*withDefault)[0].ms);
  // Wrong outputs are still caught before any timing.
  auto wrongRef = f.reference;
  for (auto& [name, value] : wrongRef)
    if (name == "r1") value = Tensor::fromVector<float>(value.dims(), std::vector<float>(value.numElements(), 42.0f));
  auto wrong = quickMeasurer(wrongRef, true);
  REQUIRE(wrong.isOk());
  auto w = (*wrong)->measure(t, {other});
  REQUIRE(w.isOk());
  CHECK(w->front().status == MeasureStatus::WrongOutput);
  CHECK(w->front().anchorMs == 0);
  // The tuning loop records each measurement's anchor.
  auto db = scratchDatabase("tuning-interleaved");
  REQUIRE(db.isOk());
  REQUIRE(tuneTasks(f.tasks, **measurer, tuneOptions("random", 4, 2, 1), &*db).isOk());
  auto reread = TuningDatabase::open(db->path(), true);
  REQUIRE(reread.isOk());
  size_t anchored = 0;
  for (const TuningRecord& r : reread->records()) anchored += r.status == MeasureStatus::Ok && r.anchorMs > 0;
  CHECK(anchored >= 4);
  // The GPU measurer refuses it, with or without a GPU.
  MeasureOptions cuda;
  cuda.interleave = true;
  auto refused = createCudaMeasurer(f.reference, cuda);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.error().code() == ErrorCode::InvalidArgument);
  CHECK(refused.error().message().find("cpu target only") != std::string::npos);
}

TEST_CASE("the tuning database round-trips, skips corrupt lines and applies what is faster") {
  Fixture f;
  const TuningTask& t = f.conv();
  std::string dir = testing::scratchDir("tuning-db");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/db.jsonl";
  auto db = TuningDatabase::open(path);
  REQUIRE(db.isOk());
  CHECK(db->records().empty());
  CHECK_FALSE(TuningDatabase::open(dir + "/none.jsonl", true).isOk());
  auto rec = [&](const codegen::Config& c, double ms, bool isDefault) {
    TuningRecord r;
    r.target = "cpu";
    r.device = "dev";
    r.toolkit = "tk";
    r.signature = t.signature;
    r.spaceVersion = t.spaceVersion;
    r.config = c;
    r.ms = ms;
    r.isDefault = isDefault;
    return r;
  };
  codegen::Config tuned = t.space.configAt(1);
  REQUIRE(db->append(rec(t.space.defaultConfig(), 2.0, true)).isOk());
  REQUIRE(db->append(rec(tuned, 1.0, false)).isOk());
  REQUIRE(appendLine(path, "{not json").isOk());
  REQUIRE(appendLine(path, R"({"schema":"kiln-tune/1","target":"cpu"})").isOk());
  auto back = TuningDatabase::open(path);
  REQUIRE(back.isOk());
  REQUIRE(back->records().size() == 2);
  CHECK(back->records()[1].config == tuned);
  REQUIRE(back->problems().size() == 2);
  CHECK(back->problems()[0].find("db.jsonl:3:") != std::string::npos);
  CHECK(back->problems()[1].find("db.jsonl:4:") != std::string::npos);

  TuningApplication a = applyTuningDatabase(f.tasks, *back, "cpu", "dev", "tk");
  REQUIRE(a.kernels.size() == 2);
  CHECK(a.count(ApplyStatus::Applied) == 2);
  CHECK(a.configs.at(t.groups[0]->name()) == tuned);
  CHECK(a.summary().find("2 kernels applied") != std::string::npos);
  // Another device: missing; another toolkit: stale.
  CHECK(applyTuningDatabase(f.tasks, *back, "cpu", "other", "tk").count(ApplyStatus::Missing) == 2);
  TuningApplication stale = applyTuningDatabase(f.tasks, *back, "cpu", "dev", "tk2");
  CHECK(stale.count(ApplyStatus::Stale) == 2);
  CHECK(stale.configs.empty());
  CHECK(stale.kernels[0].why.find("tk") != std::string::npos);
  // Newer, faster default measurements: by the mean, the tuned config is no longer faster.
  REQUIRE(back->append(rec(t.space.defaultConfig(), 0.2, true)).isOk());  // default mean (2 + 0.2 + 0.2) / 3 < 1
  REQUIRE(back->append(rec(t.space.defaultConfig(), 0.2, true)).isOk());
  TuningApplication kept = applyTuningDatabase(f.tasks, *back, "cpu", "dev", "tk");
  CHECK(kept.count(ApplyStatus::KeptDefault) == 2);
  CHECK(kept.configs.empty());
  // A record from another knob space version is stale.
  TuningRecord old = rec(tuned, 0.1, false);
  old.spaceVersion = "0000000000000000";
  TuningDatabase other = *TuningDatabase::open(dir + "/other.jsonl");
  REQUIRE(other.append(old).isOk());
  TuningApplication s2 = applyTuningDatabase(f.tasks, other, "cpu", "dev", "tk");
  CHECK(s2.count(ApplyStatus::Stale) == 2);
  CHECK(s2.kernels[0].why.find("knob space") != std::string::npos);
}

TEST_CASE("applying a database follows the confirmations, else the times relative to the default beside them") {
  Fixture f;
  const TuningTask& t = f.conv();
  const codegen::Config def = t.space.defaultConfig(), a = t.space.configAt(1), b = t.space.configAt(2);
  REQUIRE((a != def && b != def && a != b));
  auto rec = [&](const codegen::Config& c, double ms, double anchorMs, const std::string& strategy,
                 MeasureStatus status = MeasureStatus::Ok) {
    TuningRecord r;
    r.target = "cpu", r.device = "dev", r.toolkit = "tk";
    r.signature = t.signature;
    r.spaceVersion = t.spaceVersion;
    r.config = c, r.ms = ms, r.anchorMs = anchorMs, r.status = status;
    r.isDefault = c == def;
    r.strategy = strategy;
    return r;
  };
  auto applied = [&](const std::vector<TuningRecord>& records) {
    auto db = scratchDatabase("tuning-verdict");
    REQUIRE(db.isOk());
    for (const TuningRecord& r : records) REQUIRE(db->append(r).isOk());
    TuningApplication app = applyTuningDatabase(f.tasks, *db, "cpu", "dev", "tk");
    const auto k = std::find_if(app.kernels.begin(), app.kernels.end(),
                                [&](const KernelApplication& x) { return x.signature == t.signature; });
    REQUIRE(k != app.kernels.end());
    return *k;
  };
  SECTION("interleaved records without confirmations: by the time relative to the default beside each") {
    // b is fastest as measured (0.8 ms, in a fast moment: its default ran 0.8 too), a is 25% faster than the
    // default beside it.
    KernelApplication k = applied({rec(def, 1.0, 1.0, "default"), rec(a, 0.9, 1.2, "sa"), rec(b, 0.8, 0.8, "sa")});
    CHECK(k.status == ApplyStatus::Applied);
    CHECK(k.config == a);
    CHECK(k.tunedMs == Approx(0.75));  // a's relative time on the default's 1.0 ms
    CHECK(k.defaultMs == Approx(1.0));
    // The same times without anchors: as measured, b.
    k = applied({rec(def, 1.0, 0, "default"), rec(a, 0.9, 0, "sa"), rec(b, 0.8, 0, "sa")});
    CHECK(k.config == b);
  }
  SECTION("confirmations decide over separate measurements") {
    // b measured fastest, but the confirmation pair (default, then the winner) kept the default.
    KernelApplication k = applied({rec(def, 1.0, 0, "default"), rec(b, 0.5, 0, "sa"), rec(def, 1.0, 0, "confirm"),
                                   rec(b, 1.1, 0, "confirm")});
    CHECK(k.status == ApplyStatus::KeptDefault);
    CHECK(k.tunedMs == Approx(1.1));
    CHECK(k.defaultMs == Approx(1.0));
    // Two tuning runs: a won its pair (0.9), b won one (0.8) and lost one (1.4): a, on the mean ratio.
    k = applied({rec(def, 2.0, 0, "confirm"), rec(b, 1.6, 0, "confirm"), rec(def, 1.0, 0, "confirm"),
                 rec(a, 0.9, 0, "confirm"), rec(def, 1.0, 0, "confirm"), rec(b, 1.4, 0, "confirm")});
    CHECK(k.status == ApplyStatus::Applied);
    CHECK(k.config == a);
    CHECK(k.tunedMs == Approx(0.9));
    // A confirmation whose run failed disqualifies its configuration.
    k = applied({rec(def, 1.0, 0, "confirm"), rec(a, 0.5, 0, "confirm"), rec(def, 1.0, 0, "confirm"),
                 rec(a, 0, 0, "confirm", MeasureStatus::RunError)});
    CHECK(k.status == ApplyStatus::KeptDefault);
    // With no pair left, the default stays and the times come from the means (the default's 1.0 ms; a's 0.5 and 0.6).
    k = applied({rec(def, 1.0, 0, "default"), rec(a, 0.5, 0, "sa"), rec(def, 0, 0, "confirm", MeasureStatus::RunError),
                 rec(a, 0.6, 0, "confirm")});
    CHECK(k.status == ApplyStatus::KeptDefault);
    CHECK(k.defaultMs == Approx(1.0));
    CHECK(k.tunedMs == Approx(0.55));
  }
}

TEST_CASE("the tuning loop keeps its budget and records every measurement") {
  Fixture f;
  auto measurer = quickMeasurer(f.reference);
  REQUIRE(measurer.isOk());
  auto db = scratchDatabase("tuning-loop");
  REQUIRE(db.isOk());
  TuneOptions o = tuneOptions("sa-as", 10, 4);
  size_t progressCalls = 0;
  o.progress = [&](const TuneProgress& p) {
    ++progressCalls;
    CHECK(p.trials <= p.budget);
  };
  auto report = tuneTasks(f.tasks, **measurer, o, &*db);
  REQUIRE(report.isOk());
  CHECK(report->trials == 10);
  CHECK(progressCalls >= 3);
  const TaskOutcome& t = report->tasks.front();
  CHECK(t.curve.size() == t.trials + 1);
  for (size_t i = 1; i < t.curve.size(); ++i) CHECK(t.curve[i] <= t.curve[i - 1]);
  CHECK(t.bestMs <= t.defaultMs);
  // Every measurement is a record; a winner is confirmed beside the default once more.
  size_t defaults = 0;
  for (const TuningRecord& r : db->records()) defaults += r.isDefault;
  CHECK((defaults == 1 || defaults == 2));
  CHECK(db->records().size() == report->trials + report->invalid + report->reused + 2 * defaults - 1);
  // What the loop wrote applies to the model, and the compiled model still computes the same.
  TuningApplication a = applyTuningDatabase(f.tasks, *db, "cpu", (*measurer)->device(), (*measurer)->toolkit());
  CHECK(a.count(ApplyStatus::Missing) == 0);
  CHECK(a.count(ApplyStatus::Applied) + a.count(ApplyStatus::KeptDefault) == 2);
}

TEST_CASE("the tuning loop measures each distinct kernel once") {
  // Of the 1x1 conv's configurations many compile to the same kernel (with
  // algo 0, direct, the im2col knobs order and pack change nothing): grid
  // over the whole space measures each distinct kernel once and records the
  // others as copies ("same-code") that cost no trial.
  Fixture f;
  const TuningTask& t = f.conv();
  auto measurer = quickMeasurer(f.reference);
  REQUIRE(measurer.isOk());
  auto db = scratchDatabase("tuning-same-code");
  REQUIRE(db.isOk());
  TuneOptions o = tuneOptions("grid", 100000, 16);
  auto report = tuneTasks(f.tasks, **measurer, o, &*db);
  REQUIRE(report.isOk());
  TaskSpace space(t);
  std::set<uint64_t> distinct;
  for (uint64_t i = 0; i < space.size(); ++i)
    if (auto key = space.codeKey(i)) distinct.insert(*key);
  REQUIRE(distinct.size() < space.size());
  CHECK(report->reused > 0);
  CHECK(report->trials + report->invalid + report->reused == space.size());  // the default proposed again is a copy
  std::set<uint64_t> measured;
  std::map<uint64_t, double> timeOf;
  size_t copies = 0;
  for (const TuningRecord& r : db->records()) {
    if (r.strategy == "confirm") continue;
    auto key = space.codeKey(space.indexOf(r.config));
    if (!key) {  // did not lower: nothing to share
      CHECK(r.status != MeasureStatus::Ok);
      continue;
    }
    if (r.strategy == "same-code") {
      ++copies;
      REQUIRE(timeOf.count(*key));  // a copy follows the measurement it copies
      CHECK(r.ms == timeOf[*key]);
      continue;
    }
    CHECK(measured.insert(*key).second);  // no kernel measured twice
    timeOf[*key] = r.ms;
  }
  CHECK(copies == report->reused);
  CHECK(measured.size() == distinct.size());
}

/// Made-up times for the tuning loop's test of anchors: each configuration
/// of `task` takes 1 ms (plus a microsecond per place in its batch) but one,
/// `fast`, 0.5 ms: the first of the third batch asked for. Each batch runs at
/// a speed of its own (3x slower for that third batch, 0.8x for the fourth),
/// and with `anchored` every result carries the default's time in its
/// batch, as interleaved timing records it. Other tasks take 1 us.
class DriftingMeasurer final : public Measurer {
 public:
  DriftingMeasurer(const TuningTask& task, bool anchored) : task_(task), anchored_(anchored) {}
  std::string target() const override { return "cpu"; }
  std::string device() const override { return "drifting"; }
  std::string toolkit() const override { return "test"; }
  Expected<std::vector<MeasureResult>> measure(const TuningTask& task, const std::vector<codegen::Config>& configs) override {
    std::vector<MeasureResult> out;
    if (task.signature != task_.signature) {
      for (const codegen::Config& c : configs) out.push_back(fakeResult(c, 0.001));
      return out;
    }
    if (++batches_ == 3) fast = configs.front();
    const double drift = batches_ == 3 ? 3.0 : batches_ == 4 ? 0.8 : 1.0;
    for (const codegen::Config& c : configs) {
      MeasureResult r = fakeResult(c, (fast && c == *fast ? 0.5 : 1.0 + 0.001 * double(out.size())) * drift);
      if (anchored_) r.anchorMs = drift;
      out.push_back(r);
    }
    return out;
  }
  std::optional<codegen::Config> fast;

 private:
  const TuningTask& task_;
  bool anchored_;
  int batches_ = 0;
};

TEST_CASE("the tuning loop compares interleaved candidates by their time relative to the default beside them") {
  // The fastest configuration is measured in a batch that ran 3x slow, and
  // the next batch ran fast: by plain times a configuration of the fast batch
  // wins, and the confirmation beside the default rejects it; by anchored
  // times the fastest wins and is confirmed. The database keeps the times as
  // measured.
  Fixture f;
  const TuningTask& conv = f.conv();
  for (bool anchored : {false, true}) {
    DYNAMIC_SECTION((anchored ? "anchored" : "plain")) {
      DriftingMeasurer measurer(conv, anchored);
      auto db = scratchDatabase(anchored ? "tuning-anchored" : "tuning-plain");
      REQUIRE(db.isOk());
      auto report = tuneTasks(f.tasks, measurer, tuneOptions("grid", 12, 4, 1), &*db);
      REQUIRE(report.isOk());
      REQUIRE(measurer.fast);
      const auto t = std::find_if(report->tasks.begin(), report->tasks.end(),
                                  [&](const TaskOutcome& o) { return o.signature == conv.signature; });
      REQUIRE(t != report->tasks.end());
      REQUIRE(t->trials >= 12);
      // Applying the database follows the tuner's confirmation, not the fastest separate measurement (which
      // in both sections is a configuration of the batch that ran at 0.8x).
      TuningApplication applied = applyTuningDatabase(f.tasks, *db, "cpu", measurer.device(), measurer.toolkit());
      const auto k = std::find_if(applied.kernels.begin(), applied.kernels.end(),
                                  [&](const KernelApplication& a) { return a.signature == conv.signature; });
      REQUIRE(k != applied.kernels.end());
      if (!anchored) {
        CHECK(t->keptDefault);
        CHECK(t->bestConfig == conv.space.defaultConfig());
        CHECK(k->status == ApplyStatus::KeptDefault);
        CHECK(applied.configs.count(k->group) == 0);
      } else {
        CHECK(k->status == ApplyStatus::Applied);
        CHECK(k->config == *measurer.fast);
        CHECK_FALSE(t->keptDefault);
        CHECK(t->bestConfig == *measurer.fast);
        CHECK(t->bestMs == Approx(0.5));
        size_t found = 0;
        for (const TuningRecord& r : db->records())
          if (r.config == *measurer.fast && r.strategy == "grid") {
            ++found;
            CHECK(r.ms == Approx(1.5));
            CHECK(r.anchorMs == Approx(3.0));
          }
        CHECK(found == 1);
      }
    }
  }
}

TEST_CASE("the replay measurer answers from a table and refuses what it lacks") {
  // A table of every configuration of every task with made-up times (one
  // configuration invalid, one left out): replaying it gives the table's
  // median per configuration and its statuses, a tuning run on it finds the
  // table's best, and a configuration the table lacks is an error, not a guess.
  Fixture f;
  const std::string dir = testing::scratchDir("tuning-replay");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/table.jsonl";
  std::filesystem::remove(path);
  auto table = TuningDatabase::open(path);
  REQUIRE(table.isOk());
  const TuningTask& conv = f.conv();
  TaskSpace space(conv);
  const uint64_t invalid = 1, best = space.size() - 1;
  uint64_t missing = 2;  // a configuration whose kernel no earlier one shares (grid must measure it)
  for (std::set<uint64_t> seen{*space.codeKey(0), *space.codeKey(1)}; !seen.insert(*space.codeKey(missing)).second;) ++missing;
  auto timeOf = [&](uint64_t i) { return i == best ? 0.5 : 2.0 + double(i % 7); };
  REQUIRE(space.codeKey(0));
  REQUIRE(space.codeKey(1));
  for (const TuningTask& t : f.tasks.tasks)
    for (uint64_t i = 0; i < t.space.size(); ++i) {
      if (&t == &conv && i == missing) continue;
      TuningRecord r;
      r.target = "cpu", r.device = "table-cpu", r.toolkit = "table-toolkit";
      r.signature = t.signature, r.spaceVersion = t.spaceVersion, r.templateName = t.templateName;
      r.config = t.space.configAt(i);
      r.isDefault = r.config == t.space.defaultConfig();
      r.status = &t == &conv && i == invalid ? MeasureStatus::WrongOutput : MeasureStatus::Ok;
      r.ms = &t == &conv ? timeOf(i) : 1.0;
      REQUIRE(table->append(r).isOk());
      if (&t == &conv && i == 0) {  // measured twice: the median of 1.0, 2.0 (timeOf(0)) and 9.0 is 2.0
        for (double ms : {1.0, 9.0}) {
          r.ms = ms;
          REQUIRE(table->append(r).isOk());
        }
      }
    }
  auto measurer = createReplayMeasurer(path, f.tasks, "cpu");
  REQUIRE(measurer.isOk());
  CHECK((*measurer)->device() == "table-cpu");
  CHECK((*measurer)->toolkit() == "table-toolkit");
  auto r = (*measurer)->measure(conv, {space.config(0), space.config(invalid), space.config(best)});
  REQUIRE(r.isOk());
  CHECK((*r)[0].ok());
  CHECK((*r)[0].ms == 2.0);
  CHECK((*r)[1].status == MeasureStatus::WrongOutput);
  CHECK((*r)[2].ms == 0.5);
  auto lacking = (*measurer)->measure(conv, {space.config(missing)});
  REQUIRE_FALSE(lacking.isOk());
  CHECK(lacking.error().message().find("no record") != std::string::npos);
  // A strategy run on the table is reproducible; grid reaches the missing configuration and stops with the error.
  auto replayRun = [&](const std::string& strategy, size_t trials) {
    return tuneTasks(f.tasks, **measurer, tuneOptions(strategy, trials, 4, 1), nullptr);
  };
  auto first = replayRun("sa-as", 12), again = replayRun("sa-as", 12);
  REQUIRE(first.isOk());
  REQUIRE(again.isOk());
  CHECK(first->tasks.front().curve == again->tasks.front().curve);
  CHECK(first->tasks.front().bestMs >= 0.5);
  auto grid = replayRun("grid", 100000);
  REQUIRE_FALSE(grid.isOk());
  CHECK(grid.error().message().find("no record") != std::string::npos);
  // Another database's target has no records in it.
  auto none = createReplayMeasurer(path, f.tasks, "cuda");
  REQUIRE_FALSE(none.isOk());
  CHECK(none.error().message().find("no cuda records") != std::string::npos);
}

TEST_CASE("the replay measurer divides an interleaved table's drift out through its anchors") {
  // The default runs in 1.0 ms on a quiet machine. Configuration A (0.8 ms
  // quiet) was measured while the machine ran at half speed, B (0.9 ms)
  // while it was quiet: plain medians would rank B first; the anchors
  // measured beside each restore A's lead. One unanchored record makes a
  // kernel's replay plain medians again.
  Fixture f;
  const TuningTask& conv = f.conv();
  TaskSpace space(conv);
  const codegen::Config a = space.config(1), b = space.config(2), d = conv.space.defaultConfig();
  REQUIRE(a != d);
  REQUIRE(b != d);
  const std::string dir = testing::scratchDir("tuning-replay-anchored");
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, bool oneUnanchored) {
    const std::string path = dir + "/" + name;
    std::filesystem::remove(path);
    auto table = TuningDatabase::open(path);
    REQUIRE(table.isOk());
    auto add = [&](const codegen::Config& c, double ms, double anchor) {
      TuningRecord r;
      r.target = "cpu", r.device = "table-cpu", r.toolkit = "table-toolkit";
      r.signature = conv.signature, r.spaceVersion = conv.spaceVersion, r.templateName = conv.templateName;
      r.config = c;
      r.isDefault = c == d;
      r.ms = ms;
      r.anchorMs = anchor;
      REQUIRE(table->append(r).isOk());
    };
    for (int pass = 0; pass < 3; ++pass) {
      add(d, 1.0, 1.0);
      add(a, 0.8 * 2, 2.0);  // half speed: A and its anchor both twice as long
      add(b, 0.9, 1.0);
    }
    if (oneUnanchored) add(b, 0.9, 0);
    return path;
  };
  auto replay = [&](const std::string& path) {
    auto measurer = createReplayMeasurer(path, f.tasks, "cpu");
    REQUIRE(measurer.isOk());
    auto r = (*measurer)->measure(conv, {a, b, d});
    REQUIRE(r.isOk());
    return std::vector<double>{(*r)[0].ms, (*r)[1].ms, (*r)[2].ms};
  };
  // Anchors 1, 2, 1 per pass: their median is 1.0, so A replays as 0.8, B 0.9, the default 1.0.
  std::vector<double> anchored = replay(write("anchored.jsonl", false));
  CHECK(anchored[0] == Approx(0.8));
  CHECK(anchored[1] == Approx(0.9));
  CHECK(anchored[2] == Approx(1.0));
  std::vector<double> plain = replay(write("mixed.jsonl", true));
  CHECK(plain[0] == Approx(1.6));
  CHECK(plain[1] == Approx(0.9));
  // A non-positive anchor is a damaged line.
  TuningRecord r;
  r.target = "cpu", r.device = "dev", r.toolkit = "tk", r.signature = "s", r.spaceVersion = "v";
  r.ms = 1.0;
  r.anchorMs = 2.5;
  auto back = parseTuningRecord(tuningRecordJson(r));
  REQUIRE(back.isOk());
  CHECK(back->anchorMs == 2.5);
  std::string line = tuningRecordJson(r);
  line.replace(line.find("\"anchor_ms\":2.5"), 15, "\"anchor_ms\":-1.0");
  auto negative = parseTuningRecord(line);
  REQUIRE_FALSE(negative.isOk());
  CHECK(negative.error().message().find("anchor") != std::string::npos);
}

TEST_CASE("tuning database lines: mutated records parse or fail cleanly") {
  TuningRecord r;
  r.target = "cpu";
  r.device = "dev";
  r.toolkit = "tk";
  r.signature = "conv2d-cpu-0123456789abcdef";
  r.spaceVersion = "fedcba9876543210";
  r.config = {{"tw", 32}, {"toc", 4}};
  r.ms = 1.5;
  r.features = {1.0f, 2.5f};
  const std::string valid = tuningRecordJson(r);
  auto back = parseTuningRecord(valid);
  REQUIRE(back.isOk());
  CHECK(back->config == r.config);
  CHECK(back->features == r.features);
  SplitMix64 rng(11);
  size_t parsed = 0, rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string line = valid;
    for (int edits = 1 + int(rng.below(4)); edits > 0 && !line.empty(); --edits) {
      size_t at = rng.below(line.size());
      switch (rng.below(4)) {
        case 0: line[at] = char(rng.below(256)); break;         // flip a byte
        case 1: line.erase(at, 1 + rng.below(8)); break;        // drop a few
        case 2: line.insert(at, 1, "{}[]\":,0-e9"[rng.below(11)]); break;
        default: line.resize(at); break;                        // truncate
      }
    }
    Expected<TuningRecord> m = parseTuningRecord(line);
    if (m) {
      ++parsed;
      CHECK((m->status != MeasureStatus::Ok || (m->ms > 0 && std::isfinite(m->ms))));
    } else {
      ++rejected;
      CHECK(m.error().code() == ErrorCode::FileFormat);
    }
  }
  CHECK(rejected > 4000);
  CHECK(parsed + rejected == 5000);
}

TEST_CASE("library calls as JSON (batch mode manifests) round-trip, and damaged ones fail cleanly") {
  runtime::LibraryCall mm;
  mm.name = "l0001";
  mm.dtype = DType::F16;
  mm.batch = 12, mm.m = 128, mm.n = 64, mm.k = 128;
  mm.transB = true, mm.batchB = true, mm.alpha = 0.125f;
  mm.epilogue = runtime::LibraryEpilogue::Bias;
  mm.residual = true;
  runtime::LibraryCall conv;
  conv.routine = runtime::LibraryRoutine::CudnnConv;
  conv.batch = 2;
  conv.conv = {64, 56, 56, 128, 3, 3, 1, 1, 2, 2, 1, 1, 2};
  conv.epilogue = runtime::LibraryEpilogue::BiasRelu;
  for (const runtime::LibraryCall& c : {mm, conv}) {
    auto back = parseLibraryCallJson(libraryCallJson(c));
    INFO(libraryCallJson(c));
    REQUIRE(back.isOk());
    CHECK(back->describe() == c.describe());
    CHECK(back->operandElements() == c.operandElements());
    CHECK((back->transA == c.transA && back->transB == c.transB && back->batchB == c.batchB && back->alpha == c.alpha));
    CHECK(back->name == c.name);
  }
  // Values a library cannot be given are refused by name.
  auto refused = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    auto r = parseLibraryCallJson(text);
    return !r.isOk() && r.error().code() == ErrorCode::FileFormat ? r.error().message() : std::string("parsed");
  };
  const std::string mmText = libraryCallJson(mm), convText = libraryCallJson(conv);
  CHECK(refused(mmText, "\"cuBLASLt\"", "\"MKL\"").find("unknown routine 'MKL'") != std::string::npos);
  CHECK(refused(mmText, "\"f16\"", "\"i32\"").find("type 'i32'") != std::string::npos);
  CHECK(refused(mmText, "\"bias\"", "\"gelu\"").find("unknown epilogue 'gelu'") != std::string::npos);
  CHECK(refused(mmText, "\"m\":128", "\"m\":-1").find("not a shape") != std::string::npos);
  CHECK(refused(mmText, "\"k\":128", "\"k\":\"128\"").find("mistyped") != std::string::npos);
  CHECK(refused(convText, "\"groups\":2", "\"groups\":3").find("not a shape") != std::string::npos);  // 64 % 3
  CHECK(refused(convText, "\"kernel_h\":3", "\"kernel_h\":99").find("not a shape") != std::string::npos);
  CHECK(refused(convText, "\"conv\":", "\"vnoc\":").find("missing") != std::string::npos);
  // Mutations parse to a call its routine can run, or fail with FileFormat; never anything else.
  SplitMix64 rng(5);
  size_t rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = i % 2 ? mmText : convText;
    for (int edits = 1 + int(rng.below(3)); edits > 0 && !text.empty(); --edits) {
      size_t at = rng.below(text.size());
      switch (rng.below(4)) {
        case 0: text[at] = char(rng.below(256)); break;
        case 1: text.erase(at, 1 + rng.below(8)); break;
        case 2: text.insert(at, 1, "{}[]\":,0-e9"[rng.below(11)]); break;
        default: text.resize(at); break;
      }
    }
    Expected<runtime::LibraryCall> c = parseLibraryCallJson(text);
    if (c) {
      CHECK(c->wellFormed());
    } else {
      ++rejected;
      CHECK(c.error().code() == ErrorCode::FileFormat);
    }
  }
  CHECK(rejected > 2000);
  // A library call's tuning record keeps its library; an unknown library or one with a configuration is refused.
  TuningRecord r;
  r.target = "cuda", r.device = "gpu", r.toolkit = "tk", r.signature = "conv2d-cuda-0123456789abcdef";
  r.spaceVersion = "fedcba9876543210", r.ms = 0.5, r.library = "cuDNN", r.strategy = "library";
  r.libraryVersion = "9.19.0";
  auto back = parseTuningRecord(tuningRecordJson(r));
  REQUIRE(back.isOk());
  CHECK(back->library == "cuDNN");
  CHECK(back->libraryVersion == "9.19.0");
  CHECK(back->config.empty());
  // A library version on a generated kernel's record is refused; a library record without one (older files) is read.
  TuningRecord kernel = r;
  kernel.library.clear();
  CHECK(parseTuningRecord(tuningRecordJson(kernel)).error().message().find("not a library call's") != std::string::npos);
  r.libraryVersion.clear();
  CHECK(tuningRecordJson(r).find("library_version") == std::string::npos);
  CHECK(parseTuningRecord(tuningRecordJson(r)).isOk());
  r.library = "MKL";
  CHECK(parseTuningRecord(tuningRecordJson(r)).error().message().find("unknown library") != std::string::npos);
  r.library = "cuBLASLt";
  r.config = {{"tw", 4}};
  CHECK(parseTuningRecord(tuningRecordJson(r)).error().message().find("has a configuration") != std::string::npos);
}
