// For the per-workload benchmarks (kiln-bench-knobs, kiln-bench-winograd): the distinct
// workloads of several models, in order of first kernel, each with its calls per inference.
#ifndef KILN_BENCH_MODEL_WORKLOADS_H_
#define KILN_BENCH_MODEL_WORKLOADS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler_core/pipeline/workloads.h"

namespace kiln::bench {

/// The flags the per-workload benchmarks share: --models DIR, --model-names a,b, --threads N,
/// --min-ms MS (minimum measured time per candidate), --samples N (random template samples),
/// --seed S.
struct WorkloadBenchFlags {
  std::string models_dir = "../shared/models";
  std::vector<std::string> model_names;
  int threads = 1;
  double min_ms = 30;
  int samples = 0;
  uint64_t seed = 1;

  /// Takes `flag` with value `v` when it is one of these with a valid value; false otherwise.
  bool Parse(const std::string& flag, const std::string& v) {
    int64_t n = 0;
    const bool num = absl::SimpleAtoi(v, &n);
    if (flag == "--models") {
      models_dir = v;
    } else if (flag == "--model-names") {
      model_names = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (flag == "--threads" && num && n >= 1) {
      threads = static_cast<int>(n);
    } else if (flag == "--min-ms" && absl::SimpleAtod(v, &min_ms) && min_ms > 0) {
    } else if (flag == "--samples" && num && n >= 0) {
      samples = static_cast<int>(n);
    } else if (flag == "--seed" && num) {
      seed = static_cast<uint64_t>(n);
    } else {
      return false;
    }
    return true;
  }
};

/// One distinct workload over the models: the first kernel with its key, the model it came
/// from and how many kernels of all the models have that key.
struct BenchWorkload {
  pipeline::ModelWorkload w;
  int calls = 0;
  std::string model;
};

/// The workloads of `<models_dir>/<name>/model.onnx` for every name that `keep` accepts,
/// deduplicated by workload key across the models, in order of first kernel; the target they
/// were lowered for goes to `target`. Errors: the first model that fails to plan, by name.
inline absl::StatusOr<std::vector<BenchWorkload>> CollectWorkloads(
    const std::string& models_dir, const std::vector<std::string>& names,
    const std::function<bool(const pipeline::ModelWorkload&)>& keep, Target* target) {
  std::vector<BenchWorkload> out;
  std::map<std::string, size_t> index;
  for (const std::string& name : names) {
    auto found = pipeline::ExtractWorkloads(absl::StrCat(models_dir, "/", name, "/model.onnx"),
                                            {}, target);
    if (!found.ok()) {
      return absl::Status(found.status().code(), absl::StrCat(name, ": ", found.status().message()));
    }
    for (pipeline::ModelWorkload& w : *found) {
      if (!keep(w)) continue;
      const int calls = static_cast<int>(w.symbols.size());
      auto [it, fresh] = index.emplace(w.workload_key, out.size());
      if (fresh) out.push_back({std::move(w), 0, name});
      out[it->second].calls += calls;
    }
  }
  return out;
}

}  // namespace kiln::bench

#endif  // KILN_BENCH_MODEL_WORKLOADS_H_
