// kiln tune.
#include "client/tune_commands.h"

#include <unistd.h>

#include <iostream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/args.h"
#include "client/json.h"
#include "client/records_file.h"
#include "client/remote_commands.h"
#include "client/tune_summary.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/pipeline/workloads.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/local_measurer.h"
#include "compiler_core/tuning/search.h"
#include "compiler_core/tuning/space.h"

namespace kiln::client {
namespace {

int PrintSpace(const Args& args) {
  pipeline::CompileOptions options;
  options.target = args.Get("--target", "host");
  absl::StatusOr<importer::InputShapes> shapes =
      OneShapeProfileFrom(args, "kiln tune", &options.bounded_min_shapes);
  if (!shapes.ok()) return FailStatus(shapes.status());
  if (!shapes->empty()) options.shape_profiles = {*shapes};
  int64_t samples = 0;
  uint64_t seed = 0;
  if (!absl::SimpleAtoi(args.Get("--samples", "0"), &samples) || samples < 0) {
    return FailUsage(args, "--samples must be a non-negative integer");
  }
  if (!absl::SimpleAtoi(args.Get("--seed", "0"), &seed)) {
    return FailUsage(args, "--seed must be a non-negative integer");
  }
  Target target;
  auto workloads = pipeline::ExtractWorkloads(args.positional[0], options, &target);
  if (!workloads.ok()) return FailStatus(workloads.status());
  std::cout << "target: " << target.Key() << "\n"
            << "workloads: " << workloads->size() << "\n";
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < workloads->size(); ++i) {
    const pipeline::ModelWorkload& w = (*workloads)[i];
    tuning::ScheduleSpace space(w.lowered, target);
    std::cout << absl::StrFormat("\nworkload %d/%d %s  %s  kernels %d  %d FLOP\n", i + 1,
                                 workloads->size(), w.workload_key, w.fused_ops,
                                 w.symbols.size(), w.flops);
    std::cout << "space (" << space.knobs().size() << " knobs, at most " << space.SizeBound()
              << " points):\n";
    for (const schedule::Knob& k : space.knobs()) {
      std::cout << "  " << k.name << ": {" << absl::StrJoin(k.choices, ", ") << "} default "
                << k.default_value << "\n";
    }
    // Each candidate's text ends its own line.
    auto print_candidate = [](const std::string& text) {
      std::cout << text << (!text.empty() && text.back() == '\n' ? "" : "\n");
    };
    std::cout << "default candidate:\n";
    print_candidate(space.Default().ToString());
    for (int64_t s = 0; s < samples; ++s) {
      std::cout << "sample " << s << ":\n";
      print_candidate(space.Sample(rng).ToString());
    }
  }
  return 0;
}

/// The summary table, and a note when some workloads were never measured.
void PrintSummary(const std::vector<tuning::TuneTask>& tasks, const tuning::SearchProgress& p) {
  std::vector<WorkloadSummary> rows;
  for (size_t i = 0; i < tasks.size() && i < p.tasks.size(); ++i) {
    const tuning::TaskProgress& t = p.tasks[i];
    rows.push_back({tasks[i].workload_key, tasks[i].fused_ops, tasks[i].weight, t.default_ms,
                    t.best_ms, t.trials});
  }
  const int measured = PrintWorkloadSummary(rows, p.default_estimated_ms, p.estimated_ms);
  if (measured < static_cast<int>(tasks.size())) {
    std::cout << "note: every workload gets one round (a batch of candidates) before the task "
                 "scheduler weighs them; give --trials at least "
              << tasks.size() * 8 << " to measure them all\n";
  }
}

/// The --json object of a local tune: hardware_key, records_file, records (how many were
/// written), trials, default_estimated_ms, estimated_ms, and workloads: per workload
/// workload_key, fused_ops, weight, flops, default_ms, tuned_ms (the best median), trials and
/// curve (the best median after each trial of it).
google::protobuf::Struct TuneJson(const std::vector<tuning::TuneTask>& tasks,
                                  const tuning::SearchResult& r, const std::string& hardware_key,
                                  const std::string& records_out) {
  const tuning::SearchProgress& p = r.progress;
  google::protobuf::Struct json;
  SetString(json, "hardware_key", hardware_key);
  SetString(json, "records_file", records_out);
  SetNumber(json, "records", static_cast<double>(r.records.size()));
  SetNumber(json, "trials", static_cast<double>(p.trials));
  SetNumber(json, "default_estimated_ms", p.default_estimated_ms);
  SetNumber(json, "estimated_ms", p.estimated_ms);
  std::vector<google::protobuf::Struct> workloads;
  for (size_t i = 0; i < tasks.size() && i < p.tasks.size(); ++i) {
    const tuning::TaskProgress& t = p.tasks[i];
    google::protobuf::Struct& o = workloads.emplace_back();
    SetString(o, "workload_key", tasks[i].workload_key);
    SetString(o, "fused_ops", tasks[i].fused_ops);
    SetNumber(o, "weight", tasks[i].weight);
    SetNumber(o, "flops", static_cast<double>(tasks[i].flops));
    SetNumber(o, "default_ms", t.default_ms);
    SetNumber(o, "tuned_ms", t.best_ms);
    SetNumber(o, "trials", t.trials);
    SetNumbers(o, "curve", std::vector<double>(t.curve.begin(), t.curve.end()));
  }
  SetList(json, "workloads", std::move(workloads));
  return json;
}

/// kiln tune MODEL --local: measures on this machine, in child processes of this one.
int TuneLocal(const Args& args) {
  pipeline::CompileOptions options;
  options.target = args.Get("--target", "host");
  absl::StatusOr<importer::InputShapes> shapes =
      OneShapeProfileFrom(args, "kiln tune", &options.bounded_min_shapes);
  if (!shapes.ok()) return FailStatus(shapes.status());
  if (!shapes->empty()) options.shape_profiles = {*shapes};
  tuning::SearchOptions search;
  int threads = 1;
  if (!absl::SimpleAtoi(args.Get("--trials", "64"), &search.trials) || search.trials < 1) {
    return FailUsage(args, "--trials must be a positive integer");
  }
  if (!absl::SimpleAtod(args.Get("--time-budget-s", "0"), &search.time_budget_s) ||
      search.time_budget_s < 0) {
    return FailUsage(args, "--time-budget-s must be a non-negative number");
  }
  if (!absl::SimpleAtoi(args.Get("--threads", "1"), &threads) || threads < 1) {
    return FailUsage(args, "--threads must be a positive integer");
  }
  if (!absl::SimpleAtoi(args.Get("--seed", "1"), &search.seed)) {
    return FailUsage(args, "--seed must be a non-negative integer");
  }
  search.use_cost_model = !args.Has("--random");
  const std::string records_out = args.Get("--records-out");
  if (records_out.empty()) return FailUsage(args, "--local needs --records-out FILE.jsonl");
  Target target;
  auto workloads = pipeline::ExtractWorkloads(args.positional[0], options, &target);
  if (!workloads.ok()) return FailStatus(workloads.status());
  // A GPU target measures on the first GPU (--device cuda:N for another).
  int gpu = 0;
  if (target.IsGpu()) {
    auto ordinal = runtime::cuda::ParseCudaDevice(args.Get("--device", "cuda:0"));
    if (!ordinal.ok()) return FailStatus(ordinal.status());
    gpu = *ordinal;
  }
  absl::StatusOr<tuning::HardwareInfo> detected =
      target.IsGpu()
          ? tuning::DetectCudaHardware(target, gpu)
          : absl::StatusOr<tuning::HardwareInfo>(tuning::DetectCpuHardware(target, threads));
  if (!detected.ok()) return FailStatus(detected.status());
  const tuning::HardwareInfo hw = *detected;
  // Earlier records of similar hardware in the output file seed the search.
  tuning::RecordSet known;
  if (absl::StatusOr<tuning::RecordSet> existing = ReadRecordSet(records_out); existing.ok()) {
    known = std::move(*existing);
  }
  std::vector<tuning::TuneTask> tasks;
  for (const pipeline::ModelWorkload& w : *workloads) {
    tuning::TuneTask t;
    t.workload_key = w.workload_key;
    t.lowered = w.lowered;
    t.fused_ops = w.fused_ops;
    t.weight = static_cast<int>(w.symbols.size());
    t.flops = w.flops;
    if (known.Best(w.workload_key, hw.Key()) == nullptr) {
      const std::string default_schedule = schedule::DefaultSchedule(w.lowered, target).ToString();
      for (const v1::TuningRecord* r : known.Nearest(w.workload_key, hw, 2, default_schedule)) {
        t.seeds.push_back({r->schedule(), r->hardware_key()});
      }
    }
    tasks.push_back(std::move(t));
  }
  // The measuring process owns `threads` cores, as a measure worker does.
  if (absl::StatusOr<std::vector<int>> pinned = tuning::PinToCores(threads);
      !pinned.ok() && !target.IsGpu()) {
    std::cerr << "kiln: tune: not pinned: " << pinned.status().message() << "\n";
  }
  tuning::MeasureOptions measure;
  measure.num_threads = threads;
  measure.device = gpu;
  if (!args.Has("--no-cache-flush")) measure.cache_flush_bytes = tuning::CacheFlushBytesFor(hw);
  tuning::LocalMeasurer measurer(target, hw.Key(), measure);
  const tuning::FeatureContext features = tuning::FeatureContextFor(hw, target, threads);
  const bool live = !args.Has("--json") && ::isatty(STDOUT_FILENO);
  if (!args.Has("--json")) {
    std::cout << "tuning " << tasks.size() << " workloads on " << hw.Key().substr(0, 60)
              << "... (" << search.trials << " trials)\n";
  }
  auto on_progress = [&](const tuning::SearchProgress& p) {
    if (live) {
      const tuning::TaskProgress& t = p.tasks[p.current_task];
      std::cout << absl::StrFormat(
                       "\rtrial %d/%d  workload %d/%d  best %.4f ms (default %.4f)  model "
                       "%.3f ms (default %.3f)   ",
                       p.trials, p.trial_budget, p.current_task + 1, p.tasks.size(), t.best_ms,
                       t.default_ms, p.estimated_ms, p.default_estimated_ms)
                << std::flush;
    }
    return true;
  };
  auto result = tuning::TuneTasks(tasks, target, measurer, features, search, on_progress,
                                  pipeline::kCompilerVersion);
  if (live) std::cout << "\n";
  if (!result.ok()) return FailStatus(result.status());
  absl::Status st = AppendRecordsFile(records_out, result->records);
  if (!st.ok()) return FailStatus(st);
  if (args.Has("--json")) {
    std::cout << ToJson(TuneJson(tasks, *result, hw.Key(), records_out)) << "\n";
    return 0;
  }
  PrintSummary(tasks, result->progress);
  std::cout << "wrote " << result->records.size() << " records to " << records_out
            << " (hardware key " << hw.Key() << ")\n";
  return 0;
}

}  // namespace

int TuneCommand(const Args& args) {
  if (args.Has("--print-space")) return PrintSpace(args);
  if (args.Has("--local")) return TuneLocal(args);
  if (args.Has("--server")) return TuneOnServer(args);
  return FailUsage(args,
                   "measuring needs --server HOST:PORT (a kilnd with measure workers; or "
                   "KILN_SERVER) or --local (this machine); --print-space only prints "
                   "the space");
}

}  // namespace kiln::client
