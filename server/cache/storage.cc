// SqliteStorage: opening a data dir (lock, schema, reconciliation) and the blob and artifact
// operations with LRU eviction. Jobs, tuning records and stats are in storage_jobs.cc.
#include "server/cache/storage.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"
#include "server/cache/schema.h"
#include "server/cache/sqlite_storage.h"

namespace kiln::cache {

std::string_view BlobKindName(BlobKind kind) {
  switch (kind) {
    case BlobKind::kModel:
      return "model";
    case BlobKind::kArtifact:
      return "artifact";
  }
  return "unknown";
}

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view JobKindName(JobKind kind) {
  switch (kind) {
    case JobKind::kCompile:
      return "compile";
    case JobKind::kTune:
      return "tune";
    case JobKind::kWorkloads:
      return "workloads";
    case JobKind::kBuild:
      return "build";
    case JobKind::kMeasure:
      return "measure";
  }
  return "unknown";
}

absl::StatusOr<JobKind> ParseJobKind(std::string_view name) {
  for (JobKind k : kAllJobKinds) {
    if (JobKindName(k) == name) return k;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown job kind '", std::string(name),
                   "': expected compile, tune, workloads, build or measure"));
}

absl::StatusOr<JobState> ParseJobState(std::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled}) {
    if (JobStateName(s) == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown job state '", std::string(name),
      "': expected queued, running, succeeded, failed or cancelled"));
}

// ---- DirLock ----------------------------------------------------------------------------------

absl::StatusOr<DirLock> DirLock::Acquire(const std::string& data_dir) {
  std::string path = absl::StrCat(data_dir, "/LOCK");
  // O_CLOEXEC: worker processes kilnd spawns must not inherit (and so prolong) the lock.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, "open lock file", path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err != EWOULDBLOCK) {
      close(fd);
      return FileError(err, "lock", path);
    }
    char buffer[32] = {};
    ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    close(fd);
    std::string pid(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    absl::StripAsciiWhitespace(&pid);
    return absl::FailedPreconditionError(
        absl::StrCat("data dir '", data_dir, "' is in use by another kilnd (pid ",
                     pid.empty() ? "unknown" : pid, ")"));
  }
  std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    int err = errno;
    close(fd);
    return FileError(err, "write pid to", path);
  }
  return DirLock(fd);
}

DirLock::DirLock(DirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

// ---- Opening ----------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Storage>> OpenSqliteStorage(const StorageOptions& options) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("storage data_dir is empty");
  if (options.max_cache_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_cache_bytes is ",
                                                   options.max_cache_bytes, ", expected >= 0"));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create data dir '", options.data_dir, "': ", ec.message()));
  }
  KILN_ASSIGN_OR_RETURN(DirLock lock, DirLock::Acquire(options.data_dir));
  KILN_ASSIGN_OR_RETURN(
      Database db,
      Database::Open(absl::StrCat(options.data_dir, "/kiln.db"), options.busy_timeout_ms));
  KILN_RETURN_IF_ERROR(MigrateSchema(db));
  KILN_ASSIGN_OR_RETURN(BlobStore blobs, BlobStore::Open(absl::StrCat(options.data_dir, "/blobs")));
  auto storage =
      std::make_unique<SqliteStorage>(options, std::move(lock), std::move(db), std::move(blobs));
  KILN_RETURN_IF_ERROR(storage->Reconcile());
  return std::unique_ptr<Storage>(std::move(storage));
}

int64_t SqliteStorage::NowMs() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status SqliteStorage::Reconcile() {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> files, blobs_.ListAndCleanTemp());
  std::vector<std::string> rows;
  {
    KILN_ASSIGN_OR_RETURN(Statement select,
                          Statement::Prepare(db_, "SELECT digest FROM blobs ORDER BY digest"));
    for (;;) {
      KILN_ASSIGN_OR_RETURN(bool row, select.Step());
      if (!row) break;
      rows.push_back(select.ColumnText(0));
    }
  }
  std::vector<std::string> rows_without_file, files_without_row;
  std::set_difference(rows.begin(), rows.end(), files.begin(), files.end(),
                      std::back_inserter(rows_without_file));
  std::set_difference(files.begin(), files.end(), rows.begin(), rows.end(),
                      std::back_inserter(files_without_row));
  if (!rows_without_file.empty()) {
    KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_));
    KILN_ASSIGN_OR_RETURN(Statement del,
                          Statement::Prepare(db_, "DELETE FROM blobs WHERE digest = ?"));
    for (const std::string& digest : rows_without_file) {
      KILN_RETURN_IF_ERROR(del.BindText(1, digest));
      KILN_RETURN_IF_ERROR(del.Run());
      KILN_RETURN_IF_ERROR(del.Reset());
    }
    KILN_RETURN_IF_ERROR(txn.Commit());
  }
  // A file without a row: a write that crashed between rename and commit, or a database that
  // was moved aside or restored from an older copy. Never deleted: a file whose bytes hash to
  // its name is indexed again (an artifact by its format's magic, else a model); its artifact
  // key is not known, so it is served by digest and evicted like any blob. Any other file is
  // moved to DATA_DIR/quarantine for an operator to look at.
  for (const std::string& digest : files_without_row) {
    KILN_RETURN_IF_ERROR(ReindexOrQuarantineLocked(digest));
  }
  // The size limit may have been lowered since the last run.
  return EvictLocked("");
}

absl::Status SqliteStorage::ReindexOrQuarantineLocked(const std::string& digest) {
  absl::StatusOr<std::string> bytes = blobs_.ReadUnverified(digest);
  if (bytes.ok() && Sha256Hex(*bytes) == digest) {
    const bool artifact =
        bytes->size() >= sizeof(runtime::kArtifactMagic) &&
        std::memcmp(bytes->data(), runtime::kArtifactMagic, sizeof(runtime::kArtifactMagic)) == 0;
    const int64_t now = NowMs();
    KILN_ASSIGN_OR_RETURN(
        Statement insert,
        Statement::Prepare(
            db_,
            "INSERT INTO blobs (digest, kind, size_bytes, created_ms, last_access_ms) "
            "VALUES (?, ?, ?, ?, ?)"));
    KILN_RETURN_IF_ERROR(insert.BindText(1, digest));
    KILN_RETURN_IF_ERROR(
        insert.BindText(2, BlobKindName(artifact ? BlobKind::kArtifact : BlobKind::kModel)));
    KILN_RETURN_IF_ERROR(insert.BindInt64(3, static_cast<int64_t>(bytes->size())));
    KILN_RETURN_IF_ERROR(insert.BindInt64(4, now));
    KILN_RETURN_IF_ERROR(insert.BindInt64(5, now));
    KILN_RETURN_IF_ERROR(insert.Run());
    ++reindexed_blobs_;
    return absl::OkStatus();
  }
  const std::string quarantine = absl::StrCat(options_.data_dir, "/quarantine");
  std::error_code ec;
  std::filesystem::create_directories(quarantine, ec);
  const std::string to = absl::StrCat(quarantine, "/", digest);
  if (ec || std::rename(blobs_.PathFor(digest).c_str(), to.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("blob file ", blobs_.PathFor(digest),
                                            " does not match its name and cannot be moved to ",
                                            quarantine));
  }
  ++quarantined_blobs_;
  return absl::OkStatus();
}

// ---- Blob rows --------------------------------------------------------------------------------

absl::Status SqliteStorage::TouchLocked(std::string_view digest, int64_t now_ms) {
  KILN_ASSIGN_OR_RETURN(
      Statement touch,
      Statement::Prepare(db_, "UPDATE blobs SET last_access_ms = ? WHERE digest = ?"));
  KILN_RETURN_IF_ERROR(touch.BindInt64(1, now_ms));
  KILN_RETURN_IF_ERROR(touch.BindText(2, digest));
  return touch.Run();
}

absl::StatusOr<std::optional<int64_t>> SqliteStorage::BlobSizeLocked(std::string_view digest) {
  KILN_ASSIGN_OR_RETURN(Statement select,
                        Statement::Prepare(db_, "SELECT size_bytes FROM blobs WHERE digest = ?"));
  KILN_RETURN_IF_ERROR(select.BindText(1, digest));
  KILN_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<int64_t>();
  return std::optional<int64_t>(select.ColumnInt64(0));
}

absl::Status SqliteStorage::InsertArtifactLocked(const ArtifactKey& key,
                                                 std::string_view artifact_digest,
                                                 int64_t size_bytes, int64_t compile_ms,
                                                 int64_t now_ms) {
  KILN_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db_,
                         "INSERT OR REPLACE INTO artifacts (graph_hash, target_key, "
                         "compiler_version, options_hash, artifact_digest, size_bytes, "
                         "compile_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  KILN_RETURN_IF_ERROR(insert.BindText(1, key.graph_hash));
  KILN_RETURN_IF_ERROR(insert.BindText(2, key.target_key));
  KILN_RETURN_IF_ERROR(insert.BindText(3, key.compiler_version));
  KILN_RETURN_IF_ERROR(insert.BindText(4, key.options_hash));
  KILN_RETURN_IF_ERROR(insert.BindText(5, artifact_digest));
  KILN_RETURN_IF_ERROR(insert.BindInt64(6, size_bytes));
  KILN_RETURN_IF_ERROR(insert.BindInt64(7, compile_ms));
  KILN_RETURN_IF_ERROR(insert.BindInt64(8, now_ms));
  return insert.Run();
}

absl::Status SqliteStorage::DropBlobLocked(std::string_view digest) {
  KILN_ASSIGN_OR_RETURN(Statement del,
                        Statement::Prepare(db_, "DELETE FROM blobs WHERE digest = ?"));
  KILN_RETURN_IF_ERROR(del.BindText(1, digest));
  KILN_RETURN_IF_ERROR(del.Run());  // artifact rows go with it (ON DELETE CASCADE)
  // Row first, then file: a crash in between leaves a stray file, which Reconcile removes.
  return blobs_.Remove(digest);
}

absl::Status SqliteStorage::EvictLocked(std::string_view keep) {
  if (options_.max_cache_bytes == 0) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(Statement total_q,
                        Statement::Prepare(db_, "SELECT COALESCE(SUM(size_bytes), 0) FROM blobs"));
  KILN_ASSIGN_OR_RETURN(bool has_total, total_q.Step());
  int64_t total = has_total ? total_q.ColumnInt64(0) : 0;
  if (total <= options_.max_cache_bytes) return absl::OkStatus();

  // Least recently accessed first; digest breaks ties so the order is deterministic.
  KILN_ASSIGN_OR_RETURN(
      Statement candidates,
      Statement::Prepare(db_,
                         "SELECT digest, size_bytes FROM blobs WHERE digest != ? AND digest NOT IN "
                         "(SELECT model_digest FROM jobs WHERE state IN ('queued', 'running')) "
                         "ORDER BY last_access_ms, digest"));
  KILN_RETURN_IF_ERROR(candidates.BindText(1, keep));
  std::vector<std::pair<std::string, int64_t>> victims;
  while (total > options_.max_cache_bytes) {
    KILN_ASSIGN_OR_RETURN(bool row, candidates.Step());
    if (!row) break;  // everything left is pinned; the limit is exceeded until jobs finish
    if (publishing_.count(candidates.ColumnText(0)) > 0) continue;
    victims.emplace_back(candidates.ColumnText(0), candidates.ColumnInt64(1));
    total -= victims.back().second;
  }
  if (victims.empty()) return absl::OkStatus();
  {
    KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_));
    KILN_ASSIGN_OR_RETURN(Statement del,
                          Statement::Prepare(db_, "DELETE FROM blobs WHERE digest = ?"));
    for (const auto& [digest, size] : victims) {
      KILN_RETURN_IF_ERROR(del.BindText(1, digest));
      KILN_RETURN_IF_ERROR(del.Run());
      KILN_RETURN_IF_ERROR(del.Reset());
    }
    KILN_RETURN_IF_ERROR(txn.Commit());
  }
  for (const auto& [digest, size] : victims) {
    // A file that cannot be removed now is a stray file, removed by Reconcile at next open.
    blobs_.Remove(digest).IgnoreError();
    ++evicted_blobs_;
    evicted_bytes_ += size;
  }
  return absl::OkStatus();
}

// ---- Blob writes ------------------------------------------------------------------------------

namespace {

class SqliteBlobUpload final : public BlobUpload {
 public:
  SqliteBlobUpload(SqliteStorage* storage, BlobKind kind, BlobWriter writer)
      : storage_(storage), kind_(kind), writer_(std::move(writer)) {}

  absl::Status Append(std::string_view bytes) override { return writer_.Append(bytes); }
  int64_t size_bytes() const override { return writer_.size_bytes(); }
  absl::StatusOr<std::string> Commit(std::string_view expected_digest) override {
    // A chunked upload always names its digest: that is how the client addresses it.
    KILN_RETURN_IF_ERROR(CheckDigest(expected_digest));
    return storage_->CommitWrite(kind_, writer_, expected_digest, std::nullopt, nullptr);
  }

 private:
  SqliteStorage* storage_;
  BlobKind kind_;
  BlobWriter writer_;
};

}  // namespace

absl::StatusOr<std::string> SqliteStorage::CommitWrite(BlobKind kind, BlobWriter& writer,
                                                       std::string_view expected_digest,
                                                       std::optional<ArtifactRow> artifact,
                                                       ArtifactEntry* entry_out) {
  KILN_ASSIGN_OR_RETURN(std::string digest, writer.Seal(expected_digest));  // fsync, verify
  {
    absl::MutexLock l(&mu_);
    publishing_.insert(digest);
  }
  absl::Status published = writer.Publish();  // rename, fsync dir
  absl::MutexLock l(&mu_);
  publishing_.erase(publishing_.find(digest));
  KILN_RETURN_IF_ERROR(published);
  int64_t size = writer.size_bytes();
  int64_t now = NowMs();
  {
    KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_));
    KILN_ASSIGN_OR_RETURN(
        Statement upsert,
        Statement::Prepare(db_,
                           "INSERT INTO blobs (digest, kind, size_bytes, created_ms, last_access_ms) "
                           "VALUES (:digest, :kind, :size, :now, :now) "
                           "ON CONFLICT (digest) DO UPDATE SET last_access_ms = :now"));
    KILN_RETURN_IF_ERROR(upsert.BindText(":digest", digest));
    KILN_RETURN_IF_ERROR(upsert.BindText(":kind", BlobKindName(kind)));
    KILN_RETURN_IF_ERROR(upsert.BindInt64(":size", size));
    KILN_RETURN_IF_ERROR(upsert.BindInt64(":now", now));
    KILN_RETURN_IF_ERROR(upsert.Run());
    if (artifact.has_value()) {
      KILN_RETURN_IF_ERROR(
          InsertArtifactLocked(*artifact->key, digest, size, artifact->compile_ms, now));
      if (entry_out != nullptr) {
        *entry_out = ArtifactEntry{digest, size, artifact->compile_ms, now};
      }
    }
    KILN_RETURN_IF_ERROR(txn.Commit());
  }
  KILN_RETURN_IF_ERROR(EvictLocked(digest));
  return digest;
}

absl::StatusOr<std::string> SqliteStorage::WriteBlob(BlobKind kind, std::string_view bytes,
                                                     std::string_view expected_digest,
                                                     std::optional<ArtifactRow> artifact,
                                                     ArtifactEntry* entry_out) {
  if (!expected_digest.empty()) KILN_RETURN_IF_ERROR(CheckDigest(expected_digest));
  // The bytes go to a temp file outside the lock (the slow part); CommitWrite publishes them.
  KILN_ASSIGN_OR_RETURN(BlobWriter writer, blobs_.BeginWrite());
  KILN_RETURN_IF_ERROR(writer.Append(bytes));
  return CommitWrite(kind, writer, expected_digest, artifact, entry_out);
}

absl::StatusOr<std::string> SqliteStorage::PutBlob(BlobKind kind, std::string_view bytes) {
  return WriteBlob(kind, bytes, "", std::nullopt, nullptr);
}

absl::StatusOr<std::string> SqliteStorage::PutBlobExpecting(BlobKind kind, std::string_view bytes,
                                                            std::string_view expected_digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(expected_digest));
  return WriteBlob(kind, bytes, expected_digest, std::nullopt, nullptr);
}

absl::StatusOr<std::unique_ptr<BlobUpload>> SqliteStorage::BeginBlobUpload(BlobKind kind) {
  KILN_ASSIGN_OR_RETURN(BlobWriter writer, blobs_.BeginWrite());
  return std::unique_ptr<BlobUpload>(new SqliteBlobUpload(this, kind, std::move(writer)));
}

// ---- Blob reads -------------------------------------------------------------------------------

absl::StatusOr<bool> SqliteStorage::HasBlob(std::string_view digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(digest));
  return size.has_value();
}

absl::StatusOr<int64_t> SqliteStorage::GetBlobSize(std::string_view digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(digest));
  if (!size.has_value()) {
    return absl::NotFoundError(absl::StrCat("blob ", std::string(digest), " not found"));
  }
  return *size;
}

absl::StatusOr<std::vector<std::string>> SqliteStorage::FindMissing(
    const std::vector<std::string>& digests) {
  for (const std::string& digest : digests) KILN_RETURN_IF_ERROR(CheckDigest(digest));
  absl::MutexLock l(&mu_);
  int64_t now = NowMs();
  KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_));
  std::vector<std::string> missing;
  std::set<std::string> seen;
  for (const std::string& digest : digests) {
    if (!seen.insert(digest).second) continue;
    KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(digest));
    if (size.has_value()) {
      KILN_RETURN_IF_ERROR(TouchLocked(digest, now));
    } else {
      missing.push_back(digest);
    }
  }
  KILN_RETURN_IF_ERROR(txn.Commit());
  return missing;
}

absl::Status SqliteStorage::FindAndTouch(std::string_view digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(digest));
  if (!size.has_value()) {
    return absl::NotFoundError(absl::StrCat("blob ", std::string(digest), " not found"));
  }
  TouchBestEffortLocked(digest);
  return absl::OkStatus();
}

void SqliteStorage::TouchBestEffortLocked(std::string_view digest) {
  // The LRU order is a hint: on a full disk (SQLITE_FULL) or a busy database, a read is still
  // served; only eviction order suffers.
  absl::Status touched = TouchLocked(digest, NowMs());
  (void)touched;
}

absl::StatusOr<std::string> SqliteStorage::RereadOrDropLocked(std::string_view digest) {
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(digest));
  if (!size.has_value()) {  // evicted meanwhile
    return absl::NotFoundError(absl::StrCat("blob ", std::string(digest), " not found"));
  }
  if (publishing_.count(std::string(digest)) > 0) {
    // A put of the same digest is renaming a verified copy into place right now; deleting the
    // file here could delete that copy.
    return absl::UnavailableError(absl::StrCat(
        "blob ", std::string(digest), " is being rewritten by a concurrent put; retry"));
  }
  // Re-read under the lock: a concurrent put of the same digest may have repaired the file.
  absl::StatusOr<std::string> verified = blobs_.Get(digest);  // removes a corrupted file
  if (verified.ok()) return verified;
  if (absl::IsDataLoss(verified.status())) {
    KILN_RETURN_IF_ERROR(DropBlobLocked(digest));
    return verified.status();
  }
  if (absl::IsNotFound(verified.status())) {
    KILN_RETURN_IF_ERROR(DropBlobLocked(digest));
    return absl::DataLossError(absl::StrCat("blob ", std::string(digest),
                                            " is missing from disk; its record was removed"));
  }
  return verified.status();
}

absl::StatusOr<std::string> SqliteStorage::GetBlob(std::string_view digest) {
  KILN_RETURN_IF_ERROR(FindAndTouch(digest));
  // Read and hash outside the lock so that large reads run in parallel. Eviction may remove the
  // file meanwhile; the slow path sorts that out.
  absl::StatusOr<std::string> bytes = blobs_.ReadUnverified(digest);
  if (bytes.ok() && Sha256Hex(*bytes) == digest) return bytes;
  if (!bytes.ok() && !absl::IsNotFound(bytes.status())) return bytes.status();
  absl::MutexLock l(&mu_);
  return RereadOrDropLocked(digest);
}

absl::StatusOr<std::string> SqliteStorage::ReadBlobUnverified(std::string_view digest) {
  KILN_RETURN_IF_ERROR(FindAndTouch(digest));
  absl::StatusOr<std::string> bytes = blobs_.ReadUnverified(digest);
  if (bytes.ok() || !absl::IsNotFound(bytes.status())) return bytes;
  // A row without its file (evicted meanwhile, or lost): the slow path sorts it out.
  absl::MutexLock l(&mu_);
  return RereadOrDropLocked(digest);
}

absl::Status SqliteStorage::VerifyBlob(std::string_view digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  absl::StatusOr<std::string> bytes = blobs_.ReadUnverified(digest);
  if (bytes.ok() && Sha256Hex(*bytes) == digest) return absl::OkStatus();
  if (!bytes.ok() && !absl::IsNotFound(bytes.status())) return bytes.status();
  absl::MutexLock l(&mu_);
  return RereadOrDropLocked(digest).status();
}

absl::StatusOr<std::vector<std::string>> SqliteStorage::ListBlobs() {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(Statement select,
                        Statement::Prepare(db_, "SELECT digest FROM blobs ORDER BY digest"));
  std::vector<std::string> digests;
  for (;;) {
    KILN_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    digests.push_back(select.ColumnText(0));
  }
  return digests;
}

// ---- Artifacts --------------------------------------------------------------------------------

absl::StatusOr<std::optional<ArtifactEntry>> SqliteStorage::LookupArtifact(
    const ArtifactKey& key) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_,
                         "SELECT artifact_digest, size_bytes, compile_ms, created_ms FROM artifacts "
                         "WHERE graph_hash = ? AND target_key = ? AND compiler_version = ? AND "
                         "options_hash = ?"));
  KILN_RETURN_IF_ERROR(select.BindText(1, key.graph_hash));
  KILN_RETURN_IF_ERROR(select.BindText(2, key.target_key));
  KILN_RETURN_IF_ERROR(select.BindText(3, key.compiler_version));
  KILN_RETURN_IF_ERROR(select.BindText(4, key.options_hash));
  KILN_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<ArtifactEntry>();
  ArtifactEntry entry{select.ColumnText(0), select.ColumnInt64(1), select.ColumnInt64(2),
                      select.ColumnInt64(3)};
  KILN_RETURN_IF_ERROR(select.Reset());
  TouchBestEffortLocked(entry.artifact_digest);
  return std::optional<ArtifactEntry>(std::move(entry));
}

absl::StatusOr<ArtifactEntry> SqliteStorage::PutArtifact(const ArtifactKey& key,
                                                         std::string_view artifact_bytes,
                                                         int64_t compile_ms) {
  ArtifactEntry entry;
  KILN_RETURN_IF_ERROR(WriteBlob(BlobKind::kArtifact, artifact_bytes, "",
                                 ArtifactRow{&key, compile_ms}, &entry)
                           .status());
  return entry;
}

absl::StatusOr<ArtifactEntry> SqliteStorage::LinkArtifact(const ArtifactKey& key,
                                                          std::string_view artifact_digest,
                                                          int64_t compile_ms) {
  KILN_RETURN_IF_ERROR(CheckDigest(artifact_digest));
  absl::MutexLock l(&mu_);
  int64_t now = NowMs();
  KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, BlobSizeLocked(artifact_digest));
  if (!size.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("blob ", std::string(artifact_digest), " not found"));
  }
  KILN_RETURN_IF_ERROR(InsertArtifactLocked(key, artifact_digest, *size, compile_ms, now));
  KILN_RETURN_IF_ERROR(TouchLocked(artifact_digest, now));
  KILN_RETURN_IF_ERROR(txn.Commit());
  return ArtifactEntry{std::string(artifact_digest), *size, compile_ms, now};
}

}  // namespace kiln::cache
