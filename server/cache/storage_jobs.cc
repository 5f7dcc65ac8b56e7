// SqliteStorage: persisted jobs, tuning records and statistics.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"
#include "server/cache/sqlite_storage.h"
#include "wire/status.h"

namespace kiln::cache {
namespace {

constexpr char kJobColumns[] =
    "id, kind, state, priority, model_digest, request, result, error_code, error_message, "
    "attempts, worker, created_ms, updated_ms, owner";

// Reads the row `stmt` is on (selected with kJobColumns).
absl::StatusOr<JobRecord> ReadJob(const Statement& stmt) {
  JobRecord job;
  job.id = stmt.ColumnText(0);
  absl::StatusOr<JobKind> kind = ParseJobKind(stmt.ColumnText(1));
  absl::StatusOr<JobState> state = ParseJobState(stmt.ColumnText(2));
  if (!kind.ok() || !state.ok()) {
    return absl::DataLossError(absl::StrCat(
        "job '", job.id, "' has an unreadable row: ",
        (!kind.ok() ? kind.status() : state.status()).message()));
  }
  job.kind = *kind;
  job.state = *state;
  job.priority = static_cast<int32_t>(stmt.ColumnInt64(3));
  job.model_digest = stmt.ColumnText(4);
  job.request = stmt.ColumnBlob(5);
  job.result = stmt.ColumnBlob(6);
  job.error = wire::StatusFromCode(stmt.ColumnInt64(7), stmt.ColumnText(8));
  job.attempts = static_cast<int32_t>(stmt.ColumnInt64(9));
  job.worker = stmt.ColumnText(10);
  job.created_ms = stmt.ColumnInt64(11);
  job.updated_ms = stmt.ColumnInt64(12);
  job.owner = stmt.ColumnText(13);
  return job;
}

absl::StatusOr<std::vector<JobRecord>> ReadJobs(Statement& stmt) {
  std::vector<JobRecord> jobs;
  for (;;) {
    KILN_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    KILN_ASSIGN_OR_RETURN(JobRecord job, ReadJob(stmt));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

absl::StatusOr<int64_t> CountRows(Database& db, const char* sql) {
  KILN_ASSIGN_OR_RETURN(Statement stmt, Statement::Prepare(db, sql));
  KILN_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.ColumnInt64(0) : 0;
}

}  // namespace

// ---- Jobs -------------------------------------------------------------------------------------

absl::StatusOr<JobRecord> SqliteStorage::GetJobLocked(std::string_view id) {
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_, absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?")));
  KILN_RETURN_IF_ERROR(select.BindText(1, id));
  KILN_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("job '", std::string(id), "' not found"));
  return ReadJob(select);
}

absl::StatusOr<JobRecord> SqliteStorage::CreateJob(const JobRecord& record) {
  if (record.id.empty()) return absl::InvalidArgumentError("job id is empty");
  if (!record.model_digest.empty()) KILN_RETURN_IF_ERROR(CheckDigest(record.model_digest));
  absl::MutexLock l(&mu_);
  int64_t now = NowMs();
  KILN_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db_, absl::StrCat("INSERT INTO jobs (", kJobColumns,
                                           ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")));
  KILN_RETURN_IF_ERROR(insert.BindText(1, record.id));
  KILN_RETURN_IF_ERROR(insert.BindText(2, JobKindName(record.kind)));
  KILN_RETURN_IF_ERROR(insert.BindText(3, JobStateName(record.state)));
  KILN_RETURN_IF_ERROR(insert.BindInt64(4, record.priority));
  KILN_RETURN_IF_ERROR(insert.BindText(5, record.model_digest));
  KILN_RETURN_IF_ERROR(insert.BindBlob(6, record.request));
  KILN_RETURN_IF_ERROR(insert.BindBlob(7, record.result));
  KILN_RETURN_IF_ERROR(insert.BindInt64(8, static_cast<int64_t>(record.error.code())));
  KILN_RETURN_IF_ERROR(insert.BindText(9, std::string(record.error.message())));
  KILN_RETURN_IF_ERROR(insert.BindInt64(10, record.attempts));
  KILN_RETURN_IF_ERROR(insert.BindText(11, record.worker));
  KILN_RETURN_IF_ERROR(insert.BindInt64(12, now));
  KILN_RETURN_IF_ERROR(insert.BindInt64(13, now));
  KILN_RETURN_IF_ERROR(insert.BindText(14, record.owner));
  absl::Status s = insert.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(absl::StrCat("job '", record.id, "' already exists"));
  }
  KILN_RETURN_IF_ERROR(s);
  return GetJobLocked(record.id);
}

absl::StatusOr<JobRecord> SqliteStorage::UpdateJob(std::string_view id, const JobUpdate& update) {
  absl::MutexLock l(&mu_);
  // A NULL parameter keeps the column as it is (COALESCE), so one statement serves every
  // combination of set and unset fields.
  KILN_ASSIGN_OR_RETURN(
      Statement stmt,
      Statement::Prepare(db_,
                         "UPDATE jobs SET state = :state, result = COALESCE(:result, result), "
                         "error_code = COALESCE(:error_code, error_code), "
                         "error_message = COALESCE(:error_message, error_message), "
                         "attempts = COALESCE(:attempts, attempts), "
                         "worker = COALESCE(:worker, worker), updated_ms = :now WHERE id = :id"));
  KILN_RETURN_IF_ERROR(stmt.BindText(":state", JobStateName(update.state)));
  if (update.result.has_value()) {
    KILN_RETURN_IF_ERROR(stmt.BindBlob(":result", *update.result));
  }
  if (update.error.has_value()) {
    KILN_RETURN_IF_ERROR(
        stmt.BindInt64(":error_code", static_cast<int64_t>(update.error->code())));
    KILN_RETURN_IF_ERROR(stmt.BindText(":error_message", std::string(update.error->message())));
  }
  if (update.attempts.has_value()) {
    KILN_RETURN_IF_ERROR(stmt.BindInt64(":attempts", *update.attempts));
  }
  if (update.worker.has_value()) KILN_RETURN_IF_ERROR(stmt.BindText(":worker", *update.worker));
  KILN_RETURN_IF_ERROR(stmt.BindInt64(":now", NowMs()));
  KILN_RETURN_IF_ERROR(stmt.BindText(":id", id));
  KILN_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) {
    return absl::NotFoundError(absl::StrCat("job '", std::string(id), "' not found"));
  }
  return GetJobLocked(id);
}

absl::StatusOr<JobRecord> SqliteStorage::GetJob(std::string_view id) {
  absl::MutexLock l(&mu_);
  return GetJobLocked(id);
}

absl::StatusOr<std::vector<JobRecord>> SqliteStorage::ListJobs(const JobFilter& filter) {
  if (filter.limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job list limit is ", filter.limit, ", expected >= 0"));
  }
  // The kinds as quoted literals: their names are this file's constants, never user text.
  std::string kinds;
  for (JobKind k : filter.kinds) {
    kinds += absl::StrCat(kinds.empty() ? "" : ", ", "'", std::string(JobKindName(k)), "'");
  }
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(
          db_, absl::StrCat("SELECT ", kJobColumns,
                            " FROM jobs WHERE (:state IS NULL OR state = :state) ",
                            "AND (:owner IS NULL OR owner = :owner) ",
                            kinds.empty() ? "" : absl::StrCat("AND kind IN (", kinds, ") "),
                            "ORDER BY created_ms DESC, id LIMIT :limit")));
  if (filter.state.has_value()) {
    KILN_RETURN_IF_ERROR(select.BindText(":state", JobStateName(*filter.state)));
  }
  if (filter.owner.has_value()) KILN_RETURN_IF_ERROR(select.BindText(":owner", *filter.owner));
  KILN_RETURN_IF_ERROR(select.BindInt64(":limit", filter.limit == 0 ? -1 : filter.limit));
  return ReadJobs(select);
}

absl::StatusOr<std::vector<JobRecord>> SqliteStorage::JobsInState(JobState state) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_, absl::StrCat("SELECT ", kJobColumns,
                                           " FROM jobs WHERE state = ? "
                                           "ORDER BY priority DESC, created_ms, id")));
  KILN_RETURN_IF_ERROR(select.BindText(1, JobStateName(state)));
  return ReadJobs(select);
}

// ---- Stats ------------------------------------------------------------------------------------

absl::StatusOr<StorageStats> SqliteStorage::Stats() {
  absl::MutexLock l(&mu_);
  StorageStats stats;
  {
    KILN_ASSIGN_OR_RETURN(
        Statement blobs,
        Statement::Prepare(db_,
                           "SELECT COUNT(*), COALESCE(SUM(size_bytes), 0), "
                           "COALESCE(SUM(kind = 'model'), 0) FROM blobs"));
    KILN_ASSIGN_OR_RETURN(bool row, blobs.Step());
    if (row) {
      stats.blob_count = blobs.ColumnInt64(0);
      stats.blob_bytes = blobs.ColumnInt64(1);
      stats.model_count = blobs.ColumnInt64(2);
    }
  }
  KILN_ASSIGN_OR_RETURN(stats.artifact_count, CountRows(db_, "SELECT COUNT(*) FROM artifacts"));
  KILN_ASSIGN_OR_RETURN(stats.tuning_record_count,
                        CountRows(db_, "SELECT COUNT(*) FROM tuning_records"));
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled}) {
    stats.jobs_by_state[s] = 0;
  }
  KILN_ASSIGN_OR_RETURN(
      Statement jobs, Statement::Prepare(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state"));
  for (;;) {
    KILN_ASSIGN_OR_RETURN(bool row, jobs.Step());
    if (!row) break;
    KILN_ASSIGN_OR_RETURN(JobState state, ParseJobState(jobs.ColumnText(0)));
    stats.jobs_by_state[state] = jobs.ColumnInt64(1);
  }
  stats.evicted_blobs = evicted_blobs_;
  stats.reindexed_blobs = reindexed_blobs_;
  stats.quarantined_blobs = quarantined_blobs_;
  stats.evicted_bytes = evicted_bytes_;
  return stats;
}

}  // namespace kiln::cache
