// Record selection for compiles.
#include "server/tuning_records.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "compiler_core/tuning/hardware.h"

namespace kiln::server {

absl::Status FillTuningRecords(cache::Storage& storage, const Target& target,
                               v1::CompileOptions& options) {
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
  return absl::OkStatus();
}

}  // namespace kiln::server
