// The kernel feature vector: kernel-level counts, the per-store features aggregated over all
// stores, and the blocks of the heaviest stores; plus the names of every entry.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/tuning/features.h"

namespace kiln::tuning {
namespace {

using loop::ForKind;
using loop::Stmt;
using loop::StmtKind;

#define KILN_FEATURE_NAME_(name, str, ...) str,
#define KILN_FEATURE_AGG_(name, str, agg) agg,
constexpr const char* kStoreNames[] = {KILN_STORE_FEATURES(KILN_FEATURE_NAME_)};
constexpr const char* kCacheNames[] = {KILN_CACHE_FEATURES(KILN_FEATURE_NAME_)};
constexpr const char* kBufferNames[] = {KILN_BUFFER_FEATURES(KILN_FEATURE_NAME_)};
constexpr const char* kKernelNames[] = {KILN_KERNEL_FEATURES(KILN_FEATURE_NAME_)};
constexpr int kStoreAgg[] = {KILN_STORE_FEATURES(KILN_FEATURE_AGG_)};
constexpr int kCacheAgg[] = {KILN_CACHE_FEATURES(KILN_FEATURE_AGG_)};
#undef KILN_FEATURE_NAME_
#undef KILN_FEATURE_AGG_

using KernelRow = std::array<double, kNumKernelFeatures>;

void CountKernel(const Stmt& s, int depth, KernelRow& k) {
  auto at = [&](KernelFeature f) -> double& { return k[static_cast<int>(f)]; };
  switch (s->kind) {
    case StmtKind::kFor:
      at(KernelFeature::kNumLoops) += 1;
      at(KernelFeature::kMaxDepth) = std::max<double>(at(KernelFeature::kMaxDepth), depth + 1);
      if (s->for_kind == ForKind::kParallel) at(KernelFeature::kNumParallelLoops) += 1;
      if (s->for_kind == ForKind::kVectorized) at(KernelFeature::kNumVectorizedLoops) += 1;
      if (s->for_kind == ForKind::kUnrolled) at(KernelFeature::kNumUnrolledLoops) += 1;
      if (s->is_reduction) at(KernelFeature::kNumReductionLoops) += 1;
      CountKernel(s->body, depth + 1, k);
      return;
    case StmtKind::kMma:
    case StmtKind::kStore:
    case StmtKind::kAsyncCopy:
    case StmtKind::kAsyncWait:
      return;
    case StmtKind::kBlock:
      for (const Stmt& c : s->stmts) CountKernel(c, depth, k);
      return;
    case StmtKind::kIf:
      CountKernel(s->then_body, depth, k);
      if (s->else_body) CountKernel(s->else_body, depth, k);
      return;
    case StmtKind::kAllocate: {
      const double bytes = static_cast<double>(s->buffer->NumBytes());
      at(KernelFeature::kNumLocalAllocs) += 1;
      at(KernelFeature::kLocalAllocBytes) += bytes;
      at(KernelFeature::kMaxLocalAllocBytes) =
          std::max(at(KernelFeature::kMaxLocalAllocBytes), bytes);
      CountKernel(s->body, depth, k);
      return;
    }
  }
}

KernelRow KernelFeatures(const loop::Func& func, const std::vector<StoreFeatures>& stores) {
  KernelRow k{};
  auto at = [&](KernelFeature f) -> double& { return k[static_cast<int>(f)]; };
  if (func.body) {
    CountKernel(func.body, 0, k);
    at(KernelFeature::kNumTopNests) =
        func.body->kind == StmtKind::kBlock ? static_cast<double>(func.body->stmts.size()) : 1;
  }
  at(KernelFeature::kNumStores) = static_cast<double>(stores.size());
  for (const StoreFeatures& s : stores) at(KernelFeature::kFlops) += s[StoreFeature::kFlops];
  for (const loop::BufferRef& b : func.params) {
    at(KernelFeature::kParamBytes) += static_cast<double>(b->NumBytes());
  }
  for (const loop::BufferRef& b : func.workspaces) {
    at(KernelFeature::kWorkspaceBytes) += static_cast<double>(b->NumBytes());
  }
  return k;
}

/// Scalar and cache features over all stores: sums, or means weighted by executions.
std::vector<double> AggregateStores(const std::vector<StoreFeatures>& stores) {
  std::vector<double> out;
  double weight = 0;
  for (const StoreFeatures& s : stores) weight += s[StoreFeature::kExecutions];
  auto combine = [&](int agg, auto value_of) {
    double v = 0;
    for (const StoreFeatures& s : stores) {
      v += agg == KILN_AGG_SUM ? value_of(s) : value_of(s) * s[StoreFeature::kExecutions];
    }
    if (agg == KILN_AGG_MEAN) v = weight > 0 ? v / weight : 0;
    out.push_back(v);
  };
  for (int i = 0; i < kNumStoreFeatures; ++i) {
    combine(kStoreAgg[i], [&](const StoreFeatures& s) { return s.scalar[i]; });
  }
  for (int c = 0; c < kMaxCacheLevels; ++c) {
    for (int i = 0; i < kNumCacheFeatures; ++i) {
      combine(kCacheAgg[i], [&](const StoreFeatures& s) { return s.cache[c][i]; });
    }
  }
  return out;
}

}  // namespace

std::vector<double> FlattenStoreFeatures(const StoreFeatures& f) {
  std::vector<double> out(f.scalar.begin(), f.scalar.end());
  for (const auto& level : f.cache) out.insert(out.end(), level.begin(), level.end());
  for (const auto& slot : f.buffers) out.insert(out.end(), slot.begin(), slot.end());
  return out;
}

std::vector<std::string> StoreFeatureNames() {
  std::vector<std::string> names(std::begin(kStoreNames), std::end(kStoreNames));
  for (int c = 0; c < kMaxCacheLevels; ++c) {
    for (const char* n : kCacheNames) names.push_back(absl::StrCat("cache", c + 1, ".", n));
  }
  for (int b = 0; b < kMaxBufferSlots; ++b) {
    for (const char* n : kBufferNames) names.push_back(absl::StrCat("buf", b, ".", n));
  }
  return names;
}

std::vector<std::string> FeatureNames() {
  std::vector<std::string> names;
  for (const char* n : kKernelNames) names.push_back(absl::StrCat("kernel.", n));
  const std::vector<std::string> store = StoreFeatureNames();
  const int aggregated = kNumStoreFeatures + kMaxCacheLevels * kNumCacheFeatures;
  for (int i = 0; i < aggregated; ++i) names.push_back(absl::StrCat("all.", store[i]));
  for (int s = 0; s < kTopStores; ++s) {
    for (const std::string& n : store) names.push_back(absl::StrCat("store", s, ".", n));
  }
  return names;
}

absl::StatusOr<std::vector<float>> ExtractFeatures(const loop::Func& func,
                                                   const FeatureContext& context) {
  absl::StatusOr<std::vector<StoreFeatures>> stores = ExtractStoreFeatures(func, context);
  if (!stores.ok()) return stores.status();
  std::vector<double> v;
  v.reserve(kFeatureLength);
  const KernelRow kernel = KernelFeatures(func, *stores);
  v.insert(v.end(), kernel.begin(), kernel.end());
  const std::vector<double> all = AggregateStores(*stores);
  v.insert(v.end(), all.begin(), all.end());
  std::vector<int> order(stores->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return (*stores)[a][StoreFeature::kFlops] > (*stores)[b][StoreFeature::kFlops];
  });
  for (int s = 0; s < kTopStores; ++s) {
    if (s < static_cast<int>(order.size())) {
      const std::vector<double> block = FlattenStoreFeatures((*stores)[order[s]]);
      v.insert(v.end(), block.begin(), block.end());
    } else {
      v.insert(v.end(), kStoreBlockLength, 0.0);
    }
  }
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace kiln::tuning
