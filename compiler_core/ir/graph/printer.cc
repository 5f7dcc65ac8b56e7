// Graph IR printer.
#include "compiler_core/ir/graph/printer.h"

#include <map>
#include <optional>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/support/sha256.h"

namespace kiln::graph {
namespace {

// A type as the text format writes it: a symbolic dim is a quoted expression,
// f32[1,"past + seq",32], so that the parser's tokens stay simple.
std::string TypeText(const TensorType& type) {
  if (type.is_static()) return type.ToString();
  return absl::StrCat(DTypeName(type.dtype), "[",
                      absl::StrJoin(type.sym_shape, ",",
                                    [](std::string* out, const sym::Expr& d) {
                                      if (std::optional<int64_t> c = d.AsConstant()) {
                                        absl::StrAppend(out, *c);
                                      } else {
                                        absl::StrAppend(out, "\"", d.ToString(), "\"");
                                      }
                                    }),
                      "]");
}

// "<past=[0,inf], seq=[1,4096]>" (after the graph's name) when the graph reads symbols, else
// "". Two ranges of one name (a broken graph) print the first; the verifier reports it.
std::string SymbolsClause(const Graph& graph) {
  std::map<std::string, sym::Symbol> symbols;
  auto add = [&](const Value* v) {
    if (v == nullptr) return;
    for (const sym::Expr& d : v->type().sym_shape) {
      for (const sym::Symbol& s : d.Symbols()) symbols.emplace(s.name, s);
    }
  };
  for (const Value* v : graph.inputs()) add(v);
  for (const Node* node : graph.nodes()) {
    for (const Value* v : node->outputs()) add(v);
  }
  if (symbols.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [name, s] : symbols) {
    parts.push_back(absl::StrCat(
        name, "=[", s.min, ",", s.max == sym::kUnbounded ? std::string("inf") : absl::StrCat(s.max),
        "]"));
  }
  return absl::StrCat("<", absl::StrJoin(parts, ", "), ">");
}

std::string FormatElement(const Tensor& t, int64_t i) {
  if (IsFloat(t.type.dtype)) return FormatFloatExact(t.GetAsDouble(i));
  if (t.type.dtype == DType::kUInt64) {
    return absl::StrCat(static_cast<uint64_t>(t.GetAsInt64(i)));
  }
  return absl::StrCat(t.GetAsInt64(i));
}

}  // namespace

std::string FormatConstant(const Tensor& tensor) {
  int64_t n = tensor.type.NumElements();
  if (n > 1) {
    size_t es = DTypeSize(tensor.type.dtype);
    bool splat = true;
    for (int64_t i = 1; i < n && splat; ++i) {
      splat = std::memcmp(tensor.bytes.data(), tensor.bytes.data() + i * es, es) == 0;
    }
    if (splat) return absl::StrCat("splat<", FormatElement(tensor, 0), ">");
  }
  if (n <= kMaxDenseElements) {
    std::vector<std::string> parts;
    for (int64_t i = 0; i < n; ++i) parts.push_back(FormatElement(tensor, i));
    return absl::StrCat("dense<[", absl::StrJoin(parts, ","), "]>");
  }
  std::string_view bytes(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  return absl::StrCat("sha256:", Sha256Hex(bytes).substr(0, 16));
}

std::string PrintGraph(const Graph& graph) {
  std::unordered_map<const Value*, int> number;
  int next = 0;
  auto name_of = [&](const Value* v) -> std::string {
    if (v == nullptr) return "_";
    auto it = number.find(v);
    if (it == number.end()) return absl::StrCat("%<unknown#", v->id(), ">");
    return absl::StrCat("%", it->second);
  };

  std::string out;
  std::vector<std::string> params;
  for (const Value* in : graph.inputs()) {
    number[in] = next++;
    params.push_back(absl::StrCat(name_of(in), " \"", in->name(), "\": ", TypeText(in->type())));
  }
  std::vector<Value*> constants = graph.LiveConstants();
  for (const Value* c : constants) number[c] = next++;
  std::vector<Node*> nodes = graph.nodes();
  for (const Node* node : nodes) {
    for (const Value* o : node->outputs()) number[o] = next++;
  }
  std::vector<std::string> results;
  for (const Value* o : graph.outputs()) {
    results.push_back(absl::StrCat(name_of(o), " \"", o->name(), "\""));
  }
  absl::StrAppend(&out, "graph @", graph.name(), SymbolsClause(graph), "(",
                  absl::StrJoin(params, ", "), ") -> (", absl::StrJoin(results, ", "), ") {\n");
  for (const Value* c : constants) {
    absl::StrAppend(&out, "  ", name_of(c), " = const ", c->type().ToString(), " ",
                    FormatConstant(*c->constant()), "\n");
  }
  for (const Node* node : nodes) {
    std::vector<std::string> outs, ins, types, attrs;
    for (const Value* o : node->outputs()) {
      outs.push_back(name_of(o));
      types.push_back(TypeText(o->type()));
    }
    for (const Value* i : node->inputs()) ins.push_back(name_of(i));
    for (const auto& [key, value] : node->attrs().items()) {
      attrs.push_back(absl::StrCat(key, "=", FormatAttrValue(value)));
    }
    absl::StrAppend(&out, "  ", absl::StrJoin(outs, ", "), " = ", node->info().name, "(",
                    absl::StrJoin(ins, ", "), ")");
    if (!attrs.empty()) absl::StrAppend(&out, " {", absl::StrJoin(attrs, ", "), "}");
    absl::StrAppend(&out, " : ", absl::StrJoin(types, ", "));
    if (node->fusion_group() >= 0) absl::StrAppend(&out, " group=", node->fusion_group());
    absl::StrAppend(&out, "\n");
  }
  std::vector<std::string> rets;
  for (const Value* o : graph.outputs()) rets.push_back(name_of(o));
  absl::StrAppend(&out, "  return ", absl::StrJoin(rets, ", "), "\n}\n");
  // Graph attributes (Loop bodies) follow the graph that holds them, depth first.
  for (const Node* node : nodes) {
    for (const auto& [key, value] : node->attrs().items()) {
      const auto* body = std::get_if<std::shared_ptr<Graph>>(&value);
      if (body == nullptr || *body == nullptr) continue;
      absl::StrAppend(&out, "// ", key, " of node '", node->name(), "' (", node->info().name,
                      "):\n", PrintGraph(**body));
    }
  }
  return out;
}

}  // namespace kiln::graph
