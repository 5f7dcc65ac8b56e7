// Parser for the textual graph IR printed by PrintGraph: a small hand-written lexer and a
// recursive-descent parser that builds a Graph, reporting errors as "LINE:COL: message".
#include "compiler_core/ir/graph/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::graph {
namespace {

enum class TokKind { kEof, kIdent, kValue, kGlobal, kString, kNumber, kArrow, kPunct };

struct Token {
  TokKind kind = TokKind::kEof;
  std::string_view text;  // for kValue/kGlobal without the sigil, for kString without quotes
  int line = 1;
  int col = 1;
};

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

absl::Status ErrorAt(int line, int col, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(line, ":", col, ": ", std::string(message)));
}
absl::Status ErrorAt(const Token& tok, std::string_view message) {
  return ErrorAt(tok.line, tok.col, message);
}

std::string Describe(const Token& tok) {
  switch (tok.kind) {
    case TokKind::kEof: return "end of input";
    case TokKind::kValue: return absl::StrCat("'%", std::string(tok.text), "'");
    case TokKind::kGlobal: return absl::StrCat("'@", std::string(tok.text), "'");
    case TokKind::kString: return absl::StrCat("string \"", std::string(tok.text), "\"");
    default: return absl::StrCat("'", std::string(tok.text), "'");
  }
}

/// Splits the text into tokens, skipping whitespace and `//` comments.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<Token>> Tokenize() {
    std::vector<Token> tokens;
    while (true) {
      SkipSpaceAndComments();
      Token tok;
      tok.line = line_;
      tok.col = col_;
      if (pos_ >= text_.size()) {
        tokens.push_back(tok);
        return tokens;
      }
      char c = text_[pos_];
      size_t start = pos_;
      if (c == '%' || c == '@') {
        Advance();
        while (pos_ < text_.size() && (IsIdentChar(text_[pos_]) || text_[pos_] == '-')) Advance();
        if (pos_ == start + 1) return ErrorAt(tok, absl::StrCat("expected a name after '", std::string(1, c), "'"));
        tok.kind = c == '%' ? TokKind::kValue : TokKind::kGlobal;
        tok.text = text_.substr(start + 1, pos_ - start - 1);
      } else if (c == '"') {
        Advance();
        while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') Advance();
        if (pos_ >= text_.size() || text_[pos_] != '"') {
          return ErrorAt(tok, "unterminated string");
        }
        tok.kind = TokKind::kString;
        tok.text = text_.substr(start + 1, pos_ - start - 1);
        Advance();
      } else if (c == '-' && Peek(1) == '>') {
        Advance();
        Advance();
        tok.kind = TokKind::kArrow;
        tok.text = text_.substr(start, 2);
      } else if (IsDigit(c) || ((c == '-' || c == '+') && (IsDigit(Peek(1)) || Peek(1) == 'i' ||
                                                          Peek(1) == 'n'))) {
        LexNumber();
        tok.kind = TokKind::kNumber;
        tok.text = text_.substr(start, pos_ - start);
      } else if (IsIdentChar(c)) {
        while (pos_ < text_.size() && IsIdentChar(text_[pos_])) Advance();
        tok.kind = TokKind::kIdent;
        tok.text = text_.substr(start, pos_ - start);
      } else if (std::string_view("(){}[]<>,:=").find(c) != std::string_view::npos) {
        Advance();
        tok.kind = TokKind::kPunct;
        tok.text = text_.substr(start, 1);
      } else {
        return ErrorAt(tok, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      tokens.push_back(tok);
    }
  }

 private:
  char Peek(size_t ahead) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        Advance();
      } else if (c == '/' && Peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
      } else {
        return;
      }
    }
  }
  // A number: [+-] then "inf" | "nan" | digits with '.', and an exponent with its own sign.
  void LexNumber() {
    if (text_[pos_] == '-' || text_[pos_] == '+') Advance();
    if (text_.substr(pos_, 3) == "inf" || text_.substr(pos_, 3) == "nan") {
      for (int i = 0; i < 3; ++i) Advance();
      return;
    }
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (IsDigit(c) || c == '.') {
        Advance();
      } else if ((c == 'e' || c == 'E')) {
        Advance();
        if (Peek(0) == '-' || Peek(0) == '+') Advance();
      } else {
        return;
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

bool IsFloatLiteral(std::string_view text) {
  return text.find_first_of(".eE") != std::string_view::npos ||
         text.find("inf") != std::string_view::npos || text.find("nan") != std::string_view::npos;
}

std::optional<double> ToDouble(std::string_view text) {
  std::string s(text);
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan" || s == "-nan") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

template <typename T>
std::optional<T> ToInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  T v = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

template <typename T>
void Store(Tensor& t, int64_t i, T v) {
  std::memcpy(t.bytes.data() + i * sizeof(T), &v, sizeof(T));
}

/// Writes the literal `tok` as element `i` of `t`, checking that it fits the dtype.
absl::Status StoreElement(Tensor& t, int64_t i, const Token& tok) {
  DType dtype = t.type.dtype;
  if (IsFloat(dtype)) {
    std::optional<double> v = ToDouble(tok.text);
    if (!v) return ErrorAt(tok, absl::StrCat("expected a number, got ", Describe(tok)));
    if (dtype == DType::kFloat64) Store<double>(t, i, *v);
    if (dtype == DType::kFloat32) Store<float>(t, i, static_cast<float>(*v));
    if (dtype == DType::kFloat16) Store<uint16_t>(t, i, FloatToHalf(static_cast<float>(*v)));
    if (dtype == DType::kBFloat16) Store<uint16_t>(t, i, FloatToBFloat16(static_cast<float>(*v)));
    return absl::OkStatus();
  }
  std::string expected = absl::StrCat("expected an integer of type ", DTypeName(dtype), ", got ",
                                      Describe(tok));
  if (dtype == DType::kUInt64) {
    std::optional<uint64_t> v = ToInt<uint64_t>(tok.text);
    if (!v) return ErrorAt(tok, expected);
    Store<uint64_t>(t, i, *v);
    return absl::OkStatus();
  }
  std::optional<int64_t> v = ToInt<int64_t>(tok.text);
  if (!v) return ErrorAt(tok, expected);
  auto check = [&](int64_t lo, int64_t hi) { return *v >= lo && *v <= hi; };
  bool fits = true;
  switch (dtype) {
    case DType::kInt8: fits = check(INT8_MIN, INT8_MAX); if (fits) Store<int8_t>(t, i, *v); break;
    case DType::kInt16: fits = check(INT16_MIN, INT16_MAX); if (fits) Store<int16_t>(t, i, *v); break;
    case DType::kInt32: fits = check(INT32_MIN, INT32_MAX); if (fits) Store<int32_t>(t, i, *v); break;
    case DType::kInt64: Store<int64_t>(t, i, *v); break;
    case DType::kUInt8: fits = check(0, UINT8_MAX); if (fits) Store<uint8_t>(t, i, *v); break;
    case DType::kUInt16: fits = check(0, UINT16_MAX); if (fits) Store<uint16_t>(t, i, *v); break;
    case DType::kUInt32: fits = check(0, UINT32_MAX); if (fits) Store<uint32_t>(t, i, *v); break;
    case DType::kBool: fits = check(0, 1); if (fits) Store<uint8_t>(t, i, *v); break;
    default: break;
  }
  if (!fits) return ErrorAt(tok, absl::StrCat(std::string(tok.text), " does not fit in ", DTypeName(dtype)));
  return absl::OkStatus();
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<std::unique_ptr<Graph>> ParseGraphDef() {
    graph_ = std::make_unique<Graph>();
    KILN_RETURN_IF_ERROR(ExpectKeyword("graph"));
    if (Cur().kind != TokKind::kGlobal) return Unexpected("a graph name '@name'");
    graph_->set_name(std::string(Take().text));
    if (Consume("<")) KILN_RETURN_IF_ERROR(ParseSymbols());
    KILN_RETURN_IF_ERROR(Expect("("));
    if (!IsPunct(")")) {
      do {
        KILN_RETURN_IF_ERROR(ParseParam());
      } while (Consume(","));
    }
    KILN_RETURN_IF_ERROR(Expect(")"));
    if (Cur().kind != TokKind::kArrow) return Unexpected("'->'");
    Take();
    KILN_RETURN_IF_ERROR(Expect("("));
    std::vector<std::pair<Token, std::string>> results;  // value token, output name
    if (!IsPunct(")")) {
      do {
        if (Cur().kind != TokKind::kValue) return Unexpected("a result value '%N'");
        Token value = Take();
        if (Cur().kind != TokKind::kString) return Unexpected("a quoted result name");
        results.emplace_back(value, std::string(Take().text));
      } while (Consume(","));
    }
    KILN_RETURN_IF_ERROR(Expect(")"));
    KILN_RETURN_IF_ERROR(Expect("{"));
    while (!(Cur().kind == TokKind::kIdent && Cur().text == "return")) {
      if (Cur().kind == TokKind::kEof) return Unexpected("'return'");
      KILN_RETURN_IF_ERROR(ParseStatement());
    }
    Take();
    std::vector<Token> returned;
    while (Cur().kind == TokKind::kValue) {
      returned.push_back(Take());
      if (!Consume(",")) break;
    }
    KILN_RETURN_IF_ERROR(Expect("}"));
    if (Cur().kind != TokKind::kEof) return Unexpected("end of input after the graph");
    return Finish(results, returned);
  }

 private:
  const Token& Cur() const { return tokens_[pos_]; }
  Token Take() {
    Token t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsPunct(std::string_view p) const {
    return Cur().kind == TokKind::kPunct && Cur().text == p;
  }
  bool Consume(std::string_view p) {
    if (!IsPunct(p)) return false;
    Take();
    return true;
  }
  absl::Status Unexpected(std::string_view what) const {
    return ErrorAt(Cur(), absl::StrCat("expected ", std::string(what), ", got ", Describe(Cur())));
  }
  absl::Status Expect(std::string_view p) {
    if (!Consume(p)) return Unexpected(absl::StrCat("'", std::string(p), "'"));
    return absl::OkStatus();
  }
  absl::Status ExpectKeyword(std::string_view word) {
    if (Cur().kind != TokKind::kIdent || Cur().text != word) {
      return Unexpected(absl::StrCat("'", std::string(word), "'"));
    }
    Take();
    return absl::OkStatus();
  }

  absl::StatusOr<Value*> Lookup(const Token& tok) const {
    auto it = values_.find(std::string(tok.text));
    if (it == values_.end()) {
      return ErrorAt(tok, absl::StrCat("use of undefined value %", std::string(tok.text)));
    }
    return it->second;
  }
  absl::Status Define(const Token& tok, Value* value) {
    if (!values_.emplace(std::string(tok.text), value).second) {
      return ErrorAt(tok, absl::StrCat("value %", std::string(tok.text), " is defined twice"));
    }
    return absl::OkStatus();
  }

  // "name=[min,max]" entries (max a number or inf) up to '>'; the '<' is taken.
  absl::Status ParseSymbols() {
    do {
      if (Cur().kind != TokKind::kIdent) return Unexpected("a symbol 'name=[min,max]'");
      Token name = Take();
      if (!sym::IsSymbolName(name.text)) {
        return ErrorAt(name, absl::StrCat("'", std::string(name.text), "' is not a symbol name"));
      }
      KILN_RETURN_IF_ERROR(Expect("="));
      KILN_RETURN_IF_ERROR(Expect("["));
      std::optional<int64_t> min;
      if (Cur().kind == TokKind::kNumber) min = ToInt<int64_t>(Cur().text);
      if (!min) return Unexpected("the symbol's minimum");
      Take();
      KILN_RETURN_IF_ERROR(Expect(","));
      std::optional<int64_t> max;
      if (Cur().text == "inf") {
        max = sym::kUnbounded;
      } else if (Cur().kind == TokKind::kNumber) {
        max = ToInt<int64_t>(Cur().text);
      }
      if (!max || *max < *min) return Unexpected("the symbol's maximum (>= its minimum, or inf)");
      Take();
      KILN_RETURN_IF_ERROR(Expect("]"));
      std::string key(name.text);
      if (!symbols_.emplace(key, sym::Symbol{key, *min, *max}).second) {
        return ErrorAt(name, absl::StrCat("symbol '", key, "' is declared twice"));
      }
    } while (Consume(","));
    return Expect(">");
  }

  absl::StatusOr<TensorType> ParseType() {
    if (Cur().kind != TokKind::kIdent) return Unexpected("a tensor type such as f32[1,4]");
    Token dtype_tok = Take();
    std::optional<DType> dtype = ParseDType(dtype_tok.text);
    if (!dtype) {
      return ErrorAt(dtype_tok, absl::StrCat("unknown element type '", std::string(dtype_tok.text), "'"));
    }
    std::vector<sym::Expr> dims;
    KILN_RETURN_IF_ERROR(Expect("["));
    if (!IsPunct("]")) {
      do {
        if (Cur().kind == TokKind::kString) {
          // A symbolic dim: a quoted expression over the symbols declared after the graph name.
          absl::StatusOr<sym::Expr> dim = sym::Parse(Cur().text, symbols_);
          if (!dim.ok()) {
            return ErrorAt(Cur(), absl::StrCat("bad symbolic dimension: ", dim.status().message()));
          }
          Take();
          dims.push_back(*dim);
          continue;
        }
        std::optional<int64_t> dim;
        if (Cur().kind == TokKind::kNumber) dim = ToInt<int64_t>(Cur().text);
        if (!dim || *dim < 0) return Unexpected("a non-negative dimension or a quoted expression");
        Take();
        dims.push_back(*dim);
      } while (Consume(","));
    }
    KILN_RETURN_IF_ERROR(Expect("]"));
    return TensorType::WithDims(*dtype, dims);
  }

  absl::Status ParseParam() {
    if (Cur().kind != TokKind::kValue) return Unexpected("a parameter '%N \"name\": type'");
    Token value = Take();
    if (Cur().kind != TokKind::kString) return Unexpected("a quoted parameter name");
    std::string name(Take().text);
    KILN_RETURN_IF_ERROR(Expect(":"));
    KILN_ASSIGN_OR_RETURN(TensorType type, ParseType());
    return Define(value, graph_->AddInput(std::move(name), std::move(type)));
  }

  absl::Status ParseStatement() {
    std::vector<Token> defs;
    do {
      if (Cur().kind != TokKind::kValue) return Unexpected("a value '%N' or 'return'");
      defs.push_back(Take());
    } while (Consume(","));
    KILN_RETURN_IF_ERROR(Expect("="));
    if (Cur().kind == TokKind::kIdent && Cur().text == "const") {
      Take();
      if (defs.size() != 1) return ErrorAt(defs[1], "a constant defines exactly one value");
      return ParseConstant(defs[0]);
    }
    return ParseNode(defs);
  }

  absl::Status ParseConstant(const Token& def) {
    Token type_tok = Cur();
    KILN_ASSIGN_OR_RETURN(TensorType type, ParseType());
    // Checked before anything is allocated: a type's size follows its text, not its data.
    const int64_t bytes = type.CheckedNumBytes();
    if (bytes < 0 || bytes > kMaxParsedConstantBytes) {
      return ErrorAt(type_tok,
                     absl::StrCat("constant %", std::string(def.text), " of type ", type.ToString(),
                                  " is larger than the ", kMaxParsedConstantBytes,
                                  " bytes a parsed constant "
                                  "may have"));
    }
    int64_t n = type.NumElements();
    std::shared_ptr<Tensor> tensor;
    Token kind = Cur();
    if (kind.kind == TokKind::kIdent && kind.text == "sha256") {
      return ErrorAt(kind, absl::StrCat("constant %", std::string(def.text),
                                        " is elided (sha256 digest) and cannot be parsed; "
                                        "write its elements with dense<[...]> or splat<...>"));
    }
    if (kind.kind == TokKind::kIdent && kind.text == "splat") {
      Take();
      KILN_RETURN_IF_ERROR(Expect("<"));
      Token elem = Cur();
      if (elem.kind != TokKind::kNumber && elem.kind != TokKind::kIdent) {
        return Unexpected("a splat element");
      }
      tensor = Tensor::Zeros(type);
      Take();
      for (int64_t i = 0; i < n; ++i) KILN_RETURN_IF_ERROR(StoreElement(*tensor, i, elem));
      KILN_RETURN_IF_ERROR(Expect(">"));
    } else if (kind.kind == TokKind::kIdent && kind.text == "dense") {
      Take();
      KILN_RETURN_IF_ERROR(Expect("<"));
      KILN_RETURN_IF_ERROR(Expect("["));
      // n elements take at least n tokens: a type larger than the rest of the text is refused
      // before its storage is allocated.
      if (n > static_cast<int64_t>(tokens_.size() - pos_)) {
        return ErrorAt(
            kind, absl::StrCat("constant %", std::string(def.text), " of type ", type.ToString(),
                               " needs ", n, " elements; the text has fewer"));
      }
      tensor = Tensor::Zeros(type);
      int64_t count = 0;
      if (!IsPunct("]")) {
        do {
          Token elem = Cur();
          if (elem.kind != TokKind::kNumber && elem.kind != TokKind::kIdent) {
            return Unexpected("a constant element");
          }
          Take();
          if (count >= n) {
            return ErrorAt(elem, absl::StrCat("too many elements for constant of type ",
                                              type.ToString(), " (expected ", n, ")"));
          }
          KILN_RETURN_IF_ERROR(StoreElement(*tensor, count++, elem));
        } while (Consume(","));
      }
      if (count != n) {
        return ErrorAt(Cur(), absl::StrCat("constant %", std::string(def.text), " has ", count,
                                           " elements, type ", type.ToString(), " needs ", n));
      }
      KILN_RETURN_IF_ERROR(Expect("]"));
      KILN_RETURN_IF_ERROR(Expect(">"));
    } else {
      return Unexpected("constant data 'dense<[...]>' or 'splat<...>'");
    }
    return Define(def, graph_->AddConstant("", std::move(tensor)));
  }

  absl::StatusOr<AttrValue> ParseAttrValue() {
    Token tok = Cur();
    if (tok.kind == TokKind::kString) {
      Take();
      return AttrValue(std::string(tok.text));
    }
    if (tok.kind == TokKind::kIdent && tok.text == "tensor") {
      return ErrorAt(tok, "tensor attributes are printed as digests and cannot be parsed");
    }
    if (tok.kind == TokKind::kNumber || (tok.kind == TokKind::kIdent &&
                                         (tok.text == "inf" || tok.text == "nan"))) {
      Take();
      if (IsFloatLiteral(tok.text)) return AttrValue(static_cast<float>(*ToDouble(tok.text)));
      std::optional<int64_t> v = ToInt<int64_t>(tok.text);
      if (!v) return ErrorAt(tok, absl::StrCat("malformed integer ", std::string(tok.text)));
      return AttrValue(*v);
    }
    if (!IsPunct("[")) return Unexpected("an attribute value");
    Take();
    std::vector<Token> elems;
    bool any_float = false;
    if (!IsPunct("]")) {
      do {
        Token e = Cur();
        bool ok = e.kind == TokKind::kNumber ||
                  (e.kind == TokKind::kIdent && (e.text == "inf" || e.text == "nan"));
        if (!ok) return Unexpected("a list element (a number)");
        Take();
        any_float = any_float || IsFloatLiteral(e.text);
        elems.push_back(e);
      } while (Consume(","));
    }
    KILN_RETURN_IF_ERROR(Expect("]"));
    if (any_float) {
      std::vector<float> fs;
      for (const Token& e : elems) {
        std::optional<double> v = ToDouble(e.text);
        if (!v) return ErrorAt(e, absl::StrCat("malformed number ", std::string(e.text)));
        fs.push_back(static_cast<float>(*v));
      }
      return AttrValue(std::move(fs));
    }
    std::vector<int64_t> is;
    for (const Token& e : elems) {
      std::optional<int64_t> v = ToInt<int64_t>(e.text);
      if (!v) return ErrorAt(e, absl::StrCat("malformed integer ", std::string(e.text)));
      is.push_back(*v);
    }
    return AttrValue(std::move(is));
  }

  absl::Status ParseNode(const std::vector<Token>& defs) {
    if (Cur().kind != TokKind::kIdent) return Unexpected("an op name or 'const'");
    Token op_tok = Take();
    std::optional<OpKind> op = OpKindFromName(op_tok.text);
    if (!op) return ErrorAt(op_tok, absl::StrCat("unknown op '", std::string(op_tok.text), "'"));
    KILN_RETURN_IF_ERROR(Expect("("));
    std::vector<Value*> inputs;
    if (!IsPunct(")")) {
      do {
        if (Cur().kind == TokKind::kIdent && Cur().text == "_") {
          Take();
          inputs.push_back(nullptr);
          continue;
        }
        if (Cur().kind != TokKind::kValue) return Unexpected("an operand '%N' or '_'");
        KILN_ASSIGN_OR_RETURN(Value * v, Lookup(Take()));
        inputs.push_back(v);
      } while (Consume(","));
    }
    KILN_RETURN_IF_ERROR(Expect(")"));
    AttrMap attrs;
    if (Consume("{")) {
      do {
        if (Cur().kind != TokKind::kIdent) return Unexpected("an attribute name");
        Token key = Take();
        if (attrs.Has(std::string(key.text))) {
          return ErrorAt(key, absl::StrCat("duplicate attribute '", std::string(key.text), "'"));
        }
        KILN_RETURN_IF_ERROR(Expect("="));
        KILN_ASSIGN_OR_RETURN(AttrValue value, ParseAttrValue());
        attrs.Set(std::string(key.text), std::move(value));
      } while (Consume(","));
      KILN_RETURN_IF_ERROR(Expect("}"));
    }
    KILN_RETURN_IF_ERROR(Expect(":"));
    std::vector<TensorType> types;
    do {
      KILN_ASSIGN_OR_RETURN(TensorType t, ParseType());
      types.push_back(std::move(t));
    } while (Consume(","));
    if (types.size() != defs.size()) {
      return ErrorAt(op_tok, absl::StrCat(OpName(*op), " defines ", defs.size(),
                                          " values but lists ", types.size(), " types"));
    }
    int group = -1;
    if (Cur().kind == TokKind::kIdent && Cur().text == "group") {
      Take();
      KILN_RETURN_IF_ERROR(Expect("="));
      std::optional<int64_t> g;
      if (Cur().kind == TokKind::kNumber) g = ToInt<int64_t>(Cur().text);
      if (!g || *g < 0 || *g > std::numeric_limits<int>::max()) {
        return Unexpected("a non-negative group id");
      }
      Take();
      group = static_cast<int>(*g);
    }
    Node* node = graph_->AddNode(*op, absl::StrCat("%", std::string(defs[0].text)),
                                 std::move(inputs), std::move(types), std::move(attrs));
    node->set_fusion_group(group);
    for (size_t i = 0; i < defs.size(); ++i) {
      KILN_RETURN_IF_ERROR(Define(defs[i], node->output(static_cast<int>(i))));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Graph>> Finish(
      const std::vector<std::pair<Token, std::string>>& results,
      const std::vector<Token>& returned) {
    if (results.size() != returned.size()) {
      const Token& at = returned.empty() ? Cur() : returned[0];
      return ErrorAt(at, absl::StrCat("return lists ", returned.size(),
                                      " values but the signature declares ", results.size()));
    }
    std::vector<Value*> outputs;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].first.text != returned[i].text) {
        return ErrorAt(returned[i], absl::StrCat("return value ", i, " is %",
                                                 std::string(returned[i].text),
                                                 " but the signature declares %",
                                                 std::string(results[i].first.text)));
      }
      KILN_ASSIGN_OR_RETURN(Value * v, Lookup(results[i].first));
      v->set_name(results[i].second);
      outputs.push_back(v);
    }
    graph_->SetOutputs(std::move(outputs));
    return std::move(graph_);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Value*> values_;  // lookup only; never iterated
  std::map<std::string, sym::Symbol> symbols_;       // declared after the graph's name
};

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(std::string_view text) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text).Tokenize());
  return Parser(std::move(tokens)).ParseGraphDef();
}

}  // namespace kiln::graph
