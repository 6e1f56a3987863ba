//===- lib/codegen/templates/InjectiveTemplate.cpp - Elementwise groups ----===//
//
// Groups without an anchor: every output element is an inlined expression of
// input elements. Outputs of equal shape share one loop nest; each nest runs
// the leading dims flattened into one outer loop (parallel when worthwhile)
// and the last dim inside, split by the vector knob into a vectorized inner
// loop when it divides the dim.
//
//   knobs: vector {1,4,8,16} (must divide the last dim of the largest output;
//          a smaller nest whose last dim it does not divide runs scalar; default 8, or 1 when
//          a Transpose moves the last axis), parallel {0,1} (default by
//          the elements of all outputs x ops of the group);
//   GPU: one element per thread (of the largest output), threads per block;
//        vector {1,4} when every output has one shape whose last dim is a
//        multiple of 4: 4 consecutive elements per thread (a vectorized
//        loop, 16-byte loads and stores where the accesses allow)
//
//===----------------------------------------------------------------------===//
#include "Templates.h"

namespace kiln::codegen {
namespace {

/// Whether a Transpose in the group moves its input's last axis (the NCHW
/// <-> NCHWc layout transforms, a K^T): consecutive output elements then
/// read the input with a stride, and a vectorized inner loop gathers lane by
/// lane (measured on the 2-core AVX-512 VM: 5.6x slower than the scalar loop
/// on a 4.8 MB layout transform before simplifyIndices, 1.45x after). A
/// Reshape alone keeps the inner index affine once simplifyIndices has
/// removed its divisions (BERT's head merge: vector 16 3.8x faster than 1).
bool movesLastAxis(const KernelGroup& g) {
  for (const ir::Node* n : g.nodes) {
    if (n->op() != ir::Op::Transpose) continue;
    const int64_t rank = n->output(0)->type().tensor().rank();
    if (rank < 2) continue;
    if (!n->hasAttr("perm") || n->getInts("perm").back() != rank - 1) return true;  // no perm: reversed
  }
  return false;
}

class InjectiveTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "injective"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Injective; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(Dims dims, dimsAt(g.outputs.front(), g.dimRanges, DimPoint::Opt));
    int64_t inner = dims.empty() ? 1 : dims.back(), total = product(dims);
    if (target == KernelTarget::Gpu) {
      // Dynamic dims count at their opt values; vectors of 4 need one static shape whose last dim they divide.
      bool oneShape = !hasDynamicDims(g);
      for (const ir::Value* v : g.outputs) {
        KILN_ASSIGN(Dims d, dimsAt(v, g.dimRanges, DimPoint::Opt));
        total = std::max(total, product(d));
        oneShape &= d == dims;
      }
      if (!oneShape || dims.empty() || inner % 4 != 0) return threadPerItemSpace(total);
      KnobSpace s;
      s.knobs.push_back(makeKnob("vector", {1, 4}, 4, "GPU: consecutive elements per thread (4: 16-byte accesses)"));
      s.knobs.push_back(threadsKnob(total / 4));
      return s;
    }
    // Outputs of several shapes (an FPN's sums at each level) are separate
    // loop nests: the largest one's innermost dim bounds the vector width,
    // and every output's elements count as work. Dynamic dims count at their opt values.
    int64_t elements = 0;
    for (const ir::Value* v : g.outputs) {
      KILN_ASSIGN(Dims d, dimsAt(v, g.dimRanges, DimPoint::Opt));
      elements += product(d);
      if (product(d) > total) dims = d, total = product(d), inner = d.empty() ? 1 : d.back();
    }
    KnobSpace s;
    s.knobs.push_back(makeKnob("vector", {1, 4, 8, 16}, movesLastAxis(g) ? 1 : 8, "vector width of the innermost loop",
                               [&](int64_t v) { return inner % v == 0; }));
    // Work: each op of the group costs about two multiply-adds per element
    // (a load or store and its index arithmetic; measured: SSDLite's box-head
    // chain of 12 reshapes, transposes and concats over 294K elements and a
    // 301K-element layout transform ran 2x and 1.5x faster in parallel,
    // BERT's 98K-element head split 8x slower).
    s.knobs.push_back(parallelKnob(2 * elements * int64_t(std::max<size_t>(g.nodes.size(), 1)), total / std::max<int64_t>(inner, 1)));
    return s;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    // Outputs of one shape (the same dims, dynamic ones as expressions) share a nest.
    std::vector<std::pair<std::vector<DimExpr>, std::vector<ir::Value*>>> nests;
    for (ir::Value* v : el.group().outputs) {
      KILN_TRY(elementDims(v).status());
      std::vector<DimExpr> d = *v->tensorType().dimExprs();
      auto it = std::find_if(nests.begin(), nests.end(), [&](const auto& n) { return n.first == d; });
      if (it == nests.end()) nests.push_back({d, {v}});
      else it->second.push_back(v);
    }
    if (target == KernelTarget::Gpu) return instantiateGpu(el, c, nests);
    std::vector<Stmt> loops;
    for (size_t n = 0; n < nests.size(); ++n) {
      KILN_ASSIGN(ExprDims dims, el.dims(nests[n].second.front()));
      std::string suffix = nests.size() > 1 ? std::to_string(n) : "";
      Expr inner = dims.empty() ? intImm(1) : dims.back();
      Expr outer = productOf(dims, 0, dims.empty() ? 0 : dims.size() - 1);
      int64_t innerValue = 0, outerValue = 0, vec = c.at("vector");
      if (!isIntConstant(inner, &innerValue) || innerValue % vec != 0) vec = 1;
      Var o = makeVar("o" + suffix), io = makeVar("i" + suffix), iv = makeVar("v" + suffix);
      Expr innerIndex = vec > 1 ? varRef(io) * vec + varRef(iv) : varRef(io);
      Index idx;
      if (!dims.empty()) {
        ExprDims lead(dims.begin(), dims.end() - 1);
        idx = unflatten(varRef(o), lead);
        idx.push_back(innerIndex);
      }
      std::vector<Stmt> stores;
      for (ir::Value* v : nests[n].second) {
        KILN_ASSIGN(std::vector<Stmt> s, el.storeOutputs({v}, idx));
        stores.insert(stores.end(), s.begin(), s.end());
      }
      Stmt body = seq(std::move(stores));
      if (vec > 1) body = forLoop(iv, intImm(vec), LoopKind::Vectorized, body);
      body = forLoop(io, vec > 1 ? intImm(innerValue / vec) : inner, LoopKind::Serial, body);
      const bool oneIteration = isIntConstant(outer, &outerValue) && outerValue <= 1;
      loops.push_back(forLoop(o, outer, oneIteration ? LoopKind::Serial : outerKind(c), body));
    }
    return seq(std::move(loops));
  }

 private:
  /// One thread per element of the largest output; each output shape's
  /// stores are guarded by its own element count (over dynamic dims, threads
  /// for the most elements an output has in the run, every output guarded).
  static Expected<Stmt> instantiateGpu(ElementBuilder& el, const Config& c,
                                       const std::vector<std::pair<std::vector<DimExpr>, std::vector<ir::Value*>>>& nests) {
    Var o = makeVar("o");
    std::vector<ExprDims> dims;
    std::vector<RunCount> counts;
    size_t largest = 0;
    for (const auto& n : nests) {
      KILN_ASSIGN(ExprDims d, el.dims(n.second.front()));
      KILN_ASSIGN(Dims max, dimsAt(n.second.front(), el.group().dimRanges, DimPoint::Max));
      counts.emplace_back(productOf(d), product(max));
      if (counts.back().max > counts[largest].max) largest = counts.size() - 1;
      dims.push_back(std::move(d));
    }
    // Threads for the most elements any output has in this run (which output that is may change from run to run).
    RunCount items = counts[largest];
    for (const RunCount& n : counts)
      if (n.dynamic() || items.dynamic()) items = RunCount(maxOf(items.run, n.run), std::max(items.max, n.max));
    if (knobIs(c, "vector", 4)) {
      // 4 consecutive elements per thread, along the last dim (a multiple of 4; static shapes).
      const auto& values = nests.front().second;
      Var v = makeVar("v");
      Index idx = unflatten(varRef(o) * 4, dims.front());
      idx.back() = idx.back() + varRef(v);
      KILN_ASSIGN(std::vector<Stmt> stores, el.storeOutputs(values, idx));
      return threadPerItem(o, items.max / 4, c.at("threads"), forLoop(v, intImm(4), LoopKind::Vectorized, seq(std::move(stores))));
    }
    std::vector<Stmt> perShape;
    for (size_t n = 0; n < nests.size(); ++n) {
      KILN_ASSIGN(std::vector<Stmt> stores, el.storeOutputs(nests[n].second, unflatten(varRef(o), dims[n])));
      Stmt s = seq(std::move(stores));
      const bool guard = items.dynamic() ? nests.size() > 1 : counts[n].max < items.max;
      perShape.push_back(guard ? ifThen(binary(BinaryOp::Lt, varRef(o), counts[n].run), s) : s);
    }
    return threadPerItem(o, items, c.at("threads"), seq(std::move(perShape)));
  }
};

}  // namespace

const ScheduleTemplate& injectiveTemplate() {
  static const InjectiveTemplate t;
  return t;
}

}  // namespace kiln::codegen
