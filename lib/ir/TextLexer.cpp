//===- lib/ir/TextLexer.cpp - Lexer of the text IR --------------------------===//
//
// Implementation of TextLexer.h.
//
//===----------------------------------------------------------------------===//
#include "TextLexer.h"

namespace kiln::ir {
namespace {
bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '.'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

int hexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Expected<Token> Lexer::next() {
  skipSpace();
  Token t;
  t.line = line_;
  t.col = col_;
  if (pos_ >= text_.size()) return t;
  char c = text_[pos_];
  auto single = [&](Tok k) {
    advance(1);
    t.kind = k;
    return t;
  };
  switch (c) {
    case '(': return single(Tok::LParen);
    case ')': return single(Tok::RParen);
    case '{': return single(Tok::LBrace);
    case '}': return single(Tok::RBrace);
    case '[': return single(Tok::LBracket);
    case ']': return single(Tok::RBracket);
    case '<': return single(Tok::Less);
    case '>': return single(Tok::Greater);
    case ',': return single(Tok::Comma);
    case '=': return single(Tok::Equal);
    case '*': return single(Tok::Star);
    case '?': return single(Tok::Question);
    case ':':
      if (pos_ + 1 < text_.size() && text_[pos_ + 1] == ':') {
        advance(2);
        t.kind = Tok::ColonColon;
        return t;
      }
      return single(Tok::Colon);
    case '"': {
      t.kind = Tok::String;
      KILN_ASSIGN(t.text, readString());
      return t;
    }
    case '%':
    case '@': {
      t.kind = c == '%' ? Tok::Percent : Tok::At;
      advance(1);
      if (pos_ < text_.size() && text_[pos_] == '"') {
        KILN_ASSIGN(t.text, readString());
      } else {
        size_t start = pos_;
        while (pos_ < text_.size() && isIdentChar(text_[pos_])) advance(1);
        t.text = std::string(text_.substr(start, pos_ - start));
        if (t.text.empty()) return error(t, std::string("expected a name after '") + c + "'");
      }
      return t;
    }
    default: break;
  }
  if (isDigit(c) || c == '-' || c == '+') {
    size_t start = pos_;
    advance(1);
    if (text_.substr(pos_, 3) == "inf") {
      advance(3);
    } else {
      while (pos_ < text_.size() && (isDigit(text_[pos_]) || text_[pos_] == '.' || text_[pos_] == 'e' ||
                                     text_[pos_] == 'E' ||
                                     ((text_[pos_] == '-' || text_[pos_] == '+') &&
                                      (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
        advance(1);
    }
    t.kind = Tok::Number;
    t.text = std::string(text_.substr(start, pos_ - start));
    if (t.text == "-" || t.text == "+") return error(t, "expected a number");
    return t;
  }
  if (isIdentStart(c)) {
    size_t start = pos_;
    while (pos_ < text_.size() && isIdentChar(text_[pos_])) advance(1);
    t.kind = Tok::Ident;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }
  return error(t, std::string("unexpected character '") + c + "'");
}

Error Lexer::error(const Token& t, const std::string& msg) const {
  return Error(ErrorCode::IrParse, file_ + ":" + std::to_string(t.line) + ":" + std::to_string(t.col) + ": " + msg);
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_) {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }
}

void Lexer::skipSpace() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(1);
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') advance(1);
    } else {
      break;
    }
  }
}

Expected<std::string> Lexer::readString() {
  Token at;
  at.line = line_;
  at.col = col_;
  advance(1);  // opening quote
  std::string out;
  while (true) {
    if (pos_ >= text_.size()) return error(at, "unterminated string");
    char c = text_[pos_];
    if (c == '"') {
      advance(1);
      return out;
    }
    if (c == '\\') {
      if (pos_ + 1 >= text_.size()) return error(at, "unterminated string");
      char e = text_[pos_ + 1];
      advance(2);
      if (e == 'n') out += '\n';
      else if (e == 't') out += '\t';
      else if (e == '"' || e == '\\') out += e;
      else if (e == 'x') {
        if (pos_ + 2 > text_.size()) return error(at, "bad \\x escape");
        int v = 0;
        for (int k = 0; k < 2; ++k) {
          int d = hexDigitValue(text_[pos_ + size_t(k)]);
          if (d < 0) return error(at, "bad \\x escape");
          v = v * 16 + d;
        }
        advance(2);
        out += char(v);
      } else {
        return error(at, std::string("unknown escape '\\") + e + "'");
      }
      continue;
    }
    out += c;
    advance(1);
  }
}

}  // namespace kiln::ir
