// SqliteStorage: Storage over one SQLite database (metadata, WAL) and a BlobStore (bytes), in a
// data dir held under an exclusive flock. Private to server/cache; the daemon sees only Storage
// and OpenSqliteStorage.
#ifndef KILN_SERVER_CACHE_SQLITE_STORAGE_H_
#define KILN_SERVER_CACHE_SQLITE_STORAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/cache/blob_store.h"
#include "server/cache/sqlite_db.h"
#include "server/cache/storage.h"

namespace kiln::cache {

/// An exclusive flock on DATA_DIR/LOCK, released when destroyed (or when the process dies).
class DirLock {
 public:
  /// kFailedPrecondition "data dir 'D' is in use by another kilnd (pid N)" if held elsewhere.
  static absl::StatusOr<DirLock> Acquire(const std::string& data_dir);
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&&) = delete;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class SqliteStorage final : public Storage {
 public:
  SqliteStorage(StorageOptions options, DirLock lock, Database db, BlobStore blobs)
      : options_(std::move(options)),
        lock_(std::move(lock)),
        db_(std::move(db)),
        blobs_(std::move(blobs)) {}

  /// Drops rows whose file is gone and files (and temp files) without a row. Run once at open.
  absl::Status Reconcile();
  /// kNotFound unless `digest` has a row; touches its access time (best effort).
  absl::Status FindAndTouch(std::string_view digest) ABSL_LOCKS_EXCLUDED(mu_);
  /// The slow path of a blob read whose file was missing or did not hash to its digest: reads
  /// it again under the lock (a concurrent put may have repaired it); a corrupted or missing
  /// file is dropped with its row and artifact rows (kDataLoss).
  absl::StatusOr<std::string> RereadOrDropLocked(std::string_view digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchBestEffortLocked(std::string_view digest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// A blob file with no row: indexed again if its bytes hash to its name, else moved to
  /// DATA_DIR/quarantine. Never deleted.
  absl::Status ReindexOrQuarantineLocked(const std::string& digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::StatusOr<std::string> PutBlob(BlobKind kind, std::string_view bytes) override;
  absl::StatusOr<std::string> PutBlobExpecting(BlobKind kind, std::string_view bytes,
                                               std::string_view expected_digest) override;
  absl::StatusOr<std::unique_ptr<BlobUpload>> BeginBlobUpload(BlobKind kind) override;
  absl::StatusOr<bool> HasBlob(std::string_view digest) override;
  absl::StatusOr<std::vector<std::string>> FindMissing(
      const std::vector<std::string>& digests) override;
  absl::StatusOr<std::string> GetBlob(std::string_view digest) override;
  absl::StatusOr<std::string> ReadBlobUnverified(std::string_view digest) override;
  absl::Status VerifyBlob(std::string_view digest) override;
  absl::StatusOr<std::vector<std::string>> ListBlobs() override;
  absl::StatusOr<int64_t> GetBlobSize(std::string_view digest) override;

  absl::StatusOr<std::optional<ArtifactEntry>> LookupArtifact(const ArtifactKey& key) override;
  absl::StatusOr<ArtifactEntry> PutArtifact(const ArtifactKey& key,
                                            std::string_view artifact_bytes,
                                            int64_t compile_ms) override;
  absl::StatusOr<ArtifactEntry> LinkArtifact(const ArtifactKey& key,
                                             std::string_view artifact_digest,
                                             int64_t compile_ms) override;

  absl::StatusOr<JobRecord> CreateJob(const JobRecord& record) override;
  absl::StatusOr<JobRecord> UpdateJob(std::string_view id, const JobUpdate& update) override;
  absl::StatusOr<JobRecord> GetJob(std::string_view id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  absl::StatusOr<std::vector<JobRecord>> JobsInState(JobState state) override;

  absl::Status PutTuningRecords(const std::vector<v1::TuningRecord>& records) override;
  absl::StatusOr<std::optional<v1::TuningRecord>> BestTuningRecord(
      std::string_view workload_key, std::string_view hardware_key) override;
  absl::StatusOr<std::vector<v1::TuningRecord>> ListTuningRecords(
      std::string_view hardware_key) override;
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> TuningHardwareKeys() override;
  absl::StatusOr<std::vector<v1::TuningRecord>> BestTuningRecords(
      std::string_view hardware_key) override;
  absl::Status PutCostModel(std::string_view hardware_key, std::string_view model) override;
  absl::StatusOr<std::optional<std::string>> GetCostModel(std::string_view hardware_key) override;
  absl::Status PutModelWorkloads(std::string_view graph_hash, std::string_view target_key,
                                 std::string_view options_hash,
                                 const std::vector<std::string>& workload_keys) override;
  absl::StatusOr<std::optional<std::vector<std::string>>> GetModelWorkloads(
      std::string_view graph_hash, std::string_view target_key,
      std::string_view options_hash) override;

  absl::StatusOr<StorageStats> Stats() override;

  /// Finishes a write: seals and verifies it and renames the file into place (all outside mu_,
  /// the digest pinned against eviction meanwhile), then records (or touches) its row and, if
  /// `artifact` is set, the artifact entry, in one transaction; then evicts. Used by PutBlob,
  /// PutArtifact and BlobUpload::Commit.
  struct ArtifactRow {
    const ArtifactKey* key;
    int64_t compile_ms;
  };
  absl::StatusOr<std::string> CommitWrite(BlobKind kind, BlobWriter& writer,
                                          std::string_view expected_digest,
                                          std::optional<ArtifactRow> artifact,
                                          ArtifactEntry* entry_out);

 private:
  int64_t NowMs() const;
  absl::StatusOr<std::string> WriteBlob(BlobKind kind, std::string_view bytes,
                                        std::string_view expected_digest,
                                        std::optional<ArtifactRow> artifact,
                                        ArtifactEntry* entry_out);
  absl::Status TouchLocked(std::string_view digest, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::optional<int64_t>> BlobSizeLocked(std::string_view digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Inserts or replaces the artifact row for `key`.
  absl::Status InsertArtifactLocked(const ArtifactKey& key, std::string_view artifact_digest,
                                    int64_t size_bytes, int64_t compile_ms, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Deletes the row (its artifact rows cascade) and then the file.
  absl::Status DropBlobLocked(std::string_view digest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Evicts least-recently-accessed blobs, never `keep` nor a model of a live job, until the
  /// total is within max_cache_bytes.
  absl::Status EvictLocked(std::string_view keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<JobRecord> GetJobLocked(std::string_view id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StorageOptions options_;
  DirLock lock_;
  absl::Mutex mu_;
  Database db_ ABSL_GUARDED_BY(mu_);
  // File writes, fsyncs and renames run outside mu_ so that disk flushes never block metadata
  // operations. A digest being published is in `publishing_` from before its rename until its
  // row is committed; eviction skips it, so its file is never deleted under a row-to-be.
  BlobStore blobs_;
  std::multiset<std::string> publishing_ ABSL_GUARDED_BY(mu_);
  int64_t evicted_blobs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reindexed_blobs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t quarantined_blobs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evicted_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kiln::cache

#endif  // KILN_SERVER_CACHE_SQLITE_STORAGE_H_
