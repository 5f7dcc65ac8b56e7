// Workload canonicalization and key.
#include "compiler_core/tuning/workload.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/support/sha256.h"

namespace kiln::tuning {
namespace {

using loop::BufferRef;
using loop::Expr;
using loop::ExprKind;
using loop::ExprNode;
using loop::Stmt;
using loop::StmtKind;
using loop::StmtNode;

/// Rebuilds the tree with every buffer replaced by its renamed copy (the loop IR's mutator
/// keeps unchanged subtrees shared).
class Renamer final : public loop::StmtMutator {
 public:
  BufferRef Rename(const BufferRef& b, const std::string& prefix) {
    auto it = renamed_.find(b.get());
    if (it != renamed_.end()) return it->second;
    int& n = counts_[prefix];
    BufferRef copy =
        loop::MakeBuffer(absl::StrCat(prefix, n++), b->dtype, b->shape, b->scope, b->constant);
    renamed_[b.get()] = copy;
    return copy;
  }

  Stmt MutateStmt(const Stmt& s) override {
    if (!s) return s;
    // An allocation is named before its body, where it is used.
    if (s->kind == StmtKind::kAllocate) Rename(s->buffer, "l");
    Stmt out = MutateChildren(s);
    if (out->kind != StmtKind::kStore && out->kind != StmtKind::kAllocate) return out;
    auto node = std::make_shared<StmtNode>(*out);
    node->buffer = Lookup(out->buffer);
    return node;
  }

  Expr MutateExpr(const Expr& e) override {
    if (!e) return e;
    Expr out = MutateChildren(e);
    if (out->kind != ExprKind::kLoad) return out;
    auto node = std::make_shared<ExprNode>(*out);
    node->buffer = Lookup(out->buffer);
    return node;
  }

 private:
  // A buffer not declared by the func or an enclosing Allocate (malformed IR) keeps its name.
  BufferRef Lookup(const BufferRef& b) {
    auto it = renamed_.find(b.get());
    return it == renamed_.end() ? b : it->second;
  }

  std::map<const loop::Buffer*, BufferRef> renamed_;
  std::map<std::string, int> counts_;
};

int64_t ExprFlops(const Expr& e) {
  if (!e) return 0;
  int64_t n = 0;
  for (const Expr& op : e->operands) n += ExprFlops(op);
  if (e->kind == ExprKind::kLoad) {
    return 0;  // index arithmetic is not counted
  }
  if ((e->kind == ExprKind::kBinary || e->kind == ExprKind::kUnary) &&
      (IsFloat(e->dtype) || (!e->operands.empty() && IsFloat(e->operands[0]->dtype)))) {
    ++n;
  }
  return n;
}

int64_t StmtFlops(const Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: return s->extent * StmtFlops(s->body);
    case StmtKind::kAllocate: return StmtFlops(s->body);
    case StmtKind::kIf: return std::max(StmtFlops(s->then_body), StmtFlops(s->else_body));
    case StmtKind::kMma:
    case StmtKind::kStore: return ExprFlops(s->value);
    case StmtKind::kAsyncCopy:
    case StmtKind::kAsyncWait:
      return 0;
    case StmtKind::kBlock: {
      int64_t total = 0;
      for (const Stmt& c : s->stmts) total += StmtFlops(c);
      return total;
    }
  }
  return 0;
}

}  // namespace

loop::Func CanonicalizeWorkload(const loop::Func& lowered) {
  Renamer r;
  loop::Func out;
  out.name = "workload";
  out.anchor = lowered.anchor;
  for (const BufferRef& p : lowered.params) out.params.push_back(r.Rename(p, "p"));
  for (const BufferRef& w : lowered.workspaces) out.workspaces.push_back(r.Rename(w, "w"));
  if (lowered.init) out.init = r.MutateStmt(lowered.init);
  out.body = r.MutateStmt(lowered.body);
  return out;
}

std::string CanonicalWorkloadText(const loop::Func& lowered) {
  return loop::PrintFunc(CanonicalizeWorkload(lowered));
}

std::string WorkloadKey(const loop::Func& lowered) {
  return Sha256Hex(CanonicalWorkloadText(lowered));
}

int64_t CountFlops(const loop::Func& func) { return StmtFlops(func.body); }

}  // namespace kiln::tuning
