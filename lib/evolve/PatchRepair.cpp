//===- lib/evolve/PatchRepair.cpp - A value made to fit another place ------===//
//
// See PatchRepair.h.
//
//===----------------------------------------------------------------------===//
#include "PatchRepair.h"

#include "RewriteUtils.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/support/Tensor.h"

namespace kiln::evolve {

namespace {

constexpr const char* kRepairPrefix = "evolve";

/// Adds one repair step after another, keeping count of the nodes it adds.
class RepairBuilder {
 public:
  RepairBuilder(ir::Node* before, std::string base) : g_(*before->graph()), before_(before), base_(std::move(base)) {}

  ir::Value* ints(const std::vector<int64_t>& v) {
    ++nodes_;
    return passes::makeConstant(g_, Tensor::fromVector<int64_t>({int64_t(v.size())}, v), base_ + "_repair_c", before_);
  }

  Expected<ir::Value*> step(const std::string& op, std::vector<ir::Value*> inputs) {
    KILN_ASSIGN(ir::Node * n, passes::createTypedNode(g_, op, inputs, {}, base_ + "_repair", before_));
    ++nodes_;
    how_ += how_.empty() ? op : ", " + op;
    return n->output(0);
  }

  Expected<ir::Value*> reshape(ir::Value* x, const Dims& dims) { return step("Reshape", {x, ints(dims)}); }

  ir::Value* one(DType dtype) {
    ++nodes_;
    return passes::makeConstant(g_, Tensor::scalar<float>(1.0f).castTo(dtype), base_ + "_repair_one", before_);
  }

  Repaired done(ir::Value* v) const { return {v, how_, nodes_}; }

 private:
  ir::Graph& g_;
  ir::Node* before_;
  std::string base_;
  std::string how_;
  int nodes_ = 0;
};

/// Cuts the leading axes of `x` beyond `rank` to their first element and
/// drops them, or adds leading axes of size 1 up to `rank`.
Expected<ir::Value*> matchRank(RepairBuilder& b, ir::Value* x, int64_t rank) {
  const Dims dims = x->tensorType().dims();
  const int64_t extra = int64_t(dims.size()) - rank;
  if (extra == 0) return x;
  if (extra < 0) {
    Dims grown(size_t(-extra), 1);
    grown.insert(grown.end(), dims.begin(), dims.end());
    return b.reshape(x, grown);
  }
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < extra; ++a)
    if (dims[size_t(a)] != 1) axes.push_back(a);
  if (!axes.empty()) {
    KILN_ASSIGN(x, b.step("Slice", {x, b.ints(std::vector<int64_t>(axes.size(), 0)),
                                    b.ints(std::vector<int64_t>(axes.size(), 1)), b.ints(axes)}));
  }
  return b.reshape(x, Dims(dims.begin() + extra, dims.end()));
}

/// Slices each axis of `x` longer than `target`'s from its start.
Expected<ir::Value*> shrink(RepairBuilder& b, ir::Value* x, const Dims& target) {
  std::vector<int64_t> axes, ends;
  for (size_t a = 0; a < target.size(); ++a)
    if (x->tensorType().dim(int64_t(a)) > target[a]) axes.push_back(int64_t(a)), ends.push_back(target[a]);
  if (axes.empty()) return x;
  return b.step("Slice", {x, b.ints(std::vector<int64_t>(axes.size(), 0)), b.ints(ends), b.ints(axes)});
}

/// Pads each axis of `x` shorter than `target`'s with 1 at its end.
Expected<ir::Value*> grow(RepairBuilder& b, ir::Value* x, const Dims& target) {
  const size_t rank = target.size();
  std::vector<int64_t> pads(2 * rank, 0);
  bool any = false;
  for (size_t a = 0; a < rank; ++a) {
    const int64_t d = x->tensorType().dim(int64_t(a));
    if (d < target[a]) pads[rank + a] = target[a] - d, any = true;
  }
  if (!any) return x;
  return b.step("Pad", {x, b.ints(pads), b.one(x->tensorType().dtype())});
}

}  // namespace

bool isRepairValue(const ir::Value& value) {
  return value.name().rfind(kRepairPrefix, 0) == 0 && value.name().find("_repair") != std::string::npos;
}

Expected<Repaired> repairToType(ir::Value* value, const ir::TensorType& target, ir::Node* before,
                                size_t editIndex) {
  if (!value->type().isTensor() || !value->tensorType().isStatic() || !target.isStatic())
    return makeError(ErrorCode::PatchFormat, "'", value->name(), "' (", value->type().str(), ") cannot stand for a ",
                     target.str(), ": both must be tensors of static shape");
  const ir::TensorType& from = value->tensorType();
  if (from.dtype() != target.dtype())
    return makeError(ErrorCode::PatchFormat, "'", value->name(), "' (", from.str(), ") cannot stand for a ",
                     target.str(), ": the element types differ");
  RepairBuilder b(before, kRepairPrefix + std::to_string(editIndex));
  if (from.dims() == target.dims()) return b.done(value);
  KILN_ASSIGN(ir::Value * x, matchRank(b, value, target.rank()));
  KILN_ASSIGN(x, shrink(b, x, target.dims()));
  KILN_ASSIGN(x, grow(b, x, target.dims()));
  return b.done(x);
}

}  // namespace kiln::evolve
