// Target canonical key.
#include "compiler_core/support/target.h"

#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln {

std::string GpuTarget::SmName() const {
  return absl::StrCat("sm_", sm, arch_specific ? "a" : "");
}

std::string Target::Key() const {
  if (IsGpu()) {
    return absl::StrCat(kind, ":", gpu.SmName(), ":ptx", gpu.ptx_version, ":", triple,
                        gpu.precision == "fp32" ? "" : ":" + gpu.precision);
  }
  return absl::StrCat(kind, ":", cpu, ":", triple, ":v", vector_bits, ":", features,
                      emulate_gpu ? ":emulate-gpu" : "");
}

std::optional<CpuTargetKey> ParseCpuTargetKey(std::string_view key) {
  // Key(): kind, cpu, triple, "v<bits>", features[, "emulate-gpu"]; no field holds a ':'.
  std::vector<std::string> fields = absl::StrSplit(absl::string_view(key.data(), key.size()), ':');
  if (fields.size() < 5 || fields.size() > 6 || fields[0] != "cpu") return std::nullopt;
  if (fields.size() == 6 && fields[5] != "emulate-gpu") return std::nullopt;
  return CpuTargetKey{fields[1], fields[2], fields[3], fields[4], fields.size() == 6};
}

absl::StatusOr<Target> ParseCudaTarget(std::string_view spec) {
  struct Sm {
    const char* name;
    int sm;
    bool arch_specific;
    int ptx;
  };
  static constexpr Sm kSms[] = {{"sm_80", 80, false, 70},
                                {"sm_86", 86, false, 71},
                                {"sm_89", 89, false, 78},
                                {"sm_90", 90, false, 78},
                                {"sm_90a", 90, true, 80}};
  static_assert(std::size(kSms) == std::size(kCudaSmNames));
  std::string_view name = spec;
  if (name.substr(0, 5) == "cuda:") name.remove_prefix(5);
  for (const Sm& sm : kSms) {
    if (name != sm.name) continue;
    Target t;
    t.kind = "cuda";
    t.triple = "nvptx64-nvidia-cuda";
    t.cpu = sm.name;
    t.features = absl::StrCat("+ptx", sm.ptx);
    t.vector_bits = 32;
    t.num_cores = 1;
    t.gpu = GpuTarget{sm.sm, sm.arch_specific, sm.ptx};
    return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "target '", std::string(spec), "': unknown CUDA architecture (expected cuda:",
      absl::StrJoin(kCudaSmNames, "|cuda:"), ")"));
}

bool Target::HasFeature(std::string_view name) const {
  const std::string want = absl::StrCat("+", std::string(name));
  for (size_t start = 0; start <= features.size();) {
    size_t end = features.find(',', start);
    if (end == std::string::npos) end = features.size();
    if (features.compare(start, end - start, want) == 0) return true;
    start = end + 1;
  }
  return false;
}

bool Target::HasInt8Dot4(int bits) const {
  if (bits >= 512) return HasFeature("avx512vnni");
  return HasFeature("avxvnni") || (HasFeature("avx512vnni") && HasFeature("avx512vl"));
}

absl::Status SetPrecision(Target& target, std::string_view precision) {
  if (precision.empty() || precision == "fp32") return absl::OkStatus();
  if (precision != "tf32" && precision != "fp16" && precision != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat("--precision ", std::string(precision),
                                                   ": expected fp32, tf32, fp16 or bf16"));
  }
  if (!target.IsGpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--precision ", std::string(precision), " applies to cuda targets (tensor cores); target ",
        target.kind, ":", target.cpu, " computes in fp32"));
  }
  target.gpu.precision = std::string(precision);
  return absl::OkStatus();
}

}  // namespace kiln
