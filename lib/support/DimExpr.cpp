//===- lib/support/DimExpr.cpp - Integer expressions over dynamic dims ----===//
//
// Canonical polynomials over atoms (DimExpr.h). Every constructor returns the
// canonical form: terms with zero coefficients are dropped, monomials keep
// their atoms ordered by key, a floor division splits off the multiples of
// its divisor (floordiv(d * q + r, d) = q + floordiv(r, d), with r's
// coefficients reduced into [0, d)), and min/max of expressions whose
// difference is constant pick one of them.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/DimExpr.h"

#include <algorithm>
#include <iterator>

#include "kiln/support/StatusImpl.h"

namespace kiln {

struct DimExpr::Atom {
  enum class Kind : uint8_t { Symbol, FloorDiv, Min, Max };
  Kind kind = Kind::Symbol;
  std::string key;                ///< identity: unambiguous whatever the symbols' names
  std::string text;               ///< the symbol's name, or the printed form
  std::vector<DimExpr> operands;  ///< FloorDiv: the dividend; Min/Max: both sides
  int64_t divisor = 1;
};

namespace {

std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

int64_t floorDivide(int64_t a, int64_t d) { return a / d - ((a % d != 0) && (a < 0) ? 1 : 0); }

using Interval = std::pair<int64_t, int64_t>;

std::optional<Interval> multiply(Interval a, Interval b) {
  std::optional<int64_t> p[] = {checkedMul(a.first, b.first), checkedMul(a.first, b.second),
                                checkedMul(a.second, b.first), checkedMul(a.second, b.second)};
  for (const auto& v : p)
    if (!v) return std::nullopt;
  return Interval{std::min({*p[0], *p[1], *p[2], *p[3]}), std::max({*p[0], *p[1], *p[2], *p[3]})};
}

}  // namespace

DimExpr::DimExpr(int64_t c) {
  if (c != 0) terms_[{}] = c;
}

DimExpr DimExpr::ofAtom(AtomPtr atom) {
  DimExpr e;
  e.terms_[{atom->key}] = 1;
  e.atoms_[atom->key] = std::move(atom);
  return e;
}

DimExpr DimExpr::symbol(const std::string& name) {
  auto a = std::make_shared<Atom>();
  a->key = "S" + std::to_string(name.size()) + ":" + name;
  a->text = name;
  return ofAtom(std::move(a));
}

void DimExpr::addTerm(const Monomial& m, int64_t coefficient) {
  std::optional<int64_t> sum = checkedAdd(terms_.count(m) ? terms_[m] : 0, coefficient);
  if (!sum) {
    overflow_ = true;
    return;
  }
  if (*sum == 0) terms_.erase(m);
  else terms_[m] = *sum;
}

void DimExpr::absorbAtoms(const DimExpr& o) {
  atoms_.insert(o.atoms_.begin(), o.atoms_.end());
  overflow_ |= o.overflow_;
}

DimExpr& DimExpr::pruneAtoms() {
  std::set<std::string> used;
  for (const auto& [m, c] : terms_) used.insert(m.begin(), m.end());
  std::erase_if(atoms_, [&](const auto& entry) { return !used.count(entry.first); });
  return *this;
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  DimExpr out = a;
  out.absorbAtoms(b);
  for (const auto& [m, c] : b.terms_) out.addTerm(m, c);
  return out.pruneAtoms();
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + DimExpr(-1) * b; }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  DimExpr out;
  out.absorbAtoms(a);
  out.absorbAtoms(b);
  for (const auto& [ma, ca] : a.terms_)
    for (const auto& [mb, cb] : b.terms_) {
      DimExpr::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      std::optional<int64_t> c = checkedMul(ca, cb);
      if (!c) out.overflow_ = true;
      else out.addTerm(m, *c);
    }
  return out.pruneAtoms();
}

DimExpr DimExpr::floorDiv(const DimExpr& a, int64_t d) {
  if (d <= 0 || a.overflow_) {
    DimExpr bad = a;
    bad.overflow_ = true;
    return bad;
  }
  if (d == 1) return a;
  DimExpr quotient, remainder;
  quotient.absorbAtoms(a);
  remainder.absorbAtoms(a);
  for (const auto& [m, c] : a.terms_) {
    const int64_t q = floorDivide(c, d), r = c - q * d;
    quotient.addTerm(m, q);
    remainder.addTerm(m, r);
  }
  quotient.pruneAtoms();
  remainder.pruneAtoms();
  if (remainder.terms_.empty()) return quotient;
  if (std::optional<int64_t> c = remainder.constant()) return quotient + DimExpr(floorDivide(*c, d));
  auto atom = std::make_shared<Atom>();
  atom->kind = Atom::Kind::FloorDiv;
  atom->divisor = d;
  atom->key = "F" + std::to_string(d) + "(" + remainder.key() + ")";
  atom->text = "floordiv(" + remainder.str() + ", " + std::to_string(d) + ")";
  atom->operands = {remainder};
  return quotient + ofAtom(std::move(atom));
}

std::optional<DimExpr> DimExpr::divideExact(const DimExpr& a, const DimExpr& b) {
  if (a.overflow_ || b.overflow_ || b.terms_.size() != 1) return std::nullopt;
  const auto& [divisorAtoms, divisor] = *b.terms_.begin();
  if (divisor <= 0) return std::nullopt;
  DimExpr out;
  out.absorbAtoms(a);
  for (const auto& [m, c] : a.terms_) {
    if (c % divisor != 0 || !std::includes(m.begin(), m.end(), divisorAtoms.begin(), divisorAtoms.end()))
      return std::nullopt;
    Monomial rest;
    std::set_difference(m.begin(), m.end(), divisorAtoms.begin(), divisorAtoms.end(), std::back_inserter(rest));
    out.addTerm(rest, c / divisor);
  }
  return out.pruneAtoms();
}

DimExpr DimExpr::ceilDiv(const DimExpr& a, int64_t d) { return floorDiv(a + DimExpr(d - 1), d); }

namespace {

enum class Pick { First, Second, Neither };

/// Which of a and b is the smaller when their difference is constant.
Pick smallerOf(const DimExpr& a, const DimExpr& b) {
  std::optional<int64_t> diff = (a - b).constant();
  if (!diff) return Pick::Neither;
  return *diff <= 0 ? Pick::First : Pick::Second;
}

}  // namespace

DimExpr DimExpr::extremeAtom(bool largest, const DimExpr& a, const DimExpr& b) {
  switch (smallerOf(a, b)) {
    case Pick::First: return largest ? b : a;
    case Pick::Second: return largest ? a : b;
    case Pick::Neither: break;
  }
  auto atom = std::make_shared<Atom>();
  atom->kind = largest ? Atom::Kind::Max : Atom::Kind::Min;
  const std::string ka = a.key(), kb = b.key();
  atom->operands = ka < kb ? std::vector<DimExpr>{a, b} : std::vector<DimExpr>{b, a};
  atom->key = std::string(largest ? "M(" : "m(") + std::min(ka, kb) + "," + std::max(ka, kb) + ")";
  const std::string sa = a.str(), sb = b.str();
  atom->text = std::string(largest ? "max(" : "min(") + std::min(sa, sb) + ", " + std::max(sa, sb) + ")";
  return ofAtom(std::move(atom));
}

DimExpr DimExpr::min(const DimExpr& a, const DimExpr& b) { return extremeAtom(false, a, b); }
DimExpr DimExpr::max(const DimExpr& a, const DimExpr& b) { return extremeAtom(true, a, b); }

std::optional<int64_t> DimExpr::constant() const {
  if (overflow_) return std::nullopt;
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::set<std::string> DimExpr::symbols() const {
  std::set<std::string> out;
  for (const auto& [key, atom] : atoms_) {
    if (atom->kind == Atom::Kind::Symbol) {
      out.insert(atom->text);
      continue;
    }
    for (const DimExpr& o : atom->operands) {
      std::set<std::string> inner = o.symbols();
      out.insert(inner.begin(), inner.end());
    }
  }
  return out;
}

std::vector<std::pair<int64_t, std::vector<DimExpr::Factor>>> DimExpr::terms() const {
  std::vector<std::pair<int64_t, std::vector<Factor>>> out;
  for (const auto& [m, c] : terms_) {
    std::vector<Factor> factors;
    for (const std::string& key : m) {
      const Atom& a = *atoms_.at(key);
      factors.push_back({Factor::Kind(uint8_t(a.kind)), a.text, a.operands, a.divisor});
    }
    out.emplace_back(c, std::move(factors));
  }
  return out;
}

Expected<int64_t> DimExpr::evaluate(const std::map<std::string, int64_t>& values) const {
  if (overflow_) return Error(ErrorCode::ShapeBinding, "the dim expression overflows int64");
  auto overflow = [&]() { return Error(ErrorCode::ShapeBinding, "dim " + str() + " overflows int64"); };
  std::map<std::string, int64_t> atomValues;
  for (const auto& [key, atom] : atoms_) {
    int64_t v = 0;
    if (atom->kind == Atom::Kind::Symbol) {
      auto it = values.find(atom->text);
      if (it == values.end()) return Error(ErrorCode::ShapeBinding, "dynamic dim '" + atom->text + "' has no value");
      v = it->second;
    } else {
      std::vector<int64_t> ops;
      for (const DimExpr& o : atom->operands) {
        KILN_ASSIGN(int64_t x, o.evaluate(values));
        ops.push_back(x);
      }
      v = atom->kind == Atom::Kind::FloorDiv ? floorDivide(ops[0], atom->divisor)
          : atom->kind == Atom::Kind::Min    ? std::min(ops[0], ops[1])
                                             : std::max(ops[0], ops[1]);
    }
    atomValues[key] = v;
  }
  int64_t sum = 0;
  for (const auto& [m, c] : terms_) {
    std::optional<int64_t> term = c;
    for (const std::string& a : m)
      if (term) term = checkedMul(*term, atomValues[a]);
    std::optional<int64_t> next = term ? checkedAdd(sum, *term) : std::nullopt;
    if (!next) return overflow();
    sum = *next;
  }
  return sum;
}

std::optional<std::pair<int64_t, int64_t>> DimExpr::bounds(
    const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const {
  if (overflow_) return std::nullopt;
  std::map<std::string, Interval> atomRanges;
  for (const auto& [key, atom] : atoms_) {
    Interval r;
    if (atom->kind == Atom::Kind::Symbol) {
      auto it = ranges.find(atom->text);
      if (it == ranges.end()) return std::nullopt;
      r = it->second;
    } else {
      std::vector<Interval> ops;
      for (const DimExpr& o : atom->operands) {
        std::optional<Interval> b = o.bounds(ranges);
        if (!b) return std::nullopt;
        ops.push_back(*b);
      }
      if (atom->kind == Atom::Kind::FloorDiv)
        r = {floorDivide(ops[0].first, atom->divisor), floorDivide(ops[0].second, atom->divisor)};
      else if (atom->kind == Atom::Kind::Min)
        r = {std::min(ops[0].first, ops[1].first), std::min(ops[0].second, ops[1].second)};
      else
        r = {std::max(ops[0].first, ops[1].first), std::max(ops[0].second, ops[1].second)};
    }
    atomRanges[key] = r;
  }
  Interval sum{0, 0};
  for (const auto& [m, c] : terms_) {
    Interval term{c, c};
    for (const std::string& a : m) {
      std::optional<Interval> next = multiply(term, atomRanges[a]);
      if (!next) return std::nullopt;
      term = *next;
    }
    std::optional<int64_t> lo = checkedAdd(sum.first, term.first), hi = checkedAdd(sum.second, term.second);
    if (!lo || !hi) return std::nullopt;
    sum = {*lo, *hi};
  }
  return sum;
}

std::string DimExpr::key() const {
  if (overflow_) return "!";
  std::string out;
  for (const auto& [m, c] : terms_) {
    out += std::to_string(c) + "*";
    for (const std::string& k : m) out += k;
    out += ";";
  }
  return out;
}

std::string DimExpr::str() const {
  if (overflow_) return "<overflow>";
  std::string out;
  auto append = [&](const Monomial& m, int64_t c) {
    const bool negative = c < 0;
    const uint64_t magnitude = negative ? uint64_t(0) - uint64_t(c) : uint64_t(c);
    if (out.empty()) out += negative ? "-" : "";
    else out += negative ? " - " : " + ";
    std::vector<std::string> texts;
    for (const std::string& key : m) texts.push_back(atoms_.at(key)->text);
    std::sort(texts.begin(), texts.end());
    std::string factors;
    for (const std::string& t : texts) factors += (factors.empty() ? "" : "*") + t;
    if (factors.empty()) out += std::to_string(magnitude);
    else out += (magnitude == 1 ? "" : std::to_string(magnitude) + "*") + factors;
  };
  for (const auto& [m, c] : terms_)
    if (!m.empty()) append(m, c);
  if (auto it = terms_.find({}); it != terms_.end()) append(it->first, it->second);
  return out.empty() ? "0" : out;
}

// The encoded form: an expression is "E<terms>;" then per term
// "<coefficient>;<factors>;" and its factors' atoms; an atom is
// "S<length>;<name>", "F<divisor>;" and its dividend, or "m"/"M" and both
// sides of a min/max.
std::string DimExpr::encode() const {
  std::string out = "E" + std::to_string(terms_.size()) + ";";
  for (const auto& [m, c] : terms_) {
    out += std::to_string(c) + ";" + std::to_string(m.size()) + ";";
    for (const std::string& key : m) {
      const Atom& a = *atoms_.at(key);
      switch (a.kind) {
        case Atom::Kind::Symbol: out += "S" + std::to_string(a.text.size()) + ";" + a.text; break;
        case Atom::Kind::FloorDiv: out += "F" + std::to_string(a.divisor) + ";" + a.operands[0].encode(); break;
        case Atom::Kind::Min: out += "m" + a.operands[0].encode() + a.operands[1].encode(); break;
        case Atom::Kind::Max: out += "M" + a.operands[0].encode() + a.operands[1].encode(); break;
      }
    }
  }
  return out;
}

namespace {

/// Reads DimExpr::encode's form from the front of `text`.
class DimDecoder {
 public:
  explicit DimDecoder(std::string_view text) : text_(text) {}

  Expected<DimExpr> expression(int depth) {
    if (depth > kMaxDepth) return bad("nests too deeply");
    KILN_TRY(expect('E'));
    KILN_ASSIGN(int64_t terms, number());
    if (terms < 0 || uint64_t(terms) > text_.size()) return bad("has a bad term count");
    DimExpr sum;
    for (int64_t t = 0; t < terms; ++t) {
      KILN_ASSIGN(int64_t coefficient, number());
      KILN_ASSIGN(int64_t factors, number());
      if (factors < 0 || uint64_t(factors) > text_.size()) return bad("has a bad factor count");
      DimExpr term(coefficient);
      for (int64_t f = 0; f < factors; ++f) {
        KILN_ASSIGN(DimExpr atom, this->atom(depth));
        term = term * atom;
      }
      sum = sum + term;
    }
    if (sum.overflowed()) return bad("overflows int64");
    return sum;
  }

  bool done() const { return text_.empty(); }

 private:
  static constexpr int kMaxDepth = 32;

  Expected<DimExpr> atom(int depth) {
    if (text_.empty()) return bad("ends early");
    const char kind = text_.front();
    text_.remove_prefix(1);
    if (kind == 'S') {
      KILN_ASSIGN(int64_t length, number());
      if (length <= 0 || uint64_t(length) > text_.size()) return bad("has a bad symbol length");
      std::string name(text_.substr(0, size_t(length)));
      text_.remove_prefix(size_t(length));
      return DimExpr::symbol(name);
    }
    if (kind == 'F') {
      KILN_ASSIGN(int64_t divisor, number());
      if (divisor <= 0) return bad("divides by " + std::to_string(divisor));
      KILN_ASSIGN(DimExpr dividend, expression(depth + 1));
      return DimExpr::floorDiv(dividend, divisor);
    }
    if (kind == 'm' || kind == 'M') {
      KILN_ASSIGN(DimExpr a, expression(depth + 1));
      KILN_ASSIGN(DimExpr b, expression(depth + 1));
      return kind == 'm' ? DimExpr::min(a, b) : DimExpr::max(a, b);
    }
    return bad("has an atom of unknown kind");
  }

  Status expect(char c) {
    if (text_.empty() || text_.front() != c) return bad("is malformed");
    text_.remove_prefix(1);
    return Status::ok();
  }

  /// A decimal integer ended by ';'.
  Expected<int64_t> number() {
    const size_t end = text_.find(';');
    if (end == std::string_view::npos || end == 0 || end > 20) return bad("has a malformed number");
    std::string_view digits = text_.substr(0, end);
    const bool negative = digits.front() == '-';
    if (negative) digits.remove_prefix(1);
    if (digits.empty()) return bad("has a malformed number");
    uint64_t magnitude = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return bad("has a malformed number");
      if (magnitude > (uint64_t(INT64_MAX) - uint64_t(c - '0')) / 10) return bad("has a number beyond int64");
      magnitude = magnitude * 10 + uint64_t(c - '0');
    }
    text_.remove_prefix(end + 1);
    return negative ? -int64_t(magnitude) : int64_t(magnitude);
  }

  static Error bad(const std::string& what) { return Error(ErrorCode::ArtifactCorrupt, "dim expression " + what); }

  std::string_view text_;
};

}  // namespace

Expected<DimExpr> DimExpr::decode(std::string_view text) {
  DimDecoder decoder(text);
  KILN_ASSIGN(DimExpr e, decoder.expression(0));
  if (!decoder.done()) return Error(ErrorCode::ArtifactCorrupt, "dim expression has trailing bytes");
  return e;
}

}  // namespace kiln
