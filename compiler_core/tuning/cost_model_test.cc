// Tests of the XGBoost cost model on real schedule variants of three matmul workloads whose
// throughput on a synthetic target is a known function of their features: held-out ranking
// quality (Spearman), determinism, serialization round trips and error codes.
#include "compiler_core/tuning/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/tuning/tuning_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using loop::Func;
using schedule::Primitive;
using Kind = Primitive::Kind;
using SF = StoreFeature;
using CF = CacheFeature;

FeatureContext Context() {
  FeatureContext c;
  c.cache_bytes = {4 * 1024, 64 * 1024};
  c.vector_lanes_f32 = 8;
  c.num_threads = 4;
  return c;
}

/// Throughput (FLOP per cycle) of the heaviest store on a synthetic machine: 8 f32 lanes,
/// unrolling hides half the loop overhead, 4 cores, 16 bytes/cycle from L2, 4 from memory.
double SyntheticThroughput(const StoreFeatures& s) {
  const double lanes = std::max(1.0, std::min(8.0, s[SF::kVecLen]));
  const double unroll = s[SF::kUnrollNum] > 0 ? 1.5 : 1.0;
  const double cores = std::max(1.0, std::min(4.0, s[SF::kParallelProd]));
  const double compute = s[SF::kFlops] / (lanes * unroll * cores);
  const double memory = s.at(0, CF::kTrafficBytes) / 16 + s.at(1, CF::kTrafficBytes) / 4;
  return s[SF::kFlops] / (compute + memory / cores);
}

/// All legal variants of split(i), split(j), loop order, vectorize, unroll and parallel.
std::vector<Sample> Variants(int64_t m, int64_t n, int64_t k) {
  std::vector<Sample> out;
  const std::string key = absl::StrCat("matmul_", m, "x", n, "x", k);
  for (int64_t tj : {0, 4, 8, 16}) {
    for (int64_t ti : {0, 2, 4}) {
      for (bool k_outside : {false, true}) {
        for (int bits = 0; bits < 8; ++bits) {
          const bool vec = bits & 1, unroll = bits & 2, par = bits & 4;
          std::vector<Primitive> steps;
          if (tj) steps.push_back({Kind::kSplit, {"j"}, tj});
          if (ti) steps.push_back({Kind::kSplit, {"i"}, ti});
          std::vector<std::string> order;
          if (ti)
            order = {"i.o"};
          else
            order = {"i"};
          if (tj) order.push_back("j.o");
          if (k_outside) order.push_back("k");
          if (ti) order.push_back("i.i");
          order.push_back(tj ? "j.i" : "j");
          if (!k_outside) order.push_back("k");
          steps.push_back({Kind::kReorder, order});
          if (vec) steps.push_back({Kind::kVectorize, {order.back()}});
          if (unroll) {
            if (!ti) continue;
            steps.push_back({Kind::kUnroll, {"i.i"}});
          }
          if (par) steps.push_back({Kind::kParallel, {order.front()}});
          Func f = testing::MatMulFunc(m, n, k);
          if (!schedule::ApplySchedule(schedule::Schedule{steps}, f).ok()) continue;
          auto stores = ExtractStoreFeatures(f, Context());
          auto features = ExtractFeatures(f, Context());
          EXPECT_TRUE(stores.ok() && features.ok());
          if (!stores.ok() || !features.ok()) continue;
          out.push_back(Sample{*features, key, SyntheticThroughput((*stores)[0])});
        }
      }
    }
  }
  return out;
}

std::vector<Sample> AllVariants() {
  std::vector<Sample> all;
  for (auto [m, n, k] : {std::tuple{64, 64, 64}, {32, 128, 32}, {128, 32, 16}}) {
    std::vector<Sample> v = Variants(m, n, k);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

std::vector<double> Ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    for (size_t t = i; t <= j; ++t) rank[idx[t]] = (i + j) / 2.0;  // ties share the mean rank
    i = j + 1;
  }
  return rank;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += rx[i] / n, my += ry[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

/// Every fourth sample is held out; the rest train.
void Split(const std::vector<Sample>& all, std::vector<Sample>& train, std::vector<Sample>& test) {
  for (size_t i = 0; i < all.size(); ++i) (i % 4 == 0 ? test : train).push_back(all[i]);
}

std::vector<std::vector<float>> FeaturesOf(const std::vector<Sample>& s) {
  std::vector<std::vector<float>> f;
  for (const Sample& x : s) f.push_back(x.features);
  return f;
}

/// Throughputs normalized by the best of each workload (over train and test alike).
std::vector<double> Normalized(const std::vector<Sample>& all, const std::vector<Sample>& s) {
  std::map<std::string, double> best;
  for (const Sample& x : all) best[x.workload_key] = std::max(best[x.workload_key], x.throughput);
  std::vector<double> y;
  for (const Sample& x : s) y.push_back(x.throughput / best[x.workload_key]);
  return y;
}

CostModel Trained(const std::vector<Sample>& train, CostModelOptions options = {}) {
  auto model = CostModel::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::Status s = model->Train(train);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(*model);
}

TEST(CostModelTest, RanksHeldOutSchedules) {
  const std::vector<Sample> all = AllVariants();
  ASSERT_GT(all.size(), 200u);
  std::vector<Sample> train, test;
  Split(all, train, test);
  CostModel model = Trained(train);
  EXPECT_TRUE(model.trained());
  auto pred = model.Predict(FeaturesOf(test));
  ASSERT_TRUE(pred.ok()) << pred.status();
  // A random ranking has Spearman 0 (standard deviation 1/sqrt(n - 1) ≈ 0.1 here); the model
  // reaches about 0.95 overall and 0.96 within each workload.
  const double rho = Spearman(*pred, Normalized(all, test));
  EXPECT_GT(rho, 0.8) << "held-out samples: " << test.size() << " of " << all.size();
  // Within each workload too, which is what the search uses.
  for (const std::string& key : {"matmul_64x64x64", "matmul_32x128x32", "matmul_128x32x16"}) {
    std::vector<Sample> one;
    for (const Sample& s : test) {
      if (s.workload_key == key) one.push_back(s);
    }
    auto p = model.Predict(FeaturesOf(one));
    ASSERT_TRUE(p.ok());
    EXPECT_GT(Spearman(*p, Normalized(all, one)), 0.8) << key << " n=" << one.size();
  }
}

TEST(CostModelTest, PairwiseRankObjective) {
  const std::vector<Sample> all = AllVariants();
  std::vector<Sample> train, test;
  Split(all, train, test);
  CostModelOptions options;
  options.objective = CostObjective::kPairwiseRank;
  CostModel model = Trained(train, options);
  std::vector<Sample> one;
  for (const Sample& s : test) {
    if (s.workload_key == "matmul_64x64x64") one.push_back(s);
  }
  auto p = model.Predict(FeaturesOf(one));
  ASSERT_TRUE(p.ok());
  EXPECT_GT(Spearman(*p, Normalized(all, one)), 0.8);
}

TEST(CostModelTest, TrainingIsDeterministic) {
  const std::vector<Sample> all = AllVariants();
  CostModel a = Trained(all), b = Trained(all);
  auto pa = a.Predict(FeaturesOf(all)), pb = b.Predict(FeaturesOf(all));
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(*pa, *pb);
  EXPECT_EQ(*a.Serialize(), *b.Serialize());
}

TEST(CostModelTest, SerializeRoundTripPredictsBitIdentically) {
  const std::vector<Sample> all = AllVariants();
  CostModelOptions options;
  options.num_rounds = 50;
  options.learning_rate = 0.3;
  CostModel model = Trained(all, options);
  auto bytes = model.Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto restored = CostModel::Deserialize(*bytes);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(restored->trained());
  EXPECT_EQ(restored->options().num_rounds, 50);
  EXPECT_EQ(restored->options().learning_rate, 0.3);
  EXPECT_EQ(restored->options().num_features, kFeatureLength);
  auto p1 = model.Predict(FeaturesOf(all)), p2 = restored->Predict(FeaturesOf(all));
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(*p1, *p2);
  EXPECT_EQ(*restored->Serialize(), *bytes);
  // A restored model retrains like a fresh one with the same options.
  ASSERT_TRUE(restored->Train(all).ok());
  EXPECT_EQ(*restored->Predict(FeaturesOf(all)), *p1);
}

TEST(CostModelTest, MoveKeepsTheModel) {
  CostModelOptions options;
  options.num_features = 2;
  options.num_rounds = 5;
  CostModel a = Trained({{{1, 2}, "w", 1.0}, {{2, 1}, "w", 2.0}}, options);
  auto before = a.Predict({{1, 2}});
  CostModel b = std::move(a);
  EXPECT_TRUE(b.trained());
  EXPECT_EQ(*b.Predict({{1, 2}}), *before);
}

TEST(CostModelTest, Errors) {
  CostModelOptions options;
  options.num_features = 3;
  options.num_rounds = 5;
  auto model = CostModel::Create(options);
  ASSERT_TRUE(model.ok());
  EXPECT_FALSE(model->trained());
  EXPECT_EQ(model->Predict({{1, 2, 3}}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model->Serialize().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model->Train({}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Train({{{1, 2}, "w", 1}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Train({{{1, 2, 3}, "w", -1}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Train({{{1, 2, NAN}, "w", 1}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(model->trained());  // failed training leaves it untrained
  ASSERT_TRUE(model->Train({{{1, 2, 3}, "w", 1}, {{3, 2, 1}, "w", 3}}).ok());
  auto wrong = model->Predict({{1, 2, 3}, {1, 2}});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), ::testing::HasSubstr("feature vector 1"));
  auto empty = model->Predict({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());

  options.num_rounds = 0;
  EXPECT_EQ(CostModel::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.num_rounds = 5;
  options.learning_rate = -1;
  EXPECT_EQ(CostModel::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CostModelTest, DeserializeRejectsGarbage) {
  EXPECT_EQ(CostModel::Deserialize("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CostModel::Deserialize("not a model at all").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CostModel::Deserialize("kiln-cost-model/1\n{garbage").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CostModel::Deserialize(std::string("kiln-cost-model/1\n\x00\x01\x02\x03", 22))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  CostModelOptions options;
  options.num_features = 2;
  options.num_rounds = 3;
  CostModel model = Trained({{{1, 2}, "w", 1.0}, {{2, 1}, "w", 2.0}}, options);
  const std::string bytes = *model.Serialize();
  EXPECT_EQ(CostModel::Deserialize(bytes.substr(0, bytes.size() / 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::tuning
