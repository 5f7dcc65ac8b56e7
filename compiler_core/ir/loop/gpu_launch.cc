// SplitGpuLaunches: top-level statements → launches with grid and block dimensions.
#include "compiler_core/ir/loop/gpu_launch.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::loop {
namespace {

void FlattenBlocks(const Stmt& s, std::vector<Stmt>& out) {
  if (s == nullptr) return;
  if (s->kind != StmtKind::kBlock) {
    out.push_back(s);
    return;
  }
  for (const Stmt& c : s->stmts) FlattenBlocks(c, out);
}

// The statement inside a one-statement Block (recursively).
Stmt Single(Stmt s) {
  while (s != nullptr && s->kind == StmtKind::kBlock && s->stmts.size() == 1) s = s->stmts[0];
  return s;
}

// Fails if a thread loop outside any thread loop below the chain (one followed by a barrier) is
// under an `if` whose condition reads a thread index: `thread_vars`, the variables of the
// chain's thread loops (the only thread indices in scope there).
absl::Status CheckUniform(const Stmt& s, std::set<const VarNode*> thread_vars,
                          bool under_divergent_if) {
  if (s == nullptr) return absl::OkStatus();
  if (s->kind == StmtKind::kFor && IsThreadBound(s->for_kind) && !IsBlockBound(s->for_kind)) {
    if (under_divergent_if) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GPU loop '", s->loop_var->name, "' (", ForKindName(s->for_kind),
          ") is under a condition on a thread index: not every thread would reach its barrier"));
    }
    return absl::OkStatus();  // inside a thread loop, no barrier is emitted
  }
  bool divergent = under_divergent_if;
  if (s->kind == StmtKind::kIf) {
    divergent = divergent || AnyExpr(s->cond, [&](const Expr& e) {
                  return e->kind == ExprKind::kVar && thread_vars.count(e->var.get()) != 0;
                });
  }
  for (const Stmt* c : {&s->body, &s->then_body, &s->else_body}) {
    KILN_RETURN_IF_ERROR(CheckUniform(*c, thread_vars, divergent));
  }
  for (const Stmt& c : s->stmts) KILN_RETURN_IF_ERROR(CheckUniform(c, thread_vars, divergent));
  return absl::OkStatus();
}

}  // namespace

std::vector<Stmt> LaunchStatements(const Stmt& body) {
  std::vector<Stmt> out;
  FlattenBlocks(body, out);
  return out;
}

int64_t GpuLaunch::Threads() const {
  return grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2];
}

std::string GpuLaunchSymbol(const std::string& kernel, size_t index) {
  return absl::StrCat(kernel, "_k", index);
}

absl::StatusOr<std::vector<GpuLaunch>> SplitGpuLaunches(const Stmt& body) {
  std::vector<GpuLaunch> launches;
  for (const Stmt& top : LaunchStatements(body)) {
    GpuLaunch launch;
    launch.body = top;
    // The opening chain of bound loops.
    Stmt s = Single(top);
    while (s != nullptr && s->kind == StmtKind::kFor && IsThreadBound(s->for_kind)) {
      if (s->limit != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU loop '", s->loop_var->name, "' (", ForKindName(s->for_kind),
            ") has a run-time limit; bound loops need a static extent"));
      }
      const int k = static_cast<int>(s->for_kind) -
                    static_cast<int>(IsBlockBound(s->for_kind) ? ForKind::kBlockIdxX
                                                               : ForKind::kThreadIdxX);
      (IsBlockBound(s->for_kind) ? launch.grid : launch.block)[k] = s->extent;
      if (!IsBlockBound(s->for_kind)) launch.chain_threads.push_back(s.get());
      s = Single(s->body);
    }
    // Below the chain: no block loop; thread loops widen the block to their largest extent
    // (each thread runs its own iteration of every such loop, the others idle).
    absl::Status misplaced;
    VisitStmts(s, [&](const Stmt& inner) {
      if (!misplaced.ok() || inner->kind != StmtKind::kFor || !IsThreadBound(inner->for_kind)) {
        return;
      }
      if (IsBlockBound(inner->for_kind)) {
        misplaced = absl::InvalidArgumentError(
            absl::StrCat("GPU loop '", inner->loop_var->name, "' (", ForKindName(inner->for_kind),
                         ") is not in the chain of block loops that opens its launch"));
        return;
      }
      if (inner->limit != nullptr) {
        misplaced = absl::InvalidArgumentError(
            absl::StrCat("GPU loop '", inner->loop_var->name, "' (", ForKindName(inner->for_kind),
                         ") has a run-time limit; bound loops need a static extent"));
        return;
      }
      int64_t& dim =
          launch.block[static_cast<int>(inner->for_kind) - static_cast<int>(ForKind::kThreadIdxX)];
      dim = std::max(dim, inner->extent);
    });
    if (!misplaced.ok()) return misplaced;
    // Every thread of the block must reach the barrier after an outermost thread loop below
    // the chain: none may sit under a condition that depends on a thread index.
    std::set<const VarNode*> chain_vars;
    for (const StmtNode* t : launch.chain_threads) chain_vars.insert(t->loop_var.get());
    KILN_RETURN_IF_ERROR(CheckUniform(s, chain_vars, false));
    const int64_t block = launch.block[0] * launch.block[1] * launch.block[2];
    if (block > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU launch ", launches.size(), ": ", block,
                       " threads per block (CUDA allows at most 1024)"));
    }
    if (launch.grid[0] > 2147483647 || launch.grid[1] > 65535 || launch.grid[2] > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU launch ", launches.size(), ": grid ", launch.grid[0], "x",
                       launch.grid[1], "x", launch.grid[2], " exceeds CUDA's limits"));
    }
    launches.push_back(std::move(launch));
  }
  return launches;
}

}  // namespace kiln::loop
