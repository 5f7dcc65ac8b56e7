// The graph pass registry and the pipeline runner (verification between passes, optional
// printing after passes).
#include "compiler_core/passes/graph/pass.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/passes/graph/constant_folding.h"
#include "compiler_core/passes/graph/conv_u8s8.h"
#include "compiler_core/passes/graph/cse.h"
#include "compiler_core/passes/graph/dce.h"
#include "compiler_core/passes/graph/fold_batchnorm.h"
#include "compiler_core/passes/graph/fusion.h"
#include "compiler_core/passes/graph/layout_nchwc.h"
#include "compiler_core/passes/graph/matmul_layout.h"
#include "compiler_core/passes/graph/matmul_pack.h"
#include "compiler_core/passes/graph/matmul_u8s8.h"
#include "compiler_core/passes/graph/simplify.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

struct PassEntry {
  const char* name;
  std::unique_ptr<GraphPass> (*create)(const PipelineOptions&);
};

template <typename T>
std::unique_ptr<GraphPass> Make(const PipelineOptions&) {
  return std::make_unique<T>();
}

std::unique_ptr<GraphPass> MakeLayoutNchwc(const PipelineOptions& options) {
  return std::make_unique<LayoutNchwc>(LayoutNchwcOptions{options.f32_lanes});
}

std::unique_ptr<GraphPass> MakeConvU8S8(const PipelineOptions& options) {
  return std::make_unique<ConvU8S8>(ConvU8S8Options{options.int8_dot4});
}

std::unique_ptr<GraphPass> MakeMatMulU8S8(const PipelineOptions& options) {
  return std::make_unique<MatMulU8S8>(MatMulU8S8Options{options.f32_lanes, options.int8_dot4});
}

std::unique_ptr<GraphPass> MakeMatMulPack(const PipelineOptions& options) {
  return std::make_unique<MatMulPack>(
      MatMulPackOptions{options.f32_lanes, options.pack_matmul_weights});
}

// In the default pipeline's order.
constexpr PassEntry kPasses[] = {
    {"constant-folding", &Make<ConstantFolding>},
    {"simplify", &Make<Simplify>},
    {"fold-batchnorm", &Make<FoldBatchNorm>},
    {"matmul-layout", &Make<MatMulWeightLayout>},
    {"matmul-pack", &MakeMatMulPack},
    {"cse", &Make<CommonSubexpressionElimination>},
    {"dce", &Make<DeadCodeElimination>},
    {"layout-nchwc", &MakeLayoutNchwc},
    {"conv-u8s8", &MakeConvU8S8},
    {"matmul-u8s8", &MakeMatMulU8S8},
    {"fusion", &Make<OperatorFusion>},
};

bool ShouldPrint(const PipelineOptions& options, std::string_view pass_name) {
  if (!options.printer) return false;
  return std::any_of(options.print_after.begin(), options.print_after.end(),
                     [&](const std::string& p) { return p == "all" || p == pass_name; });
}

}  // namespace

std::unique_ptr<GraphPass> CreatePass(std::string_view name) {
  return CreatePass(name, PipelineOptions{});
}

std::unique_ptr<GraphPass> CreatePass(std::string_view name, const PipelineOptions& options) {
  for (const PassEntry& entry : kPasses) {
    if (name == entry.name) return entry.create(options);
  }
  return nullptr;
}

std::vector<std::string> RegisteredPassNames() {
  std::vector<std::string> names;
  for (const PassEntry& entry : kPasses) names.push_back(entry.name);
  return names;
}

std::vector<std::string> DefaultPassPipeline() { return RegisteredPassNames(); }

std::vector<std::string> DefaultPassPipeline(std::string_view target_kind) {
  std::vector<std::string> names = DefaultPassPipeline();
  if (target_kind == "cpu") return names;
  std::vector<std::string> kept;
  for (const std::string& name : names) {
    if (std::find(std::begin(kCpuOnlyPasses), std::end(kCpuOnlyPasses), name) ==
        std::end(kCpuOnlyPasses)) {
      kept.push_back(name);
    }
  }
  return kept;
}

absl::Status RunPasses(graph::Graph& graph, const std::vector<std::string>& pass_names,
                       const PipelineOptions& options) {
  // Resolve every name first so a typo fails before any pass mutates the graph.
  std::vector<std::unique_ptr<GraphPass>> passes;
  for (const std::string& name : pass_names) {
    std::unique_ptr<GraphPass> pass = CreatePass(name, options);
    if (pass == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown pass '", name, "' (registered: ",
                                                     absl::StrJoin(RegisteredPassNames(), ", "),
                                                     ")"));
    }
    passes.push_back(std::move(pass));
  }
  for (const std::unique_ptr<GraphPass>& pass : passes) {
    std::string name(pass->name());
    ScopedStageTimer pass_timer(options.on_stage, "pass: " + name);
    absl::StatusOr<bool> changed = pass->Run(graph);
    pass_timer.Stop();
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass '", name, "': ", changed.status().message()));
    }
    if (options.verify) {
      ScopedStageTimer verify_timer(options.on_stage, "verify: graph after " + name);
      absl::Status verified = graph::VerifyGraph(graph);
      verify_timer.Stop();
      if (!verified.ok()) {
        // The failing IR goes to the printer (when there is one) so it can be inspected.
        if (options.printer) options.printer(name + " (verifier failed)", graph::PrintGraph(graph));
        return absl::InternalError(absl::StrCat(
            "verifier failed after pass '", name, "': ", verified.message(),
            options.printer ? " (IR printed above)" : " (rerun with -print-ir-after=" + name +
                                                          " to see the IR)"));
      }
    }
    if (ShouldPrint(options, name)) options.printer(name, graph::PrintGraph(graph));
  }
  return absl::OkStatus();
}

}  // namespace kiln::passes
