//===- tests/unit/BenchTest.cpp - The benchmark harness -------------------===//
//
// Latency statistics (outlier removal, nearest-rank percentiles), the backend
// registry, the measurement loop on the interpreter backend (alone and paired
// with another, as kiln bench --versus-untuned runs it), the kiln-bench/1
// JSON record, and NVML's absence or presence.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/bench/BenchRunner.h"
#include "kiln/ir/Parser.h"
#include "kiln/support/Statistics.h"

using namespace kiln;

namespace {

std::unique_ptr<ir::Module> smallModel() {
  auto m = ir::parseModule(R"(module @m {
  graph @main(%x: f32[4,8]) {
    %w = Constant() {value = tensor<f32[8,2]: [1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5]>} : f32[8,2]
    %y = MatMul(%x, %w) : f32[4,2]
    %z = Relu(%y) : f32[4,2]
    return %z
  }
}
)",
                           "bench.kir");
  REQUIRE(m.isOk());
  return std::move(m).value();
}

std::unique_ptr<bench::Backend> preparedInterpreter(bench::CompilePhases& phases) {
  auto backend = bench::createBackend("interpreter", {});
  REQUIRE(backend.isOk());
  REQUIRE((*backend)->prepare(smallModel(), phases).isOk());
  return std::move(backend).value();
}

/// The same input as smallModel() through a chain of `n` Relus: many more steps for the interpreter.
std::unique_ptr<bench::Backend> preparedReluChain(int n) {
  std::string text = "module @m {\n  graph @main(%x: f32[4,8]) {\n    %r0 = Relu(%x) : f32[4,8]\n";
  for (int i = 1; i < n; ++i)
    text += "    %r" + std::to_string(i) + " = Relu(%r" + std::to_string(i - 1) + ") : f32[4,8]\n";
  text += "    return %r" + std::to_string(n - 1) + "\n  }\n}\n";
  auto m = ir::parseModule(text, "chain.kir");
  REQUIRE(m.isOk());
  auto backend = bench::createBackend("interpreter", {});
  REQUIRE(backend.isOk());
  bench::CompilePhases phases;
  REQUIRE((*backend)->prepare(std::move(m).value(), phases).isOk());
  return std::move(backend).value();
}

}  // namespace

TEST_CASE("Nearest-rank percentiles", "[bench]") {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  CHECK(nearestRankPercentile(v, 50) == 50);
  CHECK(nearestRankPercentile(v, 90) == 90);
  CHECK(nearestRankPercentile(v, 99) == 99);
  CHECK(nearestRankPercentile(v, 100) == 100);
  CHECK(nearestRankPercentile(v, 0) == 1);
  CHECK(nearestRankPercentile({7.0}, 99) == 7);
  CHECK(nearestRankPercentile({1.0, 2.0, 3.0}, 50) == 2);  // rank ceil(1.5) = 2
  CHECK(nearestRankPercentile({}, 50) == 0);
}

TEST_CASE("Medians: the middle value, the two middle values' mean, or the upper one", "[bench]") {
  CHECK(median({3.0, 1.0, 2.0}) == 2);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({7.0}) == 7);
  CHECK(median({}) == 0);
  CHECK(upperMedian({5.0, 1.0, 3.0}) == 3);
  CHECK(upperMedian({4.0, 1.0, 3.0, 2.0}) == 3);  // one of the values, as Python's median_high
  CHECK(upperMedian({2.0, 1.0}) == 2);
  CHECK(upperMedian({}) == 0);
}

TEST_CASE("Latencies beyond three sigma are dropped before summarising", "[bench]") {
  std::vector<double> v(999, 10.0);
  for (size_t i = 0; i < v.size(); ++i) v[i] += (i % 3) * 0.1;  // 10.0, 10.1, 10.2
  v.push_back(500.0);
  LatencySummary s = summarizeLatencies(v);
  CHECK(s.outliers == 1);
  CHECK(s.samples == 999);
  CHECK(s.max == Approx(10.2));
  CHECK(s.min == Approx(10.0));
  CHECK(s.mean == Approx(10.1));
  CHECK(s.p50 == Approx(10.1));
  CHECK(s.p99 == Approx(10.2));

  LatencySummary kept = summarizeLatencies(v, 0);  // sigmas <= 0 keeps everything
  CHECK(kept.outliers == 0);
  CHECK(kept.max == 500.0);

  LatencySummary same = summarizeLatencies({4.0, 4.0, 4.0});
  CHECK(same.outliers == 0);
  CHECK(same.stddev == 0);
  CHECK(summarizeLatencies({}).samples == 0);
}

TEST_CASE("The backend registry rejects unknown names and options it cannot honour", "[bench]") {
  auto unknown = bench::createBackend("tpu", {});
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(unknown.error().str(), Catch::Contains("known: interpreter"));
  bench::BackendOptions four;
  four.threads = 4;
  auto threads = bench::createBackend("interpreter", four);
  REQUIRE_FALSE(threads.isOk());
  CHECK_THAT(threads.error().str(), Catch::Contains("one thread"));
  auto early = bench::createBackend("interpreter", {});
  REQUIRE(early.isOk());
  CHECK_FALSE((*early)->run({}).isOk());  // before prepare()
}

TEST_CASE("runBenchmark measures the interpreter backend and fills the record", "[bench]") {
  bench::CompilePhases phases;
  phases.importMs = 1.5;
  auto backend = preparedInterpreter(phases);
  bench::BenchRecord record;
  record.compileMs = phases;
  record.model = "bench.kir";
  std::ostringstream progress;
  Tensor x = Tensor::fromVector<float>({4, 8}, std::vector<float>(32, 1.0f));
  Status s = bench::runBenchmark(*backend, {RuntimeValue(x)}, {.warmup = 3, .runs = 40, .batch = 4}, record, &progress);
  REQUIRE(s.isOk());
  CHECK(record.backend == "interpreter");
  CHECK(record.warmup == 3);
  CHECK(record.runs == 40);
  CHECK(record.runsCompleted == 40);
  CHECK(record.latencyMs.samples + record.latencyMs.outliers == 40);
  CHECK(record.latencyMs.min > 0);
  CHECK(record.latencyMs.min <= record.latencyMs.p50);
  CHECK(record.latencyMs.p50 <= record.latencyMs.p90);
  CHECK(record.latencyMs.p90 <= record.latencyMs.p99);
  CHECK(record.latencyMs.p99 <= record.latencyMs.max);
  CHECK(record.throughputPerS == Approx(4 * 1000.0 / record.latencyMs.mean));
  CHECK(record.peakHostBytes > 1024 * 1024);
  CHECK_FALSE(record.peakDeviceBytes.has_value());
  CHECK_FALSE(record.gpu.has_value());
  CHECK(record.machine.cores >= 1);

  auto j = nlohmann::json::parse(bench::toJsonLine(record));
  CHECK(j["schema"] == "kiln-bench/1");
  CHECK(j["config"]["runs"] == 40);
  CHECK(j["config"]["batch"] == 4);
  CHECK(j["runs_completed"] == 40);
  CHECK(j["compile_ms"]["import"] == 1.5);
  CHECK(j["compile_ms"]["passes"].is_null());
  CHECK(j["compile_ms"]["codegen"].is_null());
  CHECK(j["compile_ms"]["total"] == 1.5);
  CHECK(j["memory"]["peak_device_bytes"].is_null());
  CHECK(j["gpu"].is_null());
  CHECK(j["launch"].is_null());  // a host backend
  CHECK(j["versus"].is_null());  // runBenchmark measures one backend
  CHECK(j["latency_ms"]["p50"].get<double>() == record.latencyMs.p50);
  for (const char* key : {"runtime", "runtime_version", "backend", "model", "model_path", "date", "machine", "config",
                          "samples", "outliers", "throughput_per_s", "memory", "wall_s"})
    CHECK(j.contains(key));

  std::ostringstream table;
  bench::printTable(table, record);
  CHECK_THAT(table.str(), Catch::Contains("latency ms   mean"));
  CHECK_THAT(table.str(), Catch::Contains("40 timed after 3 warm-up"));
}

TEST_CASE("runBenchmark stops at --max-seconds and reports bad inputs with the run", "[bench]") {
  bench::CompilePhases phases;
  auto backend = preparedInterpreter(phases);
  Tensor x = Tensor::fromVector<float>({4, 8}, std::vector<float>(32, 1.0f));
  bench::BenchRecord record;
  REQUIRE(bench::runBenchmark(*backend, {RuntimeValue(x)}, {.warmup = 0, .runs = 100000000, .maxSeconds = 0.05}, record,
                              nullptr)
              .isOk());
  CHECK(record.runsCompleted >= 1);
  CHECK(record.runsCompleted < 100000000);

  Tensor wrong = Tensor::fromVector<float>({2, 2}, {1, 2, 3, 4});
  Status bad = bench::runBenchmark(*backend, {RuntimeValue(wrong)}, {.warmup = 2, .runs = 5}, record, nullptr);
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.error().str(), Catch::Contains("warm-up run 1"));
  Status noRuns = bench::runBenchmark(*backend, {RuntimeValue(x)}, {.warmup = 0, .runs = 0}, record, nullptr);
  CHECK_FALSE(noRuns.isOk());
}

TEST_CASE("runPairedBenchmark alternates two backends run by run and compares them pair by pair", "[bench]") {
  bench::CompilePhases phases;
  auto fast = preparedInterpreter(phases);
  auto slow = preparedReluChain(400);
  Tensor x = Tensor::fromVector<float>({4, 8}, std::vector<float>(32, 1.0f));
  bench::BenchRecord record;
  REQUIRE(bench::runPairedBenchmark(*fast, *slow, "chain", {RuntimeValue(x)}, {.warmup = 2, .runs = 30}, record, nullptr)
              .isOk());
  REQUIRE(record.versus.has_value());
  const bench::PairedComparison& v = *record.versus;
  CHECK(record.runsCompleted == 30);
  CHECK(v.baseline == "chain");
  CHECK(v.pairs == 30);
  CHECK(v.baselineMs.samples + v.baselineMs.outliers == 30);
  CHECK(v.ratioOfMedians == Approx(record.latencyMs.p50 / v.baselineMs.p50));
  // Two steps against 400: the record's backend is the faster in (nearly) every pair.
  CHECK(v.ratioOfMedians < 0.5);
  CHECK(v.medianPairRatio < 0.5);
  CHECK(v.pairsFaster >= 27);
  // The other way round, the comparison turns over.
  bench::BenchRecord reverse;
  REQUIRE(bench::runPairedBenchmark(*slow, *fast, "small", {RuntimeValue(x)}, {.warmup = 0, .runs = 30}, reverse, nullptr)
              .isOk());
  CHECK(reverse.versus->medianPairRatio > 2);
  CHECK(reverse.versus->pairsFaster <= 3);

  auto j = nlohmann::json::parse(bench::toJsonLine(record));
  CHECK(j["versus"]["baseline"] == "chain");
  CHECK(j["versus"]["pairs"] == 30);
  CHECK(j["versus"]["pairs_faster"] == v.pairsFaster);
  CHECK(j["versus"]["baseline_latency_ms"]["p50"].get<double>() == v.baselineMs.p50);
  CHECK(j["versus"]["median_pair_ratio"].get<double>() == v.medianPairRatio);
  std::ostringstream table;
  bench::printTable(table, record);
  CHECK_THAT(table.str(), Catch::Contains("30 alternating pairs with chain"));
  CHECK_THAT(table.str(), Catch::Contains("faster in " + std::to_string(v.pairsFaster) + " of 30"));

  // A failing run names which of the two it was; the baseline runs first in the first pair.
  Tensor wrong = Tensor::fromVector<float>({2, 2}, {1, 2, 3, 4});
  Status bad = bench::runPairedBenchmark(*fast, *slow, "chain", {RuntimeValue(wrong)}, {.warmup = 1, .runs = 5}, record, nullptr);
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.error().str(), Catch::Contains("chain warm-up run 1"));
  CHECK_FALSE(bench::runPairedBenchmark(*fast, *slow, "chain", {RuntimeValue(x)}, {.warmup = 0, .runs = 0}, record, nullptr)
                  .isOk());
}

TEST_CASE("GpuMonitor reports NVML's absence, or samples a GPU when there is one", "[bench]") {
  bench::GpuMonitor monitor;
  if (!monitor.available()) {
    CHECK_FALSE(monitor.reason().empty());
    CHECK(monitor.deviceName().empty());
    monitor.start();
    CHECK_FALSE(monitor.stop().has_value());
    return;
  }
  CHECK_FALSE(monitor.deviceName().empty());
  monitor.start(5);
  auto sample = monitor.stop();
  REQUIRE(sample.has_value());
  CHECK(sample->samples >= 1);
  CHECK(sample->powerMaxW >= sample->powerMeanW);
}
