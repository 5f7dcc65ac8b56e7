// The search space of one workload: the schedule template's knobs (schedule/knobs.h) on its
// lowered kernel for one target. A candidate is a knob config and the schedule trace it
// produces; the trace alone replays the candidate (deterministically: the template is a pure
// function of the kernel, the target and the config). Nothing here is CPU-specific: a GPU
// template declares its own knobs (block/thread binding, shared-memory tiles) the same way.
#ifndef KILN_COMPILER_CORE_TUNING_SPACE_H_
#define KILN_COMPILER_CORE_TUNING_SPACE_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/target.h"

namespace kiln::tuning {

/// One point of a space.
struct Candidate {
  schedule::KnobConfig config;  // the value of every knob its template run declared
  schedule::Schedule schedule;  // the trace; replays the candidate
  /// Identity of the candidate: its printed trace (two configs may give one schedule).
  std::string Key() const { return schedule.ToString(); }
  /// "config: a=1,b=2\n" followed by the trace, one step a line.
  std::string ToString() const;
};

/// The space of `lowered` (a kernel as lowered, unscheduled) on `target`.
class ScheduleSpace {
 public:
  ScheduleSpace(loop::Func lowered, Target target);

  /// The default schedule as a candidate (every knob at its default).
  const Candidate& Default() const { return default_; }
  /// The candidate of `config` (knobs it does not set, or sets to a value outside their
  /// choices, take their defaults).
  Candidate Instantiate(const schedule::KnobConfig& config) const;
  /// A uniformly random value for every knob, as the template declares them.
  Candidate Sample(std::mt19937_64& rng) const;
  /// `parent` with one of its knobs set to another of its choices (the rest kept). Returns the
  /// parent unchanged when it has no knob with two choices.
  Candidate Mutate(const Candidate& parent, std::mt19937_64& rng) const;
  /// Each knob's value from `a` or `b` at random (a knob only one of them declares comes from
  /// it).
  Candidate Crossover(const Candidate& a, const Candidate& b, std::mt19937_64& rng) const;

  /// The knobs met so far, in first-declared order (the default path's first; sampling adds
  /// those that exist only under other values). With choices merged.
  const std::vector<schedule::Knob>& knobs() const { return knobs_; }
  /// Product of the knobs' choice counts (an upper bound on distinct candidates), capped at
  /// 2^62.
  int64_t SizeBound() const;
  /// One line per knob: "name: {c0, c1, ...} default d".
  std::string ToString() const;

  const loop::Func& lowered() const { return lowered_; }
  const Target& target() const { return target_; }

 private:
  Candidate Run(schedule::KnobContext& context) const;

  loop::Func lowered_;
  Target target_;
  Candidate default_;
  mutable std::vector<schedule::Knob> knobs_;
};

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_SPACE_H_
