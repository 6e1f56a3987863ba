//===- lib/codegen/templates/TemplateUtils.cpp - Shared template helpers ---===//
//
// Knob construction with candidate filtering, loop nests, the parallel knob,
// the thread-per-item GPU mapping and the epilogue store shared by all
// anchored templates.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "Templates.h"

namespace kiln::codegen {

int64_t product(const Dims& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, d.size()); ++i) p *= d[i];
  return p;
}

Knob makeKnob(std::string name, std::vector<int64_t> candidates, int64_t preferred, std::string doc,
              const std::function<bool(int64_t)>& keep) {
  Knob k{std::move(name), {}, 0, std::move(doc)};
  std::sort(candidates.begin(), candidates.end());
  for (int64_t c : candidates)
    if (!keep || keep(c)) k.values.push_back(c);
  if (k.values.empty()) k.values.push_back(candidates.front());
  k.defaultValue = std::find(k.values.begin(), k.values.end(), preferred) != k.values.end() ? preferred : k.values.back();
  return k;
}

std::vector<Var> makeVars(const std::string& prefix, size_t n) {
  std::vector<Var> vars;
  for (size_t i = 0; i < n; ++i) vars.push_back(makeVar(prefix + std::to_string(i)));
  return vars;
}

Stmt loopNest(const std::vector<Var>& vars, const Dims& extents, Stmt body) {
  for (size_t i = vars.size(); i-- > 0;) body = forLoop(vars[i], intImm(extents[i]), LoopKind::Serial, body);
  return body;
}

Stmt threadPerItem(const Var& o, const RunCount& items, int64_t threads, Stmt body) {
  threads = std::max<int64_t>(1, std::min(threads, items.max));
  Var bx = makeVar("bx"), tx = makeVar("tx");
  const bool guard = items.dynamic() || items.max % threads;
  Stmt guarded = guard ? ifThen(binary(BinaryOp::Lt, varRef(o), items.run), body) : body;
  return forLoop(bx, blockCount(threads, items), LoopKind::BlockX,
                 forLoop(tx, intImm(threads), LoopKind::ThreadX, let(o, varRef(bx) * threads + varRef(tx), guarded)));
}

Stmt warpPerItem(const Var& o, const Var& lane, const RunCount& items, int64_t threads, Stmt body) {
  const int64_t warps = std::max<int64_t>(1, std::min(threads / 32, items.max));
  Var bx = makeVar("bx"), tx = makeVar("tx");
  Expr item = varRef(bx) * warps + floorDiv(varRef(tx), 32);
  const bool guard = items.dynamic() || items.max % warps;
  Stmt guarded = guard ? ifThen(binary(BinaryOp::Lt, varRef(o), items.run), body) : body;
  return forLoop(bx, blockCount(warps, items), LoopKind::BlockX,
                 forLoop(tx, intImm(warps * 32), LoopKind::ThreadX,
                         let(o, item, let(lane, floorMod(varRef(tx), 32), guarded))));
}

Stmt laneStrided(const Var& j, const Var& lane, const RunCount& len, Stmt body) {
  Var t = makeVar(j->name + "t");
  const bool guard = len.dynamic() || len.max % 32;
  Stmt guarded = guard ? ifThen(binary(BinaryOp::Lt, varRef(j), len.run), body) : body;
  return forLoop(t, blockCount(32, len), LoopKind::Serial, let(j, varRef(t) * 32 + varRef(lane), guarded));
}

Stmt warpAllReduce(const Buffer& acc, int64_t index, BinaryOp op) {
  std::vector<Stmt> steps;
  Expr value = load(acc, intImm(index));
  for (int64_t mask : {16, 8, 4, 2, 1}) steps.push_back(store(acc, intImm(index), binary(op, value, shuffleXor(value, mask))));
  return seq(std::move(steps));
}

Stmt rowLoop(const Var& j, const Var& lane, const RunCount& len, bool warp, Stmt body) {
  return warp ? laneStrided(j, lane, len, body) : forLoop(j, len.run, LoopKind::Serial, body);
}

Expected<Stmt> cpuRowReduce(const Buffer& acc, int64_t slot, BinaryOp op, const std::function<Expected<Expr>(const Expr&)>& at,
                            int64_t len, ScalarType ct, const std::string& scratch) {
  constexpr int64_t kLanes = 16;  // one AVX-512 vector of f32
  Var jo = makeVar("jo"), l = makeVar("l"), j = makeVar("j");
  Expr total = load(acc, intImm(slot));
  auto oneByOne = [&](int64_t from, int64_t count) -> Expected<Stmt> {
    KILN_ASSIGN(Expr value, at(from ? varRef(j) + from : varRef(j)));
    return forLoop(j, intImm(count), LoopKind::Serial, store(acc, intImm(slot), binary(op, total, value)));
  };
  if (len < 2 * kLanes) return oneByOne(0, len);
  Buffer part = makeBuffer(scratch, ct, MemoryScope::Local, kLanes);
  const int64_t blocks = len / kLanes;
  KILN_ASSIGN(Expr first, at(varRef(l)));
  KILN_ASSIGN(Expr later, at((varRef(jo) + 1) * kLanes + varRef(l)));
  Expr lane = load(part, varRef(l));
  std::vector<Stmt> steps{forLoop(l, intImm(kLanes), LoopKind::Vectorized, store(part, varRef(l), first)),
                          forLoop(jo, intImm(blocks - 1), LoopKind::Serial,
                                  forLoop(l, intImm(kLanes), LoopKind::Vectorized, store(part, varRef(l), binary(op, lane, later))))};
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    steps.push_back(forLoop(l, intImm(w), w > 1 ? LoopKind::Vectorized : LoopKind::Serial,
                            store(part, varRef(l), binary(op, lane, load(part, varRef(l) + w)))));
  steps.push_back(store(acc, intImm(slot), binary(op, total, load(part, intImm(0)))));
  if (len % kLanes) {
    KILN_ASSIGN(Stmt tail, oneByOne(blocks * kLanes, len % kLanes));
    steps.push_back(tail);
  }
  return allocate(part, seq(std::move(steps)));
}

Knob threadsKnob(int64_t items) {
  // Enough blocks to fill a GPU (~132 SMs x 2) before making blocks large.
  int64_t preferred = 256;
  for (int64_t t : {256, 128, 64})
    if (ceilDiv(items, t) >= 264 || t == 64) {
      preferred = t;
      break;
    }
  return makeKnob("threads", {64, 128, 256, 512}, preferred, "GPU threads per block, one work item each");
}

KnobSpace threadPerItemSpace(int64_t items) {
  KnobSpace space;
  space.knobs.push_back(threadsKnob(items));
  return space;
}

Knob parallelKnob(int64_t work, int64_t outerIterations) {
  // Waking the pool's sleeping workers costs tens of microseconds (more on a
  // VM), about what a kernel takes for a million multiply-adds or elements:
  // below that a kernel runs faster alone. At 32K, tiny models ran 2-5x slower
  // than serial and a merged Q/K/V matmul (combine-parallel-dense) lost to three
  // serial ones (docs/pass-selection.md).
  constexpr int64_t kParallelWork = int64_t(1) << 20;
  int64_t preferred = work >= kParallelWork && outerIterations > 1 ? 1 : 0;
  return makeKnob("parallel", {0, 1}, preferred, "run the outermost loop on the thread pool",
                  [&](int64_t v) { return v == 0 || outerIterations > 1; });
}

Expected<Dims> windowDims(const KernelGroup& g, const ir::Value* v, KernelTarget, DimPoint point) {
  if (!hasDynamicDims(v)) return staticDims(v);
  KILN_ASSIGN(Dims dims, elementDims(v));
  auto refuse = [&](size_t i, const char* why) -> Error {
    Error err = makeError(ErrorCode::CodegenUnsupported, "dim ", i, " of value '", v->name(), "' (",
                          v->tensorType().dimExpr(int64_t(i))->str(), ") is dynamic; ", why);
    if (v->producer()) err.atNode(v->producer()->displayName(), v->producer()->opType());
    return err;
  };
  const std::string autoPad = g.anchor->hasAttr("auto_pad") ? g.anchor->getString("auto_pad") : "NOTSET";
  const bool samePads = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != ir::kUnknownDim) continue;
    const bool image = i == 2 || i == 3;
    if (i != 0 && !image) return refuse(i, "convolutions and pools take a dynamic batch and image size only");
    if (image && samePads) return refuse(i, "SAME padding over a dynamic image size is not generated");
  }
  return dimsAt(v, g.dimRanges, point);
}

Expected<RunCount> runDim(ElementBuilder& el, const ir::Value* v, size_t axis) {
  KILN_ASSIGN(Dims max, dimsAt(v, el.group().dimRanges, DimPoint::Max));
  if (axis >= max.size()) return makeError(ErrorCode::CodegenUnsupported, "value '", v->name(), "' has no dim ", axis);
  KILN_ASSIGN(ExprDims run, el.dims(v));
  return RunCount(run[axis], max[axis]);
}

Expected<PaddedCopy> borderedCopy(ElementBuilder& el, ScalarType t, const RunCount& planes, const RunCount& height,
                                  const RunCount& width, int64_t inner, const ir::WindowGeometry& geo, LoopKind planeLoop,
                                  const Expr& border, const PaddedSource& source) {
  PaddedCopy copy;
  copy.hp = height.plus(geo.padsBegin[0] + geo.padsEnd[0]), copy.wp = width.plus(geo.padsBegin[1] + geo.padsEnd[1]);
  copy.buffer = el.workspace("padded", t, planes.max * copy.hp.max * copy.wp.max * inner);
  Var pc = makeVar("pc"), py = makeVar("py"), px = makeVar("px"), q = makeVar("q"), l = makeVar("l");
  Expr iy = varRef(py) - geo.padsBegin[0];
  Expr rowStart = (varRef(pc) * copy.hp.run + varRef(py)) * copy.wp.run;
  const int64_t padL = geo.padsBegin[1], padR = geo.padsEnd[1];
  // Pixels [first, first + n) of a padded row: one element each (a vector
  // over a row of constant length when `vectorRow`), or `inner` contiguous lanes each.
  auto pixels = [&](const Var& v, const RunCount& n, Expr first, bool vectorRow, const Expr& value) {
    if (inner == 1) {
      const bool vector = vectorRow && !n.dynamic() && n.max > 1 && n.max <= 256;
      return forLoop(v, n.run, vector ? LoopKind::Vectorized : LoopKind::Serial, store(copy.buffer, first + varRef(v), value));
    }
    return forLoop(v, n.run, LoopKind::Serial,
                   forLoop(l, intImm(inner), LoopKind::Vectorized, store(copy.buffer, (first + varRef(v)) * inner + varRef(l), value)));
  };
  KILN_ASSIGN(Expr xv, source(varRef(pc), iy, varRef(q), inner == 1 ? intImm(0) : varRef(l)));
  std::vector<Stmt> imageRow{pixels(q, width, rowStart + padL, true, xv)};
  if (padL) imageRow.push_back(pixels(px, padL, rowStart, false, border));
  if (padR) imageRow.push_back(pixels(px, padR, rowStart + padL + width.run, false, border));
  Stmt borderRow = pixels(px, copy.wp, rowStart, true, border);
  copy.fill = forLoop(pc, planes.run, planes.loopKind(planeLoop),
                      forLoop(py, copy.hp.run, LoopKind::Serial,
                              ifThen(inRange(iy, height.run), seq(std::move(imageRow)), borderRow)));
  return copy;
}

Expected<KnobSpace> rowwiseKnobSpace(const KernelGroup& g, KernelTarget target, int64_t rowLength) {
  KILN_ASSIGN(Dims x, rowwiseDims(g, target, DimPoint::Opt));
  KnobSpace space;
  int64_t rows = x.empty() ? 1 : product(x) / std::max<int64_t>(rowLength, 1);
  if (target == KernelTarget::Gpu) {
    space = threadPerItemSpace(rows);
    space.knobs.push_back(makeKnob("warp", {0, 1}, rowLength >= 32 ? 1 : 0,
                                   "GPU: 0 one row per thread, 1 one row per warp (lanes share the row, shuffles reduce)"));
    return space;
  }
  space.knobs.push_back(parallelKnob(product(x) * 8, rows));
  return space;
}

Expected<Dims> rowwiseDims(const KernelGroup& g, KernelTarget, DimPoint point) {
  const ir::Value* x = g.anchor->input(0);
  return point == DimPoint::Opt ? dimsAt(x, g.dimRanges, point) : elementDims(x);
}

Stmt rowsLoop(const Var& o, const Expr& rows, const Config& c, Stmt body) {
  int64_t n = 0;
  const bool one = isIntConstant(rows, &n) && n <= 1;
  return forLoop(o, rows, one ? LoopKind::Serial : outerKind(c), std::move(body));
}

Expected<ScalarType> resultComputeType(const ir::Node& anchor) {
  KILN_ASSIGN(ScalarType t, valueScalarType(anchor.output(0)));
  return computeType(t);
}

Stmt gemmTileLoops(const GemmBlock& g, Stmt body) {
  return forLoop(g.i, intImm(g.tm), LoopKind::Unrolled, forLoop(g.j, intImm(g.tn), LoopKind::Vectorized, body));
}

Expected<Stmt> gemmBlock(const GemmBlock& g, Expr fullTile, const std::function<Expected<Expr>(bool clamped)>& product,
                         Stmt write) {
  const ScalarType t = g.acc->type;
  Expr accIndex = varRef(g.i) * g.tn + varRef(g.j);
  auto variant = [&](bool clamped) -> Expected<Stmt> {
    KILN_ASSIGN(Expr p, product(clamped));
    Stmt update = forLoop(g.k, g.kRunExtent ? g.kRunExtent : intImm(g.kExtent), g.kRunExtent ? LoopKind::Serial : g.kLoop,
                          gemmTileLoops(g, store(g.acc, accIndex, load(g.acc, accIndex) + p)));
    return seq({gemmTileLoops(g, store(g.acc, accIndex, constantOf(t, 0))), update, write});
  };
  KILN_ASSIGN(Stmt full, variant(false));
  if (!fullTile) return allocate(g.acc, full);
  KILN_ASSIGN(Stmt edge, variant(true));
  return allocate(g.acc, ifThen(fullTile, full, edge));
}

Expected<Stmt> storeEpilogue(ElementBuilder& elements, const Index& idx, Expr guard,
                             const std::vector<const ir::Value*>& exclude) {
  std::vector<ir::Value*> values;
  for (ir::Value* v : elements.group().outputs)
    if (std::find(exclude.begin(), exclude.end(), v) == exclude.end()) values.push_back(v);
  KILN_ASSIGN(std::vector<Stmt> stores, elements.storeOutputs(values, idx));
  Stmt s = seq(std::move(stores));
  return guard ? ifThen(guard, s) : s;
}

}  // namespace kiln::codegen
