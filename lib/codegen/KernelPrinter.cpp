//===- lib/codegen/KernelPrinter.cpp - Kernel IR text form ----------------===//
//
// Prints kernels for people and FileCheck tests: one statement per line,
// loops as `<kind> for %v in <extent> {`, buffers as `%name[index]`, arithmetic
// infix and everything else in call form (`max(a, b)`, `exp(x)`,
// `select(c, a, b)`, `f32(x)` for a cast). Floating constants print with the
// precision of their type and an `f` suffix for f32.
//
//===----------------------------------------------------------------------===//
#include <cctype>
#include <cstdio>
#include <sstream>

#include "kiln/codegen/KernelIR.h"

namespace kiln::codegen {
namespace {

const char* infixSymbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
    default: return nullptr;
  }
}

void printExprTo(std::ostream& os, const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm:
      if (e->type == ScalarType::Bool) os << (e->intValue ? "true" : "false");
      else os << e->intValue;
      if (e->type != ScalarType::I64 && e->type != ScalarType::Bool) os << scalarTypeName(e->type);
      return;
    case ExprKind::FloatImm: {
      char buf[40];
      std::snprintf(buf, sizeof buf, e->type == ScalarType::F64 ? "%.17g" : "%.9g", e->floatValue);
      std::string s = buf;
      if (s.find_first_of(".einn") == std::string::npos) s += ".0";
      os << s << (e->type == ScalarType::F64 ? "" : "f");
      return;
    }
    case ExprKind::VarRef: os << "%" << e->var->name; return;
    case ExprKind::Load:
      os << "%" << e->buffer->name << "[";
      printExprTo(os, e->operands[0]);
      os << "]";
      return;
    case ExprKind::Binary:
      if (const char* sym = infixSymbol(e->binaryOp)) {
        os << "(";
        printExprTo(os, e->operands[0]);
        os << " " << sym << " ";
        printExprTo(os, e->operands[1]);
        os << ")";
      } else {
        os << binaryOpName(e->binaryOp) << "(";
        printExprTo(os, e->operands[0]);
        os << ", ";
        printExprTo(os, e->operands[1]);
        os << ")";
      }
      return;
    case ExprKind::Unary:
      os << unaryOpName(e->unaryOp) << "(";
      printExprTo(os, e->operands[0]);
      os << ")";
      return;
    case ExprKind::Select:
      os << "select(";
      printExprTo(os, e->operands[0]);
      os << ", ";
      printExprTo(os, e->operands[1]);
      os << ", ";
      printExprTo(os, e->operands[2]);
      os << ")";
      return;
    case ExprKind::Cast:
      os << scalarTypeName(e->type) << "(";
      printExprTo(os, e->operands[0]);
      os << ")";
      return;
    case ExprKind::ShuffleXor:
      os << "shfl_xor(";
      printExprTo(os, e->operands[0]);
      os << ", " << e->operands[1]->intValue << ")";
      return;
  }
}

void printStmtTo(std::ostream& os, const Stmt& s, int indent) {
  std::string pad(size_t(indent) * 2, ' ');
  switch (s->kind) {
    case StmtKind::For:
      os << pad << loopKindName(s->loop) << " for %" << s->var->name << " in ";
      printExprTo(os, s->value);
      os << " {\n";
      printStmtTo(os, s->body[0], indent + 1);
      os << pad << "}\n";
      return;
    case StmtKind::Store:
      os << pad << "%" << s->buffer->name << "[";
      printExprTo(os, s->index);
      os << "] = ";
      printExprTo(os, s->value);
      os << "\n";
      return;
    case StmtKind::Allocate:
      os << pad << memoryScopeName(s->buffer->scope) << " " << scalarTypeName(s->buffer->type) << " %"
         << s->buffer->name << "[" << s->buffer->size << "]\n";
      printStmtTo(os, s->body[0], indent);
      return;
    case StmtKind::Let:
      os << pad << "let %" << s->var->name << " = ";
      printExprTo(os, s->value);
      os << "\n";
      printStmtTo(os, s->body[0], indent);
      return;
    case StmtKind::If:
      os << pad << "if ";
      printExprTo(os, s->value);
      os << " {\n";
      printStmtTo(os, s->body[0], indent + 1);
      if (s->body.size() > 1) {
        os << pad << "} else {\n";
        printStmtTo(os, s->body[1], indent + 1);
      }
      os << pad << "}\n";
      return;
    case StmtKind::Seq:
      for (const Stmt& c : s->body) printStmtTo(os, c, indent);
      return;
    case StmtKind::Barrier: os << pad << "barrier\n"; return;
    case StmtKind::Mma:
      os << pad << "mma." << mmaKindName(s->mma) << " %" << s->buffer->name << "[";
      printExprTo(os, s->index);
      os << "] += %" << s->operands[0]->name << "[";
      printExprTo(os, s->offsets[0]);
      os << "] x %" << s->operands[1]->name << "[";
      printExprTo(os, s->offsets[1]);
      os << "]\n";
      return;
  }
}

/// Replaces every `%from` in `text` that is a whole name (not followed by
/// more of a name) with `%to`.
void replaceName(std::string& text, const std::string& from, const std::string& to) {
  const std::string f = "%" + from, t = "%" + to;
  for (size_t at = text.find(f); at != std::string::npos; at = text.find(f, at)) {
    const size_t end = at + f.size();
    const bool whole = end == text.size() || !(std::isalnum((unsigned char)text[end]) || text[end] == '_' || text[end] == '.');
    if (!whole) {
      at = end;
      continue;
    }
    text.replace(at, f.size(), t);
    at += t.size();
  }
}

}  // namespace

std::string printExpr(const Expr& e) {
  std::ostringstream os;
  printExprTo(os, e);
  return os.str();
}

std::string printKernel(const Kernel& k) {
  std::ostringstream os;
  os << "kernel @" << k.name << "(";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Buffer& b = k.params[i];
    os << (i ? ", " : "") << memoryScopeName(b->scope) << " " << scalarTypeName(b->type) << " %" << b->name << "["
       << b->size << "]";
  }
  for (size_t i = 0; i < k.extents.size(); ++i)
    os << (i || !k.params.empty() ? ", " : "") << "i64 %" << k.extents[i].var->name << "<=" << k.extents[i].max;
  os << ") target=" << (k.target == KernelTarget::Cpu ? "cpu" : "gpu") << " {\n";
  if (k.body) printStmtTo(os, k.body, 1);
  os << "}\n";
  return os.str();
}

std::string kernelBodyKey(const Kernel& k) {
  std::string body = printKernel(k);
  body = body.substr(body.find('('));
  for (size_t p = 0; p < k.params.size(); ++p) replaceName(body, k.params[p]->name, "p" + std::to_string(p));
  for (size_t e = 0; e < k.extents.size(); ++e) replaceName(body, k.extents[e].var->name, "e" + std::to_string(e));
  return body;
}

}  // namespace kiln::codegen
