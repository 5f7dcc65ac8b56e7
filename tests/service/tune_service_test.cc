// Tune jobs through kilnd with the real binaries: a kilnd supervising a compile worker and a
// measure worker (kilnd --measure-workers 1). A tune writes records that the next compile
// applies (new artifact key, `kiln check` still passes); cancel keeps what was measured;
// kill -9 of the measure worker mid-tune loses no record; compile now, tune later; a compile
// worker that builds wrong candidates gets none of them recorded.
#include <signal.h>

#include <algorithm>
#include <set>
#include <string>

#include "client/remote.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.pb.h"
#include "tests/service/process.h"
#include "tests/service/service_fixture.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

bool Terminal(const kiln::v1::JobEvent& e) {
  return e.state() == kiln::v1::SUCCEEDED || e.state() == kiln::v1::FAILED ||
         e.state() == kiln::v1::CANCELLED;
}

class TuneServiceTest : public ServiceTest {
 protected:
  /// kilnd with one compile worker and one measure worker.
  Kilnd& StartTuningKilnd() { return StartKilnd(/*workers=*/1, {}, /*measure_workers=*/1); }

  /// Submits a tune of `model` (the client library: the test watches and cancels it itself).
  std::string SubmitTune(const std::string& model, int64_t trials) {
    kiln::v1::TuneRequest request;
    request.set_target("host");
    request.set_trials(trials);
    request.set_seed(3);
    absl::StatusOr<std::string> bytes = ReadFileOr(model);
    EXPECT_TRUE(bytes.ok());
    const kiln::v1::Digest digest = client::DigestOf(*bytes);
    EXPECT_TRUE(kilnd_->client().EnsureModel(*bytes, digest).ok());
    *request.mutable_model_digest() = digest;
    kiln::v1::SubmitJobRequest submit;
    *submit.mutable_tune() = request;
    absl::StatusOr<kiln::v1::SubmitJobResponse> r = kilnd_->client().SubmitJob(submit);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->job_id() : "";
  }

  /// Follows the job until `until` holds for an event (or the job ends); returns that event.
  kiln::v1::JobEvent WatchUntil(const std::string& job_id,
                                const std::function<bool(const kiln::v1::JobEvent&)>& until) {
    kiln::v1::JobEvent seen;
    absl::StatusOr<kiln::v1::JobEvent> last =
        kilnd_->client().WatchJob(job_id, [&](const kiln::v1::JobEvent& e) {
          seen = e;
          return !until(e);
        });
    EXPECT_TRUE(last.ok()) << last.status();
    return seen;
  }

  /// Follows the job until its first records are filed (or it ends); returns that event.
  kiln::v1::JobEvent WatchUntilRecordsFiled(const std::string& job_id) {
    return WatchUntil(job_id, [](const kiln::v1::JobEvent& e) {
      return Terminal(e) || (e.has_tune_progress() && e.tune_progress().records_written() > 0);
    });
  }

  std::vector<kiln::v1::TuningRecord> Records() {
    auto records = kilnd_->client().ListTuningRecords("");
    EXPECT_TRUE(records.ok()) << records.status();
    return records.ok() ? *records : std::vector<kiln::v1::TuningRecord>{};
  }

  /// The pid of the (only) measure worker, 0 if none is registered; `*busy` (optional): the
  /// tasks kilnd has running on it.
  int MeasureWorkerPid(int* busy = nullptr) {
    auto workers = kilnd_->client().ListWorkers();
    if (!workers.ok()) return 0;
    for (const kiln::v1::Worker& w : workers->workers()) {
      for (const kiln::v1::Capability& c : w.capabilities().capabilities()) {
        if (!c.has_measure()) continue;
        if (busy != nullptr) *busy = w.busy();
        return w.pid();
      }
    }
    return 0;
  }

  static absl::StatusOr<std::string> ReadFileOr(const std::string& path) {
    if (!fs::exists(path)) return absl::NotFoundError(path);
    return ReadFile(path);
  }
};

// `kiln tune --server` measures on the measure worker and files records; the next compile
// applies them (another options hash and artifact, tuned kernels) and still passes check.
TEST_F(TuneServiceTest, TuneJobWritesRecordsThatTheNextCompileApplies) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& kilnd = StartTuningKilnd();
  RunResult plain = CompileJson(Model(kMlp), root_ + "/plain.kiln");
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);

  RunResult tune = Kiln({"tune", Model(kMlp), "--server", kilnd.address(), "--trials", "32",
                         "--seed", "2", "--json"});
  ASSERT_EQ(tune.exit_code, 0) << Describe(tune);
  EXPECT_EQ(JsonField(tune.out, "state"), "SUCCEEDED") << tune.out;
  EXPECT_EQ(JsonField(tune.out, "trials"), "32") << tune.out;
  // --json is one object (protobuf's JSON parser takes it): best per workload, trials, records.
  google::protobuf::Struct summary = ParseJson(tune.out);
  EXPECT_EQ(Field(summary, "job_id").string_value().empty(), false) << tune.out;
  const google::protobuf::ListValue& workloads = Field(summary, "workloads").list_value();
  ASSERT_GT(workloads.values_size(), 0) << tune.out;
  double workload_trials = 0;
  for (const google::protobuf::Value& v : workloads.values()) {
    const google::protobuf::Struct& w = v.struct_value();
    workload_trials += Field(w, "trials").number_value();
    if (Field(w, "default_ms").number_value() > 0) {
      EXPECT_LE(Field(w, "tuned_ms").number_value(), Field(w, "default_ms").number_value());
    }
  }
  EXPECT_EQ(workload_trials, 32) << tune.out;
  const int written = std::atoi(JsonField(tune.out, "records_written").c_str());
  EXPECT_GT(written, 0) << tune.out;
  const std::string hardware_key = JsonField(tune.out, "hardware_key");
  EXPECT_THAT(hardware_key, HasSubstr("|device=")) << tune.out;
  EXPECT_THAT(hardware_key, HasSubstr("|units=1|")) << "the measure worker owns one core";

  std::vector<kiln::v1::TuningRecord> records = Records();
  // Filed per measurement; a schedule measured twice (the default as a candidate too) is one
  // record.
  EXPECT_GT(records.size(), 0u);
  EXPECT_LE(static_cast<int>(records.size()), written);
  for (const kiln::v1::TuningRecord& r : records) {
    EXPECT_EQ(r.provenance(), kiln::v1::TuningRecord::MEASURED);
    EXPECT_EQ(r.hardware_key(), hardware_key);
    EXPECT_GT(r.median_ms(), 0);
    EXPECT_FALSE(r.worker().empty());
    EXPECT_NE(r.worker(), "local");
  }

  const std::string tuned_path = root_ + "/tuned.kiln";
  RunResult tuned = CompileJson(Model(kMlp), tuned_path);
  ASSERT_EQ(tuned.exit_code, 0) << Describe(tuned);
  EXPECT_EQ(JsonField(tuned.out, "cache_hit"), "false");
  EXPECT_NE(JsonField(tuned.out, "options_hash"), JsonField(plain.out, "options_hash"));
  RunResult inspect = Kiln({"inspect", "--kernels", tuned_path});
  EXPECT_THAT(inspect.out, HasSubstr(" (record ")) << inspect.out;
  RunResult check = Kiln({"check", kMlp, "--server", kilnd.address()});
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
  EXPECT_THAT(check.out, HasSubstr("(cache hit)")) << "check compiles what compile compiled";

  // The jobs list shows the tune, and its steps only when asked.
  RunResult jobs = Kiln({"jobs", "--server", kilnd.address()});
  EXPECT_THAT(jobs.out, HasSubstr(" tune ")) << jobs.out;
  EXPECT_THAT(jobs.out, ::testing::Not(HasSubstr(" measure "))) << jobs.out;
  RunResult steps = Kiln({"jobs", "--server", kilnd.address(), "--kind", "measure"});
  EXPECT_THAT(steps.out, HasSubstr(" measure ")) << steps.out;
  EXPECT_THAT(steps.out, ::testing::Not(HasSubstr(" tune "))) << steps.out;
  RunResult bad_kind = Kiln({"jobs", "--server", kilnd.address(), "--kind", "nope"});
  EXPECT_EQ(bad_kind.exit_code, 1);
  EXPECT_THAT(bad_kind.err, HasSubstr("unknown job kind 'nope'")) << Describe(bad_kind);
}

// Cancelling a running tune keeps every record it filed; the job ends CANCELLED.
TEST_F(TuneServiceTest, CancelKeepsTheRecordsMeasuredSoFar) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  StartTuningKilnd();
  const std::string job = SubmitTune(Model(kMlp), 2000);
  ASSERT_FALSE(job.empty());
  kiln::v1::JobEvent e = WatchUntilRecordsFiled(job);
  ASSERT_TRUE(e.has_tune_progress()) << e.DebugString();
  const int filed = e.tune_progress().records_written();
  absl::StatusOr<kiln::v1::JobState> state = kilnd_->client().CancelJob(job);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(*state, kiln::v1::CANCELLED);
  kiln::v1::JobEvent last = WatchUntil(job, Terminal);
  EXPECT_EQ(last.state(), kiln::v1::CANCELLED);
  EXPECT_GE(static_cast<int>(Records().size()), filed);
  // The tune stopped: no record is filed after a moment for the round in flight.
  std::this_thread::sleep_for(3s);
  const size_t settled = Records().size();
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(Records().size(), settled) << "the cancelled tune still files records";
}

// kill -9 of the measure worker in the middle of a tune: kilnd's supervisor restarts it, the
// lost measurement is retried, the job finishes, and every record filed before is still there.
TEST_F(TuneServiceTest, KillingTheMeasureWorkerMidTuneLosesNoRecord) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  StartTuningKilnd();
  const std::string job = SubmitTune(Model(kLenet), 40);
  ASSERT_FALSE(job.empty());
  kiln::v1::JobEvent e = WatchUntilRecordsFiled(job);
  ASSERT_TRUE(e.has_tune_progress()) << e.DebugString();
  std::set<std::string> before;
  for (const kiln::v1::TuningRecord& r : Records()) before.insert(r.workload_key() + r.schedule());
  // Kill it while it measures a batch, so that kilnd loses a running task.
  int pid = 0, busy = 0;
  ASSERT_TRUE(Eventually([&] { return (pid = MeasureWorkerPid(&busy)) > 0 && busy > 0; }, 60s));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  kiln::v1::JobEvent last = WatchUntil(job, Terminal);
  EXPECT_EQ(last.state(), kiln::v1::SUCCEEDED) << last.DebugString();
  ASSERT_TRUE(last.has_tune_result()) << last.DebugString();
  EXPECT_EQ(last.tune_result().progress().trials(), 40);
  std::set<std::string> after;
  for (const kiln::v1::TuningRecord& r : Records()) after.insert(r.workload_key() + r.schedule());
  for (const std::string& r : before) EXPECT_TRUE(after.count(r)) << "lost a record";
  EXPECT_GT(after.size(), before.size());
  EXPECT_NE(MeasureWorkerPid(), pid) << "the supervisor restarted the measure worker";
  EXPECT_THAT(kilnd_->log(), HasSubstr("event=worker.lost"));
  EXPECT_THAT(kilnd_->log(), HasSubstr("; retrying on another worker")) << "the lost batch";
}

// compile --tune=background returns the default artifact at once and queues a tune; the next
// compile after the tune succeeded returns the tuned artifact.
TEST_F(TuneServiceTest, CompileNowTuneLater) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& kilnd = StartTuningKilnd();
  const std::string first_path = root_ + "/first.kiln";
  RunResult first = CompileJson(Model(kMlp), first_path,
                                {"--tune=background", "--trials", "32", "--seed", "4"});
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  const std::string job = JsonField(first.out, "tune_job_id");
  ASSERT_FALSE(job.empty()) << first.out;
  RunResult inspect_first = Kiln({"inspect", "--kernels", first_path});
  EXPECT_THAT(inspect_first.out, ::testing::Not(HasSubstr(" (record ")))
      << inspect_first.out;

  kiln::v1::JobEvent last = WatchUntil(job, Terminal);
  ASSERT_EQ(last.state(), kiln::v1::SUCCEEDED) << last.DebugString();
  const std::string second_path = root_ + "/second.kiln";
  RunResult second = CompileJson(Model(kMlp), second_path);
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_NE(JsonField(second.out, "artifact_digest"), JsonField(first.out, "artifact_digest"));
  // Compiled with the tune's records: kernels follow them (tuned, or the default measured
  // fastest: which one depends on the measurements).
  RunResult inspect_second = Kiln({"inspect", "--kernels", second_path});
  EXPECT_THAT(inspect_second.out, HasSubstr("tuning:           records ")) << inspect_second.out;
  EXPECT_THAT(inspect_second.out, HasSubstr(" (record ")) << inspect_second.out;
  RunResult check = Kiln({"check", kMlp, "--server", kilnd.address()});
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
}

// A compile worker that builds wrong candidates (kiln-worker --inject-fault wrong-outputs):
// the measure worker's output check rejects every one, so the tune files only the default
// schedules' measurements, never a candidate's, and finds nothing faster than the default.
TEST_F(TuneServiceTest, WrongCandidatesAreRejectedAndNeverRecorded) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/0, {}, /*measure_workers=*/1);
  Process faulty = Process::Spawn({BinDir() + "/kiln-worker", "--connect", kilnd.address(),
                                   "--inject-fault", "wrong-outputs"},
                                  root_ + "/faulty.out", root_ + "/faulty.err");
  ASSERT_TRUE(Eventually(
      [&] {
        auto stats = kilnd.client().GetStats();
        return stats.ok() && stats->workers() >= 2;
      },
      60s));
  RunResult tune = Kiln({"tune", Model(kMlp), "--server", kilnd.address(), "--trials", "32",
                         "--json"});
  ASSERT_EQ(tune.exit_code, 0) << Describe(tune);
  const std::vector<kiln::v1::TuningRecord> records = Records();
  ASSERT_FALSE(records.empty());
  std::set<std::string> workloads;
  for (const kiln::v1::TuningRecord& r : records) {
    EXPECT_EQ(r.median_ms(), r.default_median_ms()) << "a candidate's record:\n"
                                                     << r.DebugString();
    EXPECT_TRUE(workloads.insert(r.workload_key()).second) << "two records of one workload";
  }
  // The summary: no workload got faster than its default.
  EXPECT_THAT(tune.out, ::testing::Not(HasSubstr("\"records_written\":0"))) << tune.out;
  for (size_t at = tune.out.find("\"default_ms\":"); at != std::string::npos;
       at = tune.out.find("\"default_ms\":", at + 1)) {
    const double def = std::atof(tune.out.c_str() + at + 13);
    const size_t tuned_at = tune.out.find("\"tuned_ms\":", at);
    ASSERT_NE(tuned_at, std::string::npos);
    EXPECT_EQ(std::atof(tune.out.c_str() + tuned_at + 11), def) << tune.out;
  }
}

// SIGTERM in the middle of a tune: kilnd shuts down promptly (a tune does not hold up the
// shutdown grace), the tune is persisted, and the restarted kilnd runs it to its end; the
// records filed before the restart are still there.
TEST_F(TuneServiceTest, ATuneSurvivesAKilndRestart) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& kilnd = StartTuningKilnd();
  const std::string job = SubmitTune(Model(kMlp), 400);
  ASSERT_FALSE(job.empty());
  kiln::v1::JobEvent e = WatchUntilRecordsFiled(job);
  ASSERT_TRUE(e.has_tune_progress()) << e.DebugString();
  const size_t filed = Records().size();
  const auto stop_started = std::chrono::steady_clock::now();
  ASSERT_TRUE(kilnd.Stop());
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, 20s)
      << "the running tune held up the shutdown";
  ASSERT_TRUE(kilnd.Start());
  EXPECT_GE(Records().size(), filed);
  kiln::v1::JobEvent last = WatchUntil(job, Terminal);
  EXPECT_EQ(last.state(), kiln::v1::SUCCEEDED) << last.DebugString();
  EXPECT_GT(last.tune_result().progress().trials(), 0);  // early stopping may end it sooner
  EXPECT_LE(last.tune_result().progress().trials(), 400);
  EXPECT_THAT(kilnd.log(), HasSubstr("event=jobs.recovered requeued=1"));
}

// A compile applies, and its artifact key covers, only the records of the model's own
// workloads: tuning another model leaves the tuned model's artifact a cache hit, and a model's
// first compile (its workloads not yet known to kilnd) is filed where the next one looks.
TEST_F(TuneServiceTest, RecordsOfAnotherModelLeaveAModelsArtifactKeyAlone) {
  if (!fs::exists(Model(kMlp)) || !fs::exists(Model(kLenet))) GTEST_SKIP() << "models not found";
  Kilnd& kilnd = StartTuningKilnd();
  RunResult tune_mlp = Kiln({"tune", Model(kMlp), "--server", kilnd.address(), "--trials", "16"});
  ASSERT_EQ(tune_mlp.exit_code, 0) << Describe(tune_mlp);
  RunResult mlp = CompileJson(Model(kMlp), root_ + "/mlp.kiln");
  ASSERT_EQ(mlp.exit_code, 0) << Describe(mlp);
  RunResult inspect = Kiln({"inspect", "--kernels", root_ + "/mlp.kiln"});
  EXPECT_THAT(inspect.out, HasSubstr(" (record ")) << inspect.out;

  // lenet's first compile: kilnd does not know its workloads yet, so it is sent every mlp
  // record; the artifact is also filed under the key of lenet's own (no) records, which is the
  // untuned key, so the next compile and an untuned one hit it.
  RunResult lenet = CompileJson(Model(kLenet), root_ + "/lenet.kiln");
  ASSERT_EQ(lenet.exit_code, 0) << Describe(lenet);
  EXPECT_EQ(JsonField(lenet.out, "cache_hit"), "false");
  RunResult lenet_again = CompileJson(Model(kLenet), root_ + "/lenet2.kiln");
  EXPECT_EQ(JsonField(lenet_again.out, "cache_hit"), "true") << lenet_again.out;
  RunResult lenet_untuned = CompileJson(Model(kLenet), root_ + "/lenet3.kiln", {"--untuned"});
  EXPECT_EQ(JsonField(lenet_untuned.out, "cache_hit"), "true") << lenet_untuned.out;
  EXPECT_EQ(JsonField(lenet_untuned.out, "options_hash"), JsonField(lenet_again.out, "options_hash"));

  // Tuning lenet adds records of lenet's workloads only: mlp's artifact stays a hit.
  RunResult tune_lenet =
      Kiln({"tune", Model(kLenet), "--server", kilnd.address(), "--trials", "16"});
  ASSERT_EQ(tune_lenet.exit_code, 0) << Describe(tune_lenet);
  RunResult mlp_again = CompileJson(Model(kMlp), root_ + "/mlp2.kiln");
  ASSERT_EQ(mlp_again.exit_code, 0) << Describe(mlp_again);
  EXPECT_EQ(JsonField(mlp_again.out, "cache_hit"), "true") << mlp_again.out;
  EXPECT_EQ(JsonField(mlp_again.out, "options_hash"), JsonField(mlp.out, "options_hash"));
  RunResult lenet_tuned = CompileJson(Model(kLenet), root_ + "/lenet4.kiln");
  EXPECT_EQ(JsonField(lenet_tuned.out, "cache_hit"), "false") << "lenet's own records changed";
  RunResult check = Kiln({"check", kLenet, "--server", kilnd.address()});
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
}

// Transfer across similar hardware: records of the same target measured with another core
// count seed a tune's first round; they are measured again here and filed as TRANSFERRED,
// naming where they came from. The cost model is kept per hardware key: the second tune on a
// daemon starts warm.
TEST_F(TuneServiceTest, RecordsOfSimilarHardwareSeedTheSearchAndAreMeasuredAgain) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& first = StartTuningKilnd();
  RunResult tune = Kiln({"tune", Model(kMlp), "--server", first.address(), "--trials", "16"});
  ASSERT_EQ(tune.exit_code, 0) << Describe(tune);
  RunResult exported = Kiln({"records", "export", "--server", first.address()});
  ASSERT_EQ(exported.exit_code, 0) << Describe(exported);
  ASSERT_TRUE(first.Stop());
  // The same records as a 2-core worker of this CPU would have measured them.
  std::string lines = exported.out;
  size_t replaced = 0;
  for (size_t at = lines.find("|units=1|"); at != std::string::npos;
       at = lines.find("|units=1|", at)) {
    lines.replace(at, 9, "|units=2|");
    ++replaced;
  }
  ASSERT_GT(replaced, 0u) << exported.out;
  ASSERT_TRUE(WriteFile(root_ + "/two_cores.jsonl", lines));

  Kilnd second(root_ + "/second", {}, /*workers=*/1, /*measure_workers=*/1);
  ASSERT_TRUE(second.Start());
  RunResult imported =
      Kiln({"records", "import", root_ + "/two_cores.jsonl", "--server", second.address()});
  ASSERT_EQ(imported.exit_code, 0) << Describe(imported);
  RunResult seeded = Kiln({"tune", Model(kMlp), "--server", second.address(), "--trials", "16",
                           "--json"});
  ASSERT_EQ(seeded.exit_code, 0) << Describe(seeded);
  const std::string here = JsonField(seeded.out, "hardware_key");
  ASSERT_THAT(here, HasSubstr("|units=1|"));
  auto records = second.client().ListTuningRecords(here);
  ASSERT_TRUE(records.ok()) << records.status();
  int transferred = 0;
  for (const kiln::v1::TuningRecord& r : *records) {
    if (r.provenance() != kiln::v1::TuningRecord::TRANSFERRED) continue;
    ++transferred;
    EXPECT_THAT(r.source_hardware_key(), HasSubstr("|units=2|"));
    EXPECT_EQ(r.hardware_key(), here) << "measured again here";
  }
  EXPECT_GT(transferred, 0) << "no seed from the 2-core records was measured";
  // The imported records stay as they were, under their own key.
  auto theirs = second.client().ListTuningRecords(
      here.substr(0, here.find("|units=1|")) + "|units=2|" +
      here.substr(here.find("|units=1|") + 9));
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(theirs->size(), replaced);
  for (const kiln::v1::TuningRecord& r : *theirs) {
    EXPECT_EQ(r.provenance(), kiln::v1::TuningRecord::IMPORTED);
  }
  // The first tune trained this daemon's cost model for the hardware; the next starts warm.
  EXPECT_THAT(second.log(), HasSubstr("warm_model=false"));
  RunResult again = Kiln({"tune", Model(kMlp), "--server", second.address(), "--trials", "8"});
  ASSERT_EQ(again.exit_code, 0) << Describe(again);
  EXPECT_THAT(second.log(), HasSubstr("warm_model=true"));
  EXPECT_TRUE(second.Stop());
}

// A tune with no measure worker for its target fails with a clear error instead of waiting
// forever.
TEST_F(TuneServiceTest, NoMeasureWorkerIsAClearError) {
  if (!fs::exists(Model(kMlp))) GTEST_SKIP() << kMlp << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1, {"--tune-measure-worker-wait", "1s"});
  RunResult tune = Kiln({"tune", Model(kMlp), "--server", kilnd.address(), "--trials", "8"});
  EXPECT_EQ(tune.exit_code, 1) << Describe(tune);
  EXPECT_THAT(tune.err, HasSubstr("FAILED_PRECONDITION")) << Describe(tune);
  EXPECT_THAT(tune.err, HasSubstr("no measure worker for target cpu:")) << Describe(tune);
  EXPECT_THAT(tune.err, HasSubstr("--measure cpu")) << Describe(tune);
}

}  // namespace
}  // namespace kiln::testing
