//===- tests/unit/CodegenTest.cpp - Code generation core and CPU target ----===//
//
// Kernel IR construction, printing and verification (CPU and GPU schedules);
// knob spaces; the memory planner; the thread pool; every schedule template
// under every configuration of its knob space, compiled for this CPU and
// checked kernel by kernel against the interpreter; artifacts round-tripping
// through the file format, the in-process object linker and kiln::Model, and
// refusing corrupt, truncated or foreign files with the right error code;
// host steps (extern ops, data-dependent shapes) between compiled kernels.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/KernelCheck.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/c_api.h"
#include "kiln/kiln.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/ObjectLoader.h"
#include "kiln/support/ThreadPool.h"
#include "../../lib/codegen/MemoryPlanner.h"
#include "kiln/support/DimExpr.h"
#include "kiln/support/File.h"
#include "kiln/support/Hash.h"
#include "kiln/support/NarrowTypes.h"
#include "kiln/support/StringPool.h"
#include "TemplateCases.h"
#include <cstring>
#include <set>

using namespace kiln;
using namespace kiln::codegen;
using testing::literal;
using testing::parse;
using testing::randomInputs;

namespace {

/// Compiles the graph with every configuration (up to `limit`, evenly spread)
/// of the knob space of its group anchored by `anchorOp`, checking every kernel.
void checkAllConfigs(const std::string& text, const std::string& anchorOp, size_t limit = 48) {
  auto m = parse(text);
  ir::Graph& g = m->graph();
  auto plan = FusionPlan::build(g);
  REQUIRE(plan.isOk());
  const KernelGroup* group = nullptr;
  for (const KernelGroup& k : plan->groups())
    if (k.anchor && k.anchor->opType() == anchorOp) group = &k;
  if (anchorOp == "injective") group = &plan->groups().front();
  REQUIRE(group != nullptr);
  auto tmpl = templateFor(*group);
  REQUIRE(tmpl.isOk());
  auto space = (*tmpl)->knobSpace(*group, KernelTarget::Cpu);
  REQUIRE(space.isOk());
  uint64_t size = space->size();
  uint64_t step = std::max<uint64_t>(1, size / limit);
  std::string groupName = group->name();
  std::vector<Tensor> inputs = randomInputs(g, 7);
  size_t checked = 0;
  for (uint64_t i = 0; i < size; i += step) {
    CompileOptions options;
    options.configs[groupName] = space->configAt(i);
    INFO(anchorOp << " config " << configToString(options.configs[groupName]));
    auto model = compileForCpu(g, options);
    INFO((model.isOk() ? std::string() : model.error().str()));
    REQUIRE(model.isOk());
    auto results = checkKernels(g, *model, inputs);
    REQUIRE(results.isOk());
    for (const KernelCheckResult& r : *results) {
      INFO(r.kernel << " (" << r.templateName << ") worst on " << r.worstValue);
      CHECK(r.maxRelError < 2e-5);
    }
    ++checked;
  }
  CHECK(checked >= std::min<uint64_t>(size, 2));
}

/// A module of one kiln::ConvNCHWc of %x (dims `x`) with random constant
/// weights (dims `w`), attributes `attrs` (" {...}" or ""), result dims `y`.
std::string blockedConv(const std::string& x, const Dims& w, const std::string& attrs, const std::string& y, uint64_t seed) {
  std::string wText;
  for (int64_t d : w) wText += (wText.empty() ? "" : ",") + std::to_string(d);
  return "module @m {\n  graph @main(%x: f32[" + x + "]) {\n    %w = Constant() {value = " + literal(w, seed) +
         "} : f32[" + wText + "]\n    %c = kiln::ConvNCHWc(%x, %w)" + attrs + " : f32[" + y +
         "]\n    return %c\n  }\n}";
}

/// The knob space for `target` of the one kernel group of the module `text`.
Expected<KnobSpace> onlyKernelSpace(const std::string& text, KernelTarget target) {
  auto m = parse(text);
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  REQUIRE(plan->groups().size() == 1);
  auto tmpl = templateFor(plan->groups().front());
  REQUIRE(tmpl.isOk());
  return (*tmpl)->knobSpace(plan->groups().front(), target);
}

}  // namespace

TEST_CASE("kernel IR builders fold constants and re-flattened indices") {
  CHECK(printExpr(intImm(3) + intImm(4)) == "7");
  Var x = makeVar("x");
  CHECK(printExpr(varRef(x) * 1 + 0) == "%x");
  CHECK(printExpr(floorDiv(intImm(-7), 2)) == "-4");
  CHECK(printExpr(floorMod(intImm(-7), 2)) == "1");
  // (a * 4 + x / 8) * 8 + x % 8  ->  a * 4 * 8 + x
  Var a = makeVar("a");
  Expr e = (varRef(a) * 4 + floorDiv(varRef(x), 8)) * 8 + floorMod(varRef(x), 8);
  CHECK(printExpr(e) == "(((%a * 4) * 8) + %x)");
  CHECK(printExpr(floatImm(0.5) * floatImm(4.0)) == "2.0f");
  CHECK(printExpr(cast(ScalarType::F32, intImm(2))) == "2.0f");
}

TEST_CASE("simplifyIndices removes the divisions that loop ranges make exact and no others") {
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 4096);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 64);
  codegen::Buffer offsets = makeBuffer("offsets", ScalarType::I64, MemoryScope::Global, 1);
  Var o = makeVar("o"), v = makeVar("v"), u = makeVar("u");
  Expr flat = varRef(o) * 16 + varRef(v);  // a [6,16] index flattened by a reshape
  std::vector<Expr> indices = {
      floorDiv(flat, 16) * 100 + floorMod(flat, 16),                       // re-split: o * 100 + v
      floorDiv(floorDiv(varRef(o) * 64 + varRef(v) * 4, 4), 16),             // nested: o
      floorMod(flat + 35, 16) + floorDiv(flat + 35, 16) * 7,                 // v + 35 reaches 50: stays
      floorMod(varRef(o) * 16 + varRef(v) * 3, 16),                          // 3 * v reaches 45: stays
      floorMod(varRef(u), 16) + floorMod(varRef(v) - 1, 16),                 // u unknown, v - 1 can be < 0: stay
      floorDiv(flat, 32),                                                    // low digits dropped: o / 2
      floorMod(flat + 32, 48),                                               // (o + 2) mod 3, then v
      floorDiv(flat + 40, 32),                                               // v + 8 reaches 23 > 15: stays
      floorMod(flat, 40),                                                    // 16 does not divide 40: stays
  };
  std::vector<Stmt> stores;
  for (size_t i = 0; i < indices.size(); ++i) stores.push_back(store(out, intImm(int64_t(i)), load(in, indices[i])));
  Stmt body = let(u, load(offsets, intImm(0)),
                  forLoop(o, intImm(6), LoopKind::Parallel, forLoop(v, intImm(16), LoopKind::Vectorized, seq(stores))));
  Stmt simplified = simplifyIndices(body);
  const Stmt& inner = simplified->body[0]->body[0]->body[0];
  REQUIRE(inner->body.size() == indices.size());
  std::vector<Expr> after;
  for (const Stmt& s : inner->body) after.push_back(s->value->operands[0]);
  CHECK(printExpr(after[0]) == "((%o * 100) + %v)");
  CHECK(printExpr(after[1]) == "%o");
  CHECK(printExpr(after[2]) == printExpr(indices[2]));
  CHECK(printExpr(after[3]) == printExpr(indices[3]));
  CHECK(printExpr(after[4]) == printExpr(indices[4]));
  CHECK(printExpr(after[5]) == "floordiv(%o, 2)");
  CHECK(printExpr(after[6]) == "((floormod((%o + 2), 3) * 16) + %v)");
  CHECK(printExpr(after[7]) == printExpr(indices[7]));
  CHECK(printExpr(after[8]) == printExpr(indices[8]));
  CHECK(strideIn(after[0], v) == 1);  // affine in the vector lane again
  // Same values at every point of the loops (u = 5).
  std::function<int64_t(const Expr&, int64_t, int64_t)> eval = [&](const Expr& e, int64_t ov, int64_t vv) -> int64_t {
    if (e->kind == ExprKind::IntImm) return e->intValue;
    if (e->kind == ExprKind::VarRef) return e->var == o ? ov : e->var == v ? vv : 5;
    int64_t a = eval(e->operands[0], ov, vv), b = eval(e->operands[1], ov, vv);
    switch (e->binaryOp) {
      case BinaryOp::Add: return a + b;
      case BinaryOp::Sub: return a - b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::FloorDiv: return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
      case BinaryOp::FloorMod: return a - b * (a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0));
      default: FAIL("unexpected op"); return 0;
    }
  };
  for (size_t i = 0; i < indices.size(); ++i)
    for (int64_t ov = 0; ov < 6; ++ov)
      for (int64_t vv = 0; vv < 16; ++vv) {
        INFO("index " << i << " at o=" << ov << " v=" << vv);
        CHECK(eval(after[i], ov, vv) == eval(indices[i], ov, vv));
      }
}

TEST_CASE("kernel IR prints loops, buffers and statements") {
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 8);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 8);
  Var i = makeVar("i");
  Kernel k{"relu", KernelTarget::Cpu, {in, out},
           forLoop(i, intImm(8), LoopKind::Parallel, store(out, varRef(i), maxOf(load(in, varRef(i)), floatImm(0))))};
  CHECK(printKernel(k) ==
        "kernel @relu(global f32 %in[8], global f32 %out[8]) target=cpu {\n"
        "  parallel for %i in 8 {\n"
        "    %out[%i] = max(%in[%i], 0.0f)\n"
        "  }\n"
        "}\n");
  CHECK(verifyKernel(k).isOk());
}

TEST_CASE("CPU kernels take run-time extents after their buffers: one kernel runs at every extent up to its maxima") {
  // out[r][c] = 2 * in[r][c] + c over an m x n matrix (row stride n), rows in
  // parallel; m <= 8, n <= 16 are the buffers' capacities.
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 128);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 128);
  Var m = makeVar("m"), n = makeVar("n"), r = makeVar("r"), c = makeVar("c");
  Expr at = varRef(r) * varRef(n) + varRef(c);
  Stmt body = forLoop(r, varRef(m), LoopKind::Parallel,
                      forLoop(c, varRef(n), LoopKind::Serial,
                              store(out, at, load(in, at) * floatImm(2) + cast(ScalarType::F32, varRef(c)))));
  Kernel k{"scale_rows", KernelTarget::Cpu, {in, out}, body, {{m, 8}, {n, 16}}};
  REQUIRE(verifyKernel(k).isOk());
  CHECK(printKernel(k).rfind("kernel @scale_rows(global f32 %in[128], global f32 %out[128], i64 %m<=8, i64 %n<=16)", 0) == 0);
  CHECK(kernelBodyKey(k).find("i64 %e0<=8, i64 %e1<=16") != std::string::npos);
  CHECK(kernelBodyKey(k).find("%e1") != std::string::npos);
  CHECK(kernelBodyKey(k).find("%n") == std::string::npos);
  CHECK(extentUpperBound(floorDiv(varRef(m) * varRef(n) + 7, 8), k) == 16);
  CHECK_FALSE(extentUpperBound(varRef(n) - 1, k).has_value());  // not monotone
  CHECK_FALSE(extentUpperBound(varRef(c), k).has_value());      // not a run-time extent
  auto jit = CpuJit::create();
  REQUIRE(jit.isOk());
  auto fns = (*jit)->compile({&k});
  INFO((fns.isOk() ? std::string() : fns.error().str()));
  REQUIRE(fns.isOk());
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 5}, {8, 16}, {0, 4}, {7, 9}}) {
    std::vector<float> x(128), y(128, -1.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
    std::vector<void*> args = {x.data(), y.data(), reinterpret_cast<void*>(intptr_t(rows)), reinterpret_cast<void*>(intptr_t(cols))};
    (*fns)[0](args.data());
    INFO(rows << " x " << cols);
    for (int64_t i = 0; i < 128; ++i) {
      const bool written = i < rows * cols;
      CHECK(y[size_t(i)] == (written ? 2 * x[size_t(i)] + float(i % std::max<int64_t>(cols, 1)) : -1.0f));
    }
  }
  Kernel negative = k;
  negative.extents[0].max = -1;
  CHECK_FALSE(verifyKernel(negative).isOk());
}

namespace {

/// A kernel over the first n <= 64 elements: out[i] = 2 * in[i] (`addCount`
/// false) or in[i] + n (true).
Kernel countedKernel(const std::string& name, bool addCount) {
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 64);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 64);
  Var n = makeVar("n"), i = makeVar("i");
  Expr value = addCount ? load(in, varRef(i)) + cast(ScalarType::F32, varRef(n)) : load(in, varRef(i)) * floatImm(2);
  return Kernel{name, KernelTarget::Cpu, {in, out}, forLoop(i, varRef(n), LoopKind::Serial, store(out, varRef(i), value)),
                {{n, 64}}};
}

/// y = 2x + n for x of f32[n], n in 1..64: two kernel steps through an
/// intermediate, every buffer sized for n = 64.
runtime::Executable countedExecutable() {
  using runtime::BufferKind;
  runtime::Executable exe;
  const DimExpr n = DimExpr::symbol("n");
  auto buffer = [&](const char* name, BufferKind kind) {
    runtime::BufferSpec b;
    b.name = name;
    b.dims = {64};
    b.shape = {n};
    b.kind = kind;
    return b;
  };
  exe.buffers = {buffer("x", BufferKind::Input), buffer("t", BufferKind::Intermediate), buffer("y", BufferKind::Output)};
  exe.arenaBytes = 256;
  exe.inputs = {0};
  exe.outputs = {2};
  exe.kernelNames = {"doubled", "plus_count"};
  exe.kernelParamBytes = {{256, 256}, {256, 256}};
  exe.kernelExtentMax = {{64}, {64}};
  exe.steps = {{runtime::StepKind::Kernel, 0, {0, 1}, {n}}, {runtime::StepKind::Kernel, 1, {1, 2}, {n}}};
  exe.symbols = {{"n", 0, 0, 1, 32, 64}};
  return exe;
}

}  // namespace

TEST_CASE("an executable with a dynamic dim runs every shape in its range, refuses others by name, and round-trips") {
  Kernel doubled = countedKernel("doubled", false), plus = countedKernel("plus_count", true);
  auto jit = CpuJit::create();
  REQUIRE(jit.isOk());
  auto fns = (*jit)->compile({&doubled, &plus});
  REQUIRE(fns.isOk());
  std::vector<runtime::KernelEntry> entries(fns->begin(), fns->end());
  auto exe = std::make_shared<const runtime::Executable>(countedExecutable());
  REQUIRE(exe->validate().isOk());
  auto bytes = runtime::serializeExecutable(*exe);
  auto loaded = runtime::deserializeExecutable(bytes.data(), bytes.size());
  INFO((loaded.isOk() ? std::string() : loaded.error().str()));
  REQUIRE(loaded.isOk());
  CHECK(loaded->symbols.size() == 1);
  CHECK(loaded->buffers[1].shape == exe->buffers[1].shape);
  CHECK(loaded->steps[1].extents == exe->steps[1].extents);
  CHECK(loaded->kernelExtentMax == exe->kernelExtentMax);
  for (auto source : {exe, std::make_shared<const runtime::Executable>(std::move(*loaded))}) {
    auto executor = runtime::CpuExecutor::create(source, entries);
    REQUIRE(executor.isOk());
    for (int64_t n : {1, 7, 32, 63, 64}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(i) - 3.5f;
      auto y = (*executor)->run({Tensor::fromVector<float>({n}, x)});
      INFO("n = " << n);
      REQUIRE(y.isOk());
      REQUIRE(y->at(0).dims() == Dims{n});
      for (int64_t i = 0; i < n; ++i) CHECK(y->at(0).data<float>()[i] == 2 * x[size_t(i)] + float(n));
    }
    for (int64_t n : {0, 65}) {
      auto refused = (*executor)->run({Tensor::zeros(DType::F32, {n})});
      REQUIRE_FALSE(refused.isOk());
      CHECK(refused.error().code() == ErrorCode::ExecInput);
      CHECK(refused.error().message().find("input 'x' dim 0 ('n') is " + std::to_string(n) + "; this executable serves 1..64") !=
            std::string::npos);
    }
    auto wrongRank = (*executor)->run({Tensor::zeros(DType::F32, {2, 2})});
    REQUIRE_FALSE(wrongRank.isOk());
    CHECK(wrongRank.error().message().find("f32 [n]") != std::string::npos);
  }
  // What validate() refuses: extents or shapes beyond what was sized for them.
  auto refuses = [](runtime::Executable bad, const std::string& what) {
    Status st = bad.validate();
    REQUIRE_FALSE(st.isOk());
    CHECK(st.error().code() == ErrorCode::ArtifactCorrupt);
    CHECK(st.error().message().find(what) != std::string::npos);
  };
  runtime::Executable e = countedExecutable();
  e.steps[0].extents = {DimExpr::symbol("n") + 1};
  refuses(e, "exceeds its maximum 64");
  e = countedExecutable();
  e.buffers[1].shape = {DimExpr::symbol("n") * 2};
  refuses(e, "exceeds its capacity 64");
  e = countedExecutable();
  e.steps[1].extents = {DimExpr::symbol("m")};
  refuses(e, "uses dim 'm', which is not declared");
  e = countedExecutable();
  e.steps[0].extents.clear();
  refuses(e, "takes 1 run-time extents, a step gives 0");
  e = countedExecutable();
  e.symbols[0].axis = 1;
  refuses(e, "is not dim 1 of input x");
  e = countedExecutable();
  e.symbols[0].min = 65;
  refuses(e, "has range 65..64");
  e = countedExecutable();
  e.steps.push_back({runtime::StepKind::Copy, 0, {1, 2}, {}});
  refuses(e, "whose shape depends on dynamic dims");
}

TEST_CASE("kernel IR expresses GPU schedules: bindings, shared memory, barriers") {
  codegen::Buffer in = makeBuffer("in", ScalarType::F32, MemoryScope::Global, 1024);
  codegen::Buffer out = makeBuffer("out", ScalarType::F32, MemoryScope::Global, 4);
  codegen::Buffer tile = makeBuffer("tile", ScalarType::F32, MemoryScope::Shared, 256);
  Var b = makeVar("b"), t = makeVar("t");
  Stmt body = forLoop(b, intImm(4), LoopKind::BlockX,
                      allocate(tile, forLoop(t, intImm(256), LoopKind::ThreadX,
                                             seq({store(tile, varRef(t), load(in, varRef(b) * 256 + varRef(t))), barrier(),
                                                  ifThen(binary(BinaryOp::Eq, varRef(t), intImm(0)),
                                                         store(out, varRef(b), load(tile, intImm(0))))}))));
  Kernel gpu{"block_first", KernelTarget::Gpu, {in, out}, body};
  INFO(printKernel(gpu));
  CHECK(verifyKernel(gpu).isOk());
  CHECK(printKernel(gpu).find("blockIdx.x for %b in 4") != std::string::npos);
  CHECK(printKernel(gpu).find("shared f32 %tile[256]") != std::string::npos);
  CHECK(printKernel(gpu).find("barrier") != std::string::npos);
  // The same schedule is not a CPU kernel.
  Kernel cpu = gpu;
  cpu.target = KernelTarget::Cpu;
  Status s = verifyKernel(cpu);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().message().find("binds loop") != std::string::npos);
}

TEST_CASE("the kernel verifier rejects malformed kernels") {
  codegen::Buffer buf = makeBuffer("b", ScalarType::F32, MemoryScope::Global, 4);
  codegen::Buffer ints = makeBuffer("n", ScalarType::I64, MemoryScope::Global, 4);
  Var i = makeVar("i"), i2 = makeVar("i");
  auto fails = [](const Kernel& k, const std::string& what) {
    Status s = verifyKernel(k);
    INFO(printKernel(k));
    REQUIRE_FALSE(s.isOk());
    CHECK(s.error().message().find(what) != std::string::npos);
  };
  fails({"oob", KernelTarget::Cpu, {buf}, store(buf, intImm(4), floatImm(1))}, "out of bounds");
  fails({"type", KernelTarget::Cpu, {buf}, store(buf, intImm(0), intImm(1))}, "store of i64");
  fails({"shadow", KernelTarget::Cpu, {buf},
         forLoop(i, intImm(2), LoopKind::Serial, forLoop(i2, intImm(2), LoopKind::Serial, store(buf, varRef(i2), floatImm(0))))},
        "shadows");
  fails({"scope", KernelTarget::Cpu, {buf}, store(buf, varRef(i), floatImm(0))}, "out of scope");
  fails({"nested-parallel", KernelTarget::Cpu, {buf},
         forLoop(i, intImm(2), LoopKind::Serial, forLoop(i2, intImm(2), LoopKind::Parallel, store(buf, varRef(i2), floatImm(0))))},
        "not the outermost");
  fails({"barrier", KernelTarget::Cpu, {buf}, barrier()}, "barrier");
  fails({"mixed", KernelTarget::Cpu, {buf, ints}, store(buf, intImm(0), binary(BinaryOp::Add, load(buf, intImm(0)), load(ints, intImm(0))))},
        "differ in type");
  fails({"vector", KernelTarget::Cpu, {buf, ints},
         forLoop(i, cast(ScalarType::I64, load(ints, intImm(0))), LoopKind::Vectorized, store(buf, varRef(i), floatImm(0)))},
        "constant extent");
}

TEST_CASE("knob spaces enumerate, check and featurize configurations") {
  KnobSpace s;
  s.knobs.push_back({"tm", {1, 2, 4}, 4, ""});
  s.knobs.push_back({"parallel", {0, 1}, 1, ""});
  CHECK(s.size() == 6);
  std::set<std::string> seen;
  for (uint64_t i = 0; i < s.size(); ++i) {
    Config c = s.configAt(i);
    CHECK(s.check(c).isOk());
    seen.insert(configToString(c));
  }
  CHECK(seen.size() == 6);
  CHECK(configToString(s.defaultConfig()) == "parallel=1,tm=4");
  CHECK(s.features(s.defaultConfig()) == std::vector<double>{4, 1});
  CHECK_FALSE(s.check({{"tm", 3}, {"parallel", 0}}).isOk());
  CHECK_FALSE(s.check({{"tm", 2}}).isOk());
  CHECK_FALSE(s.check({{"tm", 2}, {"parallel", 0}, {"tn", 8}}).isOk());
  auto parsed = parseConfig("tm=2,parallel=0");
  REQUIRE(parsed.isOk());
  CHECK(s.check(*parsed).isOk());
  CHECK_FALSE(parseConfig("tm=two").isOk());
}

TEST_CASE("packed panels hold the source's columns and zeros past its last column") {
  // [K=3, N=10] in panels of 4: two whole panels and one with 2 columns, its other 2 zero even
  // where the heap hands back dirty bytes (the packed buffer is not zeroed before it is written).
  const int64_t k = 3, n = 10, w = 4;
  std::vector<float> rows(size_t(k * n)), cols(size_t(k * n));
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) rows[size_t(kk * n + j)] = cols[size_t(j * k + kk)] = float(100 * kk + j + 1);
  for (bool transposed : {false, true}) {
    Tensor source = transposed ? Tensor::fromVector<float>({n, k}, cols) : Tensor::fromVector<float>({k, n}, rows);
    {
      Tensor dirty = Tensor::forWrite(DType::F32, {3, k, w});
      std::memset(dirty.mutableRawData(), 0xff, dirty.byteSize());  // freed with these bytes: the pack may reuse them
    }
    auto packed = packConstant(source, PackSpec{"panels", w, transposed, {}});
    REQUIRE(packed.isOk());
    REQUIRE(packed->dims() == Dims{3, k, w});
    const float* v = packed->data<float>();
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < w; ++j) {
          const int64_t col = p * w + j;
          INFO("transposed " << transposed << " panel " << p << " row " << kk << " column " << j);
          CHECK(v[(p * k + kk) * w + j] == (col < n ? float(100 * kk + col + 1) : 0.0f));
        }
  }
  CHECK_FALSE(packConstant(Tensor::zeros(DType::F32, {2, 2, 2}), PackSpec{"panels", 4, false, {}}).isOk());

  // In place: the same panels, over the source's own storage where nothing else holds it and N
  // fills whole panels; a copy where another tensor shares the storage (left as it was) or the
  // last panel is ragged.
  std::shared_ptr<kiln::Buffer> scratch;
  std::vector<float> values(size_t(k * 2 * w));
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) + 0.5f;
  for (bool transposed : {false, true}) {
    INFO("transposed " << transposed);
    const PackSpec spec{"panels", w, transposed, {}};
    const Dims dims = transposed ? Dims{2 * w, k} : Dims{k, 2 * w};
    Tensor own = Tensor::fromVector<float>(dims, values);
    auto expected = packConstant(own, spec);
    REQUIRE(expected.isOk());
    const void* storage = own.rawData();
    auto inPlace = packConstantInPlace(std::move(own), spec, scratch);
    REQUIRE(inPlace.isOk());
    CHECK(inPlace->rawData() == storage);
    CHECK(inPlace->bitwiseEqual(*expected));

    Tensor shared = Tensor::fromVector<float>(dims, values);
    const Tensor alias = shared;
    auto copied = packConstantInPlace(std::move(shared), spec, scratch);
    REQUIRE(copied.isOk());
    CHECK(copied->rawData() != alias.rawData());
    CHECK(copied->bitwiseEqual(*expected));
    CHECK(alias.bitwiseEqual(Tensor::fromVector<float>(dims, values)));
  }
  Tensor ragged = Tensor::fromVector<float>({k, n}, rows);
  const void* raggedStorage = ragged.rawData();
  auto padded = packConstantInPlace(std::move(ragged), PackSpec{"panels", w, false, {}}, scratch);
  REQUIRE(padded.isOk());
  CHECK(padded->rawData() != raggedStorage);
  CHECK(padded->dims() == Dims{3, k, w});
}

TEST_CASE("the memory planner never overlaps live buffers and reuses dead ones") {
  MemoryPlan chain = planMemory({{100, 0, 1}, {100, 1, 2}, {100, 2, 3}});
  CHECK(chain.offsets[0] == chain.offsets[2]);  // 0 is dead when 2 is born
  CHECK(chain.offsets[0] != chain.offsets[1]);
  CHECK(chain.arenaBytes == 256);
  std::mt19937 gen(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Lifetime> b;
    for (int i = 0; i < 30; ++i) {
      size_t first = gen() % 20;
      b.push_back({uint64_t(1 + gen() % 5000), first, first + gen() % 6});
    }
    MemoryPlan p = planMemory(b);
    for (size_t i = 0; i < b.size(); ++i) {
      CHECK(p.offsets[i] % 64 == 0);
      CHECK(p.offsets[i] + b[i].bytes <= p.arenaBytes);
      for (size_t j = i + 1; j < b.size(); ++j) {
        bool timeOverlap = b[i].first <= b[j].last && b[j].first <= b[i].last;
        bool spaceOverlap = p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
        CHECK_FALSE((timeOverlap && spaceOverlap));
      }
    }
    CHECK(p.arenaBytes <= p.unsharedBytes);
  }
}

TEST_CASE("the thread pool covers every iteration exactly once") {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    CHECK(pool.threads() == threads);
    for (int64_t n : {1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallelFor(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        pool.parallelFor(3, [](int64_t, int64_t) {});  // nested: runs inline
      });
      for (auto& h : hits) CHECK(h.load() == 1);
    }
  }
}

TEST_CASE("the thread pool runs jobs back to back, after its workers slept, and right after a resize") {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  auto job = [&](int64_t n) {
    sum = 0;
    pool.parallelFor(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    return sum.load() == n * (n - 1) / 2;
  };
  // Back to back: the workers are still spinning when the next job comes.
  int good = 0;
  for (int i = 0; i < 20000; ++i) good += job(3 + i % 5);
  CHECK(good == 20000);
  // Idle longer than the workers spin: they sleep and must be woken, and the caller sleeps waiting for a slow chunk.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(job(1000));
    pool.parallelFor(3, [](int64_t b, int64_t) {
      if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
  }
  // A job posted right after a resize reaches workers that have not run a line yet.
  for (int threads : {2, 4, 2, 3}) {
    pool.setThreads(threads);
    CHECK(pool.threads() == threads);
    CHECK(job(100));
  }
}

TEST_CASE("fusion plans: default decisions, kernels, and decisions read back") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[1,2,4,4], %y: f32[1,2,4,4]) {
    %w = Constant() {value = tensor<f32[2,2,1,1]: [1.0, 2.0, 3.0, 4.0]>} : f32[2,2,1,1]
    %c = Conv(%x, %w) : f32[1,2,4,4]
    %a = Add(%c, %y) : f32[1,2,4,4]
    %r = Relu(%a) : f32[1,2,4,4]
    %t = Transpose(%r) {perm = [0, 2, 3, 1]} : f32[1,4,4,2]
    %s = ReduceSum(%t) {keepdims = 0} : f32[]
    return %s, %r
  }
})");
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  std::string text = plan->print();
  INFO(text);
  CHECK(text.find("edge e0 %c -> %a epilogue fuse") != std::string::npos);
  CHECK(text.find("edge e1 %a -> %r chain fuse") != std::string::npos);
  CHECK(text.find("edge e2 %r -> %t chain fuse (not honored)") != std::string::npos);
  CHECK(plan->groups().size() == 2);
  CHECK(plan->groups()[0].role == KernelRole::Conv);
  CHECK(plan->groups()[1].role == KernelRole::Reduce);
  // Split the epilogue: three kernels, and the text form reproduces the plan.
  std::string edited = text;
  edited.replace(edited.find("epilogue fuse"), 13, "epilogue split");
  REQUIRE(plan->applyDecisions(edited).isOk());
  CHECK(plan->groups().size() == 3);
  auto again = FusionPlan::build(m->graph());
  REQUIRE(again->applyDecisions(plan->print()).isOk());
  CHECK(again->print() == plan->print());
  Status bad = plan->applyDecisions("edge e9 %x -> %s chain fuse\n");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.error().code() == ErrorCode::FusionPlanFormat);
}

TEST_CASE("matmul template: every configuration matches the interpreter") {
  for (const testing::TemplateCase& c : testing::templateCases("matmul")) checkAllConfigs(c.text, c.anchorOp, c.limit);
}

TEST_CASE("conv2d template: direct and im2col, padded, strided, grouped") {
  for (const testing::TemplateCase& c : testing::templateCases("conv2d")) checkAllConfigs(c.text, c.anchorOp, c.limit);
}

TEST_CASE("conv2d-nchwc template: channel-blocked convs (alter-op-layout's) match the interpreter") {
  // Padded, strided along x, residual Add and Relu in the epilogue: x [N, C/c, H, W, c] with c = 4.
  checkAllConfigs(R"(module @m {
  graph @main(%x: f32[1,2,6,7,4], %y: f32[1,2,6,4,4]) {
    %w = Constant() {value = )" + literal({2, 2, 3, 3, 4, 4}, 21) + R"(} : f32[2,2,3,3,4,4]
    %b = Constant() {value = )" + literal({8}, 22) + R"(} : f32[8]
    %c = kiln::ConvNCHWc(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [1, 2]} : f32[1,2,6,4,4]
    %a = Add(%c, %y) : f32[1,2,6,4,4]
    %r = Relu(%a) : f32[1,2,6,4,4]
    return %r
  }
})",
                  "ConvNCHWc", 64);
  // Unpadded 1x1 over two images, 9 pixels a row (blocks that do not divide it overlap); dilated 2x2 with 3 blocks.
  checkAllConfigs(blockedConv("2,1,5,9,8", {3, 1, 1, 1, 8, 8}, "", "2,3,5,9,8", 23), "ConvNCHWc", 64);
  checkAllConfigs(blockedConv("1,1,7,7,8", {2, 1, 2, 2, 8, 8}, " {dilations = [2, 2], pads = [0, 1, 1, 0]}", "1,2,6,6,8", 24),
                  "ConvNCHWc", 64);
  // Depthwise (group = channels, weights [C/c, 1, kH, kW, 1, c]), padded, stride 2.
  checkAllConfigs(blockedConv("1,2,9,9,8", {2, 1, 3, 3, 1, 8}, " {group = 16, pads = [1, 1, 1, 1], strides = [2, 2]}",
                              "1,2,5,5,8", 26),
                  "ConvNCHWc", 64);
  // Depthwise, dilated, uneven pads: read in place, border blocks column-checked, rows outside skipped.
  checkAllConfigs(blockedConv("1,1,10,11,8", {1, 1, 3, 3, 1, 8}, " {dilations = [2, 2], group = 8, pads = [2, 1, 0, 2]}",
                              "1,1,8,10,8", 28),
                  "ConvNCHWc", 64);
  // Blocks that differ in and out (alter-op-layout's per-map blocks: MobileNetV2's 24 -> 144 expansions read
  // blocks of 8 and write 16, its 144 -> 24 projections the reverse), padded 3x3 and 1x1.
  checkAllConfigs(blockedConv("1,3,5,6,8", {2, 3, 3, 3, 8, 16}, " {pads = [1, 1, 1, 1]}", "1,2,5,6,16", 29), "ConvNCHWc",
                  64);
  checkAllConfigs(blockedConv("1,2,4,9,16", {3, 2, 1, 1, 16, 8}, "", "1,3,4,9,8", 30), "ConvNCHWc", 64);
  // Groups within a block (ResNeXt, RegNet: weights [C/c, 1, kH, kW, c, c]): groups of 4 padded 3x3; groups of 1
  // (a block of full lanes, as the inference allows) strided.
  checkAllConfigs(blockedConv("1,2,6,7,8", {2, 1, 3, 3, 8, 8}, " {group = 4, pads = [1, 1, 1, 1]}", "1,2,6,7,8", 31),
                  "ConvNCHWc", 64);
  checkAllConfigs(blockedConv("2,3,5,5,8", {3, 1, 3, 3, 8, 8}, " {group = 24, strides = [2, 2]}", "2,3,2,2,8", 32),
                  "ConvNCHWc", 64);
  // An RGB stem: 3 input channels as one block, 8 output lanes.
  checkAllConfigs(blockedConv("1,1,7,7,3", {1, 1, 3, 3, 3, 8}, " {pads = [1, 1, 1, 1], strides = [2, 2]}", "1,1,4,4,8", 27),
                  "ConvNCHWc", 64);
}

TEST_CASE("channel-blocked pools (alter-op-layout's) match the interpreter on the CPU and are refused on the GPU") {
  // Max with a prologue that makes values negative (the -inf border), ceil_mode and dilation; lanes of 8.
  checkAllConfigs(R"(module @m {
  graph @main(%x: f32[1,2,12,9,8]) {
    %n = Neg(%x) : f32[1,2,12,9,8]
    %p = MaxPool(%n) {kernel_shape = [3, 3, 1], strides = [2, 2, 1], pads = [1, 2, 0, 1, 0, 0], dilations = [1, 2, 1], ceil_mode = 1} : f32[1,2,7,4,8]
    %r = Relu(%p) : f32[1,2,7,4,8]
    return %r
  }
})",
                  "MaxPool", 8);
  // Averages counting the image only and, with ceil_mode's last window, the padding.
  for (const char* include : {"0", "1"})
    checkAllConfigs(std::string(R"(module @m {
  graph @main(%x: f32[2,1,8,8,16]) {
    %p = AveragePool(%x) {kernel_shape = [3, 3, 1], strides = [2, 2, 1], pads = [1, 1, 0, 1, 1, 0], ceil_mode = 1, count_include_pad = )") +
                        include + R"(} : f32[2,1,5,5,16]
    return %p
  }
})",
                    "AveragePool", 8);
  auto gpu = onlyKernelSpace(R"(module @m {
  graph @main(%x: f32[1,1,4,4,8]) {
    %p = MaxPool(%x) {kernel_shape = [2, 2, 1], strides = [2, 2, 1]} : f32[1,1,2,2,8]
    return %p
  }
})", KernelTarget::Gpu);
  REQUIRE_FALSE(gpu.isOk());
  CHECK(gpu.error().code() == ErrorCode::CodegenUnsupported);
  CHECK(gpu.error().str().find("channel-blocked pools (alter-op-layout's) run on the cpu target only") != std::string::npos);
}

TEST_CASE("conv2d-nchwc has no GPU schedule and says so at the node") {
  auto m = parse(blockedConv("1,1,4,4,8", {1, 1, 1, 1, 8, 8}, "", "1,1,4,4,8", 25));
  auto plan = FusionPlan::build(m->graph());
  REQUIRE(plan.isOk());
  REQUIRE(plan->groups().size() == 1);
  const KernelGroup& group = plan->groups().front();
  CHECK(group.role == KernelRole::Conv);
  auto tmpl = templateFor(group);
  REQUIRE(tmpl.isOk());
  CHECK(std::string((*tmpl)->name()) == "conv2d-nchwc");
  auto gpu = (*tmpl)->knobSpace(group, KernelTarget::Gpu);
  REQUIRE_FALSE(gpu.isOk());
  CHECK(gpu.error().code() == ErrorCode::CodegenUnsupported);
  CHECK(gpu.error().str().find("alter-op-layout") != std::string::npos);
  INFO(gpu.error().str());
  CHECK(gpu.error().str().find("producing c") != std::string::npos);  // the node
}

TEST_CASE("conv2d-nchwc's default register block: 7 x 2, rolled channels on AMD except depthwise and strided convs with taps") {
  auto defaultOf = [](const std::string& text) {
    auto space = onlyKernelSpace(text, KernelTarget::Cpu);
    REQUIRE(space.isOk());
    return space->defaultConfig();
  };
  // ResNet-50's shapes in small: a 3x3 and a 1x1 conv of stride 1, a 3x3 and a 1x1 of stride 2.
  const Config same3x3 = defaultOf(blockedConv("1,4,14,14,16", {4, 4, 3, 3, 16, 16}, " {pads = [1, 1, 1, 1]}", "1,4,14,14,16", 41));
  const Config same1x1 = defaultOf(blockedConv("1,4,14,14,16", {4, 4, 1, 1, 16, 16}, "", "1,4,14,14,16", 42));
  const Config strided3x3 =
      defaultOf(blockedConv("1,4,14,14,16", {4, 4, 3, 3, 16, 16}, " {pads = [1, 1, 1, 1], strides = [2, 2]}", "1,4,7,7,16", 43));
  const Config strided1x1 = defaultOf(blockedConv("1,4,14,14,16", {4, 4, 1, 1, 16, 16}, " {strides = [2, 2]}", "1,4,7,7,16", 44));
  for (const Config* c : {&same3x3, &same1x1, &strided3x3, &strided1x1}) CHECK(c->at("tw") == 7);
  const bool amd = __builtin_cpu_is("amd");
  INFO("AMD cores: " << amd);
  for (const Config* c : {&same3x3, &same1x1, &strided1x1}) {
    CHECK(c->at("tob") == 2);
    CHECK(c->at("unroll") == (amd ? 0 : 1));  // unrolled, 7 x 2 spills on AMD's cores
  }
  CHECK(strided3x3.at("tob") == (amd ? 1 : 2));
  CHECK(strided3x3.at("unroll") == 1);
  // Depthwise (weights [C/c, 1, kH, kW, 1, c]): one channel block on AMD, the taps unrolled everywhere.
  const Config depthwise = defaultOf(
      blockedConv("1,4,14,14,16", {4, 1, 3, 3, 1, 16}, " {group = 64, pads = [1, 1, 1, 1]}", "1,4,14,14,16", 45));
  CHECK(depthwise.at("tob") == (amd ? 1 : 2));
  CHECK(depthwise.at("unroll") == 1);
}

TEST_CASE("pool, reduce, softmax and layernorm templates match the interpreter") {
  for (const testing::TemplateCase& c : testing::templateCases("rowwise")) checkAllConfigs(c.text, c.anchorOp, c.limit);
}

TEST_CASE("attention template: kiln::Attention in one kernel matches the interpreter") {
  for (const testing::TemplateCase& c : testing::templateCases("attention")) checkAllConfigs(c.text, c.anchorOp, c.limit);
}

TEST_CASE("injective template: broadcasting, reshapes, slices, concat, pad, gather, where") {
  for (const testing::TemplateCase& c : testing::templateCases("injective")) checkAllConfigs(c.text, c.anchorOp, c.limit);
}

namespace {
// A kernel entry that records the pointers it is given (with each parameter's
// buffer id, from the executable's kernel steps in run order) instead of running.
const runtime::Executable* recordedExe = nullptr;
size_t recordedStep = 0;
std::vector<std::pair<uint32_t, const void*>> recordedArgs;
void recordArgs(void* const* args) {
  while (recordedExe->steps[recordedStep].kind != runtime::StepKind::Kernel) ++recordedStep;
  const runtime::KernelStep& step = recordedExe->steps[recordedStep++];
  for (size_t i = 0; i < step.args.size(); ++i) recordedArgs.push_back({step.args[i], args[i]});
}
}  // namespace

TEST_CASE("every buffer a CPU kernel gets is 64-byte aligned: arena intermediates and unaligned weights") {
  // A 256 KiB intermediate (the conv's result: a Transpose does not fuse into
  // it), so the arena is allocated the way large blocks are (malloc's mmap path,
  // 16 bytes past a page: what `new uint8_t[]` gave); and an Add operand whose
  // storage starts 16 bytes into a line, as an initializer adopted from its
  // protobuf string does.
  auto m = parse(R"(module @m {
  graph @main(%x: f32[1,16,64,64]) {
    %w = Constant() {value = )" + literal({16, 16, 3, 3}, 31) + R"(} : f32[16,16,3,3]
    %b = Constant() {value = )" + literal({1, 16, 1, 1}, 32) + R"(} : f32[1,16,1,1]
    %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,16,64,64]
    %t = Transpose(%c) {perm = [0, 1, 3, 2]} : f32[1,16,64,64]
    %a = Add(%t, %b) : f32[1,16,64,64]
    return %a
  }
})");
  ir::Node* bias = nullptr;
  for (ir::Node* n : m->graph().nodes())
    if (n->opType() == "Constant" && n->output(0)->name() == "b") bias = n;
  REQUIRE(bias);
  const Tensor aligned = bias->findAttr("value")->t();
  auto storage = std::make_shared<std::vector<uint8_t>>(aligned.byteSize() + 80);
  uint8_t* start = storage->data() + (64 - reinterpret_cast<uintptr_t>(storage->data()) % 64) % 64 + 16;
  std::memcpy(start, aligned.rawData(), aligned.byteSize());
  bias->setAttr("value", Tensor(DType::F32, aligned.dims(), kiln::Buffer::view(storage, start, aligned.byteSize())));
  REQUIRE(reinterpret_cast<uintptr_t>(bias->findAttr("value")->t().rawData()) % 64 == 16);

  auto jit = compileForCpu(m->graph());
  REQUIRE(jit.isOk());
  std::shared_ptr<const runtime::Executable> exe = jit->lowered.executable;
  REQUIRE(exe->arenaBytes >= 256 * 1024);
  std::vector<Tensor> inputs = randomInputs(m->graph(), 5);
  auto results = checkKernels(m->graph(), *jit, inputs);  // the kernels still compute the right values
  REQUIRE(results.isOk());
  for (const KernelCheckResult& r : *results) CHECK(r.maxRelError < 2e-5);

  auto recorder = runtime::CpuExecutor::create(exe, std::vector<runtime::KernelEntry>(exe->kernelNames.size(), &recordArgs));
  REQUIRE(recorder.isOk());
  recordedExe = exe.get();
  recordedStep = 0;
  recordedArgs.clear();
  REQUIRE((*recorder)->run(inputs).isOk());
  std::set<runtime::BufferKind> kinds;
  for (auto [id, pointer] : recordedArgs) {
    INFO("buffer " << id << " kind " << int(exe->buffers[id].kind));
    CHECK(reinterpret_cast<uintptr_t>(pointer) % 64 == 0);
    kinds.insert(exe->buffers[id].kind);
  }
  CHECK(kinds.count(runtime::BufferKind::Intermediate));
  CHECK(kinds.count(runtime::BufferKind::Weight));
}

TEST_CASE("artifacts round-trip and load through kiln::Model without the compiler") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[1,3,8,8]) {
    %w = Constant() {value = )" + literal({4, 3, 3, 3}, 12) + R"(} : f32[4,3,3,3]
    %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %r = Relu(%c) : f32[1,4,8,8]
    %g = GlobalAveragePool(%r) : f32[1,4,1,1]
    %e = Exp(%g) : f32[1,4,1,1]
    return %e, %r
  }
})");
  auto jit = compileForCpu(m->graph());
  REQUIRE(jit.isOk());
  auto artifact = compileCpuArtifact(m->graph());
  REQUIRE(artifact.isOk());
  std::vector<uint8_t> bytes = runtime::serializeExecutable(*artifact->executable);
  std::string path = "codegen_test_model.kiln";
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  auto model = Model::load(path);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  CHECK((*model)->inputs().size() == 1);
  CHECK((*model)->inputs()[0].dims == Dims{1, 3, 8, 8});
  CHECK((*model)->outputs()[1].dims == Dims{1, 4, 8, 8});
  std::vector<Tensor> inputs = randomInputs(m->graph(), 3);
  auto fromArtifact = (*model)->run(inputs);
  auto fromJit = jit->executor->run(inputs);
  REQUIRE(fromArtifact.isOk());
  REQUIRE(fromJit.isOk());
  for (size_t i = 0; i < 2; ++i) CHECK((*fromArtifact)[i].bitwiseEqual((*fromJit)[i]));

  SECTION("a flipped byte is a checksum error") {
    std::vector<uint8_t> bad = bytes;
    bad[bad.size() / 2] ^= 0x40;
    auto r = runtime::deserializeExecutable(bad.data(), bad.size());
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
    CHECK(r.error().message().find("checksum") != std::string::npos);
  }
  SECTION("a truncated file says so") {
    auto r = runtime::deserializeExecutable(bytes.data(), bytes.size() - 100);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
  }
  SECTION("another format version is refused") {
    std::vector<uint8_t> other = bytes;
    other[8] = 99;
    auto r = runtime::deserializeExecutable(other.data(), other.size());
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactVersion);
  }
  SECTION("not an artifact at all") {
    const char text[] = "hello, this is not a model";
    auto r = runtime::deserializeExecutable(reinterpret_cast<const uint8_t*>(text), sizeof text);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
  }
  SECTION("wrong inputs are refused at run time") {
    auto r = (*model)->run({Tensor::zeros(DType::F32, {1, 3, 8, 9})});
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ExecInput);
  }
  std::remove(path.c_str());
}

TEST_CASE("releasing consumed weights empties the graph's constants as lowering reads them, not the artifact") {
  // %w is packed for a matmul and then read as it is by a Mul; %v only packed, into a ragged last
  // panel; %p only packed, into whole panels; %b read as it is; %keep a graph output. With
  // releaseConsumedWeights each leaves the graph once its last reader is lowered (%v's storage
  // freed: only its packed copy is needed; %p's panels written over its own storage), %keep
  // stays, and the artifact is byte for byte the one compiled without the option.
  const std::string text = R"(module @m {
  graph @main(%x: f32[2,96]) {
    %w = Constant() {value = )" + literal({96, 40}, 5) + R"(} : f32[96,40]
    %v = Constant() {value = )" + literal({96, 24}, 6) + R"(} : f32[96,24]
    %b = Constant() {value = )" + literal({40}, 7) + R"(} : f32[40]
    %p = Constant() {value = )" + literal({96, 64}, 9) + R"(} : f32[96,64]
    %keep = Constant() {value = )" + literal({3}, 8) + R"(} : f32[3]
    %y = MatMul(%x, %w) : f32[2,40]
    %z = Add(%y, %b) : f32[2,40]
    %u = MatMul(%x, %v) : f32[2,24]
    %d = Mul(%w, %w) : f32[96,40]
    %q = MatMul(%x, %p) : f32[2,64]
    return %z, %u, %d, %q, %keep
  }
})";
  auto plain = parse(text);
  auto kept = compileCpuArtifact(plain->graph());
  REQUIRE(kept.isOk());

  auto m = parse(text);
  std::map<std::string, ir::Node*> constants;
  for (ir::Node* n : m->graph().nodes())
    if (n->opType() == "Constant") constants[n->output(0)->name()] = n;
  REQUIRE(constants.size() == 5);
  const void* pStorage = constants["p"]->findAttr("value")->t().rawData();
  std::weak_ptr<kiln::Buffer> packedOnly = constants["v"]->findAttr("value")->t().buffer();
  std::weak_ptr<kiln::Buffer> readAsIs = constants["w"]->findAttr("value")->t().buffer();
  CompileOptions release;
  release.releaseConsumedWeights = true;
  auto released = compileCpuArtifact(m->graph(), release);
  INFO((released.isOk() ? std::string() : released.error().str()));
  REQUIRE(released.isOk());
  CHECK(runtime::serializeExecutable(*released->executable) == runtime::serializeExecutable(*kept->executable));
  for (const char* name : {"w", "v", "b", "p"}) {
    INFO(name);
    CHECK_FALSE(constants[name]->hasAttr("value"));
  }
  CHECK(constants["keep"]->hasAttr("value"));
  CHECK(packedOnly.expired());
  CHECK_FALSE(readAsIs.expired());  // the executable's weight buffer
  auto holds = [](const runtime::Executable& exe, const void* data) {
    return std::any_of(exe.weights.begin(), exe.weights.end(), [&](const Tensor& t) { return t.rawData() == data; });
  };
  CHECK(holds(*released->executable, pStorage));  // %p's panels, in its own storage
  for (const ir::Node* n : plain->graph().nodes())
    if (n->opType() == "Constant") CHECK(n->hasAttr("value"));  // without the option the graph keeps them

  SECTION("lowering the emptied graph again is an error, not old data") {
    auto again = compileCpuArtifact(m->graph(), release);
    REQUIRE_FALSE(again.isOk());
    CHECK(again.error().code() == ErrorCode::Internal);
  }
}

TEST_CASE("saving streams the weights: the file is serializeExecutable's bytes and loads") {
  // Weights of 64 KiB or more are written from where they are, hashed a slice at a time.
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2,96]) {
    %w = Constant() {value = )" + literal({96, 400}, 5) + R"(} : f32[96,400]
    %b = Constant() {value = )" + literal({400}, 6) + R"(} : f32[400]
    %y = MatMul(%x, %w) : f32[2,400]
    %z = Add(%y, %b) : f32[2,400]
    return %z
  }
})");
  auto artifact = compileCpuArtifact(m->graph());
  REQUIRE(artifact.isOk());
  std::vector<uint8_t> bytes = runtime::serializeExecutable(*artifact->executable);
  std::string path = "codegen_streamed.kiln";
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  auto file = readFile(path);
  REQUIRE(file.isOk());
  CHECK(file->size() > 96 * 400 * 4);
  CHECK(*file == std::string(bytes.begin(), bytes.end()));
  auto model = Model::load(path);
  REQUIRE(model.isOk());
  auto jit = compileForCpu(m->graph());
  REQUIRE(jit.isOk());
  std::vector<Tensor> inputs = randomInputs(m->graph(), 4);
  auto fromArtifact = (*model)->run(inputs);
  auto fromJit = jit->executor->run(inputs);
  REQUIRE(fromArtifact.isOk());
  REQUIRE(fromJit.isOk());
  CHECK((*fromArtifact)[0].bitwiseEqual((*fromJit)[0]));
  SECTION("a directory that does not exist is an I/O error") {
    auto r = runtime::saveArtifact(*artifact->executable, "no-such-dir/x.kiln");
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::IoError);
  }
  std::remove(path.c_str());
}

/// Runs `model` (compiled from `module`) and the interpreter on `inputs` and checks that
/// every output has the interpreter's shape and values; returns the model's outputs.
std::vector<Tensor> runsLikeInterpreter(const Model& model, const ir::Module& module, const std::vector<Tensor>& inputs) {
  auto copy = parse(ir::printModule(module));
  runtime::Interpreter reference(copy->graph());
  auto got = model.run(inputs);
  INFO((got.isOk() ? std::string() : got.error().str()));
  REQUIRE(got.isOk());
  auto want = reference.run(std::vector<RuntimeValue>(inputs.begin(), inputs.end()));
  REQUIRE(want.isOk());
  testing::checkOutputsMatch(*got, *want, 1e-6);
  return std::move(*got);
}

/// Compiles `module` for the CPU, saves and loads the artifact.
std::unique_ptr<Model> compileAndLoad(ir::Module& module, const std::string& path) {
  auto artifact = compileCpuArtifact(module.graph());
  INFO((artifact.isOk() ? std::string() : artifact.error().str()));
  REQUIRE(artifact.isOk());
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  auto model = Model::load(path);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  return std::move(*model);
}

namespace {
/// Every float8 and float4 value of every format, the midpoints between
/// neighbours and the floats next to them, the powers of two of FLOAT8E8M0 and
/// the floats around them and their midpoints (f32 subnormals too), values
/// past the largest finite ones, infinities, NaN, and the halves and wrap
/// points of the 4- and 2-bit integer casts.
std::vector<float> narrowCastProbes() {
  std::vector<float> v = {0.0f, -0.0f, 1e6f, -1e6f, 70000.0f, 470.0f, 464.0f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1e-30f,
                          2.5f, -2.5f, 8.5f, -8.5f, 0.49999997f, 7.5f, 15.5f, 1e10f, -3e9f, 1.5f, -1.5f, 3.5f,
                          0x1p-149f, 0x1p-128f, 3e38f};
  auto neighbours = [&v](float a, float b) {
    if (!std::isfinite(a) || !std::isfinite(b)) return;
    const float mid = (a + b) / 2;
    for (float x : {a, mid, std::nextafter(mid, a), std::nextafter(mid, b)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  };
  for (NarrowType t : {NarrowType::F8E4M3FN, NarrowType::F8E4M3FNUZ, NarrowType::F8E5M2, NarrowType::F8E5M2FNUZ})
    for (int bits = 0; bits < 0x7f; ++bits)
      neighbours(narrowFloatValue(uint8_t(bits), t), narrowFloatValue(uint8_t(bits + 1), t));
  for (int bits = 0; bits < 7; ++bits)
    neighbours(narrowFloatValue(uint8_t(bits), NarrowType::F4E2M1), narrowFloatValue(uint8_t(bits + 1), NarrowType::F4E2M1));
  for (int k = -127; k <= 127; ++k) {
    const float p = std::ldexp(1.0f, k);
    for (float x : {p, std::nextafter(p, 0.0f), std::nextafter(p, std::numeric_limits<float>::infinity()), 1.5f * p, std::nextafter(1.5f * p, 0.0f)})
      v.push_back(x);
  }
  return v;
}
}  // namespace

TEST_CASE("kiln::NarrowCast kernels compute the narrow cast rules on every value and midpoint") {
  const std::vector<float> probes = narrowCastProbes();
  const std::string n = std::to_string(probes.size());
  struct Cast { NarrowType to; int saturate; ScaleRounding rounding = ScaleRounding::Up; };
  const Cast casts[] = {{NarrowType::F8E4M3FN, 1}, {NarrowType::F8E4M3FN, 0}, {NarrowType::F8E4M3FNUZ, 1},
                        {NarrowType::F8E4M3FNUZ, 0}, {NarrowType::F8E5M2, 1}, {NarrowType::F8E5M2, 0},
                        {NarrowType::F8E5M2FNUZ, 1}, {NarrowType::F8E5M2FNUZ, 0}, {NarrowType::U4, 1},
                        {NarrowType::I4, 1}, {NarrowType::F4E2M1, 1}, {NarrowType::F4E2M1, 0},
                        {NarrowType::F8E8M0, 1}, {NarrowType::F8E8M0, 0},
                        {NarrowType::F8E8M0, 1, ScaleRounding::Down}, {NarrowType::F8E8M0, 0, ScaleRounding::Down},
                        {NarrowType::F8E8M0, 1, ScaleRounding::Nearest}, {NarrowType::F8E8M0, 0, ScaleRounding::Nearest},
                        {NarrowType::U2, 1}, {NarrowType::I2, 1}};
  std::string body, results;
  for (size_t i = 0; i < std::size(casts); ++i) {
    const std::string name = "%y" + std::to_string(i);
    body += "    " + name + " = kiln::NarrowCast(%x) {to = " + std::to_string(int(casts[i].to)) + ", saturate = " +
            std::to_string(casts[i].saturate) + ", round_mode = " + std::to_string(int(casts[i].rounding)) + "} : " +
            dtypeName(narrowCarrier(casts[i].to)) + "[" + n + "]\n";
    results += (i ? ", " : "") + name;
  }
  auto m = parse("module @m {\n  graph @main(%x: f32[" + n + "]) {\n" + body + "    return " + results + "\n  }\n}\n");
  const std::string path = "codegen_test_narrow.kiln";
  auto model = compileAndLoad(*m, path);
  std::remove(path.c_str());
  Tensor x = Tensor::zeros(DType::F32, {int64_t(probes.size())});
  std::copy(probes.begin(), probes.end(), x.mutableData<float>());
  auto got = model->run({x});
  REQUIRE(got.isOk());
  for (size_t i = 0; i < std::size(casts); ++i) {
    INFO(narrowTypeName(casts[i].to) << " saturate=" << casts[i].saturate << " round_mode=" << int(casts[i].rounding));
    std::vector<double> y = (*got)[i].toDoubles();
    for (size_t j = 0; j < probes.size(); ++j) {
      const float p = probes[j];
      const double want = isNarrowFloat(casts[i].to)
                              ? double(roundToNarrowFloat(p, casts[i].to, casts[i].saturate != 0, casts[i].rounding))
                              : double(castToNarrowInt(p, casts[i].to));
      INFO("x = " << p << ": got " << y[j] << ", expected " << want);
      CHECK((y[j] == want || (std::isnan(y[j]) && std::isnan(want))));
    }
  }
}

TEST_CASE("host steps: extern ops and data-dependent shapes run on reference kernels, kernels around them") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[6], %w: f32[2,3]) {
    %zero = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %g = Greater(%x, %zero) : bool[6]
    %n = NonZero(%g) : i64[1,?]
    %idx = Squeeze(%n) : i64[?]
    %sel = Gather(%x, %idx) {axis = 0} : f32[?]
    %s = Shape(%sel) : i64[1]
    %cnt = Cast(%s) {to = 1} : f32[1]
    %y = Mul(%w, %cnt) : f32[2,3]
    %k = Constant() {value = tensor<i64[1]: [2]>} : i64[1]
    %tv, %ti = TopK(%w, %k) {axis = 1} : f32[2,2], i64[2,2]
    %e = Exp(%tv) : f32[2,2]
    %sum = ReduceSum(%sel) {keepdims = 0} : f32[]
    %c = Greater(%sum, %zero) : bool[]
    %i = If(%c) {then_branch = graph @t() {
        return %y
      }, else_branch = graph @f() {
        %ny = Neg(%y) : f32[2,3]
        return %ny
      }} : f32[2,3]
    return %sel, %y, %e, %i, %ti
  }
})");
  auto artifact = compileCpuArtifact(m->graph());
  INFO((artifact.isOk() ? std::string() : artifact.error().str()));
  REQUIRE(artifact.isOk());
  std::string ops = artifact->stats.hostOpSummary();
  CHECK(ops.find("NonZero") != std::string::npos);
  CHECK(ops.find("TopK") != std::string::npos);
  CHECK(ops.find("If") == std::string::npos);  // static results: its branches compile
  CHECK(artifact->stats.compiledIfs == 1);
  CHECK(ops.find("Greater") == std::string::npos);  // static: compiled
  CHECK(artifact->executable->kernelNames.size() >= 3);
  std::string path = "codegen_test_host.kiln";
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  auto model = Model::load(path);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  CHECK((*model)->outputs()[0].dims == Dims{-1});  // data-dependent
  CHECK((*model)->outputs()[1].dims == Dims{2, 3});

  // Inputs with 4, then 0 positive elements: the dynamic shapes follow the data.
  for (std::vector<double> xs : {std::vector<double>{1, -2, 3, 0.5, -1, 2}, std::vector<double>{-1, -2, -3, 0, -1, -2}}) {
    std::vector<Tensor> inputs = {Tensor::fromVector<double>({6}, xs).castTo(DType::F32),
                                  Tensor::fromVector<double>({2, 3}, {0.5, -1, 2, 1.5, 0.25, -3}).castTo(DType::F32)};
    std::vector<Tensor> got = runsLikeInterpreter(**model, *m, inputs);
    REQUIRE(!got.empty());
    CHECK(got[0].dims() == Dims{int64_t(std::count_if(xs.begin(), xs.end(), [](double v) { return v > 0; }))});
  }

  SECTION("disallowed host steps are an error naming the node") {
    CompileOptions strict;
    strict.allowHostSteps = false;
    auto r = compileCpuArtifact(m->graph(), strict);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::CodegenUnsupported);
    CHECK(r.error().str().find("host steps are disabled") != std::string::npos);
    CHECK(!r.error().nodeName().empty());
  }
  SECTION("a host graph that does not parse is a corrupt artifact") {
    runtime::Executable bad = *artifact->executable;
    REQUIRE(!bad.hostGraphs.empty());
    bad.hostGraphs[0].text.resize(bad.hostGraphs[0].text.size() / 2);
    REQUIRE(runtime::saveArtifact(bad, path).isOk());
    auto r = Model::load(path);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
    CHECK(r.error().message().find("does not parse") != std::string::npos);
  }
  SECTION("a kernel step may not take a dynamic buffer") {
    runtime::Executable bad = *artifact->executable;
    for (runtime::KernelStep& step : bad.steps)
      if (step.kind == runtime::StepKind::Kernel)
        for (size_t b = 0; b < bad.buffers.size(); ++b)
          if (bad.buffers[b].dynamic) step.args[0] = uint32_t(b);
    auto r = bad.validate();
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
  }
  std::remove(path.c_str());
}

TEST_CASE("compiled If: the condition picks a branch at run time, each branch runs its own kernels") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[2,3], %flag: bool[]) {
    %one = Constant() {value = tensor<f32[]: [1.0]>} : f32[]
    %s = Add(%x, %one) : f32[2,3]
    %r, %t = If(%flag) {then_branch = graph @t() {
        %e = Exp(%s) : f32[2,3]
        %p = Mul(%e, %x) : f32[2,3]
        %sum = ReduceSum(%p) {keepdims = 0} : f32[]
        %zero = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
        %pos = Greater(%sum, %zero) : bool[]
        %inner = If(%pos) {then_branch = graph @tt() {
            %n = Neg(%p) : f32[2,3]
            return %n
          }, else_branch = graph @tf() {
            return %s
          }} : f32[2,3]
        return %inner, %sum
      }, else_branch = graph @f() {
        %c = Constant() {value = tensor<f32[]: [7.0]>} : f32[]
        return %x, %c
      }} : f32[2,3], f32[]
    %y = Sub(%r, %x) : f32[2,3]
    return %y, %t, %r
  }
})");
  auto artifact = compileCpuArtifact(m->graph());
  INFO((artifact.isOk() ? std::string() : artifact.error().str()));
  REQUIRE(artifact.isOk());
  CHECK(artifact->stats.compiledIfs == 2);  // the inner If too
  CHECK(artifact->stats.hostSteps.empty());
  const runtime::Executable& exe = *artifact->executable;
  auto count = [&](runtime::StepKind k) {
    return std::count_if(exe.steps.begin(), exe.steps.end(), [&](const runtime::KernelStep& s) { return s.kind == k; });
  };
  CHECK(count(runtime::StepKind::Branch) == 2);
  CHECK(count(runtime::StepKind::Jump) == 2);
  CHECK(count(runtime::StepKind::Copy) >= 4);  // each block's results into its If's buffers
  std::string path = "codegen_test_if.kiln";
  REQUIRE(runtime::saveArtifact(exe, path).isOk());
  auto model = Model::load(path);
  INFO((model.isOk() ? std::string() : model.error().str()));
  REQUIRE(model.isOk());
  // Flag false: the else branch; true with a positive and a negative sum: both inner branches.
  for (auto [flag, sign] : {std::pair{false, 1.0}, std::pair{true, 1.0}, std::pair{true, -1.0}}) {
    INFO("flag " << flag << ", x of sign " << sign);
    std::vector<double> xs = {0.5, 1, 2, 0.25, 1.5, 3};
    for (double& v : xs) v *= sign;
    std::vector<Tensor> inputs = {Tensor::fromVector<double>({2, 3}, xs).castTo(DType::F32),
                                  Tensor::fromVector<double>({}, {flag ? 1.0 : 0.0}).castTo(DType::Bool)};
    std::vector<Tensor> got = runsLikeInterpreter(**model, *m, inputs);
    REQUIRE(got.size() == 3);
    if (!flag) CHECK(got[1].scalarAsDouble() == Approx(7.0));  // the else branch's constant
  }
  SECTION("a branch step that goes back is a corrupt artifact") {
    runtime::Executable bad = exe;
    for (runtime::KernelStep& step : bad.steps)
      if (step.kind == runtime::StepKind::Branch) step.kernel = 0;
    auto r = bad.validate();
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
    CHECK(r.error().message().find("only later steps") != std::string::npos);
  }
  SECTION("a copy between buffers of different sizes is a corrupt artifact") {
    runtime::Executable bad = exe;
    for (runtime::KernelStep& step : bad.steps)
      if (step.kind == runtime::StepKind::Copy) step.args[0] = exe.inputs[1];  // the one-byte flag
    auto r = bad.validate();
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
  }
  std::remove(path.c_str());
}

TEST_CASE("host steps: results whose rank depends on the data, and groups that would feed each other") {
  SECTION("an If whose branches differ in rank returns an output of unknown rank") {
    // torchvision's detectors trace `squeeze(1)` of a data-dependent count this way.
    auto m = parse(R"(module @m {
  graph @main(%x: f32[6]) {
    %zero = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %ax = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
    %g = Greater(%x, %zero) : bool[6]
    %n = NonZero(%g) : i64[1,?]
    %sum = ReduceSum(%x) {keepdims = 0} : f32[]
    %c = Greater(%sum, %zero) : bool[]
    %r = If(%c) {then_branch = graph @t() {
        %q = Squeeze(%n, %ax) : i64[?]
        return %q
      }, else_branch = graph @f() {
        return %n
      }} : i64[*]
    return %r, %sum
  }
})");
    std::string path = "codegen_test_rank.kiln";
    std::unique_ptr<Model> model = compileAndLoad(*m, path);
    CHECK_FALSE(model->outputs()[0].rankKnown);
    CHECK(model->outputs()[1].rankKnown);
    std::vector<Tensor> positive = runsLikeInterpreter(*model, *m, {Tensor::fromVector<float>({6}, {1, -2, 3, 0.5, -1, 2})});
    CHECK(positive[0].dims() == Dims{4});
    std::vector<Tensor> negative = runsLikeInterpreter(*model, *m, {Tensor::fromVector<float>({6}, {-1, 2, -3, 0, -1, -2})});
    CHECK(negative[0].dims() == Dims{1, 1});
    // The C API says so rather than giving a scalar's rank and bytes.
    kiln_model* c = nullptr;
    REQUIRE(kiln_model_load(path.c_str(), &c) == 0);
    CHECK(kiln_model_output_rank(c, 0) == KILN_UNKNOWN_RANK);
    CHECK(kiln_model_output_bytes(c, 0) == 0);
    CHECK(kiln_model_output_rank(c, 1) == 0);
    float x[6] = {1, 2, 3, 4, 5, 6}, sum = 0;
    int64_t r[8];
    const void* in[] = {x};
    void* out[] = {r, &sum};
    CHECK(kiln_model_run(c, in, out) == int(ErrorCode::InvalidArgument));
    kiln_model_free(c);
    std::remove(path.c_str());
  }
  SECTION("two groups that each read the other's result are not formed") {
    // The host step {d, h1, df, h2} and the kernel chain i1 -> i2: no path of nodes leaves
    // either and comes back, but h1 feeds i2 and i1 feeds h2, so as groups they would
    // wait for each other (Faster R-CNN's proposal reshapes at -O0 did this).
    auto m = parse(R"(module @m {
  graph @main(%x: f32[6], %y: f32[1,2]) {
    %zero = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %g = Greater(%x, %zero) : bool[6]
    %d = NonZero(%g) : i64[1,?]
    %i1 = Neg(%y) : f32[1,2]
    %h1 = Shape(%d) : i64[2]
    %df = Cast(%d) {to = 1} : f32[1,?]
    %h2 = Concat(%df, %i1) {axis = 1} : f32[1,?]
    %h1f = Cast(%h1) {to = 1} : f32[2]
    %i2 = Add(%i1, %h1f) : f32[1,2]
    return %h2, %i2
  }
})");
    auto plan = FusionPlan::build(m->graph());
    REQUIRE(plan.isOk());
    INFO(plan->print());
    auto groupOf = [&](const std::string& value) {
      for (const ir::Node* n : m->graph().nodes())
        if (n->numOutputs() && n->output(0)->name() == value) return plan->groupOf(n).id;
      FAIL("no node makes " << value);
      return -1;
    };
    CHECK(groupOf("d") == groupOf("h2"));
    CHECK(groupOf("h1f") == groupOf("i2"));
    CHECK(groupOf("i1") != groupOf("i2"));  // the merge that would close the cycle
    std::string path = "codegen_test_cycle.kiln";
    std::unique_ptr<Model> model = compileAndLoad(*m, path);
    runsLikeInterpreter(*model, *m, {Tensor::fromVector<float>({6}, {1, -2, 3, 0.5, -1, 2}),
                                     Tensor::fromVector<float>({1, 2}, {0.5, -4})});
    std::remove(path.c_str());
  }
}

TEST_CASE("the artifact reader and the object linker survive mutated input") {
  auto m = parse(R"(module @m {
  graph @main(%x: f32[4,16]) {
    %w = Constant() {value = )" + literal({16, 8}, 13) + R"(} : f32[16,8]
    %y = MatMul(%x, %w) : f32[4,8]
    %t = Tanh(%y) : f32[4,8]
    return %t
  }
})");
  auto artifact = compileCpuArtifact(m->graph());
  REQUIRE(artifact.isOk());
  // The kernels are compiled in parts (two per compile thread at most, one on one thread).
  const size_t threads = compileThreads();
  const size_t kernels = artifact->executable->kernelNames.size();
  CHECK(artifact->executable->objectCode.size() == (threads == 1 ? 1 : std::min(kernels, 2 * threads)));
  for (const std::vector<uint8_t>& part : artifact->executable->objectCode)
    REQUIRE(runtime::LoadedObject::load(part.data(), part.size()).isOk());
  const std::vector<uint8_t>& object = artifact->executable->objectCode.front();
  std::mt19937_64 gen(11);
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = object;
    for (int flips = 1 + int(gen() % 4); flips > 0; --flips) bad[gen() % bad.size()] = uint8_t(gen());
    if (gen() % 8 == 0) bad.resize(gen() % bad.size());
    auto loaded = runtime::LoadedObject::load(bad.data(), bad.size());  // must not crash; code is not run
    refused += loaded.isOk() ? 0 : 1;
  }
  CHECK(refused > 0);
  // The executable reader behind a valid checksum: structural mutations must be refused or valid.
  std::vector<uint8_t> bytes = runtime::serializeExecutable(*artifact->executable);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bad = bytes;
    size_t at = 32 + gen() % (bytes.size() - 32 - artifact->executable->objectCodeBytes() / 2);
    bad[at] = uint8_t(gen());
    uint64_t sum = hashBytes(bad.data() + 32, bad.size() - 32);
    std::memcpy(bad.data() + 24, &sum, 8);
    auto r = runtime::deserializeExecutable(bad.data(), bad.size());
    if (!r.isOk()) CHECK((r.error().code() == ErrorCode::ArtifactCorrupt || r.error().code() == ErrorCode::ArtifactVersion));
  }
}

TEST_CASE("the C API takes and gives string tensors as C strings", "[strings]") {
  auto m = parse(R"(module @m {
  graph @main(%c: bool[4], %x: i64[4], %y: i64[4]) {
    %z = Where(%c, %x, %y) : i64[4]
    return %z
  }
})");
  REQUIRE(m);
  CompileOptions options;
  options.stringInputs = {"x", "y"};
  options.stringOutputs = {"z"};
  auto artifact = compileCpuArtifact(m->graph(), options);
  REQUIRE(artifact.isOk());
  const std::string path = "codegen_test_strings.kiln";
  REQUIRE(runtime::saveArtifact(*artifact->executable, path).isOk());
  kiln_model* c = nullptr;
  REQUIRE(kiln_model_load(path.c_str(), &c) == 0);
  std::remove(path.c_str());
  CHECK(kiln_model_input_dtype(c, 0) == KILN_BOOL);
  CHECK(kiln_model_input_dtype(c, 1) == KILN_STRING);
  CHECK(kiln_model_output_dtype(c, 0) == KILN_STRING);
  CHECK(kiln_model_input_bytes(c, 1) == 4 * sizeof(const char*));
  CHECK(kiln_model_output_bytes(c, 0) == 4 * sizeof(const char*));

  bool cond[4] = {true, true, false, false};
  const char* x[4] = {"alpha", "", "gamma", "\xce\xb4\xce\xad\xce\xbb\xcf\x84\xce\xb1"};
  const char* y[4] = {"one", "two", "three", "four"};
  const void* in[] = {cond, x, y};
  const char* z[4] = {};
  void* out[] = {z};
  REQUIRE(kiln_model_run(c, in, out) == 0);
  CHECK(std::vector<std::string>(z, z + 4) == std::vector<std::string>{"alpha", "", "three", "four"});

  kiln_outputs* results = nullptr;
  REQUIRE(kiln_model_run_outputs(c, in, &results) == 0);
  CHECK(kiln_outputs_bytes(results, 0) == 4 * sizeof(const char*));
  const auto* given = static_cast<const char* const*>(kiln_outputs_data(results, 0));
  CHECK(std::vector<std::string>(given, given + 4) == std::vector<std::string>{"alpha", "", "three", "four"});
  kiln_outputs_free(results);

  const char* holed[4] = {"a", nullptr, "c", "d"};
  const void* bad[] = {cond, holed, y};
  CHECK(kiln_model_run(c, bad, out) == int(ErrorCode::ExecInput));
  CHECK_THAT(std::string(kiln_last_error()), Catch::Contains("element 1 of string input x is null"));
  kiln_model_free(c);
}

TEST_CASE("scalar i64 constants enter generated kernels exactly, and an artifact carries the strings its constants name",
          "[strings]") {
  // -3323713897487685468 is no double: through one it would round by 164.
  const int64_t big = -3323713897487685468;
  auto word = internString("kept across processes");
  REQUIRE(word.isOk());
  auto m = parse(R"(module @m {
  graph @main(%c: bool[4], %x: i64[4]) {
    %k = Constant() {value = tensor<i64[]: [)" + std::to_string(big) + R"(]>} : i64[]
    %w = Constant() {value = tensor<i64[]: [)" + std::to_string(*word) + R"(]>} : i64[]
    %y = Where(%c, %x, %k) : i64[4]
    %z = Where(%c, %x, %w) : i64[4]
    return %y, %z
  }
})");
  REQUIRE(m);
  CompileOptions options;
  options.stringOutputs = {"z"};
  auto model = compileCpuArtifact(m->graph(), options);
  REQUIRE(model.isOk());
  const runtime::Executable& exe = *model->executable;
  CHECK(exe.strings == std::vector<std::string>{"kept across processes"});
  CHECK(exe.stringOutputs == std::vector<uint32_t>{1});
  auto bytes = runtime::serializeExecutable(exe);
  auto loaded = runtime::deserializeExecutable(bytes.data(), bytes.size());
  REQUIRE(loaded.isOk());
  CHECK(loaded->strings == exe.strings);
  CHECK(loaded->stringOutputs == exe.stringOutputs);

  auto jitted = compileForCpu(m->graph());
  REQUIRE(jitted.isOk());
  Tensor cond = Tensor::fromVector<bool>({4}, {true, false, true, false});
  Tensor x = Tensor::fromVector<int64_t>({4}, {1, 2, 3, 4});
  auto out = jitted->executor->run({cond, x});
  REQUIRE(out.isOk());
  CHECK((*out)[0].toInt64s() == std::vector<int64_t>{1, big, 3, big});
  CHECK((*out)[1].toInt64s() == std::vector<int64_t>{1, *word, 3, *word});
}
