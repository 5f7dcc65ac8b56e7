// Schedule spaces: instantiation, sampling, mutation and crossover over template knobs.
#include "compiler_core/tuning/space.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::tuning {

using schedule::Knob;
using schedule::KnobConfig;
using schedule::KnobContext;

std::string Candidate::ToString() const {
  return absl::StrCat("config: ", schedule::KnobConfigToString(config), "\n",
                      schedule.ToString());
}

ScheduleSpace::ScheduleSpace(loop::Func lowered, Target target)
    : lowered_(std::move(lowered)), target_(std::move(target)) {
  KnobContext defaults;
  default_ = Run(defaults);
}

Candidate ScheduleSpace::Run(KnobContext& context) const {
  Candidate c;
  c.schedule = schedule::PlanSchedule(lowered_, target_, context);
  c.config = context.taken();
  for (const Knob& k : context.knobs()) {
    auto it = std::find_if(knobs_.begin(), knobs_.end(),
                           [&](const Knob& known) { return known.name == k.name; });
    if (it == knobs_.end()) {
      knobs_.push_back(k);
      continue;
    }
    std::vector<int64_t> merged = it->choices;
    merged.insert(merged.end(), k.choices.begin(), k.choices.end());
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    it->choices = std::move(merged);
  }
  return c;
}

Candidate ScheduleSpace::Instantiate(const KnobConfig& config) const {
  KnobContext context(config);
  return Run(context);
}

Candidate ScheduleSpace::Sample(std::mt19937_64& rng) const {
  KnobContext context({}, [&rng](const Knob& k) {
    std::uniform_int_distribution<size_t> pick(0, k.choices.size() - 1);
    return k.choices[pick(rng)];
  });
  return Run(context);
}

Candidate ScheduleSpace::Mutate(const Candidate& parent, std::mt19937_64& rng) const {
  // The knobs the parent's own template run declared, with their choices there.
  KnobContext replay(parent.config);
  Run(replay);
  std::vector<const Knob*> open;
  for (const Knob& k : replay.knobs()) {
    if (k.choices.size() >= 2) open.push_back(&k);
  }
  if (open.empty()) return parent;
  std::uniform_int_distribution<size_t> pick_knob(0, open.size() - 1);
  const Knob& k = *open[pick_knob(rng)];
  std::vector<int64_t> others;
  const int64_t current = replay.taken().at(k.name);
  for (int64_t v : k.choices) {
    if (v != current) others.push_back(v);
  }
  std::uniform_int_distribution<size_t> pick_value(0, others.size() - 1);
  KnobConfig config = replay.taken();
  config[k.name] = others[pick_value(rng)];
  // Knobs that appear only under the new value are sampled.
  KnobContext context(config, [&rng](const Knob& knob) {
    std::uniform_int_distribution<size_t> pick(0, knob.choices.size() - 1);
    return knob.choices[pick(rng)];
  });
  return Run(context);
}

Candidate ScheduleSpace::Crossover(const Candidate& a, const Candidate& b,
                                   std::mt19937_64& rng) const {
  KnobConfig config = a.config;
  std::bernoulli_distribution coin(0.5);
  for (const auto& [name, value] : b.config) {
    auto it = config.find(name);
    if (it == config.end() || coin(rng)) config[name] = value;
  }
  return Instantiate(config);
}

int64_t ScheduleSpace::SizeBound() const {
  constexpr int64_t kCap = int64_t{1} << 62;
  int64_t n = 1;
  for (const Knob& k : knobs_) {
    const int64_t c = static_cast<int64_t>(k.choices.size());
    if (n > kCap / std::max<int64_t>(c, 1)) return kCap;
    n *= std::max<int64_t>(c, 1);
  }
  return n;
}

std::string ScheduleSpace::ToString() const {
  std::string out;
  for (const Knob& k : knobs_) {
    absl::StrAppend(&out, k.name, ": {", absl::StrJoin(k.choices, ", "), "} default ",
                    k.default_value, "\n");
  }
  return out;
}

}  // namespace kiln::tuning
