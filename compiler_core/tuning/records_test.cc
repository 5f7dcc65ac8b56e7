// Tuning records: validation with exact errors, JSON lines both ways, all-or-nothing import,
// digests, best-record selection, transfer candidates, and the record schedule source.
#include "compiler_core/tuning/records.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using ::testing::HasSubstr;

const char kHw[] = "cpu:znver4:x86_64-pc-linux-gnu:v512:+avx512f|device=AMD EPYC|units=2|"
                   "cache=32768,1048576,33554432";
const char kHw8[] = "cpu:znver4:x86_64-pc-linux-gnu:v512:+avx512f|device=AMD EPYC|units=8|"
                    "cache=32768,1048576,33554432";
const char kOtherIsa[] = "cpu:skylake-avx512:x86_64-pc-linux-gnu:v512:+avx512f|device=Xeon|"
                         "units=2|cache=32768,1048576,33554432";

std::string Key(char c) { return std::string(64, c); }

v1::TuningRecord Record(const std::string& workload, const std::string& hw, double median,
                        const std::string& schedule = "vectorize(j)") {
  v1::TuningRecord r;
  r.set_format_version(1);
  r.set_workload_key(workload);
  r.set_hardware_key(hw);
  r.set_schedule(schedule);
  r.set_median_ms(median);
  r.set_p10_ms(median * 0.9);
  r.set_p90_ms(median * 1.2);
  r.set_repeats(10);
  r.set_compiler_version("kiln-0.1.0+src.0123456789abcdef.llvm19.1.7");
  r.set_worker("w1");
  r.set_measured_unix_ms(1700000000000);
  r.set_provenance(v1::TuningRecord::MEASURED);
  return r;
}

TEST(RecordsTest, JsonLineRoundTrip) {
  v1::TuningRecord r = Record(Key('a'), kHw, 0.25, "split(j, 8)\nvectorize(j.i)");
  const std::string line = RecordToJsonLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_THAT(line, HasSubstr("\"workload_key\":\"" + Key('a') + "\""));
  EXPECT_THAT(line, HasSubstr("\"provenance\":\"MEASURED\""));
  EXPECT_THAT(line, HasSubstr("\"schedule\":\"split(j, 8)\\nvectorize(j.i)\""));
  absl::StatusOr<v1::TuningRecord> back = RecordFromJsonLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), r.SerializeAsString());
}

TEST(RecordsTest, ValidationNamesTheField) {
  auto error = [](v1::TuningRecord r) { return std::string(ValidateRecord(r).message()); };
  v1::TuningRecord r = Record(Key('a'), kHw, 1);
  EXPECT_TRUE(ValidateRecord(r).ok());
  v1::TuningRecord v = r;
  v.set_format_version(2);
  EXPECT_EQ(error(v), "format_version 2 is not supported (this build reads version 1)");
  v = r;
  v.set_workload_key("abc");
  EXPECT_EQ(error(v), "workload_key 'abc' is not 64 lowercase hex digits");
  v = r;
  v.set_hardware_key("cpu:x");
  EXPECT_THAT(error(v), HasSubstr("hardware_key: hardware key 'cpu:x': expected"));
  v = r;
  v.set_schedule("splitt(j, 8)");
  EXPECT_THAT(error(v), HasSubstr("schedule: 1:1: expected"));
  v = r;
  v.set_median_ms(-1);
  EXPECT_THAT(error(v), HasSubstr("times must be finite and positive"));
  v = r;
  v.set_p10_ms(5);
  EXPECT_EQ(error(v),
            "times must satisfy p10 <= median <= p90 (p10 5, median 1, p90 1.2 ms)");
  v = r;
  v.set_repeats(0);
  EXPECT_EQ(error(v), "repeats 0 must be at least 1");
  v = r;
  v.clear_provenance();
  EXPECT_EQ(error(v), "provenance must be MEASURED, IMPORTED or TRANSFERRED");
}

TEST(RecordsTest, ImportIsAllOrNothingWithTheLineNumber) {
  std::string text = RecordToJsonLine(Record(Key('a'), kHw, 1)) + "\n\n" +
                     RecordToJsonLine(Record(Key('b'), kHw, 2)) + "\n{\"workload_key\": 3}\n";
  absl::StatusOr<std::vector<v1::TuningRecord>> parsed = ParseRecordLines(text);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), ::testing::StartsWith("line 4: "));
  v1::TuningRecord unknown_version = Record(Key('c'), kHw, 1);
  unknown_version.set_format_version(9);
  parsed = ParseRecordLines(RecordToJsonLine(unknown_version));
  EXPECT_EQ(parsed.status(), absl::InvalidArgumentError(
                                 "line 1: format_version 9 is not supported (this build reads "
                                 "version 1)"));
  parsed = ParseRecordLines(text.substr(0, text.rfind("{\"workload_key\": 3}")));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->size(), 2u);
  EXPECT_EQ(ParseRecordLines("not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRecordLines("{\"no_such_field\": 1}").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RecordsTest, DigestCoversWhatShapesTheArtifactOnly) {
  v1::TuningRecord r = Record(Key('a'), kHw, 1);
  v1::TuningRecord imported = r;
  imported.set_provenance(v1::TuningRecord::IMPORTED);
  imported.set_worker("elsewhere");
  imported.set_measured_unix_ms(1);
  EXPECT_EQ(RecordDigest(imported), RecordDigest(r));
  v1::TuningRecord other = r;
  other.set_schedule("unroll(j)");
  EXPECT_NE(RecordDigest(other), RecordDigest(r));
  other = r;
  other.set_median_ms(0.5);
  EXPECT_NE(RecordDigest(other), RecordDigest(r));
  EXPECT_EQ(RecordDigest(r).size(), 64u);
}

TEST(RecordsTest, BestNearestAndHardwareKeys) {
  RecordSet set;
  ASSERT_TRUE(set.Add(Record(Key('a'), kHw, 2.0, "unroll(j)")).ok());
  ASSERT_TRUE(set.Add(Record(Key('a'), kHw, 1.5, "vectorize(j)")).ok());
  ASSERT_TRUE(set.Add(Record(Key('a'), kHw8, 0.5, "vectorize(j)")).ok());
  ASSERT_TRUE(set.Add(Record(Key('a'), kOtherIsa, 0.1, "vectorize(j)")).ok());
  ASSERT_TRUE(set.Add(Record(Key('b'), kHw, 3.0)).ok());
  EXPECT_EQ(set.Add(Record("x", kHw, 1)).code(), absl::StatusCode::kInvalidArgument);
  // Re-measuring one schedule replaces its record.
  ASSERT_TRUE(set.Add(Record(Key('a'), kHw, 1.25, "vectorize(j)")).ok());
  EXPECT_EQ(set.size(), 5u);
  const v1::TuningRecord* best = set.Best(Key('a'), kHw);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->median_ms(), 1.25);
  EXPECT_EQ(set.Best(Key('c'), kHw), nullptr);
  absl::StatusOr<HardwareInfo> hw = ParseHardwareKey(kHw);
  ASSERT_TRUE(hw.ok());
  std::vector<const v1::TuningRecord*> near = set.Nearest(Key('a'), *hw, 4);
  ASSERT_EQ(near.size(), 1u);  // other ISA never transfers
  EXPECT_EQ(near[0]->hardware_key(), kHw8);
  // The default schedule is measured anyway: a seed of it is skipped.
  EXPECT_TRUE(set.Nearest(Key('a'), *hw, 4, "vectorize(j)").empty());
  EXPECT_EQ(set.HardwareKeysFor(hw->target_key).size(), 2u);
}

TEST(RecordsTest, SourceAppliesTheBestRecordOfItsHardwareOnly) {
  loop::BufferRef x = loop::MakeBuffer("x", DType::kFloat32, {4, 16});
  loop::BufferRef y = loop::MakeBuffer("y", DType::kFloat32, {4, 16});
  loop::Var i = loop::MakeVar("i"), j = loop::MakeVar("j");
  loop::Func f;
  f.name = "k";
  f.params = {x, y};
  f.body = loop::For(i, 4, loop::For(j, 16, loop::Store(y, {loop::VarRef(i), loop::VarRef(j)},
                                                          loop::Load(x, {loop::VarRef(i),
                                                                         loop::VarRef(j)}))));
  RecordSet set;
  ASSERT_TRUE(set.Add(Record(Key('a'), kHw, 0.75, "split(j, 4)\nvectorize(j.i)")).ok());
  Target t;
  t.vector_bits = 256;
  RecordScheduleSource source(set, kHw);
  schedule::ScheduleChoice tuned = source.Choose(f, Key('a'), t);
  EXPECT_TRUE(tuned.tuned);
  EXPECT_EQ(tuned.schedule.ToString(), "split(j, 4)\nvectorize(j.i)");
  EXPECT_EQ(tuned.tuned_median_ms, 0.75);
  EXPECT_EQ(tuned.record_digest, RecordDigest(*set.Best(Key('a'), kHw)));
  schedule::ScheduleChoice other_hw = RecordScheduleSource(set, kHw8).Choose(f, Key('a'), t);
  EXPECT_FALSE(other_hw.tuned);
  EXPECT_EQ(other_hw.schedule.ToString(), schedule::DefaultSchedule(f, t).ToString());
  EXPECT_FALSE(source.Choose(f, Key('b'), t).tuned);

  // The default's own record (it measured fastest) leaves the kernel untuned.
  RecordSet defaults;
  v1::TuningRecord d = Record(Key('a'), kHw, 0.5, schedule::DefaultSchedule(f, t).ToString());
  d.set_confirmed(true);
  ASSERT_TRUE(defaults.Add(d).ok());
  schedule::ScheduleChoice kept = RecordScheduleSource(defaults, kHw).Choose(f, Key('a'), t);
  EXPECT_FALSE(kept.tuned);
  EXPECT_EQ(kept.schedule.ToString(), schedule::DefaultSchedule(f, t).ToString());
  EXPECT_EQ(kept.record_digest, RecordDigest(d));
  EXPECT_EQ(kept.tuned_median_ms, 0.5);
  // A candidate that lost to the default in its batch never applies; the default's own
  // (unconfirmed) record is what the kernel follows.
  RecordSet lost;
  v1::TuningRecord candidate = Record(Key('a'), kHw, 0.4, "split(j, 4)\nvectorize(j.i)");
  candidate.set_default_median_ms(0.3);
  v1::TuningRecord own = Record(Key('a'), kHw, 0.45, schedule::DefaultSchedule(f, t).ToString());
  own.set_default_median_ms(0.3);
  ASSERT_TRUE(lost.Add(candidate).ok());
  ASSERT_TRUE(lost.Add(own).ok());
  schedule::ScheduleChoice fallback = RecordScheduleSource(lost, kHw).Choose(f, Key('a'), t);
  EXPECT_FALSE(fallback.tuned);
  EXPECT_EQ(fallback.schedule.ToString(), schedule::DefaultSchedule(f, t).ToString());
  EXPECT_EQ(fallback.record_digest, RecordDigest(own));
}

// A record is applied only if it did not lose to the default: confirmed, or no slower than the
// default measured in its own batch (or with no default measurement to compare).
TEST(RecordsTest, BestSkipsRecordsThatLostToTheDefaultInTheirBatch) {
  RecordSet set;
  v1::TuningRecord lost = Record(Key('a'), kHw, 0.000191, "unroll(j)");
  lost.set_default_median_ms(0.00019);
  ASSERT_TRUE(set.Add(lost).ok());
  EXPECT_EQ(set.Best(Key('a'), kHw), nullptr);
  // The default measured as a candidate, slower than its batch's reference: it did not win
  // either (RecordScheduleSource falls back to it by schedule, with Find).
  v1::TuningRecord def = Record(Key('a'), kHw, 0.000201, "vectorize(j)");
  def.set_default_median_ms(0.00019);
  ASSERT_TRUE(set.Add(def).ok());
  EXPECT_EQ(set.Best(Key('a'), kHw), nullptr);
  ASSERT_NE(set.Find(Key('a'), kHw, "vectorize(j)"), nullptr);
  EXPECT_EQ(set.Find(Key('a'), kHw, "vectorize(j)")->median_ms(), 0.000201);
  v1::TuningRecord won = Record(Key('a'), kHw, 0.00018, "split(j, 8)");
  won.set_default_median_ms(0.00019);
  ASSERT_TRUE(set.Add(won).ok());
  ASSERT_NE(set.Best(Key('a'), kHw), nullptr);
  EXPECT_EQ(set.Best(Key('a'), kHw)->schedule(), "split(j, 8)");
  // Confirmed records come first, even slower ones; a record without a default median counts.
  v1::TuningRecord confirmed = Record(Key('a'), kHw, 0.000185, "split(j, 4)");
  confirmed.set_default_median_ms(0.0002);
  confirmed.set_confirmed(true);
  ASSERT_TRUE(set.Add(confirmed).ok());
  EXPECT_EQ(set.Best(Key('a'), kHw)->schedule(), "split(j, 4)");
  ASSERT_TRUE(set.Add(Record(Key('b'), kHw, 1.0)).ok());
  EXPECT_NE(set.Best(Key('b'), kHw), nullptr);
}

}  // namespace
}  // namespace kiln::tuning
