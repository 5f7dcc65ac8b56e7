// Knobs: the decisions of a schedule template, lifted into a search space. The default
// schedule (default_schedule.cc) is a template that asks a KnobContext for each decision it
// makes — register block shape, split factors, vector width, loop order, which loop runs in
// parallel — giving its own rule-based choice as the default. Run with no config it produces
// the default schedule; with a config (a value per knob name) it produces another point of the
// space, so the default is always one point of the space. As in AutoTVM's templates
// (Chen et al., "Learning to Optimize Tensor Programs", NeurIPS 2018), knobs are declared as
// the template runs, so a knob that only exists under another knob's value (a tail block only
// when the block does not divide the row) is part of the space only there.
#ifndef KILN_COMPILER_CORE_SCHEDULE_KNOBS_H_
#define KILN_COMPILER_CORE_SCHEDULE_KNOBS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/target.h"

namespace kiln::schedule {

/// One decision: its name (unique within a kernel, e.g. "n2.conv.cols"), the values it may
/// take (sorted, distinct) and the template's own choice.
struct Knob {
  std::string name;
  std::vector<int64_t> choices;
  int64_t default_value = 0;
};

/// A point of a space: a value per knob name. Knobs it does not name take their default.
using KnobConfig = std::map<std::string, int64_t>;

/// "name=value,name=value" in name order ("" for the empty config).
std::string KnobConfigToString(const KnobConfig& config);
/// Inverse of KnobConfigToString. Errors: kInvalidArgument naming the malformed entry.
absl::StatusOr<KnobConfig> ParseKnobConfig(absl::string_view text);

/// What a template asks for its decisions. Each Choose declares a knob and returns its value:
/// the config's value when it names the knob with one of its choices, else the picker's (when
/// set: random sampling), else the default. Records the knobs declared and the values taken.
class KnobContext {
 public:
  /// Picks a value for a knob the config does not set; returns one of knob.choices.
  using Picker = std::function<int64_t(const Knob& knob)>;

  KnobContext() = default;
  explicit KnobContext(KnobConfig config, Picker picker = nullptr)
      : config_(std::move(config)), picker_(std::move(picker)) {}

  /// Declares knob `name` over `choices` (sorted and deduplicated here; `default_value` is
  /// added when missing) and returns the value taken.
  int64_t Choose(const std::string& name, std::vector<int64_t> choices, int64_t default_value);
  /// Choose over {0, 1}.
  bool ChooseBool(const std::string& name, bool default_value) {
    return Choose(name, {0, 1}, default_value ? 1 : 0) != 0;
  }

  /// The knobs declared so far, in order.
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// The value taken by every knob declared so far.
  const KnobConfig& taken() const { return taken_; }

 private:
  KnobConfig config_;
  Picker picker_;
  std::vector<Knob> knobs_;
  KnobConfig taken_;
};

/// For the templates: applies `step` to a copy of `work`; if it is legal, keeps the result in
/// `work`, appends the step to `schedule` and returns true, else leaves both unchanged.
bool TryStep(Primitive step, loop::Func& work, Schedule& schedule);

/// The schedule template: the default schedule's planner with every decision asked of
/// `knobs`. With a default KnobContext it returns DefaultSchedule(func, target). Every step is
/// tried on a copy and dropped if illegal, so the result always applies to `func`.
/// On a GPU target (target.IsGpu()) it is PlanGpuSchedule's template.
Schedule PlanSchedule(const loop::Func& func, const Target& target, KnobContext& knobs);

/// The GPU schedule template (gpu_schedule.cc): contractions tiled in shared memory (on tensor
/// cores with target.gpu.precision tf32/fp16/bf16); per other top-level nest, its leading
/// spatial loops fused, split by the block size (knob "n<i>.threads") and bound to blockIdx.x /
/// threadIdx.x. Every step is tried on a copy and dropped if illegal.
Schedule PlanGpuSchedule(const loop::Func& func, const Target& target, KnobContext& knobs);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_KNOBS_H_
