// Hand-written lexer for the loop IR and schedule text: one pass, tracking line and column.
#include "compiler_core/ir/loop/lexer.h"

#include "absl/strings/str_cat.h"

namespace kiln::loop {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c) || c == '.'; }

constexpr std::string_view kTwoCharPuncts[] = {"..", "//", "<=", ">=", "==", "!=",
                                               "&&", "||", "<<", ">>"};
constexpr std::string_view kOneCharPuncts = "(){}[]<>,:;=+-*/%";

class Lexer {
 public:
  Lexer(std::string_view text, LexOptions options) : text_(text), options_(options) {}

  absl::StatusOr<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    while (true) {
      SkipBlanks(tokens);
      Token tok{TokenKind::kEof, {}, line_, col_};
      if (pos_ >= text_.size()) {
        tokens.push_back(tok);
        return tokens;
      }
      size_t start = pos_;
      char c = text_[pos_];
      if ((c == '%' || c == '@') && IsIdentStart(Peek(1))) {
        Advance();
        LexName();
        tok.kind = c == '%' ? TokenKind::kBuffer : TokenKind::kGlobal;
        tok.text = text_.substr(start + 1, pos_ - start - 1);
      } else if (IsDigit(c) || (c == '-' && (IsDigit(Peek(1)) || Rest(1, 3) == "inf"))) {
        LexNumber();
        tok.kind = TokenKind::kNumber;
        tok.text = text_.substr(start, pos_ - start);
      } else if (IsIdentStart(c)) {
        LexName();
        tok.kind = TokenKind::kIdent;
        tok.text = text_.substr(start, pos_ - start);
      } else if (!LexPunct()) {
        return ErrorAt(tok, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      } else {
        tok.kind = TokenKind::kPunct;
        tok.text = text_.substr(start, pos_ - start);
      }
      tokens.push_back(tok);
    }
  }

 private:
  char Peek(size_t ahead) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  std::string_view Rest(size_t ahead, size_t n) const {
    return pos_ + ahead <= text_.size() ? text_.substr(pos_ + ahead, n) : std::string_view();
  }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
      at_line_start_ = true;
    } else {
      ++col_;
    }
    ++pos_;
  }
  // Whitespace and whole-line comments; a line end becomes a token when asked for.
  void SkipBlanks(std::vector<Token>& tokens) {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n' && options_.newlines) {
        tokens.push_back({TokenKind::kNewline, text_.substr(pos_, 1), line_, col_});
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        Advance();
      } else if (at_line_start_ && c == '/' && Peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
      } else {
        at_line_start_ = false;
        return;
      }
    }
  }
  void LexName() {
    while (pos_ < text_.size() && IsIdentChar(text_[pos_]) &&
           !(text_[pos_] == '.' && Peek(1) == '.')) {
      Advance();
    }
  }
  void LexNumber() {
    if (text_[pos_] == '-') Advance();
    if (Rest(0, 3) == "inf") {
      for (int i = 0; i < 3; ++i) Advance();
      return;
    }
    while (IsDigit(Peek(0))) Advance();
    if (Peek(0) == '.' && IsDigit(Peek(1))) {
      Advance();
      while (IsDigit(Peek(0))) Advance();
    }
    if ((Peek(0) == 'e' || Peek(0) == 'E') &&
        (IsDigit(Peek(1)) || ((Peek(1) == '-' || Peek(1) == '+') && IsDigit(Peek(2))))) {
      Advance();
      if (Peek(0) == '-' || Peek(0) == '+') Advance();
      while (IsDigit(Peek(0))) Advance();
    }
  }
  bool LexPunct() {
    for (std::string_view p : kTwoCharPuncts) {
      if (Rest(0, 2) == p) {
        Advance();
        Advance();
        return true;
      }
    }
    if (kOneCharPuncts.find(text_[pos_]) == std::string_view::npos) return false;
    Advance();
    return true;
  }

  std::string_view text_;
  LexOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  bool at_line_start_ = true;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view text, LexOptions options) {
  return Lexer(text, options).Run();
}

std::string DescribeToken(const Token& tok) {
  switch (tok.kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kNewline: return "end of line";
    case TokenKind::kBuffer: return absl::StrCat("'%", std::string(tok.text), "'");
    case TokenKind::kGlobal: return absl::StrCat("'@", std::string(tok.text), "'");
    default: return absl::StrCat("'", std::string(tok.text), "'");
  }
}

absl::Status ErrorAt(const Token& tok, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(tok.line, ":", tok.col, ": ", std::string(message)));
}

bool IsFloatLiteral(std::string_view text) {
  return text.find_first_of(".eE") != std::string_view::npos ||
         text.find("inf") != std::string_view::npos || text.find("nan") != std::string_view::npos;
}

}  // namespace kiln::loop
