// Tests of the feature extractor: exact op, loop, buffer and cache values on a hand-built
// matmul, the annotation features after vectorize / parallel / unroll, FLOPs of a lowered and
// default-scheduled MatMul, local allocations, names and context validation.
#include "compiler_core/tuning/features.h"

#include <set>

#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/tuning/tuning_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using loop::BufferRef;
using loop::Expr;
using loop::Func;
using loop::VarRef;
using schedule::Primitive;
using Kind = Primitive::Kind;
using SF = StoreFeature;
using BF = BufferFeature;
using CF = CacheFeature;

constexpr int64_t kM = 8, kN = 16, kK = 32;

Func MatMulFunc() { return testing::MatMulFunc(kM, kN, kK); }

FeatureContext SmallCaches(int threads = 1) {
  FeatureContext c;
  c.cache_line_bytes = 64;
  c.cache_bytes = {1024, 1 << 20};
  c.vector_lanes_f32 = 8;
  c.num_threads = threads;
  return c;
}

StoreFeatures OnlyStore(const Func& f, const FeatureContext& c) {
  absl::StatusOr<std::vector<StoreFeatures>> s = ExtractStoreFeatures(f, c);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok() || s->size() != 1) {
    ADD_FAILURE() << "expected one store";
    return {};
  }
  return (*s)[0];
}

Func Scheduled(std::vector<Primitive> steps) {
  Func f = MatMulFunc();
  absl::Status s = schedule::ApplySchedule(schedule::Schedule{std::move(steps)}, f);
  EXPECT_TRUE(s.ok()) << s;
  return f;
}

float Named(const std::vector<float>& v, const std::string& name) {
  const std::vector<std::string> names = FeatureNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return v[i];
  }
  ADD_FAILURE() << "no feature " << name;
  return -1;
}

TEST(FeatureTest, MatMulOpsAndLoops) {
  const StoreFeatures f = OnlyStore(MatMulFunc(), SmallCaches());
  EXPECT_EQ(f.buffer, "out");
  EXPECT_EQ(f[SF::kFlops], 2.0 * kM * kN * kK);
  EXPECT_EQ(f[SF::kFloatMad], 1.0 * kM * kN * kK);
  EXPECT_EQ(f[SF::kFloatMul], 1.0 * kM * kN * kK);
  EXPECT_EQ(f[SF::kFloatAddSub], 0);
  EXPECT_EQ(f[SF::kIntAddSub], 0);
  EXPECT_EQ(f[SF::kExecutions], 1.0 * kM * kN * kK);
  EXPECT_EQ(f[SF::kLoopDepth], 3);
  EXPECT_EQ(f[SF::kReductionDepth], 1);
  EXPECT_EQ(f[SF::kReductionProd], kK);
  EXPECT_EQ(f[SF::kInnermostExtent], kK);
  EXPECT_EQ(f[SF::kVecNum], 0);
  EXPECT_EQ(f[SF::kVecLen], 0);
  EXPECT_EQ(f[SF::kParallelNum], 0);
  EXPECT_EQ(f[SF::kParallelProd], 0);
  EXPECT_EQ(f[SF::kWorkPerChunk], 1.0 * kM * kN * kK);
  EXPECT_EQ(f[SF::kNumBuffers], 3);
  EXPECT_EQ(f[SF::kStoreIsLocal], 0);
}

TEST(FeatureTest, MatMulBuffers) {
  const StoreFeatures f = OnlyStore(MatMulFunc(), SmallCaches());
  const double runs = kM * kN * kK;
  // Slots by bytes accessed: out (read and written) first, then a and b (a tie, by name).
  ASSERT_EQ(f.buffer_names[0], "out");
  ASSERT_EQ(f.buffer_names[1], "a");
  ASSERT_EQ(f.buffer_names[2], "b");
  EXPECT_EQ(f.buffer_names[3], "");
  const int out = 0, a = 1, b = 2;
  EXPECT_EQ(f.at(out, BF::kIsRead), 1);
  EXPECT_EQ(f.at(out, BF::kIsWrite), 1);
  EXPECT_EQ(f.at(a, BF::kIsWrite), 0);
  EXPECT_EQ(f.at(out, BF::kAccesses), 2);
  EXPECT_EQ(f.at(out, BF::kBytes), runs * 2 * 4);
  EXPECT_EQ(f.at(a, BF::kBytes), runs * 4);
  EXPECT_EQ(f[SF::kBytes], runs * 4 * 4);
  EXPECT_EQ(f.at(out, BF::kUniqueBytes), kM * kN * 4);
  EXPECT_EQ(f.at(a, BF::kUniqueBytes), kM * kK * 4);
  EXPECT_EQ(f.at(b, BF::kUniqueBytes), kK * kN * 4);
  EXPECT_EQ(f.at(b, BF::kUniqueLines), kK * kN * 4 / 64);
  EXPECT_EQ(f[SF::kUniqueBytes], (kM * kN + kM * kK + kK * kN) * 4);
  EXPECT_EQ(f[SF::kIntensity], 2.0 * runs / (runs * 16));
  // Along k (innermost): out is a broadcast, a contiguous, b strided by a row.
  EXPECT_EQ(f.at(out, BF::kInnermostStride), 0);
  EXPECT_EQ(f.at(a, BF::kInnermostStride), 1);
  EXPECT_EQ(f.at(b, BF::kInnermostStride), kN);
  EXPECT_EQ(f.at(out, BF::kStride), 1);  // along j
  // Lines: a advances 4 of 64 bytes per k step; b a whole line; out a line every 16 j steps.
  EXPECT_EQ(f.at(a, BF::kLines), runs / 16);
  EXPECT_EQ(f.at(b, BF::kLines), runs);
  EXPECT_EQ(f.at(out, BF::kLines), runs * 2 / kK / 16);
  // Reuse: out across k, a across j (k iterations apart), b across i (j × k apart).
  EXPECT_EQ(f.at(out, BF::kReuseType), 1);
  EXPECT_EQ(f.at(out, BF::kReuseCount), kK);
  EXPECT_EQ(f.at(out, BF::kReuseDistIter), 1);
  EXPECT_EQ(f.at(a, BF::kReuseCount), kN);
  EXPECT_EQ(f.at(a, BF::kReuseDistIter), kK);
  EXPECT_EQ(f.at(b, BF::kReuseCount), kM);
  EXPECT_EQ(f.at(b, BF::kReuseDistIter), kN * kK);
  // Between two uses of b's line: one row of out (1 line), of a (2 lines), all of b (32).
  EXPECT_EQ(f.at(b, BF::kReuseDistBytes), (1 + 2 + 32) * 64);
  EXPECT_EQ(f.at(b, BF::kBytesPerReuse), runs * 4 / kM);
}

TEST(FeatureTest, MatMulCacheLevels) {
  const StoreFeatures f = OnlyStore(MatMulFunc(), SmallCaches());
  // The k loop touches 1 + 2 + 32 lines (2240 bytes): more than the 1 KiB level 1, so nothing
  // but one iteration fits, and the k loop's lines come in again for every (i, j).
  EXPECT_EQ(f.at(0, CF::kPresent), 1);
  EXPECT_EQ(f.at(0, CF::kFitDepth), 0);
  EXPECT_EQ(f.at(0, CF::kFitBytes), 3 * 64);
  EXPECT_EQ(f.at(0, CF::kTrafficBytes), 35.0 * 64 * kM * kN);
  EXPECT_EQ(f.at(0, CF::kIntensity), 2.0 * kM * kN * kK / (35.0 * 64 * kM * kN));
  // Everything (8 + 16 + 32 lines) fits in level 2: only compulsory traffic.
  EXPECT_EQ(f.at(1, CF::kFitDepth), 3);
  EXPECT_EQ(f.at(1, CF::kFitBytes), 56 * 64);
  EXPECT_EQ(f.at(1, CF::kTrafficBytes), 56 * 64);
  // The context has two levels: the third is absent.
  EXPECT_EQ(f.at(2, CF::kPresent), 0);
  EXPECT_EQ(f.at(2, CF::kTrafficBytes), 0);
}

TEST(FeatureTest, VectorizeAndParallel) {
  const Func f = Scheduled({{Kind::kSplit, {"j"}, 8},
                            {Kind::kReorder, {"k", "j.i"}},
                            {Kind::kVectorize, {"j.i"}},
                            {Kind::kParallel, {"i"}}});
  const StoreFeatures s = OnlyStore(f, SmallCaches(/*threads=*/3));
  EXPECT_EQ(s[SF::kFlops], 2.0 * kM * kN * kK);  // scheduling keeps the work
  EXPECT_EQ(s[SF::kLoopDepth], 4);
  EXPECT_EQ(s[SF::kVecNum], 1);
  EXPECT_EQ(s[SF::kVecLen], 8);
  EXPECT_EQ(s[SF::kVecProd], 8);
  EXPECT_EQ(s[SF::kVecPos], 1);
  EXPECT_EQ(s[SF::kVecLaneRatio], 1);  // 8 lanes of f32 on an 8-lane target
  EXPECT_EQ(s[SF::kParallelNum], 1);
  EXPECT_EQ(s[SF::kParallelProd], kM);
  EXPECT_EQ(s[SF::kParallelLen], kM);
  EXPECT_EQ(s[SF::kParallelPos], 1);
  EXPECT_DOUBLE_EQ(s[SF::kChunksPerThread], 8.0 / 3);
  EXPECT_DOUBLE_EQ(s[SF::kParallelBalance], 8.0 / 9);  // 3 rounds of 3 threads for 8 chunks
  EXPECT_EQ(s[SF::kWorkPerChunk], 1.0 * kN * kK);
  // j.i is innermost now: b and out are contiguous along it, a is a broadcast.
  const int b = s.Slot("b"), a = s.Slot("a"), out = s.Slot("out");
  ASSERT_GE(b, 0);
  EXPECT_EQ(s.at(b, BF::kInnermostStride), 1);
  EXPECT_EQ(s.at(out, BF::kInnermostStride), 1);
  EXPECT_EQ(s.at(a, BF::kInnermostStride), 0);
  EXPECT_EQ(s.at(a, BF::kReuseCount), 8);  // reused across the 8 lanes
}

TEST(FeatureTest, Unroll) {
  const Func f = Scheduled(
      {{Kind::kSplit, {"i"}, 4}, {Kind::kReorder, {"j", "k", "i.i"}}, {Kind::kUnroll, {"i.i"}}});
  const StoreFeatures s = OnlyStore(f, SmallCaches());
  EXPECT_EQ(s[SF::kUnrollNum], 1);
  EXPECT_EQ(s[SF::kUnrollLen], 4);
  EXPECT_EQ(s[SF::kUnrollProd], 4);
  EXPECT_EQ(s[SF::kUnrollPos], 1);
  EXPECT_EQ(s[SF::kVecNum], 0);
}

TEST(FeatureTest, TwoSchedulesDifferInTheAnnotatedFields) {
  const std::vector<std::string> names = FeatureNames();
  auto plain = ExtractFeatures(MatMulFunc(), SmallCaches(4));
  auto tuned = ExtractFeatures(Scheduled({{Kind::kSplit, {"j"}, 8},
                                          {Kind::kReorder, {"k", "j.i"}},
                                          {Kind::kVectorize, {"j.i"}},
                                          {Kind::kParallel, {"i"}}}),
                               SmallCaches(4));
  ASSERT_TRUE(plain.ok() && tuned.ok());
  ASSERT_EQ(plain->size(), static_cast<size_t>(kFeatureLength));
  ASSERT_EQ(tuned->size(), static_cast<size_t>(kFeatureLength));
  EXPECT_EQ(Named(*plain, "kernel.flops"), Named(*tuned, "kernel.flops"));
  EXPECT_EQ(Named(*plain, "store0.flops"), 2.0f * kM * kN * kK);
  EXPECT_EQ(Named(*plain, "store0.vec_len"), 0);
  EXPECT_EQ(Named(*tuned, "store0.vec_len"), 8);
  EXPECT_EQ(Named(*tuned, "all.vec_len"), 8);
  EXPECT_EQ(Named(*plain, "store0.parallel_prod"), 0);
  EXPECT_EQ(Named(*tuned, "store0.parallel_prod"), kM);
  EXPECT_EQ(Named(*tuned, "kernel.num_vectorized_loops"), 1);
  EXPECT_EQ(Named(*tuned, "kernel.num_parallel_loops"), 1);
  EXPECT_EQ(Named(*tuned, "kernel.num_loops"), 4);
  EXPECT_EQ(Named(*tuned, "store1.flops"), 0);  // one store: the other blocks are padding
  std::vector<std::string> differ;
  for (size_t i = 0; i < names.size(); ++i) {
    if ((*plain)[i] != (*tuned)[i]) differ.push_back(names[i]);
  }
  EXPECT_THAT(differ,
              ::testing::IsSupersetOf({"store0.vec_len", "store0.parallel_prod",
                                       "store0.loop_depth", "store0.buf2.innermost_stride"}));
  EXPECT_THAT(differ, ::testing::Not(::testing::Contains("store0.flops")));
}

TEST(FeatureTest, LoweredMatMulFlops) {
  // M = 13, N = 37, K = 64: the default AVX2 schedule has row and column tails, which must
  // together still do exactly 2·M·N·K FLOPs.
  graph::Graph g;
  graph::Value* a = g.AddInput("a", {DType::kFloat32, {13, 64}});
  graph::Value* b = g.AddInput("b", {DType::kFloat32, {64, 37}});
  graph::Node* mm = g.AddNode(graph::OpKind::kMatMul, "mm", {a, b}, {{DType::kFloat32, {13, 37}}});
  auto kernel = lowering::LowerGroup({mm}, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  FeatureContext ctx;  // the defaults: 64-byte lines, 32 KiB / 1 MiB / 32 MiB, 8 lanes
  auto lowered = ExtractFeatures(kernel->func, ctx);
  ASSERT_TRUE(lowered.ok());
  EXPECT_EQ(Named(*lowered, "kernel.flops"), 2.0f * 13 * 37 * 64);
  EXPECT_EQ(Named(*lowered, "store0.flops"), 2.0f * 13 * 37 * 64);
  EXPECT_EQ(Named(*lowered, "kernel.num_stores"), 2);  // init and update
  Target avx2;
  avx2.vector_bits = 256;
  loop::Func scheduled = kernel->func;
  ASSERT_TRUE(schedule::ApplySchedule(schedule::DefaultSchedule(scheduled, avx2), scheduled).ok());
  auto tuned = ExtractFeatures(scheduled, ctx);
  ASSERT_TRUE(tuned.ok());
  EXPECT_EQ(Named(*tuned, "kernel.flops"), 2.0f * 13 * 37 * 64);
  EXPECT_EQ(Named(*tuned, "all.flops"), 2.0f * 13 * 37 * 64);
  EXPECT_GT(Named(*tuned, "kernel.num_stores"), 2);  // tails duplicate the update store
  // The micro-kernel's 16 output columns: one vectorized loop of two 8-lane registers.
  EXPECT_EQ(Named(*tuned, "store0.vec_len"), 16);
  EXPECT_EQ(Named(*tuned, "store0.vec_lane_ratio"), 2);
  EXPECT_GE(Named(*tuned, "kernel.num_unrolled_loops"), 1);
}

TEST(FeatureTest, OpClassesAndLocalBuffers) {
  // tile[i] = exp(x[i]) + 1 (a local 16-float tile); y[i] = tile[i] / 2 - (i > 3 ? 1 : 0).
  BufferRef x = loop::MakeBuffer("x", DType::kFloat32, {16});
  BufferRef y = loop::MakeBuffer("y", DType::kFloat32, {16});
  BufferRef tile = loop::MakeBuffer("tile", DType::kFloat32, {16}, loop::Buffer::Scope::kLocal);
  loop::Var i = loop::MakeVar("i"), i2 = loop::MakeVar("i2");
  Func f;
  f.name = "ew";
  f.params = {x, y};
  Expr cond = loop::Binary(loop::BinaryOp::kGt, VarRef(i2), loop::IntImm(3));
  f.body = loop::Allocate(
      tile,
      loop::Block(
          {loop::For(i, 16,
                     loop::Store(tile, {VarRef(i)},
                                 loop::Unary(loop::UnaryOp::kExp, loop::Load(x, {VarRef(i)})) +
                                     loop::FloatImm(1))),
           loop::For(i2, 16,
                     loop::Store(y, {VarRef(i2)},
                                 loop::Binary(loop::BinaryOp::kDiv, loop::Load(tile, {VarRef(i2)}),
                                              loop::FloatImm(2)) -
                                     loop::Select(cond, loop::FloatImm(1), loop::FloatImm(0))))}));
  auto stores = ExtractStoreFeatures(f, SmallCaches());
  ASSERT_TRUE(stores.ok());
  ASSERT_EQ(stores->size(), 2u);
  const StoreFeatures& s0 = (*stores)[0];
  const StoreFeatures& s1 = (*stores)[1];
  EXPECT_EQ(s0[SF::kFloatMathFunc], 16);
  EXPECT_EQ(s0[SF::kFloatAddSub], 16);
  EXPECT_EQ(s0[SF::kFlops], 32);
  EXPECT_EQ(s0[SF::kStoreIsLocal], 1);
  EXPECT_EQ(s0[SF::kLocalAllocBytes], 64);
  EXPECT_EQ(s0.at(s0.Slot("tile"), BF::kIsLocal), 1);
  EXPECT_EQ(s1[SF::kFloatDivMod], 16);
  EXPECT_EQ(s1[SF::kFloatAddSub], 16);
  EXPECT_EQ(s1[SF::kIntCmp], 16);
  EXPECT_EQ(s1[SF::kSelectOp], 16);
  EXPECT_EQ(s1[SF::kFlops], 32);
  EXPECT_EQ(s1[SF::kStoreIsLocal], 0);
  auto v = ExtractFeatures(f, SmallCaches());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Named(*v, "kernel.num_local_allocs"), 1);
  EXPECT_EQ(Named(*v, "kernel.local_alloc_bytes"), 64);
  EXPECT_EQ(Named(*v, "kernel.num_top_nests"), 1);
  EXPECT_EQ(Named(*v, "kernel.param_bytes"), 128);
  EXPECT_EQ(Named(*v, "all.flops"), 64);
  EXPECT_EQ(Named(*v, "all.store_is_local"), 0.5);  // mean over equal executions
}

TEST(FeatureTest, NamesAreUniqueAndMatchTheLength) {
  const std::vector<std::string> names = FeatureNames();
  EXPECT_EQ(names.size(), static_cast<size_t>(kFeatureLength));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(StoreFeatureNames().size(), static_cast<size_t>(kStoreBlockLength));
  EXPECT_EQ(FlattenStoreFeatures(StoreFeatures{}).size(), static_cast<size_t>(kStoreBlockLength));
  EXPECT_EQ(names.front(), "kernel.num_stores");
  EXPECT_THAT(names, ::testing::Contains("store3.buf4.lines_per_reuse"));
  EXPECT_THAT(names, ::testing::Contains("all.cache3.traffic_bytes"));
}

TEST(FeatureTest, EmptyFuncIsAllZero) {
  Func f;
  f.name = "empty";
  auto v = ExtractFeatures(f, FeatureContext{});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), static_cast<size_t>(kFeatureLength));
  for (float x : *v) EXPECT_EQ(x, 0);
}

TEST(FeatureTest, EmptyTensorsCoverNothing) {
  // y[i, j] = x[i, j] over an empty [0, 4] tensor: no executions, no bytes, no lines.
  BufferRef x = loop::MakeBuffer("x", DType::kFloat32, {0, 4});
  BufferRef y = loop::MakeBuffer("y", DType::kFloat32, {0, 4});
  loop::Var i = loop::MakeVar("i"), j = loop::MakeVar("j");
  Func f;
  f.name = "copy";
  f.params = {x, y};
  f.body = loop::For(
      i, 0,
      loop::For(j, 4,
                loop::Store(y, {VarRef(i), VarRef(j)}, loop::Load(x, {VarRef(i), VarRef(j)}))));
  const StoreFeatures s = OnlyStore(f, SmallCaches());
  EXPECT_EQ(s[SF::kExecutions], 0);
  EXPECT_EQ(s[SF::kBytes], 0);
  EXPECT_EQ(s[SF::kUniqueBytes], 0);
  EXPECT_EQ(s[SF::kUniqueLines], 0);
  EXPECT_EQ(s[SF::kLines], 0);
  EXPECT_EQ(s.at(0, CF::kTrafficBytes), 0);
  EXPECT_TRUE(ExtractFeatures(f, SmallCaches()).ok());
}

TEST(FeatureTest, MalformedContextIsInvalidArgument) {
  FeatureContext c;
  c.cache_line_bytes = 0;
  EXPECT_EQ(ExtractFeatures(MatMulFunc(), c).status().code(), absl::StatusCode::kInvalidArgument);
  c = FeatureContext{};
  c.cache_bytes = {1, 2, 3, 4};
  EXPECT_EQ(ExtractFeatures(MatMulFunc(), c).status().code(), absl::StatusCode::kInvalidArgument);
  c = FeatureContext{};
  c.cache_bytes = {1 << 20, 1024};
  EXPECT_EQ(ExtractStoreFeatures(MatMulFunc(), c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = FeatureContext{};
  c.num_threads = 0;
  EXPECT_EQ(ExtractFeatures(MatMulFunc(), c).status().code(), absl::StatusCode::kInvalidArgument);
  c = FeatureContext{};
  c.cache_bytes = {};  // no cache levels is fine (e.g. a target that models none)
  EXPECT_TRUE(ExtractFeatures(MatMulFunc(), c).ok());
}

}  // namespace
}  // namespace kiln::tuning
