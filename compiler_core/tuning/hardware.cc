// Hardware keys and CPU detection.
#include "compiler_core/tuning/hardware.h"

#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::tuning {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

/// "32K" / "1024K" / "16M" / "512" → bytes; 0 when unreadable.
int64_t ParseCacheSize(absl::string_view text) {
  int64_t scale = 1;
  if (absl::ConsumeSuffix(&text, "K")) scale = 1024;
  else if (absl::ConsumeSuffix(&text, "M")) scale = 1024 * 1024;
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n)) return 0;
  return n * scale;
}

int AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

std::string HardwareInfo::Key() const {
  return absl::StrCat(target_key, "|device=", device, "|units=", compute_units,
                      "|cache=", absl::StrJoin(cache_bytes, ","));
}

absl::StatusOr<HardwareInfo> ParseHardwareKey(absl::string_view key) {
  std::vector<std::string> parts = absl::StrSplit(key, '|');
  if (parts.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hardware key '", key, "': expected <target>|device=..|units=..|cache=.., got ",
        parts.size(), " fields"));
  }
  HardwareInfo info;
  info.target_key = parts[0];
  if (info.target_key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("hardware key '", key, "': empty target key"));
  }
  absl::string_view device = parts[1], units = parts[2], cache = parts[3];
  if (!absl::ConsumePrefix(&device, "device=")) {
    return absl::InvalidArgumentError(absl::StrCat("hardware key '", key, "': no device= field"));
  }
  info.device = std::string(device);
  if (!absl::ConsumePrefix(&units, "units=") || !absl::SimpleAtoi(units, &info.compute_units) ||
      info.compute_units < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware key '", key, "': units= must be a positive integer"));
  }
  if (!absl::ConsumePrefix(&cache, "cache=")) {
    return absl::InvalidArgumentError(absl::StrCat("hardware key '", key, "': no cache= field"));
  }
  for (absl::string_view c : absl::StrSplit(cache, ',', absl::SkipEmpty())) {
    int64_t bytes = 0;
    if (!absl::SimpleAtoi(c, &bytes) || bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("hardware key '", key, "': cache size '", c, "' is not a byte count"));
    }
    info.cache_bytes.push_back(bytes);
  }
  return info;
}

int HardwareDistance(const HardwareInfo& a, const HardwareInfo& b) {
  if (a.target_key != b.target_key) return -1;
  if (a.Key() == b.Key()) return 0;
  int d = 1;
  if (a.device != b.device) ++d;
  if (a.compute_units != b.compute_units) ++d;
  const size_t levels = std::max(a.cache_bytes.size(), b.cache_bytes.size());
  for (size_t i = 0; i < levels; ++i) {
    const int64_t x = i < a.cache_bytes.size() ? a.cache_bytes[i] : -1;
    const int64_t y = i < b.cache_bytes.size() ? b.cache_bytes[i] : -1;
    if (x != y) ++d;
  }
  return d;
}

HardwareInfo DetectCpuHardware(const Target& target, int cores) {
  HardwareInfo info;
  info.target_key = target.Key();
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (absl::StartsWith(line, "model name")) {
      std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
      if (kv.size() == 2) info.device = std::string(absl::StripAsciiWhitespace(kv[1]));
      break;
    }
  }
  if (info.device.empty()) info.device = target.cpu;
  // A '|' would break the key's field structure.
  for (char& c : info.device) {
    if (c == '|') c = '/';
  }
  info.compute_units = cores > 0 ? cores : AffinityCores();
  std::map<int, int64_t> by_level;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index);
    const std::string type = ReadFirstLine(dir + "/type");
    if (type.empty()) break;
    if (type == "Instruction") continue;
    int level = 0;
    if (!absl::SimpleAtoi(ReadFirstLine(dir + "/level"), &level)) continue;
    by_level[level] = ParseCacheSize(ReadFirstLine(dir + "/size"));
  }
  for (const auto& [level, bytes] : by_level) info.cache_bytes.push_back(bytes);
  return info;
}

absl::StatusOr<std::vector<int>> PinToCores(int cores, int offset) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return absl::InternalError("sched_getaffinity failed");
  }
  const int available = CPU_COUNT(&allowed);
  if (cores < 1 || offset < 0 || offset + cores > available) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot own ", cores, " cores from the ", offset,
                     "th on: this process may run on ", available));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  int skipped = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && static_cast<int>(ids.size()) < cores; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (skipped++ < offset) continue;
    CPU_SET(cpu, &set);
    ids.push_back(cpu);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return absl::InternalError("sched_setaffinity failed");
  }
  return ids;
}

}  // namespace kiln::tuning
