// The parser of sym::Expr's printed form (recursive descent):
//   expr   := term (('+' | '-') term)*
//   term   := unary ('*' unary)*
//   unary  := '-' unary | atom
//   atom   := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
// with NAME one of floordiv, ceildiv, mod (two arguments), min, max (two or more), or a symbol.
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/sym/expr.h"

namespace kiln::sym {
namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::map<std::string, Symbol>& symbols)
      : text_(text), symbols_(symbols) {}

  absl::StatusOr<Expr> ParseAll() {
    absl::StatusOr<Expr> e = ParseExpr();
    if (!e.ok()) return e;
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text");
    return e;
  }

 private:
  // "WHAT 'next text' at column N of 'TEXT'"; with `quote_rest` false the next text is left
  // out (WHAT names it already).
  absl::Status Error(const std::string& what, bool quote_rest = true) {
    std::string rest;
    if (quote_rest) {
      rest = pos_ < text_.size() ? absl::StrCat(" '", text_.substr(pos_, 8), "'") : " (end)";
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, rest, " at column ", pos_ + 1, " of '", text_, "'"));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool Eat(char ch) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ch) {
      ++pos_;
      return true;
    }
    return false;
  }

  absl::StatusOr<Expr> ParseExpr() {
    absl::StatusOr<Expr> acc = ParseTerm();
    if (!acc.ok()) return acc;
    while (true) {
      bool plus = Eat('+');
      if (!plus && !Eat('-')) return acc;
      absl::StatusOr<Expr> rhs = ParseTerm();
      if (!rhs.ok()) return rhs;
      acc = plus ? *acc + *rhs : *acc - *rhs;
    }
  }

  absl::StatusOr<Expr> ParseTerm() {
    absl::StatusOr<Expr> acc = ParseUnary();
    if (!acc.ok()) return acc;
    while (Eat('*')) {
      absl::StatusOr<Expr> rhs = ParseUnary();
      if (!rhs.ok()) return rhs;
      acc = *acc * *rhs;
    }
    return acc;
  }

  absl::StatusOr<Expr> ParseUnary() {
    if (Eat('-')) {
      absl::StatusOr<Expr> e = ParseUnary();
      if (!e.ok()) return e;
      return -*e;
    }
    return ParseAtom();
  }

  absl::StatusOr<Expr> ParseAtom() {
    SkipSpace();
    if (pos_ >= text_.size()) return Error("expected a number, a symbol or '('");
    if (Eat('(')) {
      absl::StatusOr<Expr> e = ParseExpr();
      if (!e.ok()) return e;
      if (!Eat(')')) return Error("expected ')'");
      return e;
    }
    char ch = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v)) {
          pos_ = start;
          return Error("integer out of int64 range");
        }
        ++pos_;
      }
      return Expr(v);
    }
    if (!std::isalpha(static_cast<unsigned char>(ch)) && ch != '_') {
      return Error("expected a number, a symbol or '('");
    }
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') break;
      ++pos_;
    }
    std::string name(text_.substr(start, pos_ - start));
    bool function = name == "floordiv" || name == "ceildiv" || name == "mod" || name == "min" ||
                    name == "max";
    if (!function) {
      auto it = symbols_.find(name);
      if (it == symbols_.end()) {
        pos_ = start;
        return Error(absl::StrCat("unknown symbol '", name, "'"), /*quote_rest=*/false);
      }
      return Expr::Sym(it->second);
    }
    if (!Eat('(')) return Error(absl::StrCat("expected '(' after ", name));
    std::vector<Expr> args;
    do {
      absl::StatusOr<Expr> arg = ParseExpr();
      if (!arg.ok()) return arg;
      args.push_back(*arg);
    } while (Eat(','));
    if (!Eat(')')) return Error("expected ')' or ','");
    bool binary = name == "floordiv" || name == "ceildiv" || name == "mod";
    if (binary ? args.size() != 2 : args.size() < 2) {
      pos_ = start;
      return Error(absl::StrCat(name, " takes ", binary ? "two arguments" : "two or more arguments"),
                   /*quote_rest=*/false);
    }
    if (name == "floordiv") return FloorDiv(args[0], args[1]);
    if (name == "ceildiv") return CeilDiv(args[0], args[1]);
    if (name == "mod") return Mod(args[0], args[1]);
    Expr acc = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
      acc = name == "min" ? Min(acc, args[i]) : Max(acc, args[i]);
    }
    return acc;
  }

  std::string text_;
  const std::map<std::string, Symbol>& symbols_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Expr> Parse(std::string_view text, const std::map<std::string, Symbol>& symbols) {
  return Parser(text, symbols).ParseAll();
}

}  // namespace kiln::sym
