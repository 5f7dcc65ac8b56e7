// Recursive-descent parser for the loop IR text form, over the shared loop IR lexer. Names are
// resolved through scope stacks (loop variables, alloc'd buffers) as the text is read.
#include "compiler_core/ir/loop/parser.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/lexer.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::loop {
namespace {

// The last enumerators; the name lookups below walk the enums up to them.
constexpr BinaryOp kLastBinaryOp = BinaryOp::kDot4U8S8;
constexpr UnaryOp kLastUnaryOp = UnaryOp::kAtanh;
constexpr ForKind kLastForKind = ForKind::kThreadIdxZ;

template <typename Enum>
std::optional<Enum> EnumFromName(std::string_view name, Enum last, const char* (*name_of)(Enum)) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    Enum e = static_cast<Enum>(i);
    if (name == name_of(e)) return e;
  }
  return std::nullopt;
}

bool IsCallBinary(BinaryOp op) {
  return op == BinaryOp::kMin || op == BinaryOp::kMax || op == BinaryOp::kPow ||
         op == BinaryOp::kDot4U8S8;
}

std::optional<double> ParseDouble(std::string_view text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<Func> Run() {
    Func func;
    KILN_RETURN_IF_ERROR(Expect("func"));
    KILN_ASSIGN_OR_RETURN(Token name, ExpectKind(TokenKind::kGlobal, "a function name '@name'"));
    func.name = std::string(name.text);
    KILN_RETURN_IF_ERROR(ParseBufferList(func.params, /*allow_const=*/true));
    if (Peek().Is("workspace")) {
      Next();
      KILN_RETURN_IF_ERROR(ParseBufferList(func.workspaces, /*allow_const=*/false));
    }
    KILN_RETURN_IF_ERROR(Expect("anchor"));
    KILN_RETURN_IF_ERROR(Expect("="));
    KILN_ASSIGN_OR_RETURN(Token anchor, ExpectKind(TokenKind::kIdent, "an op name"));
    std::optional<graph::OpKind> op = graph::OpKindFromName(anchor.text);
    if (!op) return ErrorAt(anchor, absl::StrCat("unknown anchor op ", DescribeToken(anchor)));
    func.anchor = *op;
    KILN_ASSIGN_OR_RETURN(func.body, ParseBody(&func.init));
    if (Peek().kind != TokenKind::kEof) {
      return ErrorAt(Peek(), absl::StrCat("expected end of input after the func, got ",
                                          DescribeToken(Peek())));
    }
    return func;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  Token Next() {
    Token tok = Peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return tok;
  }
  /// Consumes a keyword, punctuation or number token spelled `text`.
  absl::Status Expect(std::string_view text) {
    const Token& tok = Peek();
    if (!tok.Is(text) && !(tok.kind == TokenKind::kNumber && tok.text == text)) {
      return ErrorAt(tok, absl::StrCat("expected '", std::string(text), "', got ",
                                       DescribeToken(tok)));
    }
    Next();
    return absl::OkStatus();
  }
  absl::StatusOr<Token> ExpectKind(TokenKind kind, std::string_view what) {
    if (Peek().kind != kind) {
      return ErrorAt(Peek(), absl::StrCat("expected ", std::string(what), ", got ",
                                          DescribeToken(Peek())));
    }
    return Next();
  }
  absl::StatusOr<int64_t> ParseInt(std::string_view what) {
    const Token& tok = Peek();
    int64_t v = 0;
    auto res = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
    if (tok.kind != TokenKind::kNumber || res.ec != std::errc() ||
        res.ptr != tok.text.data() + tok.text.size()) {
      return ErrorAt(tok, absl::StrCat("expected ", std::string(what), ", got ",
                                       DescribeToken(tok)));
    }
    Next();
    return v;
  }
  absl::StatusOr<DType> ParseDTypeToken() {
    KILN_ASSIGN_OR_RETURN(Token tok, ExpectKind(TokenKind::kIdent, "a dtype"));
    std::optional<DType> dtype = ::kiln::ParseDType(tok.text);
    if (!dtype) return ErrorAt(tok, absl::StrCat("unknown dtype ", DescribeToken(tok)));
    return *dtype;
  }

  // ---- Buffers and scopes ----

  /// "%name: dtype[d0,d1,...]", declared in the current scope; a param may be followed by
  /// "const" (`allow_const`).
  absl::StatusOr<BufferRef> ParseBufferDecl(Buffer::Scope scope, bool allow_const = false) {
    KILN_ASSIGN_OR_RETURN(Token name, ExpectKind(TokenKind::kBuffer, "a buffer '%name'"));
    if (FindBuffer(name.text)) {
      return ErrorAt(name, absl::StrCat("buffer ", DescribeToken(name), " is already defined"));
    }
    KILN_RETURN_IF_ERROR(Expect(":"));
    KILN_ASSIGN_OR_RETURN(DType dtype, ParseDTypeToken());
    KILN_RETURN_IF_ERROR(Expect("["));
    std::vector<Expr> dims;
    while (!Peek().Is("]")) {
      if (!dims.empty()) KILN_RETURN_IF_ERROR(Expect(","));
      if (Peek().kind != TokenKind::kNumber) {
        // A symbolic dim: an i64 expression of params declared before this buffer.
        if (scope != Buffer::Scope::kGlobal) {
          return ErrorAt(Peek(), absl::StrCat("only a global buffer can have a symbolic dim, not %",
                                              std::string(name.text)));
        }
        Token at = Peek();
        KILN_ASSIGN_OR_RETURN(Expr dim, ParseExpr());
        if (dim->dtype != DType::kInt64) {
          return ErrorAt(at, "a symbolic dimension must be an i64 expression");
        }
        dims.push_back(std::move(dim));
      } else {
        KILN_ASSIGN_OR_RETURN(int64_t dim, ParseInt("a dimension"));
        dims.push_back(IntImm(dim));
      }
    }
    Next();
    bool constant = false;
    if (Peek().Is("const")) {
      if (!allow_const) {
        return ErrorAt(Peek(),
                       absl::StrCat("only a param can be const, not %", std::string(name.text)));
      }
      Next();
      constant = true;
    }
    BufferRef buffer = MakeSymbolicBuffer(std::string(name.text), dtype, std::move(dims), constant);
    if (!buffer->is_symbolic()) {
      buffer = MakeBuffer(std::string(name.text), dtype, buffer->shape, scope, constant);
    }
    buffers_.push_back(buffer);
    return buffer;
  }
  /// "(decl, decl, ...)" of global buffers.
  absl::Status ParseBufferList(std::vector<BufferRef>& out, bool allow_const) {
    KILN_RETURN_IF_ERROR(Expect("("));
    while (!Peek().Is(")")) {
      if (!out.empty()) KILN_RETURN_IF_ERROR(Expect(","));
      KILN_ASSIGN_OR_RETURN(BufferRef b, ParseBufferDecl(Buffer::Scope::kGlobal, allow_const));
      out.push_back(std::move(b));
    }
    Next();
    return absl::OkStatus();
  }
  BufferRef FindBuffer(std::string_view name) const {
    for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
      if ((*it)->name == name) return *it;
    }
    return nullptr;
  }
  Var FindVar(std::string_view name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
      if ((*it)->name == name) return *it;
    }
    return nullptr;
  }

  // ---- Statements ----

  /// "{ stmt* }": one statement is itself, otherwise a Block. The func's body (`init` not
  /// null) may start with "init { stmt* }", parsed into *init.
  absl::StatusOr<Stmt> ParseBody(Stmt* init = nullptr) {
    KILN_RETURN_IF_ERROR(Expect("{"));
    if (init != nullptr && Peek().Is("init") && Peek(1).Is("{")) {
      Next();
      KILN_ASSIGN_OR_RETURN(*init, ParseBody());
    }
    std::vector<Stmt> stmts;
    while (!Peek().Is("}")) {
      if (Peek().kind == TokenKind::kEof) return ErrorAt(Peek(), "expected '}', got end of input");
      KILN_ASSIGN_OR_RETURN(Stmt s, ParseStmt());
      stmts.push_back(std::move(s));
    }
    Next();
    if (stmts.size() == 1) return stmts[0];
    return Block(std::move(stmts));
  }

  absl::StatusOr<Stmt> ParseStmt() {
    const Token& tok = Peek();
    if (tok.kind == TokenKind::kBuffer) return ParseStore();
    if (tok.Is("if")) return ParseIf();
    if (tok.Is("alloc")) return ParseAlloc();
    if (tok.Is("for")) return ParseFor(ForKind::kSerial);
    if (tok.kind == TokenKind::kIdent && tok.text.substr(0, 4) == "mma.") return ParseMma();
    if (tok.Is("async_copy")) return ParseAsyncCopy();
    if (tok.Is("async_wait")) {
      Next();
      KILN_ASSIGN_OR_RETURN(int64_t pending, ParseInt("the groups async_wait leaves in flight"));
      return AsyncWait(pending);
    }
    if (tok.kind == TokenKind::kIdent && Peek(1).Is("for")) {
      std::optional<ForKind> kind = EnumFromName(tok.text, kLastForKind, ForKindName);
      if (kind) {
        Next();
        return ParseFor(*kind);
      }
    }
    return ErrorAt(tok, absl::StrCat("expected a statement (for, if, alloc or a store "
                                     "'%buf[...] = ...'), got ",
                                     DescribeToken(tok)));
  }

  /// "[kind] for NAME in 0..EXTENT [reduce] { ... }"; the kind is already consumed.
  absl::StatusOr<Stmt> ParseFor(ForKind kind) {
    KILN_RETURN_IF_ERROR(Expect("for"));
    KILN_ASSIGN_OR_RETURN(Token name, ExpectKind(TokenKind::kIdent, "a loop variable name"));
    KILN_RETURN_IF_ERROR(Expect("in"));
    KILN_RETURN_IF_ERROR(Expect("0"));
    KILN_RETURN_IF_ERROR(Expect(".."));
    KILN_ASSIGN_OR_RETURN(int64_t extent, ParseInt("a loop extent"));
    bool is_reduction = false;
    if (Peek().Is("reduce")) {
      Next();
      is_reduction = true;
    }
    Expr limit;
    if (Peek().Is("limit")) {
      Next();
      KILN_ASSIGN_OR_RETURN(limit, ParseExpr());
    }
    Var var = MakeVar(std::string(name.text));
    vars_.push_back(var);
    absl::StatusOr<Stmt> body = ParseBody();
    vars_.pop_back();
    if (!body.ok()) return body.status();
    Stmt loop = For(std::move(var), extent, *std::move(body), kind, is_reduction);
    if (!limit) return loop;
    auto limited = std::make_shared<StmtNode>(*loop);
    limited->limit = std::move(limit);
    return Stmt(limited);
  }
  /// "%buf[i, j] = value".
  absl::StatusOr<Stmt> ParseStore() {
    Token at = Peek();
    KILN_ASSIGN_OR_RETURN(BufferRef buffer, ParseBufferUse());
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(*buffer, at));
    KILN_RETURN_IF_ERROR(Expect("="));
    Token value_at = Peek();
    KILN_ASSIGN_OR_RETURN(Expr value, ParseExpr());
    if (value->dtype != buffer->dtype) {
      return ErrorAt(value_at, absl::StrCat("stored value has dtype ", DTypeName(value->dtype),
                                            ", expected ", DTypeName(buffer->dtype), " of %",
                                            buffer->name));
    }
    return Store(std::move(buffer), std::move(indices), std::move(value));
  }

  /// "mma.SHAPE %acc[...] += (%a[a_k, a_m] * %b[b_k, b_n]) lane EXPR" (StmtKind::kMma).
  absl::StatusOr<Stmt> ParseMma() {
    Token name = Next();
    MmaShape shape = MmaShape::kNone;
    for (MmaShape s : {MmaShape::kM16N8K8Tf32, MmaShape::kM16N8K16F16, MmaShape::kM16N8K16Bf16}) {
      if (name.text == absl::StrCat("mma.", MmaShapeName(s))) shape = s;
    }
    if (shape == MmaShape::kNone) {
      return ErrorAt(name, absl::StrCat("unknown mma shape ", DescribeToken(name),
                                        " (mma.m16n8k8.tf32, mma.m16n8k16.f16, "
                                        "mma.m16n8k16.bf16)"));
    }
    Token at = Peek();
    KILN_ASSIGN_OR_RETURN(BufferRef acc, ParseBufferUse());
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(*acc, at));
    KILN_RETURN_IF_ERROR(Expect("+"));
    KILN_RETURN_IF_ERROR(Expect("="));
    Token value_at = Peek();
    KILN_ASSIGN_OR_RETURN(Expr value, ParseExpr());
    if (value->kind != ExprKind::kBinary || value->binary_op != BinaryOp::kMul ||
        value->operands[0]->kind != ExprKind::kLoad ||
        value->operands[1]->kind != ExprKind::kLoad) {
      return ErrorAt(value_at, "an mma's operands are (%a[k, m] * %b[k, n])");
    }
    KILN_RETURN_IF_ERROR(Expect("lane"));
    KILN_ASSIGN_OR_RETURN(Expr lane, ParseExpr());
    uint8_t layout = 0;
    if (Peek().Is("layout")) {
      Next();
      KILN_RETURN_IF_ERROR(Expect("("));
      Token a = Next();
      KILN_RETURN_IF_ERROR(Expect(","));
      Token b = Next();
      KILN_RETURN_IF_ERROR(Expect(")"));
      if (!(a.Is("km") || a.Is("mk")) || !(b.Is("kn") || b.Is("nk"))) {
        return ErrorAt(a, "an mma layout is (km|mk, kn|nk)");
      }
      layout =
          static_cast<uint8_t>((a.Is("mk") ? kMmaAMajorM : 0) | (b.Is("nk") ? kMmaBMajorN : 0));
    }
    return Mma(shape, std::move(acc), std::move(indices), value->operands[0], value->operands[1],
               std::move(lane), layout);
  }

  /// "async_copy xLANES %dst[...] = %src[...] [when COND]" (StmtKind::kAsyncCopy).
  absl::StatusOr<Stmt> ParseAsyncCopy() {
    KILN_RETURN_IF_ERROR(Expect("async_copy"));
    Token lanes_at = Next();
    int64_t lanes = 0;
    if (lanes_at.kind != TokenKind::kIdent || lanes_at.text.size() < 2 || lanes_at.text[0] != 'x' ||
        !absl::SimpleAtoi(std::string(lanes_at.text.substr(1)), &lanes) || lanes < 1) {
      return ErrorAt(lanes_at, absl::StrCat("expected the lanes of async_copy (x1, x2, x4, x8), "
                                            "got ",
                                            DescribeToken(lanes_at)));
    }
    Token at = Peek();
    KILN_ASSIGN_OR_RETURN(BufferRef dst, ParseBufferUse());
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(*dst, at));
    KILN_RETURN_IF_ERROR(Expect("="));
    Token src_at = Peek();
    KILN_ASSIGN_OR_RETURN(Expr src, ParseExpr());
    if (src->kind != ExprKind::kLoad) {
      return ErrorAt(src_at, "async_copy copies from a load '%buf[...]'");
    }
    Expr when;
    if (Peek().Is("when")) {
      Next();
      KILN_ASSIGN_OR_RETURN(when, ParseExpr());
    }
    return AsyncCopy(std::move(dst), std::move(indices), std::move(src), lanes, std::move(when));
  }

  /// "if cond { ... } [else { ... }]".
  absl::StatusOr<Stmt> ParseIf() {
    KILN_RETURN_IF_ERROR(Expect("if"));
    KILN_ASSIGN_OR_RETURN(Expr cond, ParseExpr());
    KILN_ASSIGN_OR_RETURN(Stmt then_body, ParseBody());
    Stmt else_body;
    if (Peek().Is("else")) {
      Next();
      KILN_ASSIGN_OR_RETURN(else_body, ParseBody());
    }
    return IfThenElse(std::move(cond), std::move(then_body), std::move(else_body));
  }

  /// "alloc [shared] %buf: dtype[shape] { ... }": a kLocal (kShared) buffer visible in the
  /// body.
  absl::StatusOr<Stmt> ParseAlloc() {
    KILN_RETURN_IF_ERROR(Expect("alloc"));
    Buffer::Scope scope = Buffer::Scope::kLocal;
    if (Peek().Is("shared")) {
      Next();
      scope = Buffer::Scope::kShared;
    }
    KILN_ASSIGN_OR_RETURN(BufferRef buffer, ParseBufferDecl(scope));
    absl::StatusOr<Stmt> body = ParseBody();
    buffers_.pop_back();
    if (!body.ok()) return body.status();
    return Allocate(std::move(buffer), *std::move(body));
  }

  // ---- Expressions ----

  absl::StatusOr<BufferRef> ParseBufferUse() {
    KILN_ASSIGN_OR_RETURN(Token name, ExpectKind(TokenKind::kBuffer, "a buffer '%name'"));
    BufferRef buffer = FindBuffer(name.text);
    if (!buffer) return ErrorAt(name, absl::StrCat("undefined buffer ", DescribeToken(name)));
    return buffer;
  }
  /// "[e, e, ...]" with one index per dimension of `buffer` (named by `at` in errors).
  absl::StatusOr<std::vector<Expr>> ParseIndices(const Buffer& buffer, const Token& at) {
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseExprList("[", "]"));
    if (indices.size() != buffer.shape.size()) {
      return ErrorAt(at, absl::StrCat("%", buffer.name, " has rank ", buffer.shape.size(),
                                      ", got ", indices.size(), " indices"));
    }
    return indices;
  }
  /// "open e, e, ... close".
  absl::StatusOr<std::vector<Expr>> ParseExprList(std::string_view open, std::string_view close) {
    KILN_RETURN_IF_ERROR(Expect(open));
    std::vector<Expr> exprs;
    while (!Peek().Is(close)) {
      if (!exprs.empty()) KILN_RETURN_IF_ERROR(Expect(","));
      KILN_ASSIGN_OR_RETURN(Expr e, ParseExpr());
      exprs.push_back(std::move(e));
    }
    Next();
    return exprs;
  }

  absl::StatusOr<Expr> ParseExpr() {
    const Token& tok = Peek();
    if (tok.kind == TokenKind::kNumber) return ParseLiteral();
    if (tok.kind == TokenKind::kBuffer) {
      Token at = tok;
      KILN_ASSIGN_OR_RETURN(BufferRef buffer, ParseBufferUse());
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(*buffer, at));
      return Load(std::move(buffer), std::move(indices));
    }
    if (tok.Is("(")) return ParseInfix();
    if (tok.kind == TokenKind::kIdent) {
      if (Peek(1).Is("(") || tok.text == "cast") return ParseCall();
      if (tok.text == "inf" || tok.text == "nan") return ParseLiteral();
      Var var = FindVar(tok.text);
      if (!var) return ErrorAt(tok, absl::StrCat("undefined loop variable ", DescribeToken(tok)));
      Next();
      return VarRef(var);
    }
    return ErrorAt(tok, absl::StrCat("expected an expression, got ", DescribeToken(tok)));
  }

  /// "42", "7:i32", "1:bool", "0.5", "-inf", "2.0:f64".
  absl::StatusOr<Expr> ParseLiteral() {
    Token tok = Next();
    bool is_float = IsFloatLiteral(tok.text);
    DType dtype = is_float ? DType::kFloat32 : DType::kInt64;
    if (Peek().Is(":")) {
      Next();
      KILN_ASSIGN_OR_RETURN(dtype, ParseDTypeToken());
    }
    if (is_float) {
      std::optional<double> v = ParseDouble(tok.text);
      if (!v) return ErrorAt(tok, absl::StrCat("malformed float literal ", DescribeToken(tok)));
      return FloatImm(*v, dtype);
    }
    int64_t v = 0;
    auto res = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
    if (res.ec != std::errc() || res.ptr != tok.text.data() + tok.text.size()) {
      return ErrorAt(tok, absl::StrCat("malformed integer literal ", DescribeToken(tok)));
    }
    return IntImm(v, dtype);
  }

  /// "(a OP b)" for the symbolic binary ops.
  absl::StatusOr<Expr> ParseInfix() {
    KILN_RETURN_IF_ERROR(Expect("("));
    KILN_ASSIGN_OR_RETURN(Expr a, ParseExpr());
    Token op_tok = Next();
    std::optional<BinaryOp> op = EnumFromName(op_tok.text, kLastBinaryOp, BinaryOpName);
    if (op_tok.kind != TokenKind::kPunct || !op || IsCallBinary(*op)) {
      return ErrorAt(op_tok, absl::StrCat("expected a binary operator, got ",
                                          DescribeToken(op_tok)));
    }
    KILN_ASSIGN_OR_RETURN(Expr b, ParseExpr());
    KILN_RETURN_IF_ERROR(Expect(")"));
    return MakeBinary(op_tok, *op, std::move(a), std::move(b));
  }
  absl::StatusOr<Expr> MakeBinary(const Token& at, BinaryOp op, Expr a, Expr b) {
    if (a->dtype != b->dtype) {
      return ErrorAt(at, absl::StrCat("operands of '", BinaryOpName(op), "' have dtypes ",
                                      DTypeName(a->dtype), " and ", DTypeName(b->dtype),
                                      ", expected the same"));
    }
    return Binary(op, std::move(a), std::move(b));
  }

  /// "min(a, b)", "exp(a)", "select(c, a, b)", "cast<dtype>(a)".
  absl::StatusOr<Expr> ParseCall() {
    Token name = Next();
    if (name.text == "cast") {
      KILN_RETURN_IF_ERROR(Expect("<"));
      KILN_ASSIGN_OR_RETURN(DType dtype, ParseDTypeToken());
      KILN_RETURN_IF_ERROR(Expect(">"));
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 1));
      return Cast(dtype, std::move(args[0]));
    }
    if (name.text == "select") {
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 3));
      if (args[0]->dtype != DType::kBool) {
        return ErrorAt(name, absl::StrCat("select condition has dtype ",
                                          DTypeName(args[0]->dtype), ", expected bool"));
      }
      if (args[1]->dtype != args[2]->dtype) {
        return ErrorAt(name, absl::StrCat("select values have dtypes ", DTypeName(args[1]->dtype),
                                          " and ", DTypeName(args[2]->dtype),
                                          ", expected the same"));
      }
      return Select(std::move(args[0]), std::move(args[1]), std::move(args[2]));
    }
    if (std::optional<BinaryOp> op = EnumFromName(name.text, kLastBinaryOp, BinaryOpName);
        op && IsCallBinary(*op)) {
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 2));
      return MakeBinary(name, *op, std::move(args[0]), std::move(args[1]));
    }
    if (std::optional<UnaryOp> op = EnumFromName(name.text, kLastUnaryOp, UnaryOpName)) {
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 1));
      return Unary(*op, std::move(args[0]));
    }
    return ErrorAt(name, absl::StrCat("unknown function ", DescribeToken(name)));
  }
  absl::StatusOr<std::vector<Expr>> ParseArgs(const Token& name, size_t count) {
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseExprList("(", ")"));
    if (args.size() != count) {
      return ErrorAt(name, absl::StrCat("'", std::string(name.text), "' takes ", count,
                                        " argument(s), got ", args.size()));
    }
    return args;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::vector<BufferRef> buffers_;  // visible buffers, innermost scope last
  std::vector<Var> vars_;           // enclosing loop variables, innermost last
};

}  // namespace

absl::StatusOr<Func> ParseFunc(std::string_view text) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text));
  return Parser(std::move(tokens)).Run();
}

}  // namespace kiln::loop
