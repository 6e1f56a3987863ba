//===- lib/codegen/templates/TensorCoreGemm.cpp - GEMM on tensor cores ----===//
//
// The GPU GEMM schedule built from warp-wide mma instructions, shared by the
// templates whose anchor is a matrix product. A block of warpsM x warpsN
// warps computes a (warpsM * fragsM * 16) x (warpsN * fragsN * 8) output
// tile; each warp holds fragsM x fragsN accumulator fragments (4 floats per
// lane each). Per k stage the whole block copies a tile of A (rows x kStage)
// and of B (kStage x columns) into shared memory (zero outside the matrix;
// consecutive threads read consecutive k of A and columns of B), then each
// warp loads its A and B fragments from shared memory in the instruction's
// per-lane layout (mmaFragmentA/B as affine functions of the lane's group
// and member) and issues fragsM x fragsN mmas per k step. The epilogue
// writes each lane's accumulator elements through the caller's `write`.
// Shared rows are padded (A by 4, B by 8 floats) to spread the fragment
// loads over the memory banks.
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

void addTensorCoreKnobs(KnobSpace& space, int64_t m, int64_t n, MmaKind kind) {
  if (kind == MmaKind::TF32_M16N8K8) {  // f32 results change: opt-in only
    Knob mma = makeKnob("mma", {0, 1}, 0, "GPU: 1 TF32 tensor cores (f32 inputs rounded to 10 mantissa bits; opt-in), 0 f32 units");
    mma.approximate = true;
    space.knobs.push_back(mma);
  } else {
    space.knobs.push_back(makeKnob("mma", {0, 1}, 1, "GPU: 1 tensor-core mma instructions (warp tiles), 0 one output per thread"));
  }
  space.knobs.push_back(makeKnob("warps", {1, 4}, m >= 32 && n >= 32 ? 4 : 1, "mma: warps per block (1, or 2 x 2)"));
  space.knobs.push_back(makeKnob("frags", {1, 2}, m >= 64 && n >= 64 ? 2 : 1,
                                 "mma: per warp, fragment rows (x16) and column pairs (x16)"));
}

Expected<Stmt> tensorCoreGemm(const TensorCoreGemm& g, const Config& c) {
  const MmaShape shape = mmaShape(g.kind);
  const int64_t warpsM = c.at("warps") == 4 ? 2 : 1, warpsN = warpsM, fragsM = c.at("frags"), fragsN = 2 * fragsM;
  const int64_t threads = 32 * warpsM * warpsN;
  const int64_t tileM = warpsM * fragsM * shape.m, tileN = warpsN * fragsN * shape.n;
  const int64_t kSteps = 2, tileK = shape.k * kSteps;  // one shared stage covers two k steps
  const int64_t strideA = tileK + 4, strideB = tileN + 8;
  const ScalarType f32 = ScalarType::F32;

  Var bz = makeVar("bz"), by = makeVar("by"), bx = makeVar("bx"), tx = makeVar("tx");
  Var kt = makeVar("kt"), e = makeVar("e"), ks = makeVar("ks"), fm = makeVar("fm"), fn = makeVar("fn"), i = makeVar("i");
  Expr warp = floorDiv(varRef(tx), 32), lane = floorMod(varRef(tx), 32);
  Expr group = floorDiv(lane, 4), member = floorMod(lane, 4);
  Expr warpRow = floorDiv(warp, warpsN) * (fragsM * shape.m), warpCol = floorMod(warp, warpsN) * (fragsN * shape.n);
  Expr m0 = varRef(by) * tileM, n0 = varRef(bx) * tileN, k0 = varRef(kt) * tileK;

  Buffer as = makeBuffer("As", f32, MemoryScope::Shared, tileM * strideA);
  Buffer bs = makeBuffer("Bs", f32, MemoryScope::Shared, tileK * strideB);
  Buffer acc = makeBuffer("acc", f32, MemoryScope::Local, fragsM * fragsN * shape.cElements);
  Buffer af = makeBuffer("af", f32, MemoryScope::Local, fragsM * shape.aElements);
  Buffer bf = makeBuffer("bf", f32, MemoryScope::Local, fragsN * shape.bElements);

  // Cooperative copies of the A and B tiles into shared memory.
  auto copyTile = [&](const Buffer& dst, int64_t rows, int64_t cols, int64_t stride, bool isA) -> Expected<Stmt> {
    Expr idx = varRef(e) * threads + varRef(tx), r = floorDiv(idx, cols), col = floorMod(idx, cols);
    Expr gRow = isA ? m0 + r : k0 + r, gCol = isA ? k0 + col : n0 + col;
    const int64_t rowExtent = isA ? g.m : g.k, colExtent = isA ? g.k : g.n;
    Expr value;
    if (isA) {
      KILN_ASSIGN(value, g.a(varRef(bz), clampIndex(gRow, rowExtent), clampIndex(gCol, colExtent)));
    } else {
      KILN_ASSIGN(value, g.b(varRef(bz), clampIndex(gRow, rowExtent), clampIndex(gCol, colExtent)));
    }
    value = cast(f32, value);
    const bool rowsOverhang = (isA ? g.m % tileM : g.k % tileK) != 0, colsOverhang = (isA ? g.k % tileK : g.n % tileN) != 0;
    Expr inside;
    if (rowsOverhang) inside = binary(BinaryOp::Lt, gRow, intImm(rowExtent));
    if (colsOverhang) {
      Expr colOk = binary(BinaryOp::Lt, gCol, intImm(colExtent));
      inside = inside ? both(inside, colOk) : colOk;
    }
    if (inside) value = select(inside, value, floatImm(0));
    Stmt copy = store(dst, r * stride + col, value);
    const int64_t elements = rows * cols;
    if (elements % threads) copy = ifThen(binary(BinaryOp::Lt, idx, intImm(elements)), copy);
    return forLoop(e, intImm(ceilDiv(elements, threads)), LoopKind::Unrolled, copy);
  };
  KILN_ASSIGN(Stmt copyA, copyTile(as, tileM, tileK, strideA, true));
  KILN_ASSIGN(Stmt copyB, copyTile(bs, tileK, tileN, strideB, false));

  // Fragment loads and the mmas of one k step.
  std::vector<Stmt> loadA, loadB;
  for (int64_t el = 0; el < shape.aElements; ++el) {
    AffineElement f = affine(mmaFragmentA, g.kind, el);
    Expr row = warpRow + varRef(fm) * shape.m + affineRow(f, group, member);
    Expr col = varRef(ks) * shape.k + affineCol(f, group, member);
    loadA.push_back(store(af, varRef(fm) * shape.aElements + el, load(as, row * strideA + col)));
  }
  for (int64_t el = 0; el < shape.bElements; ++el) {
    AffineElement f = affine(mmaFragmentB, g.kind, el);
    Expr row = varRef(ks) * shape.k + affineRow(f, group, member);
    Expr col = warpCol + varRef(fn) * shape.n + affineCol(f, group, member);
    loadB.push_back(store(bf, varRef(fn) * shape.bElements + el, load(bs, row * strideB + col)));
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
    Expr row = m0 + warpRow + varRef(em) * shape.m + affineRow(f, group, member);
    Expr col = n0 + warpCol + varRef(en) * shape.n + affineCol(f, group, member);
    Expr value = load(acc, (varRef(em) * fragsN + varRef(en)) * shape.cElements + el);
    KILN_ASSIGN(Stmt w, g.write(varRef(bz), row, col, value));
    Expr guard;
    if (g.m % tileM) guard = binary(BinaryOp::Lt, row, intImm(g.m));
    if (g.n % tileN) {
      Expr colOk = binary(BinaryOp::Lt, col, intImm(g.n));
      guard = guard ? both(guard, colOk) : colOk;
    }
    writes.push_back(guard ? ifThen(guard, w) : w);
  }
  Stmt epilogue = forLoop(em, intImm(fragsM), LoopKind::Unrolled, forLoop(en, intImm(fragsN), LoopKind::Unrolled, seq(writes)));

  Var z = makeVar("z");
  Stmt clear = forLoop(z, intImm(acc->size), LoopKind::Unrolled, store(acc, varRef(z), floatImm(0)));
  Stmt mainLoop = forLoop(kt, intImm(ceilDiv(g.k, tileK)), LoopKind::Serial, seq({copyA, copyB, barrier(), step, barrier()}));
  Stmt thread = allocate(acc, allocate(af, allocate(bf, seq({clear, mainLoop, epilogue}))));
  Stmt block = allocate(as, allocate(bs, forLoop(tx, intImm(threads), LoopKind::ThreadX, thread)));
  return forLoop(bz, intImm(g.batch), LoopKind::BlockZ,
                 forLoop(by, intImm(ceilDiv(g.m, tileM)), LoopKind::BlockY,
                         forLoop(bx, intImm(ceilDiv(g.n, tileN)), LoopKind::BlockX, block)));
}

}  // namespace kiln::codegen
