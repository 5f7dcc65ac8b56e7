// Schedule printing and application: each step dispatches to its primitive; the Func is only
// updated once every step has succeeded.
#include "compiler_core/schedule/schedule.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/gpu_tile.h"
#include "compiler_core/schedule/hoist.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/schedule/winograd.h"

namespace kiln::schedule {
namespace {

std::string StepString(const Primitive& p) {
  std::string args = absl::StrJoin(p.loops, ", ");
  if (p.kind == Primitive::Kind::kSplit) absl::StrAppend(&args, ", ", p.factor);
  if (p.kind == Primitive::Kind::kWinograd) args = absl::StrCat(p.factor);
  if ((p.kind == Primitive::Kind::kGpuTile || p.kind == Primitive::Kind::kGpuTileMma) &&
      !p.factors.empty()) {
    absl::StrAppend(&args, ", ", absl::StrJoin(p.factors, ", "));
  }
  return absl::StrCat(PrimitiveKindName(p.kind), "(", args, ")");
}

absl::StatusOr<loop::Stmt> ApplyStep(const Primitive& p, const loop::Stmt& body) {
  auto need = [&](size_t n) -> absl::Status {
    if (p.kind == Primitive::Kind::kReorder ? p.loops.empty() : p.loops.size() != n) {
      return absl::FailedPreconditionError(absl::StrCat("expected ", n, " loop name(s)"));
    }
    return absl::OkStatus();
  };
  switch (p.kind) {
    case Primitive::Kind::kSplit:
      if (auto s = need(1); !s.ok()) return s;
      return SplitLoop(body, p.loops[0], p.factor);
    case Primitive::Kind::kReorder:
      if (auto s = need(0); !s.ok()) return s;
      return ReorderLoops(body, p.loops);
    case Primitive::Kind::kFuse:
      if (auto s = need(2); !s.ok()) return s;
      return FuseLoops(body, p.loops[0], p.loops[1]);
    case Primitive::Kind::kVectorize:
      if (auto s = need(1); !s.ok()) return s;
      return AnnotateLoop(body, p.loops[0], loop::ForKind::kVectorized);
    case Primitive::Kind::kUnroll:
      if (auto s = need(1); !s.ok()) return s;
      return AnnotateLoop(body, p.loops[0], loop::ForKind::kUnrolled);
    case Primitive::Kind::kParallel:
      if (auto s = need(1); !s.ok()) return s;
      return AnnotateLoop(body, p.loops[0], loop::ForKind::kParallel);
    case Primitive::Kind::kBind: {
      if (auto s = need(2); !s.ok()) return s;
      for (int k = static_cast<int>(loop::ForKind::kBlockIdxX);
           k <= static_cast<int>(loop::ForKind::kThreadIdxZ); ++k) {
        const auto kind = static_cast<loop::ForKind>(k);
        if (p.loops[1] == loop::ForKindName(kind)) return AnnotateLoop(body, p.loops[0], kind);
      }
      return absl::FailedPreconditionError(
          absl::StrCat("'", p.loops[1], "' is not a GPU index (blockIdx.x|y|z, threadIdx.x|y|z)"));
    }
    case Primitive::Kind::kWinograd:
    case Primitive::Kind::kComputeAt:
    case Primitive::Kind::kGpuTile:
    case Primitive::Kind::kGpuTileMma:
      break;  // Func rewrites: ApplySchedule
  }
  return absl::FailedPreconditionError("unknown primitive");
}

}  // namespace

const char* PrimitiveKindName(Primitive::Kind kind) {
  switch (kind) {
    case Primitive::Kind::kSplit: return "split";
    case Primitive::Kind::kReorder: return "reorder";
    case Primitive::Kind::kFuse: return "fuse";
    case Primitive::Kind::kVectorize: return "vectorize";
    case Primitive::Kind::kUnroll: return "unroll";
    case Primitive::Kind::kParallel: return "parallel";
    case Primitive::Kind::kWinograd: return "winograd";
    case Primitive::Kind::kComputeAt: return "compute_at";
    case Primitive::Kind::kBind:
      return "bind";
    case Primitive::Kind::kGpuTile:
      return "gpu_tile";
    case Primitive::Kind::kGpuTileMma:
      return "gpu_tile_mma";
  }
  return "?";
}

std::string Schedule::ToString() const {
  std::vector<std::string> lines;
  for (const Primitive& p : steps) lines.push_back(StepString(p));
  return absl::StrJoin(lines, "\n");
}

absl::Status ApplySchedule(const Schedule& schedule, loop::Func& func) {
  loop::Func work = func;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Primitive& p = schedule.steps[i];
    absl::Status st = absl::OkStatus();
    const bool nest_rewrite = p.kind == Primitive::Kind::kWinograd ||
                              p.kind == Primitive::Kind::kGpuTile ||
                              p.kind == Primitive::Kind::kGpuTileMma;
    if (!work.body) {
      st = absl::FailedPreconditionError("the function has no body");
    } else if (nest_rewrite && HasLimitedLoop(work.body)) {
      st = absl::FailedPreconditionError(
          "the kernel has loops with run-time limits (symbolic extents), which this step does "
          "not support yet");
    } else if (p.kind == Primitive::Kind::kWinograd) {
      st = p.loops.empty() ? ApplyWinograd(work, p.factor)
                           : absl::FailedPreconditionError("expected no loop names");
    } else if (p.kind == Primitive::Kind::kGpuTile) {
      st = p.loops.size() == 1 && p.factors.size() == 3
               ? GpuTileContraction(work, p.loops[0], p.factors[0], p.factors[1], p.factors[2])
               : absl::FailedPreconditionError("expected a loop name and 3 factors");
    } else if (p.kind == Primitive::Kind::kGpuTileMma) {
      loop::MmaShape shape = loop::MmaShape::kNone;
      if (p.loops.size() == 2) shape = MmaShapeOfPrecision(p.loops[1]);
      if (shape == loop::MmaShape::kNone) {
        st = absl::FailedPreconditionError("expected a loop name and tf32, f16 or bf16");
      } else if (p.factors.empty()) {
        st = GpuTileMma(work, p.loops[0], shape);
      } else if (p.factors.size() == 2) {
        st = GpuTileMma(work, p.loops[0], shape, p.factors[0], p.factors[1]);
      } else {
        st = absl::FailedPreconditionError("expected 2 gpu_tile_mma factors (block, stages)");
      }
    } else if (p.kind == Primitive::Kind::kComputeAt) {
      st = p.loops.size() == 2 ? ComputeAt(work, p.loops[0], p.loops[1])
                               : absl::FailedPreconditionError("expected 2 loop name(s)");
    } else {
      absl::StatusOr<loop::Stmt> next = ApplyStep(p, work.body);
      if (next.ok()) work.body = *next;
      st = next.status();
    }
    if (!st.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("func '", func.name, "' step ", i, " ",
                                                        StepString(p), ": ", st.message()));
    }
  }
  HoistConstantNests(work);
  func = std::move(work);
  return absl::OkStatus();
}

}  // namespace kiln::schedule
