// Evolutionary schedule search with a learned cost model, and the task scheduler over
// workloads.
#include "compiler_core/tuning/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "compiler_core/tuning/cost_model.h"
#include "compiler_core/tuning/records.h"

namespace kiln::tuning {
namespace {

constexpr double kFailed = std::numeric_limits<double>::infinity();
/// Measured candidates kept per task as parents for mutation and crossover.
constexpr size_t kParents = 16;
/// Ansor's task scheduler: weight of the backward (observed) gradient against the optimistic
/// forward guess.
constexpr double kAlpha = 0.2;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct TaskState {
  explicit TaskState(const TuneTask& t, const Target& target)
      : task(&t), space(t.lowered, target) {}
  const TuneTask* task;
  ScheduleSpace space;
  std::map<std::string, double> measured;           // candidate key → median ms (kFailed)
  std::vector<std::pair<double, Candidate>> parents;  // best measured, fastest first
  TaskProgress progress;
  int since_improvement = 0;
  int rounds = 0;
  double best_before_last_round = 0;
  int trials_in_last_round = 0;
  std::map<std::string, std::vector<float>> feature_cache;
  /// Candidate key → the hardware key of the record that seeded it (TuneTask::seeds).
  std::map<std::string, std::string> transferred_from;
};

class Search {
 public:
  Search(const std::vector<TuneTask>& tasks, const Target& target, Measurer& measurer,
         const FeatureContext& features, const SearchOptions& options,
         const std::function<bool(const SearchProgress&)>& progress,
         const std::string& compiler_version)
      : measurer_(measurer), features_(features), options_(options),
        progress_fn_(progress), compiler_version_(compiler_version), rng_(options.seed) {
    for (const TuneTask& t : tasks) states_.push_back(std::make_unique<TaskState>(t, target));
  }

  absl::StatusOr<SearchResult> Run() {
    if (options_.use_cost_model) {
      if (!options_.initial_model.empty()) {
        absl::StatusOr<CostModel> m = CostModel::Deserialize(options_.initial_model);
        if (m.ok()) model_ = std::move(*m);
      }
      if (!model_.has_value()) {
        absl::StatusOr<CostModel> m = CostModel::Create(CostModelOptions{});
        if (!m.ok()) return m.status();
        model_ = std::move(*m);
      }
    }
    const auto start = std::chrono::steady_clock::now();
    SearchResult result;
    for (size_t i = 0; i < states_.size(); ++i) states_[i]->progress.task = static_cast<int>(i);
    while (trials_ < options_.trials) {
      if (options_.time_budget_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
              options_.time_budget_s) {
        break;
      }
      const int next = PickTask();
      if (next < 0) break;
      const size_t records_before = result.records.size();
      absl::Status st = RunRound(*states_[next], result);
      if (!st.ok()) return st;
      ++round_;
      SearchProgress p = Snapshot(next);
      p.new_records.assign(result.records.begin() + static_cast<std::ptrdiff_t>(records_before),
                           result.records.end());
      if (progress_fn_ && !progress_fn_(p)) {
        result.cancelled = true;
        break;
      }
    }
    for (size_t i = 0; i < states_.size() && !result.cancelled && options_.confirm_top > 0;
         ++i) {
      const size_t records_before = result.records.size();
      absl::StatusOr<bool> confirmed = Confirm(*states_[i], result);
      if (!confirmed.ok()) return confirmed.status();
      if (!*confirmed) continue;
      SearchProgress p = Snapshot(static_cast<int>(i));
      p.new_records.assign(result.records.begin() + static_cast<std::ptrdiff_t>(records_before),
                           result.records.end());
      if (progress_fn_ && !progress_fn_(p)) result.cancelled = true;
    }
    result.progress = Snapshot(result.progress.current_task);
    if (model_.has_value() && model_->trained()) {
      absl::StatusOr<std::string> bytes = model_->Serialize();
      if (bytes.ok()) result.model = std::move(*bytes);
    }
    return result;
  }

 private:
  /// Every task once, in order; then Ansor's gradient rule: the task whose latency share is
  /// dropping fastest per trial (observed over its last round, blended with the optimistic
  /// guess that another t_i trials could halve... more precisely reach -g_i/t_i per trial).
  int PickTask() {
    int best = -1;
    double best_grad = 0;
    for (size_t i = 0; i < states_.size(); ++i) {
      TaskState& s = *states_[i];
      if (s.progress.stopped) continue;
      if (s.rounds == 0) return static_cast<int>(i);
      const double g = s.progress.best_ms;
      const double backward =
          s.trials_in_last_round > 0 ? (g - s.best_before_last_round) / s.trials_in_last_round
                                     : 0;
      const double forward = -g / std::max(1, s.progress.trials);
      const double grad = s.task->weight * (kAlpha * backward + (1 - kAlpha) * forward);
      if (best < 0 || grad < best_grad) {
        best = static_cast<int>(i);
        best_grad = grad;
      }
    }
    return best;
  }

  SearchProgress Snapshot(int current) const {
    SearchProgress p;
    p.round = round_;
    p.trials = trials_;
    p.trial_budget = static_cast<int>(options_.trials);
    p.current_task = current;
    for (const auto& s : states_) {
      p.tasks.push_back(s->progress);
      p.estimated_ms += s->task->weight * s->progress.best_ms;
      p.default_estimated_ms += s->task->weight * s->progress.default_ms;
    }
    return p;
  }

  absl::StatusOr<std::vector<float>> Features(TaskState& s, const Candidate& c) {
    auto it = s.feature_cache.find(c.Key());
    if (it != s.feature_cache.end()) return it->second;
    loop::Func f = s.task->lowered;
    absl::Status st = schedule::ApplySchedule(c.schedule, f);
    if (!st.ok()) return st;
    absl::StatusOr<std::vector<float>> v = ExtractFeatures(f, features_);
    if (!v.ok()) return v.status();
    s.feature_cache[c.Key()] = *v;
    return *v;
  }

  bool Unmeasured(const TaskState& s, const Candidate& c,
                  const std::set<std::string>& chosen) const {
    return !s.measured.count(c.Key()) && !chosen.count(c.Key());
  }

  /// Random unmeasured candidates, up to `n` (fewer when the space seems exhausted).
  std::vector<Candidate> RandomUnmeasured(TaskState& s, size_t n, std::set<std::string>& chosen) {
    std::vector<Candidate> out;
    for (int attempt = 0; out.size() < n && attempt < static_cast<int>(n) * 20 + 20; ++attempt) {
      Candidate c = s.space.Sample(rng_);
      if (!Unmeasured(s, c, chosen)) continue;
      chosen.insert(c.Key());
      out.push_back(std::move(c));
    }
    return out;
  }

  /// The next batch: cost-model-guided evolution (when trained) plus eps-greedy random picks.
  std::vector<Candidate> NextBatch(TaskState& s) {
    std::set<std::string> chosen;
    const size_t batch = static_cast<size_t>(options_.batch_size);
    const bool guided = options_.use_cost_model && model_.has_value() && model_->trained();
    if (!guided) return RandomUnmeasured(s, batch, chosen);
    // Initial population: the best measured (as parents) and random samples.
    std::vector<Candidate> population;
    for (const auto& [ms, c] : s.parents) population.push_back(c);
    std::set<std::string> in_population;
    for (const Candidate& c : population) in_population.insert(c.Key());
    for (int attempt = 0; population.size() < static_cast<size_t>(options_.population) &&
                          attempt < options_.population * 4;
         ++attempt) {
      Candidate c = s.space.Sample(rng_);
      if (in_population.insert(c.Key()).second) population.push_back(std::move(c));
    }
    std::uniform_real_distribution<double> unit(0, 1);
    for (int g = 0; g < options_.generations; ++g) {
      std::vector<Candidate> pool = population;
      std::uniform_int_distribution<size_t> pick(0, population.size() - 1);
      for (size_t i = 0; i < population.size(); ++i) {
        Candidate child = unit(rng_) < options_.mutation_probability
                              ? s.space.Mutate(population[pick(rng_)], rng_)
                              : s.space.Crossover(population[pick(rng_)],
                                                  population[pick(rng_)], rng_);
        if (in_population.insert(child.Key()).second) pool.push_back(std::move(child));
      }
      population = Rank(s, pool, static_cast<size_t>(options_.population));
    }
    // The best-scored unmeasured candidates, then random ones for exploration.
    std::vector<Candidate> out;
    const size_t random_share =
        static_cast<size_t>(std::lround(options_.eps_greedy * static_cast<double>(batch)));
    for (const Candidate& c : population) {
      if (out.size() + random_share >= batch) break;
      if (!Unmeasured(s, c, chosen)) continue;
      chosen.insert(c.Key());
      out.push_back(c);
    }
    for (Candidate& c : RandomUnmeasured(s, batch - out.size(), chosen)) out.push_back(std::move(c));
    return out;
  }

  /// `pool` sorted by predicted score, best first, at most `keep`.
  std::vector<Candidate> Rank(TaskState& s, std::vector<Candidate>& pool, size_t keep) {
    std::vector<std::vector<float>> feats;
    std::vector<size_t> index;
    for (size_t i = 0; i < pool.size(); ++i) {
      absl::StatusOr<std::vector<float>> f = Features(s, pool[i]);
      if (!f.ok()) continue;
      feats.push_back(std::move(*f));
      index.push_back(i);
    }
    absl::StatusOr<std::vector<double>> scores = model_->Predict(feats);
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t j = 0; j < index.size(); ++j) {
      ranked.push_back({scores.ok() ? (*scores)[j] : 0.0, index[j]});
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Candidate> out;
    for (const auto& [score, i] : ranked) {
      if (out.size() == keep) break;
      out.push_back(pool[i]);
    }
    return out;
  }

  v1::TuningRecord MakeRecord(const TaskState& s, const Candidate& c, const Measurement& m) {
    return MeasuredRecord(s.task->workload_key, c, m, s.progress.default_ms, measurer_,
                          compiler_version_);
  }

  void AddSample(TaskState& s, const Candidate& c, double ms) {
    if (!options_.use_cost_model) return;
    absl::StatusOr<std::vector<float>> f = Features(s, c);
    if (!f.ok()) return;
    const double work = static_cast<double>(std::max<int64_t>(s.task->flops, 1));
    samples_.push_back(Sample{*f, s.task->workload_key, std::isfinite(ms) ? work / ms : 0.0});
  }

  void Observe(TaskState& s, const Candidate& c, double ms) {
    s.measured[c.Key()] = ms;
    ++s.progress.trials;
    ++trials_;
    if (std::isfinite(ms)) {
      s.parents.push_back({ms, c});
      std::stable_sort(s.parents.begin(), s.parents.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (s.parents.size() > kParents) s.parents.resize(kParents);
      if (ms < s.progress.best_ms) {
        s.progress.best_ms = ms;
        s.progress.best_schedule = c.schedule.ToString();
        s.progress.best_config = schedule::KnobConfigToString(c.config);
        s.since_improvement = 0;
      } else {
        ++s.since_improvement;
      }
    } else {
      ++s.since_improvement;
    }
    s.progress.curve.push_back(s.progress.best_ms);
    AddSample(s, c, ms);
  }

  /// MakeRecord for a measured candidate: TRANSFERRED, naming the source hardware, when a
  /// record of other hardware seeded it.
  v1::TuningRecord CandidateRecord(const TaskState& s, const Candidate& c, const Measurement& m) {
    v1::TuningRecord r = MakeRecord(s, c, m);
    if (auto it = s.transferred_from.find(c.Key()); it != s.transferred_from.end()) {
      r.set_provenance(v1::TuningRecord::TRANSFERRED);
      r.set_source_hardware_key(it->second);
    }
    return r;
  }

  /// Measures the task's candidates that beat its default once more, with the default in the
  /// same batch, and files them (and the default) with these paired medians; the task's best
  /// becomes the fastest of them, the default included. Returns whether it measured.
  absl::StatusOr<bool> Confirm(TaskState& s, SearchResult& result) {
    if (s.rounds == 0) return false;
    const Candidate& d = s.space.Default();
    std::vector<Candidate> top;
    for (const auto& [ms, c] : s.parents) {
      if (static_cast<int>(top.size()) >= options_.confirm_top) break;
      if (ms < s.progress.default_ms && c.Key() != d.Key()) top.push_back(c);
    }
    if (top.empty()) return false;
    std::vector<schedule::Schedule> schedules;
    for (const Candidate& c : top) schedules.push_back(c.schedule);
    absl::StatusOr<BatchMeasurement> m = measurer_.Measure(s.task->lowered, schedules);
    if (!m.ok()) return m.status();
    s.progress.default_ms = m->reference.median_ms;
    s.progress.best_ms = m->reference.median_ms;
    s.progress.best_schedule = d.schedule.ToString();
    s.progress.best_config = schedule::KnobConfigToString(d.config);
    if (!d.schedule.steps.empty()) {
      result.records.push_back(MakeRecord(s, d, m->reference));
      result.records.back().set_confirmed(true);
    }
    for (size_t i = 0; i < top.size() && i < m->candidates.size(); ++i) {
      const Measurement& cm = m->candidates[i];
      if (!cm.status.ok()) continue;
      result.records.push_back(CandidateRecord(s, top[i], cm));
      result.records.back().set_confirmed(true);
      if (cm.median_ms < s.progress.best_ms) {
        s.progress.best_ms = cm.median_ms;
        s.progress.best_schedule = top[i].schedule.ToString();
        s.progress.best_config = schedule::KnobConfigToString(top[i].config);
      }
    }
    return true;
  }

  absl::Status RunRound(TaskState& s, SearchResult& result) {
    s.best_before_last_round = s.progress.best_ms;
    const int before = s.progress.trials;
    std::vector<Candidate> batch;
    std::map<std::string, std::string>& transferred = s.transferred_from;
    if (s.rounds == 0) {
      for (const TuneTask::Seed& seed : s.task->seeds) {
        absl::StatusOr<schedule::Schedule> parsed = schedule::ParseSchedule(seed.schedule);
        if (!parsed.ok()) continue;
        Candidate c;
        c.schedule = *parsed;
        if (s.measured.count(c.Key()) || transferred.count(c.Key())) continue;
        transferred[c.Key()] = seed.hardware_key;
        batch.push_back(std::move(c));
      }
    }
    for (Candidate& c : NextBatch(s)) {
      if (static_cast<int>(batch.size()) >= std::max(options_.batch_size,
                                                      static_cast<int>(transferred.size()))) {
        break;
      }
      if (!transferred.count(c.Key())) batch.push_back(std::move(c));
    }
    const int64_t left = options_.trials - trials_;
    if (static_cast<int64_t>(batch.size()) > left) batch.resize(static_cast<size_t>(left));
    if (batch.empty() && s.rounds > 0) {
      s.progress.stopped = true;  // nothing new to measure: the space is exhausted
      return absl::OkStatus();
    }
    std::vector<schedule::Schedule> schedules;
    for (const Candidate& c : batch) schedules.push_back(c.schedule);
    absl::StatusOr<BatchMeasurement> m = measurer_.Measure(s.task->lowered, schedules);
    if (!m.ok()) return m.status();
    if (s.rounds == 0) {
      // The reference is the default schedule: it is the starting point and a candidate.
      const Candidate& d = s.space.Default();
      s.progress.default_ms = m->reference.median_ms;
      s.progress.best_ms = m->reference.median_ms;
      s.progress.best_schedule = d.schedule.ToString();
      s.progress.best_config = schedule::KnobConfigToString(d.config);
      s.measured[d.Key()] = m->reference.median_ms;
      s.parents.push_back({m->reference.median_ms, d});
      AddSample(s, d, m->reference.median_ms);
      if (!d.schedule.steps.empty()) result.records.push_back(MakeRecord(s, d, m->reference));
    }
    for (size_t i = 0; i < batch.size() && i < m->candidates.size(); ++i) {
      const Measurement& cm = m->candidates[i];
      Observe(s, batch[i], cm.status.ok() ? cm.median_ms : kFailed);
      if (cm.status.ok() && !batch[i].schedule.steps.empty()) {
        result.records.push_back(CandidateRecord(s, batch[i], cm));
      }
    }
    ++s.rounds;
    s.trials_in_last_round = s.progress.trials - before;
    if (s.since_improvement >= options_.early_stop_trials) s.progress.stopped = true;
    if (batch.empty()) s.progress.stopped = true;
    if (options_.use_cost_model && !samples_.empty()) {
      absl::Status st = model_->Train(samples_);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

  Measurer& measurer_;
  const FeatureContext& features_;
  const SearchOptions& options_;
  const std::function<bool(const SearchProgress&)>& progress_fn_;
  const std::string& compiler_version_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<TaskState>> states_;
  std::optional<CostModel> model_;
  std::vector<Sample> samples_;
  int64_t trials_ = 0;
  int round_ = 0;
};

}  // namespace

FeatureContext FeatureContextFor(const HardwareInfo& hardware, const Target& target,
                                 int threads) {
  FeatureContext f;
  f.cache_bytes.clear();
  for (int64_t bytes : hardware.cache_bytes) {
    const bool fits = f.cache_bytes.size() < kMaxCacheLevels;
    if (bytes > 0 && fits && (f.cache_bytes.empty() || bytes >= f.cache_bytes.back())) {
      f.cache_bytes.push_back(bytes);
    }
  }
  f.vector_lanes_f32 = std::max(1, target.f32_lanes());
  f.num_threads = threads;
  return f;
}

absl::StatusOr<SearchResult> TuneTasks(const std::vector<TuneTask>& tasks, const Target& target,
                                       Measurer& measurer, const FeatureContext& features,
                                       const SearchOptions& options,
                                       const std::function<bool(const SearchProgress&)>& progress,
                                       const std::string& compiler_version) {
  if (tasks.empty()) return absl::InvalidArgumentError("nothing to tune: no workloads");
  if (options.trials < 1 || options.batch_size < 1 || options.population < 1 ||
      options.generations < 0 || options.eps_greedy < 0 || options.eps_greedy > 1) {
    return absl::InvalidArgumentError(
        "search options out of range: trials, batch_size and population must be >= 1, "
        "generations >= 0, eps_greedy in [0, 1]");
  }
  return Search(tasks, target, measurer, features, options, progress, compiler_version).Run();
}

v1::TuningRecord MeasuredRecord(const std::string& workload_key, const Candidate& candidate,
                                const Measurement& m, double default_ms,
                                const Measurer& measurer, const std::string& compiler_version) {
  v1::TuningRecord r;
  r.set_format_version(kRecordFormatVersion);
  r.set_workload_key(workload_key);
  r.set_hardware_key(measurer.hardware_key());
  r.set_schedule(candidate.schedule.ToString());
  r.set_median_ms(m.median_ms);
  r.set_p10_ms(m.p10_ms);
  r.set_p90_ms(m.p90_ms);
  r.set_repeats(m.repeats);
  r.set_compiler_version(compiler_version);
  r.set_worker(measurer.worker_name());
  r.set_measured_unix_ms(NowUnixMs());
  r.set_provenance(v1::TuningRecord::MEASURED);
  r.set_config(schedule::KnobConfigToString(candidate.config));
  r.set_default_median_ms(default_ms);
  return r;
}

}  // namespace kiln::tuning
