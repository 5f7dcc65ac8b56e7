// HoistConstantNests: the body's constant-only statements → Func::init.
#include "compiler_core/schedule/hoist.h"

#include <set>
#include <vector>

#include "compiler_core/ir/loop/visitor.h"

namespace kiln::schedule {
namespace {

using loop::Buffer;
using loop::Stmt;
using loop::StmtKind;

/// The global buffers one statement loads and stores.
struct Access {
  std::set<const Buffer*> loads, stores;
};

Access AccessOf(const Stmt& s) {
  Access a;
  loop::VisitStmts(s, [&](const Stmt& c) {
    if (c->kind == StmtKind::kStore && c->buffer->scope == Buffer::Scope::kGlobal) {
      a.stores.insert(c->buffer.get());
    }
  });
  loop::VisitExprs(s, [&](const loop::Expr& e) {
    if (e->kind == loop::ExprKind::kLoad && e->buffer->scope == Buffer::Scope::kGlobal) {
      a.loads.insert(e->buffer.get());
    }
  });
  return a;
}

/// The body's top-level statements: the entries of nested blocks, in order.
void Flatten(const Stmt& s, std::vector<Stmt>& out) {
  if (!s) return;
  if (s->kind == StmtKind::kBlock) {
    for (const Stmt& c : s->stmts) Flatten(c, out);
    return;
  }
  out.push_back(s);
}

Stmt Join(std::vector<Stmt> stmts) {
  if (stmts.empty()) return nullptr;
  if (stmts.size() == 1) return stmts[0];
  return loop::Block(std::move(stmts));
}

}  // namespace

int HoistConstantNests(loop::Func& func) {
  std::vector<Stmt> top;
  Flatten(func.body, top);
  std::set<const Buffer*> workspaces, constants;
  for (const loop::BufferRef& w : func.workspaces) workspaces.insert(w.get());
  for (const loop::BufferRef& p : func.params) {
    if (p->constant) constants.insert(p.get());
  }
  if (constants.empty() || workspaces.empty()) return 0;
  // What an existing init computes counts as constant data.
  for (const loop::BufferRef& w : loop::PersistentWorkspaces(func)) constants.insert(w.get());

  std::vector<Access> access;
  std::vector<bool> moves(top.size(), false);
  for (size_t i = 0; i < top.size(); ++i) {
    access.push_back(AccessOf(top[i]));
    bool only_workspaces = !access[i].stores.empty();
    for (const Buffer* b : access[i].stores) only_workspaces &= workspaces.count(b) > 0;
    moves[i] = only_workspaces;
  }
  // Shrink to the fixpoint: a moving statement may read only constants and what moving
  // statements compute, and no staying statement may store where a moving one does.
  for (bool changed = true; changed;) {
    changed = false;
    std::set<const Buffer*> computed, stored_by_staying;
    for (size_t i = 0; i < top.size(); ++i) {
      for (const Buffer* b : access[i].stores) (moves[i] ? computed : stored_by_staying).insert(b);
    }
    for (size_t i = 0; i < top.size(); ++i) {
      if (!moves[i]) continue;
      bool ok = true;
      for (const Buffer* b : access[i].loads) {
        ok &= constants.count(b) > 0 || computed.count(b) > 0;
      }
      for (const Buffer* b : access[i].stores) ok &= stored_by_staying.count(b) == 0;
      if (!ok) {
        moves[i] = false;
        changed = true;
      }
    }
  }
  std::vector<Stmt> init, body;
  Flatten(func.init, init);
  int moved = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    (moves[i] ? init : body).push_back(top[i]);
    moved += moves[i];
  }
  if (moved == 0) return 0;
  func.init = Join(std::move(init));
  func.body = body.empty() ? loop::Block({}) : Join(std::move(body));
  return moved;
}

}  // namespace kiln::schedule
