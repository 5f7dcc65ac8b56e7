// Tuning records from a JSON-lines file (what `kiln tune --local --records-out` writes and
// `kiln records export` prints) for local compiles: `kiln compile|check --records FILE`.
#ifndef KILN_CLIENT_RECORDS_FILE_H_
#define KILN_CLIENT_RECORDS_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler_core/tuning/records.h"

namespace kiln::client {

/// A record file's records and the schedule source over them for one hardware key.
struct FileRecords {
  tuning::RecordSet records;
  std::string hardware_key;
  std::unique_ptr<tuning::RecordScheduleSource> source;
};

/// Reads `path` and picks the hardware key the compile for `target_spec` applies: `hardware_key`
/// when given, else the only one among the file's records for that target. Errors:
/// kNotFound for a missing file; kInvalidArgument for a bad line ("FILE: line N: ..."), or
/// when the file holds records for several hardware keys of the target and none was named
/// (the message lists them); a file with no record for the target is not an error (every
/// kernel keeps its default schedule).
absl::StatusOr<std::unique_ptr<FileRecords>> LoadRecordsFile(const std::string& path,
                                                             const std::string& target_spec,
                                                             const std::string& hardware_key);

/// Every record of `path`. Errors: kNotFound for a missing file; kInvalidArgument for a bad
/// line ("FILE: line N: ...").
absl::StatusOr<tuning::RecordSet> ReadRecordSet(const std::string& path);

/// Appends `records` to `path` as JSON lines (creating it). Errors: kInternal when it cannot
/// be written.
absl::Status AppendRecordsFile(const std::string& path,
                               const std::vector<v1::TuningRecord>& records);

}  // namespace kiln::client

#endif  // KILN_CLIENT_RECORDS_FILE_H_
