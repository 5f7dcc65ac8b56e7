#include "compiler_core/runtime/host_check.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/support/target.h"
#include "compiler_core/support/x86_cpu.h"

namespace kiln::runtime {

namespace {

// Whether code generation may select instructions of LLVM feature `name` for a model's kernels:
// the SIMD, AMX, bit-manipulation, crypto and atomic ISA extensions. System features a CPU
// table also lists (sgx, pconfig, enqcmd, uintr, waitpkg, shstk, pku, ...) come only from
// intrinsics Kiln never emits, so an artifact for a CPU with them runs on a host without them.
bool CodegenFeature(absl::string_view name) {
  static constexpr absl::string_view kPrefixes[] = {
      "sse",   "ssse3", "avx",  "fma",    "f16c",       "amx",     "bmi", "lzcnt", "popcnt",
      "movbe", "aes",   "vaes", "pclmul", "vpclmulqdq", "gfni",    "sha", "xop",   "tbm",
      "adx",   "cx16",  "sahf", "prfchw", "crc32",      "evex512", "sm3", "sm4"};
  for (absl::string_view prefix : kPrefixes) {
    if (absl::StartsWith(name, prefix)) return true;
  }
  return false;
}

}  // namespace

absl::Status CheckTargetRunsOnHost(absl::string_view target_key,
                                   const std::map<std::string, bool>& host_features) {
  std::optional<CpuTargetKey> key =
      ParseCpuTargetKey(std::string_view(target_key.data(), target_key.size()));
  if (!key) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", target_key, "' is not a CPU target key (cpu:<cpu>:<triple>:v<bits>:<features>)"));
  }
  const std::string& cpu = key->cpu;
  if (!absl::StartsWith(key->triple, "x86_64")) {
    return absl::FailedPreconditionError(absl::StrCat("the artifact was compiled for the triple ",
                                                      key->triple, ", not for this x86-64 host"));
  }
  if (host_features.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the artifact was compiled for cpu:", cpu, " (x86-64); this host is not one"));
  }
  std::vector<std::string> missing;
  for (absl::string_view feature : absl::StrSplit(key->features, ',', absl::SkipEmpty())) {
    if (feature.front() != '+') continue;
    feature.remove_prefix(1);
    if (!CodegenFeature(feature)) continue;
    auto it = host_features.find(std::string(feature));
    if (it != host_features.end() && !it->second) missing.emplace_back(feature);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the artifact was compiled for cpu:", cpu, ", whose feature",
      missing.size() == 1 ? " " : "s ", absl::StrJoin(missing, ", "), " this CPU lacks",
      "; compile it for this CPU (--target host) or run it on a machine that has ",
      missing.size() == 1 ? "it" : "them"));
}

absl::Status CheckTargetRunsHere(absl::string_view target_key) {
  static const std::map<std::string, bool>* const kHost =
      new std::map<std::string, bool>(x86::HostFeatures());
  return CheckTargetRunsOnHost(target_key, *kHost);
}

}  // namespace kiln::runtime
