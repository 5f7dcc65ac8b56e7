// Shared state and helpers for lowering one fused group: parameter/workspace buffers bound to
// graph values, unique loop variables, loop-nest construction and index arithmetic.
#ifndef KILN_COMPILER_CORE_LOWERING_KERNEL_BUILDER_H_
#define KILN_COMPILER_CORE_LOWERING_KERNEL_BUILDER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/lowering/lower.h"

namespace kiln::lowering {

/// Collects the buffers and loop variables of one kernel while its nests are built.
class KernelBuilder {
 public:
  /// `symbols` (may be null for a static graph) are the graph's symbols as the kernel
  /// receives them; it must outlive the builder.
  KernelBuilder(std::string kernel_name, graph::OpKind anchor,
                const KernelSymbols* symbols = nullptr)
      : name_(std::move(kernel_name)), anchor_(anchor), symbols_(symbols) {}

  /// The param buffer for external value `v`, created on first use ("in0", "in1", ...), so
  /// params follow first-use order. It is const when `v` is a constant (or a view of one).
  loop::BufferRef Input(const graph::Value* v);
  /// The result buffer "out" of `v`'s type; always the last param.
  loop::BufferRef Output(const graph::Value* v);
  /// The result buffer created by Output (null before).
  loop::BufferRef out() const { return out_; }
  /// A further result buffer ("out1", "out2", ...) of `v`'s type, a param after "out" (for
  /// multi-output anchors); created on first use.
  loop::BufferRef ExtraOutput(const graph::Value* v);
  /// Dim `dim` (a symbolic dim of some value's type) as an i64 expression of loads from the
  /// "dims" param (i64[symbols]: the run's symbol values, KernelSymbols), which the first
  /// call adds as a param; constants become immediates.
  loop::Expr DimExpr(const sym::Expr& dim);
  /// Every dim of `type` as an i64 expression (IntImm for a static dim, DimExpr otherwise).
  std::vector<loop::Expr> Dims(const TensorType& type);
  /// Internal error naming a symbol that DimExpr met and the graph's symbols lack; OK
  /// otherwise. LowerGroup checks it.
  absl::Status SymbolStatus() const;

  /// A kernel-private global scratch buffer; `name` is made unique.
  loop::BufferRef Workspace(const std::string& name, DType dtype, std::vector<int64_t> shape);
  /// A shape check (LoweredKernel::ShapeCheck): returns the nest that stores `dims` (i64
  /// expressions of run-time operand values, one per dim of `expected`) into a new workspace
  /// "shape" that the runtime compares with `expected`, the compiled output shape. `what` names
  /// the node and the operands (for the runtime's error).
  loop::Stmt ShapeCheck(const std::vector<loop::Expr>& dims, const std::vector<int64_t>& expected,
                        const std::string& what, bool values = false);
  /// A bounded shape check: the kernel's result (a graph output) is sized for `bound` and its
  /// run-time shape is `dims` (each within the bound).
  loop::Stmt BoundedShape(const std::vector<loop::Expr>& dims, const std::vector<int64_t>& bound,
                          const std::string& what);
  /// A fresh loop variable named `name` (suffixed "_1", "_2", ... if taken).
  loop::Var NewVar(const std::string& name);
  /// One fresh variable per entry of `names`, each prefixed by `prefix` (e.g. "init.").
  std::vector<loop::Var> NewVars(const std::string& prefix, const std::vector<std::string>& names);

  /// Assembles the kernel from `nests`, run in order.
  LoweredKernel Finish(std::vector<loop::Stmt> nests);

 private:
  /// A param buffer of `type` (symbolic when the type is).
  loop::BufferRef ValueBuffer(const std::string& name, const TensorType& type,
                              bool constant);
  /// The "dims" param, created on first use.
  loop::BufferRef DimsParam();
  int64_t SymbolIndex(const sym::Symbol& symbol);

  std::string name_;
  graph::OpKind anchor_;
  const KernelSymbols* symbols_ = nullptr;
  loop::BufferRef dims_;
  int num_inputs_ = 0;
  std::string missing_symbol_;
  std::vector<loop::BufferRef> params_;
  std::vector<const graph::Value*> param_values_;
  std::map<const graph::Value*, loop::BufferRef> inputs_;
  std::vector<loop::BufferRef> workspaces_;
  std::vector<LoweredKernel::ShapeCheck> shape_checks_;
  loop::BufferRef out_;
  const graph::Value* out_value_ = nullptr;
  std::vector<loop::BufferRef> extra_outs_;
  std::vector<const graph::Value*> extra_out_values_;
  std::set<std::string> buffer_names_;
  std::set<std::string> var_names_;
};

/// Loop names for the axes of a rank-`rank` tensor: "d0", "d1", ...
std::vector<std::string> AxisNames(size_t rank);
/// Spatial axis names for `n` spatial dims with `prefix` (e.g. "o" → "ow", "oh"+"ow", ...).
std::vector<std::string> SpatialNames(const std::string& prefix, size_t n);

/// Wraps `body` in loops over `vars` (outermost first); loop i is a reduction if reduction[i].
loop::Stmt Nest(const std::vector<loop::Var>& vars, const std::vector<int64_t>& extents,
                loop::Stmt body, const std::vector<bool>& reduction = {});
/// Nest over extents given as i64 expressions: an IntImm gives a static loop, any other
/// expression (a symbolic dim) a loop of extent loop::kUnboundedExtent limited to it.
loop::Stmt NestDims(const std::vector<loop::Var>& vars, const std::vector<loop::Expr>& extents,
                    loop::Stmt body, const std::vector<bool>& reduction = {});
std::vector<loop::Expr> Refs(const std::vector<loop::Var>& vars);

/// Whether `e` is the integer immediate `v`.
bool IsIntImm(const loop::Expr& e, int64_t v);

/// Index arithmetic that folds the trivial cases (x*1, x+0, 0*x).
loop::Expr IdxAdd(loop::Expr a, loop::Expr b);
loop::Expr IdxAdd(loop::Expr a, int64_t c);
loop::Expr IdxMul(loop::Expr a, int64_t c);
loop::Expr Idx(int64_t c);
/// Clamps an index to [0, extent-1].
loop::Expr IdxClamp(loop::Expr a, int64_t extent);
/// Clamps an index to [0, extent-1] for an extent given as an i64 expression (a symbolic dim;
/// an IntImm gives IdxClamp's expression).
loop::Expr IdxClampDim(loop::Expr a, const loop::Expr& extent);
/// `a` within [0, extent) (extent an i64 dim expression): appends `a >= 0 && a < extent` to
/// `*cond` (AndCond) and returns `a` clamped into range (IdxClampDim), so that a load there is
/// always in bounds and a select on `*cond` masks the positions outside (padding).
loop::Expr InBounds(loop::Expr a, const loop::Expr& extent, loop::Expr* cond);
/// a * b for dims (i64 expressions), folding constants and ones.
loop::Expr MulDims(const loop::Expr& a, const loop::Expr& b);
/// Indices into dims `dims` (row-major, i64 expressions) of the flat index `flat` over them;
/// trivial divisions and remainders are left out (a dim of 1, a remainder where every outer
/// dim is 1).
std::vector<loop::Expr> Unflatten(const std::vector<loop::Expr>& dims, const loop::Expr& flat);
/// loop::Binary, short.
loop::Expr Bin(loop::BinaryOp op, loop::Expr a, loop::Expr b);
/// a && b, folding a null `a`.
loop::Expr AndCond(loop::Expr a, loop::Expr b);

/// A constant of `dtype` (float or integer immediate).
loop::Expr Const(double v, DType dtype);
/// The smallest value of `dtype` (-inf for floats): the identity of max.
loop::Expr Lowest(DType dtype);

/// Indices into a tensor of shape `in_shape` broadcast (NumPy, right-aligned) to an output
/// indexed by `out_idx`: size-1 dims index 0.
std::vector<loop::Expr> BroadcastIndices(const std::vector<int64_t>& in_shape,
                                         const std::vector<loop::Expr>& out_idx);

/// Indices into a row-major tensor of `in_shape` holding the element at the same flat position
/// as `out_idx` in `out_shape` (reshape semantics). Size-1 dims are dropped first so that
/// squeeze/unsqueeze-like reshapes need no division.
std::vector<loop::Expr> ReshapeIndices(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape,
                                       const std::vector<loop::Expr>& out_idx);

}  // namespace kiln::lowering

#endif  // KILN_COMPILER_CORE_LOWERING_KERNEL_BUILDER_H_
