// Tuning record validation, JSON lines, digests and record sets.
#include "compiler_core/tuning/records.h"

#include <cmath>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "compiler_core/support/sha256.h"
#include "google/protobuf/util/json_util.h"

namespace kiln::tuning {
namespace {

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

/// Lower median first; ties: the smaller schedule text.
bool Faster(const v1::TuningRecord& a, const v1::TuningRecord& b) {
  if (a.median_ms() != b.median_ms()) return a.median_ms() < b.median_ms();
  return a.schedule() < b.schedule();
}

/// Whether a compile may apply `r`: it won a fair comparison with the default schedule, i.e. it
/// was confirmed (a paired re-measurement), or it beat the default measured in its own batch,
/// or it does not say what the default measured (default_median_ms 0).
bool Eligible(const v1::TuningRecord& r) {
  return r.confirmed() || r.default_median_ms() <= 0 || r.median_ms() < r.default_median_ms();
}

/// What a compile applies: confirmed records first, then Faster.
bool Better(const v1::TuningRecord& a, const v1::TuningRecord& b) {
  if (a.confirmed() != b.confirmed()) return a.confirmed();
  return Faster(a, b);
}

}  // namespace

absl::Status ValidateRecord(const v1::TuningRecord& r) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (r.format_version() != kRecordFormatVersion) {
    return bad(absl::StrCat("format_version ", r.format_version(), " is not supported (this build "
                            "reads version ", kRecordFormatVersion, ")"));
  }
  if (!IsHex64(r.workload_key())) {
    return bad(absl::StrCat("workload_key '", r.workload_key(),
                            "' is not 64 lowercase hex digits"));
  }
  if (absl::StatusOr<HardwareInfo> hw = ParseHardwareKey(r.hardware_key()); !hw.ok()) {
    return bad(absl::StrCat("hardware_key: ", hw.status().message()));
  }
  if (r.schedule().empty()) return bad("schedule is empty");
  if (absl::StatusOr<schedule::Schedule> s = schedule::ParseSchedule(r.schedule()); !s.ok()) {
    return bad(absl::StrCat("schedule: ", s.status().message()));
  }
  for (double v : {r.median_ms(), r.p10_ms(), r.p90_ms()}) {
    if (!std::isfinite(v) || v <= 0) {
      return bad(absl::StrFormat("times must be finite and positive (p10 %g, median %g, p90 %g "
                                 "ms)", r.p10_ms(), r.median_ms(), r.p90_ms()));
    }
  }
  if (!(r.p10_ms() <= r.median_ms() && r.median_ms() <= r.p90_ms())) {
    return bad(absl::StrFormat("times must satisfy p10 <= median <= p90 (p10 %g, median %g, p90 "
                               "%g ms)", r.p10_ms(), r.median_ms(), r.p90_ms()));
  }
  if (r.repeats() < 1) return bad(absl::StrCat("repeats ", r.repeats(), " must be at least 1"));
  if (r.compiler_version().empty()) return bad("compiler_version is empty");
  if (r.provenance() == v1::TuningRecord::PROVENANCE_UNSPECIFIED ||
      !v1::TuningRecord::Provenance_IsValid(r.provenance())) {
    return bad("provenance must be MEASURED, IMPORTED or TRANSFERRED");
  }
  return absl::OkStatus();
}

std::string RecordToJsonLine(const v1::TuningRecord& record) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(record, &out, options);
  return out;
}

absl::StatusOr<v1::TuningRecord> RecordFromJsonLine(absl::string_view line) {
  v1::TuningRecord record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(line.data(), line.size()), &record, options);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not a tuning record: ", st.message().ToString()));
  }
  absl::Status valid = ValidateRecord(record);
  if (!valid.ok()) return valid;
  return record;
}

absl::StatusOr<std::vector<v1::TuningRecord>> ParseRecordLines(absl::string_view text) {
  std::vector<v1::TuningRecord> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<v1::TuningRecord> r = RecordFromJsonLine(line);
    if (!r.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", r.status().message()));
    }
    out.push_back(std::move(*r));
  }
  return out;
}

std::string RecordDigest(const v1::TuningRecord& r) {
  return Sha256Hex(absl::StrFormat("%s\n%s\n%s\n%.17g\n", r.workload_key(), r.hardware_key(),
                                   r.schedule(), r.median_ms()));
}

absl::Status RecordSet::Add(v1::TuningRecord record) {
  absl::Status st = ValidateRecord(record);
  if (!st.ok()) return st;
  auto key = std::make_tuple(record.workload_key(), record.hardware_key(), record.schedule());
  records_[key] = std::move(record);
  return absl::OkStatus();
}

const v1::TuningRecord* RecordSet::Best(const std::string& workload_key,
                                        const std::string& hardware_key) const {
  const v1::TuningRecord* best = nullptr;
  for (auto it = records_.lower_bound({workload_key, hardware_key, ""});
       it != records_.end() && std::get<0>(it->first) == workload_key &&
       std::get<1>(it->first) == hardware_key;
       ++it) {
    if (!Eligible(it->second)) continue;
    if (best == nullptr || Better(it->second, *best)) best = &it->second;
  }
  return best;
}

const v1::TuningRecord* RecordSet::Find(const std::string& workload_key,
                                        const std::string& hardware_key,
                                        const std::string& schedule) const {
  auto it = records_.find({workload_key, hardware_key, schedule});
  return it == records_.end() ? nullptr : &it->second;
}

std::vector<const v1::TuningRecord*> RecordSet::Nearest(const std::string& workload_key,
                                                        const HardwareInfo& hardware, size_t max,
                                                        const std::string& exclude_schedule) const {
  std::map<std::string, const v1::TuningRecord*> best_per_hw;
  for (auto it = records_.lower_bound({workload_key, "", ""});
       it != records_.end() && std::get<0>(it->first) == workload_key; ++it) {
    const v1::TuningRecord& r = it->second;
    if (r.hardware_key() == hardware.Key()) continue;
    if (!exclude_schedule.empty() && r.schedule() == exclude_schedule) continue;
    auto [slot, inserted] = best_per_hw.try_emplace(r.hardware_key(), &r);
    // Seeds are measured again before anything applies them: the fastest is the best bet,
    // confirmed or not (a confirmed default would seed nothing new).
    if (!inserted && Faster(r, *slot->second)) slot->second = &r;
  }
  std::vector<std::pair<int, const v1::TuningRecord*>> ranked;
  for (const auto& [hw_key, r] : best_per_hw) {
    absl::StatusOr<HardwareInfo> other = ParseHardwareKey(hw_key);
    if (!other.ok()) continue;
    const int d = HardwareDistance(hardware, *other);
    if (d > 0) ranked.push_back({d, r});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const v1::TuningRecord*> out;
  for (const auto& [d, r] : ranked) {
    if (out.size() == max) break;
    out.push_back(r);
  }
  return out;
}

std::vector<const v1::TuningRecord*> RecordSet::All() const {
  std::vector<const v1::TuningRecord*> out;
  for (const auto& [key, r] : records_) out.push_back(&r);
  return out;
}

std::vector<std::string> RecordSet::HardwareKeysFor(const std::string& target_key) const {
  std::vector<std::string> keys;
  for (const auto& [key, r] : records_) {
    absl::StatusOr<HardwareInfo> hw = ParseHardwareKey(r.hardware_key());
    if (!hw.ok() || hw->target_key != target_key) continue;
    if (std::find(keys.begin(), keys.end(), r.hardware_key()) == keys.end()) {
      keys.push_back(r.hardware_key());
    }
  }
  return keys;
}

schedule::ScheduleChoice RecordScheduleSource::Choose(const loop::Func& lowered,
                                                      const std::string& workload_key,
                                                      const Target& target) const {
  schedule::Schedule default_schedule = schedule::DefaultSchedule(lowered, target);
  const std::string default_text = default_schedule.ToString();
  const v1::TuningRecord* best = records_.Best(workload_key, hardware_key_);
  // No record beat the default: the default's own measurement, if there is one.
  if (best == nullptr) best = records_.Find(workload_key, hardware_key_, default_text);
  if (best == nullptr) return schedule::ScheduleChoice{std::move(default_schedule), false, 0, ""};
  // A record whose schedule is the default's (the default measured fastest) keeps the default
  // schedule, untuned, but still names the record it follows.
  if (best->schedule() == default_text) {
    return schedule::ScheduleChoice{std::move(default_schedule), false, best->median_ms(),
                                    RecordDigest(*best)};
  }
  absl::StatusOr<schedule::Schedule> s = schedule::ParseSchedule(best->schedule());
  if (!s.ok()) return schedule::ScheduleChoice{std::move(default_schedule), false, 0, ""};
  return schedule::ScheduleChoice{*s, true, best->median_ms(), RecordDigest(*best)};
}

}  // namespace kiln::tuning
