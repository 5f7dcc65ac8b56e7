// Loop IR node constructors.
#include "compiler_core/ir/loop/loop_ir.h"

#include <cassert>
#include <set>

#include "compiler_core/ir/loop/visitor.h"

namespace kiln::loop {

int64_t Buffer::NumElements() const {
  if (is_symbolic()) return -1;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Buffer::NumBytes() const {
  if (is_symbolic()) return -1;
  return NumElements() * static_cast<int64_t>(DTypeSize(dtype));
}

BufferRef MakeBuffer(std::string name, DType dtype, std::vector<int64_t> shape,
                     Buffer::Scope scope, bool constant) {
  auto b = std::make_shared<Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = scope;
  b->constant = constant;
  return b;
}

BufferRef MakeSymbolicBuffer(std::string name, DType dtype, std::vector<Expr> dims,
                             bool constant) {
  auto b = std::make_shared<Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->constant = constant;
  bool symbolic = false;
  for (const Expr& d : dims) {
    bool is_static = d->kind == ExprKind::kIntImm;
    b->shape.push_back(is_static ? d->int_value : kSymbolicDim);
    symbolic |= !is_static;
  }
  if (symbolic) b->sym_shape = std::move(dims);
  return b;
}

Expr BufferDim(const Buffer& buffer, size_t d) {
  if (buffer.is_symbolic()) return buffer.sym_shape[d];
  return IntImm(buffer.shape[d]);
}

std::vector<Expr> BufferDims(const Buffer& buffer) {
  std::vector<Expr> dims;
  for (size_t d = 0; d < buffer.shape.size(); ++d) dims.push_back(BufferDim(buffer, d));
  return dims;
}

bool HasSymbolicParams(const Func& func) {
  for (const BufferRef& p : func.params) {
    if (p->is_symbolic()) return true;
  }
  return false;
}

std::vector<BufferRef> PersistentWorkspaces(const Func& func) {
  if (!func.init) return {};
  std::set<const Buffer*> stored;
  VisitStmts(func.init, [&](const Stmt& s) {
    if (s->kind == StmtKind::kStore) stored.insert(s->buffer.get());
  });
  std::vector<BufferRef> out;
  for (const BufferRef& w : func.workspaces) {
    if (stored.count(w.get())) out.push_back(w);
  }
  return out;
}

std::string InitSymbol(const std::string& func_name) { return func_name + ".init"; }

Var MakeVar(std::string name) {
  auto v = std::make_shared<VarNode>();
  v->name = std::move(name);
  return v;
}

namespace {
std::shared_ptr<ExprNode> NewExpr(ExprKind kind, DType dtype) {
  auto e = std::make_shared<ExprNode>();
  e->kind = kind;
  e->dtype = dtype;
  return e;
}
std::shared_ptr<StmtNode> NewStmt(StmtKind kind) {
  auto s = std::make_shared<StmtNode>();
  s->kind = kind;
  return s;
}
bool IsComparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::kLt: case BinaryOp::kLe: case BinaryOp::kGt: case BinaryOp::kGe:
    case BinaryOp::kEq: case BinaryOp::kNe:
      return true;
    default:
      return false;
  }
}
}  // namespace

Expr IntImm(int64_t v, DType dtype) {
  auto e = NewExpr(ExprKind::kIntImm, dtype);
  e->int_value = v;
  return e;
}

Expr FloatImm(double v, DType dtype) {
  auto e = NewExpr(ExprKind::kFloatImm, dtype);
  e->float_value = v;
  return e;
}

Expr VarRef(const Var& var) {
  auto e = NewExpr(ExprKind::kVar, DType::kInt64);
  e->var = var;
  return e;
}

Expr Binary(BinaryOp op, Expr a, Expr b) {
  assert(a && b && a->dtype == b->dtype);
  auto e = NewExpr(ExprKind::kBinary, IsComparison(op) ? DType::kBool : a->dtype);
  e->binary_op = op;
  e->operands = {std::move(a), std::move(b)};
  return e;
}

Expr Unary(UnaryOp op, Expr a) {
  assert(a);
  auto e = NewExpr(ExprKind::kUnary, a->dtype);
  e->unary_op = op;
  e->operands = {std::move(a)};
  return e;
}

Expr Select(Expr cond, Expr true_value, Expr false_value) {
  assert(cond && cond->dtype == DType::kBool && true_value->dtype == false_value->dtype);
  auto e = NewExpr(ExprKind::kSelect, true_value->dtype);
  e->operands = {std::move(cond), std::move(true_value), std::move(false_value)};
  return e;
}

Expr Load(BufferRef buffer, std::vector<Expr> indices) {
  assert(buffer && indices.size() == buffer->shape.size());
  auto e = NewExpr(ExprKind::kLoad, buffer->dtype);
  e->buffer = std::move(buffer);
  e->operands = std::move(indices);
  return e;
}

Expr Cast(DType dtype, Expr a) {
  auto e = NewExpr(ExprKind::kCast, dtype);
  e->operands = {std::move(a)};
  return e;
}

Stmt For(Var loop_var, int64_t extent, Stmt body, ForKind kind, bool is_reduction) {
  auto s = NewStmt(StmtKind::kFor);
  s->loop_var = std::move(loop_var);
  s->extent = extent;
  s->body = std::move(body);
  s->for_kind = kind;
  s->is_reduction = is_reduction;
  return s;
}

Stmt Store(BufferRef buffer, std::vector<Expr> indices, Expr value) {
  assert(buffer && indices.size() == buffer->shape.size() && value->dtype == buffer->dtype);
  auto s = NewStmt(StmtKind::kStore);
  s->buffer = std::move(buffer);
  s->indices = std::move(indices);
  s->value = std::move(value);
  return s;
}

Stmt Block(std::vector<Stmt> stmts) {
  auto s = NewStmt(StmtKind::kBlock);
  s->stmts = std::move(stmts);
  return s;
}

Stmt IfThenElse(Expr cond, Stmt then_body, Stmt else_body) {
  auto s = NewStmt(StmtKind::kIf);
  s->cond = std::move(cond);
  s->then_body = std::move(then_body);
  s->else_body = std::move(else_body);
  return s;
}

Stmt Allocate(BufferRef buffer, Stmt body) {
  auto s = NewStmt(StmtKind::kAllocate);
  s->buffer = std::move(buffer);
  s->body = std::move(body);
  return s;
}

const char* MmaShapeName(MmaShape shape) {
  switch (shape) {
    case MmaShape::kM16N8K8Tf32:
      return "m16n8k8.tf32";
    case MmaShape::kM16N8K16F16:
      return "m16n8k16.f16";
    case MmaShape::kM16N8K16Bf16:
      return "m16n8k16.bf16";
    case MmaShape::kNone:
      break;
  }
  return "none";
}

int MmaK(MmaShape shape) { return shape == MmaShape::kM16N8K8Tf32 ? 8 : 16; }

DType MmaInputType(MmaShape shape) {
  return shape == MmaShape::kM16N8K16F16    ? DType::kFloat16
         : shape == MmaShape::kM16N8K16Bf16 ? DType::kBFloat16
                                            : DType::kFloat32;
}

Stmt Mma(MmaShape shape, BufferRef acc, std::vector<Expr> acc_indices, Expr a_tile, Expr b_tile,
         Expr lane, uint8_t layout) {
  auto s = NewStmt(StmtKind::kMma);
  s->mma = shape;
  s->mma_layout = layout;
  s->buffer = std::move(acc);
  s->indices = std::move(acc_indices);
  s->value = Binary(BinaryOp::kMul, std::move(a_tile), std::move(b_tile));
  s->cond = std::move(lane);
  return s;
}

Stmt AsyncCopy(BufferRef dst, std::vector<Expr> indices, Expr src, int64_t lanes, Expr in_bounds) {
  auto s = NewStmt(StmtKind::kAsyncCopy);
  s->buffer = std::move(dst);
  s->indices = std::move(indices);
  s->value = std::move(src);
  s->extent = lanes;
  s->cond = std::move(in_bounds);
  return s;
}

Stmt AsyncWait(int64_t pending) {
  auto s = NewStmt(StmtKind::kAsyncWait);
  s->extent = pending;
  return s;
}

Stmt AsyncCopyAsLoops(const StmtNode& copy) {
  Var l = MakeVar("async.l");
  std::vector<Expr> dst = copy.indices, src = copy.value->operands;
  dst.back() = dst.back() + VarRef(l);
  src.back() = src.back() + VarRef(l);
  Stmt store = Store(copy.buffer, dst, Load(copy.value->buffer, src));
  if (copy.cond) {
    store = IfThenElse(copy.cond, store, Store(copy.buffer, dst, FloatImm(0, copy.buffer->dtype)));
  }
  return For(l, copy.extent, store, ForKind::kUnrolled);
}

Stmt MmaAsLoops(const StmtNode& mma) {
  const Expr& a = mma.value->operands[0];
  const Expr& b = mma.value->operands[1];
  Var e = MakeVar("mma.e"), k = MakeVar("mma.k");
  Expr g = Binary(BinaryOp::kFloorDiv, mma.cond, IntImm(4));
  Expr t = Binary(BinaryOp::kFloorMod, mma.cond, IntImm(4));
  Expr row = g + IntImm(8) * Binary(BinaryOp::kFloorDiv, VarRef(e), IntImm(2));
  Expr col = IntImm(2) * t + Binary(BinaryOp::kFloorMod, VarRef(e), IntImm(2));
  auto round = [&](Expr x) {
    const DType in = MmaInputType(mma.mma);
    if (x->dtype != DType::kFloat32) x = Cast(DType::kFloat32, x);
    if (in != DType::kFloat32) x = Cast(DType::kFloat32, Cast(in, x));
    return x;
  };
  // The tile element at (k, r) of a tile load: its last two indices offset (swapped when the
  // tile is stored [r, k]).
  auto element = [&](const Expr& tile, bool r_major, const Expr& r) {
    std::vector<Expr> at = tile->operands;
    const size_t n = at.size();
    Expr& k_index = r_major ? at[n - 1] : at[n - 2];
    Expr& r_index = r_major ? at[n - 2] : at[n - 1];
    k_index = k_index + VarRef(k);
    r_index = r_index + r;
    return Load(tile->buffer, at);
  };
  Expr av = round(element(a, (mma.mma_layout & kMmaAMajorM) != 0, row));
  Expr bv = round(element(b, (mma.mma_layout & kMmaBMajorN) != 0, col));
  std::vector<Expr> at = mma.indices;
  at.back() = at.back() + VarRef(e);
  Stmt acc = Store(mma.buffer, at, Load(mma.buffer, at) + av * bv);
  return For(e, 4, For(k, MmaK(mma.mma), acc, ForKind::kSerial, /*is_reduction=*/true),
             ForKind::kUnrolled);
}

}  // namespace kiln::loop
