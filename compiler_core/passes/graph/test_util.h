// Test helpers for graph passes: run passes on IR text and get the printed result, so that pass
// tests compare printed IR before and after (STYLE.md's ExpectPassOutput).
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_TEST_UTIL_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_TEST_UTIL_H_

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes::testing {

/// Parses `ir`, runs `pass_name` once (no verifier: unit tests isolate the pass) and returns the
/// printed result, or the parse/pass error.
inline absl::StatusOr<std::string> RunPassOnText(std::string_view pass_name, std::string_view ir,
                                                 bool* changed = nullptr) {
  absl::StatusOr<std::unique_ptr<graph::Graph>> graph = graph::ParseGraph(ir);
  if (!graph.ok()) return graph.status();
  std::unique_ptr<GraphPass> pass = CreatePass(pass_name);
  if (pass == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no pass ", std::string(pass_name)));
  }
  absl::StatusOr<bool> result = pass->Run(**graph);
  if (!result.ok()) return result.status();
  if (changed != nullptr) *changed = *result;
  return graph::PrintGraph(**graph);
}

/// The IR line of a dense<> i32 constant %`id` of `shape` with values uniform in [lo, hi].
inline std::string RandomIntConst(int id, const std::vector<int64_t>& shape, int lo, int hi,
                                  std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(dist(rng));
  return absl::StrCat("  %", id, " = const i32[", absl::StrJoin(shape, ","), "] dense<[",
                      absl::StrJoin(values, ","), "]>\n");
}

}  // namespace kiln::passes::testing

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_TEST_UTIL_H_
