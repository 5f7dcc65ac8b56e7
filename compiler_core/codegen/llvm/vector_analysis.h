// Symbolic analyses on the loop IR that codegen uses to decide how to emit a vectorized loop:
// the linear coefficient of an index in the vectorized variable, whether a body can become SIMD
// code, and whether an integer expression is provably non-negative. No LLVM here.
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_VECTOR_ANALYSIS_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_VECTOR_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/ir/loop/visitor.h"

namespace kiln::codegen {

/// True if `expr` reads `var` anywhere (including inside load indices).
bool DependsOn(const loop::Expr& expr, const loop::VarNode* var);

/// If `expr` is c * var + (terms independent of var) for a constant c, returns c (0 when the
/// expression does not depend on var). nullopt when the dependence is not affine with a constant
/// coefficient (e.g. var * i, var / 2, a load indexed by var).
std::optional<int64_t> LinearCoefficient(const loop::Expr& expr, const loop::VarNode* var);

/// The coefficient of `var` in the row-major flattened index of `buffer[indices]`.
std::optional<int64_t> FlatCoefficient(const loop::Buffer& buffer,
                                       const std::vector<loop::Expr>& indices,
                                       const loop::VarNode* var);

/// True if the body of `vectorized for var in 0..extent` can run as SIMD code: it holds only
/// Blocks, Stores and Ifs whose conditions do not depend on var, and every buffer it writes is
/// touched lane-privately (all its accesses use the same indices, affine in var with a nonzero
/// coefficient; or one dimension indexed by the same such expression in every access and no
/// other dimension depending on var), or written at one uniform location and never read in the
/// body.
bool CanVectorizeBody(const loop::Stmt& body, const loop::VarNode* var);

/// True if the integer expression is provably >= 0: built from loop variables, non-negative
/// immediates, +, *, min, max, and floor div/mod by positive constants.
bool IsNonNegative(const loop::Expr& expr);

using loop::SameExpr;

/// The row-major flat index of `indices` (i64) into a buffer of `shape` as one expression, with
/// consecutive indices that are the floor quotients and remainders of one value (a flattened
/// row index split back into dims: floor(x / (c n)), floor(x / c) mod n) folded back into that
/// value (floor(x / c)), so that the address needs no division. Null when nothing folds.
loop::Expr FoldRowMajor(const std::vector<int64_t>& shape, const std::vector<loop::Expr>& indices);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_VECTOR_ANALYSIS_H_
