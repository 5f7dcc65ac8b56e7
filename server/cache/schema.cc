// Schema migrations. Each entry moves the database from version i to i + 1; entries are never
// edited once released, only appended.
#include "server/cache/schema.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::cache {
namespace {

// kMigrations[i] takes the schema from version i to version i + 1.
const char* const kMigrations[] = {
    // v1: blobs, the artifact index, jobs and tuning records.
    R"sql(
CREATE TABLE blobs (
  digest         TEXT PRIMARY KEY NOT NULL,
  kind           TEXT NOT NULL CHECK (kind IN ('model', 'artifact')),
  size_bytes     INTEGER NOT NULL,
  created_ms     INTEGER NOT NULL,
  last_access_ms INTEGER NOT NULL
);
CREATE INDEX blobs_by_last_access ON blobs (last_access_ms, digest);

CREATE TABLE artifacts (
  graph_hash       TEXT NOT NULL,
  target_key       TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  options_hash     TEXT NOT NULL,
  artifact_digest  TEXT NOT NULL REFERENCES blobs (digest) ON DELETE CASCADE,
  size_bytes       INTEGER NOT NULL,
  compile_ms       INTEGER NOT NULL,
  created_ms       INTEGER NOT NULL,
  PRIMARY KEY (graph_hash, target_key, compiler_version, options_hash)
);
CREATE INDEX artifacts_by_digest ON artifacts (artifact_digest);

CREATE TABLE jobs (
  id            TEXT PRIMARY KEY NOT NULL,
  kind          TEXT NOT NULL,
  state         TEXT NOT NULL,
  priority      INTEGER NOT NULL,
  model_digest  TEXT NOT NULL DEFAULT '',
  request       BLOB NOT NULL,
  result        BLOB NOT NULL,
  error_code    INTEGER NOT NULL DEFAULT 0,
  error_message TEXT NOT NULL DEFAULT '',
  attempts      INTEGER NOT NULL DEFAULT 0,
  worker        TEXT NOT NULL DEFAULT '',
  created_ms    INTEGER NOT NULL,
  updated_ms    INTEGER NOT NULL
);
CREATE INDEX jobs_by_state ON jobs (state, priority, created_ms);
CREATE INDEX jobs_by_model ON jobs (model_digest);

CREATE TABLE tuning_records (
  workload_key TEXT NOT NULL,
  hardware_key TEXT NOT NULL,
  schedule     TEXT NOT NULL,
  cost_ms      REAL NOT NULL,
  measured_ms  INTEGER NOT NULL,
  PRIMARY KEY (workload_key, hardware_key, schedule)
);
CREATE INDEX tuning_by_cost ON tuning_records (workload_key, hardware_key, cost_ms);
)sql",
    // v2: tuning records hold the whole kiln.v1.TuningRecord (proto/kiln/v1/tuning.proto); v1
    // rows predate the tuner (nothing wrote them) and are dropped. Cost models per hardware key.
    R"sql(
DROP TABLE tuning_records;
CREATE TABLE tuning_records (
  workload_key     TEXT NOT NULL,
  hardware_key     TEXT NOT NULL,
  schedule         TEXT NOT NULL,
  median_ms        REAL NOT NULL,
  measured_unix_ms INTEGER NOT NULL,
  provenance       TEXT NOT NULL,
  record           BLOB NOT NULL,
  PRIMARY KEY (workload_key, hardware_key, schedule)
);
CREATE INDEX tuning_by_cost ON tuning_records (workload_key, hardware_key, median_ms, schedule);
CREATE INDEX tuning_by_hardware ON tuning_records (hardware_key, workload_key);
CREATE TABLE cost_models (
  hardware_key TEXT PRIMARY KEY NOT NULL,
  model        BLOB NOT NULL,
  updated_ms   INTEGER NOT NULL
);
)sql",
    // v3: the workloads of a model's kernels per (graph hash, target key, hash of the options
    // that shape the kernels), learned from its compiles and tunes, so that a compile applies
    // (and its artifact key covers) only the records of its own workloads.
    R"sql(
CREATE TABLE model_workloads (
  graph_hash    TEXT NOT NULL,
  target_key    TEXT NOT NULL,
  options_hash  TEXT NOT NULL,
  workload_keys TEXT NOT NULL,
  updated_ms    INTEGER NOT NULL,
  PRIMARY KEY (graph_hash, target_key, options_hash)
);
)sql",
    // v4: whether a record was confirmed (re-measured with the default after the search);
    // selection orders confirmed records first. Older rows were not confirmed.
    R"sql(
ALTER TABLE tuning_records ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 0;
DROP INDEX tuning_by_cost;
CREATE INDEX tuning_by_cost ON tuning_records
  (workload_key, hardware_key, confirmed DESC, median_ms, schedule);
)sql",
    // v5: the principal that submitted a job (issue #10: another token's job needs `admin`);
    // empty for jobs submitted without authentication.
    R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql",
};

constexpr int kMigrationCount = sizeof(kMigrations) / sizeof(kMigrations[0]);

}  // namespace

int LatestSchemaVersion() { return kMigrationCount; }

absl::StatusOr<int> ReadSchemaVersion(Database& db) {
  KILN_ASSIGN_OR_RETURN(
      Statement exists,
      Statement::Prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                             "name = 'schema_version'"));
  KILN_ASSIGN_OR_RETURN(bool has_table, exists.Step());
  if (!has_table) return 0;
  KILN_ASSIGN_OR_RETURN(Statement read,
                        Statement::Prepare(db, "SELECT MAX(version) FROM schema_version"));
  KILN_ASSIGN_OR_RETURN(bool has_row, read.Step());
  if (!has_row || read.ColumnIsNull(0)) return 0;
  return static_cast<int>(read.ColumnInt64(0));
}

absl::Status MigrateSchema(Database& db) {
  // Read the version inside the write transaction, so two processes racing to migrate a fresh
  // database cannot both apply v1.
  KILN_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db));
  KILN_RETURN_IF_ERROR(db.Exec(
      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, "
      "applied_ms INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)))"));
  KILN_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(db));
  if (version > kMigrationCount) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database '", db.path(), "' has schema version ", version,
        ", newer than this kilnd supports (", kMigrationCount, ")"));
  }
  if (version == kMigrationCount) return absl::OkStatus();  // nothing written: rollback is a no-op
  for (int v = version; v < kMigrationCount; ++v) {
    absl::Status s = db.Exec(kMigrations[v]);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("schema migration to version ", v + 1,
                                                 " failed: ", s.message()));
    }
    KILN_ASSIGN_OR_RETURN(Statement record,
                          Statement::Prepare(db, "INSERT INTO schema_version (version) VALUES (?)"));
    KILN_RETURN_IF_ERROR(record.BindInt64(1, v + 1));
    KILN_RETURN_IF_ERROR(record.Run());
  }
  return txn.Commit();
}

}  // namespace kiln::cache
