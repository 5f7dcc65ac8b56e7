// Knob configs and the knob context.
#include "compiler_core/schedule/knobs.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::schedule {

std::string KnobConfigToString(const KnobConfig& config) {
  return absl::StrJoin(config, ",", absl::PairFormatter("="));
}

absl::StatusOr<KnobConfig> ParseKnobConfig(absl::string_view text) {
  KnobConfig config;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob config entry '", entry, "': expected name=integer"));
    }
    if (!config.emplace(std::string(kv[0]), value).second) {
      return absl::InvalidArgumentError(absl::StrCat("knob config: '", kv[0], "' set twice"));
    }
  }
  return config;
}

int64_t KnobContext::Choose(const std::string& name, std::vector<int64_t> choices,
                            int64_t default_value) {
  choices.push_back(default_value);
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  Knob knob{name, std::move(choices), default_value};
  int64_t value = default_value;
  auto it = config_.find(name);
  if (it != config_.end() &&
      std::binary_search(knob.choices.begin(), knob.choices.end(), it->second)) {
    value = it->second;
  } else if (it == config_.end() && picker_) {
    value = picker_(knob);
  }
  knobs_.push_back(std::move(knob));
  taken_[name] = value;
  return value;
}

bool TryStep(Primitive step, loop::Func& work, Schedule& schedule) {
  Schedule one;
  one.steps.push_back(std::move(step));
  loop::Func copy = work;
  if (!ApplySchedule(one, copy).ok()) return false;
  work = std::move(copy);
  schedule.steps.push_back(std::move(one.steps[0]));
  return true;
}

Schedule DefaultSchedule(const loop::Func& func, const Target& target) {
  KnobContext defaults;
  return PlanSchedule(func, target, defaults);
}

}  // namespace kiln::schedule
