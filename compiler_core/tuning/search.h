// Schedule search for a model's workloads, as in Ansor (Zheng et al., "Ansor: Generating
// High-Performance Tensor Programs for Deep Learning", OSDI 2020): per round, an evolutionary
// search over the workload's schedule space ranks candidates with the learned cost model
// (cost_model.h), the top batch is measured on the device (a Measurer), the model is retrained
// on every measurement so far, and the best candidates seed the next round's mutations and
// crossovers. A task scheduler spends the trial budget over the workloads by their share of
// the model's latency (Ansor section 6, gradient-based allocation). Everything is reproducible
// from the seed, given the same measurements.
#ifndef KILN_COMPILER_CORE_TUNING_SEARCH_H_
#define KILN_COMPILER_CORE_TUNING_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/tuning/features.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/measure.h"
#include "compiler_core/tuning/space.h"
#include "kiln/v1/tuning.pb.h"

namespace kiln::tuning {

/// Measures schedules of one workload on one device: locally (LocalMeasurer) or through a
/// kilnd measure worker. Implementations build the batch, run it, and report one measurement
/// per candidate plus the reference (default schedule) of the same run.
class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual absl::StatusOr<BatchMeasurement> Measure(
      const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) = 0;
  /// The hardware key the measurements are valid for.
  virtual std::string hardware_key() const = 0;
  /// Who measured (recorded as the records' worker).
  virtual std::string worker_name() const = 0;
};

/// The cost model's view of a device: `hardware`'s known, non-decreasing cache sizes (at most
/// kMaxCacheLevels), `target`'s f32 lanes, `threads` threads.
FeatureContext FeatureContextFor(const HardwareInfo& hardware, const Target& target, int threads);

/// One workload to tune.
struct TuneTask {
  std::string workload_key;
  loop::Func lowered;
  std::string fused_ops;  // for progress and summaries
  int weight = 1;         // kernels of the model with this workload (calls per inference)
  int64_t flops = 0;
  /// Schedules from similar hardware (RecordSet::Nearest) measured in the task's first round;
  /// their records say TRANSFERRED and where they came from. Never applied unmeasured.
  struct Seed {
    std::string schedule;       // printed trace
    std::string hardware_key;   // where it was measured
  };
  std::vector<Seed> seeds;
};

struct SearchOptions {
  int64_t trials = 64;             // measured candidates in all, over every task
  double time_budget_s = 0;        // stop after this much wall time (0: no limit)
  int batch_size = 8;              // candidates measured per round
  int population = 96;             // evolutionary population per round
  int generations = 3;             // evolution steps per round
  double mutation_probability = 0.85;  // else crossover
  double eps_greedy = 0.1;         // share of each batch sampled at random
  int early_stop_trials = 48;      // a task stops after this many trials without improving
  bool use_cost_model = true;      // false: random search (for the cost model's benchmark)
  /// After the budget, every task's candidates that beat the default (at most this many, the
  /// fastest first) are measured again in one batch with the default, and filed with those
  /// paired medians, replacing the first ones: the fastest of hundreds of noisy medians is
  /// biased low, and a record must win in a fair comparison (0: no confirmation). Not counted
  /// in `trials`.
  int confirm_top = 8;
  uint64_t seed = 1;
  /// Initial cost model (CostModel::Serialize) to start warm; empty: untrained.
  std::string initial_model;
};

/// Where a task stands.
struct TaskProgress {
  int task = 0;                    // index into the tasks
  int trials = 0;                  // measured candidates of this task
  double default_ms = 0;           // the default schedule's median in its first batch
  double best_ms = 0;              // the best median so far (<= default_ms)
  std::string best_schedule;       // its trace
  std::string best_config;         // its knob config
  bool stopped = false;            // early-stopped or its space is exhausted
  /// best_ms after each trial of this task (the best-so-far curve).
  std::vector<double> curve;
};

/// Progress of a whole search, reported after every round.
struct SearchProgress {
  int round = 0;
  int trials = 0;                  // measured so far, all tasks
  int trial_budget = 0;
  int current_task = 0;            // the task the round measured
  std::vector<TaskProgress> tasks;
  /// Sum over tasks of weight × best_ms: the model's latency estimated from its kernels.
  double estimated_ms = 0;
  double default_estimated_ms = 0;
  /// The records the round just measured (also in SearchResult::records), so that a caller
  /// can file them at once and keep them if the search later fails or is cancelled.
  std::vector<v1::TuningRecord> new_records;
};

struct SearchResult {
  SearchProgress progress;          // the final state
  /// Every successful measurement as a record (the defaults included), provenance MEASURED.
  std::vector<v1::TuningRecord> records;
  std::string model;                // the final cost model (CostModel::Serialize), or ""
  bool cancelled = false;
};

/// Tunes `tasks` with `measurer`. `progress` (optional) is called after every round;
/// returning false cancels the search, which then returns what was measured so far.
/// `features` describes the device for the cost model's features. Errors: kInvalidArgument for
/// options out of range or no tasks; a Measurer error that is not about one candidate (the
/// reference failing, the device gone) ends the search with that error.
absl::StatusOr<SearchResult> TuneTasks(const std::vector<TuneTask>& tasks, const Target& target,
                                       Measurer& measurer, const FeatureContext& features,
                                       const SearchOptions& options,
                                       const std::function<bool(const SearchProgress&)>& progress,
                                       const std::string& compiler_version);

/// The MEASURED tuning record of `candidate`, a candidate of workload `workload_key` measured
/// by `measurer` as `m` (ms), in a batch whose default schedule took `default_ms`; measured now,
/// by `compiler_version`'s code.
v1::TuningRecord MeasuredRecord(const std::string& workload_key, const Candidate& candidate,
                                const Measurement& m, double default_ms,
                                const Measurer& measurer, const std::string& compiler_version);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_SEARCH_H_
