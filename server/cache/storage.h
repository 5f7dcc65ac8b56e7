// The daemon's one storage interface: content-addressed blobs (models, artifacts), the artifact
// cache index, persisted jobs and tuning records. SqliteStorage (SQLite in WAL mode plus a blob
// directory) is the embedded default; a fleet can later implement Storage over a shared server.
#ifndef KILN_SERVER_CACHE_STORAGE_H_
#define KILN_SERVER_CACHE_STORAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kiln/v1/tuning.pb.h"

namespace kiln::cache {

/// What a blob holds. Stored as 'model' / 'artifact'.
enum class BlobKind { kModel, kArtifact };

/// Lifecycle of a persisted job. kQueued and kRunning are "live": a restart must resume them, and
/// the model a live job names is never evicted. Stored as 'queued', 'running', 'succeeded',
/// 'failed', 'cancelled'.
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

/// What a job does. Stored as 'compile', 'tune', 'workloads', 'build', 'measure'. The last
/// three are the steps a tune job runs on workers (list a model's workloads, build a batch of
/// candidates, measure it on a device).
enum class JobKind { kCompile, kTune, kWorkloads, kBuild, kMeasure };
/// Every JobKind, in declaration order.
inline constexpr JobKind kAllJobKinds[] = {JobKind::kCompile, JobKind::kTune, JobKind::kWorkloads,
                                           JobKind::kBuild, JobKind::kMeasure};

std::string_view BlobKindName(BlobKind kind);
std::string_view JobStateName(JobState state);
std::string_view JobKindName(JobKind kind);
/// Inverse of JobStateName; kInvalidArgument for an unknown name.
absl::StatusOr<JobState> ParseJobState(std::string_view name);
/// Inverse of JobKindName; kInvalidArgument for an unknown name (listing the known ones).
absl::StatusOr<JobKind> ParseJobKind(std::string_view name);

struct StorageOptions {
  /// Directory holding kiln.db, blobs/ and LOCK. Created (with parents) if missing.
  std::string data_dir;
  /// Upper bound on the total size of all blobs, in bytes; 0 = unlimited. Enforced after every
  /// blob write by evicting least-recently-accessed blobs.
  int64_t max_cache_bytes = 0;
  /// How long a statement waits on a locked database before failing, in ms.
  int busy_timeout_ms = 5000;
  /// Wall clock in ms since the Unix epoch, for created/updated/last-access stamps. Null = the
  /// system clock. Tests inject one to make LRU order exact.
  std::function<int64_t()> now_ms;
};

/// The cache key of a compiled artifact. All four parts are opaque strings chosen by the caller.
struct ArtifactKey {
  std::string graph_hash;
  std::string target_key;
  std::string compiler_version;
  std::string options_hash;
};

struct ArtifactEntry {
  /// SHA-256 hex of the artifact bytes; fetch them with GetBlob.
  std::string artifact_digest;
  int64_t size_bytes = 0;
  /// How long the compile took, in ms.
  int64_t compile_ms = 0;
  /// When the entry was stored, in ms since the Unix epoch.
  int64_t created_ms = 0;
};

struct JobRecord {
  /// Caller-chosen unique id.
  std::string id;
  JobKind kind = JobKind::kCompile;
  JobState state = JobState::kQueued;
  /// Higher runs first.
  int32_t priority = 0;
  /// The model blob the job reads; empty if none. Pins the blob against eviction while the job
  /// is live.
  std::string model_digest;
  /// Serialized request (opaque bytes, e.g. a proto).
  std::string request;
  /// Serialized result (opaque bytes); empty until the job produced one.
  std::string result;
  /// OK unless the job failed; its code and message are persisted.
  absl::Status error;
  int32_t attempts = 0;
  /// Worker that holds or last held the job; empty if none.
  std::string worker;
  /// The principal that submitted the job (auth::Principal::id); empty without authentication.
  std::string owner;
  /// Stamped by storage, in ms since the Unix epoch.
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

/// A partial update of a job: `state` always, every other field only when set.
struct JobUpdate {
  JobState state = JobState::kQueued;
  std::optional<std::string> result;
  std::optional<absl::Status> error;
  std::optional<int32_t> attempts;
  std::optional<std::string> worker;
};

struct JobFilter {
  /// Only jobs in this state; nullopt = all states.
  std::optional<JobState> state;
  /// At most this many jobs; 0 = no limit.
  int64_t limit = 0;
  /// Only jobs of these kinds; empty = every kind.
  std::vector<JobKind> kinds;
  /// Only jobs of this owner (JobRecord::owner); nullopt = every owner.
  std::optional<std::string> owner;
};

struct StorageStats {
  int64_t blob_count = 0;
  /// Total size of all blobs, in bytes.
  int64_t blob_bytes = 0;
  int64_t model_count = 0;
  int64_t artifact_count = 0;
  int64_t tuning_record_count = 0;
  /// Every JobState appears, with 0 when no job is in it.
  std::map<JobState, int64_t> jobs_by_state;
  /// Blobs and bytes evicted by the LRU policy since this Storage was opened.
  int64_t evicted_blobs = 0;
  /// Since open: blob files without a row that were indexed again (their bytes matched their
  /// name), and those moved to DATA_DIR/quarantine instead.
  int64_t reindexed_blobs = 0;
  int64_t quarantined_blobs = 0;
  int64_t evicted_bytes = 0;
};

/// A chunked upload of one blob. Append the bytes in order, then Commit with the digest the
/// client announced. Destroying an uncommitted upload discards it (nothing is left on disk).
/// Must not outlive the Storage that created it. Not thread-safe (one upload, one caller).
class BlobUpload {
 public:
  virtual ~BlobUpload() = default;
  /// Appends `bytes`. kUnavailable / kResourceExhausted on a write failure (disk full).
  virtual absl::Status Append(std::string_view bytes) = 0;
  /// Bytes appended so far.
  virtual int64_t size_bytes() const = 0;
  /// Verifies the SHA-256 of everything appended against `expected_digest` and stores the blob
  /// atomically (then records it and runs eviction). kInvalidArgument "digest mismatch:
  /// expected X, got Y" (nothing stored) or for a malformed digest; kFailedPrecondition if
  /// already committed. Returns the digest.
  virtual absl::StatusOr<std::string> Commit(std::string_view expected_digest) = 0;
};

/// The storage interface of kilnd. Every method is thread-safe; every write is one transaction.
/// Blob contents are always verified on read: a corrupted blob is never served.
class Storage {
 public:
  virtual ~Storage() = default;

  // ---- Blobs ----------------------------------------------------------------------------------

  /// Stores `bytes` (idempotent: an existing blob is only touched) and returns its SHA-256 hex.
  virtual absl::StatusOr<std::string> PutBlob(BlobKind kind, std::string_view bytes) = 0;
  /// As PutBlob, but fails with kInvalidArgument "digest mismatch: expected X, got Y" and stores
  /// nothing unless the bytes hash to `expected_digest`.
  virtual absl::StatusOr<std::string> PutBlobExpecting(BlobKind kind, std::string_view bytes,
                                                       std::string_view expected_digest) = 0;
  /// Starts a chunked upload; see BlobUpload.
  virtual absl::StatusOr<std::unique_ptr<BlobUpload>> BeginBlobUpload(BlobKind kind) = 0;
  /// Whether the blob is recorded. Does not touch its access time.
  virtual absl::StatusOr<bool> HasBlob(std::string_view digest) = 0;
  /// The digests of `digests` that are not stored, in input order, duplicates removed. Present
  /// ones are touched (they are about to be used by a compile request).
  virtual absl::StatusOr<std::vector<std::string>> FindMissing(
      const std::vector<std::string>& digests) = 0;
  /// The blob's bytes, SHA-256 verified; touches its access time. kNotFound if absent. kDataLoss
  /// if the file is corrupted or missing: the file, its row and every artifact row pointing at it
  /// are deleted, so the next lookup is a miss and the artifact is rebuilt. kUnavailable (retry)
  /// in the rare case that a put of the same digest is replacing a corrupted file right then.
  virtual absl::StatusOr<std::string> GetBlob(std::string_view digest) = 0;
  /// The blob's bytes as they are on disk, not hashed (a fetch verifies while it streams and
  /// calls VerifyBlob on a mismatch); touches its access time (best effort). kNotFound if
  /// absent; kDataLoss if its file is missing (the row is removed).
  virtual absl::StatusOr<std::string> ReadBlobUnverified(std::string_view digest) = 0;
  /// Verifies the blob at rest without touching its access time (the scrubber, a fetch that saw
  /// a mismatch). OK if intact; kDataLoss after removing a corrupted or missing blob with its
  /// row and artifact rows; kNotFound if absent; kUnavailable while a put replaces it.
  virtual absl::Status VerifyBlob(std::string_view digest) = 0;
  /// Every blob's digest, in digest order.
  virtual absl::StatusOr<std::vector<std::string>> ListBlobs() = 0;
  /// The blob's size in bytes, as recorded; kNotFound if absent.
  virtual absl::StatusOr<int64_t> GetBlobSize(std::string_view digest) = 0;

  // ---- Artifact cache -------------------------------------------------------------------------

  /// The entry for `key`, or nullopt on a miss. A hit touches the artifact blob.
  virtual absl::StatusOr<std::optional<ArtifactEntry>> LookupArtifact(const ArtifactKey& key) = 0;
  /// Stores the artifact bytes as a blob, then the entry for `key` (replacing an older one).
  virtual absl::StatusOr<ArtifactEntry> PutArtifact(const ArtifactKey& key,
                                                    std::string_view artifact_bytes,
                                                    int64_t compile_ms) = 0;
  /// Records an entry for an artifact already stored as a blob (e.g. uploaded by a worker through
  /// BeginBlobUpload). kNotFound if the blob is absent.
  virtual absl::StatusOr<ArtifactEntry> LinkArtifact(const ArtifactKey& key,
                                                     std::string_view artifact_digest,
                                                     int64_t compile_ms) = 0;

  // ---- Jobs -----------------------------------------------------------------------------------

  /// Persists a new job; created_ms and updated_ms are stamped now. kAlreadyExists if the id is
  /// taken. Returns the stored record.
  virtual absl::StatusOr<JobRecord> CreateJob(const JobRecord& record) = 0;
  /// Applies `update` and stamps updated_ms. kNotFound if no such job. Returns the new record.
  virtual absl::StatusOr<JobRecord> UpdateJob(std::string_view id, const JobUpdate& update) = 0;
  /// kNotFound if no such job.
  virtual absl::StatusOr<JobRecord> GetJob(std::string_view id) = 0;
  /// Jobs matching `filter`, newest first (created_ms descending, then id).
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobs(const JobFilter& filter) = 0;
  /// Every job in `state`, in run order (priority descending, then created_ms, then id): what a
  /// restarted daemon re-queues for kQueued / kRunning.
  virtual absl::StatusOr<std::vector<JobRecord>> JobsInState(JobState state) = 0;

  // ---- Tuning records -------------------------------------------------------------------------

  /// Stores `records` in one transaction, all or none: each is first checked with
  /// tuning::ValidateRecord (kInvalidArgument "record I: ..." and nothing stored). A record with
  /// the workload key, hardware key and schedule of a stored one replaces it.
  virtual absl::Status PutTuningRecords(const std::vector<v1::TuningRecord>& records) = 0;
  /// The best record for the pair, or nullopt: the fastest confirmed one (proto field
  /// `confirmed`) if any, else the fastest (lowest median; ties: schedule ascending).
  virtual absl::StatusOr<std::optional<v1::TuningRecord>> BestTuningRecord(
      std::string_view workload_key, std::string_view hardware_key) = 0;
  /// Every record of `hardware_key` (every record when empty), ordered by workload key,
  /// hardware key, median, schedule.
  virtual absl::StatusOr<std::vector<v1::TuningRecord>> ListTuningRecords(
      std::string_view hardware_key) = 0;
  /// Each stored hardware key with its record count, by key.
  virtual absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> TuningHardwareKeys() = 0;
  /// The fastest record (as BestTuningRecord) of every workload on `hardware_key`, by workload
  /// key.
  virtual absl::StatusOr<std::vector<v1::TuningRecord>> BestTuningRecords(
      std::string_view hardware_key) = 0;
  /// Stores (replaces) the cost model of a hardware key (tuning::CostModel::Serialize bytes).
  virtual absl::Status PutCostModel(std::string_view hardware_key, std::string_view model) = 0;
  /// The stored cost model of `hardware_key`, or nullopt.
  virtual absl::StatusOr<std::optional<std::string>> GetCostModel(
      std::string_view hardware_key) = 0;

  /// Stores (replaces) the distinct workload keys of the kernels of the model with
  /// `graph_hash` compiled for `target_key` with options hashing to `options_hash` (options
  /// without records: server/tuning_records.h WorkloadOptionsHash). Errors: storage's.
  virtual absl::Status PutModelWorkloads(std::string_view graph_hash, std::string_view target_key,
                                         std::string_view options_hash,
                                         const std::vector<std::string>& workload_keys) = 0;
  /// The workload keys PutModelWorkloads stored (sorted), or nullopt when none were.
  virtual absl::StatusOr<std::optional<std::vector<std::string>>> GetModelWorkloads(
      std::string_view graph_hash, std::string_view target_key,
      std::string_view options_hash) = 0;

  // ---- Introspection --------------------------------------------------------------------------

  virtual absl::StatusOr<StorageStats> Stats() = 0;
};

/// Opens (creating if needed) the SQLite storage in `options.data_dir`: takes an exclusive
/// flock on DATA_DIR/LOCK for the Storage's lifetime (writing this pid into it), opens
/// DATA_DIR/kiln.db in WAL mode, applies schema migrations, and reconciles rows with files on
/// disk (rows whose file is gone are dropped; stray and temporary files are removed).
/// kFailedPrecondition "data dir 'D' is in use by another kilnd (pid N)" if another process (or
/// another Storage in this one) holds the dir; kFailedPrecondition if the database's schema is
/// newer than this binary knows; kUnavailable on I/O trouble.
absl::StatusOr<std::unique_ptr<Storage>> OpenSqliteStorage(const StorageOptions& options);

}  // namespace kiln::cache

#endif  // KILN_SERVER_CACHE_STORAGE_H_
