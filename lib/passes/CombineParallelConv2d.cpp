//===- lib/passes/CombineParallelConv2d.cpp - combine-parallel-conv2d -------===//
//
// Convolutions that read the same input with the same geometry become one
// convolution with more output channels:
//   y_i = Conv(x, W_i [, b_i])  (i = 1..n; W_i constant [C_i, Cin, kh, kw])
//   ->  y = Conv(x, [W_1; ..; W_n] [, [b_1; ..; b_n]]);  y_1..y_n = Split(y, axis 1)
// (ResNet's first bottleneck block: the 1x1 reduction and the 1x1 shortcut
// projection). Branches combine only with equal attributes (strides, pads,
// dilations, group 1, auto_pad), equal kernel shape and dtype, and all or
// none with a constant bias. Each output channel is the same dot product as
// before: exact. Option min-branches (default 2). Option channel-multiple
// (default 8): only branches whose output channels are a multiple of it
// combine, so the Split cuts at aligned channel offsets and the merged conv
// keeps a channel block for alter-op-layout (the block of the parts' common
// divisor). Without it resnet_tiny's 4- and 16-channel branches merged into
// a 20-channel conv no block divides, which stayed unblocked along with the
// transforms around it: 5..7% slower than not combining (docs/pass-selection.md).
//
//===----------------------------------------------------------------------===//
#include <map>

#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

constexpr int64_t kDefaultChannelMultiple = 8;

bool combinable(const ir::Node* n, const ir::Value* x, int64_t channelMultiple) {
  if (!isOp(n, ir::Op::Conv) || n->input(0) != x || n->getInt("group") != 1) return false;
  const Tensor* w = constantValue(n->input(1));
  if (!w || w->rank() < 3 || w->dim(0) % channelMultiple != 0) return false;
  return !n->hasInput(2) || constantValue(n->input(2));
}

/// Branches of one key: attributes as text, kernel dims past the first, dtype, bias.
std::string keyOf(const ir::Node& n) {
  const Tensor& w = *constantValue(n.input(1));
  std::string key = std::string(dtypeName(w.dtype())) + (n.hasInput(2) ? "+bias" : "");
  for (int64_t d = 1; d < w.rank(); ++d) key += "," + std::to_string(w.dim(d));
  for (const auto& [name, attr] : n.attributes()) {
    if (attr.kind() == ir::AttrKind::Ints) {
      key += ";" + name + "=";
      for (int64_t v : attr.ints()) key += std::to_string(v) + ",";
    } else if (attr.kind() == ir::AttrKind::Int) {
      key += ";" + name + "=" + std::to_string(attr.i());
    } else if (attr.kind() == ir::AttrKind::String) {
      key += ";" + name + "=" + attr.s();
    } else {
      key += ";" + name + "=?" + std::to_string(reinterpret_cast<uintptr_t>(&n));  // never equal
    }
  }
  return key;
}

std::vector<std::vector<ir::Node*>> groupsFor(const ir::Value* x, int64_t minBranches, int64_t channelMultiple) {
  std::map<std::string, std::vector<ir::Node*>> groups;
  for (const ir::Use& u : x->uses())
    if (!u.isGraphOutput() && u.index == 0 && combinable(u.user, x, channelMultiple))
      groups[keyOf(*u.user)].push_back(u.user);
  std::vector<std::vector<ir::Node*>> out;
  for (auto& [key, convs] : groups)
    if (int64_t(convs.size()) >= minBranches) out.push_back(std::move(convs));
  return out;
}

using GroupFinder = std::function<std::vector<std::vector<ir::Node*>>(const ir::Value*)>;

/// groupsFor with the pass's options, or the error of a bad one.
Expected<GroupFinder> groupFinder(const PassOptions& o) {
  int64_t minBranches = o.getInt("min-branches"), multiple = o.getInt("channel-multiple");
  if (minBranches < 2) return Error(ErrorCode::InvalidArgument, "combine-parallel-conv2d: min-branches must be >= 2");
  if (multiple < 1) return Error(ErrorCode::InvalidArgument, "combine-parallel-conv2d: channel-multiple must be >= 1");
  return GroupFinder([minBranches, multiple](const ir::Value* x) { return groupsFor(x, minBranches, multiple); });
}

Status combine(ir::Graph& g, ir::Value* x, const std::vector<ir::Node*>& convs) {
  ir::Node* first = earliestNode(convs);
  std::vector<const Tensor*> ws, bs;
  std::vector<int64_t> widths;
  for (ir::Node* c : convs) {
    ws.push_back(constantValue(c->input(1)));
    if (c->hasInput(2)) bs.push_back(constantValue(c->input(2)));
    widths.push_back(ws.back()->dim(0));
  }
  std::string base = nameBase(*first) + "_combined";
  std::vector<ir::Value*> operands{x, makeConstant(g, concatenated(ws, 0), base + "_weights", first)};
  if (!bs.empty()) operands.push_back(makeConstant(g, concatenated(bs, 0), base + "_bias", first));
  KILN_ASSIGN(ir::Node * conv, createTypedNode(g, "Conv", operands, first->attributes(), base, first));
  ir::Value* sizes = makeConstant(g, Tensor::fromVector<int64_t>({int64_t(widths.size())}, widths), base + "_split", first);
  KILN_ASSIGN(ir::Node * split, createTypedNode(g, "Split", {conv->output(0), sizes}, {{"axis", int64_t(1)}},
                                                base + "_split", first, convs.size()));
  for (size_t i = 0; i < convs.size(); ++i) {
    replaceValue(convs[i]->output(0), split->output(i));
    eraseWithDeadProducers(convs[i]);
  }
  return Status::ok();
}

}  // namespace

PassInfo combineParallelConv2dPass() {
  PassInfo p;
  p.name = "combine-parallel-conv2d";
  p.summary = "Merge convolutions that share their input into one";
  p.description =
      "Combines Convs of one input with equal attributes, kernel shape and dtype (group 1, constant weights, all "
      "or none with a constant bias) into one Conv over concatenated weights followed by a Split on the channel "
      "axis. Only branches whose output channels are a multiple of channel-multiple combine (aligned Split "
      "offsets; the merged conv keeps a channel block for alter-op-layout). Exact.";
  p.classes = {"RN"};  // Table 4: CombineParallelConv2D is RN
  p.optLevel = 3;
  p.options = {{"min-branches", PassOptionSpec::Kind::Int, "2", "fewest parallel branches worth combining"},
               {"channel-multiple", PassOptionSpec::Kind::Int, std::to_string(kDefaultChannelMultiple),
                "combine only branches whose output channels are a multiple of this (1: any)"}};
  p.applicable = [](const ir::Graph& g, const PassOptions& o) {
    Expected<GroupFinder> finder = groupFinder(o);
    return !finder || anyParallelGroup<std::vector<ir::Node*>>(g, *finder);  // run reports a bad option
  };
  p.run = [](ir::Graph& g, const PassOptions& o, const PassContext&) -> Expected<bool> {
    KILN_ASSIGN(GroupFinder finder, groupFinder(o));
    return combineParallelGroups<std::vector<ir::Node*>>(g, finder, combine);
  };
  return p;
}

}  // namespace kiln::passes
