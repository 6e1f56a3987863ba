//===- lib/tune/ScheduleFeatures.cpp - Schedule features -------------------===//
//
// See kiln/tune/ScheduleFeatures.h. One walk over the statement tree carries
// the product of the enclosing loops' trip counts (a non-constant extent
// counts with its constant bound, or once), and the innermost loop variable,
// along which each load's stride is classified.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/ScheduleFeatures.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>

#include "kiln/codegen/IRVisitor.h"

namespace kiln::tune {

using namespace codegen;

namespace {

/// An upper bound of a loop extent when it is built from constants (min
/// takes the smaller bound), else 1.
double extentBound(const Expr& e) {
  int64_t v = 0;
  if (isIntConstant(e, &v)) return double(std::max<int64_t>(v, 0));
  if (e->kind == ExprKind::Binary) {
    double a = extentBound(e->operands[0]), b = extentBound(e->operands[1]);
    switch (e->binaryOp) {
      case BinaryOp::Min: {
        int64_t x = 0, y = 0;
        bool ca = isIntConstant(e->operands[0], &x), cb = isIntConstant(e->operands[1], &y);
        if (ca && cb) return double(std::min(x, y));
        return ca ? double(x) : cb ? double(y) : 1.0;
      }
      case BinaryOp::Max: return std::max(a, b);
      case BinaryOp::Mul: return a * b;
      case BinaryOp::Add: return a + b;
      default: return 1.0;
    }
  }
  return 1.0;
}

bool isFloatArithmetic(const Expr& e) {
  if (!isFloatType(e->type)) return false;
  if (e->kind == ExprKind::Unary) return true;
  return e->kind == ExprKind::Binary && e->binaryOp <= BinaryOp::Pow;
}

/// Sums a kernel's statistics over its statement tree. The context of a node
/// (the trip count of the loops around it, the innermost loop variable, the
/// parallel and unrolled extents, the loop depth) is set by each loop for its body.
class StatsWalker : public IRVisitor {
 public:
  explicit StatsWalker(KernelStats& s) : s_(s) {}
  using IRVisitor::visit;

  void visit(const Expr& e) override {
    if (!e) return;
    if (isFloatArithmetic(e)) s_.flops += at_.trips;
    if (e->kind == ExprKind::Load && e->buffer->scope == MemoryScope::Global) countLoad(e);
    IRVisitor::visit(e);
  }

 private:
  struct Context {
    double trips = 1.0;
    Var inner;
    double parallel = 1.0, unrolled = 1.0;
    int depth = 0;
  };

  void countLoad(const Expr& e) {
    const double trips = at_.trips;
    s_.loads += trips;
    s_.loadBytes += trips * double(scalarTypeSize(e->buffer->type));
    std::optional<int64_t> stride = at_.inner ? strideIn(e->operands[0], at_.inner) : std::optional<int64_t>(0);
    if (!stride) s_.stridedLoads += trips;
    else if (*stride == 0) s_.broadcastLoads += trips;
    else if (*stride == 1) s_.contiguousLoads += trips;
    else s_.stridedLoads += trips;
  }

  // A loop's extent is not an expression the kernel evaluates per trip: it is not counted.
  void visitFor(const Stmt& st) override {
    const Context outer = at_;
    double extent = extentBound(st->value);
    double p = outer.parallel, u = outer.unrolled;
    if (st->loop == LoopKind::Parallel || isGpuBinding(st->loop)) p *= std::max(extent, 1.0);
    if (st->loop == LoopKind::Vectorized) s_.vectorWidth = std::max(s_.vectorWidth, extent);
    if (st->loop == LoopKind::Unrolled) u *= std::max(extent, 1.0);
    s_.parallelExtent = std::max(s_.parallelExtent, p);
    s_.unrolled = std::max(s_.unrolled, u);
    s_.loopDepth = std::max(s_.loopDepth, double(outer.depth + 1));
    innerExtent_[st->var.get()] = extent;
    at_ = Context{outer.trips * std::max(extent, 1.0), st->var, p, u, outer.depth + 1};
    visitBody(st);
    at_ = outer;
  }

  void visitStore(const Stmt& st) override {
    const double trips = at_.trips;
    s_.stores += st->buffer->scope == MemoryScope::Global ? trips : 0;
    if (st->buffer->scope == MemoryScope::Global) s_.storeBytes += trips * double(scalarTypeSize(st->buffer->type));
    if (trips > heaviestStore_) {
      heaviestStore_ = trips;
      s_.innermostExtent = at_.inner ? innerExtent_[at_.inner.get()] : 1.0;
    }
    visit(st->index);
    visit(st->value);
  }

  void visitAllocate(const Stmt& st) override {
    (st->buffer->scope == MemoryScope::Shared ? s_.sharedBytes : s_.localBytes) +=
        double(st->buffer->size) * double(scalarTypeSize(st->buffer->type));
    visitBody(st);
  }

  // An mma's fragment offsets are addresses, not arithmetic: its work is counted per lane.
  void visitMma(const Stmt& st) override {
    MmaShape m = mmaShape(st->mma);
    s_.flops += at_.trips * 2.0 * double(m.m * m.n * m.k) / 32.0;  // the warp's work shared by 32 lanes
    visitBody(st);
  }

  KernelStats& s_;
  Context at_;
  std::map<const VarDecl*, double> innerExtent_;
  double heaviestStore_ = -1;
};

double logScale(double v) { return std::log2(1.0 + std::max(v, 0.0)); }

constexpr const char* kStatNames[] = {
    "flops",         "loads",          "stores",          "load_bytes",    "store_bytes",
    "intensity",     "reuse",          "parallel_extent", "vector_width",  "unrolled",
    "innermost",     "loop_depth",     "contiguous_share", "broadcast_share", "strided_share",
    "local_bytes",   "shared_bytes",
};

}  // namespace

KernelStats kernelStats(const Kernel& kernel) {
  KernelStats s;
  for (const codegen::Buffer& b : kernel.params) s.globalBytes += double(b->size) * double(scalarTypeSize(b->type));
  StatsWalker(s).visit(kernel.body);
  return s;
}

std::vector<float> scheduleFeatures(const KnobSpace& space, const Config& config, const Kernel& kernel) {
  std::vector<float> f;
  for (const Knob& k : space.knobs) {
    auto it = config.find(k.name);
    f.push_back(float(it == config.end() ? k.defaultValue : it->second));
  }
  KernelStats s = kernelStats(kernel);
  double traffic = s.loadBytes + s.storeBytes, loads = std::max(s.loads, 1.0);
  const double stats[] = {
      logScale(s.flops),        logScale(s.loads),           logScale(s.stores),
      logScale(s.loadBytes),    logScale(s.storeBytes),      logScale(s.flops / std::max(traffic, 1.0)),
      logScale(traffic / std::max(s.globalBytes, 1.0)),      logScale(s.parallelExtent),
      logScale(s.vectorWidth),  logScale(s.unrolled),        logScale(s.innermostExtent),
      s.loopDepth,              s.contiguousLoads / loads,   s.broadcastLoads / loads,
      s.stridedLoads / loads,   logScale(s.localBytes),      logScale(s.sharedBytes),
  };
  static_assert(std::size(stats) == std::size(kStatNames));
  for (double v : stats) f.push_back(float(v));
  return f;
}

std::vector<std::string> scheduleFeatureNames(const KnobSpace& space) {
  std::vector<std::string> names;
  for (const Knob& k : space.knobs) names.push_back("knob:" + k.name);
  for (const char* n : kStatNames) names.push_back(n);
  return names;
}

size_t kernelFeatureCount() { return std::size(kStatNames); }

}  // namespace kiln::tune
