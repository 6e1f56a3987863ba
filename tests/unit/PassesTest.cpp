//===- tests/unit/PassesTest.cpp - Pass registry, pipelines, pass manager --===//
//
// Every registered pass has complete catalogue data; pipelines parse, print
// canonically and fail with positions; the pass manager records what changed
// and verifies after each pass.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/runtime/Interpreter.h"

using namespace kiln;

namespace {

std::unique_ptr<ir::Module> parse(const char* text) {
  auto m = ir::parseModule(text, "passes.kir");
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  return std::move(m).value();
}

const char* kLoopWithDeadCode = R"(module @m {
  graph @main(%n: i64[], %c: bool[], %x: f32[2]) {
    %waste = Exp(%x) : f32[2]
    %y = Loop(%n, %c, %x) {body = graph @body(%i: i64[], %k: bool[], %acc: f32[2]) {
        %dead = Neg(%acc) : f32[2]
        %next = Add(%acc, %x) : f32[2]
        return %k, %next
      }} : f32[2]
    return %y
  }
}
)";

}  // namespace

TEST_CASE("Every registered pass has complete catalogue data", "[passes]") {
  const std::set<std::string> classes = {"BL", "RN", "MN", "SSD", "BR", "AD"};
  const std::regex kebab("[a-z][a-z0-9]*(-[a-z0-9]+)*");
  REQUIRE_FALSE(passes::allPasses().empty());
  std::set<std::string> names;
  for (const passes::PassInfo& p : passes::allPasses()) {
    INFO(p.name);
    CHECK(std::regex_match(p.name, kebab));
    CHECK(names.insert(p.name).second);
    CHECK_FALSE(p.summary.empty());
    CHECK(p.description.size() > p.summary.size());
    CHECK_FALSE(p.classes.empty());
    for (const auto& c : p.classes) CHECK(classes.count(c));
    CHECK(p.optLevel >= 0);
    CHECK(p.optLevel <= 3);
    CHECK(bool(p.applicable));
    CHECK(bool(p.run));
    for (const auto& r : p.requiredPasses) CHECK(passes::findPass(r) != nullptr);
    CHECK(passes::findPass(p.name) == &p);
  }
  CHECK(passes::findPass("no-such-pass") == nullptr);
}

TEST_CASE("Pipelines parse, print canonically and report errors with positions", "[passes]") {
  auto empty = passes::parsePipeline("  ");
  REQUIRE(empty.isOk());
  CHECK(empty->empty());
  auto two = passes::parsePipeline(" dead-code-elimination ,dead-code-elimination{ } ");
  CHECK_FALSE(two.isOk());  // '{ }' has no option name
  auto ok = passes::parsePipeline(" dead-code-elimination ,dead-code-elimination ");
  REQUIRE(ok.isOk());
  REQUIRE(ok->size() == 2);
  CHECK(passes::printPipeline(*ok) == "dead-code-elimination,dead-code-elimination");
  auto reparsed = passes::parsePipeline(passes::printPipeline(*ok));
  REQUIRE(reparsed.isOk());
  CHECK(reparsed->size() == 2);

  auto unknown = passes::parsePipeline("dead-code-elimination,fold-everything");
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(unknown.error().str(), Catch::Contains("at character 23: unknown pass 'fold-everything'"));
  auto trailing = passes::parsePipeline("dead-code-elimination,");
  REQUIRE_FALSE(trailing.isOk());
  CHECK_THAT(trailing.error().str(), Catch::Contains("expected a pass name"));
  auto option = passes::parsePipeline("dead-code-elimination{max-depth=3}");
  REQUIRE_FALSE(option.isOk());
  CHECK_THAT(option.error().str(), Catch::Contains("has no option 'max-depth'"));

  // O0..O3 stand for a level's passes.
  auto o3 = passes::optLevelPipeline(3);
  REQUIRE(o3.isOk());
  auto extended = passes::parsePipeline(" O3 , alter-op-layout{block=8}");
  REQUIRE(extended.isOk());
  REQUIRE(extended->size() == o3->size() + 1);
  CHECK(passes::printPipeline(*extended) == passes::printPipeline(*o3) + ",alter-op-layout{block=8}");
  CHECK(passes::parsePipeline("O0").isOk());
  CHECK(passes::parsePipeline("O0")->empty());
  auto badLevel = passes::parsePipeline("dead-code-elimination,O7");
  REQUIRE_FALSE(badLevel.isOk());
  CHECK_THAT(badLevel.error().str(), Catch::Contains("at character 23: opt level must be 0 to 3, got 7"));
}

TEST_CASE("The pass manager records changes, hashes and node counts, recursing into bodies", "[passes]") {
  auto m = parse(kLoopWithDeadCode);
  uint64_t before = ir::structuralHash(m->graph());
  CHECK(passes::countNodes(m->graph()) == 4);  // Exp, Loop and the body's Neg, Add
  auto pipeline = passes::parsePipeline("dead-code-elimination,dead-code-elimination");
  REQUIRE(pipeline.isOk());
  int afterChangeCalls = 0;
  passes::RunOptions options{.context = {.verifyEach = true},
                             .afterChange = [&](const passes::PassRecord&, const ir::Graph&) { ++afterChangeCalls; }};
  auto report = passes::runPipeline(m->graph(), *pipeline, options);
  REQUIRE(report.isOk());
  REQUIRE(report->passes.size() == 2);
  const passes::PassRecord& first = report->passes[0];
  CHECK(first.applicable);
  CHECK(first.changed);
  CHECK(first.nodesBefore == 4);
  CHECK(first.nodesAfter == 2);  // Loop, Add
  CHECK(first.hashBefore != first.hashAfter);
  CHECK(first.hashAfter == ir::structuralHashHex(m->graph()));
  CHECK(ir::structuralHash(m->graph()) != before);
  const passes::PassRecord& second = report->passes[1];
  CHECK_FALSE(second.applicable);
  CHECK_FALSE(second.changed);
  CHECK(second.hashBefore == second.hashAfter);
  CHECK(afterChangeCalls == 1);

  auto j = nlohmann::json::parse(passes::reportToJson(*report));
  CHECK(j["schema"] == "kiln-pass-report/1");
  CHECK(j["passes"].size() == 2);
  CHECK(j["passes"][0]["changed"] == true);
  CHECK(j["passes"][0]["nodes_after"] == 2);
  std::ostringstream table;
  passes::printReportTable(table, *report);
  CHECK_THAT(table.str(), Catch::Contains("dead-code-elimination"));
  CHECK_THAT(table.str(), Catch::Contains("n/a"));

  SECTION("without hashes (compile, run, bench): the same records and IR, the hash fields empty") {
    auto unhashed = parse(kLoopWithDeadCode);
    auto quiet = passes::runPipeline(unhashed->graph(), *pipeline, {.context = {}, .hashes = false});
    REQUIRE(quiet.isOk());
    REQUIRE(quiet->passes.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(quiet->passes[i].changed == report->passes[i].changed);
      CHECK(quiet->passes[i].nodesAfter == report->passes[i].nodesAfter);
      CHECK(quiet->passes[i].hashBefore.empty());
      CHECK(quiet->passes[i].hashAfter.empty());
    }
    CHECK(ir::structuralHash(unhashed->graph()) == ir::structuralHash(m->graph()));
    // --verify-each needs the hashes for its change check and keeps them.
    auto verified = passes::runPipeline(parse(kLoopWithDeadCode)->graph(), *pipeline,
                                        {.context = {.verifyEach = true}, .hashes = false});
    REQUIRE(verified.isOk());
    CHECK(verified->passes[0].hashAfter == first.hashAfter);
  }
}

TEST_CASE("The pass manager enforces required passes and honest change flags", "[passes]") {
  auto m = parse(kLoopWithDeadCode);
  passes::PassInfo liar;
  liar.name = "test-liar";
  liar.applicable = [](const ir::Graph&, const passes::PassOptions&) { return true; };
  liar.run = [](ir::Graph& g, const passes::PassOptions&, const passes::PassContext&) -> Expected<bool> {
    g.eraseNode(g.nodes().front());  // the dead Exp: a real change
    return false;
  };
  passes::PassInfo needy = liar;
  needy.name = "test-needy";
  needy.requiredPasses = {"dead-code-elimination"};

  auto required = passes::runPipeline(m->graph(), {{&needy, {}}});
  REQUIRE_FALSE(required.isOk());
  CHECK_THAT(required.error().str(), Catch::Contains("requires 'dead-code-elimination' earlier in the pipeline"));
  CHECK(passes::countNodes(m->graph()) == 4);  // refused before anything ran

  auto lied = passes::runPipeline(m->graph(), {{&liar, {}}}, {.context = {.verifyEach = true}});
  REQUIRE_FALSE(lied.isOk());
  CHECK_THAT(lied.error().str(), Catch::Contains("'test-liar' changed the IR but reported no change"));
}

TEST_CASE("BL marks exactly the passes of the O3 pipeline, and levels only add passes", "[passes]") {
  auto o3 = passes::optLevelPipeline(3);
  REQUIRE(o3.isOk());
  std::set<std::string> inO3;
  for (const auto& e : *o3) inO3.insert(e.pass->name);
  for (const passes::PassInfo& p : passes::allPasses()) {
    INFO(p.name);
    bool bl = std::find(p.classes.begin(), p.classes.end(), "BL") != p.classes.end();
    CHECK(bl == (inO3.count(p.name) == 1));
  }
  std::set<std::string> below;
  for (int level = 0; level <= passes::kMaxOptLevel; ++level) {
    auto pipeline = passes::optLevelPipeline(level);
    REQUIRE(pipeline.isOk());
    std::set<std::string> here;
    for (const auto& e : *pipeline) {
      here.insert(e.pass->name);
      CHECK(e.pass->optLevel <= level);  // a level never runs a pass above it
    }
    for (const auto& name : below) CHECK(here.count(name));
    below = here;
  }
  CHECK(passes::optLevelPipeline(4).error().code() == ErrorCode::InvalidArgument);
  CHECK(passes::optLevelPipeline(-1).error().code() == ErrorCode::InvalidArgument);
}

TEST_CASE("O3 adds the layout its target's kernels want: alter-op-layout for cpu only", "[passes]") {
  auto names = [](const std::vector<passes::PipelineEntry>& pipeline) {
    std::vector<std::string> out;
    for (const auto& e : pipeline) out.push_back(e.pass->name);
    return out;
  };
  const auto neutral = names(*passes::optLevelPipeline(3));
  auto cpu = names(*passes::optLevelPipeline(3, "cpu"));
  // The target-free -O3 plus alter-op-layout after the rewrites it relies
  // on (BatchNorm and padding folded into the convs), before the cleanup.
  REQUIRE(cpu.size() == neutral.size() + 1);
  const auto at = std::find(cpu.begin(), cpu.end(), "alter-op-layout");
  REQUIRE(at != cpu.end());
  CHECK(std::find(cpu.begin(), at, "simplify-inference") != at);
  CHECK(std::find(cpu.begin(), at, "fold-explicit-padding") != at);
  CHECK(cpu.back() == "dead-code-elimination");
  cpu.erase(at);
  CHECK(cpu == neutral);
  for (const char* target : {"cuda", "interpreter", ""}) {
    INFO(target);
    CHECK(names(*passes::optLevelPipeline(3, target)) == neutral);
  }
  for (int level = 0; level < 3; ++level) CHECK(names(*passes::optLevelPipeline(level, "cpu")) == names(*passes::optLevelPipeline(level)));
  // An O3 entry of a textual pipeline expands for the pipeline's target.
  CHECK(passes::printPipeline(*passes::parsePipeline("O3", "cpu")) == passes::printPipeline(*passes::optLevelPipeline(3, "cpu")));
  CHECK(passes::printPipeline(*passes::parsePipeline("O3", "cuda")) == passes::printPipeline(*passes::optLevelPipeline(3)));
}

TEST_CASE("The pass context skips disabled passes and passes above its opt level unless required", "[passes]") {
  auto m = parse(kLoopWithDeadCode);
  auto pipeline = passes::parsePipeline("eliminate-common-subexpr,dead-code-elimination");
  REQUIRE(pipeline.isOk());
  std::string before = ir::structuralHashHex(m->graph());
  passes::RunOptions run{.context = {.optLevel = 1, .verifyEach = true, .disabledPasses = {"dead-code-elimination"}}};
  auto report = passes::runPipeline(m->graph(), *pipeline, run);
  REQUIRE(report.isOk());
  REQUIRE(report->passes.size() == 2);
  CHECK(report->passes[0].skipped == "opt level");  // eliminate-common-subexpr is -O2
  CHECK(report->passes[1].skipped == "disabled");
  CHECK(ir::structuralHashHex(m->graph()) == before);
  CHECK(passes::reportToJson(*report).find("\"skipped\":\"disabled\"") != std::string::npos);
  run.context.disabledPasses.clear();
  run.context.requiredPasses = {"eliminate-common-subexpr"};
  report = passes::runPipeline(m->graph(), *pipeline, run);
  REQUIRE(report.isOk());
  CHECK(report->passes[0].skipped.empty());
  CHECK(report->passes[1].changed);  // the dead Exp and Neg go
}

TEST_CASE("A repeated pass is skipped while the graph is as its last no-change run left it", "[passes]") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2]) {
    %waste = Exp(%x) : f32[2]
    %one = Constant() {value = tensor<f32[]: [1.0]>} : f32[]
    %y = Mul(%x, %one) : f32[2]
    %z = Neg(%y) : f32[2]
    return %z
  }
}
)");
  auto pipeline = passes::parsePipeline("dead-code-elimination,simplify-expr,dead-code-elimination,dead-code-elimination,"
                                        "simplify-expr,simplify-expr,dead-code-elimination");
  REQUIRE(pipeline.isOk());
  auto report = passes::runPipeline(m->graph(), *pipeline, {.context = {.verifyEach = true}});
  REQUIRE(report.isOk());
  REQUIRE(report->passes.size() == 7);
  auto ran = [&](size_t i) { return report->passes[i].skipped.empty(); };
  CHECK((ran(0) && report->passes[0].changed));  // the dead Exp goes
  CHECK((ran(1) && report->passes[1].changed));  // x * 1 goes
  CHECK((ran(2) && !report->passes[2].changed));  // the graph changed after its first run
  CHECK(report->passes[3].skipped == "unchanged since it last ran");
  CHECK((ran(4) && !report->passes[4].changed));  // its last run changed the graph: no skip
  CHECK(report->passes[5].skipped == "unchanged since it last ran");
  CHECK(report->passes[6].skipped == "unchanged since it last ran");  // entry 2's no-op, nothing changed since
  CHECK(report->passes[6].hashAfter == report->passes[2].hashAfter);
  CHECK(m->graph().nodes().size() == 1);  // Neg
}

TEST_CASE("eliminate-common-subexpr merges large constants only when every byte is equal", "[passes]") {
  // 2048 floats: past the 4 KiB that eliminate-common-subexpr hashes whole, so
  // its key samples the contents; %c3 differs from %c1 in one element (16,
  // byte 64) that no sample reads, and must stay apart all the same.
  auto literal = [](int changed) {
    std::string s;
    for (int i = 0; i < 2048; ++i) s += (i ? ", " : "") + std::to_string(i == changed ? -1.0 : i * 0.5);
    return "tensor<f32[2048]: [" + s + "]>";
  };
  std::string text = "module @m {\n  graph @main(%x: f32[2048]) {\n"
                     "    %c1 = Constant() {value = " + literal(-1) + "} : f32[2048]\n"
                     "    %c2 = Constant() {value = " + literal(-1) + "} : f32[2048]\n"
                     "    %c3 = Constant() {value = " + literal(16) + "} : f32[2048]\n"
                     "    %a = Add(%x, %c1) : f32[2048]\n"
                     "    %b = Add(%x, %c2) : f32[2048]\n"
                     "    %c = Add(%x, %c3) : f32[2048]\n"
                     "    return %a, %b, %c\n  }\n}\n";
  auto m = parse(text.c_str());
  auto pipeline = passes::parsePipeline("eliminate-common-subexpr");
  REQUIRE(pipeline.isOk());
  auto report = passes::runPipeline(m->graph(), *pipeline, passes::RunOptions{.context = {.verifyEach = true}});
  REQUIRE(report.isOk());
  CHECK(report->passes[0].changed);
  size_t constants = 0, adds = 0;
  for (const ir::Node* n : m->graph().nodes()) {
    constants += n->opType() == "Constant";
    adds += n->opType() == "Add";
  }
  CHECK(constants == 2);  // %c2 merged into %c1; %c3 kept
  CHECK(adds == 2);       // %b merged into %a; %c kept
}

TEST_CASE("fold-constant replaces an If on a constant condition by the branch it takes, nested Ifs too", "[passes]") {
  // What exporters write for `if x.shape[0] == 1: x = x.squeeze(0)`, once shapes are bound.
  auto m = parse(R"(module @m {
  graph @main(%x: f32[1,4]) {
    %s = Shape(%x) : i64[2]
    %i0 = Constant() {value = tensor<i64[]: [0]>} : i64[]
    %d = Gather(%s, %i0) {axis = 0} : i64[]
    %one = Constant() {value = tensor<i64[]: [1]>} : i64[]
    %c = Equal(%d, %one) : bool[]
    %r = If(%c) {then_branch = graph @t() {
        %ax = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
        %q = Squeeze(%x, %ax) : f32[4]
        %n = Not(%c) : bool[]
        %inner = If(%n) {then_branch = graph @tt() {
            return %q
          }, else_branch = graph @tf() {
            %e = Exp(%q) : f32[4]
            return %e
          }} : f32[4]
        return %inner
      }, else_branch = graph @f() {
        %z = Reshape(%x, %s) : f32[1,4]
        %flat = Flatten(%z) {axis = 0} : f32[1,4]
        %r4 = Constant() {value = tensor<i64[1]: [4]>} : i64[1]
        %back = Reshape(%flat, %r4) : f32[4]
        return %back
      }} : f32[4]
    return %r
  }
})");
  auto pipeline = passes::parsePipeline("dynamic-to-static,fold-constant,dead-code-elimination");
  REQUIRE(pipeline.isOk());
  auto report = passes::runPipeline(m->graph(), *pipeline, passes::RunOptions{.context = {.verifyEach = true}});
  INFO((report.isOk() ? std::string() : report.error().str()));
  REQUIRE(report.isOk());
  std::vector<std::string> ops;
  for (const ir::Node* n : m->graph().nodes())
    if (n->opType() != "Constant") ops.push_back(n->opType());
  CHECK(ops == std::vector<std::string>{"Squeeze", "Exp"});  // then, and the inner If's else
  REQUIRE(m->graph().outputs().size() == 1);
  CHECK(m->graph().outputs()[0]->name() == "r");  // the If's result keeps its name
}

namespace {

/// Dims as text IR writes them in a type: "2,3,4".
std::string commaDims(const Dims& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

/// A text-IR f32 constant of `dims` with values from a fixed sequence.
std::string constantLiteral(const std::string& name, const Dims& dims, int seed) {
  const int64_t count = numElements(dims);
  const std::string shape = commaDims(dims);
  std::string values;
  for (int64_t i = 0; i < count; ++i)
    values += (i ? ", " : "") + std::to_string(0.6 * std::sin(0.7 * double(i + 1) * (seed + 1.3)));
  return "    %" + name + " = Constant() {value = tensor<f32[" + shape + "]: [" + values + "]>} : f32[" + shape + "]\n";
}

}  // namespace

TEST_CASE("lower-recurrent unrolls batch-first and bidirectional RNN, GRU and LSTM exactly as the reference kernels run them",
          "[passes]") {
  // ONNX Runtime refuses layout 1, so the generated conformance cases leave it to this test.
  struct Form {
    const char* op;
    int64_t gates;
    std::string attrs;
  };
  for (const Form& f : {Form{"LSTM", 4, "direction = \"bidirectional\", hidden_size = 3, layout = 1"},
                        Form{"GRU", 3, "direction = \"bidirectional\", hidden_size = 3, layout = 1, linear_before_reset = 1"},
                        Form{"RNN", 1, "direction = \"reverse\", hidden_size = 3, layout = 1"}}) {
    INFO(f.op);
    const int64_t dirs = f.attrs.find("bidirectional") != std::string::npos ? 2 : 1, gh = f.gates * 3;
    const std::string d = std::to_string(dirs);
    const bool lstm = f.gates == 4;
    std::string text = "module @m {\n  graph @main(%x: f32[2,4,2], %h0: f32[2," + d + ",3]" +
                       (lstm ? ", %c0: f32[2," + d + ",3]" : "") + ") {\n";
    text += constantLiteral("w", {dirs, gh, 2}, 1) + constantLiteral("r", {dirs, gh, 3}, 2) +
            constantLiteral("b", {dirs, 2 * gh}, 3);
    std::string results = "%y, %yh" + std::string(lstm ? ", %yc" : "");
    std::string types = "f32[2,4," + d + ",3], f32[2," + d + ",3]" + (lstm ? ", f32[2," + d + ",3]" : "");
    text += "    " + results + " = " + f.op + "(%x, %w, %r, %b, none, %h0" + (lstm ? ", %c0" : "") + ") {" + f.attrs +
            "} : " + types + "\n    return " + results + "\n  }\n}\n";
    auto m = parse(text.c_str());
    runtime::Interpreter before(m->graph());
    std::vector<RuntimeValue> inputs;
    int seed = 5;
    for (const ir::Value* in : m->graph().inputs()) {
      Tensor t = Tensor::forWrite(DType::F32, in->tensorType().dims());
      for (int64_t i = 0; i < t.numElements(); ++i) t.mutableData<float>()[i] = float(std::cos(0.37 * double(i) * seed));
      ++seed;
      inputs.push_back(RuntimeValue(t));
    }
    auto want = before.run(inputs);
    REQUIRE(want.isOk());
    auto pipeline = passes::parsePipeline("lower-recurrent");
    REQUIRE(pipeline.isOk());
    auto report = passes::runPipeline(m->graph(), *pipeline, passes::RunOptions{.context = {.verifyEach = true}});
    INFO((report.isOk() ? std::string() : report.error().str()));
    REQUIRE(report.isOk());
    CHECK(report->passes[0].changed);
    for (const ir::Node* n : m->graph().nodes()) CHECK(n->opType() != f.op);
    runtime::Interpreter after(m->graph());
    auto got = after.run(inputs);
    REQUIRE(got.isOk());
    REQUIRE(got->size() == want->size());
    for (size_t o = 0; o < got->size(); ++o) {
      std::vector<double> a = (*got)[o].tensor().toDoubles(), b = (*want)[o].tensor().toDoubles();
      REQUIRE((*got)[o].tensor().dims() == (*want)[o].tensor().dims());
      for (size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-5);
    }
  }
}

TEST_CASE("lower-narrow-conv turns convolutions with few output positions into a window Gather and a MatMul, exactly",
          "[passes]") {
  struct Form {
    Dims x, w;
    std::string attrs;
    bool lowered;
  };
  for (const Form& f : {Form{{1, 1, 1280}, {6, 1, 512}, "strides = [160]", true},  // an STFT frame conv
                        Form{{2, 3, 12, 20}, {3, 3, 8, 8}, "pads = [1, 0, 0, 1], strides = [3, 3], dilations = [1, 2]", true},
                        Form{{1, 4, 9, 9}, {3, 4, 8, 8}, "pads = [4, 4, 4, 4]", false},  // 100 positions
                        Form{{1, 64, 2, 2}, {3, 64, 3, 3}, "pads = [1, 1, 1, 1]", false},  // a CNN's 3x3 window
                        Form{{1, 8, 9, 9}, {4, 2, 8, 8}, "group = 4", false}}) {
    INFO(commaDims(f.x) << " " << f.attrs);
    std::string text = "module @m {\n  graph @main(%x: f32[" + commaDims(f.x) + "]) {\n" + constantLiteral("w", f.w, 4) +
                       constantLiteral("b", {f.w[0]}, 5) + "    %y = Conv(%x, %w, %b) {" + f.attrs +
                       "} : f32[?]\n    return %y\n  }\n}\n";
    auto m = parse(text.c_str());
    REQUIRE(ir::inferTypes(m->graph()).isOk());
    Tensor x = Tensor::forWrite(DType::F32, f.x);
    for (int64_t i = 0; i < x.numElements(); ++i) x.mutableData<float>()[i] = float(std::sin(0.11 * double(i)));
    auto want = runtime::Interpreter(m->graph()).run({RuntimeValue(x)});
    REQUIRE(want.isOk());
    auto pipeline = passes::parsePipeline("lower-narrow-conv");
    REQUIRE(pipeline.isOk());
    auto report = passes::runPipeline(m->graph(), *pipeline, passes::RunOptions{.context = {.verifyEach = true}});
    INFO((report.isOk() ? std::string() : report.error().str()));
    REQUIRE(report.isOk());
    CHECK(report->passes[0].changed == f.lowered);
    auto got = runtime::Interpreter(m->graph()).run({RuntimeValue(x)});
    REQUIRE(got.isOk());
    REQUIRE((*got)[0].tensor().dims() == (*want)[0].tensor().dims());
    std::vector<double> a = (*got)[0].tensor().toDoubles(), b = (*want)[0].tensor().toDoubles();
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-4);
  }
}
