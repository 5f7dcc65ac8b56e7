// Tests for SqliteStorage through the Storage interface: blobs, uploads, corruption handling,
// artifacts, LRU eviction with pinning, jobs, tuning records, the data-dir lock (in-process and
// across fork), schema versioning, restart persistence and concurrent use.
#include "server/cache/storage.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "compiler_core/support/sha256.h"
#include "server/cache/schema.h"
#include "server/cache/sqlite_db.h"
#include "server/cache/test_util.h"

namespace kiln::cache {
namespace {

using ::kiln::cache::testing::FlipByte;
using ::kiln::cache::testing::ListFiles;
using ::kiln::cache::testing::ReadFile;
using ::kiln::cache::testing::TempDir;
using ::kiln::cache::testing::WriteFile;

constexpr char kHello[] = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

class StorageTest : public ::testing::Test {
 protected:
  StorageOptions Options(int64_t max_cache_bytes = 0) {
    StorageOptions options;
    options.data_dir = dir_.path() + "/data";
    options.max_cache_bytes = max_cache_bytes;
    options.now_ms = [this] { return now_.load(); };
    return options;
  }
  std::unique_ptr<Storage> Open(int64_t max_cache_bytes = 0) {
    absl::StatusOr<std::unique_ptr<Storage>> storage = OpenSqliteStorage(Options(max_cache_bytes));
    EXPECT_TRUE(storage.ok()) << storage.status();
    return storage.ok() ? std::move(*storage) : nullptr;
  }
  std::string BlobPath(const std::string& digest) {
    return dir_.path() + "/data/blobs/" + digest.substr(0, 2) + "/" + digest;
  }
  // Blob files (and leftover temp files) under data/blobs.
  std::vector<std::string> BlobFiles() { return ListFiles(dir_.path() + "/data/blobs"); }

  TempDir dir_;
  std::atomic<int64_t> now_{1000};
};

ArtifactKey Key(const std::string& graph) { return ArtifactKey{graph, "x86_64-znver4", "0.1", "o1"}; }

TEST_F(StorageTest, PutAndGetBlob) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  absl::StatusOr<std::string> digest = storage->PutBlob(BlobKind::kModel, "hello");
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, kHello);
  EXPECT_EQ(*storage->GetBlob(kHello), "hello");
  EXPECT_EQ(*storage->HasBlob(kHello), true);
  EXPECT_EQ(*storage->GetBlobSize(kHello), 5);
  EXPECT_EQ(ReadFile(BlobPath(kHello)), "hello");
  // Idempotent.
  EXPECT_EQ(*storage->PutBlob(BlobKind::kModel, "hello"), kHello);
  EXPECT_EQ(BlobFiles(), std::vector<std::string>{std::string("2c/") + kHello});
  StorageStats stats = *storage->Stats();
  EXPECT_EQ(stats.blob_count, 1);
  EXPECT_EQ(stats.blob_bytes, 5);
  EXPECT_EQ(stats.model_count, 1);

  std::string absent(64, '0');
  EXPECT_EQ(storage->GetBlob(absent).status(),
            absl::NotFoundError("blob " + absent + " not found"));
  EXPECT_EQ(storage->GetBlobSize(absent).status(),
            absl::NotFoundError("blob " + absent + " not found"));
  EXPECT_EQ(*storage->HasBlob(absent), false);
  EXPECT_EQ(storage->HasBlob("xyz").status(),
            absl::InvalidArgumentError(
                "invalid digest 'xyz': expected 64 lowercase hex characters"));
  // An empty blob is a blob.
  EXPECT_EQ(*storage->PutBlob(BlobKind::kModel, ""), Sha256Hex(""));
  EXPECT_EQ(*storage->GetBlob(Sha256Hex("")), "");
}

TEST_F(StorageTest, DigestMismatchLeavesNothingBehind) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  std::string wrong(64, 'f');
  EXPECT_EQ(storage->PutBlobExpecting(BlobKind::kModel, "hello", wrong).status(),
            absl::InvalidArgumentError("digest mismatch: expected " + wrong + ", got " + kHello));
  EXPECT_EQ(*storage->HasBlob(kHello), false);
  EXPECT_EQ(*storage->HasBlob(wrong), false);
  EXPECT_EQ(BlobFiles(), std::vector<std::string>{});
  EXPECT_EQ(storage->Stats()->blob_count, 0);
  EXPECT_EQ(*storage->PutBlobExpecting(BlobKind::kModel, "hello", kHello), kHello);
}

TEST_F(StorageTest, ChunkedUpload) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  std::string model(100000, '\0');
  for (size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>(i * 7);
  std::string digest = Sha256Hex(model);
  {
    absl::StatusOr<std::unique_ptr<BlobUpload>> upload = storage->BeginBlobUpload(BlobKind::kModel);
    ASSERT_TRUE(upload.ok()) << upload.status();
    for (size_t off = 0; off < model.size(); off += 30000) {
      ASSERT_TRUE((*upload)->Append(std::string_view(model).substr(off, 30000)).ok());
    }
    EXPECT_EQ((*upload)->size_bytes(), 100000);
    EXPECT_EQ(*(*upload)->Commit(digest), digest);
  }
  EXPECT_EQ(*storage->GetBlob(digest), model);
  EXPECT_EQ(storage->Stats()->blob_bytes, 100000);

  // Mismatch: nothing stored, temp removed.
  {
    absl::StatusOr<std::unique_ptr<BlobUpload>> upload = storage->BeginBlobUpload(BlobKind::kModel);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->Append("hellO").ok());
    EXPECT_EQ((*upload)->Commit(kHello).status(),
              absl::InvalidArgumentError(std::string("digest mismatch: expected ") + kHello +
                                         ", got " + Sha256Hex("hellO")));
  }
  // Abandoned: temp removed.
  {
    absl::StatusOr<std::unique_ptr<BlobUpload>> upload = storage->BeginBlobUpload(BlobKind::kModel);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->Append("partial").ok());
    EXPECT_EQ(BlobFiles().size(), 2u);
  }
  EXPECT_EQ(BlobFiles(), std::vector<std::string>{digest.substr(0, 2) + "/" + digest});
  EXPECT_EQ(storage->Stats()->blob_count, 1);
}

TEST_F(StorageTest, FindMissing) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  std::string a = *storage->PutBlob(BlobKind::kModel, "a");
  std::string b = Sha256Hex("b");
  std::string c = Sha256Hex("c");
  EXPECT_EQ(*storage->FindMissing({a, b, a, c, b}), (std::vector<std::string>{b, c}));
  EXPECT_EQ(*storage->FindMissing({}), std::vector<std::string>{});
  EXPECT_EQ(storage->FindMissing({a, "nope"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StorageTest, Artifacts) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(*storage->LookupArtifact(Key("g1")), std::nullopt);
  now_ = 2000;
  absl::StatusOr<ArtifactEntry> put = storage->PutArtifact(Key("g1"), "code-v1", 42);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->artifact_digest, Sha256Hex("code-v1"));
  EXPECT_EQ(put->size_bytes, 7);
  EXPECT_EQ(put->compile_ms, 42);
  EXPECT_EQ(put->created_ms, 2000);
  std::optional<ArtifactEntry> hit = *storage->LookupArtifact(Key("g1"));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->artifact_digest, Sha256Hex("code-v1"));
  EXPECT_EQ(hit->size_bytes, 7);
  EXPECT_EQ(hit->compile_ms, 42);
  EXPECT_EQ(hit->created_ms, 2000);
  EXPECT_EQ(*storage->GetBlob(hit->artifact_digest), "code-v1");
  // Any key part differing is a miss.
  ArtifactKey other = Key("g1");
  other.options_hash = "o2";
  EXPECT_EQ(*storage->LookupArtifact(other), std::nullopt);

  // Replacing an entry.
  now_ = 3000;
  ASSERT_TRUE(storage->PutArtifact(Key("g1"), "code-v2", 50).ok());
  hit = *storage->LookupArtifact(Key("g1"));
  EXPECT_EQ(hit->artifact_digest, Sha256Hex("code-v2"));
  EXPECT_EQ(hit->created_ms, 3000);
  EXPECT_EQ(storage->Stats()->artifact_count, 1);

  // Linking an uploaded blob.
  std::string missing = Sha256Hex("not uploaded");
  EXPECT_EQ(storage->LinkArtifact(Key("g2"), missing, 5).status(),
            absl::NotFoundError("blob " + missing + " not found"));
  std::string uploaded = *storage->PutBlob(BlobKind::kArtifact, "worker-made");
  absl::StatusOr<ArtifactEntry> linked = storage->LinkArtifact(Key("g2"), uploaded, 9);
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_EQ(linked->size_bytes, 11);
  EXPECT_EQ(storage->LookupArtifact(Key("g2"))->value().artifact_digest, uploaded);
  EXPECT_EQ(storage->Stats()->artifact_count, 2);
}

TEST_F(StorageTest, CorruptedBlobIsNeverServedAndItsArtifactsAreDropped) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  ArtifactEntry entry = *storage->PutArtifact(Key("g1"), "artifact bytes", 10);
  ASSERT_TRUE(storage->LinkArtifact(Key("g2"), entry.artifact_digest, 11).ok());
  std::string path = BlobPath(entry.artifact_digest);
  FlipByte(path, 3);
  std::string corrupted = Sha256Hex(ReadFile(path));
  EXPECT_EQ(storage->GetBlob(entry.artifact_digest).status(),
            absl::DataLossError("blob " + entry.artifact_digest +
                                " is corrupted (content hashes to " + corrupted + "); removed"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(*storage->HasBlob(entry.artifact_digest), false);
  EXPECT_EQ(*storage->LookupArtifact(Key("g1")), std::nullopt);
  EXPECT_EQ(*storage->LookupArtifact(Key("g2")), std::nullopt);
  StorageStats stats = *storage->Stats();
  EXPECT_EQ(stats.blob_count, 0);
  EXPECT_EQ(stats.artifact_count, 0);
  // The rebuild stores it again.
  ASSERT_TRUE(storage->PutArtifact(Key("g1"), "artifact bytes", 12).ok());
  EXPECT_EQ(*storage->GetBlob(entry.artifact_digest), "artifact bytes");
}

TEST_F(StorageTest, BlobFileMissingFromDiskIsDataLoss) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  ArtifactEntry entry = *storage->PutArtifact(Key("g1"), "artifact bytes", 10);
  std::filesystem::remove(BlobPath(entry.artifact_digest));
  EXPECT_EQ(storage->GetBlob(entry.artifact_digest).status(),
            absl::DataLossError("blob " + entry.artifact_digest +
                                " is missing from disk; its record was removed"));
  EXPECT_EQ(*storage->LookupArtifact(Key("g1")), std::nullopt);
}

// Blobs of exactly 10 bytes each, so the expected survivors are exact.
std::string Ten(char c) { return std::string(10, c); }

TEST_F(StorageTest, LruEvictionOrderAndPinnedModels) {
  auto storage = Open(/*max_cache_bytes=*/30);
  ASSERT_NE(storage, nullptr);
  auto has = [&](const std::string& digest) { return *storage->HasBlob(digest); };  // no touch
  now_ = 1;
  std::string a = *storage->PutBlob(BlobKind::kModel, Ten('a'));
  now_ = 2;
  ArtifactEntry b = *storage->PutArtifact(Key("gb"), Ten('b'), 1);
  now_ = 3;
  std::string c = *storage->PutBlob(BlobKind::kModel, Ten('c'));
  now_ = 4;
  ASSERT_TRUE(storage->GetBlob(a).ok());  // a is now more recent than b
  EXPECT_EQ(storage->Stats()->blob_bytes, 30);
  EXPECT_EQ(storage->Stats()->evicted_blobs, 0);

  // Access times a=4 b=2 c=3: putting d evicts b, with its artifact row and file.
  now_ = 5;
  std::string d = *storage->PutBlob(BlobKind::kModel, Ten('d'));
  EXPECT_TRUE(has(a) && has(c) && has(d));
  EXPECT_FALSE(has(b.artifact_digest));
  EXPECT_EQ(*storage->LookupArtifact(Key("gb")), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(BlobPath(b.artifact_digest)));

  // A queued job pins c (the oldest, 3): putting e evicts a (4) instead.
  JobRecord job;
  job.id = "j1";
  job.model_digest = c;
  ASSERT_TRUE(storage->CreateJob(job).ok());
  now_ = 7;
  std::string e = *storage->PutBlob(BlobKind::kModel, Ten('e'));
  EXPECT_FALSE(has(a));
  EXPECT_TRUE(has(c) && has(d) && has(e));

  // Running pins too: putting f evicts d (5).
  JobUpdate update;
  update.state = JobState::kRunning;
  ASSERT_TRUE(storage->UpdateJob("j1", update).ok());
  now_ = 8;
  std::string f = *storage->PutBlob(BlobKind::kModel, Ten('f'));
  EXPECT_FALSE(has(d));
  EXPECT_TRUE(has(c) && has(e) && has(f));

  // Once the job is done, c is evictable again.
  update.state = JobState::kSucceeded;
  ASSERT_TRUE(storage->UpdateJob("j1", update).ok());
  now_ = 9;
  std::string g = *storage->PutBlob(BlobKind::kModel, Ten('g'));
  EXPECT_FALSE(has(c));
  EXPECT_TRUE(has(e) && has(f) && has(g));
  StorageStats stats = *storage->Stats();
  EXPECT_EQ(stats.blob_count, 3);
  EXPECT_EQ(stats.blob_bytes, 30);
  EXPECT_EQ(stats.evicted_blobs, 4);
  EXPECT_EQ(stats.evicted_bytes, 40);
  std::vector<std::string> files = {e.substr(0, 2) + "/" + e, f.substr(0, 2) + "/" + f,
                                    g.substr(0, 2) + "/" + g};
  std::sort(files.begin(), files.end());
  EXPECT_EQ(BlobFiles(), files);
}

TEST_F(StorageTest, LruEvictionExactSurvivorsWithDistinctTimes) {
  auto storage = Open(/*max_cache_bytes=*/40);
  ASSERT_NE(storage, nullptr);
  std::vector<std::string> d;
  for (int i = 0; i < 4; ++i) {
    now_ = 10 + i;
    d.push_back(*storage->PutBlob(BlobKind::kModel, Ten(static_cast<char>('0' + i))));
  }
  // Access order now: d1 (20), d3 (21), d0 (22); d2 stays at 12.
  now_ = 20;
  ASSERT_TRUE(storage->GetBlob(d[1]).ok());
  now_ = 21;
  ASSERT_TRUE(storage->LookupArtifact(Key("none")).ok());  // a miss touches nothing
  ASSERT_TRUE(storage->GetBlob(d[3]).ok());
  now_ = 22;
  ASSERT_TRUE(storage->GetBlob(d[0]).ok());
  // A 25-byte put must free 25 bytes: d2 (12) then d1 (20) then d3 (21) → 3 blobs out.
  now_ = 30;
  std::string big = *storage->PutBlob(BlobKind::kArtifact, std::string(25, 'z'));
  EXPECT_EQ(*storage->FindMissing({d[0], d[1], d[2], d[3], big}),
            (std::vector<std::string>{d[1], d[2], d[3]}));
  EXPECT_EQ(storage->Stats()->blob_bytes, 35);
  // A blob larger than the whole cache is kept (it was just written) and evicts the rest.
  now_ = 40;
  std::string huge = *storage->PutBlob(BlobKind::kArtifact, std::string(50, 'h'));
  EXPECT_EQ(*storage->FindMissing({d[0], big, huge}), (std::vector<std::string>{d[0], big}));
  EXPECT_EQ(BlobFiles(), std::vector<std::string>{huge.substr(0, 2) + "/" + huge});
}

TEST_F(StorageTest, Jobs) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  JobRecord job;
  job.id = "j1";
  job.kind = JobKind::kCompile;
  job.priority = 5;
  job.model_digest = kHello;
  job.request = std::string("req\0uest", 8);
  now_ = 100;
  absl::StatusOr<JobRecord> created = storage->CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->id, "j1");
  EXPECT_EQ(created->state, JobState::kQueued);
  EXPECT_EQ(created->request, std::string("req\0uest", 8));
  EXPECT_EQ(created->result, "");
  EXPECT_TRUE(created->error.ok());
  EXPECT_EQ(created->created_ms, 100);
  EXPECT_EQ(created->updated_ms, 100);
  EXPECT_EQ(storage->CreateJob(job).status(), absl::AlreadyExistsError("job 'j1' already exists"));
  JobRecord unnamed;
  EXPECT_EQ(storage->CreateJob(unnamed).status(), absl::InvalidArgumentError("job id is empty"));

  now_ = 110;
  JobUpdate running;
  running.state = JobState::kRunning;
  running.worker = "worker-1";
  running.attempts = 1;
  absl::StatusOr<JobRecord> updated = storage->UpdateJob("j1", running);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->state, JobState::kRunning);
  EXPECT_EQ(updated->worker, "worker-1");
  EXPECT_EQ(updated->attempts, 1);
  EXPECT_EQ(updated->created_ms, 100);
  EXPECT_EQ(updated->updated_ms, 110);

  now_ = 120;
  JobUpdate failed;
  failed.state = JobState::kFailed;
  failed.error = absl::UnavailableError("worker 'worker-1' died");
  ASSERT_TRUE(storage->UpdateJob("j1", failed).ok());
  JobRecord got = *storage->GetJob("j1");
  EXPECT_EQ(got.state, JobState::kFailed);
  EXPECT_EQ(got.error, absl::UnavailableError("worker 'worker-1' died"));
  EXPECT_EQ(got.worker, "worker-1");  // unset fields keep their values
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.model_digest, kHello);
  EXPECT_EQ(got.priority, 5);
  EXPECT_EQ(got.updated_ms, 120);

  JobUpdate succeeded;
  succeeded.state = JobState::kSucceeded;
  succeeded.result = "artifact-ref";
  succeeded.error = absl::OkStatus();
  got = *storage->UpdateJob("j1", succeeded);
  EXPECT_EQ(got.result, "artifact-ref");
  EXPECT_TRUE(got.error.ok());
  EXPECT_EQ(got.error.message(), "");

  EXPECT_EQ(storage->GetJob("nope").status(), absl::NotFoundError("job 'nope' not found"));
  EXPECT_EQ(storage->UpdateJob("nope", running).status(),
            absl::NotFoundError("job 'nope' not found"));
}

TEST_F(StorageTest, ListJobsAndRecoveryOrder) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  auto create = [&](const std::string& id, int priority, int64_t at, JobKind kind) {
    now_ = at;
    JobRecord job;
    job.id = id;
    job.priority = priority;
    job.kind = kind;
    ASSERT_TRUE(storage->CreateJob(job).ok());
  };
  create("a", 0, 10, JobKind::kTune);
  create("b", 9, 20, JobKind::kCompile);
  create("c", 0, 30, JobKind::kCompile);
  create("d", 9, 40, JobKind::kCompile);
  create("e", 1, 50, JobKind::kCompile);
  JobUpdate running;
  running.state = JobState::kRunning;
  ASSERT_TRUE(storage->UpdateJob("e", running).ok());

  auto ids = [](const std::vector<JobRecord>& jobs) {
    std::vector<std::string> out;
    for (const JobRecord& j : jobs) out.push_back(j.id);
    return out;
  };
  EXPECT_EQ(ids(*storage->JobsInState(JobState::kQueued)),
            (std::vector<std::string>{"b", "d", "a", "c"}));
  EXPECT_EQ(ids(*storage->JobsInState(JobState::kRunning)), std::vector<std::string>{"e"});
  EXPECT_EQ(ids(*storage->ListJobs({})), (std::vector<std::string>{"e", "d", "c", "b", "a"}));
  EXPECT_EQ(ids(*storage->ListJobs({JobState::kQueued, 2})), (std::vector<std::string>{"d", "c"}));
  EXPECT_EQ(ids(*storage->ListJobs({JobState::kFailed, 0})), std::vector<std::string>{});
  EXPECT_EQ(ids(*storage->ListJobs({std::nullopt, 0, {JobKind::kTune}})),
            std::vector<std::string>{"a"});
  EXPECT_EQ(ids(*storage->ListJobs({std::nullopt, 2, {JobKind::kTune, JobKind::kCompile}})),
            (std::vector<std::string>{"e", "d"}));
  EXPECT_EQ(ids(*storage->ListJobs({std::nullopt, 0, {JobKind::kMeasure}})),
            std::vector<std::string>{});
  EXPECT_EQ(storage->GetJob("a")->kind, JobKind::kTune);
  EXPECT_EQ(storage->ListJobs({std::nullopt, -1}).status(),
            absl::InvalidArgumentError("job list limit is -1, expected >= 0"));

  StorageStats stats = *storage->Stats();
  EXPECT_EQ(stats.jobs_by_state,
            (std::map<JobState, int64_t>{{JobState::kQueued, 4},
                                         {JobState::kRunning, 1},
                                         {JobState::kSucceeded, 0},
                                         {JobState::kFailed, 0},
                                         {JobState::kCancelled, 0}}));
}

v1::TuningRecord Record(char workload, const std::string& hw, const std::string& schedule,
                        double median_ms) {
  v1::TuningRecord r;
  r.set_format_version(1);
  r.set_workload_key(std::string(64, workload));
  r.set_hardware_key(hw);
  r.set_schedule(schedule);
  r.set_median_ms(median_ms);
  r.set_p10_ms(median_ms);
  r.set_p90_ms(median_ms);
  r.set_repeats(3);
  r.set_compiler_version("kiln-test");
  r.set_measured_unix_ms(100);
  r.set_provenance(v1::TuningRecord::MEASURED);
  return r;
}

constexpr char kZen[] = "cpu:znver4|device=EPYC|units=2|cache=32768";
constexpr char kH200[] = "cuda:sm_90|device=NVIDIA H200|units=132|cache=262144,52428800";

TEST_F(StorageTest, TuningRecords) {
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(*storage->BestTuningRecord(std::string(64, 'a'), kZen), std::nullopt);
  ASSERT_TRUE(storage->PutTuningRecords({Record('a', kZen, "unroll(i)", 3.5),
                                         Record('a', kZen, "vectorize(j)", 2.25),
                                         Record('a', kH200, "unroll(i)", 0.5)})
                  .ok());
  std::optional<v1::TuningRecord> best = *storage->BestTuningRecord(std::string(64, 'a'), kZen);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule(), "vectorize(j)");
  EXPECT_EQ(best->median_ms(), 2.25);
  EXPECT_EQ(best->hardware_key(), kZen);
  // Re-measuring replaces; ties go to the lower schedule string.
  ASSERT_TRUE(storage->PutTuningRecords({Record('a', kZen, "unroll(i)", 2.25)}).ok());
  EXPECT_EQ((*storage->BestTuningRecord(std::string(64, 'a'), kZen))->schedule(), "unroll(i)");
  ASSERT_TRUE(storage->PutTuningRecords({Record('a', kZen, "vectorize(j)", 1.0)}).ok());
  EXPECT_EQ((*storage->BestTuningRecord(std::string(64, 'a'), kZen))->schedule(),
            "vectorize(j)");
  EXPECT_EQ(storage->Stats()->tuning_record_count, 3);
  EXPECT_EQ(storage->ListTuningRecords(kZen)->size(), 2u);
  EXPECT_EQ(storage->ListTuningRecords("")->size(), 3u);
  EXPECT_EQ(*storage->TuningHardwareKeys(),
            (std::vector<std::pair<std::string, int64_t>>{{kZen, 2}, {kH200, 1}}));
  std::vector<v1::TuningRecord> best_zen = *storage->BestTuningRecords(kZen);
  ASSERT_EQ(best_zen.size(), 1u);
  EXPECT_EQ(best_zen[0].schedule(), "vectorize(j)");
  // A confirmed record (re-measured with the default) wins over a faster unconfirmed one.
  v1::TuningRecord confirmed = Record('a', kZen, "unroll(i)", 1.5);
  confirmed.set_confirmed(true);
  ASSERT_TRUE(storage->PutTuningRecords({confirmed}).ok());
  EXPECT_EQ((*storage->BestTuningRecord(std::string(64, 'a'), kZen))->schedule(), "unroll(i)");
  best_zen = *storage->BestTuningRecords(kZen);
  ASSERT_EQ(best_zen.size(), 1u);
  EXPECT_EQ(best_zen[0].schedule(), "unroll(i)");
  EXPECT_TRUE(best_zen[0].confirmed());
  // A batch with one bad record stores nothing.
  v1::TuningRecord bad = Record('b', kZen, "unroll(i)", 1);
  bad.set_repeats(0);
  EXPECT_EQ(storage->PutTuningRecords({Record('b', kZen, "vectorize(j)", 1), bad}),
            absl::InvalidArgumentError("record 1: repeats 0 must be at least 1"));
  EXPECT_EQ(storage->Stats()->tuning_record_count, 3);
  // Cost models per hardware key.
  EXPECT_EQ(*storage->GetCostModel(kZen), std::nullopt);
  ASSERT_TRUE(storage->PutCostModel(kZen, std::string("model\0bytes", 11)).ok());
  ASSERT_TRUE(storage->PutCostModel(kZen, std::string("newer\0bytes", 11)).ok());
  EXPECT_EQ(**storage->GetCostModel(kZen), std::string("newer\0bytes", 11));
  EXPECT_EQ(*storage->GetCostModel(kH200), std::nullopt);
  // The workloads of a model, per graph, target and kernel-shaping options; sorted, distinct.
  EXPECT_EQ(*storage->GetModelWorkloads("g", "t", "o"), std::nullopt);
  ASSERT_TRUE(storage->PutModelWorkloads("g", "t", "o", {"w2", "w1", "w2"}).ok());
  EXPECT_EQ(**storage->GetModelWorkloads("g", "t", "o"), (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(*storage->GetModelWorkloads("g", "t", "other"), std::nullopt);
  ASSERT_TRUE(storage->PutModelWorkloads("g", "t", "o", {}).ok());
  EXPECT_EQ(**storage->GetModelWorkloads("g", "t", "o"), std::vector<std::string>{});
}

TEST_F(StorageTest, SecondOpenInSameProcessIsRefusedUntilClose) {
  auto first = Open();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ReadFile(dir_.path() + "/data/LOCK"), std::to_string(getpid()) + "\n");
  absl::StatusOr<std::unique_ptr<Storage>> second = OpenSqliteStorage(Options());
  EXPECT_EQ(second.status(),
            absl::FailedPreconditionError("data dir '" + dir_.path() +
                                          "/data' is in use by another kilnd (pid " +
                                          std::to_string(getpid()) + ")"));
  first.reset();
  second = OpenSqliteStorage(Options());
  EXPECT_TRUE(second.ok()) << second.status();
}

// Runs `body` in a forked child and returns its exit code. The child reports a message through
// `message` (a pipe), so the parent can compare exact text.
int RunInChild(const std::function<std::string()>& body, std::string* message) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string text = body();
    ssize_t written = write(fds[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 2);
  }
  close(fds[1]);
  message->clear();
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) message->append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(StorageTest, SecondProcessIsRefusedUntilFirstCloses) {
  auto first = Open();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->PutBlob(BlobKind::kModel, "hello").ok());
  StorageOptions options = Options();
  options.now_ms = nullptr;  // the child must not call back into this process's fixture
  auto try_open = [options] {
    absl::StatusOr<std::unique_ptr<Storage>> s = OpenSqliteStorage(options);
    if (!s.ok()) return std::string(s.status().ToString());
    absl::StatusOr<bool> has = (*s)->HasBlob(kHello);
    return std::string(has.ok() && *has ? "opened, blob present" : "opened, blob missing");
  };
  std::string message;
  EXPECT_EQ(RunInChild(try_open, &message), 0);
  EXPECT_EQ(message, "FAILED_PRECONDITION: data dir '" + dir_.path() +
                         "/data' is in use by another kilnd (pid " + std::to_string(getpid()) +
                         ")");
  first.reset();
  EXPECT_EQ(RunInChild(try_open, &message), 0);
  EXPECT_EQ(message, "opened, blob present");
}

TEST_F(StorageTest, SchemaVersionIsPersistedAndFutureVersionRefused) {
  ASSERT_NE(Open(), nullptr);  // creates and closes
  std::string db_path = dir_.path() + "/data/kiln.db";
  {
    absl::StatusOr<Database> db = Database::Open(db_path);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ(*ReadSchemaVersion(*db), LatestSchemaVersion());
    ASSERT_TRUE(db->Exec("INSERT INTO schema_version (version) VALUES (" +
                         std::to_string(LatestSchemaVersion() + 1) + ")")
                    .ok());
  }
  absl::StatusOr<std::unique_ptr<Storage>> storage = OpenSqliteStorage(Options());
  EXPECT_EQ(storage.status(),
            absl::FailedPreconditionError(
                "database '" + db_path + "' has schema version " +
                std::to_string(LatestSchemaVersion() + 1) + ", newer than this kilnd supports (" +
                std::to_string(LatestSchemaVersion()) + ")"));
  // The failed open released the lock: the refusal is about the schema, not the dir.
  storage = OpenSqliteStorage(Options());
  EXPECT_EQ(storage.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(storage.status().message().find("schema version"), std::string::npos);
}

TEST_F(StorageTest, RestartKeepsEverything) {
  std::string model;
  ArtifactEntry artifact;
  {
    auto storage = Open();
    ASSERT_NE(storage, nullptr);
    now_ = 500;
    model = *storage->PutBlob(BlobKind::kModel, "model bytes");
    artifact = *storage->PutArtifact(Key("g1"), "artifact bytes", 77);
    JobRecord job;
    job.id = "j1";
    job.model_digest = model;
    job.request = "req";
    ASSERT_TRUE(storage->CreateJob(job).ok());
    JobUpdate running;
    running.state = JobState::kRunning;
    running.worker = "w";
    ASSERT_TRUE(storage->UpdateJob("j1", running).ok());
    ASSERT_TRUE(storage->PutTuningRecords({Record('c', kZen, "unroll(i)", 1.5)}).ok());
  }
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(*storage->GetBlob(model), "model bytes");
  std::optional<ArtifactEntry> hit = *storage->LookupArtifact(Key("g1"));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->artifact_digest, artifact.artifact_digest);
  EXPECT_EQ(hit->compile_ms, 77);
  EXPECT_EQ(hit->created_ms, 500);
  std::vector<JobRecord> running = *storage->JobsInState(JobState::kRunning);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].id, "j1");
  EXPECT_EQ(running[0].worker, "w");
  EXPECT_EQ(running[0].request, "req");
  EXPECT_EQ(storage->BestTuningRecord(std::string(64, 'c'), kZen)->value().schedule(),
            "unroll(i)");
  StorageStats stats = *storage->Stats();
  EXPECT_EQ(stats.blob_count, 2);
  EXPECT_EQ(stats.blob_bytes, 25);
  EXPECT_EQ(stats.model_count, 1);
  EXPECT_EQ(stats.artifact_count, 1);
  EXPECT_EQ(stats.tuning_record_count, 1);
}

TEST_F(StorageTest, OpenReconcilesRowsWithFiles) {
  std::string kept, lost;
  {
    auto storage = Open();
    ASSERT_NE(storage, nullptr);
    kept = *storage->PutBlob(BlobKind::kModel, "kept");
    lost = storage->PutArtifact(Key("g1"), "lost", 1)->artifact_digest;
  }
  std::filesystem::remove(BlobPath(lost));
  // A file without a row whose bytes match its name (a crash between rename and commit, or a
  // database moved aside) is indexed again; one that does not match is quarantined. Neither is
  // deleted.
  std::string stray = Sha256Hex("stray");
  std::filesystem::create_directories(dir_.path() + "/data/blobs/" + stray.substr(0, 2));
  WriteFile(BlobPath(stray), "stray");
  std::string wrong = Sha256Hex("what the name says");
  std::filesystem::create_directories(dir_.path() + "/data/blobs/" + wrong.substr(0, 2));
  WriteFile(BlobPath(wrong), "other bytes");
  WriteFile(dir_.path() + "/data/blobs/tmp/.tmp-XYZ123", "half an upload");
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  std::vector<std::string> files = {kept.substr(0, 2) + "/" + kept,
                                    stray.substr(0, 2) + "/" + stray};
  std::sort(files.begin(), files.end());
  EXPECT_EQ(BlobFiles(), files);
  EXPECT_EQ(*storage->HasBlob(lost), false);
  EXPECT_EQ(*storage->HasBlob(stray), true);
  EXPECT_EQ(*storage->GetBlob(stray), "stray");
  EXPECT_EQ(*storage->HasBlob(wrong), false);
  EXPECT_EQ(ReadFile(dir_.path() + "/data/quarantine/" + wrong), "other bytes");
  EXPECT_EQ(*storage->LookupArtifact(Key("g1")), std::nullopt);
  EXPECT_EQ(*storage->GetBlob(kept), "kept");
  absl::StatusOr<StorageStats> stats = storage->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->reindexed_blobs, 1);
  EXPECT_EQ(stats->quarantined_blobs, 1);
}

// An operator moved a damaged database aside: the restart indexes every blob file again
// (models and artifacts, by content) instead of deleting them.
TEST_F(StorageTest, ANewDatabaseReindexesEveryBlob) {
  std::string model, artifact;
  {
    auto storage = Open();
    ASSERT_NE(storage, nullptr);
    model = *storage->PutBlob(BlobKind::kModel, "a model");
    artifact = storage->PutArtifact(Key("g1"), std::string("KILNART\0 an artifact", 20), 1)
                   ->artifact_digest;
  }
  std::filesystem::rename(dir_.path() + "/data/kiln.db", dir_.path() + "/kiln.db.damaged");
  std::filesystem::remove(dir_.path() + "/data/kiln.db-wal");
  std::filesystem::remove(dir_.path() + "/data/kiln.db-shm");
  auto storage = Open();
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(*storage->GetBlob(model), "a model");
  EXPECT_EQ(*storage->GetBlob(artifact), std::string("KILNART\0 an artifact", 20));
  absl::StatusOr<StorageStats> stats = storage->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->reindexed_blobs, 2);
  EXPECT_EQ(stats->model_count, 1);
  EXPECT_EQ(stats->blob_count, 2);
}

TEST_F(StorageTest, OpenEvictsWhenTheLimitWasLowered) {
  {
    auto storage = Open();
    ASSERT_NE(storage, nullptr);
    now_ = 1;
    ASSERT_TRUE(storage->PutBlob(BlobKind::kModel, Ten('a')).ok());
    now_ = 2;
    ASSERT_TRUE(storage->PutBlob(BlobKind::kModel, Ten('b')).ok());
  }
  auto storage = Open(/*max_cache_bytes=*/10);
  ASSERT_NE(storage, nullptr);
  EXPECT_EQ(*storage->HasBlob(Sha256Hex(Ten('a'))), false);
  EXPECT_EQ(*storage->HasBlob(Sha256Hex(Ten('b'))), true);
}

TEST_F(StorageTest, OptionsAreValidated) {
  StorageOptions options;
  EXPECT_EQ(OpenSqliteStorage(options).status(),
            absl::InvalidArgumentError("storage data_dir is empty"));
  options = Options(-1);
  EXPECT_EQ(OpenSqliteStorage(options).status(),
            absl::InvalidArgumentError("max_cache_bytes is -1, expected >= 0"));
}

TEST_F(StorageTest, ConcurrentPutAndGetFromEightThreads) {
  StorageOptions options = Options();
  options.now_ms = nullptr;  // the real clock
  absl::StatusOr<std::unique_ptr<Storage>> opened = OpenSqliteStorage(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Storage& storage = **opened;
  constexpr int kThreads = 8;
  constexpr int kIterations = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        std::string own = "thread " + std::to_string(t) + " blob " + std::to_string(i);
        std::string shared = "shared blob " + std::to_string(i);  // all threads race on it
        absl::StatusOr<std::string> d1 = storage.PutBlob(BlobKind::kModel, own);
        absl::StatusOr<std::string> d2 = storage.PutBlob(BlobKind::kModel, shared);
        absl::StatusOr<ArtifactEntry> art = storage.PutArtifact(
            Key("g" + std::to_string(i)), "artifact " + std::to_string(i), t);
        if (!d1.ok() || !d2.ok() || !art.ok()) {
          ++failures;
          continue;
        }
        absl::StatusOr<std::string> g1 = storage.GetBlob(*d1);
        absl::StatusOr<std::string> g2 = storage.GetBlob(*d2);
        absl::StatusOr<std::optional<ArtifactEntry>> hit =
            storage.LookupArtifact(Key("g" + std::to_string(i)));
        if (!g1.ok() || *g1 != own || !g2.ok() || *g2 != shared || !hit.ok() ||
            !hit->has_value() || (*hit)->artifact_digest != Sha256Hex("artifact " + std::to_string(i))) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  StorageStats stats = *storage.Stats();
  EXPECT_EQ(stats.blob_count, kThreads * kIterations + 2 * kIterations);
  EXPECT_EQ(stats.model_count, kThreads * kIterations + kIterations);
  EXPECT_EQ(stats.artifact_count, kIterations);
  EXPECT_EQ(BlobFiles().size(), static_cast<size_t>(stats.blob_count));
}

TEST_F(StorageTest, ConcurrentPutsUnderEvictionKeepRowsAndFilesInStep) {
  StorageOptions options = Options(/*max_cache_bytes=*/400);
  options.now_ms = nullptr;
  absl::StatusOr<std::unique_ptr<Storage>> opened = OpenSqliteStorage(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Storage& storage = **opened;
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        // 16 distinct 100-byte blobs shared by all threads: puts, evictions and reads collide.
        std::string bytes(100, static_cast<char>('a' + (t * 7 + i) % 16));
        absl::StatusOr<std::string> digest = storage.PutBlob(BlobKind::kModel, bytes);
        if (!digest.ok()) {
          ++unexpected;
          continue;
        }
        absl::StatusOr<std::string> got = storage.GetBlob(*digest);
        // Another thread's put may evict it before the read: kNotFound is fine, nothing else.
        if (got.ok() ? *got != bytes : !absl::IsNotFound(got.status())) ++unexpected;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(unexpected.load(), 0);
  StorageStats stats = *storage.Stats();
  EXPECT_EQ(stats.blob_bytes, 400);
  EXPECT_EQ(stats.blob_count, 4);
  EXPECT_EQ(BlobFiles().size(), 4u);  // every row has its file, and nothing else is left
}

}  // namespace
}  // namespace kiln::cache
