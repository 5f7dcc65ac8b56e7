// The search: records every measurement, never ends worse than the default, spreads trials
// over tasks, stops early, cancels with what it has, and is reproducible from its seed.
#include "compiler_core/tuning/search.h"

#include <set>

#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/tuning/local_measurer.h"
#include "compiler_core/tuning/records.h"
#include "compiler_core/tuning/tuning_test_util.h"
#include "compiler_core/tuning/workload.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

TuneTask MatMulTask(int64_t m, int64_t n, int64_t k, int weight) {
  TuneTask t;
  t.lowered = testing::LoweredMatMul(m, n, k);
  t.workload_key = WorkloadKey(t.lowered);
  t.fused_ops = "MatMul";
  t.weight = weight;
  t.flops = CountFlops(t.lowered);
  return t;
}

const char kHw[] = "cpu:test|device=fake|units=1|cache=32768";

/// Deterministic "device": a schedule's time is a fixed function of its trace, so searches can
/// be compared exactly. Candidates whose trace contains "parallel" are slow; the default is
/// medium; others get a pseudo-random time from the trace's hash.
class FakeMeasurer final : public Measurer {
 public:
  absl::StatusOr<BatchMeasurement> Measure(
      const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) override {
    ++calls;
    BatchMeasurement out;
    out.reference = Timed(1.0);
    for (const schedule::Schedule& s : candidates) {
      const std::string text = s.ToString();
      const std::string h = Sha256Hex(text);
      const double r = static_cast<double>(std::stoul(h.substr(0, 6), nullptr, 16)) / 0xFFFFFF;
      out.candidates.push_back(Timed(0.5 + r));
      measured.push_back(text);
    }
    return out;
  }
  std::string hardware_key() const override { return kHw; }
  std::string worker_name() const override { return "fake"; }
  int calls = 0;
  std::vector<std::string> measured;

 private:
  static Measurement Timed(double ms) {
    Measurement m;
    m.median_ms = ms;
    m.p10_ms = ms * 0.95;
    m.p90_ms = ms * 1.1;
    m.min_ms = m.p10_ms;
    m.repeats = 10;
    return m;
  }
};

Target Avx2() {
  Target t;
  t.vector_bits = 256;
  return t;
}

SearchOptions Small(int64_t trials) {
  SearchOptions o;
  o.trials = trials;
  o.batch_size = 4;
  o.population = 24;
  o.generations = 2;
  o.early_stop_trials = 1000;
  o.seed = 9;
  o.confirm_top = 0;  // the tests below count measurements; ConfirmationReplacesLuckyMedians
  return o;
}

TEST(SearchTest, RecordsEveryMeasurementAndNeverEndsWorseThanTheDefault) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 2), MatMulTask(8, 64, 32, 1)};
  FakeMeasurer measurer;
  int reports = 0;
  std::vector<std::string> reported;  // schedules of the records reported round by round
  absl::StatusOr<SearchResult> r =
      TuneTasks(tasks, Avx2(), measurer, FeatureContext{}, Small(24),
                [&](const SearchProgress& p) {
                  ++reports;
                  EXPECT_EQ(p.trial_budget, 24);
                  EXPECT_LE(p.trials, 24);
                  EXPECT_FALSE(p.new_records.empty());
                  for (const v1::TuningRecord& rec : p.new_records) {
                    reported.push_back(rec.workload_key() + rec.schedule());
                  }
                  return true;
                },
                "kiln-test");
  ASSERT_TRUE(r.ok()) << r.status();
  // The rounds' new records, in order, are exactly the result's records.
  ASSERT_EQ(reported.size(), r->records.size());
  for (size_t i = 0; i < reported.size(); ++i) {
    EXPECT_EQ(reported[i], r->records[i].workload_key() + r->records[i].schedule());
  }
  EXPECT_EQ(r->progress.trials, 24);
  EXPECT_EQ(reports, measurer.calls);
  ASSERT_EQ(r->progress.tasks.size(), 2u);
  for (const TaskProgress& t : r->progress.tasks) {
    EXPECT_GT(t.trials, 0);  // every task got at least one round
    EXPECT_EQ(t.default_ms, 1.0);
    EXPECT_LE(t.best_ms, t.default_ms);
    EXPECT_EQ(t.curve.size(), static_cast<size_t>(t.trials));
    for (size_t i = 1; i < t.curve.size(); ++i) EXPECT_LE(t.curve[i], t.curve[i - 1]);
  }
  // One record per measured candidate plus each task's default, all valid.
  EXPECT_EQ(r->records.size(), 24u + 2u);
  for (const v1::TuningRecord& rec : r->records) {
    EXPECT_TRUE(ValidateRecord(rec).ok()) << ValidateRecord(rec);
    EXPECT_EQ(rec.hardware_key(), kHw);
    EXPECT_EQ(rec.worker(), "fake");
    EXPECT_EQ(rec.default_median_ms(), 1.0);
  }
  EXPECT_DOUBLE_EQ(r->progress.estimated_ms,
                   2 * r->progress.tasks[0].best_ms + r->progress.tasks[1].best_ms);
  EXPECT_DOUBLE_EQ(r->progress.default_estimated_ms, 3.0);
  EXPECT_FALSE(r->model.empty());
}

/// A device whose first measurement of every schedule is lucky (half its real time).
class LuckyFirstMeasurer final : public Measurer {
 public:
  absl::StatusOr<BatchMeasurement> Measure(
      const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) override {
    BatchMeasurement out;
    out.reference = Timed(1.0);
    for (const schedule::Schedule& s : candidates) {
      const bool first = seen_.insert(s.ToString()).second;
      out.candidates.push_back(Timed(first ? 0.5 : 1.2));  // every candidate truly loses
    }
    return out;
  }
  std::string hardware_key() const override { return kHw; }
  std::string worker_name() const override { return "lucky"; }

 private:
  static Measurement Timed(double ms) {
    Measurement m;
    m.median_ms = m.p10_ms = m.p90_ms = m.min_ms = ms;
    m.repeats = 10;
    return m;
  }
  std::set<std::string> seen_;
};

// Confirmation: the candidates that beat the default are measured again with it; the paired
// medians are filed after the lucky ones (so they replace them in a RecordSet and in the
// store), and the task's best falls back to the default when they do not hold.
TEST(SearchTest, ConfirmationReplacesLuckyMedians) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  LuckyFirstMeasurer measurer;
  SearchOptions o = Small(8);
  o.confirm_top = 8;
  std::vector<v1::TuningRecord> filed;
  absl::StatusOr<SearchResult> r = TuneTasks(
      tasks, Avx2(), measurer, FeatureContext{}, o,
      [&](const SearchProgress& p) {
        filed.insert(filed.end(), p.new_records.begin(), p.new_records.end());
        return true;
      },
      "v");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->progress.trials, 8);
  const TaskProgress& t = r->progress.tasks[0];
  EXPECT_EQ(t.best_ms, 1.0) << "a lucky candidate survived confirmation";
  EXPECT_EQ(t.best_schedule,
            ScheduleSpace(tasks[0].lowered, Avx2()).Default().schedule.ToString());
  ASSERT_EQ(filed.size(), r->records.size());
  RecordSet set;
  for (const v1::TuningRecord& rec : filed) ASSERT_TRUE(set.Add(rec).ok());
  const v1::TuningRecord* best = set.Best(tasks[0].workload_key, kHw);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->median_ms(), 1.0);
  EXPECT_EQ(best->schedule(), t.best_schedule);
  EXPECT_TRUE(best->confirmed());
}

// With fewer confirmations than lucky winners, the unconfirmed lucky medians stay in the store
// (0.5 ms, never re-measured), but selection takes the confirmed records first: the default.
TEST(SearchTest, SelectionPrefersConfirmedRecords) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  LuckyFirstMeasurer measurer;
  SearchOptions o = Small(8);
  o.confirm_top = 2;
  absl::StatusOr<SearchResult> r =
      TuneTasks(tasks, Avx2(), measurer, FeatureContext{}, o, nullptr, "v");
  ASSERT_TRUE(r.ok()) << r.status();
  RecordSet set;
  int lucky = 0, confirmed = 0;
  for (const v1::TuningRecord& rec : r->records) {
    ASSERT_TRUE(set.Add(rec).ok());
  }
  for (const v1::TuningRecord* rec : set.All()) {
    lucky += !rec->confirmed() && rec->median_ms() == 0.5;
    confirmed += rec->confirmed();
  }
  EXPECT_GT(lucky, 0);
  EXPECT_EQ(confirmed, 3);  // the default and the two re-measured winners
  const v1::TuningRecord* best = set.Best(tasks[0].workload_key, kHw);
  ASSERT_NE(best, nullptr);
  EXPECT_TRUE(best->confirmed());
  EXPECT_EQ(best->median_ms(), 1.0);
  EXPECT_EQ(best->schedule(),
            ScheduleSpace(tasks[0].lowered, Avx2()).Default().schedule.ToString());
}

TEST(SearchTest, ReproducibleFromTheSeed) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  FakeMeasurer a, b, c;
  SearchOptions o = Small(16);
  ASSERT_TRUE(TuneTasks(tasks, Avx2(), a, FeatureContext{}, o, nullptr, "v").ok());
  ASSERT_TRUE(TuneTasks(tasks, Avx2(), b, FeatureContext{}, o, nullptr, "v").ok());
  EXPECT_EQ(a.measured, b.measured);
  o.seed = 10;
  ASSERT_TRUE(TuneTasks(tasks, Avx2(), c, FeatureContext{}, o, nullptr, "v").ok());
  EXPECT_NE(a.measured, c.measured);
}

TEST(SearchTest, CancelKeepsWhatWasMeasured) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  FakeMeasurer measurer;
  absl::StatusOr<SearchResult> r = TuneTasks(
      tasks, Avx2(), measurer, FeatureContext{}, Small(40),
      [](const SearchProgress& p) { return p.round < 2; }, "v");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->progress.trials, 8);
  EXPECT_EQ(r->records.size(), 9u);
}

TEST(SearchTest, EarlyStopping) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  FakeMeasurer measurer;
  SearchOptions o = Small(200);
  o.early_stop_trials = 8;
  absl::StatusOr<SearchResult> r = TuneTasks(tasks, Avx2(), measurer, FeatureContext{}, o,
                                             nullptr, "v");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->progress.tasks[0].stopped);
  EXPECT_LT(r->progress.trials, 200);
}

TEST(SearchTest, RejectsBadOptions) {
  FakeMeasurer measurer;
  EXPECT_EQ(TuneTasks({}, Avx2(), measurer, FeatureContext{}, Small(4), nullptr, "v").status(),
            absl::InvalidArgumentError("nothing to tune: no workloads"));
  SearchOptions o = Small(0);
  EXPECT_EQ(TuneTasks({MatMulTask(8, 8, 8, 1)}, Avx2(), measurer, FeatureContext{}, o, nullptr,
                      "v")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SearchTest, LocalMeasurerTunesARealKernel) {
  absl::StatusOr<Target> host = kiln::ResolveTarget("host");
  ASSERT_TRUE(host.ok());
  std::vector<TuneTask> tasks = {MatMulTask(32, 48, 64, 1)};
  MeasureOptions mo;
  mo.min_measure_ms = 1;
  mo.min_repeats = 3;
  LocalMeasurer measurer(*host, kHw, mo);
  absl::StatusOr<SearchResult> r =
      TuneTasks(tasks, *host, measurer, FeatureContext{}, Small(8), nullptr, "v");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->progress.trials, 8);
  EXPECT_GT(r->progress.tasks[0].default_ms, 0);
  EXPECT_LE(r->progress.tasks[0].best_ms, r->progress.tasks[0].default_ms);
  EXPECT_GE(r->records.size(), 2u);
}

}  // namespace
}  // namespace kiln::tuning

namespace kiln::tuning {
namespace {

TEST(SearchTest, TransferredSeedsAreMeasuredFirstAndMarked) {
  std::vector<TuneTask> tasks = {MatMulTask(24, 40, 64, 1)};
  tasks[0].seeds.push_back({"split(j, 8)\nvectorize(j.i)", "cpu:test|device=big|units=8|cache=1"});
  tasks[0].seeds.push_back({"not a schedule((", "cpu:test|device=big|units=8|cache=1"});
  FakeMeasurer measurer;
  absl::StatusOr<SearchResult> r =
      TuneTasks(tasks, Avx2(), measurer, FeatureContext{}, Small(4), nullptr, "v");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(measurer.measured.empty());
  EXPECT_EQ(measurer.measured[0], "split(j, 8)\nvectorize(j.i)");
  int transferred = 0;
  for (const v1::TuningRecord& rec : r->records) {
    if (rec.provenance() != v1::TuningRecord::TRANSFERRED) continue;
    ++transferred;
    EXPECT_EQ(rec.schedule(), "split(j, 8)\nvectorize(j.i)");
    EXPECT_EQ(rec.source_hardware_key(), "cpu:test|device=big|units=8|cache=1");
    EXPECT_EQ(rec.hardware_key(), kHw);
  }
  EXPECT_EQ(transferred, 1);
}

}  // namespace
}  // namespace kiln::tuning
