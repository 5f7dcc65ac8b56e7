// Loop IR printer.
#include "compiler_core/ir/loop/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/attributes.h"

namespace kiln::loop {

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
    case ForKind::kBlockIdxX:
      return "blockIdx.x";
    case ForKind::kBlockIdxY:
      return "blockIdx.y";
    case ForKind::kBlockIdxZ:
      return "blockIdx.z";
    case ForKind::kThreadIdxX:
      return "threadIdx.x";
    case ForKind::kThreadIdxY:
      return "threadIdx.y";
    case ForKind::kThreadIdxZ:
      return "threadIdx.z";
  }
  return "?";
}

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kFloorDiv: return "//";
    case BinaryOp::kFloorMod: return "%";
    case BinaryOp::kMin: return "min";
    case BinaryOp::kMax: return "max";
    case BinaryOp::kPow: return "pow";
    case BinaryOp::kLt: return "<";
    case BinaryOp::kLe: return "<=";
    case BinaryOp::kGt: return ">";
    case BinaryOp::kGe: return ">=";
    case BinaryOp::kEq: return "==";
    case BinaryOp::kNe: return "!=";
    case BinaryOp::kAnd: return "&&";
    case BinaryOp::kOr: return "||";
    case BinaryOp::kShl: return "<<";
    case BinaryOp::kShr: return ">>";
    case BinaryOp::kDot4U8S8:
      return "dot4_u8s8";
  }
  return "?";
}

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return "neg";
    case UnaryOp::kAbs: return "abs";
    case UnaryOp::kExp: return "exp";
    case UnaryOp::kLog: return "log";
    case UnaryOp::kSqrt: return "sqrt";
    case UnaryOp::kTanh: return "tanh";
    case UnaryOp::kErf: return "erf";
    case UnaryOp::kFloor: return "floor";
    case UnaryOp::kCeil: return "ceil";
    case UnaryOp::kNot: return "not";
    case UnaryOp::kRound: return "round";
    case UnaryOp::kSin: return "sin";
    case UnaryOp::kCos: return "cos";
    case UnaryOp::kTan: return "tan";
    case UnaryOp::kAsin: return "asin";
    case UnaryOp::kAcos: return "acos";
    case UnaryOp::kAtan: return "atan";
    case UnaryOp::kSinh: return "sinh";
    case UnaryOp::kCosh: return "cosh";
    case UnaryOp::kAsinh: return "asinh";
    case UnaryOp::kAcosh: return "acosh";
    case UnaryOp::kAtanh: return "atanh";
  }
  return "?";
}

namespace {

// A symbolic dim prints as its expression: f32[1,%dims[0],64], f32[(%dims[0] + 1),64].
std::string BufferDecl(const BufferRef& b) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < b->shape.size(); ++d) {
    dims.push_back(b->shape[d] == kSymbolicDim && d < b->sym_shape.size()
                       ? PrintExpr(b->sym_shape[d])
                       : absl::StrCat(b->shape[d]));
  }
  return absl::StrCat("%", b->name, ": ", DTypeName(b->dtype), "[", absl::StrJoin(dims, ","),
                      "]", b->constant ? " const" : "");
}

std::string Indices(const std::vector<Expr>& indices) {
  std::vector<std::string> parts;
  for (const Expr& e : indices) parts.push_back(PrintExpr(e));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string PrintExpr(const Expr& e) {
  switch (e->kind) {
    case ExprKind::kIntImm:
      if (e->dtype == DType::kInt64) return absl::StrCat(e->int_value);
      return absl::StrCat(e->int_value, ":", DTypeName(e->dtype));
    case ExprKind::kFloatImm:
      if (e->dtype == DType::kFloat32) return graph::FormatFloatExact(static_cast<float>(e->float_value));
      return absl::StrCat(graph::FormatFloatExact(e->float_value), ":", DTypeName(e->dtype));
    case ExprKind::kVar:
      return e->var->name;
    case ExprKind::kBinary: {
      std::string a = PrintExpr(e->operands[0]), b = PrintExpr(e->operands[1]);
      if (e->binary_op == BinaryOp::kMin || e->binary_op == BinaryOp::kMax ||
          e->binary_op == BinaryOp::kPow || e->binary_op == BinaryOp::kDot4U8S8) {
        return absl::StrCat(BinaryOpName(e->binary_op), "(", a, ", ", b, ")");
      }
      return absl::StrCat("(", a, " ", BinaryOpName(e->binary_op), " ", b, ")");
    }
    case ExprKind::kUnary:
      return absl::StrCat(UnaryOpName(e->unary_op), "(", PrintExpr(e->operands[0]), ")");
    case ExprKind::kSelect:
      return absl::StrCat("select(", PrintExpr(e->operands[0]), ", ", PrintExpr(e->operands[1]),
                          ", ", PrintExpr(e->operands[2]), ")");
    case ExprKind::kLoad:
      return absl::StrCat("%", e->buffer->name, "[", Indices(e->operands), "]");
    case ExprKind::kCast:
      return absl::StrCat("cast<", DTypeName(e->dtype), ">(", PrintExpr(e->operands[0]), ")");
  }
  return "?";
}

std::string PrintStmt(const Stmt& s, int indent) {
  std::string pad(indent, ' ');
  switch (s->kind) {
    case StmtKind::kFor: {
      std::string kind = s->for_kind == ForKind::kSerial
                             ? ""
                             : absl::StrCat(ForKindName(s->for_kind), " ");
      return absl::StrCat(pad, kind, "for ", s->loop_var->name, " in 0..", s->extent,
                          s->is_reduction ? " reduce" : "",
                          s->limit ? absl::StrCat(" limit ", PrintExpr(s->limit)) : "", " {\n",
                          PrintStmt(s->body, indent + 2), pad, "}\n");
    }
    case StmtKind::kStore:
      return absl::StrCat(pad, "%", s->buffer->name, "[", Indices(s->indices),
                          "] = ", PrintExpr(s->value), "\n");
    case StmtKind::kMma: {
      std::string layout;
      if (s->mma_layout != 0) {
        layout = absl::StrCat(" layout(", (s->mma_layout & kMmaAMajorM) ? "mk" : "km", ", ",
                              (s->mma_layout & kMmaBMajorN) ? "nk" : "kn", ")");
      }
      return absl::StrCat(pad, "mma.", MmaShapeName(s->mma), " %", s->buffer->name, "[",
                          Indices(s->indices), "] += ", PrintExpr(s->value), " lane ",
                          PrintExpr(s->cond), layout, "\n");
    }
    case StmtKind::kAsyncCopy:
      return absl::StrCat(pad, "async_copy x", s->extent, " %", s->buffer->name, "[",
                          Indices(s->indices), "] = ", PrintExpr(s->value),
                          s->cond ? absl::StrCat(" when ", PrintExpr(s->cond)) : "", "\n");
    case StmtKind::kAsyncWait:
      return absl::StrCat(pad, "async_wait ", s->extent, "\n");
    case StmtKind::kBlock: {
      std::string out;
      for (const Stmt& c : s->stmts) absl::StrAppend(&out, PrintStmt(c, indent));
      return out;
    }
    case StmtKind::kIf: {
      std::string out = absl::StrCat(pad, "if ", PrintExpr(s->cond), " {\n",
                                     PrintStmt(s->then_body, indent + 2), pad, "}");
      if (s->else_body) {
        absl::StrAppend(&out, " else {\n", PrintStmt(s->else_body, indent + 2), pad, "}");
      }
      return absl::StrCat(out, "\n");
    }
    case StmtKind::kAllocate:
      return absl::StrCat(
          pad, "alloc ", s->buffer->scope == Buffer::Scope::kShared ? "shared " : "",
          BufferDecl(s->buffer), " {\n", PrintStmt(s->body, indent + 2), pad, "}\n");
  }
  return "";
}

std::string PrintFunc(const Func& func) {
  std::vector<std::string> params, workspaces;
  for (const BufferRef& b : func.params) params.push_back(BufferDecl(b));
  for (const BufferRef& b : func.workspaces) workspaces.push_back(BufferDecl(b));
  std::string out = absl::StrCat("func @", func.name, "(", absl::StrJoin(params, ", "), ")");
  if (!workspaces.empty()) absl::StrAppend(&out, " workspace(", absl::StrJoin(workspaces, ", "), ")");
  absl::StrAppend(&out, " anchor=", graph::OpName(func.anchor), " {\n");
  if (func.init) absl::StrAppend(&out, "  init {\n", PrintStmt(func.init, 4), "  }\n");
  absl::StrAppend(&out, func.body ? PrintStmt(func.body, 2) : "", "}\n");
  return out;
}

}  // namespace kiln::loop
