// The graph pass interface and the pass pipeline that runs passes with verification between
// them (XLA's invariant checker) and optional printing after each.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_PASS_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_PASS_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_core/support/stage_timer.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::passes {

/// A transformation over a graph. Run returns an error or whether the graph changed.
class GraphPass {
 public:
  virtual ~GraphPass() = default;
  /// Registry name (kebab-case), as accepted by `kiln-opt -passes=` and `--print-ir-after=`.
  virtual std::string_view name() const = 0;
  virtual absl::StatusOr<bool> Run(graph::Graph& graph) = 0;
};

struct PipelineOptions;
/// Creates the pass registered as `name` (nullptr if none): "constant-folding", "dce", "cse",
/// "fold-batchnorm", "layout-nchwc", "conv-u8s8", "matmul-u8s8",
/// "fusion". Target-dependent passes take their
/// options from `options` (default: an AVX-512 target).
std::unique_ptr<GraphPass> CreatePass(std::string_view name);
std::unique_ptr<GraphPass> CreatePass(std::string_view name, const PipelineOptions& options);
/// Every registered pass name, in the default pipeline's order.
std::vector<std::string> RegisteredPassNames();

/// Runs passes in order, verifying the graph after each. `print_after` names passes whose output
/// goes to `printer` ("all" for every pass).
struct PipelineOptions {
  std::vector<std::string> print_after;
  std::function<void(std::string_view pass_name, const std::string& ir)> printer;
  bool verify = true;
  /// The target's f32 SIMD lanes: the block size of the layout-nchwc pass.
  int f32_lanes = 16;
  /// Whether matmul-pack packs constant matmul weights into panels of 2 × f32_lanes.
  bool pack_matmul_weights = true;
  /// Whether the target has a 4-way u8 x s8 dot product (Target::HasInt8Dot4): enables the
  /// conv-u8s8 and matmul-u8s8 passes.
  bool int8_dot4 = false;
  /// Receives each pass's time ("pass: <name>") and the verifier's after it ("verify: graph
  /// after <name>"), in ms.
  StageTimeFn on_stage;
};

/// Runs `pass_names` in order. Errors: kInvalidArgument for an unknown pass name; a pass's own
/// error; kInternal naming the pass if the verifier fails after it.
absl::Status RunPasses(graph::Graph& graph, const std::vector<std::string>& pass_names,
                       const PipelineOptions& options = {});

/// The default optimization pipeline: constant-folding, simplify, fold-batchnorm, matmul-layout,
/// matmul-pack, cse, dce, layout-nchwc, fusion.
std::vector<std::string> DefaultPassPipeline();
/// The default pipeline for a target kind: every pass for "cpu"; for "cuda" without the CPU
/// layout passes (kCpuOnlyPasses: NCHWc blocking, matmul packing and the VNNI int8 rewrites,
/// which shape data for SIMD registers).
std::vector<std::string> DefaultPassPipeline(std::string_view target_kind);
/// The passes only a CPU target runs: layout-nchwc, matmul-pack, conv-u8s8, matmul-u8s8.
inline constexpr const char* kCpuOnlyPasses[] = {"layout-nchwc", "matmul-pack", "conv-u8s8",
                                                 "matmul-u8s8"};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_PASS_H_
