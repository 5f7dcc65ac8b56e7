// Generic walks over the loop IR: pre-order visits of statements and expressions, a Visitor base
// for walks that track scope (override a hook, call the default to recurse), and a StmtMutator
// that rebuilds only the nodes whose children changed, so unchanged subtrees stay shared.
#ifndef KILN_COMPILER_CORE_IR_LOOP_VISITOR_H_
#define KILN_COMPILER_CORE_IR_LOOP_VISITOR_H_

#include <functional>

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

/// Calls `fn` on `stmt` and on every statement nested in it, pre-order (a loop before its body,
/// an if's then branch before its else branch). Null statements are skipped.
void VisitStmts(const Stmt& stmt, const std::function<void(const Stmt&)>& fn);
/// Calls `fn` on `expr` and on every operand nested in it, pre-order.
void VisitExprs(const Expr& expr, const std::function<void(const Expr&)>& fn);
/// Calls `fn` on every expression in `stmt`'s tree (store indices and values, if conditions,
/// and all their operands), pre-order, statements in VisitStmts order.
void VisitExprs(const Stmt& stmt, const std::function<void(const Expr&)>& fn);
/// True if `pred` holds for `expr` or any expression nested in it (stops at the first match).
bool AnyExpr(const Expr& expr, const std::function<bool(const Expr&)>& pred);

/// Structural equality of two expressions (same vars by identity, same buffers by identity).
bool SameExpr(const Expr& a, const Expr& b);

/// A read-only walk with hooks. The defaults recurse: VisitStmt visits the statement's own
/// expressions (VisitExpr) and then its child statements (VisitStmt); VisitExpr visits the
/// operands. Override a hook to act on a node (e.g. push a scope), and call the base version
/// to keep descending.
class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void VisitStmt(const Stmt& stmt);
  virtual void VisitExpr(const Expr& expr);
};

/// A rewrite that rebuilds only what changed. MutateStmt / MutateExpr default to rebuilding the
/// node from its mutated children, returning the original node when no child changed; override
/// them to replace nodes, calling MutateChildren to keep descending.
class StmtMutator {
 public:
  virtual ~StmtMutator() = default;
  /// Null in, null out.
  virtual Stmt MutateStmt(const Stmt& stmt);
  virtual Expr MutateExpr(const Expr& expr);

 protected:
  /// `stmt` with each child statement and expression mutated; `stmt` itself if none changed.
  Stmt MutateChildren(const Stmt& stmt);
  /// `expr` with each operand mutated; `expr` itself if none changed.
  Expr MutateChildren(const Expr& expr);
};

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_VISITOR_H_
