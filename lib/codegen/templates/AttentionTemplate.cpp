//===- lib/codegen/templates/AttentionTemplate.cpp - kiln::Attention --------===//
//
// softmax(q @ kT * scale [+ mask]) @ v in one kernel (fuse-attention's
// kiln::Attention; q [..., S, D], kT [..., D, T], v [..., T, Dv], the mask
// broadcast to [..., S, T]): the S x T score matrix never leaves the kernel.
//
// CPU: each outer iteration takes a tile of tm query rows of one batch. Its
// scores (tm x T, on the stack) come from register-tiled GEMM blocks of
// q @ kT (tm x tn, columns vectorized), scaled and masked as they are
// stored; per row the maximum, then exp(s - max) in place and their sum
// (cpuRowReduce, 16 lanes at a time); then GEMM blocks of the exponentials
// @ v, whose stores divide by the row's sum (once per output, not per
// score) and run the group's epilogue.
//
// GPU: one query row per warp (or per thread), streamed over the keys with
// the online softmax of FlashAttention: for each key the lanes split the
// q . k dot product (an xor-shuffle sum), then rescale the running sum and
// the output accumulators (the lanes split Dv) by exp(max_old - max_new).
// A key whose running maximum is still -inf (all masked so far) adds
// nothing, so a fully masked prefix does not poison the row.
//
//   knobs: CPU tm {1,2,4,8} query rows per tile, tn {8,16,32} columns per
//   register tile, parallel {0,1}; GPU threads per block, warp {0,1}
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "Templates.h"

namespace kiln::codegen {
namespace {

/// The most scores a CPU tile keeps on the stack (64 KiB of f32).
constexpr int64_t kKeptScores = 16384;

struct AttentionShape {
  Dims batchDims;
  int64_t batch = 1, s = 1, d = 1, t = 1, dv = 1;
  Dims maskDims;  ///< empty without a mask
  bool masked = false;
};

Expected<AttentionShape> shapeOf(const ir::Node& node) {
  KILN_ASSIGN(Dims q, staticDims(node.input(0)));
  KILN_ASSIGN(Dims k, staticDims(node.input(1)));
  KILN_ASSIGN(Dims v, staticDims(node.input(2)));
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
    return makeError(ErrorCode::CodegenUnsupported, "attention needs q, kT and v of one rank >= 2");
  AttentionShape a;
  a.batchDims.assign(q.begin(), q.end() - 2);
  a.batch = product(a.batchDims);
  a.s = q[q.size() - 2], a.d = q.back(), a.t = k.back(), a.dv = v.back();
  if (k[k.size() - 2] != a.d || v[v.size() - 2] != a.t)
    return makeError(ErrorCode::CodegenUnsupported, "attention operands do not chain");
  for (size_t i = 0; i + 2 < q.size(); ++i)
    if (k[i] != q[i] || v[i] != q[i])
      return makeError(ErrorCode::CodegenUnsupported, "attention needs equal batch dims of q, kT and v");
  if (node.numInputs() > 3 && node.hasInput(3)) {
    KILN_ASSIGN(a.maskDims, staticDims(node.input(3)));
    if (a.maskDims.size() > q.size())
      return makeError(ErrorCode::CodegenUnsupported, "attention mask of a higher rank than the scores");
    a.masked = true;
  }
  return a;
}

/// Reads the operands of one batch entry of kiln::Attention.
struct Operands {
  ElementBuilder& el;
  const ir::Node& node;
  const AttentionShape& shape;
  Index batch;

  Expected<Expr> at(size_t input, const Expr& row, const Expr& col) const {
    Index i = batch;
    i.push_back(row);
    i.push_back(col);
    return el.at(node.input(input), i);
  }
  Expected<Expr> q(const Expr& row, const Expr& d) const { return at(0, row, d); }
  Expected<Expr> kT(const Expr& d, const Expr& key) const { return at(1, d, key); }
  Expected<Expr> v(const Expr& key, const Expr& col) const { return at(2, key, col); }
  /// scale * dot [+ mask at (row, key)], in `ct`.
  Expected<Expr> score(const Expr& dot, const Expr& row, const Expr& key, ScalarType ct) const {
    Expr s = dot * constantOf(ct, node.getFloat("scale"));
    if (!shape.masked) return s;
    // The mask's dims align with the scores' from the right; its broadcast dims read index 0.
    Index full = batch;
    full.push_back(row);
    full.push_back(key);
    Index mi;
    const Dims& md = shape.maskDims;
    for (size_t k = 0; k < md.size(); ++k) mi.push_back(md[k] == 1 ? intImm(0) : full[full.size() - md.size() + k]);
    KILN_ASSIGN(Expr m, el.at(node.input(3), mi));
    return s + cast(ct, m);
  }
};

class AttentionTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "attention"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Attention; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(AttentionShape a, shapeOf(*g.anchor));
    if (target == KernelTarget::Gpu) return rowwiseKnobSpace(g, target, a.d);
    if (a.t > kKeptScores)
      return makeError(ErrorCode::CodegenUnsupported, "attention over more than ", kKeptScores, " keys");
    KnobSpace space;
    space.knobs.push_back(makeKnob("tm", {1, 2, 4, 8}, 4, "query rows per tile (their scores stay on the stack)",
                                   [&](int64_t v) { return v <= std::max<int64_t>(a.s, 1) && v * a.t <= kKeptScores; }));
    // tn 32 by default: on BERT-base's heads (T 128, D 64) it runs 1.4x faster than 16 (docs/performance.md).
    space.knobs.push_back(makeKnob("tn", {8, 16, 32}, 32, "columns per register tile (vectorized)",
                                   [&](int64_t v) { return v <= std::max<int64_t>(8, std::min(a.t, a.dv)); }));
    space.knobs.push_back(parallelKnob(a.batch * a.s * a.t * (a.d + a.dv), a.batch * ceilDiv(a.s, 4)));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(AttentionShape a, shapeOf(node));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    if (target == KernelTarget::Gpu) return instantiateGpu(el, c, a, ct);
    return instantiateCpu(el, c, a, ct);
  }

 private:
  static Expected<Stmt> instantiateCpu(ElementBuilder& el, const Config& c, const AttentionShape& a, ScalarType ct) {
    const ir::Node& node = *el.group().anchor;
    const int64_t tm = std::min(c.at("tm"), a.s), mTiles = ceilDiv(a.s, tm);
    Var bm = makeVar("bm"), nt = makeVar("nt"), k = makeVar("k"), i = makeVar("i"), j = makeVar("j");
    Expr batchFlat = floorDiv(varRef(bm), mTiles);
    Expr m0 = blockOrigin(floorMod(varRef(bm), mTiles), tm, a.s);
    Operands ops{el, node, a, a.batchDims.empty() ? Index{} : unflatten(batchFlat, a.batchDims)};
    Buffer scores = makeBuffer("scores", ct, MemoryScope::Local, tm * a.t);
    Buffer stats = makeBuffer("stats", ct, MemoryScope::Local, 2 * tm);  // per row: max, sum
    Expr row = m0 + varRef(i);

    // Scores: tm x tn GEMM blocks of q @ kT, scaled and masked as stored.
    const int64_t tnS = std::min(c.at("tn"), a.t);
    Expr key0 = blockOrigin(varRef(nt), tnS, a.t);
    GemmBlock qk{i, j, k, tm, tnS, a.d, makeBuffer("qkacc", ct, MemoryScope::Local, tm * tnS)};
    auto qkProduct = [&](bool) -> Expected<Expr> {
      KILN_ASSIGN(Expr q, ops.q(row, varRef(k)));
      KILN_ASSIGN(Expr kt, ops.kT(varRef(k), key0 + varRef(j)));
      return cast(ct, q) * cast(ct, kt);
    };
    KILN_ASSIGN(Expr s, ops.score(load(qk.acc, varRef(i) * tnS + varRef(j)), row, key0 + varRef(j), ct));
    KILN_ASSIGN(Stmt qkTile, gemmBlock(qk, Expr(), qkProduct,
                                       gemmTileLoops(qk, store(scores, varRef(i) * a.t + key0 + varRef(j), s))));
    std::vector<Stmt> steps{forLoop(nt, intImm(ceilDiv(a.t, tnS)), LoopKind::Serial, qkTile)};

    // Per row: the maximum, the exponentials in place, their sum.
    for (int64_t r = 0; r < tm; ++r) {
      auto at = [&, r](const Expr& key) -> Expected<Expr> { return load(scores, key + r * a.t); };
      KILN_ASSIGN(Stmt mx, cpuRowReduce(stats, 2 * r, BinaryOp::Max, at, a.t, ct, "rowmax"));
      KILN_ASSIGN(Stmt sum, cpuRowReduce(stats, 2 * r + 1, BinaryOp::Add, at, a.t, ct, "rowsum"));
      Expr e = unary(UnaryOp::Exp, load(scores, varRef(j) + r * a.t) - load(stats, intImm(2 * r)));
      steps.push_back(store(stats, intImm(2 * r), constantOf(ct, -std::numeric_limits<double>::infinity())));
      steps.push_back(store(stats, intImm(2 * r + 1), constantOf(ct, 0)));
      steps.push_back(mx);
      steps.push_back(forLoop(j, intImm(a.t), LoopKind::Vectorized, store(scores, varRef(j) + r * a.t, e)));
      steps.push_back(sum);
    }

    // Output: GEMM blocks of the exponentials @ v, divided by the row's sum, through the epilogue.
    const int64_t tnV = std::min(c.at("tn"), a.dv);
    Expr col0 = blockOrigin(varRef(nt), tnV, a.dv);
    GemmBlock pv{i, j, k, tm, tnV, a.t, makeBuffer("pvacc", ct, MemoryScope::Local, tm * tnV)};
    auto pvProduct = [&](bool) -> Expected<Expr> {
      KILN_ASSIGN(Expr v, ops.v(varRef(k), col0 + varRef(j)));
      return load(scores, varRef(i) * a.t + varRef(k)) * cast(ct, v);
    };
    Expr result = load(pv.acc, varRef(i) * tnV + varRef(j)) / load(stats, varRef(i) * 2 + 1);
    el.setSource(node.output(0), [result](const Index&) { return result; });
    Index outIdx = ops.batch;
    outIdx.push_back(row);
    outIdx.push_back(col0 + varRef(j));
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, outIdx));
    KILN_ASSIGN(Stmt pvTile, gemmBlock(pv, Expr(), pvProduct, gemmTileLoops(pv, epilogue)));
    steps.push_back(forLoop(nt, intImm(ceilDiv(a.dv, tnV)), LoopKind::Serial, pvTile));

    Stmt body = allocate(scores, allocate(stats, seq(std::move(steps))));
    const int64_t outer = a.batch * mTiles;
    return forLoop(bm, intImm(outer), outer > 1 ? outerKind(c) : LoopKind::Serial, body);
  }

  static Expected<Stmt> instantiateGpu(ElementBuilder& el, const Config& c, const AttentionShape& a, ScalarType ct) {
    const ir::Node& node = *el.group().anchor;
    const bool warp = knobIs(c, "warp");
    const int64_t rows = a.batch * a.s;
    Var o = makeVar("o"), key = makeVar("key"), d = makeVar("d"), e = makeVar("e"), lane = makeVar("lane");
    Operands ops{el, node, a, a.batchDims.empty() ? Index{} : unflatten(floorDiv(varRef(o), a.s), a.batchDims)};
    Expr row = floorMod(varRef(o), a.s);
    // Running state: max, sum, dot, new max, rescale, weight.
    enum Slot : int64_t { kMax, kSum, kDot, kNewMax, kRescale, kWeight, kSlots };
    Buffer st = makeBuffer("state", ct, MemoryScope::Local, kSlots);
    auto slot = [&](Slot s) { return load(st, intImm(s)); };
    auto set = [&](Slot s, Expr v) { return store(st, intImm(s), std::move(v)); };
    // Output accumulators: a lane holds every 32nd column (e / 32 is its slot), a thread all of them.
    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, warp ? ceilDiv(a.dv, 32) : a.dv);
    auto accAt = [&](const Expr& col) { return warp ? floorDiv(col, 32) : col; };

    KILN_ASSIGN(Expr q, ops.q(row, varRef(d)));
    KILN_ASSIGN(Expr kt, ops.kT(varRef(d), varRef(key)));
    Stmt dot = rowLoop(d, lane, a.d, warp, set(kDot, slot(kDot) + cast(ct, q) * cast(ct, kt)));
    if (warp) dot = seq({dot, warpAllReduce(st, kDot, BinaryOp::Add)});
    KILN_ASSIGN(Expr s, ops.score(slot(kDot), row, varRef(key), ct));
    Expr unset = binary(BinaryOp::Eq, slot(kNewMax), constantOf(ct, -std::numeric_limits<double>::infinity()));
    KILN_ASSIGN(Expr vv, ops.v(varRef(key), varRef(e)));
    Stmt perKey = seq({
        set(kDot, constantOf(ct, 0)), dot,
        set(kWeight, s),  // the score, until the weight replaces it
        set(kNewMax, maxOf(slot(kMax), slot(kWeight))),
        set(kRescale, select(unset, constantOf(ct, 1), unary(UnaryOp::Exp, slot(kMax) - slot(kNewMax)))),
        set(kWeight, select(unset, constantOf(ct, 0), unary(UnaryOp::Exp, slot(kWeight) - slot(kNewMax)))),
        set(kSum, slot(kSum) * slot(kRescale) + slot(kWeight)),
        rowLoop(e, lane, a.dv, warp,
                store(acc, accAt(varRef(e)), load(acc, accAt(varRef(e))) * slot(kRescale) + slot(kWeight) * cast(ct, vv))),
        set(kMax, slot(kNewMax)),
    });
    Expr result = load(acc, accAt(varRef(e))) / slot(kSum);
    el.setSource(node.output(0), [result](const Index&) { return result; });
    Index outIdx = ops.batch;
    outIdx.push_back(row);
    outIdx.push_back(varRef(e));
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, outIdx));
    Stmt body = seq({
        set(kMax, constantOf(ct, -std::numeric_limits<double>::infinity())), set(kSum, constantOf(ct, 0)),
        rowLoop(e, lane, a.dv, warp, store(acc, accAt(varRef(e)), constantOf(ct, 0))),
        forLoop(key, intImm(a.t), LoopKind::Serial, perKey),
        rowLoop(e, lane, a.dv, warp, epilogue),
    });
    body = allocate(st, allocate(acc, body));
    if (warp) return warpPerItem(o, lane, rows, c.at("threads"), body);
    return threadPerItem(o, rows, c.at("threads"), body);
  }
};

}  // namespace

const ScheduleTemplate& attentionTemplate() {
  static const AttentionTemplate t;
  return t;
}

}  // namespace kiln::codegen
