//===- lib/codegen/IndexSimplify.cpp - Exact divisions of loop indices -----===//
//
// Templates index tensors through reshapes and transposes by flattening an
// index and splitting it again with floor divisions and remainders
// (ElementOps). Where the loops' ranges make such a division exact it is
// rewritten away: with 0 <= r < c, floordiv(q * c + r, c) is q and
// floormod(q * c + r, c) is r; more generally, with m | c and 0 <= r < m,
// floordiv(q * m + r, c) is floordiv(q, c / m) (a flattened index's low
// digits dropped); nested divisions by positive constants merge. An index
// that stays affine in a vectorized loop's variable lets the CPU backend load whole vectors instead of gathering lane by lane, and
// every target saves the divisions. Ranges come from loops (0 .. extent-1,
// GPU bindings included) and lets; an expression whose range is not known
// is left as it is, so the rewrite never changes a value.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "kiln/codegen/IRVisitor.h"
#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {
namespace {

struct Range {
  int64_t lo = 0, hi = 0;
};
using MaybeRange = std::optional<Range>;

bool isInteger(const Expr& e) { return !isFloatType(e->type) && e->type != ScalarType::Bool; }

int64_t floorDivOf(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Checked arithmetic on ranges: nullopt on overflow.
MaybeRange add(MaybeRange a, MaybeRange b) {
  if (!a || !b) return std::nullopt;
  Range r;
  if (__builtin_add_overflow(a->lo, b->lo, &r.lo) || __builtin_add_overflow(a->hi, b->hi, &r.hi)) return std::nullopt;
  return r;
}

MaybeRange scale(MaybeRange a, int64_t k) {
  if (!a) return std::nullopt;
  int64_t x, y;
  if (__builtin_mul_overflow(a->lo, k, &x) || __builtin_mul_overflow(a->hi, k, &y)) return std::nullopt;
  return Range{std::min(x, y), std::max(x, y)};
}

/// Rewrites the exact divisions away; loops and lets bind the ranges of their variables for their bodies.
class IndexSimplifier : public IRMutator {
 public:
  using IRMutator::mutate;

  Expr mutate(const Expr& e) override {
    if (e->operands.empty()) return e;
    auto hit = memo_.find(e.get());
    if (hit != memo_.end()) return hit->second.second;
    Expr out = IRMutator::mutate(e);
    if (out->kind == ExprKind::Binary && isInteger(out) &&
        (out->binaryOp == BinaryOp::FloorDiv || out->binaryOp == BinaryOp::FloorMod))
      out = divMod(out);
    memo_[e.get()] = {e, out};  // keeps e alive so its address is not reused
    return out;
  }

 private:
  Stmt visitFor(const Stmt& s) override {
    std::shared_ptr<StmtNode> n = mutateExprs(s);
    int64_t extent = 0;
    bind(n->var, isIntConstant(n->value, &extent) && extent > 0 ? MaybeRange(Range{0, extent - 1}) : std::nullopt);
    mutateBody(*n);
    return n;
  }

  Stmt visitLet(const Stmt& s) override {
    std::shared_ptr<StmtNode> n = mutateExprs(s);
    bind(n->var, isInteger(n->value) ? range(n->value) : std::nullopt);
    mutateBody(*n);
    return n;
  }

  /// Records v's range; results computed under another range of v are dropped.
  void bind(const Var& v, MaybeRange r) {
    auto it = ranges_.find(v.get());
    bool same = it != ranges_.end() && r && it->second.lo == r->lo && it->second.hi == r->hi;
    if (same) return;
    if (it != ranges_.end() || !r) memo_.clear();
    if (r) ranges_[v.get()] = *r;
    else if (it != ranges_.end()) ranges_.erase(it);
  }

  /// floordiv / floormod of a by a positive constant c, made exact where the ranges allow.
  Expr divMod(const Expr& e) {
    if (e->kind != ExprKind::Binary || (e->binaryOp != BinaryOp::FloorDiv && e->binaryOp != BinaryOp::FloorMod)) return e;
    const bool isDiv = e->binaryOp == BinaryOp::FloorDiv;
    const Expr& a = e->operands[0];
    int64_t c = 0, inner = 0;
    if (!isIntConstant(e->operands[1], &c) || c <= 0) return e;
    // floordiv(floordiv(x, d), c) = floordiv(x, d * c); floormod(floormod(x, d), c) = floormod(x, c) when c | d.
    if (a->kind == ExprKind::Binary && a->binaryOp == e->binaryOp && isIntConstant(a->operands[1], &inner) && inner > 0) {
      int64_t merged = 0;
      if (isDiv && !__builtin_mul_overflow(inner, c, &merged))
        return divMod(binary(BinaryOp::FloorDiv, a->operands[0], intImm(merged, a->type)));
      if (!isDiv && inner % c == 0) return divMod(binary(BinaryOp::FloorMod, a->operands[0], e->operands[1]));
    }
    LinearForm whole;
    if (!addLinear(a, 1, whole)) return e;
    // a = m * B + s with m | c and 0 <= s < m: floordiv(a, c) = floordiv(B, c / m) and
    // floormod(a, c) = floormod(B, c / m) * m + s. m = c makes the division exact; a
    // smaller m (a term's coefficient dividing c) strips the low digits of a flattened
    // index, e.g. floordiv(o * 28 + w, 784) = floordiv(o, 28) with 0 <= w < 28.
    std::vector<int64_t> divisors{c};
    for (const auto& [k, term] : whole.terms)
      if (k > 1 && k < c && c % k == 0 && std::find(divisors.begin(), divisors.end(), k) == divisors.end())
        divisors.push_back(k);
    std::sort(divisors.begin() + 1, divisors.end(), std::greater<>());
    for (int64_t m : divisors) {
      LinearForm high, low;
      for (const auto& [k, term] : whole.terms) {
        if (k % m == 0) high.terms.push_back({k / m, term});
        else low.terms.push_back({k, term});
      }
      high.constant = floorDivOf(whole.constant, m);
      low.constant = whole.constant - high.constant * m;
      MaybeRange r = Range{low.constant, low.constant};
      for (const auto& [k, term] : low.terms) r = add(r, scale(range(term), k));
      if (!r || r->lo < 0 || r->hi >= m) continue;
      const Expr digits = build(high, e->type);
      if (m == c) return isDiv ? digits : build(low, e->type);
      const Expr rest = divMod(binary(e->binaryOp, digits, intImm(c / m, e->type)));
      if (isDiv) return rest;
      LinearForm mod = low;
      mod.terms.insert(mod.terms.begin(), {m, rest});
      return build(mod, e->type);
    }
    return e;
  }

  static Expr build(const LinearForm& l, ScalarType t) {
    Expr sum;
    for (const auto& [k, term] : l.terms) {
      if (k == 0) continue;
      Expr scaled = k == 1 ? term : binary(BinaryOp::Mul, term, intImm(k, t));
      sum = sum ? binary(BinaryOp::Add, sum, scaled) : scaled;
    }
    if (!sum) return intImm(l.constant, t);
    return l.constant == 0 ? sum : binary(BinaryOp::Add, sum, intImm(l.constant, t));
  }

  MaybeRange range(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return Range{e->intValue, e->intValue};
      case ExprKind::VarRef: {
        auto it = ranges_.find(e->var.get());
        return it == ranges_.end() ? std::nullopt : MaybeRange(it->second);
      }
      case ExprKind::Cast:
        return isInteger(e->operands[0]) && scalarTypeSize(e->type) >= scalarTypeSize(e->operands[0]->type)
                   ? range(e->operands[0]) : std::nullopt;
      case ExprKind::Select: {
        MaybeRange a = range(e->operands[1]), b = range(e->operands[2]);
        if (!a || !b) return std::nullopt;
        return Range{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
      }
      case ExprKind::Binary: break;
      default: return std::nullopt;
    }
    if (!isInteger(e)) return std::nullopt;
    const Expr &a = e->operands[0], &b = e->operands[1];
    int64_t c = 0;
    switch (e->binaryOp) {
      case BinaryOp::Add: return add(range(a), range(b));
      case BinaryOp::Sub: return add(range(a), scale(range(b), -1));
      case BinaryOp::Mul:
        if (isIntConstant(b, &c)) return scale(range(a), c);
        if (isIntConstant(a, &c)) return scale(range(b), c);
        return std::nullopt;
      case BinaryOp::FloorDiv: {
        MaybeRange x = range(a);
        if (!isIntConstant(b, &c) || c <= 0 || !x) return std::nullopt;
        return Range{floorDivOf(x->lo, c), floorDivOf(x->hi, c)};
      }
      case BinaryOp::FloorMod: {
        if (!isIntConstant(b, &c) || c <= 0) return std::nullopt;
        MaybeRange x = range(a);
        if (x && x->lo >= 0 && x->hi < c) return x;
        return Range{0, c - 1};
      }
      case BinaryOp::Min: case BinaryOp::Max: {
        MaybeRange x = range(a), y = range(b);
        if (!x || !y) return std::nullopt;
        bool mn = e->binaryOp == BinaryOp::Min;
        return Range{mn ? std::min(x->lo, y->lo) : std::max(x->lo, y->lo), mn ? std::min(x->hi, y->hi) : std::max(x->hi, y->hi)};
      }
      default: return std::nullopt;
    }
  }

  std::unordered_map<const VarDecl*, Range> ranges_;
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> memo_;
};

}  // namespace

Stmt simplifyIndices(const Stmt& body) { return IndexSimplifier().mutate(body); }

}  // namespace kiln::codegen
