//===- lib/codegen/LibraryTactics.cpp - Kernel groups as library calls ----===//
//
// See kiln/codegen/LibraryTactics.h. A group matches when its ops, Constant
// producers aside, are the anchor, then at most an Add of a bias (one value
// per output column, read from outside the group), then at most a Relu, and
// the last of them is the group's one output. A MatMul's batch dims either
// fold into its rows (B is a matrix) or match B's exactly (strided batch);
// Gemm takes transA/transB, alpha, and C as the bias when it is a row vector
// added with beta 1.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/LibraryTactics.h"

#include <algorithm>

#include "TensorExpr.h"

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

bool libraryType(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

/// Fills the call's shape from the anchor's operands; false when cuBLASLt's strided batch cannot express it.
bool shapeCall(const ir::Node& anchor, runtime::LibraryCall& call) {
  Expected<Dims> a = staticDims(anchor.input(0)), b = staticDims(anchor.input(1));
  if (!a || !b || a->size() < 2 || b->size() < 2) return false;
  if (anchor.opType() == "Gemm") {
    if (a->size() != 2 || b->size() != 2) return false;
    call.transA = anchor.hasAttr("transA") && anchor.getInt("transA");
    call.transB = anchor.hasAttr("transB") && anchor.getInt("transB");
    call.m = call.transA ? (*a)[1] : (*a)[0];
    call.k = call.transA ? (*a)[0] : (*a)[1];
    call.n = call.transB ? (*b)[0] : (*b)[1];
    call.alpha = anchor.hasAttr("alpha") ? anchor.getFloat("alpha") : 1.0f;
    return true;
  }
  call.k = a->back();
  call.n = b->back();
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

}  // namespace

Expected<LibraryTactics> parseLibraryTactics(const std::string& text) {
  if (text == "off") return LibraryTactics::Off;
  if (text == "auto") return LibraryTactics::Auto;
  if (text == "all") return LibraryTactics::All;
  return makeError(ErrorCode::InvalidArgument, "library tactics '", text, "': expected off, auto or all");
}

std::optional<LibraryMatch> cublasLtCallFor(const KernelGroup& group, bool allowTf32) {
  const ir::Node* anchor = group.anchor;
  if (group.role != KernelRole::Matmul || !anchor || !anchor->domain().empty()) return std::nullopt;
  if (anchor->opType() != "MatMul" && anchor->opType() != "Gemm") return std::nullopt;
  if (group.outputs.size() != 1 || !anchor->output(0)->type().isTensor()) return std::nullopt;
  LibraryMatch match;
  runtime::LibraryCall& call = match.call;
  call.dtype = anchor->output(0)->tensorType().dtype();
  call.allowTf32 = allowTf32;
  for (size_t i = 0; i < anchor->numInputs(); ++i) {
    const ir::Value* v = anchor->input(i);
    if (v && (!v->type().isTensor() || v->tensorType().dtype() != call.dtype)) return std::nullopt;
  }
  if (!libraryType(call.dtype) || !shapeCall(*anchor, call)) return std::nullopt;
  const ir::Value* bias = nullptr;
  if (anchor->opType() == "Gemm" && anchor->numInputs() > 2 && anchor->input(2)) {
    float beta = anchor->hasAttr("beta") ? anchor->getFloat("beta") : 1.0f;
    if (beta != 1.0f || !isColumnVector(anchor->input(2), call.n)) return std::nullopt;
    bias = anchor->input(2);
  }
  // The epilogue: the nodes after the anchor, Constants aside, as a chain.
  const ir::Value* last = anchor->output(0);
  bool relu = false;
  for (const ir::Node* n : group.nodes) {
    if (n == anchor || n->opType() == "Constant") continue;
    if (!n->domain().empty() || relu || n->numOutputs() != 1) return std::nullopt;
    if (n->opType() == "Relu" && n->input(0) == last) {
      relu = true;
    } else if (n->opType() == "Add" && !bias && n->numInputs() == 2 && (n->input(0) == last || n->input(1) == last)) {
      const ir::Value* other = n->input(0) == last ? n->input(1) : n->input(0);
      const ir::Node* producer = other->producer();
      bool inside = producer && producer->opType() != "Constant" &&
                    std::find(group.nodes.begin(), group.nodes.end(), producer) != group.nodes.end();
      if (inside || !other->type().isTensor() || other->tensorType().dtype() != call.dtype || !isColumnVector(other, call.n))
        return std::nullopt;
      bias = other;
    } else {
      return std::nullopt;
    }
    last = n->output(0);
  }
  if (group.outputs[0] != last) return std::nullopt;
  Expected<Dims> out = staticDims(last);
  if (!out || productOf(*out, 0, out->size()) != call.batch * call.m * call.n) return std::nullopt;
  call.epilogue = bias ? (relu ? runtime::LibraryEpilogue::BiasRelu : runtime::LibraryEpilogue::Bias)
                       : (relu ? runtime::LibraryEpilogue::Relu : runtime::LibraryEpilogue::None);
  call.name = "l" + group.name().substr(1);
  match.operands = {anchor->input(0), anchor->input(1)};
  if (bias) match.operands.push_back(bias);
  match.operands.push_back(last);
  return match;
}

bool useLibrary(LibraryTactics tactics, const LibraryMatch& match) {
  const runtime::LibraryCall& c = match.call;
  if (tactics == LibraryTactics::All) return true;
  return tactics == LibraryTactics::Auto && 2.0 * double(c.batch) * double(c.m) * double(c.n) * double(c.k) >= kLibraryMinFlops;
}

}  // namespace kiln::codegen
