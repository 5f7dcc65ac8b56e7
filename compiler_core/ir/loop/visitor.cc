// Loop IR walks: the child order is written once here (ForEachOwnExpr, ForEachChildStmt) and
// shared by the visit functions, the Visitor defaults and the StmtMutator.
#include "compiler_core/ir/loop/visitor.h"

#include <memory>
#include <utility>
#include <vector>

namespace kiln::loop {
namespace {

/// The expressions a statement holds directly: a loop's limit, store indices and value, an if's
/// condition.
void ForEachOwnExpr(const StmtNode& s, const std::function<void(const Expr&)>& fn) {
  if (s.limit) fn(s.limit);
  for (const Expr& i : s.indices) fn(i);
  if (s.value) fn(s.value);
  if (s.cond) fn(s.cond);
}

/// The statements nested directly in a statement, in execution order.
void ForEachChildStmt(const StmtNode& s, const std::function<void(const Stmt&)>& fn) {
  for (const Stmt* c : {&s.body, &s.then_body, &s.else_body}) {
    if (*c) fn(*c);
  }
  for (const Stmt& c : s.stmts) {
    if (c) fn(c);
  }
}

}  // namespace

void VisitStmts(const Stmt& stmt, const std::function<void(const Stmt&)>& fn) {
  if (!stmt) return;
  fn(stmt);
  ForEachChildStmt(*stmt, [&](const Stmt& c) { VisitStmts(c, fn); });
}

void VisitExprs(const Expr& expr, const std::function<void(const Expr&)>& fn) {
  if (!expr) return;
  fn(expr);
  for (const Expr& op : expr->operands) VisitExprs(op, fn);
}

void VisitExprs(const Stmt& stmt, const std::function<void(const Expr&)>& fn) {
  VisitStmts(stmt, [&](const Stmt& s) {
    ForEachOwnExpr(*s, [&](const Expr& e) { VisitExprs(e, fn); });
  });
}

bool AnyExpr(const Expr& expr, const std::function<bool(const Expr&)>& pred) {
  if (!expr) return false;
  if (pred(expr)) return true;
  for (const Expr& op : expr->operands) {
    if (AnyExpr(op, pred)) return true;
  }
  return false;
}

bool SameExpr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->int_value != b->int_value ||
      a->float_value != b->float_value || a->var != b->var || a->binary_op != b->binary_op ||
      a->unary_op != b->unary_op || a->buffer != b->buffer ||
      a->operands.size() != b->operands.size()) {
    return false;
  }
  for (size_t i = 0; i < a->operands.size(); ++i) {
    if (!SameExpr(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

void Visitor::VisitStmt(const Stmt& stmt) {
  if (!stmt) return;
  ForEachOwnExpr(*stmt, [&](const Expr& e) { VisitExpr(e); });
  ForEachChildStmt(*stmt, [&](const Stmt& c) { VisitStmt(c); });
}

void Visitor::VisitExpr(const Expr& expr) {
  if (!expr) return;
  for (const Expr& op : expr->operands) VisitExpr(op);
}

Stmt StmtMutator::MutateStmt(const Stmt& stmt) { return MutateChildren(stmt); }

Expr StmtMutator::MutateExpr(const Expr& expr) { return MutateChildren(expr); }

Stmt StmtMutator::MutateChildren(const Stmt& s) {
  if (!s) return s;
  bool changed = false;
  auto expr = [&](const Expr& e) {
    Expr n = e ? MutateExpr(e) : e;
    changed |= n != e;
    return n;
  };
  auto stmt = [&](const Stmt& c) {
    Stmt n = c ? MutateStmt(c) : c;
    changed |= n != c;
    return n;
  };
  // Expressions first, then statements in execution order (as the Visitor does).
  Expr limit = expr(s->limit);
  std::vector<Expr> indices;
  for (const Expr& i : s->indices) indices.push_back(expr(i));
  Expr value = expr(s->value);
  Expr cond = expr(s->cond);
  Stmt body = stmt(s->body);
  Stmt then_body = stmt(s->then_body);
  Stmt else_body = stmt(s->else_body);
  std::vector<Stmt> stmts;
  for (const Stmt& c : s->stmts) stmts.push_back(stmt(c));
  if (!changed) return s;
  auto n = std::make_shared<StmtNode>(*s);
  n->limit = std::move(limit);
  n->indices = std::move(indices);
  n->value = std::move(value);
  n->cond = std::move(cond);
  n->body = std::move(body);
  n->then_body = std::move(then_body);
  n->else_body = std::move(else_body);
  n->stmts = std::move(stmts);
  return n;
}

Expr StmtMutator::MutateChildren(const Expr& e) {
  if (!e) return e;
  bool changed = false;
  std::vector<Expr> operands;
  for (const Expr& op : e->operands) {
    Expr n = MutateExpr(op);
    changed |= n != op;
    operands.push_back(std::move(n));
  }
  if (!changed) return e;
  auto n = std::make_shared<ExprNode>(*e);
  n->operands = std::move(operands);
  return n;
}

}  // namespace kiln::loop
