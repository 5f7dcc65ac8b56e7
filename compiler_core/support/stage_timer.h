// Compile-stage timing (`kiln compile --time-passes`, like LLVM's -time-passes): stages report
// their wall-clock time to an optional callback.
#ifndef KILN_COMPILER_CORE_SUPPORT_STAGE_TIMER_H_
#define KILN_COMPILER_CORE_SUPPORT_STAGE_TIMER_H_

#include <chrono>
#include <functional>
#include <string>
#include <utility>

namespace kiln {

/// Receives the wall-clock time in ms of one compile stage, named "<category>: <detail>" or
/// "<category>" (e.g. "pass: fusion", "lower: kernel_3 Conv+Relu", "codegen: optimize").
using StageTimeFn = std::function<void(const std::string& stage, double ms)>;

/// Reports the time from construction to destruction (or to Stop) to `fn`, if `fn` is set.
class ScopedStageTimer {
 public:
  ScopedStageTimer(const StageTimeFn& fn, std::string stage)
      : fn_(fn), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
  ~ScopedStageTimer() { Stop(); }
  ScopedStageTimer(const ScopedStageTimer&) = delete;
  ScopedStageTimer& operator=(const ScopedStageTimer&) = delete;

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    if (!fn_) return;
    fn_(stage_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                           start_)
                    .count());
  }

 private:
  const StageTimeFn& fn_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
  bool stopped_ = false;
};

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_STAGE_TIMER_H_
