//===- lib/ir/ops/RecurrentOps.cpp - RNN, GRU and LSTM ---------------------===//
//
// The ONNX recurrent layers (forward, reverse or bidirectional; both layouts).
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status inferRecurrent(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2, 3, 5, 6, 7}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  KILN_TRY(requireRank(x, 3, "X"));
  KILN_TRY(requireRank(w, 3, "W"));
  const Node& n = ctx.node();
  const std::string& dir = n.getString("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return attrError("direction must be forward, reverse or bidirectional, got '" + dir + "'");
  int64_t numDir = dir == "bidirectional" ? 2 : 1;
  int64_t gates = n.op() == ir::Op::LSTM ? 4 : n.op() == ir::Op::GRU ? 3 : 1;
  int64_t hidden = kUnknownDim;
  if (n.hasAttr("hidden_size")) hidden = n.getInt("hidden_size");
  else if (w.hasRank() && w.dim(1) >= 0) hidden = w.dim(1) / gates;
  if (w.hasRank() && w.dim(1) >= 0 && hidden >= 0 && w.dim(1) != gates * hidden)
    return shapeError("W " + w.str() + " does not hold " + std::to_string(gates) + " gates of hidden size " +
                      std::to_string(hidden));
  if (w.hasRank() && w.dim(0) >= 0 && w.dim(0) != numDir)
    return shapeError("W has " + std::to_string(w.dim(0)) + " directions, direction is " + dir);
  bool batchFirst = n.getInt("layout") != 0;
  int64_t seq = x.hasRank() ? x.dim(batchFirst ? 1 : 0) : kUnknownDim;
  int64_t batch = x.hasRank() ? x.dim(batchFirst ? 0 : 1) : kUnknownDim;
  if (ctx.numOutputs() > 0)
    setOut(ctx, 0, x.dtype(), batchFirst ? Dims{batch, seq, numDir, hidden} : Dims{seq, numDir, batch, hidden});
  for (size_t i = 1; i < ctx.numOutputs(); ++i)
    setOut(ctx, i, x.dtype(), batchFirst ? Dims{batch, numDir, hidden} : Dims{numDir, batch, hidden});
  return Status::ok();
}

SchemaBuilder recurrent(const char* name, int maxInputs, int maxOutputs, const char* doc) {
  std::vector<std::string> ins = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  ins.resize(static_cast<size_t>(maxInputs));
  std::vector<std::string> outs = {"Y", "Y_h", "Y_c"};
  outs.resize(static_cast<size_t>(maxOutputs));
  return std::move(SchemaBuilder(name).inputs(3, maxInputs, ins).outputs(0, maxOutputs, outs)
                       .attr("activation_alpha", std::vector<float>{}).attr("activation_beta", std::vector<float>{})
                       .attr("activations", std::vector<std::string>{}).optionalAttr("clip", AttrKind::Float)
                       .attr("direction", "forward").optionalAttr("hidden_size", AttrKind::Int).attr("layout", 0)
                       .pattern(FusionPattern::Opaque).infer(inferRecurrent).doc(doc));
}

}  // namespace

void registerRecurrentOps(OpRegistry& r) {
  r.add(recurrent("RNN", 6, 2, "Elman RNN: H = f(X W^T + H R^T + b) (default f = Tanh).").build());
  r.add(recurrent("GRU", 6, 2, "Gated recurrent unit (gates z, r, h; default Sigmoid, Tanh).")
            .attr("linear_before_reset", 0).build());
  r.add(recurrent("LSTM", 8, 3, "Long short-term memory (gates i, o, f, c; optional peepholes P).")
            .attr("input_forget", 0).build());
}

}  // namespace kiln::ir
