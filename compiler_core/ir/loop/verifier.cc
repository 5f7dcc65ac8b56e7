// Loop IR verifier: one Visitor that keeps the visible buffers and enclosing loops as scope
// stacks and stops at the first violation.
#include "compiler_core/ir/loop/verifier.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"

namespace kiln::loop {
namespace {

/// The first line of `stmt` as printed, without a trailing " {".
std::string StmtHead(const Stmt& stmt) {
  std::string text = PrintStmt(stmt);
  text = text.substr(0, text.find('\n'));
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, " {") == 0) text.resize(text.size() - 2);
  return text;
}

class Verifier final : public Visitor {
 public:
  explicit Verifier(const Func& func) : func_(func) {}

  absl::Status Run() {
    std::set<std::string> names;
    for (const auto* list : {&func_.params, &func_.workspaces}) {
      for (const BufferRef& b : *list) {
        if (!b) {
          Fail(nullptr, "a param or workspace is null");
        } else if (b->scope != Buffer::Scope::kGlobal) {
          Fail(nullptr, absl::StrCat("param or workspace %", b->name, " has local scope"));
        } else if (!names.insert(b->name).second) {
          Fail(nullptr, absl::StrCat("buffer %", b->name, " is declared twice"));
        }
        if (!status_.ok()) return status_;
        buffers_.push_back(b.get());
      }
    }
    for (const BufferRef& w : func_.workspaces) {
      if (w->constant) {
        Fail(nullptr, absl::StrCat("workspace %", w->name, " is const (only params can be)"));
        return status_;
      }
    }
    for (const BufferRef& w : PersistentWorkspaces(func_)) persistent_.insert(w.get());
    for (const BufferRef& p : func_.params) params_.insert(p.get());
    for (const auto* list : {&func_.params, &func_.workspaces}) {
      for (const BufferRef& b : *list) {
        CheckSymbolicDims(*b);
        if (!status_.ok()) return status_;
      }
    }
    if (func_.init) {
      in_init_ = true;
      VisitStmt(func_.init);
      in_init_ = false;
    }
    if (func_.body) VisitStmt(func_.body);
    return status_;
  }

  void VisitStmt(const Stmt& s) override {
    if (!s || !status_.ok()) return;
    switch (s->kind) {
      case StmtKind::kFor: return VisitFor(s);
      case StmtKind::kAllocate: return VisitAllocate(s);
      case StmtKind::kMma: {
        context_ = s;
        const Expr& v = s->value;
        const bool operands =
            v && v->kind == ExprKind::kBinary && v->binary_op == BinaryOp::kMul &&
            v->operands[0]->kind == ExprKind::kLoad && v->operands[1]->kind == ExprKind::kLoad &&
            v->operands[0]->operands.size() >= 2 && v->operands[1]->operands.size() >= 2;
        if (s->mma == MmaShape::kNone) {
          Fail(s, "an mma has no shape");
        } else if (!operands) {
          Fail(s,
               "an mma's operands must be (%a[..., k, m] * %b[..., k, n]) over tiles of rank "
               ">= 2");
        } else if (!s->cond || s->cond->dtype != DType::kInt64) {
          Fail(s, "an mma's lane must be an i64 expression");
        } else if (CheckAccess(s->buffer, s->indices) &&
                   (s->buffer->dtype != DType::kFloat32 || s->buffer->shape.empty() ||
                    s->buffer->scope != Buffer::Scope::kLocal)) {
          Fail(s,
               absl::StrCat("an mma accumulates into a local f32 buffer, not %", s->buffer->name));
        }
        if (status_.ok()) Visitor::VisitStmt(s);
        return;
      }
      case StmtKind::kAsyncWait:
        context_ = s;
        if (s->extent < 0) Fail(s, "async_wait's count of groups in flight is negative");
        break;
      case StmtKind::kAsyncCopy: {
        context_ = s;
        const Expr& src = s->value;
        const int64_t bytes =
            s->extent * (s->buffer ? static_cast<int64_t>(DTypeSize(s->buffer->dtype)) : 0);
        if (!src || src->kind != ExprKind::kLoad) {
          Fail(s, "async_copy copies from a load");
        } else if (!CheckAccess(s->buffer, s->indices)) {
          break;
        } else if (s->buffer->scope != Buffer::Scope::kShared ||
                   src->buffer->scope != Buffer::Scope::kGlobal) {
          Fail(s, absl::StrCat("async_copy copies from a param or workspace to a shared buffer, "
                               "not from %",
                               src->buffer->name, " to %", s->buffer->name));
        } else if (src->dtype != s->buffer->dtype) {
          Fail(s, absl::StrCat("async_copy from ", DTypeName(src->dtype), " to ",
                               DTypeName(s->buffer->dtype), " (it cannot convert)"));
        } else if (bytes != 4 && bytes != 8 && bytes != 16) {
          Fail(s, absl::StrCat("async_copy moves 4, 8 or 16 bytes, not ", s->extent, " x ",
                               DTypeName(src->dtype)));
        } else if (s->cond && s->cond->dtype != DType::kBool) {
          Fail(s, "async_copy's condition is not bool");
        }
        break;
      }
      case StmtKind::kStore:
        context_ = s;
        if (CheckAccess(s->buffer, s->indices) && s->value &&
            s->value->dtype != s->buffer->dtype) {
          Fail(s, absl::StrCat("stored value has dtype ", DTypeName(s->value->dtype),
                                         ", expected ", DTypeName(s->buffer->dtype)));
        } else if (in_init_ && params_.count(s->buffer.get())) {
          Fail(s, absl::StrCat("init stores to param %", s->buffer->name,
                               " (init writes only workspaces)"));
        } else if (!in_init_ && persistent_.count(s->buffer.get())) {
          Fail(s, absl::StrCat("the body stores to %", s->buffer->name,
                               ", a persistent workspace that init computes"));
        } else if (s->buffer->constant) {
          Fail(s, absl::StrCat("stores to const param %", s->buffer->name));
        }
        break;
      case StmtKind::kIf:
        context_ = s;
        if (!s->cond || s->cond->dtype != DType::kBool) {
          Fail(s, "the condition is not bool");
        }
        break;
      case StmtKind::kBlock:
        break;
    }
    Visitor::VisitStmt(s);
  }

  void VisitExpr(const Expr& e) override {
    if (!e || !status_.ok()) return;
    switch (e->kind) {
      case ExprKind::kVar:
        if (bound_.count(e->var.get()) == 0) {
          FailExpr(e, absl::StrCat("variable '", e->var->name,
                                   "' is not bound by an enclosing loop"));
        }
        break;
      case ExprKind::kLoad:
        if (CheckAccess(e->buffer, e->operands) && in_init_ &&
            e->buffer->scope == Buffer::Scope::kGlobal && !e->buffer->constant &&
            !persistent_.count(e->buffer.get())) {
          FailExpr(e, absl::StrCat("init reads %", e->buffer->name,
                                   ", which is neither a const param nor computed by init"));
        }
        break;
      case ExprKind::kBinary:
        if (e->operands[0]->dtype != e->operands[1]->dtype) {
          FailExpr(e, absl::StrCat("operands of '", BinaryOpName(e->binary_op), "' have dtypes ",
                                   DTypeName(e->operands[0]->dtype), " and ",
                                   DTypeName(e->operands[1]->dtype)));
        } else if (e->binary_op == BinaryOp::kDot4U8S8 && e->operands[0]->dtype != DType::kInt32) {
          FailExpr(e, absl::StrCat("operands of 'dot4_u8s8' must be i32 (four packed bytes), not ",
                                   DTypeName(e->operands[0]->dtype)));
        }
        break;
      case ExprKind::kSelect:
        if (e->operands[0]->dtype != DType::kBool ||
            e->operands[1]->dtype != e->operands[2]->dtype) {
          FailExpr(e, "select needs a bool condition and values of one dtype");
        }
        break;
      default:
        break;
    }
    Visitor::VisitExpr(e);
  }

 private:
  void VisitFor(const Stmt& s) {
    if (!CheckFor(s)) return;
    const VarNode* var = s->loop_var.get();
    loops_.push_back(s.get());
    bound_.insert(var);
    parallel_depth_ += s->for_kind == ForKind::kParallel;
    const bool bound = IsThreadBound(s->for_kind);
    if (bound) bound_kinds_.push_back(s->for_kind);
    Visitor::VisitStmt(s);
    if (bound) bound_kinds_.pop_back();
    parallel_depth_ -= s->for_kind == ForKind::kParallel;
    bound_.erase(var);
    loops_.pop_back();
  }

  /// The loop's own rules; false after reporting a violation.
  bool CheckFor(const Stmt& s) {
    const VarNode* var = s->loop_var.get();
    if (!var) return Fail(s, "the loop has no variable");
    // Zero is legal: lowering emits empty loops for empty tensors, and they run no iteration.
    if (s->extent < 0) return Fail(s, absl::StrCat("extent ", s->extent, " is negative"));
    if (!ever_bound_.insert(var).second) {
      return Fail(s, absl::StrCat("variable '", var->name, "' is bound by another loop too"));
    }
    for (const StmtNode* outer : loops_) {
      if (outer->loop_var->name == var->name) {
        return Fail(s, absl::StrCat("loop name '", var->name,
                                    "' is already bound by an enclosing loop"));
      }
    }
    if (s->limit) {
      if (s->limit->dtype != DType::kInt64) return Fail(s, "the limit is not i64");
      if (s->for_kind != ForKind::kSerial && s->for_kind != ForKind::kParallel) {
        return Fail(s, "only serial and parallel loops may have a limit");
      }
      if (AnyExpr(s->limit, [&](const Expr& e) {
            return e->kind == ExprKind::kVar && e->var.get() == var;
          })) {
        return Fail(s, "the limit reads the loop's own variable");
      }
    }
    if (s->for_kind == ForKind::kVectorized) {
      if (s->is_reduction) return Fail(s, "a vectorized loop must not be a reduction");
      bool has_inner = false;
      VisitStmts(s->body, [&](const Stmt& c) { has_inner |= c->kind == StmtKind::kFor; });
      if (has_inner) return Fail(s, "a vectorized loop must be innermost");
    }
    if (s->for_kind == ForKind::kParallel) {
      if (s->is_reduction) return Fail(s, "a parallel loop must not be a reduction");
      if (parallel_depth_ > 0) return Fail(s, "a parallel loop is nested in a parallel loop");
      if (!bound_kinds_.empty()) return Fail(s, "a parallel loop is inside a thread-bound loop");
    }
    if (IsThreadBound(s->for_kind)) {
      const std::string what = absl::StrCat("a loop bound to ", ForKindName(s->for_kind));
      if (s->is_reduction) return Fail(s, what + " must not be a reduction");
      if (parallel_depth_ > 0) return Fail(s, what + " is inside a parallel loop");
      for (ForKind outer : bound_kinds_) {
        if (outer == s->for_kind) {
          return Fail(s, what + " is inside another loop bound to the same index");
        }
        if (IsBlockBound(s->for_kind) && !IsBlockBound(outer)) {
          return Fail(s, absl::StrCat(what, " is inside a loop bound to ", ForKindName(outer),
                                      " (block loops enclose thread loops)"));
        }
      }
    }
    return true;
  }

  void VisitAllocate(const Stmt& s) {
    const Buffer* b = s->buffer.get();
    if (!b) {
      Fail(s, "the alloc has no buffer");
    } else if (b->scope != Buffer::Scope::kLocal && b->scope != Buffer::Scope::kShared) {
      Fail(s, "an alloc'd buffer must have local or shared scope");
    } else if (b->scope == Buffer::Scope::kShared &&
               std::any_of(bound_kinds_.begin(), bound_kinds_.end(),
                           [](ForKind k) { return !IsBlockBound(k); })) {
      Fail(s, absl::StrCat("shared buffer %", b->name,
                           " is allocated inside a thread loop (one copy per block: allocate it "
                           "outside the thread loops)"));
    } else if (FindVisible(b->name)) {
      Fail(s, absl::StrCat("buffer %", b->name, " is already defined"));
    } else if (b->is_symbolic() || b->NumElements() < 0) {
      Fail(s, absl::StrCat("alloc'd buffer %", b->name, " has symbolic dims"));
    }
    if (!status_.ok()) return;
    buffers_.push_back(b);
    Visitor::VisitStmt(s);
    buffers_.pop_back();
  }

  /// Checks a load's or store's buffer and indices; false after reporting a violation.
  bool CheckAccess(const BufferRef& buffer, const std::vector<Expr>& indices) {
    if (!buffer) return Fail(context_, "an access has no buffer");
    if (FindVisible(buffer->name) != buffer.get()) {
      return Fail(context_, absl::StrCat("buffer %", buffer->name,
                                      " is not a param, a workspace or allocated by an enclosing "
                                      "alloc")),
             false;
    }
    if (indices.size() != buffer->shape.size()) {
      return Fail(context_, absl::StrCat("%", buffer->name, " has rank ", buffer->shape.size(),
                                      " but is accessed with ", indices.size(), " indices")),
             false;
    }
    for (const Expr& i : indices) {
      if (i->dtype != DType::kInt64) {
        return Fail(context_, absl::StrCat("index ", PrintExpr(i), " of %", buffer->name,
                                        " has dtype ", DTypeName(i->dtype), ", expected i64")),
               false;
      }
    }
    return true;
  }

  /// A symbolic buffer: one i64 dim expression per dim, an IntImm equal to the static dim
  /// where shape has one, reading only params (no loop variable, no other buffer).
  void CheckSymbolicDims(const Buffer& b) {
    if (!b.is_symbolic()) {
      for (int64_t d : b.shape) {
        if (d < 0) {
          Fail(nullptr, absl::StrCat("buffer %", b.name, " has a negative dim without an expression"));
          return;
        }
      }
      return;
    }
    if (b.sym_shape.size() != b.shape.size()) {
      Fail(nullptr, absl::StrCat("buffer %", b.name, " has ", b.sym_shape.size(),
                                 " dim expressions for rank ", b.shape.size()));
      return;
    }
    for (size_t d = 0; d < b.shape.size(); ++d) {
      const Expr& e = b.sym_shape[d];
      if (!e || e->dtype != DType::kInt64) {
        Fail(nullptr, absl::StrCat("buffer %", b.name, ": dim ", d, " is not an i64 expression"));
        return;
      }
      if (b.shape[d] != kSymbolicDim &&
          (e->kind != ExprKind::kIntImm || e->int_value != b.shape[d])) {
        Fail(nullptr, absl::StrCat("buffer %", b.name, ": dim ", d, " is ", b.shape[d],
                                   " but its expression is ", PrintExpr(e)));
        return;
      }
      bool bad = AnyExpr(e, [&](const Expr& x) {
        return x->kind == ExprKind::kVar ||
               (x->kind == ExprKind::kLoad && params_.count(x->buffer.get()) == 0);
      });
      if (bad) {
        Fail(nullptr, absl::StrCat("buffer %", b.name, ": dim ", d, " (", PrintExpr(e),
                                   ") reads something other than params"));
        return;
      }
    }
  }

  const Buffer* FindVisible(const std::string& name) const {
    for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
      if ((*it)->name == name) return *it;
    }
    return nullptr;
  }

  void FailExpr(const Expr& e, const std::string& why) {
    Fail(context_, absl::StrCat(why, ": ", PrintExpr(e)));
  }
  /// Records the first violation; returns false for use in checks.
  /// (The statement is printed only here, so a valid func costs no printing.)
  bool Fail(const Stmt& stmt, const std::string& why) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          stmt ? absl::StrCat("func '", func_.name, "': in '", StmtHead(stmt), "': ", why)
               : absl::StrCat("func '", func_.name, "': ", why));
    }
    return false;
  }

  const Func& func_;
  absl::Status status_;
  std::vector<const Buffer*> buffers_;       // visible buffers, innermost scope last
  std::vector<const StmtNode*> loops_;       // enclosing loops, outermost first
  std::set<const VarNode*> bound_;           // variables of the enclosing loops
  std::set<const VarNode*> ever_bound_;      // variables bound by any loop so far
  int parallel_depth_ = 0;
  std::vector<ForKind> bound_kinds_;  // the thread-bound loops enclosing the current statement
  bool in_init_ = false;                     // visiting func.init
  std::set<const Buffer*> persistent_;       // workspaces init stores to
  std::set<const Buffer*> params_;
  Stmt context_;                             // the store or if whose expressions are visited
};

}  // namespace

absl::Status VerifyFunc(const Func& func) { return Verifier(func).Run(); }

}  // namespace kiln::loop
