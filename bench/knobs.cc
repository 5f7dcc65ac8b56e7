// Benchmark (not a test): what the schedule template's knobs are worth per workload, for
// choosing the template's per-target default rules. For every distinct workload of the models
// whose fused ops start with --ops (default "Conv"), measures in one batch on this machine
// (child process, cache flush, outputs checked against the default) the default schedule, each
// --configs point and --samples random template samples, and prints the default's and the
// best candidate's median, GFLOP/s and the best candidate's knob config.
//   kiln-bench-knobs [--models DIR] [--model-names squeezenet1_1,mobilenet_v2,...]
//                    [--ops Conv] [--threads 1] [--min-ms 30] [--samples 0] [--seed 1]
//                    [--configs "conv.cols=6,conv.vecs=2;conv.cols=4,conv.vecs=3"]
// A config's knob names carry no nest prefix: "conv.cols=6" sets every nest's "n<i>.conv.cols"
// (a value outside a knob's choices leaves that knob at its default). With --all, every
// candidate's median is printed, not only the best. The last line sums the default's and the
// best's medians over the workloads, weighted by calls per inference.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/model_workloads.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/local_measurer.h"
#include "compiler_core/tuning/space.h"

namespace {

struct Options {
  kiln::bench::WorkloadBenchFlags common{
      "../shared/models", {"squeezenet1_1", "mobilenet_v2"}, 1, 30};
  std::string ops = "Conv";
  std::vector<std::string> configs;
  bool all = false;
};

int Fail(const std::string& msg) {
  std::fprintf(stderr, "kiln-bench-knobs: %s\n", msg.c_str());
  return 1;
}

bool ParseArgs(int argc, char** argv, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--all") {
      o.all = true;
      continue;
    }
    if (i + 1 >= argc) {
      error = "flag " + flag + " needs a value";
      return false;
    }
    const std::string v = argv[++i];
    if (o.common.Parse(flag, v)) continue;
    if (flag == "--ops") {
      o.ops = v;
    } else if (flag == "--configs") {
      o.configs = absl::StrSplit(v, ';', absl::SkipEmpty());
    } else {
      error = "bad flag or value: " + flag + " " + v;
      return false;
    }
  }
  return true;
}

/// `config` (unprefixed knob names) spread over every nest's knob of that name in `space`.
kiln::schedule::KnobConfig Spread(const kiln::schedule::KnobConfig& config,
                                  const kiln::tuning::ScheduleSpace& space) {
  kiln::schedule::KnobConfig out;
  for (const auto& [name, value] : config) {
    bool any = false;
    for (const kiln::schedule::Knob& k : space.knobs()) {
      const size_t dot = k.name.find('.');
      if (k.name == name || (dot != std::string::npos && k.name.substr(dot + 1) == name)) {
        out[k.name] = value;
        any = true;
      }
    }
    if (!any) out[name] = value;
  }
  return out;
}

std::string Dims(const std::vector<int64_t>& shape) { return absl::StrJoin(shape, "x"); }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!ParseArgs(argc, argv, o, error)) return Fail(error);
  std::vector<kiln::schedule::KnobConfig> configs;
  for (const std::string& text : o.configs) {
    auto c = kiln::schedule::ParseKnobConfig(text);
    if (!c.ok()) return Fail(absl::StrCat("--configs: ", c.status().message()));
    configs.push_back(*std::move(c));
  }
  kiln::Target target;
  auto workloads = kiln::bench::CollectWorkloads(
      o.common.models_dir, o.common.model_names,
      [&](const kiln::pipeline::ModelWorkload& w) { return absl::StartsWith(w.fused_ops, o.ops); },
      &target);
  if (!workloads.ok()) return Fail(std::string(workloads.status().message()));
  const kiln::tuning::HardwareInfo hw = kiln::tuning::DetectCpuHardware(target, o.common.threads);
  kiln::tuning::MeasureOptions measure;
  measure.num_threads = o.common.threads;
  measure.min_measure_ms = o.common.min_ms;
  kiln::tuning::LocalMeasurer measurer(target, hw.Key(), measure);
  std::printf("knobs: %zu workloads (%s*) of %s, %d thread(s), %s\n", workloads->size(), o.ops.c_str(),
              absl::StrJoin(o.common.model_names, ", ").c_str(), o.common.threads, hw.device.c_str());
  std::printf("%-14s %-34s %5s %9s %7s %9s %7s %6s  %s\n", "model", "params (last is out)", "calls",
              "def ms", "GFLOP/s", "best ms", "GFLOP/s", "b/def", "best config");
  double total_default = 0, total_best = 0;
  std::mt19937_64 rng(o.common.seed);
  for (const kiln::bench::BenchWorkload& e : *workloads) {
    const std::string& key = e.w.workload_key;
    kiln::tuning::ScheduleSpace space(e.w.lowered, target);
    std::vector<kiln::tuning::Candidate> candidates = {space.Default()};
    for (const kiln::schedule::KnobConfig& c : configs) {
      // Knobs that exist only under another knob's value are declared once that value is
      // taken: spread again until the config names no new knob.
      kiln::schedule::KnobConfig spread = Spread(c, space);
      kiln::tuning::Candidate candidate = space.Instantiate(spread);
      for (int round = 0; round < 4; ++round) {
        kiln::schedule::KnobConfig again = Spread(c, space);
        if (again == spread) break;
        spread = std::move(again);
        candidate = space.Instantiate(spread);
      }
      candidates.push_back(std::move(candidate));
    }
    for (int s = 0; s < o.common.samples; ++s) candidates.push_back(space.Sample(rng));
    std::vector<kiln::schedule::Schedule> schedules;
    for (const kiln::tuning::Candidate& c : candidates) schedules.push_back(c.schedule);
    auto m = measurer.Measure(e.w.lowered, schedules);
    if (!m.ok()) return Fail(std::string(m.status().message()));
    int best = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = m->candidates[i];
      if (!c.status.ok()) {
        std::fprintf(stderr, "%s candidate %zu: %s\n", key.substr(0, 12).c_str(), i,
                     std::string(c.status.message()).c_str());
        continue;
      }
      if (o.all) {
        std::printf("    %9.4f  %s\n", c.median_ms,
                    kiln::schedule::KnobConfigToString(candidates[i].config).c_str());
      }
      if (!m->candidates[best].status.ok() || c.median_ms < m->candidates[best].median_ms) {
        best = static_cast<int>(i);
      }
    }
    std::vector<std::string> shapes;
    for (const auto& p : e.w.lowered.params) shapes.push_back(Dims(p->shape));
    const double def_ms = m->candidates[0].median_ms, best_ms = m->candidates[best].median_ms;
    const double gflop = static_cast<double>(e.w.flops) * 1e-9;
    std::printf("%-14s %-34s %5d %9.4f %7.1f %9.4f %7.1f %6.2f  %s\n", e.model.c_str(),
                absl::StrJoin(shapes, " ").c_str(), e.calls, def_ms, gflop / (def_ms * 1e-3),
                best_ms, gflop / (best_ms * 1e-3), best_ms / def_ms,
                kiln::schedule::KnobConfigToString(candidates[best].config).c_str());
    std::fflush(stdout);
    total_default += e.calls * def_ms;
    total_best += e.calls * best_ms;
  }
  std::printf("total (ms per inference, weighted by calls): default %.3f, best %.3f (%.2fx)\n",
              total_default, total_best, total_best / total_default);
  return 0;
}
