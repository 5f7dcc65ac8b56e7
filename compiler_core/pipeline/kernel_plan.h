// Turns an optimized, fused graph into the sequence of kernel calls of an artifact: lowers and
// schedules each fusion group, resolves view ops (Reshape, Flatten, ...) to aliases, binds every
// kernel argument to an input, output, weight or arena slot, and plans the arena.
#ifndef KILN_COMPILER_CORE_PIPELINE_KERNEL_PLAN_H_
#define KILN_COMPILER_CORE_PIPELINE_KERNEL_PLAN_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/passes/graph/bounded_dims.h"
#include "compiler_core/schedule/schedule_source.h"
#include "compiler_core/support/stage_timer.h"
#include "compiler_core/support/target.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::pipeline {

/// The graph input through which kernels of a graph with symbolic dims receive the symbols'
/// values (i64[symbols], GraphSymbols order), bound to Binding.DIMS; the compile pipeline adds
/// it after the graph passes.
inline constexpr char kSymbolDimsInput[] = "kiln.dims";

/// The kernels of a model and everything the manifest needs besides the code.
struct KernelPlan {
  /// Scheduled, one per generated kernel: the model's in call order, then each Loop body's
  /// (named "l<K>_..." after the Loop's call index K).
  std::vector<loop::Func> funcs;
  kiln::v1::Manifest manifest;     // inputs, outputs, kernels (with bindings), arena, buffers
  std::string weights;             // packed constants, 64-byte aligned, at WEIGHT offsets
};

/// Builds the kernel plan of `graph`, which must have been through the fusion pass. Each
/// kernel's schedule comes from `schedules` (a tuned schedule that does not apply falls back
/// to the default one); the manifest records every kernel's workload key, whether it is tuned,
/// and the digest of the applied records (Manifest.tuning_digest).
/// `print` receives loop IR for the stages "lower" and "schedule" when `print_stage` says so.
/// `on_stage` receives the time of each kernel's lowering ("lower: kernel_N OPS") and
/// scheduling ("schedule: ..."), and of weight packing and memory planning.
/// A graph with symbolic dims (GraphSymbols not empty) must have the input kSymbolDimsInput;
/// its kernels' loops and strides follow the symbols, its symbolic intermediates become
/// Manifest.dynamic_buffers and the manifest lists the symbols (Manifest.symbols).
/// With `bounded` (passes::BoundDims ran on `graph`), its "kiln.dims" input is bound as
/// Binding.DIMS rather than a manifest input, and the manifest gets the bound symbols and the
/// inputs' and outputs' dim lengths.
/// Prefixes every kernel and init symbol of `m`, its Loop bodies' and its profiles' with `prefix`
/// and moves their WEIGHT bindings `weight_base` bytes on: how one plan joins another's shared
/// object and weights section (a Loop body's, a shape profile's).
void RelocateCalls(kiln::v1::Manifest& m, const std::string& prefix, int64_t weight_base);

/// A Loop node (graph op Loop) becomes a Loop call (KernelCall.loop) whose body is the plan
/// `plan_body` makes of the node's body graph (optimizing it in place), merged into this plan:
/// its kernels renamed "l<K>_..." and its weights appended to this plan's.
/// Errors: kUnimplemented from lowering (naming the node) and for a Loop with bounded dims,
/// kInternal if a default schedule fails, and `plan_body`'s errors, naming the Loop.
using BodyPlanner = std::function<absl::StatusOr<KernelPlan>(graph::Graph& body)>;
absl::StatusOr<KernelPlan> BuildKernelPlan(
    const graph::Graph& graph, const Target& target, const schedule::ScheduleSource& schedules,
    const std::function<bool(const std::string&)>& print_stage,
    const std::function<void(const std::string&, const std::string&)>& print,
    const StageTimeFn& on_stage = {}, const passes::BoundedDims* bounded = nullptr,
    const BodyPlanner& plan_body = {});

}  // namespace kiln::pipeline

#endif  // KILN_COMPILER_CORE_PIPELINE_KERNEL_PLAN_H_
