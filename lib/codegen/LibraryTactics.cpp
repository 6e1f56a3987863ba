//===- lib/codegen/LibraryTactics.cpp - Kernel groups as library calls ----===//
//
// See kiln/codegen/LibraryTactics.h. A group matches when its ops, Constant
// producers aside, are the anchor, then Adds of a bias (read from outside
// the group: one value per output column for a matmul, per channel for a
// convolution) and of a residual (the result's shape, from outside the
// group: BERT's attention output and FFN down projections), then at most a
// Relu, and the last of them is the group's one output. A MatMul's batch dims either fold into its rows (B is
// a matrix) or match B's exactly (strided batch); kiln::Dense is a MatMul with B a transposed matrix
// (its W [N, K]); Gemm takes transA/transB,
// alpha, and C as the bias when it is a row vector added with beta 1; Conv
// takes its own bias input as the bias.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/LibraryTactics.h"

#include <algorithm>
#include <functional>
#include <set>

#include "TensorExpr.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

int64_t productOf(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

/// Whether `v` holds one value per column of an n-column result: [n], or [1, ..., 1, n].
bool isColumnVector(const ir::Value* v, int64_t n) {
  Expected<Dims> dims = staticDims(v);
  if (!dims || dims->empty() || dims->back() != n) return false;
  return std::all_of(dims->begin(), dims->end() - 1, [](int64_t d) { return d == 1; });
}

/// Whether `v` holds one value per channel of an NCHW result with `c` channels: [c, 1, 1] or [1, c, 1, 1].
bool isChannelVector(const ir::Value* v, int64_t c) {
  Expected<Dims> dims = staticDims(v);
  return dims && (*dims == Dims{c, 1, 1} || *dims == Dims{1, c, 1, 1});
}

bool libraryType(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

/// Whether every tensor the anchor reads is of type `dtype`.
bool inputsOfType(const ir::Node& anchor, DType dtype) {
  for (size_t i = 0; i < anchor.numInputs(); ++i) {
    const ir::Value* v = anchor.input(i);
    if (v && (!v->type().isTensor() || v->tensorType().dtype() != dtype)) return false;
  }
  return true;
}

/// What follows the anchor in a group: Adds of a bias and (if allowed) a residual, then at most a Relu.
struct Epilogue {
  const ir::Value* bias = nullptr;
  const ir::Value* residual = nullptr;
  bool relu = false;
  runtime::LibraryEpilogue kind() const {
    return bias ? (relu ? runtime::LibraryEpilogue::BiasRelu : runtime::LibraryEpilogue::Bias)
                : (relu ? runtime::LibraryEpilogue::Relu : runtime::LibraryEpilogue::None);
  }
};

/// The group's epilogue after `anchor` (whose own bias, if any, is `bias`),
/// when it is one a library fuses and ends at the group's one output.
std::optional<Epilogue> epilogueOf(const KernelGroup& group, DType dtype, const ir::Value* bias,
                                   const std::function<bool(const ir::Value*)>& isBias, bool allowResidual) {
  const ir::Node* anchor = group.anchor;
  Epilogue e;
  e.bias = bias;
  Expected<Dims> resultDims = staticDims(anchor->output(0));
  const ir::Value* last = anchor->output(0);
  for (const ir::Node* n : group.nodes) {
    if (n == anchor || n->op() == ir::Op::Constant) continue;
    if (!n->domain().empty() || e.relu || n->numOutputs() != 1) return std::nullopt;
    if (n->op() == ir::Op::Relu && n->input(0) == last) {
      e.relu = true;
    } else if (n->op() == ir::Op::Add && n->numInputs() == 2 && (n->input(0) == last || n->input(1) == last)) {
      const ir::Value* other = n->input(0) == last ? n->input(1) : n->input(0);
      const ir::Node* producer = other->producer();
      bool inside = producer && producer->op() != ir::Op::Constant &&
                    std::find(group.nodes.begin(), group.nodes.end(), producer) != group.nodes.end();
      if (inside || other == last || !other->type().isTensor() || other->tensorType().dtype() != dtype) return std::nullopt;
      Expected<Dims> otherDims = staticDims(other);
      if (!e.bias && isBias(other)) {
        e.bias = other;
      } else if (allowResidual && !e.residual && resultDims && otherDims && *otherDims == *resultDims) {
        e.residual = other;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    last = n->output(0);
  }
  if (group.outputs.size() != 1 || group.outputs[0] != last) return std::nullopt;
  return e;
}

/// Fills the call's shape from the anchor's operands; false when cuBLASLt's strided batch cannot express it.
bool shapeMatmul(const ir::Node& anchor, runtime::LibraryCall& call) {
  Expected<Dims> a = staticDims(anchor.input(0)), b = staticDims(anchor.input(1));
  if (!a || !b || a->size() < 2 || b->size() < 2) return false;
  if (anchor.op() == ir::Op::Gemm) {
    if (a->size() != 2 || b->size() != 2) return false;
    call.transA = anchor.hasAttr("transA") && anchor.getInt("transA");
    call.transB = anchor.hasAttr("transB") && anchor.getInt("transB");
    call.m = call.transA ? (*a)[1] : (*a)[0];
    call.k = call.transA ? (*a)[0] : (*a)[1];
    call.n = call.transB ? (*b)[0] : (*b)[1];
    call.alpha = anchor.hasAttr("alpha") ? anchor.getFloat("alpha") : 1.0f;
    return true;
  }
  const bool dense = anchor.op() == ir::Op::KilnDense;  // a MatMul whose B is read transposed: W [N, K]
  if (dense && b->size() != 2) return false;
  call.transB = dense;
  call.k = a->back();
  call.n = dense ? (*b)[0] : b->back();
  if (b->size() == 2) {  // every row of every batch times one matrix
    call.m = productOf(*a, 0, a->size() - 1);
    call.batchB = false;
    return true;
  }
  if (a->size() != b->size() || !std::equal(a->begin(), a->end() - 2, b->begin())) return false;
  call.batch = productOf(*a, 0, a->size() - 2);
  call.m = (*a)[a->size() - 2];
  return true;
}

/// Fills the call's convolution geometry; false unless it is a 2-D NCHW one with symmetric padding.
bool shapeConv(const ir::Node& anchor, runtime::LibraryCall& call) {
  Expected<Dims> x = staticDims(anchor.input(0)), w = staticDims(anchor.input(1)), y = staticDims(anchor.output(0));
  if (!x || !w || !y || x->size() != 4 || w->size() != 4 || y->size() != 4) return false;
  Expected<ir::WindowGeometry> geo = ir::computeWindowGeometry(anchor, {(*x)[2], (*x)[3]}, {(*w)[2], (*w)[3]}, false);
  if (!geo || geo->padsBegin != geo->padsEnd) return false;  // cuDNN pads both sides alike
  runtime::ConvGeometry& g = call.conv;
  call.batch = (*x)[0];
  g.channels = (*x)[1], g.height = (*x)[2], g.width = (*x)[3];
  g.outChannels = (*w)[0], g.kernelH = (*w)[2], g.kernelW = (*w)[3];
  g.padH = geo->padsBegin[0], g.padW = geo->padsBegin[1];
  g.strideH = geo->strides[0], g.strideW = geo->strides[1];
  g.dilationH = geo->dilations[0], g.dilationW = geo->dilations[1];
  g.groups = anchor.hasAttr("group") ? anchor.getInt("group") : 1;
  return g.groups >= 1 && g.channels % g.groups == 0 && (*w)[1] * g.groups == g.channels &&
         *y == Dims{call.batch, g.outChannels, g.outHeight(), g.outWidth()};
}

/// The anchor if `group` is a one-output group anchored by one of `ops` in f32, f16 or bf16.
const ir::Node* libraryAnchor(const KernelGroup& group, KernelRole role, std::initializer_list<ir::Op> ops) {
  const ir::Node* anchor = group.anchor;
  if (group.role != role || !anchor || group.outputs.size() != 1) return nullptr;
  if (std::find(ops.begin(), ops.end(), anchor->op()) == ops.end()) return nullptr;
  if (!anchor->output(0)->type().isTensor()) return nullptr;
  DType dtype = anchor->output(0)->tensorType().dtype();
  return libraryType(dtype) && inputsOfType(*anchor, dtype) ? anchor : nullptr;
}

}  // namespace

Expected<LibraryTactics> parseLibraryTactics(const std::string& text) {
  if (text == "off") return LibraryTactics::Off;
  if (text == "auto") return LibraryTactics::Auto;
  if (text == "all") return LibraryTactics::All;
  return makeError(ErrorCode::InvalidArgument, "library tactics '", text, "': expected off, auto or all");
}

std::optional<LibraryMatch> cublasLtCallFor(const KernelGroup& group, bool allowTf32) {
  const ir::Node* anchor = libraryAnchor(group, KernelRole::Matmul, {ir::Op::MatMul, ir::Op::Gemm, ir::Op::KilnDense});
  if (!anchor) return std::nullopt;
  LibraryMatch match;
  runtime::LibraryCall& call = match.call;
  call.dtype = anchor->output(0)->tensorType().dtype();
  call.allowTf32 = allowTf32;
  if (!shapeMatmul(*anchor, call)) return std::nullopt;
  const ir::Value* gemmBias = nullptr;
  if (anchor->op() == ir::Op::Gemm && anchor->numInputs() > 2 && anchor->input(2)) {
    float beta = anchor->hasAttr("beta") ? anchor->getFloat("beta") : 1.0f;
    if (beta != 1.0f || !isColumnVector(anchor->input(2), call.n)) return std::nullopt;
    gemmBias = anchor->input(2);
  }
  std::optional<Epilogue> e =
      epilogueOf(group, call.dtype, gemmBias, [&](const ir::Value* v) { return isColumnVector(v, call.n); }, true);
  if (!e) return std::nullopt;
  Expected<Dims> out = staticDims(group.outputs[0]);
  if (!out || productOf(*out, 0, out->size()) != call.batch * call.m * call.n) return std::nullopt;
  call.epilogue = e->kind();
  call.residual = e->residual != nullptr;  // cuBLASLt's C, with beta 1
  call.name = "l" + group.name().substr(1);
  match.operands = {anchor->input(0), anchor->input(1)};
  if (e->bias) match.operands.push_back(e->bias);
  if (e->residual) match.operands.push_back(e->residual);
  match.operands.push_back(group.outputs[0]);
  return match;
}

std::optional<LibraryMatch> cudnnConvCallFor(const KernelGroup& group, bool allowTf32) {
  const ir::Node* anchor = libraryAnchor(group, KernelRole::Conv, {ir::Op::Conv});
  if (!anchor) return std::nullopt;
  LibraryMatch match;
  runtime::LibraryCall& call = match.call;
  call.routine = runtime::LibraryRoutine::CudnnConv;
  call.dtype = anchor->output(0)->tensorType().dtype();
  call.allowTf32 = allowTf32;
  if (!shapeConv(*anchor, call)) return std::nullopt;
  const ir::Value* convBias = anchor->numInputs() > 2 ? anchor->input(2) : nullptr;
  if (convBias) {
    Expected<Dims> b = staticDims(convBias);
    if (!b || *b != Dims{call.conv.outChannels}) return std::nullopt;
  }
  std::optional<Epilogue> e = epilogueOf(
      group, call.dtype, convBias, [&](const ir::Value* v) { return isChannelVector(v, call.conv.outChannels); }, true);
  if (!e) return std::nullopt;
  call.epilogue = e->kind();
  call.residual = e->residual != nullptr;
  call.name = "l" + group.name().substr(1);
  match.operands = {anchor->input(0), anchor->input(1)};
  if (e->bias) match.operands.push_back(e->bias);
  if (e->residual) match.operands.push_back(e->residual);
  match.operands.push_back(group.outputs[0]);
  return match;
}

std::optional<LibraryMatch> libraryCallFor(const KernelGroup& group, bool allowTf32) {
  if (group.role == KernelRole::Matmul) return cublasLtCallFor(group, allowTf32);
  if (group.role == KernelRole::Conv) return cudnnConvCallFor(group, allowTf32);
  return std::nullopt;
}

double libraryCallFlops(const runtime::LibraryCall& c) {
  if (c.routine == runtime::LibraryRoutine::CublasLtMatmul) return 2.0 * double(c.batch) * double(c.m) * double(c.n) * double(c.k);
  const runtime::ConvGeometry& g = c.conv;
  return 2.0 * double(c.batch) * double(g.outChannels) * double(g.outHeight()) * double(g.outWidth()) *
         double(g.channels / g.groups) * double(g.kernelH) * double(g.kernelW);
}

bool useLibrary(LibraryTactics tactics, const LibraryMatch& match) {
  const runtime::LibraryCall& c = match.call;
  if (tactics == LibraryTactics::All) return true;
  if (tactics != LibraryTactics::Auto) return false;
  const double flops = libraryCallFlops(c);
  if (c.routine == runtime::LibraryRoutine::CublasLtMatmul)
    return flops >= (c.batch > 1 ? kLibraryMinBatchedMatmulFlops : kLibraryMinMatmulFlops);
  const runtime::ConvGeometry& g = c.conv;
  if (g.groups != 1) return false;
  if (c.batch >= kLibraryThroughputBatch) return flops >= kLibraryMinFlops;
  const int64_t taps = g.kernelH * g.kernelW;
  if (flops < kLibraryMinSmallBatchConvFlops) return false;
  return g.channels * taps >= kLibraryMinSmallBatchConvReduction || (taps > 1 && flops >= kLibraryMinFlops) ||
         (c.dtype == DType::F32 && flops >= kLibraryMinSmallBatchF32ConvFlops);
}

std::optional<LibrarySplit> splitForLibrary(const FusionPlan& plan, const KernelGroup& group, LibraryTactics tactics,
                                           bool allowTf32) {
  if (tactics == LibraryTactics::Off || group.role != KernelRole::Matmul || !group.anchor) return std::nullopt;
  // The head: the product, then Adds and at most one Relu each reading the value before (epilogueOf checks the rest).
  std::set<const ir::Node*> inHead{group.anchor};
  ir::Value* last = group.anchor->output(0);
  for (ir::Node* n : group.nodes) {
    if (n == group.anchor || n->op() == ir::Op::Constant) continue;
    const bool relu = n->op() == ir::Op::Relu && n->input(0) == last;
    const bool add = n->op() == ir::Op::Add && n->numInputs() == 2 && (n->input(0) == last || n->input(1) == last);
    if ((!relu && !add) || n->numOutputs() != 1) break;
    inHead.insert(n);
    last = n->output(0);
    if (relu) break;
  }
  std::vector<ir::Node*> headNodes, tailNodes;
  for (ir::Node* n : group.nodes) (inHead.count(n) ? headNodes : tailNodes).push_back(n);
  if (std::all_of(tailNodes.begin(), tailNodes.end(), [](const ir::Node* n) { return n->op() == ir::Op::Constant; }))
    return std::nullopt;  // nothing after the head: the group fuses whole or not at all
  KernelGroup head = plan.makeGroup(group.id, std::move(headNodes));
  // The tail reads only the head's result, and computes every result of the group.
  if (head.outputs != std::vector<ir::Value*>{last}) return std::nullopt;
  for (ir::Value* v : group.outputs)
    if (inHead.count(v->producer())) return std::nullopt;
  KernelGroup tail = plan.makeGroup(group.id, std::move(tailNodes));
  std::optional<LibraryMatch> match = cublasLtCallFor(head, allowTf32);
  if (!match || !useLibrary(tactics, *match)) return std::nullopt;
  return LibrarySplit{std::move(*match), std::move(tail)};
}

}  // namespace kiln::codegen
