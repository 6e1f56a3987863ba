//===- lib/passes/FoldExplicitPadding.cpp - fold-explicit-padding -----------===//
//
// A zero-valued constant-mode Pad over only the spatial dims, feeding a Conv
// or an AveragePool that counts padding (count_include_pad=1, no ceil_mode), becomes the
// op's own padding: Conv(Pad(x)) -> Conv(x) with pads increased. The window
// sees exactly the same elements, so results are identical; the padded copy
// of x is never materialised. Pads with auto_pad set, negative pads (crops),
// other modes or values, and Pads with other users are left alone.
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// The Pad's spatial pads [b1..bk, e1..ek] when it can fold into `user`.
std::optional<std::vector<int64_t>> foldablePads(const ir::Node& pad, const ir::Node& user) {
  if (pad.getString("mode") != "constant" || (pad.hasInput(2) && !isConstantFilledWith(pad.input(2), 0)))
    return std::nullopt;
  const Tensor* pads = constantValue(pad.input(1));
  if (!pads || !pad.input(0)->type().isTensor() || !pad.input(0)->tensorType().hasRank()) return std::nullopt;
  int64_t rank = pad.input(0)->tensorType().rank();
  std::vector<int64_t> p = pads->toInt64s();
  if (rank < 3 || int64_t(p.size()) != 2 * rank) return std::nullopt;
  if (p[0] || p[1] || p[size_t(rank)] || p[size_t(rank + 1)]) return std::nullopt;  // batch and channel dims
  for (int64_t v : p)
    if (v < 0) return std::nullopt;
  bool convLike = isOp(&user, ir::Op::Conv) || (isOp(&user, ir::Op::AveragePool) && user.getInt("count_include_pad") == 1 &&
                                                  user.getInt("ceil_mode") == 0);
  if (!convLike || user.input(0) != pad.output(0) || user.getString("auto_pad") != "NOTSET") return std::nullopt;
  std::vector<int64_t> spatial;
  for (int64_t i = 2; i < rank; ++i) spatial.push_back(p[size_t(i)]);
  for (int64_t i = 2; i < rank; ++i) spatial.push_back(p[size_t(rank + i)]);
  return spatial;
}

ir::Node* foldableUser(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Pad)) return nullptr;
  ir::Node* user = soleUser(n.output(0));
  return user && foldablePads(n, *user) ? user : nullptr;
}

/// Pad(x) read only by a Conv or AveragePool -> the pads added to its own.
class FoldPadIntoUser final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return foldableUser(n) != nullptr; }
  Status rewrite(ir::Node& n) const override {
    foldInto(&n, foldableUser(n));
    return Status::ok();
  }

 private:
  static void foldInto(ir::Node* n, ir::Node* user) {
    std::vector<int64_t> extra = *foldablePads(*n, *user);
  std::vector<int64_t> pads = user->hasAttr("pads") ? user->getInts("pads") : std::vector<int64_t>(extra.size(), 0);
  for (size_t i = 0; i < pads.size(); ++i) pads[i] += extra[i];
  user->setAttr("pads", pads);
  user->setInput(0, n->input(0));
  eraseWithDeadProducers(n);
  }
};

}  // namespace

PassInfo foldExplicitPaddingPass() {
  PassInfo p;
  p.name = "fold-explicit-padding";
  p.summary = "Fold a zero Pad into the Conv or AveragePool after it";
  p.description =
      "Merges a constant-mode, zero-valued Pad of the spatial dims into the pads of the Conv (or AveragePool "
      "with count_include_pad=1) that is its only user. Exact.";
  p.classes = {"BL", "RN", "SSD"};  // Table 4: FoldExplicitPadding is RN; SSD; in kiln's -O3 (BL)
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<FoldPadIntoUser>()});
  return p;
}

}  // namespace kiln::passes
