// Target spec resolution without LLVM (ResolveTarget in target.h): "host" from CPUID,
// "cpu:<name>" from the x86-64 CPU table generated from LLVM at build time, "cuda:sm_NN" by
// ParseCudaTarget.
#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/support/target.h"
#include "compiler_core/support/x86_cpu.h"

namespace kiln {
namespace {

constexpr char kX86Triple[] = "x86_64-pc-linux-gnu";

// Sorted by feature name (ignoring the +/- sign).
void SortFeatures(std::vector<std::string>& features) {
  std::sort(features.begin(), features.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
}

// Whether LLVM's x86-64 tables name `feature` (a feature of some CPU, or one host detection
// reports).
bool KnownFeature(const std::string& feature) {
  static const std::set<std::string>* const kKnown = [] {
    auto* known = new std::set<std::string>();
    for (const x86::X86Cpu& cpu : x86::KnownCpus()) {
      for (std::string& f : x86::FeaturesOf(cpu)) known->insert(std::move(f));
    }
    for (const auto& [name, has] : x86::HostFeatures()) known->insert(name);
    return known;
  }();
  return kKnown->count(feature) != 0;
}

}  // namespace

std::string NativeTargetSpec() {
  absl::StatusOr<Target> host = ResolveTarget("host");
  if (!host.ok()) return "native";
  return absl::StrCat("cpu:", host->cpu, ":", host->features);
}

absl::StatusOr<Target> ResolveTarget(std::string_view spec) {
  if (spec.substr(0, 5) == "cuda:") return ParseCudaTarget(spec);
  Target t;
  t.kind = "cpu";
  t.triple = kX86Triple;
  std::vector<std::string> features;
  if (spec == "host" || spec == "native") {
    const std::map<std::string, bool> host = x86::HostFeatures();
    if (host.empty()) {
      return absl::InvalidArgumentError("target host: only x86-64 hosts are supported");
    }
    t.cpu = x86::NameCpu(x86::HostSignature(), host).name;
    for (const auto& [name, has] : host) features.push_back(absl::StrCat(has ? "+" : "-", name));
    unsigned cores = std::thread::hardware_concurrency();
    t.num_cores = cores == 0 ? 1 : static_cast<int>(cores);
  } else if (spec.substr(0, 4) == "cpu:" && spec.size() > 4) {
    // "cpu:NAME" or "cpu:NAME:+f1,-f2,...": a CPU with the table's features or with exactly
    // the features given (what --target native sends: the client's CPU as CPUID reports it).
    std::string_view rest = spec.substr(4);
    const size_t colon = rest.find(':');
    t.cpu = std::string(rest.substr(0, colon));
    const x86::X86Cpu* cpu = x86::FindCpu(t.cpu);
    if (cpu == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("target ", std::string(spec), ": LLVM knows no x86-64 CPU named ", t.cpu));
    }
    if (colon == std::string_view::npos) {
      for (const std::string& f : x86::FeaturesOf(*cpu)) features.push_back("+" + f);
    } else {
      const std::string listed(rest.substr(colon + 1));
      for (absl::string_view f : absl::StrSplit(listed, ',', absl::SkipEmpty())) {
        const std::string name(f.substr(1));
        if ((f[0] != '+' && f[0] != '-') || !KnownFeature(name)) {
          return absl::InvalidArgumentError(
              absl::StrCat("target ", std::string(spec), ": '", f,
                           "' is not +FEATURE or -FEATURE with a feature LLVM knows for x86-64"));
        }
        features.emplace_back(f);
      }
    }
    t.num_cores = 1;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown target spec '", std::string(spec),
                     "' (expected host, native, cpu:<llvm cpu name>[:+feature,-feature,...] or "
                     "cuda:sm_80|sm_86|sm_89|sm_90|sm_90a)"));
  }
  SortFeatures(features);
  t.features = absl::StrJoin(features, ",");
  if (t.HasFeature("avx512f")) {
    t.vector_bits = 512;
  } else if (t.HasFeature("avx2") || t.HasFeature("avx")) {
    t.vector_bits = 256;
  } else {
    t.vector_bits = 128;
  }
  return t;
}

}  // namespace kiln
