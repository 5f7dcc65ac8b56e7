// Record files.
#include "client/records_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/support/file_bytes.h"

namespace kiln::client {

absl::StatusOr<tuning::RecordSet> ReadRecordSet(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("records file '", path, "' cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<v1::TuningRecord>> parsed = tuning::ParseRecordLines(text.str());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", parsed.status().message()));
  }
  tuning::RecordSet set;
  for (v1::TuningRecord& r : *parsed) {
    absl::Status st = set.Add(std::move(r));
    if (!st.ok()) return st;
  }
  return set;
}

absl::StatusOr<std::unique_ptr<FileRecords>> LoadRecordsFile(const std::string& path,
                                                             const std::string& target_spec,
                                                             const std::string& hardware_key) {
  absl::StatusOr<tuning::RecordSet> set = ReadRecordSet(path);
  if (!set.ok()) return set.status();
  auto out = std::make_unique<FileRecords>();
  out->records = std::move(*set);
  absl::StatusOr<Target> target = kiln::ResolveTarget(target_spec);
  if (!target.ok()) return target.status();
  out->hardware_key = hardware_key;
  if (!hardware_key.empty()) {
    std::vector<std::string> keys = out->records.HardwareKeysFor(target->Key());
    if (std::find(keys.begin(), keys.end(), hardware_key) == keys.end()) {
      return absl::NotFoundError(absl::StrCat(path, " has no record for hardware key '",
                                              hardware_key, "' of this target (it has ",
                                              keys.size(), ": ", absl::StrJoin(keys, " ; "), ")"));
    }
  } else {
    std::vector<std::string> keys = out->records.HardwareKeysFor(target->Key());
    if (keys.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " has records for ", keys.size(), " hardware keys of this target; name one with "
          "--hardware-key: ", absl::StrJoin(keys, " ; ")));
    }
    if (keys.size() == 1) out->hardware_key = keys[0];
  }
  out->source = std::make_unique<tuning::RecordScheduleSource>(out->records, out->hardware_key);
  return out;
}

absl::Status AppendRecordsFile(const std::string& path,
                               const std::vector<v1::TuningRecord>& records) {
  // Old lines, then the new ones, written atomically: a crash leaves the old file or the new
  // one, never a torn line.
  std::string text;
  if (std::ifstream in(path, std::ios::binary); in) {
    std::stringstream old;
    old << in.rdbuf();
    text = old.str();
    if (!text.empty() && text.back() != '\n') text += '\n';
  }
  for (const v1::TuningRecord& r : records) absl::StrAppend(&text, tuning::RecordToJsonLine(r), "\n");
  return WriteFileAtomically(path, text);
}

}  // namespace kiln::client
