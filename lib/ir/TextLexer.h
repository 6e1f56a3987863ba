//===- lib/ir/TextLexer.h - Tokens of the text IR ---------------------------===//
//
// The lexer of the text IR: identifiers (letters, digits, '_' and '.'), %values
// and @symbols (bare or quoted), numbers (including inf), escaped strings,
// punctuation, and // comments. Errors carry file:line:column.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

#include "kiln/support/Status.h"

namespace kiln::ir {

enum class Tok {
  End, Ident, Number, String, Percent, At,
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Less, Greater,
  Comma, Colon, ColonColon, Equal, Star, Question,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;  ///< identifier, number or name text; string contents unescaped
  size_t line = 1, col = 1;
};

/// Value of a hex digit (0-15), or -1.
int hexDigitValue(char c);

class Lexer {
 public:
  Lexer(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  /// The next token (Tok::End at the end of the input).
  Expected<Token> next();
  /// An IrParse error located at `t`.
  Error error(const Token& t, const std::string& msg) const;

 private:
  void advance(size_t n);
  void skipSpace();
  Expected<std::string> readString();

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0, line_ = 1, col_ = 1;
};

}  // namespace kiln::ir
