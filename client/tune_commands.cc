// kiln tune.
#include "client/tune_commands.h"

#include <iostream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/args.h"
#include "compiler_core/pipeline/workloads.h"
#include "compiler_core/tuning/space.h"

namespace kiln::client {
namespace {

int PrintSpace(const Args& args) {
  pipeline::CompileOptions options;
  options.target = args.Get("--target", "host");
  int64_t samples = 0;
  uint64_t seed = 0;
  if (!absl::SimpleAtoi(args.Get("--samples", "0"), &samples) || samples < 0) {
    return Fail("tune: --samples must be a non-negative integer");
  }
  if (!absl::SimpleAtoi(args.Get("--seed", "0"), &seed)) {
    return Fail("tune: --seed must be a non-negative integer");
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
    std::cout << "default candidate:\n" << space.Default().ToString();
    for (int64_t s = 0; s < samples; ++s) {
      std::cout << "sample " << s << ":\n" << space.Sample(rng).ToString();
    }
  }
  return 0;
}

}  // namespace

int TuneCommand(int argc, char** argv) {
  Args args = ParseArgs(argc, argv, 2,
                        {"--target", "--print-space", "--samples", "--seed", "--server",
                         "--trials", "--time-budget-s", "--json"},
                        {"--print-space", "--json"});
  if (!args.error.empty()) return Fail(args.error);
  if (args.positional.size() != 1) return Fail("tune: expected one MODEL.onnx");
  if (args.Has("--print-space")) return PrintSpace(args);
  return Fail("tune: measuring needs --server HOST:PORT (a kilnd with measure workers) or "
              "--print-space");
}

}  // namespace kiln::client
