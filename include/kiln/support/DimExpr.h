//===- kiln/support/DimExpr.h - Integer expressions over dynamic dims -*- C++ -*-===//
//
// A dim whose value is known only at run time is an expression over named
// symbols (the model's dynamic dims: "batch", "seq"): a polynomial with int64
// coefficients whose variables are atoms, an atom being a symbol, a floor
// division of an expression by a positive constant, or the min or max of two
// expressions. The form is canonical (terms ordered, no zero coefficients,
// exact divisions done, constant atoms folded), so two expressions are equal
// exactly when they are the same polynomial in the same atoms: seq * 12 / 12
// is seq, (b + 1) * (b - 1) is b * b - 1. That is what shape inference needs
// to propagate Reshape, Concat, Slice and broadcast arithmetic and to decide
// whether two dynamic dims agree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/support/Status.h"

namespace kiln {

class DimExpr {
 public:
  /// The constant c.
  DimExpr(int64_t c = 0);  // NOLINT: a constant is a dim expression
  /// The symbol `name`.
  static DimExpr symbol(const std::string& name);
  /// floor(a / d) for d > 0 (exact divisions divide each coefficient).
  static DimExpr floorDiv(const DimExpr& a, int64_t d);
  /// ceil(a / d) for d > 0.
  static DimExpr ceilDiv(const DimExpr& a, int64_t d);
  static DimExpr min(const DimExpr& a, const DimExpr& b);
  static DimExpr max(const DimExpr& a, const DimExpr& b);
  /// a / b when b is one term (c * atoms, c > 0) that divides every term of
  /// a exactly: (12*b*s) / (4*s) is 3*b; nullopt otherwise.
  static std::optional<DimExpr> divideExact(const DimExpr& a, const DimExpr& b);

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  /// Equal polynomials in the same atoms (an expression whose coefficients
  /// overflowed equals nothing).
  bool operator==(const DimExpr& o) const { return !overflow_ && !o.overflow_ && terms_ == o.terms_; }

  /// Whether building it overflowed int64 (it then has no value or bounds).
  bool overflowed() const { return overflow_; }
  /// The value when the expression has no symbols.
  std::optional<int64_t> constant() const;
  /// The symbols it refers to, at any depth.
  std::set<std::string> symbols() const;
  /// Its value with each symbol given; KE error (ShapeBinding) naming a
  /// symbol without a value, or on overflow.
  Expected<int64_t> evaluate(const std::map<std::string, int64_t>& values) const;
  /// The smallest and largest values over symbols in the given [lo, hi]
  /// ranges (interval arithmetic: a bound, tight when each atom occurs once);
  /// nullopt when a symbol has no range or a bound overflows.
  std::optional<std::pair<int64_t, int64_t>> bounds(const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const;
  /// One factor of a term, for code that rebuilds the expression in its own
  /// arithmetic (a kernel's index expressions): a symbol (`name`), a floor
  /// division of operands[0] by `divisor`, or the min or max of operands[0] and [1].
  struct Factor {
    enum class Kind : uint8_t { Symbol, FloorDiv, Min, Max };
    Kind kind = Kind::Symbol;
    std::string name;
    std::vector<DimExpr> operands;
    int64_t divisor = 1;
  };
  /// The expression as a sum of coefficient * product of factors (a factor
  /// repeated for a power); the constant term has no factors.
  std::vector<std::pair<int64_t, std::vector<Factor>>> terms() const;
  /// "2*batch*seq + 1", "floordiv(h + 1, 2)", "max(a, 3)"; constants print as numbers.
  std::string str() const;
  /// An unambiguous form for files (symbol names of any characters):
  /// decode(encode()) == *this.
  std::string encode() const;
  /// Rebuilds an encoded expression through the builders (so the result is
  /// canonical whatever the bytes); KE error (ArtifactCorrupt) on a malformed
  /// or too deeply nested form.
  static Expected<DimExpr> decode(std::string_view text);

 private:
  struct Atom;
  using AtomPtr = std::shared_ptr<const Atom>;
  /// A product of atoms, ordered by their keys (repeated for powers). An
  /// atom's key is unambiguous whatever its symbols' names (length-prefixed),
  /// so a symbol named like another atom's printed form is still another atom.
  using Monomial = std::vector<std::string>;
  std::map<Monomial, int64_t> terms_;            ///< the empty monomial is the constant term
  std::map<std::string, AtomPtr> atoms_;          ///< every atom the terms name, by its key
  bool overflow_ = false;

  static DimExpr ofAtom(AtomPtr atom);
  /// The terms with their atoms' keys: equal exactly when the expressions are.
  std::string key() const;
  /// max (largest) or min of a and b: one of them when their difference is constant, else an atom.
  static DimExpr extremeAtom(bool largest, const DimExpr& a, const DimExpr& b);
  void addTerm(const Monomial& m, int64_t coefficient);
  void absorbAtoms(const DimExpr& o);
  /// Drops the atoms no term names any more (after a cancellation).
  DimExpr& pruneAtoms();
};

}  // namespace kiln
