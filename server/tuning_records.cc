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
  absl::StatusOr<std::vector<v1::TuningRecord>> all = storage.ListTuningRecords(
      options.hardware_key());
  if (!all.ok()) return all.status();
  std::map<std::string, int> per_key;
  for (const v1::TuningRecord& r : *all) {
    absl::StatusOr<tuning::HardwareInfo> hw = tuning::ParseHardwareKey(r.hardware_key());
    if (hw.ok() && hw->target_key == target.Key()) ++per_key[r.hardware_key()];
  }
  std::string chosen = options.hardware_key();
  if (chosen.empty()) {
    int most = 0;
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
  // Listed by workload, hardware key, median, schedule: the first of a workload is its best.
  std::string last_workload;
  for (const v1::TuningRecord& r : *all) {
    if (r.hardware_key() != chosen || r.workload_key() == last_workload) continue;
    last_workload = r.workload_key();
    *options.add_records() = r;
  }
  return absl::OkStatus();
}

}  // namespace kiln::server
