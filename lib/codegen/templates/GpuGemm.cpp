//===- lib/codegen/templates/GpuGemm.cpp - GEMM schedules for the GPU ------===//
//
// The GPU GEMM schedules shared by the templates whose anchor is a matrix
// product (matmul, conv as an implicit GEMM). Both stage, per k stage, a
// tile of A (rows x tileK) and of B (tileK x columns) in shared memory with
// every thread of the block copying (zero outside the matrix; consecutive
// threads read consecutive k of A and columns of B), between two barriers:
//
//   tensor cores: a block of warpsM x warpsN warps computes a
//     (warpsM * fragsM * 16) x (warpsN * fragsN * 8) tile; each warp holds
//     fragsM x fragsN accumulator fragments (4 floats per lane each), loads
//     its A and B fragments from shared memory in the instruction's per-lane
//     layout (mmaFragmentA/B as affine functions of the lane's group and
//     member) and issues fragsM x fragsN mmas per k step. Shared rows are
//     padded (A by 4, B by 8 floats) to spread the fragment loads over the banks.
//   SIMT: 16 x 16 threads compute a tile x tile block, each a (tile / 16)^2
//     register tile at rows ty + 16 i and columns tx + 16 j (a warp reads
//     two rows of A, broadcast, and 16 consecutive columns of B per k);
//     f32 fused multiply-adds from registers.
//
// The epilogue writes each thread's accumulators through the caller's
// `write`, guarded where the tile overhangs the matrix.
//
//===----------------------------------------------------------------------===//
#include "Templates.h"

namespace kiln::codegen {
namespace {

/// row = row0 + group * rowPerGroup + member * rowPerMember (same for columns):
/// a fragment layout element as an affine function of the lane.
struct AffineElement {
  int64_t row0, rowPerGroup, rowPerMember, col0, colPerGroup, colPerMember;
};

AffineElement affine(std::pair<int64_t, int64_t> (*layout)(MmaKind, int64_t, int64_t), MmaKind kind, int64_t i) {
  auto [r0, c0] = layout(kind, 0, i);
  auto [rg, cg] = layout(kind, 4, i);  // group 1, member 0
  auto [rm, cm] = layout(kind, 1, i);  // group 0, member 1
  return {r0, rg - r0, rm - r0, c0, cg - c0, cm - c0};
}

Expr affineRow(const AffineElement& a, const Expr& group, const Expr& member) {
  return intImm(a.row0) + group * a.rowPerGroup + member * a.rowPerMember;
}
Expr affineCol(const AffineElement& a, const Expr& group, const Expr& member) {
  return intImm(a.col0) + group * a.colPerGroup + member * a.colPerMember;
}

Expr both(Expr a, Expr b) { return binary(BinaryOp::And, std::move(a), std::move(b)); }

}  // namespace

std::optional<MmaKind> mmaKindFor(ScalarType a, ScalarType b) {
  if (a == ScalarType::F16 && b == ScalarType::F16) return MmaKind::F16_M16N8K16;
  if (a == ScalarType::BF16 && b == ScalarType::BF16) return MmaKind::BF16_M16N8K16;
  if (a == ScalarType::F32 && b == ScalarType::F32) return MmaKind::TF32_M16N8K8;
  return std::nullopt;
}

namespace {

/// Blocks a default tile should leave for the GPU to spread: about one wave
/// of the smallest sm_80 part's 108 SMs. A tile that would give fewer blocks
/// is not the default: with 64 x 64 tiles ResNet-50's 14x14 3x3 convs at
/// batch 1 run as 16 blocks and take 23% of the model's time
/// (docs/cuda-target.md).
constexpr int64_t kBlocksForLargeTiles = 108;

/// Whether square `tile`s over `batch` m x n outputs fill the GPU.
bool fillsGpu(int64_t batch, int64_t m, int64_t n, int64_t tile) {
  auto tiles = [&](int64_t size) { return (size + tile - 1) / tile; };
  return m >= tile && n >= tile && batch * tiles(m) * tiles(n) >= kBlocksForLargeTiles;
}

}  // namespace

void addTensorCoreKnobs(KnobSpace& space, int64_t batch, int64_t m, int64_t n, MmaKind kind) {
  if (kind == MmaKind::TF32_M16N8K8) {  // f32 results change: opt-in only
    Knob mma = makeKnob("mma", {0, 1}, 0, "GPU: 1 TF32 tensor cores (f32 inputs rounded to 10 mantissa bits; opt-in), 0 f32 units");
    mma.approximate = true;
    space.knobs.push_back(mma);
  } else {
    space.knobs.push_back(makeKnob("mma", {0, 1}, 1, "GPU: 1 tensor-core mma instructions (warp tiles), 0 one output per thread"));
  }
  space.knobs.push_back(makeKnob("warps", {1, 4}, m >= 32 && n >= 32 ? 4 : 1, "mma: warps per block (1, or 2 x 2)"));
  space.knobs.push_back(makeKnob("frags", {1, 2}, fillsGpu(batch, m, n, 64) ? 2 : 1,
                                 "mma: per warp, fragment rows (x16) and column pairs (x16)"));
}

void addSimtGemmKnobs(KnobSpace& space, int64_t batch, int64_t m, int64_t n) {
  space.knobs.push_back(makeKnob("gemm", {0, 1}, 1, "GPU: 1 shared-memory tiled GEMM with register tiles, 0 one output per thread"));
  space.knobs.push_back(makeKnob("block", {32, 64}, fillsGpu(batch, m, n, 64) ? 64 : 32,
                                 "gemm: block x block outputs per 16 x 16 threads"));
}

namespace {

/// A block's shared tiles and loop variables, common to both schedules.
struct BlockTiles {
  int64_t threads = 0, tileM = 0, tileN = 0, tileK = 0, strideA = 0, strideB = 0;
  Var bz = makeVar("bz"), by = makeVar("by"), bx = makeVar("bx"), tx = makeVar("tx"), kt = makeVar("kt");
  Buffer as, bs;
  BlockTiles(int64_t threads_, int64_t m, int64_t n, int64_t k, int64_t padA, int64_t padB)
      : threads(threads_), tileM(m), tileN(n), tileK(k), strideA(k + padA), strideB(n + padB) {
    as = makeBuffer("As", ScalarType::F32, MemoryScope::Shared, tileM * strideA);
    bs = makeBuffer("Bs", ScalarType::F32, MemoryScope::Shared, tileK * strideB);
  }
  Expr m0() const { return varRef(by) * tileM; }
  Expr n0() const { return varRef(bx) * tileN; }
};

/// Whether tiles of `size` can reach past `extent` (a run-time extent always may).
bool overhangs(const RunCount& extent, int64_t size) { return extent.dynamic() || extent.max % size != 0; }

/// The block's cooperative copies of this k stage's A and B tiles into shared memory.
Expected<Stmt> stageTiles(const GpuGemm& g, const BlockTiles& t) {
  Var e = makeVar("e");
  Expr k0 = varRef(t.kt) * t.tileK;
  auto copyTile = [&](bool isA) -> Expected<Stmt> {
    const int64_t rows = isA ? t.tileM : t.tileK, cols = isA ? t.tileK : t.tileN, stride = isA ? t.strideA : t.strideB;
    Expr idx = varRef(e) * t.threads + varRef(t.tx), r = floorDiv(idx, cols), col = floorMod(idx, cols);
    Expr gRow = isA ? t.m0() + r : k0 + r, gCol = isA ? k0 + col : t.n0() + col;
    const RunCount& rowExtent = isA ? g.m : g.k;
    const RunCount& colExtent = isA ? g.k : g.n;
    Expr value;
    if (isA) {
      KILN_ASSIGN(value, g.a(varRef(t.bz), clampIndex(gRow, rowExtent.run), clampIndex(gCol, colExtent.run)));
    } else {
      KILN_ASSIGN(value, g.b(varRef(t.bz), clampIndex(gRow, rowExtent.run), clampIndex(gCol, colExtent.run)));
    }
    value = cast(ScalarType::F32, value);
    Expr inside;
    if (overhangs(rowExtent, rows)) inside = binary(BinaryOp::Lt, gRow, rowExtent.run);
    if (overhangs(colExtent, cols)) {
      Expr colOk = binary(BinaryOp::Lt, gCol, colExtent.run);
      inside = inside ? both(inside, colOk) : colOk;
    }
    if (inside) value = select(inside, value, floatImm(0));
    Stmt copy = store(isA ? t.as : t.bs, r * stride + col, value);
    const int64_t elements = rows * cols;
    if (elements % t.threads) copy = ifThen(binary(BinaryOp::Lt, idx, intImm(elements)), copy);
    return forLoop(e, intImm(ceilDiv(elements, t.threads)), LoopKind::Unrolled, copy);
  };
  KILN_ASSIGN(Stmt copyA, copyTile(true));
  KILN_ASSIGN(Stmt copyB, copyTile(false));
  return seq({copyA, copyB});
}

/// One output element through the caller's write, guarded where tiles overhang the matrix.
Expected<Stmt> guardedWrite(const GpuGemm& g, const BlockTiles& t, const Expr& row, const Expr& col, const Expr& value) {
  KILN_ASSIGN(Stmt w, g.write(varRef(t.bz), row, col, value));
  Expr guard;
  if (overhangs(g.m, t.tileM)) guard = binary(BinaryOp::Lt, row, g.m.run);
  if (overhangs(g.n, t.tileN)) {
    Expr colOk = binary(BinaryOp::Lt, col, g.n.run);
    guard = guard ? both(guard, colOk) : colOk;
  }
  return guard ? ifThen(guard, w) : w;
}

/// The whole kernel: per thread, `locals` allocated around acc cleared, the
/// k stages (`stage` from stageTiles, barrier, `step`, barrier) and `epilogue`.
Stmt gemmKernel(const GpuGemm& g, const BlockTiles& t, Stmt stage, const Buffer& acc, const std::vector<Buffer>& locals,
                Stmt step, Stmt epilogue) {
  Var z = makeVar("z");
  Stmt clear = forLoop(z, intImm(acc->size), LoopKind::Unrolled, store(acc, varRef(z), floatImm(0)));
  Stmt mainLoop = forLoop(t.kt, blockCount(t.tileK, g.k), LoopKind::Serial, seq({stage, barrier(), step, barrier()}));
  Stmt thread = seq({clear, mainLoop, epilogue});
  for (auto it = locals.rbegin(); it != locals.rend(); ++it) thread = allocate(*it, thread);
  thread = allocate(acc, thread);
  Stmt block = allocate(t.as, allocate(t.bs, forLoop(t.tx, intImm(t.threads), LoopKind::ThreadX, thread)));
  return forLoop(t.bz, g.batch.run, LoopKind::BlockZ,
                 forLoop(t.by, blockCount(t.tileM, g.m), LoopKind::BlockY, forLoop(t.bx, blockCount(t.tileN, g.n), LoopKind::BlockX, block)));
}

Expected<Stmt> tensorCoreGemm(const GpuGemm& g, const Config& c) {
  const MmaShape shape = mmaShape(g.kind);
  const int64_t warpsM = c.at("warps") == 4 ? 2 : 1, warpsN = warpsM, fragsM = c.at("frags"), fragsN = 2 * fragsM;
  const int64_t kSteps = 2;  // one shared stage covers two k steps
  BlockTiles t(32 * warpsM * warpsN, warpsM * fragsM * shape.m, warpsN * fragsN * shape.n, shape.k * kSteps, 4, 8);
  KILN_ASSIGN(Stmt stage, stageTiles(g, t));  // first, so the kernel's inputs come before its outputs

  Var ks = makeVar("ks"), fm = makeVar("fm"), fn = makeVar("fn");
  Expr warp = floorDiv(varRef(t.tx), 32), lane = floorMod(varRef(t.tx), 32);
  Expr group = floorDiv(lane, 4), member = floorMod(lane, 4);
  Expr warpRow = floorDiv(warp, warpsN) * (fragsM * shape.m), warpCol = floorMod(warp, warpsN) * (fragsN * shape.n);
  Buffer acc = makeBuffer("acc", ScalarType::F32, MemoryScope::Local, fragsM * fragsN * shape.cElements);
  Buffer af = makeBuffer("af", ScalarType::F32, MemoryScope::Local, fragsM * shape.aElements);
  Buffer bf = makeBuffer("bf", ScalarType::F32, MemoryScope::Local, fragsN * shape.bElements);

  // Fragment loads and the mmas of one k step.
  std::vector<Stmt> loadA, loadB;
  for (int64_t el = 0; el < shape.aElements; ++el) {
    AffineElement f = affine(mmaFragmentA, g.kind, el);
    Expr row = warpRow + varRef(fm) * shape.m + affineRow(f, group, member);
    Expr col = varRef(ks) * shape.k + affineCol(f, group, member);
    loadA.push_back(store(af, varRef(fm) * shape.aElements + el, load(t.as, row * t.strideA + col)));
  }
  for (int64_t el = 0; el < shape.bElements; ++el) {
    AffineElement f = affine(mmaFragmentB, g.kind, el);
    Expr row = varRef(ks) * shape.k + affineRow(f, group, member);
    Expr col = warpCol + varRef(fn) * shape.n + affineCol(f, group, member);
    loadB.push_back(store(bf, varRef(fn) * shape.bElements + el, load(t.bs, row * t.strideB + col)));
  }
  Var fm2 = makeVar("fm2"), fn2 = makeVar("fn2");
  Stmt mmas = forLoop(fm2, intImm(fragsM), LoopKind::Unrolled,
                      forLoop(fn2, intImm(fragsN), LoopKind::Unrolled,
                              mmaSync(g.kind, acc, (varRef(fm2) * fragsN + varRef(fn2)) * shape.cElements, af,
                                      varRef(fm2) * shape.aElements, bf, varRef(fn2) * shape.bElements)));
  Stmt step = forLoop(ks, intImm(kSteps), LoopKind::Unrolled,
                      seq({forLoop(fm, intImm(fragsM), LoopKind::Unrolled, seq(loadA)),
                           forLoop(fn, intImm(fragsN), LoopKind::Unrolled, seq(loadB)), mmas}));

  // The epilogue: each lane's accumulator elements at their output positions.
  Var em = makeVar("em"), en = makeVar("en");
  std::vector<Stmt> writes;
  for (int64_t el = 0; el < shape.cElements; ++el) {
    AffineElement f = affine(mmaFragmentC, g.kind, el);
    Expr row = t.m0() + warpRow + varRef(em) * shape.m + affineRow(f, group, member);
    Expr col = t.n0() + warpCol + varRef(en) * shape.n + affineCol(f, group, member);
    KILN_ASSIGN(Stmt w, guardedWrite(g, t, row, col, load(acc, (varRef(em) * fragsN + varRef(en)) * shape.cElements + el)));
    writes.push_back(w);
  }
  Stmt epilogue = forLoop(em, intImm(fragsM), LoopKind::Unrolled, forLoop(en, intImm(fragsN), LoopKind::Unrolled, seq(writes)));
  return gemmKernel(g, t, stage, acc, {af, bf}, step, epilogue);
}

Expected<Stmt> simtGemm(const GpuGemm& g, const Config& c) {
  const int64_t tile = c.at("block"), per = tile / 16;
  BlockTiles t(256, tile, tile, 16, 0, 0);
  KILN_ASSIGN(Stmt stage, stageTiles(g, t));
  Var kk = makeVar("kk"), i = makeVar("i"), j = makeVar("j"), i2 = makeVar("i2"), j2 = makeVar("j2");
  Expr ty = floorDiv(varRef(t.tx), 16), tx = floorMod(varRef(t.tx), 16);
  Buffer acc = makeBuffer("acc", ScalarType::F32, MemoryScope::Local, per * per);
  Buffer a = makeBuffer("regA", ScalarType::F32, MemoryScope::Local, per), b = makeBuffer("regB", ScalarType::F32, MemoryScope::Local, per);
  Expr accAt = varRef(i2) * per + varRef(j2);
  Stmt step = forLoop(
      kk, intImm(t.tileK), LoopKind::Unrolled,
      seq({forLoop(i, intImm(per), LoopKind::Unrolled, store(a, varRef(i), load(t.as, (ty + varRef(i) * 16) * t.strideA + varRef(kk)))),
           forLoop(j, intImm(per), LoopKind::Unrolled, store(b, varRef(j), load(t.bs, varRef(kk) * t.strideB + tx + varRef(j) * 16))),
           forLoop(i2, intImm(per), LoopKind::Unrolled,
                   forLoop(j2, intImm(per), LoopKind::Unrolled,
                           store(acc, accAt, load(acc, accAt) + load(a, varRef(i2)) * load(b, varRef(j2)))))}));
  Var ei = makeVar("ei"), ej = makeVar("ej");
  KILN_ASSIGN(Stmt write, guardedWrite(g, t, t.m0() + ty + varRef(ei) * 16, t.n0() + tx + varRef(ej) * 16,
                                       load(acc, varRef(ei) * per + varRef(ej))));
  Stmt epilogue = forLoop(ei, intImm(per), LoopKind::Unrolled, forLoop(ej, intImm(per), LoopKind::Unrolled, write));
  return gemmKernel(g, t, stage, acc, {a, b}, step, epilogue);
}

}  // namespace

bool usesGpuGemm(const Config& c) { return knobIs(c, "mma") || knobIs(c, "gemm"); }

Expected<Stmt> gpuGemm(GpuGemm g, std::optional<MmaKind> kind, const Config& c) {
  if (!knobIs(c, "mma")) return simtGemm(g, c);
  if (!kind) return makeError(ErrorCode::CodegenUnsupported, "mma=1 needs operands of one type among f16, bf16 and f32");
  g.kind = *kind;
  return tensorCoreGemm(g, c);
}

}  // namespace kiln::codegen
