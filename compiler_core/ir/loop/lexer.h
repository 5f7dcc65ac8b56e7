// Tokens of the loop IR and schedule text forms, shared by their parsers. `//` starts a comment
// only as the first thing on a line, since inside an expression it is floor division.
#ifndef KILN_COMPILER_CORE_IR_LOOP_LEXER_H_
#define KILN_COMPILER_CORE_IR_LOOP_LEXER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::loop {

enum class TokenKind {
  kEof,
  kIdent,    // names and keywords: [A-Za-z_][A-Za-z0-9_.]* (a '.' never starts "..")
  kBuffer,   // %name (text without the '%')
  kGlobal,   // @name (text without the '@')
  kNumber,   // [-]digits[.digits][e[+-]digits], or -inf
  kPunct,    // .. // <= >= == != && || << >> and one of (){}[]<>,:;=+-*/%
  kNewline,  // only when LexOptions::newlines is set
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;
  int line = 1;
  int col = 1;

  bool Is(std::string_view punct_or_ident) const {
    return (kind == TokenKind::kPunct || kind == TokenKind::kIdent) && text == punct_or_ident;
  }
};

struct LexOptions {
  /// Emit a kNewline token at each line end (for line-oriented forms such as schedules).
  bool newlines = false;
};

/// Splits `text` into tokens ending with one kEof. `text` must outlive the tokens.
/// Errors: kInvalidArgument "LINE:COL: unexpected character 'c'" (or a missing name after a
/// sigil).
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view text, LexOptions options = {});

/// How a token reads in an error message: 'text', '%name', or "end of input".
std::string DescribeToken(const Token& tok);

/// kInvalidArgument "LINE:COL: message" at `tok`.
absl::Status ErrorAt(const Token& tok, std::string_view message);

/// True if a kNumber token is a float literal ('.', an exponent, or inf/nan).
bool IsFloatLiteral(std::string_view text);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_LEXER_H_
