// Loop-IR tree utilities for the schedule primitives.
#include "compiler_core/schedule/loop_utils.h"

#include <memory>

#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::Expr;
using loop::ExprKind;
using loop::Stmt;
using loop::StmtKind;

namespace {

absl::StatusOr<Stmt> RewriteImpl(const Stmt& s,
                                 const std::function<bool(const std::string&)>& match,
                                 const LoopRewrite& rewrite, int* count,
                                 std::vector<const loop::StmtNode*>& enclosing) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor: {
      if (match(s->loop_var->name)) {
        ++*count;
        return rewrite(s, enclosing);
      }
      enclosing.push_back(s.get());
      absl::StatusOr<Stmt> body = RewriteImpl(s->body, match, rewrite, count, enclosing);
      enclosing.pop_back();
      if (!body.ok()) return body.status();
      return *body == s->body ? s : WithBody(s, *body);
    }
    case StmtKind::kAllocate: {
      KILN_ASSIGN_OR_RETURN(Stmt body, RewriteImpl(s->body, match, rewrite, count, enclosing));
      return body == s->body ? s : WithBody(s, body);
    }
    case StmtKind::kBlock: {
      std::vector<Stmt> stmts;
      bool changed = false;
      for (const Stmt& c : s->stmts) {
        KILN_ASSIGN_OR_RETURN(Stmt r, RewriteImpl(c, match, rewrite, count, enclosing));
        changed |= r != c;
        stmts.push_back(r);
      }
      return changed ? loop::Block(std::move(stmts)) : s;
    }
    case StmtKind::kIf: {
      KILN_ASSIGN_OR_RETURN(Stmt t, RewriteImpl(s->then_body, match, rewrite, count, enclosing));
      KILN_ASSIGN_OR_RETURN(Stmt e, RewriteImpl(s->else_body, match, rewrite, count, enclosing));
      if (t == s->then_body && e == s->else_body) return s;
      return loop::IfThenElse(s->cond, t, e);
    }
    case StmtKind::kMma:
    case StmtKind::kStore:
    case StmtKind::kAsyncCopy:
    case StmtKind::kAsyncWait:
      return s;
  }
  return s;
}

}  // namespace

absl::StatusOr<Stmt> RewriteLoops(const Stmt& root,
                                  const std::function<bool(const std::string&)>& match,
                                  const LoopRewrite& rewrite, int* count) {
  *count = 0;
  std::vector<const loop::StmtNode*> enclosing;
  return RewriteImpl(root, match, rewrite, count, enclosing);
}

Stmt WithBody(const Stmt& s, Stmt body) {
  auto n = std::make_shared<loop::StmtNode>(*s);
  n->body = std::move(body);
  return n;
}

Stmt WithKind(const Stmt& s, loop::ForKind kind) {
  auto n = std::make_shared<loop::StmtNode>(*s);
  n->for_kind = kind;
  return n;
}

Expr Substitute(const Expr& e, const loop::VarNode* var, const Expr& value) {
  if (!e) return e;
  if (e->kind == ExprKind::kVar) return e->var.get() == var ? value : e;
  if (e->operands.empty()) return e;
  bool changed = false;
  std::vector<Expr> ops;
  for (const Expr& o : e->operands) {
    ops.push_back(Substitute(o, var, value));
    changed |= ops.back() != o;
  }
  if (!changed) return e;
  auto n = std::make_shared<loop::ExprNode>(*e);
  n->operands = std::move(ops);
  return n;
}

Stmt Substitute(const Stmt& s, const loop::VarNode* var, const Expr& value) {
  if (!s) return s;
  auto n = std::make_shared<loop::StmtNode>(*s);
  for (Expr& i : n->indices) i = Substitute(i, var, value);
  n->value = Substitute(n->value, var, value);
  n->cond = Substitute(n->cond, var, value);
  n->limit = Substitute(n->limit, var, value);
  n->body = Substitute(n->body, var, value);
  n->then_body = Substitute(n->then_body, var, value);
  n->else_body = Substitute(n->else_body, var, value);
  for (Stmt& c : n->stmts) c = Substitute(c, var, value);
  return n;
}

Stmt FreshenVars(const Stmt& s) {
  if (!s) return s;
  auto n = std::make_shared<loop::StmtNode>(*s);
  n->body = FreshenVars(n->body);
  n->then_body = FreshenVars(n->then_body);
  n->else_body = FreshenVars(n->else_body);
  for (Stmt& c : n->stmts) c = FreshenVars(c);
  if (s->kind == StmtKind::kFor) {
    loop::Var fresh = loop::MakeVar(s->loop_var->name);
    n->body = Substitute(n->body, s->loop_var.get(), loop::VarRef(fresh));
    n->loop_var = fresh;
  }
  return n;
}

Stmt Unwrap(const Stmt& s) {
  if (s && s->kind == StmtKind::kBlock && s->stmts.size() == 1) return Unwrap(s->stmts[0]);
  return s;
}

bool ContainsForKind(const Stmt& s, loop::ForKind kind) {
  if (!s) return false;
  if (s->kind == StmtKind::kFor && s->for_kind == kind) return true;
  if (ContainsForKind(s->body, kind) || ContainsForKind(s->then_body, kind) ||
      ContainsForKind(s->else_body, kind)) {
    return true;
  }
  for (const Stmt& c : s->stmts) {
    if (ContainsForKind(c, kind)) return true;
  }
  return false;
}

bool HasLimitedLoop(const loop::Stmt& s) {
  bool found = false;
  loop::VisitStmts(s, [&](const loop::Stmt& st) {
    found |= st->kind == loop::StmtKind::kFor && st->limit != nullptr;
  });
  return found;
}

bool ContainsFor(const Stmt& s) {
  if (!s) return false;
  if (s->kind == StmtKind::kFor) return true;
  if (ContainsFor(s->body) || ContainsFor(s->then_body) || ContainsFor(s->else_body)) return true;
  for (const Stmt& c : s->stmts) {
    if (ContainsFor(c)) return true;
  }
  return false;
}

void CollectLoopNames(const Stmt& s, std::set<std::string>& names) {
  if (!s) return;
  if (s->kind == StmtKind::kFor) names.insert(s->loop_var->name);
  CollectLoopNames(s->body, names);
  CollectLoopNames(s->then_body, names);
  CollectLoopNames(s->else_body, names);
  for (const Stmt& c : s->stmts) CollectLoopNames(c, names);
}

std::vector<Stmt> PerfectChain(const Stmt& s) {
  std::vector<Stmt> chain;
  for (Stmt cur = Unwrap(s); cur && cur->kind == StmtKind::kFor; cur = Unwrap(cur->body)) {
    chain.push_back(cur);
  }
  return chain;
}

}  // namespace kiln::schedule
