// Kernel assembly and index helpers shared by every op family's lowering.
#include "compiler_core/lowering/kernel_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/sym/fold.h"

namespace kiln::lowering {

using loop::Expr;
using loop::Stmt;
using loop::Var;

namespace {

// True if `v` is a constant, or an unfused view (Reshape, Flatten, ...) of one: the kernel plan
// binds such a value to the weights.
bool IsConstantData(const graph::Value* v) {
  while (v->producer() != nullptr && graph::IsViewOp(v->producer()->op()) &&
         v->producer()->fusion_group() < 0 && v->producer()->input(0) != nullptr) {
    v = v->producer()->input(0);
  }
  return v->is_constant();
}

}  // namespace

loop::BufferRef KernelBuilder::ValueBuffer(const std::string& name, const TensorType& type,
                                           bool constant) {
  if (type.is_static()) {
    return loop::MakeBuffer(name, type.dtype, type.shape, loop::Buffer::Scope::kGlobal, constant);
  }
  return loop::MakeSymbolicBuffer(name, type.dtype, Dims(type), constant);
}

Expr KernelBuilder::DimExpr(const sym::Expr& dim) {
  sym::FoldOps<Expr> ops;
  ops.constant = [](int64_t c) { return loop::IntImm(c); };
  ops.symbol = [&](const sym::Symbol& s) { return loop::Load(DimsParam(), {Idx(SymbolIndex(s))}); };
  ops.add = [](Expr a, Expr b) { return a + b; };
  ops.mul = [](Expr a, Expr b) { return a * b; };
  ops.floordiv = [](Expr a, Expr b) { return Bin(loop::BinaryOp::kFloorDiv, a, b); };
  ops.mod = [](Expr a, Expr b) { return Bin(loop::BinaryOp::kFloorMod, a, b); };
  ops.min = [](Expr a, Expr b) { return loop::Min(a, b); };
  ops.max = [](Expr a, Expr b) { return loop::Max(a, b); };
  return sym::Fold(dim, ops);
}

std::vector<Expr> KernelBuilder::Dims(const TensorType& type) {
  std::vector<Expr> dims;
  for (size_t d = 0; d < type.shape.size(); ++d) {
    dims.push_back(type.shape[d] != kSymbolicDim ? Idx(type.shape[d])
                                                         : DimExpr(type.dim(d)));
  }
  return dims;
}

int64_t KernelBuilder::SymbolIndex(const sym::Symbol& symbol) {
  if (symbols_ != nullptr) {
    for (size_t k = 0; k < symbols_->names.size(); ++k) {
      if (symbols_->names[k] == symbol.name) return static_cast<int64_t>(k);
    }
  }
  // The verifier guarantees every symbol a type reads is a graph symbol; a missing one is a
  // bug in the caller (LowerGroup without the graph's symbols).
  if (missing_symbol_.empty()) missing_symbol_ = symbol.name;
  return 0;
}

loop::BufferRef KernelBuilder::DimsParam() {
  if (dims_) return dims_;
  const int64_t n = symbols_ != nullptr ? static_cast<int64_t>(symbols_->names.size()) : 1;
  dims_ = loop::MakeBuffer("dims", DType::kInt64, {std::max<int64_t>(n, 1)});
  buffer_names_.insert("dims");
  params_.push_back(dims_);
  param_values_.push_back(symbols_ != nullptr ? symbols_->dims : nullptr);
  if (symbols_ != nullptr) inputs_[symbols_->dims] = dims_;
  return dims_;
}

loop::BufferRef KernelBuilder::Input(const graph::Value* v) {
  auto it = inputs_.find(v);
  if (it != inputs_.end()) return it->second;
  std::string name = absl::StrCat("in", num_inputs_++);
  buffer_names_.insert(name);
  // A symbolic buffer's dims read the dims param, which is declared first.
  loop::BufferRef b = ValueBuffer(name, v->type(), IsConstantData(v));
  inputs_[v] = b;
  params_.push_back(b);
  param_values_.push_back(v);
  return b;
}

loop::BufferRef KernelBuilder::Output(const graph::Value* v) {
  if (!out_) {
    out_ = ValueBuffer("out", v->type(), false);
    out_value_ = v;
    buffer_names_.insert("out");
  }
  return out_;
}

loop::BufferRef KernelBuilder::ExtraOutput(const graph::Value* v) {
  for (size_t i = 0; i < extra_outs_.size(); ++i) {
    if (extra_out_values_[i] == v) return extra_outs_[i];
  }
  std::string name = absl::StrCat("out", extra_outs_.size() + 1);
  buffer_names_.insert(name);
  loop::BufferRef b = ValueBuffer(name, v->type(), false);
  extra_outs_.push_back(b);
  extra_out_values_.push_back(v);
  return b;
}

loop::BufferRef KernelBuilder::Workspace(const std::string& name, DType dtype,
                                         std::vector<int64_t> shape) {
  std::string unique = name;
  for (int k = 1; buffer_names_.count(unique) != 0; ++k) unique = absl::StrCat(name, "_", k);
  buffer_names_.insert(unique);
  loop::BufferRef b = loop::MakeBuffer(unique, dtype, std::move(shape));
  workspaces_.push_back(b);
  return b;
}

Stmt KernelBuilder::ShapeCheck(const std::vector<Expr>& dims, const std::vector<int64_t>& expected,
                               const std::string& what, bool values) {
  const int64_t rank = static_cast<int64_t>(expected.size());
  loop::BufferRef shape = Workspace("shape", DType::kInt64, {std::max<int64_t>(rank, 1)});
  shape_checks_.push_back({shape->name, expected, what, values});
  std::vector<Stmt> stores;
  for (int64_t d = 0; d < rank; ++d) {
    Expr e = dims[d]->dtype == DType::kInt64 ? dims[d] : loop::Cast(DType::kInt64, dims[d]);
    stores.push_back(loop::Store(shape, {Idx(d)}, e));
  }
  if (stores.empty()) stores.push_back(loop::Store(shape, {Idx(0)}, Idx(0)));
  // One iteration: the stores are scalar (never vectorized or parallelized).
  return loop::For(NewVar("shape"), 1, loop::Block(std::move(stores)));
}

Stmt KernelBuilder::BoundedShape(const std::vector<Expr>& dims, const std::vector<int64_t>& bound,
                                 const std::string& what) {
  Stmt s = ShapeCheck(dims, bound, what);
  shape_checks_.back().bounded = true;
  return s;
}

Var KernelBuilder::NewVar(const std::string& name) {
  std::string unique = name;
  for (int k = 1; var_names_.count(unique) != 0; ++k) unique = absl::StrCat(name, "_", k);
  var_names_.insert(unique);
  return loop::MakeVar(unique);
}

std::vector<Var> KernelBuilder::NewVars(const std::string& prefix,
                                        const std::vector<std::string>& names) {
  std::vector<Var> vars;
  for (const std::string& n : names) vars.push_back(NewVar(prefix + n));
  return vars;
}

absl::Status KernelBuilder::SymbolStatus() const {
  if (missing_symbol_.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("kernel ", name_, ": symbol '", missing_symbol_,
                                          "' is not among the graph's symbols"));
}

LoweredKernel KernelBuilder::Finish(std::vector<Stmt> nests) {
  LoweredKernel k;
  k.func.name = name_;
  k.func.anchor = anchor_;
  k.func.params = params_;
  k.func.params.push_back(out_);
  k.func.params.insert(k.func.params.end(), extra_outs_.begin(), extra_outs_.end());
  k.func.workspaces = workspaces_;
  k.func.body = nests.size() == 1 ? nests[0] : loop::Block(std::move(nests));
  k.param_values = param_values_;
  k.param_values.push_back(out_value_);
  k.param_values.insert(k.param_values.end(), extra_out_values_.begin(), extra_out_values_.end());
  k.results = {out_value_};
  k.results.insert(k.results.end(), extra_out_values_.begin(), extra_out_values_.end());
  k.shape_checks = shape_checks_;
  return k;
}

std::vector<std::string> AxisNames(size_t rank) {
  std::vector<std::string> names;
  for (size_t i = 0; i < rank; ++i) names.push_back(absl::StrCat("d", i));
  return names;
}

std::vector<std::string> SpatialNames(const std::string& prefix, size_t n) {
  static const char* kLetters[] = {"d", "h", "w"};
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    size_t letter = 3 - n + i;
    names.push_back(n <= 3 ? prefix + kLetters[letter] : absl::StrCat(prefix, "s", i));
  }
  return names;
}

Stmt Nest(const std::vector<Var>& vars, const std::vector<int64_t>& extents, Stmt body,
          const std::vector<bool>& reduction) {
  std::vector<Expr> dims;
  for (int64_t e : extents) dims.push_back(Idx(e));
  return NestDims(vars, dims, std::move(body), reduction);
}

Stmt NestDims(const std::vector<Var>& vars, const std::vector<Expr>& extents, Stmt body,
              const std::vector<bool>& reduction) {
  for (int i = static_cast<int>(vars.size()) - 1; i >= 0; --i) {
    bool red = i < static_cast<int>(reduction.size()) && reduction[i];
    const Expr& e = extents[i];
    if (e->kind == loop::ExprKind::kIntImm) {
      body = loop::For(vars[i], e->int_value, std::move(body), loop::ForKind::kSerial, red);
      continue;
    }
    auto limited = std::make_shared<loop::StmtNode>(*loop::For(
        vars[i], loop::kUnboundedExtent, std::move(body), loop::ForKind::kSerial, red));
    limited->limit = e;
    body = limited;
  }
  return body;
}

std::vector<Expr> Refs(const std::vector<Var>& vars) {
  std::vector<Expr> refs;
  for (const Var& v : vars) refs.push_back(loop::VarRef(v));
  return refs;
}

Expr Idx(int64_t c) { return loop::IntImm(c); }

bool IsIntImm(const Expr& e, int64_t v) {
  return e->kind == loop::ExprKind::kIntImm && e->int_value == v;
}

Expr IdxAdd(Expr a, Expr b) {
  if (IsIntImm(a, 0)) return b;
  if (IsIntImm(b, 0)) return a;
  if (a->kind == loop::ExprKind::kIntImm && b->kind == loop::ExprKind::kIntImm) {
    return Idx(a->int_value + b->int_value);
  }
  return a + b;
}

Expr IdxAdd(Expr a, int64_t c) {
  if (c < 0 && !(a->kind == loop::ExprKind::kIntImm)) return a - Idx(-c);
  return IdxAdd(std::move(a), Idx(c));
}

Expr IdxMul(Expr a, int64_t c) {
  if (c == 1) return a;
  if (c == 0) return Idx(0);
  if (a->kind == loop::ExprKind::kIntImm) return Idx(a->int_value * c);
  return a * Idx(c);
}

Expr IdxClamp(Expr a, int64_t extent) {
  if (a->kind == loop::ExprKind::kIntImm) {
    return Idx(std::max<int64_t>(0, std::min(a->int_value, extent - 1)));
  }
  return loop::Min(loop::Max(std::move(a), Idx(0)), Idx(extent - 1));
}

Expr IdxClampDim(Expr a, const Expr& extent) {
  if (extent->kind == loop::ExprKind::kIntImm) return IdxClamp(std::move(a), extent->int_value);
  return loop::Min(loop::Max(std::move(a), Idx(0)), IdxAdd(extent, -1));
}

Expr InBounds(Expr a, const Expr& extent, Expr* cond) {
  *cond = AndCond(*cond, loop::Binary(loop::BinaryOp::kGe, a, Idx(0)));
  *cond = AndCond(*cond, loop::Binary(loop::BinaryOp::kLt, a, extent));
  return IdxClampDim(std::move(a), extent);
}

Expr MulDims(const Expr& a, const Expr& b) {
  if (IsIntImm(a, 1)) return b;
  if (IsIntImm(b, 1)) return a;
  if (a->kind == loop::ExprKind::kIntImm && b->kind == loop::ExprKind::kIntImm) {
    return Idx(a->int_value * b->int_value);
  }
  return a * b;
}

std::vector<Expr> Unflatten(const std::vector<Expr>& dims, const Expr& flat) {
  std::vector<Expr> idx(dims.size());
  Expr stride = Idx(1);
  for (size_t d = dims.size(); d-- > 0;) {
    if (IsIntImm(dims[d], 1)) {
      idx[d] = loop::IntImm(0);
    } else {
      Expr e = IsIntImm(stride, 1) ? flat : loop::Binary(loop::BinaryOp::kFloorDiv, flat, stride);
      bool outer_ones = true;
      for (size_t o = 0; o < d; ++o) outer_ones &= IsIntImm(dims[o], 1);
      idx[d] = outer_ones ? e : loop::Binary(loop::BinaryOp::kFloorMod, e, dims[d]);
    }
    stride = MulDims(stride, dims[d]);
  }
  return idx;
}

Expr Bin(loop::BinaryOp op, Expr a, Expr b) { return loop::Binary(op, std::move(a), std::move(b)); }

Expr AndCond(Expr a, Expr b) {
  if (!a) return b;
  return loop::Binary(loop::BinaryOp::kAnd, std::move(a), std::move(b));
}

Expr Const(double v, DType dtype) {
  if (IsFloat(dtype)) return loop::FloatImm(v, dtype);
  return loop::IntImm(static_cast<int64_t>(v), dtype);
}

Expr Lowest(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kBFloat16:
      return loop::FloatImm(-std::numeric_limits<double>::infinity(), dtype);
    case DType::kInt8: return loop::IntImm(std::numeric_limits<int8_t>::min(), dtype);
    case DType::kInt16: return loop::IntImm(std::numeric_limits<int16_t>::min(), dtype);
    case DType::kInt32: return loop::IntImm(std::numeric_limits<int32_t>::min(), dtype);
    case DType::kInt64: return loop::IntImm(std::numeric_limits<int64_t>::min(), dtype);
    default: return loop::IntImm(0, dtype);
  }
}

std::vector<Expr> BroadcastIndices(const std::vector<int64_t>& in_shape,
                                   const std::vector<Expr>& out_idx) {
  std::vector<Expr> idx;
  size_t offset = out_idx.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) {
    idx.push_back(in_shape[d] == 1 ? Idx(0) : out_idx[offset + d]);
  }
  return idx;
}

std::vector<Expr> ReshapeIndices(const std::vector<int64_t>& in_shape,
                                 const std::vector<int64_t>& out_shape,
                                 const std::vector<Expr>& out_idx) {
  std::vector<size_t> in_dims, out_dims;
  for (size_t d = 0; d < in_shape.size(); ++d) if (in_shape[d] != 1) in_dims.push_back(d);
  for (size_t d = 0; d < out_shape.size(); ++d) if (out_shape[d] != 1) out_dims.push_back(d);
  std::vector<Expr> idx(in_shape.size(), Idx(0));
  bool same = in_dims.size() == out_dims.size();
  for (size_t k = 0; same && k < in_dims.size(); ++k) {
    same = in_shape[in_dims[k]] == out_shape[out_dims[k]];
  }
  if (same) {
    for (size_t k = 0; k < in_dims.size(); ++k) idx[in_dims[k]] = out_idx[out_dims[k]];
    return idx;
  }
  // General case: flat position, then row-major digits of the input shape.
  Expr flat = Idx(0);
  std::vector<int64_t> out_strides = RowMajorStrides(out_shape);
  for (size_t d : out_dims) flat = IdxAdd(flat, IdxMul(out_idx[d], out_strides[d]));
  std::vector<int64_t> in_strides = RowMajorStrides(in_shape);
  for (size_t k = 0; k < in_dims.size(); ++k) {
    size_t d = in_dims[k];
    Expr e = flat;
    if (in_strides[d] != 1) e = loop::Binary(loop::BinaryOp::kFloorDiv, e, Idx(in_strides[d]));
    if (k != 0) e = loop::Binary(loop::BinaryOp::kFloorMod, e, Idx(in_shape[d]));
    idx[d] = e;
  }
  return idx;
}

}  // namespace kiln::lowering
