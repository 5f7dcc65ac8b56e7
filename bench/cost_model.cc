// Benchmark (not a test): does the cost model find fast schedules in fewer trials than random
// search? Takes the heaviest distinct workloads (FLOPs per call × calls) of a few models and
// tunes each alone twice on this machine, once cost-model-guided and once at random
// (SearchOptions::use_cost_model), with the same seed and trial budget, and compares the
// best-so-far curves.
//   kiln-bench-cost-model [--models DIR] [--model-names resnet18,mobilenet_v2,...]
//                         [--workloads 12] [--trials 256] [--threads 1] [--seed 1]
//                         [--min-ms 50] [--tolerance 0.01] [--json-out FILE]
// Prints per workload, and the median over workloads of best / default, the best latency at
// 32/64/128/256 trials (checkpoints scale with --trials) for both searches, and the trial at
// which the guided search first comes within --tolerance of random search's best of the whole
// budget. The default's time is the fastest of its measurements (every batch re-measures it).
// --json-out writes the curves for bench/plot_cost_model.py. Both searches run every trial
// (no early stop); which of the two goes first alternates from workload to workload.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/pipeline/workloads.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/local_measurer.h"
#include "compiler_core/tuning/search.h"

namespace {

using kiln::tuning::TaskProgress;

struct Options {
  std::string models_dir = "../shared/models";
  std::vector<std::string> model_names = {"resnet18", "mobilenet_v2", "transformer_encoder"};
  int workloads = 12;
  int64_t trials = 256;
  int threads = 1;
  uint64_t seed = 1;
  double min_ms = 50;
  double tolerance = 0.01;
  std::string json_out;
};

/// A distinct workload over all the models, with how often it is called per inference of each.
struct Workload {
  kiln::pipeline::ModelWorkload first;  // as the first model that has it lowered it
  int calls = 0;                        // kernels with this key, over all models
  std::vector<std::string> models;      // "resnet18x4"
  double Work() const { return static_cast<double>(first.flops) * calls; }
};

/// One search of one workload.
struct Arm {
  bool ok = false;
  std::string error;
  double default_ms = 0;      // the default schedule's median in the first batch
  std::vector<double> reference_ms;  // the default schedule's median in every batch
  double wall_s = 0;
  std::vector<double> curve;  // best-so-far median ms after each trial
  /// Best after `trials` trials (the last value when the space ran out before), or NaN.
  double BestAt(int64_t trials) const {
    if (curve.empty() || trials < 1) return NAN;
    return curve[std::min<size_t>(static_cast<size_t>(trials), curve.size()) - 1];
  }
  double Best() const { return curve.empty() ? NAN : curve.back(); }
};

struct Result {
  const Workload* workload;
  Arm guided, random;
  /// The default schedule's time to normalize by: the fastest of its measurements in every
  /// batch of both searches. Noise only ever adds time, and best-so-far is a minimum over
  /// measurements too, so the two are comparable; one early, unlucky measurement of the
  /// default does not skew a whole curve.
  double Reference() const {
    double best = INFINITY;
    for (const Arm* a : {&guided, &random}) {
      for (double v : a->reference_ms) best = std::min(best, v);
    }
    return std::isinf(best) ? NAN : best;
  }
};

/// Forwards to another measurer and keeps every batch's reference (default schedule) median.
class RecordingMeasurer final : public kiln::tuning::Measurer {
 public:
  explicit RecordingMeasurer(kiln::tuning::Measurer& inner) : inner_(inner) {}
  absl::StatusOr<kiln::tuning::BatchMeasurement> Measure(
      const kiln::loop::Func& lowered,
      const std::vector<kiln::schedule::Schedule>& candidates) override {
    auto m = inner_.Measure(lowered, candidates);
    if (m.ok() && m->reference.status.ok()) reference_ms_.push_back(m->reference.median_ms);
    return m;
  }
  std::string hardware_key() const override { return inner_.hardware_key(); }
  std::string worker_name() const override { return inner_.worker_name(); }
  std::vector<double> TakeReferences() { return std::exchange(reference_ms_, {}); }

 private:
  kiln::tuning::Measurer& inner_;
  std::vector<double> reference_ms_;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln-bench-cost-model: %s\n", message.c_str());
  return 1;
}

/// First trial (1-based) at which the guided search's best-so-far is within `tolerance` of the
/// random search's best of its whole budget; 0 if it never is.
int64_t GuidedReachesRandom(const Result& r, double tolerance) {
  if (!r.guided.ok || !r.random.ok) return 0;
  const double target = r.random.Best();
  for (size_t i = 0; i < r.guided.curve.size(); ++i) {
    if (r.guided.curve[i] <= target * (1 + tolerance)) return static_cast<int64_t>(i) + 1;
  }
  return 0;
}

double Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool ParseArgs(int argc, char** argv, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    const std::string v = has_value ? argv[i + 1] : "";
    bool ok = has_value;
    if (a == "--models") o.models_dir = v;
    else if (a == "--model-names") o.model_names = absl::StrSplit(v, ',', absl::SkipEmpty());
    else if (a == "--workloads") ok = ok && absl::SimpleAtoi(v, &o.workloads) && o.workloads > 0;
    else if (a == "--trials") ok = ok && absl::SimpleAtoi(v, &o.trials) && o.trials > 0;
    else if (a == "--threads") ok = ok && absl::SimpleAtoi(v, &o.threads) && o.threads > 0;
    else if (a == "--seed") ok = ok && absl::SimpleAtoi(v, &o.seed);
    else if (a == "--min-ms") ok = ok && absl::SimpleAtod(v, &o.min_ms) && o.min_ms > 0;
    else if (a == "--tolerance") ok = ok && absl::SimpleAtod(v, &o.tolerance) && o.tolerance >= 0;
    else if (a == "--json-out") o.json_out = v;
    else {
      error = absl::StrCat("unknown argument '", a, "'");
      return false;
    }
    if (!ok) {
      error = absl::StrCat(a, ": bad or missing value");
      return false;
    }
    ++i;
  }
  return true;
}

/// The distinct workloads of the models, heaviest (FLOPs × calls) first; ties by key.
absl::StatusOr<std::vector<Workload>> HeaviestWorkloads(const Options& o, kiln::Target& target) {
  std::map<std::string, Workload> by_key;
  kiln::pipeline::CompileOptions compile;
  for (const std::string& name : o.model_names) {
    auto found = kiln::pipeline::ExtractWorkloads(
        absl::StrCat(o.models_dir, "/", name, "/model.onnx"), compile, &target);
    if (!found.ok()) {
      return absl::Status(found.status().code(),
                          absl::StrCat(name, ": ", found.status().message()));
    }
    for (kiln::pipeline::ModelWorkload& w : *found) {
      Workload& entry = by_key[w.workload_key];
      const int calls = static_cast<int>(w.symbols.size());
      entry.calls += calls;
      entry.models.push_back(absl::StrCat(name, "x", calls));
      if (entry.first.workload_key.empty()) entry.first = std::move(w);
    }
  }
  std::vector<Workload> all;
  for (auto& [key, w] : by_key) all.push_back(std::move(w));
  std::stable_sort(all.begin(), all.end(),
                   [](const Workload& a, const Workload& b) { return a.Work() > b.Work(); });
  if (all.size() > static_cast<size_t>(o.workloads)) all.resize(static_cast<size_t>(o.workloads));
  return all;
}

Arm Search(const Workload& w, bool guided, uint64_t seed, const Options& o,
           const kiln::Target& target, RecordingMeasurer& measurer,
           const kiln::tuning::FeatureContext& features) {
  kiln::tuning::TuneTask task;
  task.workload_key = w.first.workload_key;
  task.lowered = w.first.lowered;
  task.fused_ops = w.first.fused_ops;
  task.weight = w.calls;
  task.flops = w.first.flops;
  kiln::tuning::SearchOptions search;
  search.trials = o.trials;
  search.seed = seed;
  search.use_cost_model = guided;
  search.early_stop_trials = static_cast<int>(o.trials) + 1;  // every trial: full curves
  const auto start = std::chrono::steady_clock::now();
  auto r = kiln::tuning::TuneTasks({task}, target, measurer, features, search, nullptr,
                                   kiln::pipeline::kCompilerVersion);
  Arm arm;
  arm.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  arm.reference_ms = measurer.TakeReferences();
  if (!r.ok()) {
    arm.error = std::string(r.status().message());
    return arm;
  }
  const TaskProgress& t = r->progress.tasks.at(0);
  arm.ok = !t.curve.empty();
  if (!arm.ok) arm.error = "no trial measured";
  arm.default_ms = t.default_ms;
  arm.curve = t.curve;
  return arm;
}

std::vector<int64_t> Checkpoints(int64_t trials) {
  std::vector<int64_t> out;
  for (int64_t c = trials; c >= 1 && out.size() < 4; c /= 2) out.insert(out.begin(), c);
  return out;
}

std::string Cell(double ms) { return std::isnan(ms) ? "-" : absl::StrFormat("%.4f", ms); }
std::string Reach(int64_t t) { return t > 0 ? absl::StrCat(t) : "never"; }

void PrintTable(const std::vector<Result>& results, const Options& o) {
  const std::vector<int64_t> cps = Checkpoints(o.trials);
  std::string head = absl::StrFormat("%-3s %-12s %-22s %4s %8s %10s | %-6s |", "#", "workload",
                                     "ops", "x", "MFLOP", "default ms", "search");
  for (int64_t c : cps) absl::StrAppend(&head, absl::StrFormat(" %9s", absl::StrCat("@", c)));
  absl::StrAppend(&head, absl::StrFormat(" | %s", "guided reaches random's best at"));
  std::printf("%s\n%s\n", head.c_str(), std::string(head.size(), '-').c_str());
  std::vector<std::vector<double>> norm_guided(cps.size()), norm_random(cps.size());
  std::vector<double> reach_values;
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const Workload& w = *r.workload;
    const double ref = r.Reference();
    for (int arm = 0; arm < 2; ++arm) {
      const Arm& a = arm == 0 ? r.guided : r.random;
      std::string line =
          arm == 0 ? absl::StrFormat("%-3d %-12s %-22s %4d %8.1f %10.4f | %-6s |", i + 1,
                                     w.first.workload_key.substr(0, 12),
                                     w.first.fused_ops.substr(0, 22), w.calls,
                                     w.first.flops / 1e6, ref, "guided")
                   : absl::StrFormat("%-3s %-12s %-22s %4s %8s %10s | %-6s |", "", "", "", "",
                                     "", "", "random");
      for (size_t c = 0; c < cps.size(); ++c) {
        absl::StrAppend(&line, absl::StrFormat(" %9s", Cell(a.BestAt(cps[c]))));
        (arm == 0 ? norm_guided : norm_random)[c].push_back(a.BestAt(cps[c]) / ref);
      }
      if (arm == 0 && r.guided.ok && r.random.ok) {
        const int64_t t = GuidedReachesRandom(r, o.tolerance);
        absl::StrAppend(&line, " | ", Reach(t));
        reach_values.push_back(t > 0 ? static_cast<double>(t) : INFINITY);
      }
      if (!a.ok) absl::StrAppend(&line, "  error: ", a.error);
      std::printf("%s\n", line.c_str());
    }
  }
  std::printf("%s\n", std::string(head.size(), '-').c_str());
  for (int arm = 0; arm < 2; ++arm) {
    std::string line = absl::StrFormat("%-3s %-12s %-22s %4s %8s %10s | %-6s |", "",
                                       arm == 0 ? "median" : "", arm == 0 ? "(best / default)" : "",
                                       "", "", "1", arm == 0 ? "guided" : "random");
    for (size_t c = 0; c < cps.size(); ++c) {
      const double m = Median(arm == 0 ? norm_guided[c] : norm_random[c]);
      absl::StrAppend(&line, absl::StrFormat(" %9s", Cell(m)));
    }
    if (arm == 0) {
      const double m = Median(reach_values);
      absl::StrAppend(&line, " | ", std::isinf(m) ? "never" : absl::StrFormat("%.0f", m));
    }
    std::printf("%s\n", line.c_str());
  }
  // Paired over workloads: below 1, the guided search holds the faster schedule at that point.
  std::string ratio = absl::StrFormat("%-3s %-12s %-22s %4s %8s %10s | %-6s |", "", "geomean",
                                      "guided / random", "", "", "", "");
  for (int64_t c : cps) {
    double log_sum = 0;
    int n = 0;
    for (const Result& r : results) {
      const double q = r.guided.BestAt(c) / r.random.BestAt(c);
      if (std::isfinite(q) && q > 0) {
        log_sum += std::log(q);
        ++n;
      }
    }
    absl::StrAppend(&ratio, absl::StrFormat(" %9s", Cell(n ? std::exp(log_sum / n) : NAN)));
  }
  std::printf("%s\n", ratio.c_str());
  std::printf("(ms: each search's best median so far; default ms: the fastest of the default "
              "schedule's measurements, one per batch of both searches; median: over workloads, "
              "of best / default; reaches: the first trial at which the guided best is within "
              "%g%% of random search's best after %d trials)\n",
              100 * o.tolerance, static_cast<int>(o.trials));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

std::string JsonNumbers(const std::vector<double>& v) {
  std::vector<std::string> out;
  for (double x : v) out.push_back(absl::StrFormat("%.6f", x));
  return absl::StrCat("[", absl::StrJoin(out, ","), "]");
}

std::string ArmJson(const Arm& a) {
  return absl::StrCat("{\"ok\":", a.ok ? "true" : "false", ",\"error\":", JsonString(a.error),
                      absl::StrFormat(",\"default_ms\":%.6f,\"wall_s\":%.2f", a.default_ms,
                                      a.wall_s),
                      ",\"reference_ms\":", JsonNumbers(a.reference_ms),
                      ",\"curve\":", JsonNumbers(a.curve), "}");
}

bool WriteJson(const std::vector<Result>& results, const Options& o,
               const kiln::tuning::HardwareInfo& hw, const std::string& loadavg) {
  std::ofstream out(o.json_out, std::ios::trunc);
  out << "{\"device\":" << JsonString(hw.device) << ",\"threads\":" << o.threads
      << ",\"trials\":" << o.trials << ",\"seed\":" << o.seed
      << absl::StrFormat(",\"tolerance\":%g,\"min_ms\":%g", o.tolerance, o.min_ms)
      << ",\"unix_time\":" << std::time(nullptr) << ",\"loadavg_start\":" << JsonString(loadavg)
      << ",\"workloads\":[";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const Workload& w = *r.workload;
    const int64_t reach = GuidedReachesRandom(r, o.tolerance);
    out << (i ? "," : "") << "{\"workload_key\":" << JsonString(w.first.workload_key)
        << ",\"fused_ops\":" << JsonString(w.first.fused_ops) << ",\"flops\":" << w.first.flops
        << ",\"calls\":" << w.calls << ",\"models\":" << JsonString(absl::StrJoin(w.models, ","))
        << absl::StrFormat(",\"reference_ms\":%.6f", r.Reference())
        << ",\"guided_reaches_random_best_at\":" << reach << ",\"guided\":" << ArmJson(r.guided)
        << ",\"random\":" << ArmJson(r.random) << "}";
  }
  out << "]}\n";
  return static_cast<bool>(out);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!ParseArgs(argc, argv, o, error)) return Fail(error);
  kiln::Target target;
  auto workloads = HeaviestWorkloads(o, target);
  if (!workloads.ok()) return Fail(std::string(workloads.status().message()));
  const kiln::tuning::HardwareInfo hw = kiln::tuning::DetectCpuHardware(target, o.threads);
  const kiln::tuning::FeatureContext features = kiln::tuning::FeatureContextFor(hw, target, o.threads);
  kiln::tuning::MeasureOptions measure;
  measure.num_threads = o.threads;
  measure.min_measure_ms = o.min_ms;
  kiln::tuning::LocalMeasurer local(target, hw.Key(), measure);
  RecordingMeasurer measurer(local);
  const std::string loadavg = LoadAverage();
  std::printf("cost model vs random search: %zu heaviest workloads of %s, %d trials each, "
              "%d thread(s), seed %d + workload index\n%s, load average at start %s\n\n",
              workloads->size(), absl::StrJoin(o.model_names, ", ").c_str(),
              static_cast<int>(o.trials), o.threads, static_cast<int>(o.seed), hw.device.c_str(),
              loadavg.c_str());
  std::fflush(stdout);
  std::vector<Result> results;
  for (size_t i = 0; i < workloads->size(); ++i) {
    const Workload& w = (*workloads)[i];
    Result r{&w, {}, {}};
    const uint64_t seed = o.seed + i;
    // Alternate which search goes first, so that drift in the machine's speed favours neither.
    for (int k = 0; k < 2; ++k) {
      const bool guided = (k == 0) == (i % 2 == 0);
      (guided ? r.guided : r.random) = Search(w, guided, seed, o, target, measurer, features);
      const Arm& a = guided ? r.guided : r.random;
      std::fprintf(stderr, "workload %zu/%zu %s %s: %s %s in %.0f s\n", i + 1, workloads->size(),
                   w.first.workload_key.substr(0, 12).c_str(), w.first.fused_ops.c_str(),
                   guided ? "guided" : "random",
                   a.ok ? absl::StrFormat("%.4f -> %.4f ms", a.default_ms, a.Best()).c_str()
                        : a.error.c_str(),
                   a.wall_s);
    }
    results.push_back(std::move(r));
  }
  PrintTable(results, o);
  std::printf("load average at end %s\n", LoadAverage().c_str());
  if (!o.json_out.empty()) {
    if (!WriteJson(results, o, hw, loadavg)) return Fail("cannot write " + o.json_out);
    std::printf("curves written to %s\n", o.json_out.c_str());
  }
  return 0;
}
