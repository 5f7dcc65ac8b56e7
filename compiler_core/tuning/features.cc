// Per-store feature extraction: walks the loop nest keeping the enclosing loops, and for each
// Store counts its ops, reads its loop annotations and analyses its buffer accesses.
#include "compiler_core/tuning/features.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/tuning/access.h"

namespace kiln::tuning {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::ForKind;
using loop::Stmt;
using loop::StmtKind;
using loop::UnaryOp;
using SF = StoreFeature;
using BF = BufferFeature;
using CF = CacheFeature;

bool IsMathFunc(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kNot:
      return false;
    default:
      return true;
  }
}

/// Adds the ops of one evaluation of `e` to `f` (per execution; scaled later).
void CountOps(const Expr& e, StoreFeatures& f) {
  for (const Expr& o : e->operands) CountOps(o, f);
  switch (e->kind) {
    case ExprKind::kSelect:
      f[SF::kSelectOp] += 1;
      return;
    case ExprKind::kCast:
      f[SF::kCastOp] += 1;
      return;
    case ExprKind::kUnary: {
      if (e->unary_op == UnaryOp::kNot) {
        f[SF::kBoolOp] += 1;
      } else if (IsFloat(e->dtype)) {
        f[IsMathFunc(e->unary_op) ? SF::kFloatMathFunc : SF::kFloatOtherFunc] += 1;
      } else {
        f[SF::kIntOtherFunc] += 1;
      }
      return;
    }
    case ExprKind::kBinary:
      break;
    default:
      return;
  }
  const bool fp = IsFloat(e->operands[0]->dtype);
  switch (e->binary_op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub: {
      auto is_mul = [](const Expr& x) {
        return x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kMul;
      };
      const bool mad = is_mul(e->operands[0]) || is_mul(e->operands[1]);
      if (mad)
        f[fp ? SF::kFloatMad : SF::kIntMad] += 1;
      else
        f[fp ? SF::kFloatAddSub : SF::kIntAddSub] += 1;
      return;
    }
    case BinaryOp::kMul:
      f[fp ? SF::kFloatMul : SF::kIntMul] += 1;
      return;
    case BinaryOp::kDot4U8S8:  // four 8-bit multiply-adds
      f[SF::kIntMad] += 4;
      return;
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod:
      f[fp ? SF::kFloatDivMod : SF::kIntDivMod] += 1;
      return;
    case BinaryOp::kPow:
      f[fp ? SF::kFloatMathFunc : SF::kIntOtherFunc] += 1;
      return;
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
      f[SF::kBoolOp] += 1;
      return;
    case BinaryOp::kShl:
    case BinaryOp::kShr:
      f[SF::kIntOtherFunc] += 1;
      return;
    default:  // min, max, comparisons
      f[fp ? SF::kFloatCmp : SF::kIntCmp] += 1;
      return;
  }
}

BufferAccess& AccessOf(std::vector<BufferAccess>& accesses, const loop::BufferRef& buffer) {
  for (BufferAccess& a : accesses) {
    if (a.buffer == buffer) return a;
  }
  accesses.push_back(BufferAccess{buffer, {}, false, false});
  return accesses.back();
}

void CollectLoads(const Expr& e, std::vector<BufferAccess>& accesses) {
  if (e->kind == ExprKind::kLoad) {
    BufferAccess& a = AccessOf(accesses, e->buffer);
    a.read = true;
    a.indices.push_back(e->operands);
  }
  for (const Expr& o : e->operands) CollectLoads(o, accesses);
}

class Extractor {
 public:
  explicit Extractor(const FeatureContext& context) : ctx_(context) {}

  std::vector<StoreFeatures> Run(const Stmt& body) {
    if (body) Visit(body);
    return std::move(out_);
  }

 private:
  void Visit(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::kFor:
        loops_.push_back(LoopFrame{s->loop_var.get(), s->extent, s->for_kind, s->is_reduction});
        Visit(s->body);
        loops_.pop_back();
        return;
      case StmtKind::kMma:
      case StmtKind::kStore:
      case StmtKind::kAsyncCopy:
        out_.push_back(Store(*s));
        return;
      case StmtKind::kAsyncWait:
        return;
      case StmtKind::kBlock:
        for (const Stmt& c : s->stmts) Visit(c);
        return;
      case StmtKind::kIf:
        ++conditions_;
        Visit(s->then_body);
        if (s->else_body) Visit(s->else_body);
        --conditions_;
        return;
      case StmtKind::kAllocate:
        Visit(s->body);
        return;
    }
  }

  StoreFeatures Store(const loop::StmtNode& s) {
    StoreFeatures f;
    f.buffer = s.buffer->name;
    double executions = 1;
    for (const LoopFrame& l : loops_) executions *= static_cast<double>(l.extent);
    CountOps(s.value, f);
    for (const Expr& i : s.indices) CountOps(i, f);
    static_assert(static_cast<int>(SF::kCastOp) + 1 == static_cast<int>(SF::kFlops),
                  "the op counts are the features before flops");
    for (int k = 0; k <= static_cast<int>(SF::kCastOp); ++k) f.scalar[k] *= executions;
    f[SF::kFlops] = f[SF::kFloatMad] + f[SF::kFloatAddSub] + f[SF::kFloatMul] +
                    f[SF::kFloatDivMod] + f[SF::kFloatCmp] + f[SF::kFloatMathFunc] +
                    f[SF::kFloatOtherFunc];
    f[SF::kExecutions] = executions;
    LoopFeatures(s, f);
    std::vector<BufferAccess> accesses;
    BufferAccess& stored = AccessOf(accesses, s.buffer);
    stored.write = true;
    stored.indices.push_back(s.indices);
    for (const Expr& i : s.indices) CollectLoads(i, accesses);
    CollectLoads(s.value, accesses);
    MemoryFeatures(accesses, f);
    CacheFeatures(accesses, f);
    f[SF::kStoreIsLocal] = s.buffer->scope == loop::Buffer::Scope::kLocal;
    f[SF::kLocalAllocBytes] = f[SF::kStoreIsLocal] ? s.buffer->NumBytes() : 0;
    return f;
  }

  void LoopFeatures(const loop::StmtNode& s, StoreFeatures& f) const {
    const int depth = static_cast<int>(loops_.size());
    f[SF::kLoopDepth] = depth;
    f[SF::kReductionProd] = 1;
    f[SF::kInnermostExtent] = depth > 0 ? loops_.back().extent : 0;
    f[SF::kNumConditions] = conditions_;
    f[SF::kVecProd] = f[SF::kUnrollProd] = f[SF::kParallelProd] = 1;
    for (int i = depth - 1; i >= 0; --i) {
      const LoopFrame& l = loops_[i];
      if (l.reduction) {
        f[SF::kReductionDepth] += 1;
        f[SF::kReductionProd] *= l.extent;
      }
      auto note = [&](SF num, SF prod, SF len, SF pos) {
        if (f[num] == 0) {
          f[len] = l.extent;
          f[pos] = depth - i;
        }
        f[num] += 1;
        f[prod] *= l.extent;
      };
      if (l.kind == ForKind::kVectorized) note(SF::kVecNum, SF::kVecProd, SF::kVecLen, SF::kVecPos);
      if (l.kind == ForKind::kUnrolled) {
        note(SF::kUnrollNum, SF::kUnrollProd, SF::kUnrollLen, SF::kUnrollPos);
      }
      if (l.kind == ForKind::kParallel) {
        // Counted outside-in below; here only the innermost parallel extent.
        if (f[SF::kParallelNum] == 0) f[SF::kParallelLen] = l.extent;
        f[SF::kParallelNum] += 1;
        f[SF::kParallelProd] *= l.extent;
        f[SF::kParallelPos] = i + 1;  // ends as the outermost one's position
      }
    }
    if (f[SF::kVecNum] == 0) f[SF::kVecProd] = 0;
    if (f[SF::kUnrollNum] == 0) f[SF::kUnrollProd] = 0;
    const double natural_lanes = std::max<double>(
        1, ctx_.vector_lanes_f32 * 4.0 / static_cast<double>(DTypeSize(s.buffer->dtype)));
    f[SF::kVecLaneRatio] = f[SF::kVecLen] / natural_lanes;
    const double chunks = f[SF::kParallelProd];
    const double threads = ctx_.num_threads;
    if (f[SF::kParallelNum] == 0) {
      f[SF::kParallelProd] = 0;
    } else {
      f[SF::kChunksPerThread] = chunks / threads;
      f[SF::kParallelBalance] = chunks / (std::ceil(chunks / threads) * threads);
    }
    f[SF::kWorkPerChunk] = f[SF::kExecutions] / std::max(1.0, f[SF::kParallelProd]);
  }

  /// Per-buffer features and their store-level totals; fills the slots by bytes accessed.
  void MemoryFeatures(const std::vector<BufferAccess>& accesses, StoreFeatures& f) const {
    const int depth = static_cast<int>(loops_.size());
    const double line = static_cast<double>(ctx_.cache_line_bytes);
    const double executions = f[SF::kExecutions];
    std::vector<std::array<double, kNumBufferFeatures>> rows;
    for (const BufferAccess& a : accesses) {
      std::array<double, kNumBufferFeatures> r{};
      auto at = [&](BF x) -> double& { return r[static_cast<int>(x)]; };
      const double elem = static_cast<double>(DTypeSize(a.buffer->dtype));
      const double count = static_cast<double>(a.indices.size());
      at(BF::kIsRead) = a.read;
      at(BF::kIsWrite) = a.write;
      at(BF::kIsLocal) = a.buffer->scope == loop::Buffer::Scope::kLocal;
      at(BF::kElemBytes) = elem;
      at(BF::kAccesses) = count;
      at(BF::kBytes) = executions * count * elem;
      at(BF::kUniqueBytes) = static_cast<double>(FootprintElements(a, loops_, depth)) * elem;
      at(BF::kUniqueLines) = FootprintLines(a, loops_, depth, ctx_.cache_line_bytes);
      at(BF::kInnermostStride) = depth > 0 ? FlatStride(a, loops_, depth - 1) : 0;
      double inner_iters = 1;
      at(BF::kLines) = executions > 0 ? count : 0;  // one line per access if nothing moves
      for (int l = depth - 1; l >= 0; --l) {
        const int64_t stride = FlatStride(a, loops_, l);
        if (stride != 0) {
          at(BF::kStride) = static_cast<double>(stride);
          const double step = std::abs(static_cast<double>(stride)) * elem / line;
          at(BF::kLines) = executions * count / inner_iters * std::min(1.0, step);
          break;
        }
        inner_iters *= static_cast<double>(loops_[l].extent);
      }
      inner_iters = 1;
      for (int l = depth - 1; l >= 0; --l) {
        if (loops_[l].extent > 1 && !DependsOn(a, loops_[l].var)) {
          at(BF::kReuseType) = 1;
          at(BF::kReuseCount) = static_cast<double>(loops_[l].extent);
          at(BF::kReuseDistIter) = inner_iters;
          at(BF::kReuseDistBytes) = FootprintBytes(accesses, depth - 1 - l);
          break;
        }
        inner_iters *= static_cast<double>(loops_[l].extent);
      }
      if (at(BF::kReuseType) == 0 && count > 1) {
        at(BF::kReuseType) = 2;
        at(BF::kReuseCount) = count - 1;
      }
      at(BF::kBytesPerReuse) = at(BF::kBytes) / std::max(1.0, at(BF::kReuseCount));
      at(BF::kLinesPerReuse) = at(BF::kLines) / std::max(1.0, at(BF::kReuseCount));
      f[SF::kBytes] += at(BF::kBytes);
      f[SF::kUniqueBytes] += at(BF::kUniqueBytes);
      f[SF::kLines] += at(BF::kLines);
      f[SF::kUniqueLines] += at(BF::kUniqueLines);
      rows.push_back(r);
    }
    f[SF::kNumBuffers] = static_cast<double>(accesses.size());
    f[SF::kIntensity] = f[SF::kBytes] > 0 ? f[SF::kFlops] / f[SF::kBytes] : 0;
    f[SF::kUniqueIntensity] = f[SF::kUniqueBytes] > 0 ? f[SF::kFlops] / f[SF::kUniqueBytes] : 0;
    std::vector<int> order(accesses.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    const int bytes = static_cast<int>(BF::kBytes);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      if (rows[x][bytes] != rows[y][bytes]) return rows[x][bytes] > rows[y][bytes];
      return accesses[x].buffer->name < accesses[y].buffer->name;
    });
    for (int slot = 0; slot < kMaxBufferSlots && slot < static_cast<int>(order.size()); ++slot) {
      f.buffers[slot] = rows[order[slot]];
      f.buffer_names[slot] = accesses[order[slot]].buffer->name;
    }
  }

  /// Bytes (whole cache lines) of all `accesses` while the innermost `k` loops run.
  double FootprintBytes(const std::vector<BufferAccess>& accesses, int k) const {
    double lines = 0;
    for (const BufferAccess& a : accesses) {
      lines += static_cast<double>(FootprintLines(a, loops_, k, ctx_.cache_line_bytes));
    }
    return lines * static_cast<double>(ctx_.cache_line_bytes);
  }

  void CacheFeatures(const std::vector<BufferAccess>& accesses, StoreFeatures& f) const {
    const int depth = static_cast<int>(loops_.size());
    std::vector<double> footprint(depth + 1);
    for (int k = 0; k <= depth; ++k) footprint[k] = FootprintBytes(accesses, k);
    for (size_t c = 0; c < ctx_.cache_bytes.size(); ++c) {
      const int level = static_cast<int>(c);
      const double capacity = static_cast<double>(ctx_.cache_bytes[c]);
      int fit = 0;
      while (fit < depth && footprint[fit + 1] <= capacity) ++fit;
      double traffic = footprint[depth];
      if (fit < depth) {
        double outer = 1;
        for (int l = 0; l < depth - fit - 1; ++l) outer *= static_cast<double>(loops_[l].extent);
        traffic = std::max(traffic, footprint[fit + 1] * outer);
      }
      f.at(level, CF::kPresent) = 1;
      f.at(level, CF::kFitDepth) = fit;
      f.at(level, CF::kFitBytes) = footprint[fit];
      f.at(level, CF::kTrafficBytes) = traffic;
      f.at(level, CF::kIntensity) = traffic > 0 ? f[SF::kFlops] / traffic : 0;
    }
  }

  const FeatureContext& ctx_;
  std::vector<LoopFrame> loops_;
  int conditions_ = 0;
  std::vector<StoreFeatures> out_;
};

absl::Status ValidateContext(const FeatureContext& context) {
  if (context.cache_line_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("feature context: cache_line_bytes is ",
                                                   context.cache_line_bytes, ", expected > 0"));
  }
  if (context.cache_bytes.size() > static_cast<size_t>(kMaxCacheLevels)) {
    return absl::InvalidArgumentError(absl::StrCat("feature context: ", context.cache_bytes.size(),
                                                   " cache levels, expected at most ",
                                                   kMaxCacheLevels));
  }
  for (size_t c = 0; c < context.cache_bytes.size(); ++c) {
    if (context.cache_bytes[c] <= 0 ||
        (c > 0 && context.cache_bytes[c] < context.cache_bytes[c - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature context: cache level ", c + 1, " has ", context.cache_bytes[c],
                       " bytes, expected > 0 and no less than the level inside it"));
    }
  }
  if (context.vector_lanes_f32 < 1 || context.num_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("feature context: vector_lanes_f32 ",
                                                   context.vector_lanes_f32, " and num_threads ",
                                                   context.num_threads, ", expected both >= 1"));
  }
  return absl::OkStatus();
}

}  // namespace

int StoreFeatures::Slot(const std::string& name) const {
  for (int i = 0; i < kMaxBufferSlots; ++i) {
    if (!buffer_names[i].empty() && buffer_names[i] == name) return i;
  }
  return -1;
}

absl::StatusOr<std::vector<StoreFeatures>> ExtractStoreFeatures(const loop::Func& func,
                                                                const FeatureContext& context) {
  absl::Status valid = ValidateContext(context);
  if (!valid.ok()) return valid;
  return Extractor(context).Run(func.body);
}

}  // namespace kiln::tuning
