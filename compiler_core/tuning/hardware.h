// The hardware key: what a measured kernel time depends on beyond the code. The target key
// (ISA, CPU name, features, vector width) decides the code; the device model, the cores the
// measuring worker owns and the cache sizes decide how fast it runs. Tuning records are keyed by
// (workload key, hardware key). Nothing here assumes a CPU: a GPU device fills the same fields
// (device = "NVIDIA H200", compute_units = SMs, cache_bytes = L1/shared per SM, L2).
#ifndef KILN_COMPILER_CORE_TUNING_HARDWARE_H_
#define KILN_COMPILER_CORE_TUNING_HARDWARE_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/support/target.h"

namespace kiln::tuning {

/// A device as a measure worker sees it.
struct HardwareInfo {
  std::string target_key;   // Target::Key() of the code measured on it
  std::string device;       // "AMD EPYC 9R14 96-Core Processor", later "NVIDIA H200"
  int compute_units = 1;    // CPU: cores the measuring worker owns (pinned); GPU: SMs
  /// Per cache level, innermost first, in bytes (CPU: L1d, L2, L3).
  std::vector<int64_t> cache_bytes;

  /// Canonical form: "<target key>|device=<device>|units=<n>|cache=<b0>,<b1>,...". Two workers
  /// whose keys are equal measure the same times.
  std::string Key() const;
};

/// Parses HardwareInfo::Key(). Errors: kInvalidArgument naming the malformed field.
absl::StatusOr<HardwareInfo> ParseHardwareKey(absl::string_view key);

/// How far apart two devices are for transferring records: 0 for the same key; otherwise
/// 1 + the number of differing fields among device, units and each cache size, when the target
/// keys (so the ISA features) are equal; -1 when they differ (records never transfer).
int HardwareDistance(const HardwareInfo& a, const HardwareInfo& b);

/// This machine's CPU as a measure worker owning `cores` cores (<= 0: every core this process
/// may run on): the "model name" of /proc/cpuinfo and the data/unified cache sizes of cpu0 from
/// /sys/devices/system/cpu/cpu0/cache. Errors: none fatal; unknown fields stay empty.
HardwareInfo DetectCpuHardware(const Target& target, int cores);

/// Pins the calling thread (and so the threads it starts afterwards, and its children) to
/// `cores` CPUs this process may run on, skipping the first `offset` of them, so that a measure
/// worker owns its cores (worker i of N takes offset i * cores). Returns the CPU ids it pinned
/// to. Errors: kInvalidArgument when `cores` < 1, `offset` < 0 or offset + cores exceeds the
/// CPUs the process may use; kInternal when the kernel refuses the affinity.
absl::StatusOr<std::vector<int>> PinToCores(int cores, int offset = 0);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_HARDWARE_H_
