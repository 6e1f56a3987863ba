//===- tests/unit/PassSelectionTest.cpp - Pruning, strategies, database -----===//
//
// The pass-selection module past classification: ordering rules cover the
// catalogue; the pruned space of the tiny zoo keeps the class passes that
// apply and says why the others went; every strategy proposes what its
// definition says, reproducibly per seed (driven by a synthetic evaluator so
// the properties are exact); NSGA-II's fronts are non-dominated; the
// experiment database round-trips, skips corrupt lines and feeds `learned`;
// a study on the interpreter measures identical IR once.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

#include "kiln/bench/PassStudy.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/select/ArchPipeline.h"
#include "kiln/select/OrderingRules.h"
#include "kiln/select/Strategies.h"

using namespace kiln;

namespace {

std::unique_ptr<ir::Module> tinyModel(const std::string& file) {
  auto module = onnx::importOnnxFile(std::string(KILN_SOURCE_DIR) + "/models/tiny/" + file);
  INFO(file);
  REQUIRE(module.isOk());
  return std::move(*module);
}

select::SearchSpace spaceOf(const ir::Graph& g) {
  return select::pruneSearchSpace(g, select::classesOf(select::classify(select::computeFeatures(g))),
                                  {bench::backendExclusions("cpu")});
}

std::vector<std::string> names(const std::vector<passes::PipelineEntry>& pipeline) {
  std::vector<std::string> out;
  for (const auto& e : pipeline) out.push_back(e.pass->name);
  return out;
}

/// A deterministic stand-in for compile+measure: latency falls with each
/// distinct pass, compile time grows with the pipeline's length.
struct SyntheticEvaluator {
  std::vector<select::Candidate> seen;
  select::Evaluate function() {
    return [this](const select::Candidate& c) -> Expected<select::Evaluation> {
      seen.push_back(c);
      double latency = 10;
      size_t position = 0;
      for (const auto& e : c.pipeline) latency -= double(e.pass->name.size() % 7) * 0.1 / double(++position);
      return select::Evaluation{true, latency, 1.0 + double(c.pipeline.size())};
    };
  }
};

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kiln-select-" + name + "-" + std::to_string(::getpid()))).string();
}

}  // namespace

TEST_CASE("every registered pass has an ordering rule and the rules encode the documented constraints") {
  for (const passes::PassInfo& p : passes::allPasses()) {
    INFO(p.name);
    CHECK(select::hasOrderingRule(p.name));
  }
  using select::orderingRank;
  CHECK(orderingRank("simplify-inference") < orderingRank("fold-constant"));
  // ... unless alter-op-layout runs too: it folds the BatchNorms as it packs the weights, so simplify-inference follows it.
  const std::vector<const passes::PassInfo*> withLayout{passes::findPass("simplify-inference"), passes::findPass("fold-constant"),
                                                        passes::findPass("alter-op-layout")};
  CHECK(select::orderingRankAmong("simplify-inference", withLayout) > orderingRank("alter-op-layout"));
  CHECK(select::orderingRankAmong("simplify-inference", {withLayout[0], withLayout[1]}) == orderingRank("simplify-inference"));
  auto orderFor = [&](const ir::Graph* graph) {
    std::vector<std::string> ordered;
    for (const passes::PassInfo* p : select::orderByRules(withLayout, graph)) ordered.push_back(p->name);
    return ordered;
  };
  CHECK(orderFor(nullptr) == std::vector<std::string>{"fold-constant", "alter-op-layout", "simplify-inference"});
  // For a graph whose convs have no channel block the layout pass folds nothing: simplify-inference keeps its rank.
  auto graphWithConv = [](int channels) {
    const std::string c = std::to_string(channels), w = "f32[" + c + ",2,1,1]", y = "f32[1," + c + ",3,3]";
    std::string weights, ones;
    for (int i = 0; i < channels * 2; ++i) weights += (i ? ", " : "") + std::string("1.0");
    for (int i = 0; i < channels; ++i) ones += (i ? ", " : "") + std::string("1.0");
    const std::string stats = "tensor<f32[" + c + "]: [" + ones + "]>} : f32[" + c + "]";
    auto module = ir::parseModule("module @m {\n graph @main(%x: f32[1,2,3,3]) {\n"
                                  "  %w = Constant() {value = tensor<" + w + ": [" + weights + "]>} : " + w + "\n"
                                  "  %s = Constant() {value = " + stats + "\n"
                                  "  %c = Conv(%x, %w) : " + y + "\n"
                                  "  %n = BatchNormalization(%c, %s, %s, %s, %s) : " + y + "\n"
                                  "  return %n\n }\n}\n");
    INFO((module.isOk() ? std::string() : module.error().str()));
    REQUIRE(module.isOk());
    return std::move(*module);
  };
  auto blockable = graphWithConv(16), unblockable = graphWithConv(3);
  CHECK(orderFor(&blockable->graph()) == std::vector<std::string>{"fold-constant", "alter-op-layout", "simplify-inference"});
  CHECK(orderFor(&unblockable->graph()) == std::vector<std::string>{"simplify-inference", "fold-constant", "alter-op-layout"});
  CHECK(orderingRank("fold-explicit-padding") < orderingRank("forward-fold-scale-axis"));
  CHECK(orderingRank("forward-fold-scale-axis") < orderingRank("canonicalize-ops"));
  CHECK(orderingRank("alter-op-layout") < orderingRank("fuse-ops"));  // layout before fusion
  // Dense layers read their weights as stored before fold-constant writes the transposes out, after the Q/K/V merge reads them.
  CHECK(orderingRank("combine-parallel-dense") < orderingRank("simplify-fc-transpose"));
  CHECK(orderingRank("simplify-fc-transpose") < orderingRank("fold-constant"));
  CHECK(orderingRank("simplify-fc-transpose") < orderingRank("canonicalize-ops"));
  CHECK(orderingRank("dead-code-elimination") > orderingRank("merge-composite"));
  CHECK(orderingRank("no-such-pass") == select::kUnruledRank);
}

TEST_CASE("sequence counts are orderings of distinct passes of any length") {
  CHECK(select::sequenceCount(0) == 1);
  CHECK(select::sequenceCount(1) == 2);
  CHECK(select::sequenceCount(2) == 5);
  CHECK(select::sequenceCount(3) == 16);
  CHECK(select::sequenceCount(4) == 65);
}

TEST_CASE("the pruned space keeps applicable class passes and gives every dropped pass a reason") {
  auto resnet = tinyModel("resnet_tiny-raw.onnx");
  select::SearchSpace rn = spaceOf(resnet->graph());
  CHECK(rn.classes == std::vector<std::string>{"RN"});
  CHECK(rn.catalogueSize == passes::allPasses().size());
  CHECK(rn.passes.size() + rn.dropped.size() == rn.catalogueSize);
  // Raw form: BatchNorms are there; resnet_tiny's 4-channel convs have no block, so alter-op-layout leaves theirs.
  CHECK(rn.contains("simplify-inference"));
  CHECK_FALSE(rn.contains("recognize-gelu"));   // BR only
  CHECK_FALSE(rn.contains("fuse-ops"));         // excluded for the cpu backend
  CHECK_FALSE(rn.contains("to-mixed-precision"));  // AD
  CHECK(rn.sequencesAfter() < rn.sequencesBefore() / 1e6);
  std::map<std::string, std::string> why;
  for (const auto& d : rn.dropped) why[d.pass->name] = d.reason;
  CHECK(why["recognize-gelu"] == "class");
  CHECK(why["fuse-ops"].find("cannot compile kiln:: groups") != std::string::npos);
  CHECK(why["defuse-ops"] == "class");  // BL only
  CHECK(std::any_of(why.begin(), why.end(), [](const auto& kv) { return kv.second == "not applicable"; }));
  for (size_t i = 1; i < rn.passes.size(); ++i)
    CHECK(select::orderingRankAmong(rn.passes[i - 1]->name, rn.passes) <=
          select::orderingRankAmong(rn.passes[i]->name, rn.passes));
  // Next to alter-op-layout, which folds the BatchNorms after the convs it blocks, simplify-inference comes after it.
  auto position = [&](const std::string& pass) {
    return std::find_if(rn.passes.begin(), rn.passes.end(), [&](const passes::PassInfo* p) { return p->name == pass; }) -
           rn.passes.begin();
  };
  REQUIRE(rn.contains("alter-op-layout"));
  CHECK(position("alter-op-layout") + 1 == position("simplify-inference"));
  // mobilenet_tiny's convs all block, so alter-op-layout folds every BatchNorm and simplify-inference, applicable
  // to the imported graph, finds nothing where the order puts it: dropped, and the reason says why.
  auto mobilenet = tinyModel("mobilenet_tiny-raw.onnx");
  select::SearchSpace mn = spaceOf(mobilenet->graph());
  CHECK_FALSE(mn.contains("simplify-inference"));
  for (const auto& d : mn.dropped)
    if (d.pass->name == "simplify-inference") CHECK(d.reason.find("passes before it did its work") != std::string::npos);

  auto bert = tinyModel("bert_tiny-raw.onnx");
  select::SearchSpace br = spaceOf(bert->graph());
  CHECK(br.classes == std::vector<std::string>{"BR"});
  CHECK(br.contains("fuse-attention"));  // the attention template compiles kiln::Attention
  CHECK(br.contains("recognize-layer-norm"));
  CHECK_FALSE(br.contains("combine-parallel-conv2d"));
  // The interpreter compiles groups, so fusion stays in its space.
  select::SearchSpace interp = select::pruneSearchSpace(bert->graph(), br.classes, {bench::backendExclusions("interpreter")});
  CHECK(interp.contains("fuse-ops"));
  CHECK(interp.contains("fuse-attention"));  // applicable only after fold-constant ran: found by the probe
}

TEST_CASE("the passes excluded for code generation produce what it cannot compile into kernels") {
  std::vector<select::ExcludedPass> excluded = bench::backendExclusions("cpu");
  REQUIRE(excluded.size() == 4);
  CHECK(bench::backendExclusions("interpreter").empty());
  auto excludes = [](const std::vector<select::ExcludedPass>& list, const std::string& pass) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.pass == pass; });
  };
  // Merging parallel dense layers: measured not worth its weight copy on the cpu backend only.
  for (const char* merge : {"combine-parallel-dense", "batching-ops"}) {
    CHECK(excludes(excluded, merge));
    CHECK_FALSE(excludes(bench::backendExclusions("cuda"), merge));
  }
  // kiln::ConvNCHWc has a CPU template only.
  CHECK_FALSE(excludes(excluded, "alter-op-layout"));
  CHECK(excludes(bench::backendExclusions("cuda"), "alter-op-layout"));
  // fuse-ops' groups are refused by code generation; fuse-attention's kiln::Attention compiles to
  // generated kernels only (the attention template), so it stays in the space.
  auto fused = [](const char* model, const char* pass) {
    auto m = tinyModel(model);
    auto pipeline = passes::parsePipeline(std::string("fold-constant,simplify-inference,simplify-expr,") + pass);
    REQUIRE(pipeline.isOk());
    auto report = passes::runPipeline(m->graph(), *pipeline);
    REQUIRE(report.isOk());
    REQUIRE(report->passes.back().changed);
    return m;
  };
  CHECK(excludes(excluded, "fuse-ops"));
  auto groups = codegen::compileForCpu(fused("resnet_tiny-raw.onnx", "fuse-ops")->graph());
  REQUIRE_FALSE(groups.isOk());
  CHECK(groups.error().message().find("run defuse-ops first") != std::string::npos);
  CHECK_FALSE(excludes(excluded, "fuse-attention"));
  CHECK(excludes(bench::backendExclusions("cuda"), "fuse-attention"));  // not yet measured on a GPU
  auto attention = codegen::compileForCpu(fused("bert_tiny-raw.onnx", "fuse-attention")->graph());
  REQUIRE(attention.isOk());
  CHECK(attention->lowered.stats.hostSteps.empty());
}

TEST_CASE("alter-op-layout's blocked ResNet compiles to generated kernels only, residual adds blocked too") {
  auto m = tinyModel("resnet_tiny-raw.onnx");
  select::SearchSpace rn = spaceOf(m->graph());
  CHECK(rn.contains("alter-op-layout"));  // classed RN, and the cpu backend compiles it
  auto pipeline = passes::parsePipeline("fold-constant,simplify-inference,simplify-expr,fold-explicit-padding,alter-op-layout");
  REQUIRE(pipeline.isOk());
  REQUIRE(passes::runPipeline(m->graph(), *pipeline).isOk());
  size_t blocked = 0, residualAdds = 0;
  for (const ir::Node* n : m->graph().nodes()) {
    blocked += n->qualifiedOpType() == "kiln::ConvNCHWc";
    // Both operands of a residual Add come out of the same layout transform: the Add runs blocked.
    residualAdds += n->opType() == "Add" && n->output(0)->tensorType().rank() == 5;
    if (n->opType() == "Conv") {  // only convs whose output channels have no block (16 or 8) stay
      const ir::TensorType& w = n->input(1)->tensorType();
      CHECK((n->getInt("group") != 1 || w.dim(0) % 8 != 0 || (w.dim(1) % 8 != 0 && w.dim(1) >= 16)));
    }
  }
  CHECK(blocked > 0);
  CHECK(residualAdds > 0);
  auto compiled = codegen::compileForCpu(m->graph());
  REQUIRE(compiled.isOk());
  CHECK(compiled->lowered.stats.hostSteps.empty());
}

TEST_CASE("alter-op-layout folds BatchNorms as it packs: the IR of folding them first, one weight write fewer") {
  // Weights hash by content: equal hashes are equal packed weights and biases, bit for bit.
  auto hashAfter = [](const std::string& file, const std::string& pipelineText) {
    auto m = tinyModel(file);
    auto pipeline = passes::parsePipeline(pipelineText);
    REQUIRE(pipeline.isOk());
    auto report = passes::runPipeline(m->graph(), *pipeline);
    REQUIRE(report.isOk());
    size_t norms = 0;
    for (const ir::Node* n : m->graph().nodes()) norms += n->opType() == "BatchNormalization";
    CHECK(norms == 0);
    return std::make_pair(ir::structuralHash(m->graph()), report->passes);
  };
  for (const char* file : {"resnet_tiny-raw.onnx", "mobilenet_tiny-raw.onnx", "ssdlite_tiny-raw.onnx"}) {
    INFO(file);
    auto [foldFirst, foldFirstPasses] = hashAfter(file, "simplify-inference,alter-op-layout");
    auto [packFirst, packFirstPasses] = hashAfter(file, "alter-op-layout,simplify-inference");
    CHECK(foldFirst == packFirst);
    CHECK(packFirstPasses[0].changed);
  }
  // arch's RN order against the order before simplify-inference moved: the same IR. (resnet_tiny's
  // branches are too narrow to merge; BatchNorms on the parts of a merged conv's Split: tests/ir.)
  auto [before, beforePasses] =
      hashAfter("resnet_tiny-raw.onnx", "simplify-inference,combine-parallel-conv2d,canonicalize-ops,alter-op-layout");
  auto [after, afterPasses] =
      hashAfter("resnet_tiny-raw.onnx", "combine-parallel-conv2d,canonicalize-ops,alter-op-layout,simplify-inference");
  CHECK(before == after);
}

TEST_CASE("strategy lists parse and bad ones name the entry and the forms") {
  auto ok = select::parseStrategies("O3,arch,random:8,exhaustive:3,evolve:6x2,learned");
  REQUIRE(ok.isOk());
  REQUIRE(ok->size() == 6);
  CHECK((*ok)[0].kind == "O");
  CHECK((*ok)[0].level == 3);
  CHECK((*ok)[2].count == 8);
  CHECK((*ok)[3].count == 3);
  CHECK((*ok)[4].count == 6);
  CHECK((*ok)[4].generations == 2);
  CHECK((*ok)[5].count == 3);
  for (const char* bad : {"", "O4", "random", "random:0", "random:x", "evolve:1", "exhaustive:9", "arch:2", "magic",
                          "O3,,arch", "O3,O3", "random:2,random:3"}) {
    INFO(bad);
    auto r = select::parseStrategies(bad);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::InvalidArgument);
    CHECK(r.error().message().find("strategies: O0..O3") != std::string::npos);
  }
}

TEST_CASE("arch run in place gives the arch pipeline's IR and report, for every tiny model") {
  for (const char* file : {"resnet_tiny-raw.onnx", "resnet_tiny-default.onnx", "mobilenet_tiny-raw.onnx",
                           "mobilenet_tiny-default.onnx", "ssdlite_tiny-raw.onnx", "ssdlite_tiny-default.onnx",
                           "bert_tiny-raw.onnx", "bert_tiny-default.onnx"}) {
    INFO(file);
    auto viaSpace = tinyModel(file);
    const std::vector<const passes::PassInfo*> arch = select::archPasses(spaceOf(viaSpace->graph()));
    auto pipeline = passes::runPipeline(viaSpace->graph(), passes::pipelineOf(arch));
    REQUIRE(pipeline.isOk());
    auto inPlace = tinyModel(file);
    auto run = select::runArchPipeline(inPlace->graph(), {bench::backendExclusions("cpu")});
    REQUIRE(run.isOk());
    CHECK(run->report.pipeline == pipeline->pipeline);
    REQUIRE(run->report.passes.size() == pipeline->passes.size());
    for (size_t i = 0; i < arch.size(); ++i) {
      CHECK(run->report.passes[i].pass == arch[i]->name);
      CHECK(run->report.passes[i].hashAfter == pipeline->passes[i].hashAfter);  // the same IR after every pass
    }
    CHECK(ir::structuralHashHex(inPlace->graph()) == ir::structuralHashHex(viaSpace->graph()));
    CHECK(!run->classes.empty());
    // The optimised graph (blocked convs, fast-math's softmax, Dense layers) classifies as the import did.
    CHECK(select::classesOf(select::classify(select::computeFeatures(inPlace->graph()))) == run->classes);
  }
  // A pass the caller disables is left out of the rounds and the report.
  auto bert = tinyModel("bert_tiny-raw.onnx");
  passes::RunOptions without;
  without.context.disabledPasses.insert("recognize-layer-norm");
  auto run = select::runArchPipeline(bert->graph(), {bench::backendExclusions("cpu")}, without);
  REQUIRE(run.isOk());
  CHECK(run->report.pipeline.find("recognize-layer-norm") == std::string::npos);
  CHECK(run->report.pipeline.find("recognize-gelu") != std::string::npos);
}

TEST_CASE("arch, random and exhaustive propose what they promise, reproducibly") {
  auto resnet = tinyModel("resnet_tiny-raw.onnx");
  select::SearchSpace space = spaceOf(resnet->graph());
  select::StrategyInputs in;
  in.space = &space;
  in.seed = 7;
  auto run = [&](const std::string& text, uint64_t seed) {
    in.seed = seed;
    SyntheticEvaluator ev;
    auto specs = select::parseStrategies(text);
    REQUIRE(specs.isOk());
    auto result = select::runStrategy(specs->front(), in, ev.function());
    REQUIRE(result.isOk());
    CHECK(result->candidates.size() == ev.seen.size());
    return *result;
  };

  select::StrategyResult arch = run("arch", 7);
  REQUIRE(arch.candidates.size() == 1);
  std::vector<std::string> archNames = names(arch.candidates[0].pipeline);
  // dead-code-elimination closes the pipeline when the space has it (and only then appears)
  // (at most twice: ending the first round and closing the second)
  const auto cleanups = std::count(archNames.begin(), archNames.end(), "dead-code-elimination");
  CHECK((cleanups > 0) == space.contains("dead-code-elimination"));
  CHECK(cleanups <= 2);
  if (space.contains("dead-code-elimination")) CHECK(archNames.back() == "dead-code-elimination");
  for (size_t i = 0; i < space.passes.size(); ++i)  // the first round is the space in rule order
    CHECK(archNames[i] == space.passes[i]->name);
  for (const passes::PassInfo* p : space.passes)
    CHECK(std::find(archNames.begin(), archNames.end(), p->name) != archNames.end());

  select::StrategyResult r1 = run("random:6", 7), r2 = run("random:6", 7), r3 = run("random:6", 8);
  REQUIRE(r1.candidates.size() == 6);
  std::vector<std::vector<std::string>> first, again, other;
  for (size_t i = 0; i < 6; ++i) {
    first.push_back(names(r1.candidates[i].pipeline));
    again.push_back(names(r2.candidates[i].pipeline));
    other.push_back(names(r3.candidates[i].pipeline));
    std::set<std::string> distinct(first.back().begin(), first.back().end());
    CHECK(distinct.size() == first.back().size());  // no pass twice
    CHECK(!first.back().empty());
    for (const std::string& n : first.back()) CHECK(space.contains(n));
  }
  CHECK(first == again);
  CHECK(first != other);

  select::StrategyResult ex = run("exhaustive:3", 7);
  std::set<std::vector<std::string>> orders;
  for (const auto& c : ex.candidates) orders.insert(names(c.pipeline));
  size_t k = std::min<size_t>(3, space.changedFirstRound.size());
  size_t factorial = 1;
  for (size_t i = 2; i <= k; ++i) factorial *= i;
  CHECK(ex.candidates.size() == factorial);
  CHECK(orders.size() == factorial);
  CHECK(ex.note.find("orders") != std::string::npos);
}

TEST_CASE("pareto ranks: non-dominated points first, failures last") {
  std::vector<select::Evaluation> points = {
      {true, 1.0, 5.0}, {true, 2.0, 2.0}, {true, 3.0, 1.0}, {true, 2.5, 2.5}, {true, 4.0, 4.0}, {false, 0, 0}};
  std::vector<int> ranks = select::paretoRanks(points);
  CHECK(ranks == std::vector<int>{0, 0, 0, 1, 2, 3});
}

TEST_CASE("evolve runs NSGA-II within its budget and reports a non-dominated front, reproducibly") {
  auto mobilenet = tinyModel("mobilenet_tiny-raw.onnx");
  select::SearchSpace space = spaceOf(mobilenet->graph());
  select::StrategyInputs in;
  in.space = &space;
  in.seed = 3;
  auto specs = select::parseStrategies("evolve:6x3");
  REQUIRE(specs.isOk());
  SyntheticEvaluator a, b;
  auto ra = select::runStrategy(specs->front(), in, a.function());
  auto rb = select::runStrategy(specs->front(), in, b.function());
  REQUIRE(ra.isOk());
  REQUIRE(rb.isOk());
  CHECK(a.seen.size() <= 6 * 4);
  CHECK(a.seen.size() >= 6);
  REQUIRE(a.seen.size() == b.seen.size());
  for (size_t i = 0; i < a.seen.size(); ++i) CHECK(names(a.seen[i].pipeline) == names(b.seen[i].pipeline));
  CHECK(ra->paretoFront == rb->paretoFront);
  REQUIRE(!ra->paretoFront.empty());
  // Re-evaluate to compare: no front member is dominated by any evaluated sequence.
  SyntheticEvaluator score;
  auto f = score.function();
  std::map<std::string, select::Evaluation> byLabel;
  for (const auto& c : ra->candidates) byLabel[c.label] = *f(c);
  std::set<std::vector<std::string>> distinct;
  for (const auto& c : ra->candidates) CHECK(distinct.insert(names(c.pipeline)).second);  // each sequence once
  for (const std::string& label : ra->paretoFront) {
    const select::Evaluation& p = byLabel.at(label);
    for (const auto& [other, q] : byLabel)
      CHECK_FALSE((q.latencyMs <= p.latencyMs && q.compileMs <= p.compileMs &&
                   (q.latencyMs < p.latencyMs || q.compileMs < p.compileMs)));
  }
}

TEST_CASE("the experiment database round-trips records, skips corrupt lines and feeds learned") {
  const std::string path = tempPath("db.jsonl");
  std::filesystem::remove(path);
  auto resnet = tinyModel("resnet_tiny-raw.onnx");
  auto bert = tinyModel("bert_tiny-raw.onnx");
  auto mobilenet = tinyModel("mobilenet_tiny-raw.onnx");
  std::vector<double> rnFeatures = select::featureVector(select::computeFeatures(resnet->graph()));
  std::vector<double> brFeatures = select::featureVector(select::computeFeatures(bert->graph()));
  std::vector<double> mnFeatures = select::featureVector(select::computeFeatures(mobilenet->graph()));
  CHECK(select::featureDistance(mnFeatures, rnFeatures) < select::featureDistance(mnFeatures, brFeatures));
  auto record = [](const std::string& model, const std::vector<double>& features, const std::string& pipeline,
                   double latency) {
    std::string f;
    for (double v : features) f += (f.empty() ? "" : ",") + std::to_string(v);
    return std::string("{\"schema\":\"kiln-experiment/1\",\"model\":{\"name\":\"") + model + "\",\"hash\":\"h-" + model +
           "\"},\"feature_vector\":[" + f + "],\"backend\":\"cpu\",\"strategy\":\"random:2\",\"label\":\"random-1\","
           "\"pipeline\":\"" + pipeline + "\",\"ir_hash\":\"abc\",\"error\":null,\"latency_ms\":{\"median\":" +
           std::to_string(latency) + "},\"compile_ms\":{\"total\":3.5}}";
  };
  {
    auto db = select::ExperimentDatabase::open(path);
    REQUIRE(db.isOk());
    CHECK(db->records().empty());
    REQUIRE(db->append(record("resnet", rnFeatures, "alter-op-layout,fuse-attention,dead-code-elimination", 2.0)).isOk());
    REQUIRE(db->append(record("resnet", rnFeatures, "fold-constant", 3.0)).isOk());
    REQUIRE(db->append(record("bert", brFeatures, "fuse-attention", 1.0)).isOk());
    CHECK_FALSE(db->append("{\"schema\":\"other\"}").isOk());  // never written
  }
  { std::ofstream(path, std::ios::app) << "{not json\n"; }
  auto db = select::ExperimentDatabase::open(path);
  REQUIRE(db.isOk());
  CHECK(db->records().size() == 3);
  REQUIRE(db->problems().size() == 1);
  CHECK(db->problems()[0].find(":4: not a JSON object") != std::string::npos);
  CHECK(db->records()[2].model == "bert");
  CHECK(db->records()[0].latencyMs == 2.0);

  select::SearchSpace space = spaceOf(mobilenet->graph());
  select::StrategyInputs in;
  in.space = &space;
  in.features = mnFeatures;
  in.modelHash = "h-mobilenet";
  in.backend = "cpu";
  in.database = &*db;
  auto specs = select::parseStrategies("learned:1");
  REQUIRE(specs.isOk());
  SyntheticEvaluator ev;
  auto result = select::runStrategy(specs->front(), in, ev.function());
  REQUIRE(result.isOk());
  REQUIRE(result->candidates.size() == 1);
  // The nearest model is the ResNet, its fastest pipeline, without the pass outside MobileNet's space.
  CHECK(result->candidates[0].note.find("from resnet (random-1") != std::string::npos);
  CHECK(names(result->candidates[0].pipeline) == std::vector<std::string>{"alter-op-layout"});

  in.modelHash = "h-resnet";  // the same database seen from the ResNet: only the BERT remains
  SyntheticEvaluator ev2;
  auto fromBert = select::runStrategy(specs->front(), in, ev2.function());
  REQUIRE(fromBert.isOk());
  CHECK(fromBert->candidates[0].note.find("from bert") != std::string::npos);
  select::ExperimentDatabase empty = *select::ExperimentDatabase::open(tempPath("missing.jsonl"));
  in.database = &empty;
  CHECK_FALSE(select::runStrategy(specs->front(), in, ev.function()).isOk());
  std::filesystem::remove(path);
}

TEST_CASE("a study measures each distinct IR once and records every pipeline") {
  auto bert = tinyModel("bert_tiny-default.onnx");
  const std::string path = tempPath("study.jsonl");
  std::filesystem::remove(path);
  auto db = select::ExperimentDatabase::open(path);
  REQUIRE(db.isOk());
  bench::StudyOptions options;
  options.backend = "interpreter";
  options.bench = {.warmup = 0, .runs = 2, .sigmas = 0, .batch = 1, .maxSeconds = 0};
  options.compileRepeats = 1;
  options.modelName = "bert_tiny-default.onnx";
  options.database = &*db;
  std::vector<RuntimeValue> inputs;
  for (const ir::Value* v : bert->graph().inputs()) {
    Tensor t = Tensor::zeros(v->type().tensor().dtype(), v->type().tensor().dims());
    inputs.emplace_back(std::move(t));
  }
  auto specs = select::parseStrategies("O2,O3,exhaustive:3");
  REQUIRE(specs.isOk());
  auto study = bench::runPassStudy(*bert, inputs, *specs, options);
  REQUIRE(study.isOk());
  REQUIRE(study->entries.size() >= 3);
  CHECK(db->records().size() == study->entries.size());
  std::map<std::string, const bench::StudyEntry*> firstWithHash;
  size_t shared = 0;
  for (const bench::StudyEntry& e : study->entries) {
    INFO(e.candidate.label << ": " << e.error);
    REQUIRE(e.ok());
    CHECK(e.maxRelError <= 1e-4);
    auto [it, inserted] = firstWithHash.emplace(e.irHash, &e);
    if (inserted) {
      CHECK(e.measuredAs == e.candidate.label);
    } else {
      ++shared;
      CHECK(e.measuredAs == it->second->candidate.label);
      CHECK(e.bench->latencyMs.p50 == it->second->bench->latencyMs.p50);
    }
  }
  CHECK(shared > 0);  // permutations of independent passes give identical IR
  const std::string json = bench::studyToJson(*study);
  CHECK(json.find("\"schema\": \"kiln-pass-study/1\"") != std::string::npos);
  const std::string svg = bench::studyChartSvg(*study);
  CHECK(svg.starts_with("<svg"));
  CHECK(svg.find("exhaustive-1 [") != std::string::npos);
  std::filesystem::remove(path);
}
