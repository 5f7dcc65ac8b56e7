// Fixed-length feature vectors of scheduled loop-IR kernels, the input of the learned cost
// model. The feature set follows Ansor's per-store features (Zheng et al., "Ansor: Generating
// High-Performance Tensor Programs for Deep Learning", OSDI 2020, appendix; TVM's
// src/auto_scheduler/feature.cc): op counts, vectorize/unroll/parallel annotations, buffer
// accesses with reuse and strides, per-cache-level footprints and arithmetic intensity.
#ifndef KILN_COMPILER_CORE_TUNING_FEATURES_H_
#define KILN_COMPILER_CORE_TUNING_FEATURES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::tuning {

/// The memory hierarchy and parallel resources features are computed against. Nothing in it is
/// CPU-specific: a GPU target passes its own line size, cache (or shared-memory) levels, vector
/// width and thread count.
struct FeatureContext {
  int64_t cache_line_bytes = 64;  // bytes of one cache line (or memory transaction), > 0
  /// Capacity in bytes of each cache level, innermost (L1) first; non-decreasing, each > 0;
  /// at most kMaxCacheLevels entries (missing levels give zero features).
  std::vector<int64_t> cache_bytes = {32 * 1024, 1024 * 1024, 32 * 1024 * 1024};
  int vector_lanes_f32 = 8;  // f32 lanes of one SIMD register (or warp lanes), >= 1
  int num_threads = 1;       // threads the parallel loops are spread over, >= 1
};

/// Cache levels described by the per-store cache features; a context with fewer levels has
/// zeros (and cache.present = 0) in the rest.
inline constexpr int kMaxCacheLevels = 3;
/// Buffers per store that get their own feature slot (the heaviest by bytes accessed); the
/// store-level totals still count every buffer.
inline constexpr int kMaxBufferSlots = 5;
/// Stores of a kernel whose full feature block is part of the kernel vector (the heaviest by
/// FLOPs).
inline constexpr int kTopStores = 4;

// clang-format off
// How a store feature is aggregated over all stores of a kernel (the "all" block of the kernel
// vector): KILN_AGG_SUM adds it, KILN_AGG_MEAN averages it weighted by executions.
#define KILN_AGG_SUM 0
#define KILN_AGG_MEAN 1

// Per-store scalar features: X(enumerator, printed name, aggregation). Counts are totals over
// one run of the kernel (per-execution count × executions of the store) unless noted.
#define KILN_STORE_FEATURES(X)                                                              \
  /* Compute, in operations. A float add/sub with a multiply operand counts as one mad (its  \
     multiply is counted in *_mul); min/max count as comparisons; index arithmetic counts as \
     int ops. */                                                                             \
  X(kFloatMad, "float_mad", KILN_AGG_SUM)                                                    \
  X(kFloatAddSub, "float_addsub", KILN_AGG_SUM)                                              \
  X(kFloatMul, "float_mul", KILN_AGG_SUM)                                                    \
  X(kFloatDivMod, "float_divmod", KILN_AGG_SUM)                                              \
  X(kFloatCmp, "float_cmp", KILN_AGG_SUM)                                                    \
  X(kFloatMathFunc, "float_math_func", KILN_AGG_SUM)   /* exp log sqrt tanh erf pow trig */  \
  X(kFloatOtherFunc, "float_other_func", KILN_AGG_SUM) /* neg abs floor ceil round */        \
  X(kIntMad, "int_mad", KILN_AGG_SUM)                                                        \
  X(kIntAddSub, "int_addsub", KILN_AGG_SUM)                                                  \
  X(kIntMul, "int_mul", KILN_AGG_SUM)                                                        \
  X(kIntDivMod, "int_divmod", KILN_AGG_SUM)                                                  \
  X(kIntCmp, "int_cmp", KILN_AGG_SUM)                                                        \
  X(kIntOtherFunc, "int_other_func", KILN_AGG_SUM) /* neg abs shifts */                      \
  X(kBoolOp, "bool_op", KILN_AGG_SUM)                                                        \
  X(kSelectOp, "select_op", KILN_AGG_SUM)                                                    \
  X(kCastOp, "cast_op", KILN_AGG_SUM)                                                        \
  /* FLOPs: the sum of the seven float_* counts (a multiply-add is 2). */                    \
  X(kFlops, "flops", KILN_AGG_SUM)                                                           \
  /* Loop nest. */                                                                           \
  X(kExecutions, "executions", KILN_AGG_SUM) /* times the store runs: product of extents */  \
  X(kLoopDepth, "loop_depth", KILN_AGG_MEAN)                                                 \
  X(kReductionDepth, "reduction_depth", KILN_AGG_MEAN)                                       \
  X(kReductionProd, "reduction_prod", KILN_AGG_MEAN) /* product of reduction extents */      \
  X(kInnermostExtent, "innermost_extent", KILN_AGG_MEAN)                                     \
  X(kNumConditions, "num_conditions", KILN_AGG_MEAN) /* enclosing ifs (counted as taken) */  \
  /* Vectorization. pos: 1 = the innermost loop, 2 = the next one out, 0 = none. */          \
  X(kVecNum, "vec_num", KILN_AGG_MEAN)         /* vectorized loops around the store */       \
  X(kVecProd, "vec_prod", KILN_AGG_MEAN)       /* product of their extents */                \
  X(kVecLen, "vec_len", KILN_AGG_MEAN)         /* innermost vectorized extent: lanes */      \
  X(kVecPos, "vec_pos", KILN_AGG_MEAN)                                                       \
  X(kVecLaneRatio, "vec_lane_ratio", KILN_AGG_MEAN) /* vec_len / lanes of the stored dtype */ \
  /* Unrolling; pos as for vectorization. */                                                 \
  X(kUnrollNum, "unroll_num", KILN_AGG_MEAN)                                                 \
  X(kUnrollProd, "unroll_prod", KILN_AGG_MEAN)                                               \
  X(kUnrollLen, "unroll_len", KILN_AGG_MEAN)                                                 \
  X(kUnrollPos, "unroll_pos", KILN_AGG_MEAN)                                                 \
  /* Parallelism. pos: 1 = the outermost loop, 2 = the next one in, 0 = none. */             \
  X(kParallelNum, "parallel_num", KILN_AGG_MEAN)                                             \
  X(kParallelProd, "parallel_prod", KILN_AGG_MEAN) /* chunks: product of parallel extents */ \
  X(kParallelLen, "parallel_len", KILN_AGG_MEAN)   /* innermost parallel extent */           \
  X(kParallelPos, "parallel_pos", KILN_AGG_MEAN)                                             \
  X(kChunksPerThread, "chunks_per_thread", KILN_AGG_MEAN) /* parallel_prod / num_threads */  \
  /* parallel_prod / (ceil(parallel_prod / num_threads) * num_threads): 1 = balanced. */     \
  X(kParallelBalance, "parallel_balance", KILN_AGG_MEAN)                                     \
  X(kWorkPerChunk, "work_per_chunk", KILN_AGG_MEAN) /* executions / max(1, parallel_prod) */ \
  /* Memory, over all buffers the store reads or writes. */                                  \
  X(kNumBuffers, "num_buffers", KILN_AGG_MEAN)                                               \
  X(kBytes, "bytes", KILN_AGG_SUM)              /* bytes accessed (with repeats) */          \
  X(kUniqueBytes, "unique_bytes", KILN_AGG_SUM) /* footprint of the whole nest */            \
  X(kLines, "lines", KILN_AGG_SUM)              /* cache lines accessed (see buffer.lines) */ \
  X(kUniqueLines, "unique_lines", KILN_AGG_SUM)                                              \
  X(kIntensity, "intensity", KILN_AGG_MEAN)               /* flops / bytes */               \
  X(kUniqueIntensity, "unique_intensity", KILN_AGG_MEAN)  /* flops / unique_bytes */        \
  /* Allocation: stores into kLocal buffers (register / stack tiles). */                    \
  X(kStoreIsLocal, "store_is_local", KILN_AGG_MEAN)                                          \
  X(kLocalAllocBytes, "local_alloc_bytes", KILN_AGG_MEAN) /* size of that buffer, else 0 */

// Per-store, per-cache-level features: X(enumerator, printed name, aggregation). Footprints
// are in whole cache lines (bytes = lines × cache_line_bytes) of the store's buffers while the
// innermost k loops run and the outer ones stay fixed.
#define KILN_CACHE_FEATURES(X)                                                              \
  X(kPresent, "present", KILN_AGG_MEAN)         /* 1 if the context has this level */       \
  X(kFitDepth, "fit_depth", KILN_AGG_MEAN)      /* largest k whose footprint fits (loops) */ \
  X(kFitBytes, "fit_bytes", KILN_AGG_MEAN)      /* footprint of those k loops (bytes; for \
                                                   k = 0, of one execution) */              \
  /* Bytes brought into the level under LRU: the footprint of the innermost fit_depth + 1 \
     loops (the first that does not fit; reuse inside it hits), times the extents of every  \
     loop outside them (a reuse across those spans more than the level holds). */            \
  X(kTrafficBytes, "traffic_bytes", KILN_AGG_SUM)                                            \
  X(kIntensity, "intensity", KILN_AGG_MEAN)     /* flops / traffic_bytes */

// Per-buffer-slot features: X(enumerator, printed name). Slots hold the buffers of one store
// in decreasing order of bytes accessed (ties by name); unused slots are zero.
#define KILN_BUFFER_FEATURES(X)                                                              \
  X(kIsRead, "is_read")                                                                      \
  X(kIsWrite, "is_write")                                                                    \
  X(kIsLocal, "is_local")            /* a kLocal (stack / register) buffer */                \
  X(kElemBytes, "elem_bytes")                                                                \
  X(kAccesses, "accesses")           /* accesses per execution of the store */               \
  X(kBytes, "bytes")                 /* executions × accesses × elem_bytes */                \
  X(kUniqueBytes, "unique_bytes")    /* footprint over the whole nest (bounding box) */      \
  /* Cache lines accessed: executions × accesses, divided by the iterations of the loops     \
     inside the innermost one that moves the address, times min(1, its stride bytes / line). \
   */                                                                                        \
  X(kLines, "lines")                                                                         \
  X(kUniqueLines, "unique_lines")    /* lines of that box: rows of whole-line runs */        \
  /* Strides are of the row-major flat offset of the buffer's first access, by a finite     \
     difference at the middle of every loop's range (so clamped indices count as moving). */ \
  X(kInnermostStride, "innermost_stride") /* elements per iteration of the innermost loop: \
                                             0 broadcast, 1 contiguous, else strided */      \
  X(kStride, "stride")               /* elements, along the innermost loop that moves it */  \
  /* 0: no reuse; 1: a loop leaves the address unchanged (the innermost such loop counts);   \
     2: several accesses within one execution. */                                            \
  X(kReuseType, "reuse_type")                                                                \
  X(kReuseCount, "reuse_count")      /* type 1: that loop's extent; type 2: accesses - 1 */  \
  X(kReuseDistIter, "reuse_dist_iter")   /* iterations between reuses (loops inside it) */   \
  X(kReuseDistBytes, "reuse_dist_bytes") /* footprint of the store's buffers between them */ \
  X(kBytesPerReuse, "bytes_per_reuse")   /* bytes / max(1, reuse_count) */                   \
  X(kLinesPerReuse, "lines_per_reuse")   /* lines / max(1, reuse_count) */

// Kernel-level features: X(enumerator, printed name).
#define KILN_KERNEL_FEATURES(X)                                                              \
  X(kNumStores, "num_stores")                                                                \
  X(kNumLoops, "num_loops")                                                                  \
  X(kNumTopNests, "num_top_nests")   /* statements of the top-level block */                 \
  X(kMaxDepth, "max_depth")                                                                  \
  X(kNumParallelLoops, "num_parallel_loops")                                                 \
  X(kNumVectorizedLoops, "num_vectorized_loops")                                             \
  X(kNumUnrolledLoops, "num_unrolled_loops")                                                 \
  X(kNumReductionLoops, "num_reduction_loops")                                               \
  X(kFlops, "flops")                                                                         \
  X(kParamBytes, "param_bytes")         /* bytes of all params */                            \
  X(kWorkspaceBytes, "workspace_bytes") /* bytes of all workspaces */                        \
  X(kNumLocalAllocs, "num_local_allocs")                                                     \
  X(kLocalAllocBytes, "local_alloc_bytes")       /* sum over Allocate statements */          \
  X(kMaxLocalAllocBytes, "max_local_alloc_bytes")

// clang-format on

#define KILN_FEATURE_ENUMERATOR_(name, ...) name,
enum class StoreFeature : int { KILN_STORE_FEATURES(KILN_FEATURE_ENUMERATOR_) kCount };
enum class CacheFeature : int { KILN_CACHE_FEATURES(KILN_FEATURE_ENUMERATOR_) kCount };
enum class BufferFeature : int { KILN_BUFFER_FEATURES(KILN_FEATURE_ENUMERATOR_) kCount };
enum class KernelFeature : int { KILN_KERNEL_FEATURES(KILN_FEATURE_ENUMERATOR_) kCount };
#undef KILN_FEATURE_ENUMERATOR_

inline constexpr int kNumStoreFeatures = static_cast<int>(StoreFeature::kCount);
inline constexpr int kNumCacheFeatures = static_cast<int>(CacheFeature::kCount);
inline constexpr int kNumBufferFeatures = static_cast<int>(BufferFeature::kCount);
inline constexpr int kNumKernelFeatures = static_cast<int>(KernelFeature::kCount);

/// The features of one Store statement (raw values in the units documented above).
struct StoreFeatures {
  std::string buffer;  // name of the stored buffer (for printing; not a feature)
  std::array<double, kNumStoreFeatures> scalar{};
  std::array<std::array<double, kNumCacheFeatures>, kMaxCacheLevels> cache{};
  std::array<std::array<double, kNumBufferFeatures>, kMaxBufferSlots> buffers{};
  std::array<std::string, kMaxBufferSlots> buffer_names;  // "" for unused slots

  double& operator[](StoreFeature f) { return scalar[static_cast<int>(f)]; }
  double operator[](StoreFeature f) const { return scalar[static_cast<int>(f)]; }
  double& at(int level, CacheFeature f) { return cache[level][static_cast<int>(f)]; }
  double at(int level, CacheFeature f) const { return cache[level][static_cast<int>(f)]; }
  double& at(int slot, BufferFeature f) { return buffers[slot][static_cast<int>(f)]; }
  double at(int slot, BufferFeature f) const { return buffers[slot][static_cast<int>(f)]; }
  /// Slot of the buffer named `name`, or -1.
  int Slot(const std::string& name) const;
};

/// Length of one store block: scalar, then cache levels, then buffer slots.
inline constexpr int kStoreBlockLength =
    kNumStoreFeatures + kMaxCacheLevels * kNumCacheFeatures + kMaxBufferSlots * kNumBufferFeatures;

/// Length of the kernel vector: kernel features; the "all" block (scalar and cache features
/// aggregated over every store, KILN_AGG_SUM or execution-weighted KILN_AGG_MEAN; no buffer
/// slots, whose identity differs between stores); then kTopStores store blocks, the stores
/// with the most FLOPs first (ties: program order), zero blocks when the kernel has fewer.
inline constexpr int kFeatureLength = kNumKernelFeatures + kNumStoreFeatures +
                                      kMaxCacheLevels * kNumCacheFeatures +
                                      kTopStores * kStoreBlockLength;

/// Features of every Store in `func` (scheduled or not), in program order. Errors:
/// kInvalidArgument when `context` is malformed (non-positive sizes, more than
/// kMaxCacheLevels levels, decreasing cache sizes).
absl::StatusOr<std::vector<StoreFeatures>> ExtractStoreFeatures(const loop::Func& func,
                                                                const FeatureContext& context);

/// The kernel's feature vector, kFeatureLength floats laid out as FeatureNames() names them.
/// Values are raw (no log transform: the cost model's trees are invariant to monotone
/// transforms); integers are exact up to 2^24. Errors as ExtractStoreFeatures.
absl::StatusOr<std::vector<float>> ExtractFeatures(const loop::Func& func,
                                                   const FeatureContext& context);

/// Names of the kernel vector's entries (kFeatureLength), e.g. "kernel.flops",
/// "all.vec_len", "all.cache1.traffic_bytes", "store0.flops", "store0.buf2.stride".
std::vector<std::string> FeatureNames();

/// Names of one store block's entries (kStoreBlockLength), e.g. "flops", "cache2.fit_depth",
/// "buf0.unique_bytes".
std::vector<std::string> StoreFeatureNames();

/// One store block, flattened in StoreFeatureNames() order.
std::vector<double> FlattenStoreFeatures(const StoreFeatures& features);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_FEATURES_H_
