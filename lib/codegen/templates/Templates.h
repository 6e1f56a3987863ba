//===- lib/codegen/templates/Templates.h - The schedule templates ---------===//
//
// Factories of the schedule templates (one file each) and what they share:
// knob construction, loop nests, local accumulators and the epilogue store
// that runs a group's elementwise consumers on an anchor's result.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>

#include "../TensorExpr.h"
#include "kiln/codegen/ScheduleTemplate.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {

const ScheduleTemplate& injectiveTemplate();
const ScheduleTemplate& matmulTemplate();
const ScheduleTemplate& conv2dTemplate();
const ScheduleTemplate& convNchwcTemplate();
const ScheduleTemplate& poolTemplate();
const ScheduleTemplate& reduceTemplate();
const ScheduleTemplate& softmaxTemplate();
const ScheduleTemplate& layerNormTemplate();
const ScheduleTemplate& attentionTemplate();

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t product(const Dims& d, size_t begin = 0, size_t end = SIZE_MAX);

/// A knob over `candidates` (kept when `keep` holds; at least the smallest
/// candidate survives); the default is `preferred` if kept, else the largest kept.
Knob makeKnob(std::string name, std::vector<int64_t> candidates, int64_t preferred, std::string doc,
              const std::function<bool(int64_t)>& keep = nullptr);

/// Origin of block `index` of `size` over `extent`: index * size, except that a
/// last block that would overhang is moved back to end at `extent` (when
/// size <= extent), recomputing a few elements instead of masking lanes.
inline Expr blockOrigin(const Expr& index, int64_t size, int64_t extent) {
  if (extent % size == 0 || size > extent) return index * size;
  return minOf(index * size, intImm(extent - size));
}
/// Whether blocks of `size` over `extent` still overhang (only when size > extent).
inline bool blocksOverhang(int64_t size, int64_t extent) { return extent % size != 0 && size > extent; }

/// A count known at compile time or only at run time (a dynamic batch):
/// `run`, an expression over the kernel's run-time extents (a constant when
/// static), and `max`, its largest value, which workspaces are sized for.
struct RunCount {
  Expr run;
  int64_t max = 0;
  RunCount(int64_t n) : run(intImm(n)), max(n) {}  // NOLINT: a static count converts implicitly
  RunCount(Expr r, int64_t m) : run(std::move(r)), max(m) {}
  // Arithmetic on counts folds static ones, so static kernels keep constant extents.
  RunCount times(int64_t f) const { return dynamic() ? RunCount(run * f, max * f) : RunCount(max * f); }
  RunCount operator*(const RunCount& o) const {
    return dynamic() || o.dynamic() ? RunCount(run * o.run, max * o.max) : RunCount(max * o.max);
  }
  RunCount plus(int64_t k) const { return dynamic() ? RunCount(run + k, max + k) : RunCount(max + k); }
  /// Whether its value is known only at run time.
  bool dynamic() const { return !isIntConstant(run); }
  /// The loop kind of a loop over this count: `parallel` when it can run more than once.
  LoopKind loopKind(LoopKind parallel) const { return max > 1 ? parallel : LoopKind::Serial; }
};

/// 0 <= v < extent.
inline Expr inRange(const Expr& v, const Expr& extent) {
  return binary(BinaryOp::And, binary(BinaryOp::Ge, v, intImm(0)), binary(BinaryOp::Lt, v, extent));
}
inline Expr inRange(const Expr& v, int64_t extent) { return inRange(v, intImm(extent)); }

/// Nested serial loops over `extents` (one variable each, named prefix0...).
Stmt loopNest(const std::vector<Var>& vars, const Dims& extents, Stmt body);
std::vector<Var> makeVars(const std::string& prefix, size_t n);

/// GPU schedules that give each thread one independent work item (an output
/// element, a row): `body` runs once per item o in [0, items), in blocks of
/// `threads` threads (BlockX x ThreadX, o = block * threads + thread, the
/// last block guarded). `body` may use `o` as it would a serial loop's. A
/// run-time count launches blocks for its maximum; those past the run's
/// items do nothing.
Stmt threadPerItem(const Var& o, const RunCount& items, int64_t threads, Stmt body);
/// The knob "threads" {64,128,256,512} (per block) of thread-per-item
/// schedules; the default keeps at least ~2 blocks per SM when items allow.
Knob threadsKnob(int64_t items);
/// The knob space of a thread-per-item GPU schedule over `items`.
KnobSpace threadPerItemSpace(int64_t items);

/// Whether configuration `c` has knob `name` set to `value` (absent knobs are not).
inline bool knobIs(const Config& c, const std::string& name, int64_t value = 1) {
  auto it = c.find(name);
  return it != c.end() && it->second == value;
}

/// The outer loop kind for a kernel: parallel when the knob asks for it.
inline LoopKind outerKind(const Config& c) { return knobIs(c, "parallel") ? LoopKind::Parallel : LoopKind::Serial; }

/// A knob "parallel" {0,1}, on by default when the kernel does at least a
/// million operations (`work`) and has more than one outer iteration.
Knob parallelKnob(int64_t work, int64_t outerIterations);

/// A register-tiled GEMM block: `acc` (tm x tn local) cleared, then for k in
/// [0, kExtent) acc[i][j] += product (i unrolled, j vectorized), then `write`.
/// `product(clamped)` builds a(i,k)*b(k,j); with `fullTile` (null: tiles never
/// overhang) a direct-index variant runs for full tiles and a clamped one
/// (clamped = true: indices clamped into the matrix) for the edge tiles.
struct GemmBlock {
  Var i, j, k;
  int64_t tm = 1, tn = 1, kExtent = 1;
  Buffer acc;
  LoopKind kLoop = LoopKind::Serial;  ///< Unrolled for short reductions (a depthwise 3x3's 9 taps)
  Expr kRunExtent = Expr();           ///< a dynamic K: the k loop's run-time extent (kExtent unused)
};
Expected<Stmt> gemmBlock(const GemmBlock& g, Expr fullTile, const std::function<Expected<Expr>(bool clamped)>& product,
                         Stmt write);
/// The i (unrolled) x j (vectorized) loops over a GEMM block's tile.
Stmt gemmTileLoops(const GemmBlock& g, Stmt body);

/// The dims of a convolution's or pool's value (an operand or result):
/// static, or with a dynamic batch (dim 0) and image dims (2, 3), taken at
/// `point` of the group's ranges; the channels (and a blocked map's lanes)
/// stay static. Other dynamic dims, and dynamic image dims under SAME
/// padding (whose pads depend on them), are CodegenUnsupported naming the value.
Expected<Dims> windowDims(const KernelGroup& g, const ir::Value* v, KernelTarget target, DimPoint point);
/// Dim `axis` of such a value in a kernel: its run-time extent when dynamic, with its maximum.
Expected<RunCount> runDim(ElementBuilder& el, const ir::Value* v, size_t axis);
/// Blocks of `size` over a run-time `extent` of at least `size` (a schedule
/// sizes its blocks from the extent's lower bound): block `index` starts at
/// index * size, the last one moved back to end at the extent.
inline Expr blockOrigin(const Expr& index, int64_t size, const RunCount& extent) {
  if (!extent.dynamic()) return blockOrigin(index, size, extent.max);
  return minOf(index * size, extent.run - intImm(size));
}
/// The number of blocks of `size` over `extent`.
inline Expr blockCount(int64_t size, const RunCount& extent) {
  if (!extent.dynamic()) return intImm(ceilDiv(extent.max, size));
  return floorDiv(extent.run + intImm(size - 1), size);
}

/// A bordered copy of a convolution's or pool's input, so its windows read it
/// without bounds checks: `planes` planes (sized for their maxima) of height x width pixels of `inner`
/// contiguous elements each (1 for NCHW, the channel block for NCHWc), padded
/// by geo's pads with `border` (zero for a conv, -inf for a max pool) into a
/// workspace "padded" of planes x hp x wp x inner.
/// `source(plane, iy, ix, lane)` reads an input element (lane 0 when inner
/// is 1: a blocked map of one-channel blocks still has the lane index). Image rows are copied as vectors between their border columns.
struct PaddedCopy {
  Buffer buffer;
  Stmt fill;
  RunCount hp = 0, wp = 0;  ///< the padded height and width (run-time ones over dynamic image dims)
};
using PaddedSource = std::function<Expected<Expr>(const Expr& plane, const Expr& iy, const Expr& ix, const Expr& lane)>;
Expected<PaddedCopy> borderedCopy(ElementBuilder& el, ScalarType t, const RunCount& planes, const RunCount& height,
                                  const RunCount& width,
                                  int64_t inner, const ir::WindowGeometry& geo, LoopKind planeLoop, const Expr& border,
                                  const PaddedSource& source);

/// The knob space of a row-by-row template (softmax, layernorm): `parallel`
/// on the CPU; on the GPU `threads` per block and `warp` {0,1}: 0 one row per
/// thread, 1 one row per warp (default for rows of 32 or more elements).
Expected<KnobSpace> rowwiseKnobSpace(const KernelGroup& g, KernelTarget target, int64_t rowLength);
/// The dims of a row-wise template's operand (the anchor's input 0): at the
/// opt values (`point` Opt, for knob spaces) or with -1 at dynamic dims (Max).
Expected<Dims> rowwiseDims(const KernelGroup& g, KernelTarget target, DimPoint point);
/// The CPU loop over a row-wise template's `rows` (run-time or constant): parallel as `c` asks, when there can be more than one.
Stmt rowsLoop(const Var& o, const Expr& rows, const Config& c, Stmt body);

/// GPU schedules with one warp per work item: `body` runs on every lane of
/// the warp for item o in [0, items), `lane` (0..31) its lane; blocks of
/// threads / 32 warps. The item guard is the same for a whole warp, so the
/// body may use warp shuffles.
Stmt warpPerItem(const Var& o, const Var& lane, const RunCount& items, int64_t threads, Stmt body);
/// A loop over [0, len) shared by a warp's lanes: j = t * 32 + lane for
/// t in [0, ceil(len / 32)), guarded by j < len (consecutive lanes read consecutive elements).
Stmt laneStrided(const Var& j, const Var& lane, const RunCount& len, Stmt body);
/// acc[index] = op of acc[index] over the warp's 32 lanes, every lane
/// receiving it (a butterfly of five xor shuffles).
Stmt warpAllReduce(const Buffer& acc, int64_t index, BinaryOp op);
/// A row loop `j in [0, len)` of a rowwise template as the GPU config asks:
/// serial per thread, or strided over a warp's lanes (warp = 1).
Stmt rowLoop(const Var& j, const Var& lane, const RunCount& len, bool warp, Stmt body);
/// CPU: acc[slot] = op(acc[slot], op over the row's `len` values at(j)), op
/// Add or Max. Rows of at least 2 x 16 go 16 lanes at a time into a local
/// vector of partial results named `scratch` (a name kernel parameters never
/// take: TensorExpr.cpp), halved down to one lane, then the last len % 16
/// one by one; shorter rows one by one. (A chain of scalar adds or
/// NaN-propagating maxima, which LLVM leaves unvectorized once it has
/// unrolled a short row, was most of a row-wise kernel's time.)
Expected<Stmt> cpuRowReduce(const Buffer& acc, int64_t slot, BinaryOp op, const std::function<Expected<Expr>(const Expr&)>& at,
                            int64_t len, ScalarType ct, const std::string& scratch);
/// The type an anchor computes its (first) result in.
Expected<ScalarType> resultComputeType(const ir::Node& anchor);

/// A (batched) matrix product on the GPU (GpuGemm.cpp: tensor cores or SIMT tiles):
/// out[b, row, col] = sum over k of a(b, row, k) * b(b, k, col). The operand
/// callbacks get indices inside the matrices (the builder masks the rest
/// with zeros); `write` stores one output element's accumulated value.
struct GpuGemm {
  MmaKind kind = MmaKind::F16_M16N8K16;
  RunCount batch = 1, m = 1, n = 1, k = 1;  ///< static, or run-time extents (the grid launches for their maxima)
  std::function<Expected<Expr>(const Expr& batch, const Expr& row, const Expr& k)> a;
  std::function<Expected<Expr>(const Expr& batch, const Expr& k, const Expr& col)> b;
  std::function<Expected<Stmt>(const Expr& batch, const Expr& row, const Expr& col, const Expr& value)> write;
};
/// The instruction for operands of these types (f16 x f16, bf16 x bf16,
/// f32 x f32 as TF32), if any.
std::optional<MmaKind> mmaKindFor(ScalarType a, ScalarType b);
/// Adds the knobs "mma" {0,1}, "warps" {1,4} and "frags" {1,2} of a GPU GEMM
/// over `batch` m x n outputs; for TF32, mma defaults to 0 and is approximate
/// (opt-in). The large tile is the default only where it leaves enough blocks.
void addTensorCoreKnobs(KnobSpace& space, int64_t batch, int64_t m, int64_t n, MmaKind kind);
/// Adds the knobs "gemm" {0,1} and "block" {32,64} of a SIMT GPU GEMM over
/// `batch` m x n outputs (block 64 the default only where it leaves enough blocks).
void addSimtGemmKnobs(KnobSpace& space, int64_t batch, int64_t m, int64_t n);
/// Whether configuration `c` asks for a GpuGemm schedule (mma = 1 or gemm = 1).
bool usesGpuGemm(const Config& c);
/// The kernel body for `g` as `c` asks: tensor cores of `kind` (mma = 1; an
/// error when the operand types have none), else SIMT tiles (gemm = 1).
Expected<Stmt> gpuGemm(GpuGemm g, std::optional<MmaKind> kind, const Config& c);

/// Stores every group output at `idx` (the anchor's result supplied with
/// setSource beforehand), wrapped in `guard` when given; `exclude` names
/// outputs the template stores itself (at another index space).
Expected<Stmt> storeEpilogue(ElementBuilder& elements, const Index& idx, Expr guard = Expr(),
                             const std::vector<const ir::Value*>& exclude = {});

}  // namespace kiln::codegen
