// Tuning records (proto/kiln/v1/tuning.proto): validation, the JSON-lines form that
// `kiln records export|import` moves between daemons and fleets, the record digest that enters
// artifact cache keys, and the set a compile picks the best record per workload from.
#ifndef KILN_COMPILER_CORE_TUNING_RECORDS_H_
#define KILN_COMPILER_CORE_TUNING_RECORDS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/schedule/schedule_source.h"
#include "compiler_core/tuning/hardware.h"
#include "kiln/v1/tuning.pb.h"

namespace kiln::tuning {

/// The record format version this build writes and reads.
inline constexpr uint32_t kRecordFormatVersion = 1;

/// Checks a record: format version 1, a 64-hex workload key, a parsable hardware key, a
/// parsable non-empty schedule, finite times with 0 < p10 <= median <= p90, at least one
/// repeat, a compiler version, a known provenance. Errors: kInvalidArgument naming the field.
absl::Status ValidateRecord(const v1::TuningRecord& record);

/// One JSON object on one line (protobuf's JSON mapping with the proto's field names, every
/// field present), no trailing newline.
std::string RecordToJsonLine(const v1::TuningRecord& record);
/// Parses and validates one line. Errors: kInvalidArgument (bad JSON, unknown field, or what
/// ValidateRecord says).
absl::StatusOr<v1::TuningRecord> RecordFromJsonLine(absl::string_view line);
/// Parses and validates every non-empty line of `text`, all or nothing. Errors:
/// kInvalidArgument "line N: ..." for the first bad line.
absl::StatusOr<std::vector<v1::TuningRecord>> ParseRecordLines(absl::string_view text);

/// SHA-256 (hex) of what a record contributes to an artifact: workload key, hardware key,
/// schedule trace and median (not provenance, worker or time, so an exported and re-imported
/// record yields the identical artifact).
std::string RecordDigest(const v1::TuningRecord& record);

/// Records by (workload key, hardware key).
class RecordSet {
 public:
  /// Adds a validated record (ValidateRecord's errors otherwise). A record with the same
  /// workload key, hardware key and schedule replaces the older one.
  absl::Status Add(v1::TuningRecord record);

  /// The best record of `workload_key` on exactly `hardware_key`, or null, among the records
  /// that won a fair comparison with the default schedule (confirmed by a paired
  /// re-measurement, or faster than the default measured in the same batch, or with no default
  /// measurement to compare): the fastest confirmed one if any (a paired re-measurement beats a
  /// lucky first median), else the fastest (lowest median; ties: the smaller schedule text).
  const v1::TuningRecord* Best(const std::string& workload_key,
                               const std::string& hardware_key) const;
  /// The record of exactly this workload, hardware and schedule text, or null.
  const v1::TuningRecord* Find(const std::string& workload_key, const std::string& hardware_key,
                               const std::string& schedule) const;
  /// For transfer: the fastest record (lowest median, confirmed or not: seeds are measured
  /// again) of `workload_key` on each other hardware with the same target key, nearest first
  /// (HardwareDistance), at most `max` of them; records whose schedule is `exclude_schedule`
  /// (the default schedule, measured in every round anyway) are skipped.
  std::vector<const v1::TuningRecord*> Nearest(const std::string& workload_key,
                                               const HardwareInfo& hardware, size_t max,
                                               const std::string& exclude_schedule = "") const;
  /// Every record, ordered by (workload key, hardware key, schedule).
  std::vector<const v1::TuningRecord*> All() const;
  /// The distinct hardware keys of the records whose target key is `target_key`.
  std::vector<std::string> HardwareKeysFor(const std::string& target_key) const;
  size_t size() const { return records_.size(); }

 private:
  std::map<std::tuple<std::string, std::string, std::string>, v1::TuningRecord> records_;
};

/// Applies the best record of each workload on `hardware_key` (never a record of other
/// hardware: transferred records are measured again before they count); the default schedule
/// where there is none or its schedule does not parse. When the best record is the default
/// schedule's own, or no record beat the default and the default has one, the kernel keeps the
/// default, untuned, with that record's median and digest. `records` must outlive the
/// source.
class RecordScheduleSource final : public schedule::ScheduleSource {
 public:
  RecordScheduleSource(const RecordSet& records, std::string hardware_key)
      : records_(records), hardware_key_(std::move(hardware_key)) {}
  schedule::ScheduleChoice Choose(const loop::Func& lowered, const std::string& workload_key,
                                  const Target& target) const override;

 private:
  const RecordSet& records_;
  std::string hardware_key_;
};

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_RECORDS_H_
