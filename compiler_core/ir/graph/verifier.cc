// Structural checks of the graph IR: SSA order, arity, defined outputs, and types that agree
// with the shape rules.
#include "compiler_core/ir/graph/verifier.h"

#include <optional>
#include <string>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::graph {
namespace {

std::string NodeRef(const Node& node) {
  return absl::StrCat("node '", node.name(), "' (", OpName(node.op()), ")");
}

}  // namespace

absl::Status VerifyGraph(const Graph& graph) {
  std::unordered_set<const Value*> defined;
  for (const Value* v : graph.inputs()) defined.insert(v);
  for (const Value* v : graph.constants()) defined.insert(v);
  for (const Node* node : graph.nodes()) {
    const OpInfo& info = node->info();
    if (node->num_inputs() < info.min_inputs || node->num_inputs() > info.max_inputs) {
      return absl::InvalidArgumentError(absl::StrCat(
          NodeRef(*node), ": has ", node->num_inputs(), " inputs, expected ", info.min_inputs,
          "..", info.max_inputs));
    }
    if (node->outputs().empty() ||
        static_cast<int>(node->outputs().size()) > info.num_outputs) {
      return absl::InvalidArgumentError(absl::StrCat(NodeRef(*node), ": has ",
                                                     node->outputs().size(),
                                                     " outputs, expected 1..", info.num_outputs));
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Value* in = node->input(i);
      if (in == nullptr) {
        if (i < info.min_inputs) {
          return absl::InvalidArgumentError(
              absl::StrCat(NodeRef(*node), ": required input ", i, " is missing"));
        }
        continue;
      }
      if (defined.count(in) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeRef(*node), ": input ", i, " ('", in->name(),
            "') is not a graph input, a constant, or an output of an earlier node"));
      }
    }
    auto types = InferOutputTypes(*node);
    if (!types.ok()) {
      return absl::InvalidArgumentError(std::string(types.status().message()));
    }
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      const Value* out = node->output(static_cast<int>(i));
      if (out->producer() != node || out->output_index() != static_cast<int>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeRef(*node), ": output ", i, " does not point back to its producer"));
      }
      if (i >= types->size() || (*types)[i] != out->type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeRef(*node), ": output ", i, " has type ", out->type().ToString(), ", expected ",
            i < types->size() ? (*types)[i].ToString() : std::string("no output")));
      }
      defined.insert(out);
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* out = graph.outputs()[i];
    if (out == nullptr || defined.count(out) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output ", i, " is not defined by the graph"));
    }
  }
  return VerifySymbols(graph);
}

absl::Status VerifySymbols(const Graph& graph) {
  KILN_RETURN_IF_ERROR(GraphSymbols(graph).status());
  // What a run binds (sym::BindSymbols): the symbols that are an input dim by themselves.
  std::unordered_set<std::string> bound;
  for (const Value* in : graph.inputs()) {
    for (const sym::Expr& d : in->type().sym_shape) {
      if (std::optional<sym::Symbol> s = d.AsSymbol()) bound.insert(s->name);
    }
  }
  auto check = [&](const Value* v, const std::string& what) -> absl::Status {
    for (const sym::Expr& d : v->type().sym_shape) {
      for (const sym::Symbol& s : d.Symbols()) {
        if (bound.count(s.name) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " has type ", v->type().ToString(), ", whose symbol '", s.name,
              "' no graph input dim gives by itself"));
        }
      }
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    KILN_RETURN_IF_ERROR(check(graph.inputs()[i], absl::StrCat("graph input ", i, " ('",
                                                               graph.inputs()[i]->name(), "')")));
  }
  for (const Node* node : graph.nodes()) {
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      KILN_RETURN_IF_ERROR(
          check(node->output(static_cast<int>(i)), absl::StrCat(NodeRef(*node), ": output ", i)));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::graph
