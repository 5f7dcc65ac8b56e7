// SqliteStorage: tuning records, cost models and the workloads of models.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/records.h"
#include "server/cache/sqlite_storage.h"

namespace kiln::cache {
namespace {

absl::StatusOr<std::vector<v1::TuningRecord>> ReadRecords(Statement& select) {
  std::vector<v1::TuningRecord> out;
  while (true) {
    KILN_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    v1::TuningRecord r;
    if (!r.ParseFromString(select.ColumnBlob(0))) {
      return absl::DataLossError("a stored tuning record does not parse");
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

absl::Status SqliteStorage::PutTuningRecords(const std::vector<v1::TuningRecord>& records) {
  for (size_t i = 0; i < records.size(); ++i) {
    absl::Status st = tuning::ValidateRecord(records[i]);
    if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat("record ", i, ": ", st.message()));
  }
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  for (const v1::TuningRecord& r : records) {
    KILN_ASSIGN_OR_RETURN(
        Statement stmt,
        Statement::Prepare(db_,
                           "INSERT OR REPLACE INTO tuning_records (workload_key, hardware_key, "
                           "schedule, median_ms, measured_unix_ms, provenance, record, "
                           "confirmed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    KILN_RETURN_IF_ERROR(stmt.BindText(1, r.workload_key()));
    KILN_RETURN_IF_ERROR(stmt.BindText(2, r.hardware_key()));
    KILN_RETURN_IF_ERROR(stmt.BindText(3, r.schedule()));
    KILN_RETURN_IF_ERROR(stmt.BindDouble(4, r.median_ms()));
    KILN_RETURN_IF_ERROR(stmt.BindInt64(5, r.measured_unix_ms()));
    KILN_RETURN_IF_ERROR(stmt.BindText(6, v1::TuningRecord::Provenance_Name(r.provenance())));
    KILN_RETURN_IF_ERROR(stmt.BindBlob(7, r.SerializeAsString()));
    KILN_RETURN_IF_ERROR(stmt.BindInt64(8, r.confirmed() ? 1 : 0));
    KILN_RETURN_IF_ERROR(stmt.Run());
  }
  return tx.Commit();
}

absl::StatusOr<std::optional<v1::TuningRecord>> SqliteStorage::BestTuningRecord(
    std::string_view workload_key, std::string_view hardware_key) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_,
                         "SELECT record FROM tuning_records WHERE workload_key = ? AND "
                         "hardware_key = ? ORDER BY confirmed DESC, median_ms, schedule LIMIT 1"));
  KILN_RETURN_IF_ERROR(select.BindText(1, workload_key));
  KILN_RETURN_IF_ERROR(select.BindText(2, hardware_key));
  KILN_ASSIGN_OR_RETURN(std::vector<v1::TuningRecord> rows, ReadRecords(select));
  if (rows.empty()) return std::optional<v1::TuningRecord>();
  return std::optional<v1::TuningRecord>(std::move(rows[0]));
}

absl::StatusOr<std::vector<v1::TuningRecord>> SqliteStorage::ListTuningRecords(
    std::string_view hardware_key) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_,
                         "SELECT record FROM tuning_records WHERE ? = '' OR hardware_key = ? "
                         "ORDER BY workload_key, hardware_key, median_ms, schedule"));
  KILN_RETURN_IF_ERROR(select.BindText(1, hardware_key));
  KILN_RETURN_IF_ERROR(select.BindText(2, hardware_key));
  return ReadRecords(select);
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> SqliteStorage::TuningHardwareKeys() {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_, "SELECT hardware_key, COUNT(*) FROM tuning_records "
                              "GROUP BY hardware_key ORDER BY hardware_key"));
  std::vector<std::pair<std::string, int64_t>> out;
  while (true) {
    KILN_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    out.push_back({select.ColumnText(0), select.ColumnInt64(1)});
  }
  return out;
}

absl::StatusOr<std::vector<v1::TuningRecord>> SqliteStorage::BestTuningRecords(
    std::string_view hardware_key) {
  absl::MutexLock l(&mu_);
  // The first row of each workload in BestTuningRecord's order (confirmed first, then median,
  // then schedule).
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_,
                         "SELECT record FROM (SELECT record, workload_key, ROW_NUMBER() OVER "
                         "(PARTITION BY workload_key ORDER BY confirmed DESC, median_ms, schedule) AS rank "
                         "FROM tuning_records WHERE hardware_key = ?) WHERE rank = 1 "
                         "ORDER BY workload_key"));
  KILN_RETURN_IF_ERROR(select.BindText(1, hardware_key));
  return ReadRecords(select);
}

absl::Status SqliteStorage::PutCostModel(std::string_view hardware_key, std::string_view model) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db_,
                         "INSERT OR REPLACE INTO cost_models (hardware_key, model, updated_ms) "
                         "VALUES (?, ?, ?)"));
  KILN_RETURN_IF_ERROR(insert.BindText(1, hardware_key));
  KILN_RETURN_IF_ERROR(insert.BindBlob(2, model));
  KILN_RETURN_IF_ERROR(insert.BindInt64(3, NowMs()));
  return insert.Run();
}

absl::StatusOr<std::optional<std::string>> SqliteStorage::GetCostModel(
    std::string_view hardware_key) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_, "SELECT model FROM cost_models WHERE hardware_key = ?"));
  KILN_RETURN_IF_ERROR(select.BindText(1, hardware_key));
  KILN_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnBlob(0));
}

absl::Status SqliteStorage::PutModelWorkloads(std::string_view graph_hash,
                                               std::string_view target_key,
                                               std::string_view options_hash,
                                               const std::vector<std::string>& workload_keys) {
  std::vector<std::string> keys = workload_keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(db_,
                         "INSERT OR REPLACE INTO model_workloads (graph_hash, target_key, "
                         "options_hash, workload_keys, updated_ms) VALUES (?, ?, ?, ?, ?)"));
  KILN_RETURN_IF_ERROR(insert.BindText(1, graph_hash));
  KILN_RETURN_IF_ERROR(insert.BindText(2, target_key));
  KILN_RETURN_IF_ERROR(insert.BindText(3, options_hash));
  KILN_RETURN_IF_ERROR(insert.BindText(4, absl::StrJoin(keys, "\n")));
  KILN_RETURN_IF_ERROR(insert.BindInt64(5, NowMs()));
  return insert.Run();
}

absl::StatusOr<std::optional<std::vector<std::string>>> SqliteStorage::GetModelWorkloads(
    std::string_view graph_hash, std::string_view target_key, std::string_view options_hash) {
  absl::MutexLock l(&mu_);
  KILN_ASSIGN_OR_RETURN(
      Statement select,
      Statement::Prepare(db_, "SELECT workload_keys FROM model_workloads WHERE graph_hash = ? "
                              "AND target_key = ? AND options_hash = ?"));
  KILN_RETURN_IF_ERROR(select.BindText(1, graph_hash));
  KILN_RETURN_IF_ERROR(select.BindText(2, target_key));
  KILN_RETURN_IF_ERROR(select.BindText(3, options_hash));
  KILN_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<std::vector<std::string>>();
  const std::string text = select.ColumnText(0);
  std::vector<std::string> keys;
  if (!text.empty()) keys = absl::StrSplit(text, '\n');
  return std::optional<std::vector<std::string>>(std::move(keys));
}

}  // namespace kiln::cache
