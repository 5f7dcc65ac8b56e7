// Record selection for compiles.
#include "server/tuning_records.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/tuning/hardware.h"
#include "wire/options.h"

namespace kiln::server {

std::string WorkloadOptionsHash(const v1::CompileOptions& options) {
  v1::CompileOptions shaping = options;
  shaping.clear_records();
  shaping.clear_hardware_key();
  shaping.clear_untuned();
  return wire::OptionsHash(shaping);
}

v1::CompileOptions OnlyRecordsOf(const v1::CompileOptions& options,
                                 const std::vector<std::string>& workload_keys) {
  const std::set<std::string> keep(workload_keys.begin(), workload_keys.end());
  v1::CompileOptions out = options;
  out.clear_records();
  for (const v1::TuningRecord& r : options.records()) {
    if (keep.count(r.workload_key())) *out.add_records() = r;
  }
  if (out.records().empty()) out.clear_hardware_key();
  return out;
}

absl::Status FillTuningRecords(cache::Storage& storage, const Target& target,
                               v1::CompileOptions& options,
                               const std::vector<std::string>* workload_keys) {
  options.clear_records();
  if (options.untuned()) {
    // No records is what untuned means: the options (and so the key) of a plain compile.
    options.clear_hardware_key();
    options.clear_untuned();
    return absl::OkStatus();
  }
  // Only the distinct keys are parsed; only the chosen key's best records are read.
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> keys = storage.TuningHardwareKeys();
  if (!keys.ok()) return keys.status();
  std::map<std::string, int64_t> per_key;
  for (const auto& [key, count] : *keys) {
    absl::StatusOr<tuning::HardwareInfo> hw = tuning::ParseHardwareKey(key);
    if (hw.ok() && hw->target_key == target.Key()) per_key[key] = count;
  }
  std::string chosen = options.hardware_key();
  if (chosen.empty()) {
    int64_t most = 0;
    for (const auto& [key, count] : per_key) {
      if (count > most) {
        most = count;
        chosen = key;
      }
    }
  }
  if (chosen.empty()) return absl::OkStatus();
  if (!per_key.count(chosen)) {
    return absl::NotFoundError(absl::StrCat("no tuning record for hardware key '", chosen,
                                            "' of target ", target.cpu,
                                            " (kiln records list shows the keys; --untuned "
                                            "compiles without records)"));
  }
  options.set_hardware_key(chosen);
  absl::StatusOr<std::vector<v1::TuningRecord>> best = storage.BestTuningRecords(chosen);
  if (!best.ok()) return best.status();
  for (v1::TuningRecord& r : *best) *options.add_records() = std::move(r);
  if (workload_keys != nullptr) options = OnlyRecordsOf(options, *workload_keys);
  return absl::OkStatus();
}

}  // namespace kiln::server
