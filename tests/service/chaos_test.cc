// Chaos (issue #10, item 7): kilnd is killed with SIGKILL during an upload, a compile, a fetch
// and a tune, then restarted. Every accepted job ends succeeded or failed with a reason; the
// store is consistent (PRAGMA integrity_check is ok, every blob file hashes to its name and has
// its row, no temp file is left, every row has its file); a client retry succeeds.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "server/cache/sqlite_db.h"
#include "tests/service/service_fixture.h"

namespace kiln::testing {
namespace {

bool Terminal(const v1::JobEvent& e) {
  return e.state() == v1::SUCCEEDED || e.state() == v1::FAILED || e.state() == v1::CANCELLED;
}

class ChaosTest : public ServiceTest {
 protected:
  /// SIGKILL, then a restart on the same data dir.
  void KillAndRestart() {
    kilnd_->process().Signal(SIGKILL);
    ASSERT_TRUE(kilnd_->process().Wait(30s).has_value());
    ASSERT_TRUE(kilnd_->Start());
  }

  /// The store after a crash and a restart: nothing lost, nothing half-written.
  void ExpectStoreConsistent() {
    const std::string data = kilnd_->data_dir();
    absl::StatusOr<cache::Database> db = cache::Database::Open(data + "/kiln.db");
    ASSERT_TRUE(db.ok()) << db.status();
    auto integrity = cache::Statement::Prepare(*db, "PRAGMA integrity_check");
    ASSERT_TRUE(integrity.ok());
    ASSERT_TRUE(*integrity->Step());
    EXPECT_EQ(integrity->ColumnText(0), "ok");
    std::set<std::string> rows;
    auto blobs = cache::Statement::Prepare(*db, "SELECT digest FROM blobs");
    ASSERT_TRUE(blobs.ok());
    while (*blobs->Step()) rows.insert(blobs->ColumnText(0));
    std::set<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(data + "/blobs")) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string();
      EXPECT_NE(e.path().parent_path().filename(), "tmp") << "temp file left: " << e.path();
      EXPECT_EQ(Sha256Hex(ReadFile(e.path().string())), name) << "half-written " << e.path();
      files.insert(name);
    }
    EXPECT_EQ(rows, files) << "rows and blob files differ";
    auto dangling = cache::Statement::Prepare(
        *db,
        "SELECT COUNT(*) FROM artifacts WHERE artifact_digest NOT IN (SELECT digest FROM "
        "blobs)");
    ASSERT_TRUE(dangling.ok());
    ASSERT_TRUE(*dangling->Step());
    EXPECT_EQ(dangling->ColumnText(0), "0");
  }

  v1::JobEvent WatchToEnd(const std::string& job) {
    v1::JobEvent last;
    absl::StatusOr<v1::JobEvent> end = kilnd_->client().WatchJob(job, [&](const v1::JobEvent& e) {
      last = e;
      return !Terminal(e);
    });
    EXPECT_TRUE(end.ok()) << end.status();
    return last;
  }

  std::string Submit(const std::string& model_bytes) {
    v1::SubmitJobRequest r;
    *r.mutable_compile()->mutable_model_digest() = client::DigestOf(model_bytes);
    r.mutable_compile()->set_target("host");
    absl::StatusOr<v1::SubmitJobResponse> submitted = kilnd_->client().SubmitJob(r);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted.ok() ? submitted->job_id() : "";
  }
};

TEST_F(ChaosTest, KillDuringUploadCompileFetchAndTune) {
  if (!fs::exists(Model(kResnet)) || !fs::exists(Model(kMlp))) GTEST_SKIP() << "models missing";
  Kilnd& kilnd = StartKilnd(/*workers=*/1, {}, /*measure_workers=*/1);
  const std::string resnet = ReadFile(Model(kResnet));
  const std::string mlp = ReadFile(Model(kMlp));

  // 1. An upload (47 MB) cut off in the middle.
  {
    std::atomic<bool> started{false};
    std::thread upload([&] {
      client::RemoteClient c(kilnd.address(), 60'000);
      started = true;
      (void)c.UploadModel(resnet, client::DigestOf(resnet));
    });
    while (!started) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(150ms);
    KillAndRestart();
    upload.join();
    ExpectStoreConsistent();
    // The retry uploads it whole.
    ASSERT_TRUE(kilnd.client().EnsureModel(resnet, client::DigestOf(resnet)).ok());
  }

  // 2. A compile killed while it runs: recovered, it ends (succeeded, or failed with a reason).
  std::string job = Submit(resnet);
  ASSERT_FALSE(job.empty());
  ASSERT_TRUE(Eventually(
      [&] {
        auto jobs = kilnd.client().ListJobs(v1::RUNNING, 10);
        return jobs.ok() && jobs->jobs_size() == 1;
      },
      60s));
  KillAndRestart();
  v1::JobEvent end = WatchToEnd(job);
  EXPECT_TRUE(end.state() == v1::SUCCEEDED || (end.state() == v1::FAILED && !end.message().empty()))
      << end.DebugString();
  ExpectStoreConsistent();
  absl::StatusOr<client::RemoteCompileResult> compiled =
      kilnd.client().CompileModel(resnet, client::RemoteCompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status();

  // 3. A fetch cut off in the middle; the retry gets the whole, verified artifact.
  {
    std::thread fetch([&] {
      client::RemoteClient c(kilnd.address(), 60'000);
      (void)c.FetchArtifact(compiled->response.artifact_digest());
    });
    std::this_thread::sleep_for(30ms);
    KillAndRestart();
    fetch.join();
    ExpectStoreConsistent();
    absl::StatusOr<std::string> again =
        kilnd.client().FetchArtifact(compiled->response.artifact_digest());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, compiled->artifact);
  }

  // 4. A tune killed once it has filed records: recovered, it runs to its end.
  ASSERT_TRUE(kilnd.client().EnsureModel(mlp, client::DigestOf(mlp)).ok());
  v1::SubmitJobRequest tune;
  *tune.mutable_tune()->mutable_model_digest() = client::DigestOf(mlp);
  tune.mutable_tune()->set_target("host");
  tune.mutable_tune()->set_trials(64);
  tune.mutable_tune()->set_seed(5);
  absl::StatusOr<v1::SubmitJobResponse> tuning = kilnd.client().SubmitJob(tune);
  ASSERT_TRUE(tuning.ok()) << tuning.status();
  (void)kilnd.client().WatchJob(tuning->job_id(), [](const v1::JobEvent& e) {
    return !(Terminal(e) || (e.has_tune_progress() && e.tune_progress().records_written() > 0));
  });
  KillAndRestart();
  v1::JobEvent tuned = WatchToEnd(tuning->job_id());
  EXPECT_TRUE(tuned.state() == v1::SUCCEEDED ||
              (tuned.state() == v1::FAILED && !tuned.message().empty()))
      << tuned.DebugString();
  ExpectStoreConsistent();
  // Every job kilnd accepted has ended, none is stuck.
  auto live = kilnd.client().ListJobs(v1::RUNNING, 100, {"all"});
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->jobs_size(), 0);
  auto queued = kilnd.client().ListJobs(v1::QUEUED, 100, {"all"});
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(queued->jobs_size(), 0);
}

// A full disk (a small tmpfs as the data dir): an upload and a compile's artifact fail with a
// clean RESOURCE_EXHAUSTED (no retry loop, no partial file or row), cache hits are still
// served, kilnd restarts on the full disk, and it recovers once space returns.
TEST_F(ChaosTest, FullDiskLeavesTheStoreConsistent) {
  if (!fs::exists(Model(kLenet)) || !fs::exists(Model(kMlp))) GTEST_SKIP() << "models missing";
  // The data dir is the small disk; kilnd's log stays beside it, on the ordinary one (a log
  // that fills the disk would starve the port file kilnd writes at start).
  const std::string kilnd_root = root_ + "/small-disk-kilnd";
  const std::string mount_point = kilnd_root + "/data";
  fs::create_directories(mount_point);
  RunResult mounted =
      RunCommand({"/bin/mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", mount_point}, root_, 30s);
  if (mounted.exit_code != 0) GTEST_SKIP() << "cannot mount a tmpfs here: " << mounted.err;
  struct Unmount {
    std::string path, scratch;
    ~Unmount() { RunCommand({"/bin/umount", "-l", path}, scratch, 30s); }
  } unmount{mount_point, root_};
  kilnd_ = std::make_unique<Kilnd>(kilnd_root, std::vector<std::string>{}, /*workers=*/1);
  ASSERT_TRUE(kilnd_->Start());
  Kilnd& kilnd = *kilnd_;
  const std::string lenet = ReadFile(Model(kLenet));
  const std::string mlp = ReadFile(Model(kMlp));
  absl::StatusOr<client::RemoteCompileResult> hit =
      kilnd.client().CompileModel(lenet, client::RemoteCompileOptions{});
  ASSERT_TRUE(hit.ok()) << hit.status();
  ASSERT_TRUE(kilnd.client().EnsureModel(mlp, client::DigestOf(mlp)).ok());
  // Fill the disk, leaving a little room for SQLite and the port file.
  const std::string filler = mount_point + "/filler";
  {
    const fs::space_info space = fs::space(mount_point);
    std::ofstream out(filler, std::ios::binary);
    std::string block(1 << 20, 'f');
    for (uintmax_t left = space.available; left > (uintmax_t{1} << 20); left -= block.size()) {
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
  }
  // An upload that does not fit: a clean error.
  std::string big(4 << 20, 'x');
  absl::Status upload = kilnd.client().UploadModel(big, client::DigestOf(big)).status();
  EXPECT_EQ(upload.code(), absl::StatusCode::kResourceExhausted) << upload;
  // A compile whose artifact cannot be stored fails once, with the reason (no requeue loop).
  absl::Status compile = kilnd.client().CompileModel(mlp, client::RemoteCompileOptions{}).status();
  EXPECT_FALSE(compile.ok());
  EXPECT_THAT(kilnd.log(), ::testing::Not(::testing::HasSubstr("refused:")));
  auto jobs = kilnd.client().ListJobs(v1::JOB_STATE_UNSPECIFIED, 100);
  ASSERT_TRUE(jobs.ok());
  for (const v1::Job& j : jobs->jobs()) EXPECT_LE(j.attempts(), 2) << j.DebugString();
  // Hits are served from the full disk.
  absl::StatusOr<client::RemoteCompileResult> again =
      kilnd.client().CompileModel(lenet, client::RemoteCompileOptions{});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->response.cache_hit());
  EXPECT_EQ(again->artifact, hit->artifact);
  ExpectStoreConsistent();
  // kilnd restarts on the full disk.
  ASSERT_TRUE(kilnd.Stop());
  ASSERT_TRUE(kilnd.Start());
  ExpectStoreConsistent();
  // Space returns: the compile succeeds.
  fs::remove(filler);
  absl::StatusOr<client::RemoteCompileResult> recovered =
      kilnd.client().CompileModel(mlp, client::RemoteCompileOptions{});
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  ExpectStoreConsistent();
  ASSERT_TRUE(kilnd.Stop());
  kilnd_.reset();
}

}  // namespace
}  // namespace kiln::testing
