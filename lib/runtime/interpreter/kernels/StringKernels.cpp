//===- lib/runtime/interpreter/kernels/StringKernels.cpp - String ops ------===//
//
// Kernels of the ops in lib/ir/ops/StringOps.cpp. String tensors are i64
// tensors of ids into the string pool: a kernel reads the strings behind its
// operands' ids, computes, and interns what it makes. Where ONNX leaves a
// detail open, the kernels do what ONNX Runtime does (number formats, what
// Cast reads from a string, a StringNormalizer that removes every string).
//
//===----------------------------------------------------------------------===//
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cwctype>
#include <locale.h>
#include <re2/re2.h>
#include <string>
#include <unordered_set>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"
#include "kiln/support/StringPool.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Writes `strings` as result i (interned) with `dims`.
Status setStrings(KernelContext& ctx, size_t i, const Dims& dims, const std::vector<std::string>& strings) {
  KILN_ASSIGN(Tensor t, stringTensor(dims, strings));
  ctx.setOutput(i, RuntimeValue(std::move(t)));
  return Status::ok();
}

//===-- Case changes over UTF-8 ------------------------------------------===//

/// The C.UTF-8 locale's character classes (Unicode case mappings), or null
/// where the C library lacks it (then only ASCII letters change case).
locale_t utf8Locale() {
  static locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
  return loc;
}

enum class CaseChange { None, Lower, Upper };

Expected<std::string> changeCase(std::string_view s, CaseChange change) {
  if (change == CaseChange::None) return std::string(s);
  std::optional<std::u32string> cps = decodeUtf8(s);
  if (!cps) return kernelError("a string is not valid UTF-8, so its case cannot change");
  locale_t loc = utf8Locale();
  for (char32_t& c : *cps) {
    const auto w = wint_t(c);
    if (loc) c = char32_t(change == CaseChange::Lower ? towlower_l(w, loc) : towupper_l(w, loc));
    else if (c < 0x80) c = char32_t(change == CaseChange::Lower ? std::tolower(int(c)) : std::toupper(int(c)));
  }
  return encodeUtf8(*cps);
}

//===-- StringNormalizer --------------------------------------------------===//

Status kStringNormalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string& action = ctx.node().getString("case_change_action");
  const CaseChange change = action == "LOWER"   ? CaseChange::Lower
                            : action == "UPPER" ? CaseChange::Upper
                                                : CaseChange::None;
  if (change == CaseChange::None && action != "NONE")
    return kernelError("case_change_action '" + action + "' is not LOWER, UPPER or NONE");
  const bool caseSensitive = ctx.node().getInt("is_case_sensitive") != 0;
  std::unordered_set<std::string> stops;
  for (const std::string& w : ctx.node().getStrings("stopwords")) {
    KILN_ASSIGN(std::string key, changeCase(w, caseSensitive ? CaseChange::None : CaseChange::Lower));
    stops.insert(std::move(key));
  }
  KILN_ASSIGN(std::vector<std::string> in, tensorStrings(x));
  std::vector<std::string> kept;
  for (const std::string& s : in) {
    if (!stops.empty()) {
      KILN_ASSIGN(std::string key, changeCase(s, caseSensitive ? CaseChange::None : CaseChange::Lower));
      if (stops.count(key)) continue;
    }
    KILN_ASSIGN(std::string changed, changeCase(s, change));
    kept.push_back(std::move(changed));
  }
  if (kept.empty()) kept.emplace_back();  // removing every string leaves one empty string
  Dims dims = x.dims();
  dims.back() = int64_t(kept.size());
  return setStrings(ctx, 0, dims, kept);
}

//===-- StringConcat, StringSplit, RegexFullMatch ------------------------===//

Status kStringConcat(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &y = ctx.input(1);
  KILN_ASSIGN(Dims dims, ir::broadcastDims(x.dims(), y.dims()));
  KILN_ASSIGN(std::vector<std::string> xs, tensorStrings(x));
  KILN_ASSIGN(std::vector<std::string> ys, tensorStrings(y));
  std::vector<std::string> out(size_t(numElements(dims)));
  forEachBroadcast<2>(dims, {broadcastStrides(x.dims(), dims), broadcastStrides(y.dims(), dims)},
                      [&](int64_t o, const std::array<int64_t, 2>& p) {
                        out[size_t(o)] = xs[size_t(p[0])] + ys[size_t(p[1])];
                      });
  return setStrings(ctx, 0, dims, out);
}

/// Runs of spaces separate, none at either end, like Python's str.split()
/// but on ' ' alone: ONNX Runtime keeps tabs and newlines inside pieces.
std::vector<std::string> splitOnSpaces(const std::string& s, int64_t maxSplits) {
  std::vector<std::string> pieces;
  auto space = [](char c) { return c == ' '; };
  size_t i = 0;
  while (true) {
    while (i < s.size() && space(s[i])) ++i;
    if (i == s.size()) break;
    if (maxSplits >= 0 && int64_t(pieces.size()) == maxSplits) {
      size_t end = s.size();
      while (end > i && space(s[end - 1])) --end;
      pieces.push_back(s.substr(i, end - i));
      break;
    }
    size_t j = i;
    while (j < s.size() && !space(s[j])) ++j;
    pieces.push_back(s.substr(i, j - i));
    i = j;
  }
  return pieces;
}

/// Python's str.split(delimiter, maxsplit): every occurrence separates, so
/// adjacent delimiters give empty pieces; but "" has no pieces (Python's has
/// one), as in ONNX Runtime.
std::vector<std::string> splitOn(const std::string& s, const std::string& delim, int64_t maxSplits) {
  std::vector<std::string> pieces;
  if (s.empty()) return pieces;
  size_t start = 0;
  while (maxSplits < 0 || int64_t(pieces.size()) < maxSplits) {
    size_t hit = s.find(delim, start);
    if (hit == std::string::npos) break;
    pieces.push_back(s.substr(start, hit - start));
    start = hit + delim.size();
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

Status kStringSplit(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string& delim = ctx.node().getString("delimiter");
  const int64_t maxSplits = ctx.node().hasAttr("maxsplit") ? ctx.node().getInt("maxsplit") : -1;
  KILN_ASSIGN(std::vector<std::string> in, tensorStrings(x));
  std::vector<std::vector<std::string>> split;
  size_t widest = 0;
  for (const std::string& s : in) {
    split.push_back(delim.empty() ? splitOnSpaces(s, maxSplits) : splitOn(s, delim, maxSplits));
    widest = std::max(widest, split.back().size());
  }
  Dims dims = x.dims();
  dims.push_back(int64_t(widest));
  std::vector<std::string> flat(in.size() * widest);
  Tensor& counts = ctx.allocate(1, DType::I64, x.dims());
  for (size_t i = 0; i < split.size(); ++i) {
    counts.mutableData<int64_t>()[i] = int64_t(split[i].size());
    for (size_t k = 0; k < split[i].size(); ++k) flat[i * widest + k] = std::move(split[i][k]);
  }
  return setStrings(ctx, 0, dims, flat);
}

Status kRegexFullMatch(KernelContext& ctx) {
  const std::string& pattern = ctx.node().getString("pattern");
  RE2::Options options;
  options.set_log_errors(false);
  RE2 re(pattern, options);
  if (!re.ok()) return kernelError("pattern '" + pattern + "' is not a valid RE2 expression: " + re.error());
  KILN_ASSIGN(std::vector<std::string> in, tensorStrings(ctx.input(0)));
  Tensor& y = ctx.allocate(0, DType::Bool, ctx.input(0).dims());
  for (size_t i = 0; i < in.size(); ++i) y.mutableData<bool>()[i] = RE2::FullMatch(in[i], re);
  return Status::ok();
}

//===-- Casts to and from strings ----------------------------------------===//

/// A float as ONNX Runtime writes it: "%.8g", with NaN, INF and -INF.
std::string formatFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

template <class I>
std::string integerText(I v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

Status kCastToString(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<std::string> out(size_t(x.numElements()));
  Status s = forAny(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, double>) out[i] = formatFloat(p[i]);
      else if constexpr (std::is_floating_point_v<T> || isHalfLike<T>) out[i] = formatFloat(double(float(p[i])));
      else if constexpr (std::is_same_v<T, bool>) out[i] = std::string(1, p[i] ? '1' : '0');
      else if constexpr (std::is_signed_v<T>) out[i] = integerText(int64_t(p[i]));
      else out[i] = integerText(uint64_t(p[i]));
    }
  });
  KILN_TRY(s);
  return setStrings(ctx, 0, x.dims(), out);
}

/// The number that C++'s stod (floats), stoll (signed integers) or stoull
/// (unsigned ones and bool) reads from the start of `s`, as ONNX Runtime
/// parses strings: leading whitespace skipped, trailing text ignored, an
/// error when no number starts the string or it is out of range.
template <class T>
Expected<T> parseNumber(const std::string& s) {
  try {
    if constexpr (std::is_floating_point_v<T> || isHalfLike<T>) {
      const double v = std::stod(s);
      if constexpr (std::is_same_v<T, double>) return v;
      else return T(float(v));
    } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      const unsigned long long v = std::stoull(s);
      if constexpr (std::is_same_v<T, bool>) return v != 0;
      else return T(v);
    } else {
      return T(std::stoll(s));
    }
  } catch (const std::exception&) {
    return kernelError("string '" + s + "' does not start with a number in range for " + dtypeName(dtypeOf<T>()));
  }
}

Status kCastFromString(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN(std::vector<std::string> in, tensorStrings(x));
  Tensor& y = ctx.allocate(0);
  return dispatchDType(y.dtype(), [&]<class T>() -> Status {
    T* out = y.mutableData<T>();
    for (size_t i = 0; i < in.size(); ++i) {
      KILN_ASSIGN(out[i], parseNumber<T>(in[i]));
    }
    return Status::ok();
  });
}

}  // namespace

void registerStringKernels(KernelRegistry& r) {
  r.add("StringNormalizer", kStringNormalizer);
  r.add("kiln::StringConcat", kStringConcat);
  r.add("kiln::StringSplit", kStringSplit);
  r.add("kiln::RegexFullMatch", kRegexFullMatch);
  r.add("kiln::CastToString", kCastToString);
  r.add("kiln::CastFromString", kCastFromString);
}

}  // namespace kiln::runtime
