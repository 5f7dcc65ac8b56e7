// Benchmark (not a test): what Winograd is worth per workload. For every distinct 3x3 stride-1
// blocked conv workload of the models, measures in one batch on this machine (child process,
// cache flush, outputs checked against the default) the direct conv's default schedule and the
// template's Winograd F(2x2,3x3) and F(4x4,3x3) candidates (knob conv.winograd = 2, 4, every
// other knob at its default), plus --samples random template samples of each algorithm, and
// prints the medians and their ratios to the default.
//   kiln-bench-winograd [--models DIR] [--model-names resnet18,squeezenet1_1,...]
//                       [--threads 1] [--min-ms 50] [--samples 0] [--seed 1]
//                       [--records-out FILE.jsonl [--records-algorithm best|direct|f2|f4]]
// The last line sums each algorithm's best over the workloads, weighted by calls per inference.
// --records-out appends, per workload, the measured tuning record of the fastest candidate (of
// the given algorithm), for `kiln check --records` and kiln-bench-model --records.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/model_workloads.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/schedule/winograd.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/local_measurer.h"
#include "compiler_core/tuning/records.h"
#include "compiler_core/tuning/search.h"
#include "compiler_core/tuning/space.h"

namespace {

struct Options {
  kiln::bench::WorkloadBenchFlags common{
      "../shared/models", {"resnet18", "squeezenet1_1"}, 1, 50};
  std::string records_out;
  int records_algorithm = -1;  // -1 best, 0 direct, 1 F2, 2 F4
};

int Fail(const std::string& msg) {
  std::fprintf(stderr, "kiln-bench-winograd: %s\n", msg.c_str());
  return 1;
}

bool ParseArgs(int argc, char** argv, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      error = "flag " + flag + " needs a value";
      return false;
    }
    const std::string v = argv[++i];
    if (o.common.Parse(flag, v)) continue;
    if (flag == "--records-out") {
      o.records_out = v;
    } else if (flag == "--records-algorithm" &&
               (v == "best" || v == "direct" || v == "f2" || v == "f4")) {
      o.records_algorithm = v == "best" ? -1 : v == "direct" ? 0 : v == "f2" ? 1 : 2;
    } else {
      error = "bad flag or value: " + flag + " " + v;
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!ParseArgs(argc, argv, o, error)) return Fail(error);
  kiln::Target target;
  auto workloads = kiln::bench::CollectWorkloads(
      o.common.models_dir, o.common.model_names,
      [](const kiln::pipeline::ModelWorkload& w) {
        return kiln::schedule::CanApplyWinograd(w.lowered);
      },
      &target);
  if (!workloads.ok()) return Fail(std::string(workloads.status().message()));
  const kiln::tuning::HardwareInfo hw = kiln::tuning::DetectCpuHardware(target, o.common.threads);
  kiln::tuning::MeasureOptions measure;
  measure.num_threads = o.common.threads;
  measure.min_measure_ms = o.common.min_ms;
  kiln::tuning::LocalMeasurer measurer(target, hw.Key(), measure);
  std::printf("Winograd vs direct conv: %zu workloads of %s, %d thread(s), %s\n", workloads->size(),
              absl::StrJoin(o.common.model_names, ", ").c_str(), o.common.threads, hw.device.c_str());
  std::printf("%-14s %-24s %5s %10s %10s %10s %7s %7s\n", "model", "shape (out)", "calls",
              "direct ms", "F2 ms", "F4 ms", "F2/dir", "F4/dir");
  double total[3] = {0, 0, 0}, best_total = 0;
  std::mt19937_64 rng(o.common.seed);
  std::ofstream records;
  if (!o.records_out.empty()) {
    records.open(o.records_out, std::ios::app);
    if (!records) return Fail("cannot open " + o.records_out);
  }
  for (const kiln::bench::BenchWorkload& e : *workloads) {
    const std::string& key = e.w.workload_key;
    kiln::tuning::ScheduleSpace space(e.w.lowered, target);
    std::vector<kiln::tuning::Candidate> candidates;
    std::vector<int> algo;  // 0 direct, 1 F2, 2 F4
    for (int a = 0; a < 3; ++a) {
      const int64_t m = a == 0 ? 0 : 2 * a;
      candidates.push_back(space.Instantiate({{"conv.winograd", m}}));
      algo.push_back(a);
      for (int s = 0; s < o.common.samples; ++s) {
        kiln::schedule::KnobConfig k = space.Sample(rng).config;
        k["conv.winograd"] = m;
        candidates.push_back(space.Instantiate(k));
        algo.push_back(a);
      }
    }
    std::vector<kiln::schedule::Schedule> schedules;
    for (const kiln::tuning::Candidate& c : candidates) schedules.push_back(c.schedule);
    auto m = measurer.Measure(e.w.lowered, schedules);
    if (!m.ok()) return Fail(std::string(m.status().message()));
    double best[3] = {1e30, 1e30, 1e30};
    int chosen = -1;  // the candidate whose record --records-out writes
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = m->candidates[i];
      if (!c.status.ok()) {
        std::fprintf(stderr, "%s candidate %zu: %s\n", key.substr(0, 12).c_str(), i,
                     std::string(c.status.message()).c_str());
        continue;
      }
      best[algo[i]] = std::min(best[algo[i]], c.median_ms);
      if ((o.records_algorithm < 0 || o.records_algorithm == algo[i]) &&
          (chosen < 0 || c.median_ms < m->candidates[chosen].median_ms)) {
        chosen = static_cast<int>(i);
      }
    }
    if (records.is_open() && chosen >= 0) {
      records << kiln::tuning::RecordToJsonLine(kiln::tuning::MeasuredRecord(
                     key, candidates[chosen], m->candidates[chosen], m->reference.median_ms,
                     measurer, kiln::pipeline::kCompilerVersion))
              << "\n";
    }
    const auto& out = e.w.lowered.params.back()->shape;
    std::string shape = absl::StrCat(out.size() > 3 ? out[1] * out.back() : 0, "x",
                                     out.size() > 3 ? out[2] : 0, "x",
                                     out.size() > 3 ? out[3] : 0);
    std::printf("%-14s %-24s %5d %10.4f %10.4f %10.4f %7.2f %7.2f\n", e.model.c_str(),
                shape.c_str(), e.calls, best[0], best[1], best[2], best[1] / best[0],
                best[2] / best[0]);
    std::fflush(stdout);
    for (int a = 0; a < 3; ++a) total[a] += e.calls * best[a];
    best_total += e.calls * std::min({best[0], best[1], best[2]});
  }
  std::printf("total (ms per inference, weighted by calls): direct %.3f, F2 %.3f, F4 %.3f, "
              "best of each %.3f (%.2fx direct)\n",
              total[0], total[1], total[2], best_total, best_total / total[0]);
  return 0;
}
