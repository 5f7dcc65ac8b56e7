// gpu_tile (gpu_tile.h) on contractions parsed from loop IR text: the tiled nest computes what
// the untiled one does (the interpreter runs both; thread loops run serially, the loop IR's
// meaning), the result verifies, and nests that are not GEMMs are refused with the reason.
#include "compiler_core/schedule/gpu_tile.h"

#include <string>
#include <vector>

#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

loop::Func Parse(const std::string& text) {
  absl::StatusOr<loop::Func> f = loop::ParseFunc(text);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Runs `f` on deterministic inputs (every param filled, the output too: it holds the init);
// returns the last param.
std::vector<float> Run(const loop::Func& f) {
  std::vector<std::vector<float>> data;
  std::vector<void*> ptrs;
  for (size_t p = 0; p < f.params.size(); ++p) {
    data.emplace_back(static_cast<size_t>(f.params[p]->NumElements()));
    for (size_t e = 0; e < data.back().size(); ++e) {
      data.back()[e] = static_cast<float>(static_cast<int64_t>((e * 7 + p * 13) % 23) - 11) / 8;
    }
  }
  for (auto& d : data) ptrs.push_back(d.data());
  absl::Status s = loop::InterpretFunc(f, ptrs);
  EXPECT_TRUE(s.ok()) << s;
  return data.back();
}

void ExpectTiledMatches(const std::string& text, const std::string& steps, double tol = 1e-4) {
  loop::Func f = Parse(text);
  absl::StatusOr<Schedule> schedule = ParseSchedule(steps);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(schedule->ToString(), steps);
  loop::Func tiled = f;
  absl::Status applied = ApplySchedule(*schedule, tiled);
  ASSERT_TRUE(applied.ok()) << applied;
  absl::Status verified = loop::VerifyFunc(tiled);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << loop::PrintFunc(tiled);
  std::vector<float> want = Run(f), got = Run(tiled);
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < want.size(); ++e) {
    EXPECT_NEAR(got[e], want[e], tol + 1e-5 * std::abs(want[e])) << "element " << e;
  }
}

void ExpectGemm(const std::string& text, const std::string& nest, GemmShape want) {
  absl::StatusOr<GemmShape> got = AnalyzeContraction(Parse(text), nest);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::vector<int64_t>({got->m, got->n, got->k, got->batch}),
            std::vector<int64_t>({want.m, want.n, want.k, want.batch}));
}

TEST(GpuTileTest, RaggedMatMul) {
  const std::string mm =
      "func @mm(%a: f32[37,29], %b: f32[29,45], %c: f32[37,45]) anchor=MatMul {\n"
      "  for i in 0..37 {\n    for j in 0..45 {\n      for k in 0..29 reduce {\n"
      "        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(mm, "gpu_tile(i, 2, 4, 8)");
  ExpectTiledMatches(mm, "gpu_tile(i, 1, 1, 32)");
  loop::Func f = Parse(mm);
  ASSERT_TRUE(GpuTileContraction(f, "i", 2, 4, 8).ok());
  const std::string printed = loop::PrintFunc(f);
  EXPECT_THAT(printed, HasSubstr("  blockIdx.y for c.bm in 0..2 {\n"
                                 "    blockIdx.x for c.bn in 0..1 {\n"
                                 "      alloc shared %c_xs: f32[8,33] {\n"
                                 "        alloc shared %c_ys: f32[8,65] {\n"
                                 "          alloc %c_acc: f32[16,16,2,4] {\n"));
  EXPECT_THAT(printed, HasSubstr("for c.ko in 0..4 reduce {"));
  ExpectGemm(mm, "i", {37, 45, 29, 1});
}

TEST(GpuTileTest, BatchedMatMulUsesTheGridZ) {
  const std::string bmm =
      "func @bmm(%a: f32[3,20,17], %b: f32[3,17,33], %c: f32[3,20,33]) anchor=MatMul {\n"
      "  for b0 in 0..3 {\n    for i in 0..20 {\n      for j in 0..33 {\n"
      "        for k in 0..17 reduce {\n"
      "          %c[b0, i, j] = (%c[b0, i, j] + (%a[b0, i, k] * %b[b0, k, j]))\n"
      "        }\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(bmm, "gpu_tile(b0, 2, 2, 16)");
  ExpectGemm(bmm, "b0", {20, 33, 17, 3});
  loop::Func f = Parse(bmm);
  ASSERT_TRUE(GpuTileContraction(f, "b0", 2, 2, 16).ok());
  EXPECT_THAT(loop::PrintFunc(f), HasSubstr("blockIdx.z for c.b in 0..3 {"));
}

TEST(GpuTileTest, StridedConvAsImplicitGemm) {
  // out[n, oc, oh, ow] += pad[n, ic, 2 oh + kh, 2 ow + kw] * w[oc, ic, kh, kw].
  const std::string conv =
      "func @conv(%pad: f32[2,3,13,13], %w: f32[5,3,3,3], %out: f32[2,5,6,6]) anchor=Conv {\n"
      "  for n in 0..2 {\n    for oc in 0..5 {\n      for oh in 0..6 {\n        for ow in 0..6 {\n"
      "          for ic in 0..3 reduce {\n            for kh in 0..3 reduce {\n"
      "              for kw in 0..3 reduce {\n"
      "                %out[n, oc, oh, ow] = (%out[n, oc, oh, ow] + (%pad[n, ic, ((oh * 2) + kh), "
      "((ow * 2) + kw)] * %w[oc, ic, kh, kw]))\n"
      "              }\n            }\n          }\n        }\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(conv, "gpu_tile(n, 2, 1, 8)");
  // M: n, oh, ow (read by the first operand only); N: oc; K: ic, kh, kw.
  ExpectGemm(conv, "n", {72, 5, 27, 1});
}

// Tensor-core tiles (gpu_tile_mma): each lane's mma accumulates its fragment of a 16 x 8 tile
// (loop::MmaAsLoops, what the interpreter runs), so the tiled nest computes the GEMM; f16 and
// bf16 round the inputs (tolerance 2e-2 on sums of 29 products of values up to 1.4).
TEST(GpuTileTest, TensorCoreTilesMatchTheUntiledNest) {
  const std::string mm =
      "func @mm(%a: f32[70,29], %b: f32[29,45], %c: f32[70,45]) anchor=MatMul {\n"
      "  for i in 0..70 {\n    for j in 0..45 {\n      for k in 0..29 reduce {\n"
      "        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(mm, "gpu_tile_mma(i, tf32)");
  ExpectTiledMatches(mm, "gpu_tile_mma(i, fp16)", 2e-2);
  ExpectTiledMatches(mm, "gpu_tile_mma(i, bf16)", 2e-1);
  // Both block tiles, one and two stages.
  ExpectTiledMatches(mm, "gpu_tile_mma(i, tf32, 128, 2)");
  ExpectTiledMatches(mm, "gpu_tile_mma(i, tf32, 64, 1)");
  ExpectTiledMatches(mm, "gpu_tile_mma(i, fp16, 128, 1)", 2e-2);
  loop::Func f = Parse(mm);
  ASSERT_TRUE(GpuTileMma(f, "i", loop::MmaShape::kM16N8K8Tf32).ok());
  const std::string printed = loop::PrintFunc(f);
  // A[70, 29] is read along K, so its tile is [stage, m, k] (K padded by 4 floats); B along N.
  // K = 29 is not a multiple of 4: async copies of one element.
  EXPECT_THAT(printed, HasSubstr("alloc shared %c_xs: f32[2,64,36] {"));
  EXPECT_THAT(printed, HasSubstr("alloc shared %c_ys: f32[2,32,72] {"));
  EXPECT_THAT(printed,
              HasSubstr("async_copy x1 %c_xs[0, (((c.xl4 * 128) + c.t3) // 32), "
                        "(((c.xl4 * 128) + c.t3) % 32)] = %a[((c.bm * 64) + "
                        "(((c.xl4 * 128) + c.t3) // 32)), (((c.xl4 * 128) + c.t3) % 32)]"));
  EXPECT_THAT(printed, HasSubstr("async_wait 1"));
  EXPECT_THAT(printed, HasSubstr("mma.m16n8k8.tf32 %c_acc[c.t8, c.i2, c.j2, 0] += "
                                 "(%c_xs[(c.ko % 2), ((((c.t8 // 32) // 2) * 32) + (c.i2 * 16)), "
                                 "(c.ks * 8)] * %c_ys[(c.ko % 2), (c.ks * 8), ((((c.t8 // 32) % 2) "
                                 "* 32) + (c.j2 * 8))]) lane (c.t8 % 32) layout(mk, kn)"));
  // The printed mma and async copies parse back to the same func.
  absl::StatusOr<loop::Func> reparsed = loop::ParseFunc(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(loop::PrintFunc(*reparsed), printed);
  EXPECT_FALSE(ParseSchedule("gpu_tile_mma(i, fp64)").ok() &&
               ApplySchedule(*ParseSchedule("gpu_tile_mma(i, fp64)"), f).ok());
  f = Parse(mm);
  EXPECT_EQ(GpuTileMma(f, "i", loop::MmaShape::kM16N8K8Tf32, 96, 2).message(),
            "gpu_tile_mma's block tile is 64 or 128");
  EXPECT_EQ(GpuTileMma(f, "i", loop::MmaShape::kM16N8K8Tf32, 64, 3).message(),
            "gpu_tile_mma's stages are 1 or 2");
  EXPECT_FALSE(ParseSchedule("gpu_tile_mma(i, tf32, 64)").ok());
}

// Contiguous, aligned operands are copied 16 bytes at a time; a B given as [N, K] (a Linear
// layer's weight) is staged [n, k] (layout nk). Edges (M = 70, N = 44) are zero-filled.
TEST(GpuTileTest, TensorCoreTilesCopyAlignedRunsAsynchronously) {
  const std::string mm =
      "func @mm(%a: f32[70,32], %b: f32[44,32], %c: f32[70,44]) anchor=MatMul {\n"
      "  for i in 0..70 {\n    for j in 0..44 {\n      for k in 0..32 reduce {\n"
      "        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[j, k]))\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(mm, "gpu_tile_mma(i, tf32, 64, 2)");
  ExpectTiledMatches(mm, "gpu_tile_mma(i, tf32, 128, 2)");
  loop::Func f = Parse(mm);
  ASSERT_TRUE(GpuTileMma(f, "i", loop::MmaShape::kM16N8K8Tf32, 64, 2).ok());
  const std::string printed = loop::PrintFunc(f);
  EXPECT_THAT(printed, HasSubstr("alloc shared %c_ys: f32[2,64,36] {"));
  EXPECT_THAT(printed, HasSubstr("async_copy x4 %c_xs[0, (((c.xl4 * 128) + c.t3) // 8), "
                                 "((((c.xl4 * 128) + c.t3) % 8) * 4)]"));
  EXPECT_THAT(printed, HasSubstr("async_copy x4 %c_ys["));
  EXPECT_THAT(printed, HasSubstr("layout(mk, nk)"));
  // K = 32: x4 fits; with a K of 30 runs of 4 would straddle rows, runs of 2 (8 bytes) do not.
  const std::string odd =
      "func @mm(%a: f32[70,30], %b: f32[44,30], %c: f32[70,44]) anchor=MatMul {\n"
      "  for i in 0..70 {\n    for j in 0..44 {\n      for k in 0..30 reduce {\n"
      "        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[j, k]))\n      }\n    }\n  }\n}\n";
  ExpectTiledMatches(odd, "gpu_tile_mma(i, tf32, 64, 2)");
  f = Parse(odd);
  ASSERT_TRUE(GpuTileMma(f, "i", loop::MmaShape::kM16N8K8Tf32, 64, 2).ok());
  EXPECT_THAT(loop::PrintFunc(f), HasSubstr("async_copy x2 %c_ys["));
  EXPECT_THAT(loop::PrintFunc(f), Not(HasSubstr("async_copy x4")));
}

// An f16 GEMM (f16 tiles, so cp.async moves 8 halves at a time) against the untiled nest: the
// tiles accumulate in f32 and round once, the untiled nest rounds every partial sum to f16,
// hence the tolerance (3e-2 on sums of 48 products of values up to 1.4).
TEST(GpuTileTest, HalfPrecisionTilesMatchTheUntiledNest) {
  const std::string mm =
      "func @mm(%a: f16[40,48], %b: f16[48,72], %c: f16[40,72]) anchor=MatMul {\n"
      "  for i in 0..40 {\n    for j in 0..72 {\n      for k in 0..48 reduce {\n"
      "        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))\n      }\n    }\n  }\n}\n";
  auto run = [](const loop::Func& f) {
    std::vector<std::vector<uint16_t>> data;
    std::vector<void*> ptrs;
    for (size_t p = 0; p < f.params.size(); ++p) {
      data.emplace_back(static_cast<size_t>(f.params[p]->NumElements()));
      for (size_t e = 0; e < data.back().size(); ++e) {
        data.back()[e] =
            FloatToHalf(static_cast<float>(static_cast<int64_t>((e * 7 + p * 13) % 23) - 11) / 8);
      }
    }
    for (auto& d : data) ptrs.push_back(d.data());
    absl::Status s = loop::InterpretFunc(f, ptrs);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<float> out;
    for (uint16_t h : data.back()) out.push_back(HalfToFloat(h));
    return out;
  };
  loop::Func f = Parse(mm);
  for (int64_t stages : {1, 2}) {
    loop::Func tiled = f;
    ASSERT_TRUE(GpuTileMma(tiled, "i", loop::MmaShape::kM16N8K16F16, 64, stages).ok());
    absl::Status verified = loop::VerifyFunc(tiled);
    ASSERT_TRUE(verified.ok()) << verified;
    const std::string printed = loop::PrintFunc(tiled);
    EXPECT_EQ(printed.find("async_copy x8 %c_xs[") != std::string::npos, stages == 2);
    EXPECT_EQ(printed.find("async_copy x8 %c_ys[") != std::string::npos, stages == 2);
    std::vector<float> want = run(f), got = run(tiled);
    ASSERT_EQ(got.size(), want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_NEAR(got[e], want[e], 3e-2 + 1e-2 * std::abs(want[e])) << "element " << e;
    }
  }
}

// A bf16 MatMul as lowered (f32 sums of widened bf16 loads into an f32 workspace): its tiles
// hold the bf16 values as stored, copied 8 at a time (the widening is exact).
TEST(GpuTileTest, WidenedBf16OperandsAreStagedAsStored) {
  const std::string mm =
      "func @mm(%a: bf16[64,32], %b: bf16[32,64], %acc: f32[64,64]) anchor=MatMul {\n"
      "  for i in 0..64 {\n    for j in 0..64 {\n      for k in 0..32 reduce {\n"
      "        %acc[i, j] = (%acc[i, j] + (cast<f32>(%a[i, k]) * cast<f32>(%b[k, j])))\n"
      "      }\n    }\n  }\n}\n";
  loop::Func f = Parse(mm);
  ASSERT_TRUE(GpuTileMma(f, "i", loop::MmaShape::kM16N8K16Bf16, 64, 2).ok());
  ASSERT_TRUE(loop::VerifyFunc(f).ok());
  const std::string printed = loop::PrintFunc(f);
  EXPECT_THAT(printed, HasSubstr("alloc shared %acc_xs: bf16[2,64,40] {"));
  EXPECT_THAT(printed, HasSubstr("async_copy x8 %acc_xs["));
  EXPECT_THAT(printed, HasSubstr("async_copy x8 %acc_ys["));
  EXPECT_THAT(printed, Not(HasSubstr("cast<")));
}

TEST(GpuTileTest, RefusesWhatIsNotAGemm) {
  const std::string depthwise =
      "func @dw(%pad: f32[1,4,10,10], %w: f32[4,1,3,3], %out: f32[1,4,8,8]) anchor=Conv {\n"
      "  for n in 0..1 {\n    for c in 0..4 {\n      for oh in 0..8 {\n        for ow in 0..8 {\n"
      "          for kh in 0..3 reduce {\n            for kw in 0..3 reduce {\n"
      "              %out[n, c, oh, ow] = (%out[n, c, oh, ow] + (%pad[n, c, (oh + kh), (ow + kw)] "
      "* %w[c, 0, kh, kw]))\n"
      "            }\n          }\n        }\n      }\n    }\n  }\n}\n";
  loop::Func f = Parse(depthwise);
  absl::Status s = GpuTileContraction(f, "n", 4, 4, 16);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "not a GEMM: no spatial loop read by only one operand, or no reduction");
  const std::string relu =
      "func @r(%x: f32[8], %y: f32[8]) anchor=Relu {\n  for i in 0..8 {\n"
      "    %y[i] = max(%x[i], 0.0)\n  }\n}\n";
  f = Parse(relu);
  s = GpuTileContraction(f, "i", 4, 4, 16);
  EXPECT_EQ(s.message(), "the store is not an accumulation C = C + X * Y");
  EXPECT_EQ(GpuTileContraction(f, "nope", 4, 4, 16).message(), "no top-level nest 'nope'");
  EXPECT_EQ(GpuTileContraction(f, "i", 0, 4, 16).message(), "gpu_tile factors must be positive");
  EXPECT_FALSE(ParseSchedule("gpu_tile(i, 4, 4)").ok());
}

}  // namespace
}  // namespace kiln::schedule
