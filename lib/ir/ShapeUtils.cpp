//===- lib/ir/ShapeUtils.cpp - Broadcasting, axes, window geometry ---------===//
//
// Implementations of the shape arithmetic in ShapeUtils.h, following the ONNX
// specification (including auto_pad SAME_UPPER/SAME_LOWER/VALID and ceil_mode).
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/ShapeUtils.h"

#include <algorithm>
#include <map>

#include "kiln/ir/Node.h"

namespace kiln::ir {

Error shapeError(const std::string& message) { return Error(ErrorCode::ShapeMismatch, message); }
Error attrError(const std::string& message) { return Error(ErrorCode::BadAttribute, message); }

Status checkRank(int64_t rank, const std::string& what) {
  if (rank > kMaxRank)
    return shapeError(what + " has rank " + std::to_string(rank) + ", above kiln's limit of " + std::to_string(kMaxRank));
  return Status::ok();
}

Expected<Dims> broadcastDims(const Dims& a, const Dims& b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // the unknown one must be 1 or equal
      if (da < 0 && db < 0) out[i] = kUnknownDim;
    } else {
      return shapeError("shapes [" + dimsToString(a) + "] and [" + dimsToString(b) +
                        "] cannot be broadcast (dim " + std::to_string(da) + " vs " +
                        std::to_string(db) + ")");
    }
  }
  return out;
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0))
    return attrError(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                             const char* what) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return attrError(std::string(what) + " value " + std::to_string(a) +
                       " is out of range for rank " + std::to_string(rank));
    int64_t n = a < 0 ? a + rank : a;
    if (std::find(out.begin(), out.end(), n) != out.end())
      return attrError(std::string(what) + " repeats axis " + std::to_string(a));
    out.push_back(n);
  }
  return out;
}

/// The ints attribute `name` (which must have `count` values), or `count` copies of `fill`.
static Expected<Dims> intsOr(const Node& node, const char* name, int64_t fill, size_t count) {
  const Attribute* a = node.findAttr(name);
  if (!a || a->ints().empty()) return Dims(count, fill);
  if (a->ints().size() != count)
    return attrError(std::string(name) + " has " + std::to_string(a->ints().size()) + " values, expected " +
                     std::to_string(count));
  return a->ints();
}

Expected<WindowGeometry> computeWindowGeometry(const Node& node, const Dims& in,
                                               const Dims& kernel, bool ceilMode) {
  size_t n = in.size();
  WindowGeometry g;
  g.kernel = kernel;
  auto listOr = [&](const char* name, int64_t fill, size_t count) { return intsOr(node, name, fill, count); };
  if (kernel.size() != n)
    return attrError("kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
                     std::to_string(n));
  for (int64_t k : kernel)
    if (k <= 0) return attrError("kernel_shape values must be positive");
  KILN_ASSIGN(g.strides, listOr("strides", 1, n));
  KILN_ASSIGN(g.dilations, listOr("dilations", 1, n));
  KILN_ASSIGN(Dims pads, listOr("pads", 0, 2 * n));
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) return attrError("strides must be positive");
    if (g.dilations[i] <= 0) return attrError("dilations must be positive");
    if (pads[i] < 0 || pads[i + n] < 0) return attrError("pads must be non-negative");
  }
  std::string autoPad = node.hasAttr("auto_pad") ? node.getString("auto_pad") : "NOTSET";
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" && autoPad != "VALID")
    return attrError("auto_pad '" + autoPad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  g.padsBegin.assign(n, 0);
  g.padsEnd.assign(n, 0);
  g.output.assign(n, kUnknownDim);
  for (size_t i = 0; i < n; ++i) {
    int64_t effK = (kernel[i] - 1) * g.dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      if (in[i] < 0) continue;
      int64_t out = (in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + effK - in[i]);
      int64_t small = total / 2;
      g.padsBegin[i] = autoPad == "SAME_UPPER" ? small : total - small;
      g.padsEnd[i] = total - g.padsBegin[i];
      g.output[i] = out;
      continue;
    }
    if (autoPad == "NOTSET") {
      g.padsBegin[i] = pads[i];
      g.padsEnd[i] = pads[i + n];
    }
    if (in[i] < 0) continue;
    int64_t span = in[i] + g.padsBegin[i] + g.padsEnd[i] - effK;
    if (span < 0)
      return shapeError("window of extent " + std::to_string(effK) + " does not fit input dim " +
                        std::to_string(in[i]) + " with padding");
    int64_t out = ceilMode ? (span + g.strides[i] - 1) / g.strides[i] + 1 : span / g.strides[i] + 1;
    // With ceil_mode, the last window must start inside the input or left padding.
    if (ceilMode && (out - 1) * g.strides[i] >= in[i] + g.padsBegin[i]) --out;
    g.output[i] = out;
  }
  return g;
}

Expected<WindowGeometry> computeConvTransposeGeometry(const Node& node, const Dims& in,
                                                      const Dims& kernel) {
  size_t n = in.size();
  // Reuse the attribute checks of the forward geometry with auto_pad ignored.
  WindowGeometry g;
  g.kernel = kernel;
  auto listOr = [&](const char* name, int64_t fill, size_t count) { return intsOr(node, name, fill, count); };
  if (kernel.size() != n) return attrError("kernel rank does not match the input's spatial rank");
  KILN_ASSIGN(g.strides, listOr("strides", 1, n));
  KILN_ASSIGN(g.dilations, listOr("dilations", 1, n));
  KILN_ASSIGN(Dims pads, listOr("pads", 0, 2 * n));
  KILN_ASSIGN(Dims outputPadding, listOr("output_padding", 0, n));
  const Attribute* outputShape = node.findAttr("output_shape");
  std::string autoPad = node.hasAttr("auto_pad") ? node.getString("auto_pad") : "NOTSET";
  g.padsBegin.assign(n, 0);
  g.padsEnd.assign(n, 0);
  g.output.assign(n, kUnknownDim);
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || kernel[i] <= 0)
      return attrError("strides, dilations and kernel dims must be positive");
    int64_t effK = (kernel[i] - 1) * g.dilations[i] + 1;
    if (in[i] < 0) continue;
    int64_t full = g.strides[i] * (in[i] - 1) + outputPadding[i] + effK;
    if (outputShape && !outputShape->ints().empty()) {
      const auto& os = outputShape->ints();
      int64_t target = os.size() == n ? os[i] : (os.size() == n + 2 ? os[i + 2] : -1);
      if (target < 0) return attrError("output_shape must list the spatial dims");
      int64_t total = full - target;
      if (total < 0) total = 0;
      // The ONNX spec (and ONNX Runtime): an odd total pads the begin more, except under SAME_UPPER.
      bool upper = autoPad == "SAME_UPPER";
      g.padsBegin[i] = upper ? total / 2 : total - total / 2;
      g.padsEnd[i] = total - g.padsBegin[i];
      g.output[i] = target;
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t target = in[i] * g.strides[i];
      int64_t total = std::max<int64_t>(0, full - target);
      g.padsBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padsEnd[i] = total - g.padsBegin[i];
      g.output[i] = target;
    } else {
      if (autoPad == "NOTSET") {
        g.padsBegin[i] = pads[i];
        g.padsEnd[i] = pads[i + n];
      }
      g.output[i] = full - g.padsBegin[i] - g.padsEnd[i];
      if (g.output[i] <= 0) return shapeError("ConvTranspose output dim would be non-positive");
    }
  }
  return g;
}

Expected<std::vector<SliceDim>> computeSlice(const Dims& in, const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends,
                                             const std::vector<int64_t>& axesIn,
                                             const std::vector<int64_t>& stepsIn) {
  int64_t rank = int64_t(in.size());
  if (starts.size() != ends.size())
    return shapeError("starts has " + std::to_string(starts.size()) + " values, ends has " + std::to_string(ends.size()));
  std::vector<int64_t> axes = axesIn;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  std::vector<int64_t> steps = stepsIn.empty() ? std::vector<int64_t>(starts.size(), 1) : stepsIn;
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return shapeError("starts, ends, axes and steps must have the same length");
  KILN_ASSIGN(std::vector<int64_t> norm, normalizeAxes(axes, rank));
  std::vector<SliceDim> out(in.size());
  for (size_t d = 0; d < in.size(); ++d) out[d] = {0, 1, in[d]};
  for (size_t i = 0; i < norm.size(); ++i) {
    int64_t dim = in[size_t(norm[i])], step = steps[i];
    if (step == 0) return shapeError("slice step must not be 0");
    if (dim == 0) {
      out[size_t(norm[i])] = {0, step, 0};
      continue;
    }
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start = start < -dim ? -1 : start + dim;  // avoid overflow near INT64_MIN
    if (end < 0) end = end < -dim ? -1 : end + dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    out[size_t(norm[i])] = {start, step, std::max<int64_t>(0, count)};
  }
  return out;
}

Expected<Dims> matmulDims(const Dims& a, const Dims& b) {
  if (a.empty() || b.empty()) return shapeError("MatMul operands must have rank >= 1");
  Dims aa = a.size() == 1 ? Dims{1, a[0]} : a;
  Dims bb = b.size() == 1 ? Dims{b[0], 1} : b;
  int64_t k1 = aa.back(), k2 = bb[bb.size() - 2];
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return shapeError("MatMul inner dims differ: [" + dimsToString(a) + "] x [" + dimsToString(b) + "]");
  Dims batchA(aa.begin(), aa.end() - 2), batchB(bb.begin(), bb.end() - 2);
  KILN_ASSIGN(Dims out, broadcastDims(batchA, batchB));
  if (a.size() > 1) out.push_back(aa[aa.size() - 2]);
  if (b.size() > 1) out.push_back(bb.back());
  return out;
}

namespace {
bool isEinsumLabel(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Splits a term into its letters before and after an optional "...";
/// anything else (a second ellipsis, stray dots, digits) is an error.
Status splitEinsumTerm(const std::string& term, const std::string& equation, std::string& before, std::string& after,
                       bool& hasEllipsis) {
  size_t e = term.find("...");
  hasEllipsis = e != std::string::npos;
  before = hasEllipsis ? term.substr(0, e) : term;
  after = hasEllipsis ? term.substr(e + 3) : "";
  for (char c : before + after)
    if (!isEinsumLabel(c))
      return attrError("equation '" + equation + "' has invalid label '" + std::string(1, c) +
                       "' (labels are letters; at most one '...' per term)");
  return Status::ok();
}
}  // namespace

Expected<EinsumSpec> parseEinsum(const std::string& equation, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  auto arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return attrError("equation '" + equation + "' has " + std::to_string(terms.size()) + " operands, node has " +
                     std::to_string(ranks.size()));
  // Ellipsis dims get the labels '0'.. '9', right-aligned so they broadcast.
  auto ellipsisLabels = [](int64_t n) {
    std::string ell;
    for (int64_t k = 0; k < n; ++k) ell += char('0' + (10 - n + k));
    return ell;
  };
  EinsumSpec spec;
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string before, after;
    bool hasEllipsis = false;
    KILN_TRY(splitEinsumTerm(terms[i], equation, before, after, hasEllipsis));
    int64_t named = int64_t(before.size() + after.size());
    if (!hasEllipsis && named != ranks[i])
      return shapeError("operand " + std::to_string(i) + " of rank " + std::to_string(ranks[i]) + " has " +
                        std::to_string(named) + " labels in '" + equation + "'");
    int64_t n = hasEllipsis ? ranks[i] - named : 0;
    if (n < 0) return shapeError("operand " + std::to_string(i) + " has fewer dims than labels");
    if (n > 10) return shapeError("too many ellipsis dims");
    ellipsisRank = std::max(ellipsisRank, n);
    spec.inputs.push_back(before + ellipsisLabels(n) + after);
  }
  if (arrow != std::string::npos) {
    std::string before, after;
    bool hasEllipsis = false;
    KILN_TRY(splitEinsumTerm(eq.substr(arrow + 2), equation, before, after, hasEllipsis));
    std::string rhs = before + (hasEllipsis ? ellipsisLabels(ellipsisRank) : "") + after;
    for (size_t i = 0; i < rhs.size(); ++i) {
      bool found = false;
      for (const auto& in : spec.inputs) found |= in.find(rhs[i]) != std::string::npos;
      if (!found) return attrError("output label '" + std::string(1, rhs[i]) + "' does not appear in the inputs");
      if (rhs.find(rhs[i]) != i) return attrError("output label '" + std::string(1, rhs[i]) + "' appears twice");
    }
    spec.output = rhs;
  } else {
    // Implicit output: ellipsis dims then labels appearing exactly once, sorted.
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!isEinsumLabel(c)) continue;
      int count = 0;
      for (const auto& in : spec.inputs)
        for (char x : in) count += x == c;
      if (count == 1) once += c;
    }
    spec.output = ellipsisLabels(ellipsisRank) + once;
  }
  return spec;
}

Expected<Dims> einsumDims(const EinsumSpec& spec, const std::vector<Dims>& inputs) {
  std::map<char, int64_t> sizes;
  if (spec.inputs.size() != inputs.size()) return shapeError("einsum operand count does not match the equation");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& labels = spec.inputs[i];
    if (labels.size() != inputs[i].size()) return shapeError("einsum labels do not match operand " + std::to_string(i));
    for (size_t k = 0; k < labels.size(); ++k) {
      int64_t d = inputs[i][k];
      auto [it, inserted] = sizes.emplace(labels[k], d);
      if (inserted || d < 0) continue;
      bool broadcastLabel = labels[k] >= '0' && labels[k] <= '9';
      if (it->second < 0 || (broadcastLabel && it->second == 1)) it->second = d;
      else if (it->second != d && !(broadcastLabel && d == 1))
        return shapeError("einsum label '" + std::string(1, labels[k]) + "' has sizes " + std::to_string(it->second) +
                          " and " + std::to_string(d));
    }
  }
  Dims out;
  for (char c : spec.output) out.push_back(sizes.at(c));
  return out;
}

Expected<std::vector<int64_t>> shapeOperandValues(const Tensor& t, const char* what) {
  if (!isInteger(t.dtype()))
    return shapeError(std::string(what) + " must be an integer tensor, got " + t.typeString());
  if (t.rank() > 1) return shapeError(std::string(what) + " must be 1-D, got " + t.typeString());
  return t.toInt64s();
}

}  // namespace kiln::ir
