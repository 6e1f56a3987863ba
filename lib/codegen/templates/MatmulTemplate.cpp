//===- lib/codegen/templates/MatmulTemplate.cpp - Tiled (batched) matmul ---===//
//
// MatMul (batched, numpy broadcasting of batch dims), Gemm (transA/B,
// alpha, beta, bias C) and kiln::Dense (x @ Wᵀ, W [N, K]: B transposed).
// Register tiling: each (batch, row tile) iteration of the outer loop
// walks the column tiles; a tm x tn local accumulator is
// cleared, updated over k (rows unrolled, columns vectorized), then the
// epilogue stores it through the group's fused elementwise consumers. Tiles
// overhanging the matrix read clamped indices and skip their stores.
//
// A constant B (weights) is packed at compile time into column panels
// [N/tn][K][tn], so each k step reads one contiguous vector instead of
// touching a new row (and page) of B. On the GPU a constant B read
// transposed (kiln::Dense's W [N, K], a Gemm's transB) is one such panel
// [1][K][N], Bᵀ written once at compile time, so a warp's loads of B's row
// stay contiguous.
//
//===----------------------------------------------------------------------===//
#include "Templates.h"

namespace kiln::codegen {
namespace {

struct MatmulShape {
  Dims outDims;  ///< batch..., M, N
  Dims a, b;     ///< operand dims
  int64_t m, n, k, batch;
  bool gemm, ta, tb;  ///< Gemm, and whether A / B are read transposed (Gemm's transA / transB; kiln::Dense's B)
};

/// The shape with each value's dims from `dimsOf` (static, at the opt
/// values, or with -1 at dynamic dims: m and batch are then -1 or wrong,
/// and the CPU schedule takes them as expressions).
Expected<MatmulShape> shapeOf(const ir::Node& node, const std::function<Expected<Dims>(const ir::Value*)>& dimsOf = staticDims) {
  KILN_ASSIGN(Dims a, dimsOf(node.input(0)));
  KILN_ASSIGN(Dims b, dimsOf(node.input(1)));
  KILN_ASSIGN(Dims out, dimsOf(node.output(0)));
  if (a.size() < 2 || b.size() < 2)
    return makeError(ErrorCode::CodegenUnsupported, "matmul template needs operands of rank >= 2");
  MatmulShape s;
  s.gemm = node.op() == ir::Op::Gemm;
  s.ta = s.gemm && node.getInt("transA");
  s.tb = (s.gemm && node.getInt("transB")) || node.op() == ir::Op::KilnDense;
  s.outDims = out;
  s.a = a;
  s.b = b;
  s.m = out[out.size() - 2];
  s.n = out.back();
  s.k = s.ta ? a[a.size() - 2] : a.back();
  s.batch = product(out, 0, out.size() - 2);
  return s;
}

/// A matmul's extents in a kernel: the output's batch dims (dynamic ones as
/// run-time extents), and batch, M, N and K as counts with their maxima.
struct MatmulExtents {
  ExprDims batchDims;
  RunCount batch = 1, m = 1, n = 1, k = 1;
};
Expected<MatmulExtents> extentsOf(ElementBuilder& el, const MatmulShape& s) {
  const ir::Node& node = *el.group().anchor;
  KILN_ASSIGN(const MatmulShape top, shapeOf(node, [&](const ir::Value* v) {
    return dimsAt(v, el.group().dimRanges, DimPoint::Max);
  }));
  KILN_ASSIGN(ExprDims out, el.dims(node.output(0)));
  KILN_ASSIGN(ExprDims a, el.dims(node.input(0)));
  MatmulExtents e;
  e.batchDims.assign(out.begin(), out.end() - 2);
  e.batch = RunCount(productOf(e.batchDims), top.batch);
  e.m = RunCount(out[out.size() - 2], top.m);
  e.n = RunCount(out.back(), top.n);
  e.k = RunCount(s.ta ? a[a.size() - 2] : a.back(), top.k);
  return e;
}

/// B can be packed into panels at compile time: a 2-D constant read from memory.
bool packableB(const KernelGroup& g) {
  const ir::Value* b = g.anchor->input(1);
  const ir::Node* p = b->producer();
  if (!p || p->op() != ir::Op::Constant || !p->hasAttr("value")) return false;
  if (std::find(g.nodes.begin(), g.nodes.end(), p) != g.nodes.end()) return false;
  return b->type().isTensor() && b->tensorType().rank() == 2 && isFloat(b->tensorType().dtype());
}

class MatmulTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "matmul"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Matmul; }

  // The knobs. CPU: tm {1,2,4,8} rows per tile, tn {4,8,16,32,64} columns per tile
  //          (at most the padded column count), order {0 row blocks outer,
  //          1 column blocks outer}, pack {0,1} (constant B only), parallel {0,1}
  //   GPU: gemm {0,1} (1, the default: SIMT register tiles, GpuGemm.cpp) and
  //        block {32,64}; with gemm = 0, tile {8,16,32}: shared-memory tiles of
  //        A and B, one output per thread;
  //        f16 x f16 and bf16 x bf16 products also get mma {0,1} (1: tensor
  //        cores, GpuGemm.cpp), warps {1,4} and frags {1,2}; f32 ones
  //        the same knobs with mma default 0 and approximate (TF32, opt-in)
  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(MatmulShape s, shapeOf(*g.anchor, [&](const ir::Value* v) { return dimsAt(v, g.dimRanges, DimPoint::Opt); }));
    KnobSpace space;
    if (target == KernelTarget::Gpu) {
      space.knobs.push_back(makeKnob("tile", {8, 16, 32}, 16, "GPU (gemm = 0): output tile (tile x tile threads) and k step staged in shared memory"));
      addSimtGemmKnobs(space, s.batch, s.m, s.n);
      KILN_ASSIGN(std::optional<MmaKind> mma, mmaKindOf(*g.anchor));
      if (mma) addTensorCoreKnobs(space, s.batch, s.m, s.n, *mma);
      return space;
    }
    space.knobs.push_back(makeKnob("tm", {1, 2, 4, 6, 8, 12}, 4, "rows per register tile",
                                   [&](int64_t v) { return v <= std::max<int64_t>(s.m, 1); }));
    space.knobs.push_back(makeKnob("tn", {4, 8, 16, 32, 64}, 32, "columns per register tile (vectorized)",
                                   [&](int64_t v) { return v <= std::max<int64_t>(4, s.n + 3); }));
    // Stream the larger operand fewer times: rows outer re-reads B per row block, columns outer A per column block.
    double bPasses = double(s.m) / 4.0 * double(s.k) * double(s.n), aPasses = double(s.n) / 32.0 * double(s.m) * double(s.k);
    space.knobs.push_back(makeKnob("order", {0, 1}, aPasses < bPasses ? 1 : 0, "0 row blocks outer, 1 column blocks outer"));
    space.knobs.push_back(parallelKnob(s.batch * s.m * s.n * s.k, std::max(s.batch * s.m, s.n / 4)));
    space.knobs.push_back(makeKnob("pack", {0, 1}, 1, "read a constant B from column panels packed at compile time",
                                   [&](int64_t v) { return v == 0 || packableB(g); }));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    if (target == KernelTarget::Gpu && usesGpuGemm(c)) return instantiateGemm(el, c);
    if (target == KernelTarget::Gpu) return instantiateGpu(el, c);
    const ir::Node& node = *el.group().anchor;
    // Any of the batch dims, M, N and K may be dynamic (run-time extents).
    KILN_ASSIGN(MatmulShape s, shapeOf(node, elementDims));
    KILN_ASSIGN(ExprDims outE, el.dims(node.output(0)));
    KILN_ASSIGN(ExprDims aE, el.dims(node.input(0)));
    const bool mDynamic = s.m < 0, nDynamic = s.n < 0, kDynamic = s.k < 0;
    const Expr nE = outE.back(), kE = s.ta ? aE[aE.size() - 2] : aE.back();
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    const Dims &aDims = s.a, &bDims = s.b;
    const bool ta = s.ta, tb = s.tb;
    const int64_t tm = mDynamic ? c.at("tm") : std::min(c.at("tm"), s.m), tn = c.at("tn");
    const Expr mE = outE[outE.size() - 2];
    const Expr mTiles = mDynamic ? floorDiv(mE + (tm - 1), tm) : intImm(ceilDiv(s.m, tm));
    const Expr nTiles = nDynamic ? floorDiv(nE + (tn - 1), tn) : intImm(ceilDiv(s.n, tn));
    const ExprDims batchDims(outE.begin(), outE.end() - 2);

    Var bm = makeVar("bm"), nt = makeVar("nt"), k = makeVar("k"), i = makeVar("i"), j = makeVar("j");
    Expr batchFlat = binary(BinaryOp::FloorDiv, varRef(bm), mTiles);
    // Packed B: panels are zero-padded to tn columns, so the last column block
    // stays in place and masks its stores. Row blocks over a dynamic M start
    // at multiples of tm, the last one masked.
    const bool packed = knobIs(c, "pack");
    Expr rowBlock = binary(BinaryOp::FloorMod, varRef(bm), mTiles);
    Expr m0 = mDynamic ? rowBlock * tm : blockOrigin(rowBlock, tm, s.m);
    Expr n0 = packed || nDynamic ? varRef(nt) * tn : blockOrigin(varRef(nt), tn, s.n);
    Buffer panels;
    if (packed) {  // a constant B: static N and K
      PackSpec pack;
      pack.kind = "panels", pack.width = tn, pack.transposed = tb;
      KILN_ASSIGN(panels, el.packedBuffer(node.input(1), pack, ceilDiv(s.n, tn) * s.k * tn));
    }
    Index batchIdx = batchDims.empty() ? Index{} : unflatten(batchFlat, batchDims);
    auto operandIndex = [&](const Dims& dims, Expr row, Expr col) { return operandIndexOf(batchIdx, dims, row, col); };
    // Edge tiles (when the tile sizes do not divide M or N) read clamped rows and
    // columns; full tiles index directly, so column reads stay contiguous vectors.
    auto product = [&](bool clamped) -> Expected<Expr> {
      Expr row = m0 + varRef(i), col = n0 + varRef(j);
      if (clamped) {
        row = mDynamic ? clampIndex(row, mE) : clampIndex(row, s.m);
        col = nDynamic ? clampIndex(col, nE) : clampIndex(col, s.n);
      }
      KILN_ASSIGN(Expr a, el.at(node.input(0), ta ? operandIndex(aDims, varRef(k), row) : operandIndex(aDims, row, varRef(k))));
      if (packed) return a * cast(computeType(panels->type), load(panels, (varRef(nt) * s.k + varRef(k)) * tn + varRef(j)));
      KILN_ASSIGN(Expr b, el.at(node.input(1), tb ? operandIndex(bDims, col, varRef(k)) : operandIndex(bDims, varRef(k), col)));
      return a * b;
    };
    GemmBlock block{i, j, k, tm, tn, s.k, makeBuffer("acc", ct, MemoryScope::Local, tm * tn)};
    if (kDynamic) block.kRunExtent = kE;
    Expr accIndex = varRef(i) * tn + varRef(j);
    const Buffer& acc = block.acc;

    // The anchor's value at an output index: alpha * acc (+ beta * C).
    Index outIdx = batchIdx;
    outIdx.push_back(m0 + varRef(i));
    outIdx.push_back(n0 + varRef(j));
    KILN_ASSIGN(Expr result, resultOf(el, load(acc, accIndex), outIdx, ct));
    el.setSource(node.output(0), [result](const Index&) { return result; });
    Expr guard = binary(BinaryOp::And, binary(BinaryOp::Lt, m0 + varRef(i), mE),
                        binary(BinaryOp::Lt, n0 + varRef(j), nE));
    const bool rowsOverhang = mDynamic || blocksOverhang(tm, s.m);
    const bool columnsOverhang = nDynamic || (packed ? s.n % tn != 0 : blocksOverhang(tn, s.n));
    if (!rowsOverhang && !columnsOverhang) guard = Expr();
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, outIdx, guard));
    // Direct and clamped variants only where a block can overhang what it reads.
    const bool readsOverhang = rowsOverhang || nDynamic || (!packed && blocksOverhang(tn, s.n));
    Expr fullTile = readsOverhang ? binary(BinaryOp::And, binary(BinaryOp::Le, m0 + tm, mE),
                                           binary(BinaryOp::Le, n0 + tn, nE))
                                  : Expr();
    KILN_ASSIGN(Stmt perTile, gemmBlock(block, fullTile, product, gemmTileLoops(block, epilogue)));
    const Expr outer = productOf(batchDims) * mTiles;
    int64_t outerValue = 0;
    const bool oneRowBlock = isIntConstant(outer, &outerValue) && outerValue <= 1;
    int64_t nTilesValue = 0;
    const bool oneColumnBlock = isIntConstant(nTiles, &nTilesValue) && nTilesValue <= 1;
    if (c.at("order") == 1) {  // column blocks outer: a B strip stays in cache for every row block
      Stmt body = forLoop(bm, outer, LoopKind::Serial, perTile);
      return forLoop(nt, nTiles, oneColumnBlock ? LoopKind::Serial : outerKind(c), body);
    }
    Stmt body = forLoop(nt, nTiles, LoopKind::Serial, perTile);
    return forLoop(bm, outer, oneRowBlock ? LoopKind::Serial : outerKind(c), body);
  }

 private:
  /// The tensor-core instruction for the anchor's operand types, if any.
  static Expected<std::optional<MmaKind>> mmaKindOf(const ir::Node& node) {
    KILN_ASSIGN(ScalarType a, valueScalarType(node.input(0)));
    KILN_ASSIGN(ScalarType b, valueScalarType(node.input(1)));
    return mmaKindFor(a, b);
  }

  /// GPU as a GpuGemm (tensor cores with mma = 1, else SIMT tiles) whose
  /// writes run the anchor's result (alpha, beta * C) and the group's epilogue.
  static Expected<Stmt> instantiateGemm(ElementBuilder& el, const Config& c) {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(MatmulShape s, shapeOf(node, elementDims));  // -1 at dynamic dims: the extents come from extentsOf
    KILN_ASSIGN(const MatmulExtents e, extentsOf(el, s));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    KILN_ASSIGN(std::optional<MmaKind> kind, mmaKindOf(node));
    auto batchIndex = [&](const Expr& batch) { return e.batchDims.empty() ? Index{} : unflatten(batch, e.batchDims); };
    KILN_ASSIGN(Buffer bT, gpuTransposedB(el, s));
    GpuGemm gemm;
    gemm.batch = e.batch, gemm.m = e.m, gemm.n = e.n, gemm.k = e.k;
    gemm.a = [&](const Expr& batch, const Expr& row, const Expr& k) {
      Index bi = batchIndex(batch);
      return el.at(node.input(0), s.ta ? operandIndexOf(bi, s.a, k, row) : operandIndexOf(bi, s.a, row, k));
    };
    gemm.b = [&](const Expr& batch, const Expr& k, const Expr& col) -> Expected<Expr> {
      if (bT) return cast(computeType(bT->type), load(bT, k * s.n + col));
      Index bi = batchIndex(batch);
      return el.at(node.input(1), s.tb ? operandIndexOf(bi, s.b, col, k) : operandIndexOf(bi, s.b, k, col));
    };
    gemm.write = [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& value) -> Expected<Stmt> {
      Index outIdx = batchIndex(batch);
      outIdx.push_back(row);
      outIdx.push_back(col);
      KILN_ASSIGN(Expr result, resultOf(el, cast(ct, value), outIdx, ct));
      el.setSource(node.output(0), [result](const Index&) { return result; });
      return storeEpilogue(el, outIdx);
    };
    return gpuGemm(std::move(gemm), kind, c);
  }

  /// GPU: a constant B read transposed as the one-panel pack [1][K][N] (Bᵀ, row-major); null where B is read as it is.
  static Expected<Buffer> gpuTransposedB(ElementBuilder& el, const MatmulShape& s) {
    if (!s.tb || !packableB(el.group())) return Buffer();
    PackSpec pack;
    pack.kind = "panels", pack.width = s.n, pack.transposed = true;
    return el.packedBuffer(el.group().anchor->input(1), pack, s.k * s.n);
  }

  /// The index of an operand of `dims` at (row, col) for output batch index
  /// `batchIdx` (numpy broadcasting: size-1 batch dims read 0).
  static Index operandIndexOf(const Index& batchIdx, const Dims& dims, Expr row, Expr col) {
    Index idx;
    size_t lead = dims.size() - 2, offset = batchIdx.size() - std::min(batchIdx.size(), lead);
    for (size_t d = 0; d < lead; ++d) idx.push_back(dims[d] == 1 ? intImm(0) : batchIdx[offset + d]);
    idx.push_back(std::move(row));
    idx.push_back(std::move(col));
    return idx;
  }

  /// The anchor's value at output index `outIdx` from the accumulated
  /// product: alpha * acc (+ beta * C) for Gemm, acc for MatMul.
  static Expected<Expr> resultOf(ElementBuilder& el, Expr acc, const Index& outIdx, ScalarType ct) {
    const ir::Node& node = *el.group().anchor;
    if (node.op() != ir::Op::Gemm) return acc;
    if (float alpha = node.getFloat("alpha"); alpha != 1.0f) acc = acc * constantOf(ct, alpha);
    if (node.numInputs() < 3 || !node.hasInput(2)) return acc;
    KILN_ASSIGN(Dims cDims, elementDims(node.input(2)));
    Index cIdx;
    for (size_t d = 0; d < cDims.size(); ++d) cIdx.push_back(cDims[d] == 1 ? intImm(0) : outIdx[outIdx.size() - cDims.size() + d]);
    KILN_ASSIGN(Expr bias, el.at(node.input(2), cIdx));
    if (float beta = node.getFloat("beta"); beta != 1.0f) bias = bias * constantOf(ct, beta);
    return acc + bias;
  }

  /// GPU: a tile x tile block of threads computes a tile x tile output block,
  /// one element per thread; each k step stages a tile of A and of B in
  /// shared memory (out-of-range elements zero) between two barriers.
  static Expected<Stmt> instantiateGpu(ElementBuilder& el, const Config& c) {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(MatmulShape s, shapeOf(node, elementDims));  // -1 at dynamic dims: the extents come from extentsOf
    KILN_ASSIGN(const MatmulExtents e, extentsOf(el, s));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    const Dims &aDims = s.a, &bDims = s.b;
    const bool ta = s.ta, tb = s.tb;
    const int64_t t = c.at("tile");
    Var bz = makeVar("bz"), by = makeVar("by"), bx = makeVar("bx"), ty = makeVar("ty"), tx = makeVar("tx");
    Var kt = makeVar("kt"), kk = makeVar("kk");
    Index batchIdx = e.batchDims.empty() ? Index{} : unflatten(varRef(bz), e.batchDims);
    Expr row = varRef(by) * t + varRef(ty), col = varRef(bx) * t + varRef(tx);
    Expr ka = varRef(kt) * t + varRef(tx), kb = varRef(kt) * t + varRef(ty);
    auto within = [](const Expr& a, const RunCount& n, const Expr& b, const RunCount& m) {
      return binary(BinaryOp::And, binary(BinaryOp::Lt, a, n.run), binary(BinaryOp::Lt, b, m.run));
    };
    // Tiles that can overhang a dim (a run-time one always may) read clamped and mask with zeros.
    auto overhangs = [&](const RunCount& d) { return d.dynamic() || d.max % t != 0; };
    Expr ra = clampIndex(row, e.m.run), ca = clampIndex(ka, e.k.run), rb = clampIndex(kb, e.k.run), cb = clampIndex(col, e.n.run);
    KILN_ASSIGN(Expr av, el.at(node.input(0), ta ? operandIndexOf(batchIdx, aDims, ca, ra) : operandIndexOf(batchIdx, aDims, ra, ca)));
    KILN_ASSIGN(Buffer bT, gpuTransposedB(el, s));
    Expr bv;
    if (bT) {
      bv = cast(computeType(bT->type), load(bT, rb * s.n + cb));
    } else {
      KILN_ASSIGN(bv, el.at(node.input(1), tb ? operandIndexOf(batchIdx, bDims, cb, rb) : operandIndexOf(batchIdx, bDims, rb, cb)));
    }
    Buffer as = makeBuffer("As", ct, MemoryScope::Shared, t * t), bs = makeBuffer("Bs", ct, MemoryScope::Shared, t * t);
    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 1);
    Expr slot = varRef(ty) * t + varRef(tx), a0 = load(acc, intImm(0));
    Expr zero = constantOf(ct, 0);
    Stmt step = seq({store(as, slot, overhangs(e.m) || overhangs(e.k) ? select(within(row, e.m, ka, e.k), av, zero) : av),
                     store(bs, slot, overhangs(e.k) || overhangs(e.n) ? select(within(kb, e.k, col, e.n), bv, zero) : bv), barrier(),
                     forLoop(kk, intImm(t), LoopKind::Unrolled,
                             store(acc, intImm(0), a0 + load(as, varRef(ty) * t + varRef(kk)) * load(bs, varRef(kk) * t + varRef(tx)))),
                     barrier()});
    Index outIdx = batchIdx;
    outIdx.push_back(row);
    outIdx.push_back(col);
    KILN_ASSIGN(Expr result, resultOf(el, a0, outIdx, ct));
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, outIdx, overhangs(e.m) || overhangs(e.n) ? within(row, e.m, col, e.n) : Expr()));
    Stmt thread = allocate(acc, seq({store(acc, intImm(0), zero), forLoop(kt, blockCount(t, e.k), LoopKind::Serial, step), epilogue}));
    Stmt block = allocate(as, allocate(bs, forLoop(ty, intImm(t), LoopKind::ThreadY, forLoop(tx, intImm(t), LoopKind::ThreadX, thread))));
    return forLoop(bz, e.batch.run, LoopKind::BlockZ,
                   forLoop(by, blockCount(t, e.m), LoopKind::BlockY, forLoop(bx, blockCount(t, e.n), LoopKind::BlockX, block)));
  }
};

}  // namespace

const ScheduleTemplate& matmulTemplate() {
  static const MatmulTemplate t;
  return t;
}

}  // namespace kiln::codegen
