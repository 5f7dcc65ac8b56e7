// If, Loop and Scan: an If whose condition is a compile-time constant becomes its taken branch;
// an If on a run-time condition becomes a one-iteration graph Loop per branch, run when taken,
// and a Where per output; a small Loop whose trip count and condition are known at compile time
// and a short Scan are unrolled, one copy of the body per iteration; any other Loop or Scan
// becomes a graph Loop node over its body imported as a graph of its own.
#include "compiler_core/importer/onnx/control_flow.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;
using Ints = std::vector<int64_t>;

const onnx::GraphProto* GraphAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) return &a.g();
  }
  return nullptr;
}

Ints IntsAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return Ints(a.ints().begin(), a.ints().end());
  }
  return {};
}

std::optional<int64_t> IntAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return std::nullopt;
}

// Input `i` of `node`, or null when omitted.
Value* InputOf(const onnx::NodeProto& node, const std::map<std::string, Value*>& values, int i) {
  if (i >= node.input_size() || node.input(i).empty()) return nullptr;
  auto it = values.find(node.input(i));
  return it == values.end() ? nullptr : it->second;
}

// The one element of a constant scalar (or 1-element) tensor, as int64 (bool: 0 or 1).
std::optional<int64_t> ConstScalarValue(const Value* v) {
  if (v == nullptr || !v->is_constant() || v->type().NumElements() != 1) return std::nullopt;
  return v->constant()->GetAsInt64(0);
}

// `v` with a dim of extent 1 inserted at `axis` (a Reshape: the data is unchanged).
absl::StatusOr<Value*> InsertAxis(ImportContext& ctx, const std::string& name, Value* v,
                                  int64_t axis) {
  Ints shape = v->type().shape;
  shape.insert(shape.begin() + axis, 1);
  AttrMap a;
  a.Set("allowzero", int64_t{0});
  KILN_ASSIGN_OR_RETURN(graph::Node * n, ctx.Emit(OpKind::kReshape, name,
                                                  {v, ctx.ConstI64(name + "/shape", shape)}, a));
  return n->output(0);
}

// The per-iteration values `parts` stacked along a new axis `axis` (Reshape + Concat).
absl::StatusOr<Value*> Stack(ImportContext& ctx, const std::string& name,
                             const std::vector<Value*>& parts, int64_t axis) {
  std::vector<Value*> expanded;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i]->type() != parts[0]->type()) {
      return absl::UnimplementedError(absl::StrCat(
          "scan output '", name, "' has type ", parts[0]->type().ToString(), " in iteration 0 and ",
          parts[i]->type().ToString(), " in iteration ", i, " (stacking needs one type)"));
    }
    KILN_ASSIGN_OR_RETURN(Value * e, InsertAxis(ctx, absl::StrCat(name, "/", i), parts[i], axis));
    expanded.push_back(e);
  }
  if (expanded.size() == 1) return expanded[0];
  AttrMap a;
  a.Set("axis", axis);
  KILN_ASSIGN_OR_RETURN(graph::Node * n, ctx.Emit(OpKind::kConcat, name, expanded, a));
  return n->output(0);
}

// Element `index` of `v` along `axis` (a Gather with a scalar index: the axis is dropped).
absl::StatusOr<Value*> Take(ImportContext& ctx, const std::string& name, Value* v, int64_t index,
                            int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  Value* i = ctx.ConstScalar(name + "/index", DType::kInt64, static_cast<double>(index));
  KILN_ASSIGN_OR_RETURN(graph::Node * n, ctx.Emit(OpKind::kGather, name, {v, i}, a));
  return n->output(0);
}

// The elements of sequence output `i` of subgraph `body` just imported (its output is null).
std::vector<Value*> SequenceOutput(const ImportContext& ctx, const onnx::GraphProto& body, int i) {
  const std::vector<Value*>* seq = ctx.Sequence(body.output(i).name());
  return seq == nullptr ? std::vector<Value*>{} : *seq;
}

// Where(cond, a, b) of two sequences of one length and element types, element by element.
absl::StatusOr<std::vector<Value*>> SelectSequences(ImportContext& ctx, const onnx::NodeProto& node,
                                                    int i, Value* cond,
                                                    const std::vector<Value*>& a,
                                                    const std::vector<Value*>& b) {
  bool same = a.size() == b.size();
  for (size_t k = 0; same && k < a.size(); ++k) same = a[k]->type() == b[k]->type();
  if (!same) {
    return absl::UnimplementedError(
        NodePrefix(node) + absl::StrCat("the condition is only known at run time and sequence "
                                        "output ",
                                        i, " has ", a.size(),
                                        " elements in "
                                        "then_branch and ",
                                        b.size(),
                                        " in else_branch, or "
                                        "elements of other types; selecting needs one layout"));
  }
  std::vector<Value*> out;
  for (size_t k = 0; k < a.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(
        Value * v, ctx.EmitValue(OpKind::kWhere,
                                 absl::StrCat(NodeDisplayName(node), "/select", i, "[", k, "]"),
                                 {cond, a[k], b[k]}));
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<Value*>> GuardedIf(ImportContext& ctx, const onnx::NodeProto& node,
                                              Value* cond, const std::vector<TensorType>& types,
                                              const std::vector<int>& seq_lengths,
                                              const LoopBodyImporter& import_body);

absl::StatusOr<std::vector<Value*>> BuildIf(ImportContext& ctx, const onnx::NodeProto& node,
                                            const std::map<std::string, Value*>& values,
                                            const SubgraphImporter& import,
                                            const LoopBodyImporter& import_body) {
  const onnx::GraphProto* then_branch = GraphAttr(node, "then_branch");
  const onnx::GraphProto* else_branch = GraphAttr(node, "else_branch");
  Value* cond = InputOf(node, values, 0);
  if (then_branch == nullptr || else_branch == nullptr || cond == nullptr) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      "needs a condition and then_branch and else_branch graphs");
  }
  const std::string name = NodeDisplayName(node);
  if (std::optional<int64_t> taken = ConstScalarValue(cond)) {
    // A condition known at compile time: the taken branch only, inlined.
    const onnx::GraphProto& branch = *taken != 0 ? *then_branch : *else_branch;
    KILN_ASSIGN_OR_RETURN(
        std::vector<Value*> out,
        import(branch, {}, absl::StrCat(name, *taken != 0 ? "/then/" : "/else/")));
    for (int i = 0; i < static_cast<int>(out.size()) && i < node.output_size(); ++i) {
      if (out[i] == nullptr) ctx.SetSequence(node.output(i), SequenceOutput(ctx, branch, i));
    }
    return out;
  }
  // Both branches; a sequence output's elements are read right after its branch's import.
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> then_out, import(*then_branch, {}, name + "/then/"));
  std::vector<std::vector<Value*>> then_seqs(then_out.size());
  for (size_t i = 0; i < then_out.size(); ++i) {
    if (then_out[i] == nullptr) then_seqs[i] = SequenceOutput(ctx, *then_branch, i);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> else_out, import(*else_branch, {}, name + "/else/"));
  if (then_out.size() != else_out.size()) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      "the branches have different output counts");
  }
  if (cond->type().NumElements() != 1 || cond->type().dtype != DType::kBool) {
    return absl::InvalidArgumentError(NodePrefix(node) + absl::StrCat("condition has type ",
                                                                      cond->type().ToString(),
                                                                      ", expected one bool"));
  }
  AttrMap reshape;
  reshape.Set("allowzero", int64_t{0});
  KILN_ASSIGN_OR_RETURN(graph::Node * scalar,
                        ctx.Emit(OpKind::kReshape, name + "/cond",
                                 {cond, ctx.ConstI64(name + "/cond/shape", {})}, reshape));
  // Tensor outputs of one type in both branches: run only the branch the condition selects
  // (GuardedIf), so that the other cannot fail or loop forever on data meant for the first.
  // Branches that cannot be compiled on their own (sequences) run both and select.
  // A sequence output takes part element by element (one length and element types in both).
  bool same_types = true;
  std::vector<TensorType> types;
  std::vector<int> seq_lengths;  // per output: -1 for a tensor, else its element count
  for (size_t i = 0; same_types && i < then_out.size(); ++i) {
    if (then_out[i] == nullptr && else_out[i] == nullptr) {
      const std::vector<Value*> b = SequenceOutput(ctx, *else_branch, static_cast<int>(i));
      const std::vector<Value*>& a = then_seqs[i];
      same_types = a.size() == b.size();
      for (size_t k = 0; same_types && k < a.size(); ++k) {
        same_types = a[k]->type() == b[k]->type();
        types.push_back(a[k]->type());
      }
      seq_lengths.push_back(static_cast<int>(a.size()));
      continue;
    }
    same_types = then_out[i] != nullptr && else_out[i] != nullptr &&
                 then_out[i]->type() == else_out[i]->type();
    if (same_types) types.push_back(then_out[i]->type());
    seq_lengths.push_back(-1);
  }
  if (same_types && !types.empty()) {
    absl::StatusOr<std::vector<Value*>> guarded =
        GuardedIf(ctx, node, scalar->output(0), types, seq_lengths, import_body);
    if (guarded.ok() || guarded.status().code() != absl::StatusCode::kUnimplemented) {
      return guarded;
    }
  }
  std::vector<Value*> outputs;
  for (size_t i = 0; i < then_out.size(); ++i) {
    if ((then_out[i] == nullptr) != (else_out[i] == nullptr)) {
      return absl::UnimplementedError(NodePrefix(node) +
                                      absl::StrCat("output ", i,
                                                   " is a sequence in one branch and a "
                                                   "tensor in the other"));
    }
    if (then_out[i] == nullptr) {
      KILN_ASSIGN_OR_RETURN(
          std::vector<Value*> selected,
          SelectSequences(ctx, node, static_cast<int>(i), scalar->output(0), then_seqs[i],
                          SequenceOutput(ctx, *else_branch, static_cast<int>(i))));
      if (static_cast<int>(i) < node.output_size()) ctx.SetSequence(node.output(i), selected);
      outputs.push_back(nullptr);
      continue;
    }
    if (then_out[i]->type() != else_out[i]->type()) {
      return absl::UnimplementedError(
          NodePrefix(node) +
          absl::StrCat("the condition is only known at run time and output ", i, " has type ",
                       then_out[i]->type().ToString(), " in then_branch but ",
                       else_out[i]->type().ToString(),
                       " in else_branch; Kiln selects an If's outputs on a run-time condition, "
                       "which needs equal types (a constant condition, e.g. with "
                       "--constant-input, inlines one branch)"));
    }
    KILN_ASSIGN_OR_RETURN(graph::Node * select,
                          ctx.Emit(OpKind::kWhere, absl::StrCat(name, "/select", i),
                                   {scalar->output(0), then_out[i], else_out[i]}, {}));
    outputs.push_back(select->output(0));
  }
  return outputs;
}

// The number of iterations the static scan outputs of a Loop imply (ONNX shape inference or the
// declared graph outputs give their leading dim), if any.
std::optional<int64_t> ImpliedTripCount(const ImportContext& ctx, const onnx::NodeProto& node,
                                        int num_carried, int num_scan) {
  for (int k = 0; k < num_scan; ++k) {
    if (node.output_size() <= num_carried + k) break;
    std::optional<TensorType> t = ctx.KnownType(node.output(num_carried + k));
    if (t && t->rank() >= 1 && t->shape[0] > 0) return t->shape[0];
  }
  return std::nullopt;
}

// The loop's input values as the builders see them.
struct LoopInputs {
  const onnx::GraphProto* body = nullptr;
  int num_carried = 0;
  int num_scan = 0;
  Value* m = nullptr;  // null: no trip count
  Value* c = nullptr;  // null: no condition
  std::vector<Value*> carried;                           // null for a sequence
  std::map<int, std::vector<Value*>> carried_sequences;  // by carried index
};

absl::StatusOr<LoopInputs> ReadLoopInputs(ImportContext& ctx, const onnx::NodeProto& node,
                                          const std::map<std::string, Value*>& values) {
  LoopInputs in;
  in.body = GraphAttr(node, "body");
  if (in.body == nullptr) {
    return absl::InvalidArgumentError(NodePrefix(node) + "has no body graph");
  }
  const onnx::GraphProto& body = *in.body;
  in.num_carried = node.input_size() - 2;
  if (in.num_carried < 0 || body.input_size() != in.num_carried + 2 ||
      body.output_size() < in.num_carried + 1) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      absl::StrCat("body has ", body.input_size(), " inputs and ",
                                                   body.output_size(), " outputs for ",
                                                   in.num_carried, " loop-carried values"));
  }
  in.num_scan = body.output_size() - 1 - in.num_carried;
  in.m = InputOf(node, values, 0);
  in.c = InputOf(node, values, 1);
  if (in.m == nullptr && in.c == nullptr) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      "has neither a trip count nor a condition");
  }
  for (int i = 0; i < in.num_carried; ++i) {
    Value* v = InputOf(node, values, i + 2);
    if (v == nullptr && ctx.Sequence(node.input(i + 2)) != nullptr) {
      in.carried_sequences[i] = *ctx.Sequence(node.input(i + 2));
      in.carried.push_back(nullptr);
      continue;
    }
    if (v == nullptr) {
      return absl::InvalidArgumentError(NodePrefix(node) +
                                        absl::StrCat("loop-carried input ", i, " is missing"));
    }
    in.carried.push_back(v);
  }
  return in;
}

// The Loop unrolled at compile time: M and the initial condition are constants (or absent), and
// so is the condition after every iteration. kUnimplemented (and nothing the caller reads
// imported) when a condition depends on run-time values or the loop is over
// kMaxUnrolledLoopNodes.
absl::StatusOr<std::vector<Value*>> UnrollLoop(ImportContext& ctx, const onnx::NodeProto& node,
                                               const LoopInputs& in,
                                               const SubgraphImporter& import) {
  const onnx::GraphProto& body = *in.body;
  std::optional<int64_t> trip_count;
  if (in.m != nullptr) trip_count = ConstScalarValue(in.m);
  bool cond = in.c == nullptr || *ConstScalarValue(in.c) != 0;
  const int64_t per = std::max(1, body.node_size());
  auto too_large = [&](int64_t iterations) { return iterations > kMaxUnrolledLoopNodes / per; };
  if (cond && trip_count && too_large(*trip_count)) {
    return absl::UnimplementedError(NodePrefix(node) + "too many iterations to unroll");
  }
  std::vector<Value*> carried = in.carried;
  std::map<int, std::vector<Value*>> sequences = in.carried_sequences;
  std::vector<std::vector<Value*>> scans(in.num_scan);
  const std::string name = NodeDisplayName(node);
  for (int64_t iter = 0; cond && (!trip_count || iter < *trip_count); ++iter) {
    if (too_large(iter + 1)) {
      return absl::UnimplementedError(NodePrefix(node) + "too many iterations to unroll");
    }
    std::map<std::string, Value*> bound;
    bound[body.input(0).name()] = ctx.ConstScalar(absl::StrCat(name, "/iter", iter, "/iter_num"),
                                                  DType::kInt64, static_cast<double>(iter));
    bound[body.input(1).name()] =
        ctx.ConstScalar(absl::StrCat(name, "/iter", iter, "/cond"), DType::kBool, 1);
    for (int i = 0; i < in.num_carried; ++i) {
      if (carried[i] != nullptr) {
        bound[body.input(i + 2).name()] = carried[i];
      } else {
        ctx.SetSequence(body.input(i + 2).name(), sequences[i]);
      }
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value*> out,
                          import(body, bound, absl::StrCat(name, "/iter", iter, "/")));
    for (int i = 0; i < in.num_carried; ++i) {
      if ((out[1 + i] == nullptr) != (carried[i] == nullptr)) {
        return absl::InvalidArgumentError(
            NodePrefix(node) +
            absl::StrCat("loop-carried value ", i, " is a ",
                         carried[i] == nullptr ? "sequence" : "tensor", " before iteration ", iter,
                         " and a ", carried[i] == nullptr ? "tensor" : "sequence", " after it"));
      }
      if (out[1 + i] == nullptr) sequences[i] = SequenceOutput(ctx, body, 1 + i);
    }
    for (int k = 0; k < in.num_scan; ++k) {
      if (out[1 + in.num_carried + k] == nullptr) {
        return absl::UnimplementedError(NodePrefix(node) +
                                        absl::StrCat("scan output ", k, " is a sequence"));
      }
    }
    if (out[0] == nullptr) {
      return absl::InvalidArgumentError(NodePrefix(node) + "the body's condition is a sequence");
    }
    std::optional<int64_t> next = ConstScalarValue(out[0]);
    if (!next) {
      return absl::UnimplementedError(NodePrefix(node) + "a condition known at run time only");
    }
    cond = *next != 0;
    for (int i = 0; i < in.num_carried; ++i) carried[i] = out[1 + i];
    for (int k = 0; k < in.num_scan; ++k) scans[k].push_back(out[1 + in.num_carried + k]);
  }
  std::vector<Value*> outputs = carried;
  for (const auto& [i, elements] : sequences) {
    if (i + 2 < node.input_size() && i < node.output_size()) {
      ctx.SetSequence(node.output(i), elements);
    }
  }
  for (int k = 0; k < in.num_scan; ++k) {
    if (scans[k].empty()) {
      return absl::InvalidArgumentError(
          NodePrefix(node) + absl::StrCat("runs zero iterations, so scan output ", k,
                                          " is empty (zero-sized tensors are not supported)"));
    }
    KILN_ASSIGN_OR_RETURN(Value * stacked, Stack(ctx, absl::StrCat(name, "/scan", k), scans[k], 0));
    outputs.push_back(stacked);
  }
  return outputs;
}

// The graph Loop node `name` over `body`, with trip count `m` and condition `c` (scalars),
// initial carried values `carried` (named `carried_names` in messages), `num_scan` scan outputs
// of `scan_length` rows (-1: none). kUnimplemented when a carried value changes type.
absl::StatusOr<std::vector<Value*>> EmitLoop(ImportContext& ctx, const onnx::NodeProto& node,
                                             const std::string& name, Value* m, Value* c,
                                             const std::vector<Value*>& carried,
                                             const std::vector<std::string>& carried_names,
                                             const LoopBody& body, int num_scan,
                                             int64_t scan_length) {
  const graph::Graph& g = *body.graph;
  for (size_t i = 0; i < carried.size(); ++i) {
    const TensorType& after = g.outputs()[1 + i]->type();
    if (after != carried[i]->type()) {
      return absl::UnimplementedError(
          NodePrefix(node) +
          absl::StrCat("loop-carried value ", i, " ('", carried_names[i], "') has type ",
                       carried[i]->type().ToString(), " before the loop and ", after.ToString(),
                       " after an iteration; a loop run over its compiled body needs one type"));
    }
  }
  const TensorType& cond_out = g.outputs()[0]->type();
  if (cond_out.dtype != DType::kBool || cond_out.NumElements() != 1) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      absl::StrCat("body output 0 (the condition) has type ",
                                                   cond_out.ToString(), ", expected one bool"));
  }
  std::vector<Value*> inputs = {m, c};
  inputs.insert(inputs.end(), carried.begin(), carried.end());
  inputs.insert(inputs.end(), body.outer_inputs.begin(), body.outer_inputs.end());
  AttrMap a;
  a.Set("body", body.graph);
  a.Set("num_carried", static_cast<int64_t>(carried.size()));
  if (scan_length >= 0) a.Set("scan_length", scan_length);
  KILN_ASSIGN_OR_RETURN(graph::Node * loop, ctx.Emit(OpKind::kLoop, name, inputs, a,
                                                     static_cast<int>(carried.size()) + num_scan));
  return loop->outputs();
}

// An i64 scalar constant (exact: ConstScalar goes through a double).
Value* ConstI64Scalar(ImportContext& ctx, const std::string& name, int64_t v) {
  auto t = Tensor::Zeros(TensorType{DType::kInt64, {}});
  *t->mutable_data<int64_t>() = v;
  return ctx.graph().AddConstant(name, std::move(t));
}

// An ONNX Loop body built around subgraph `sub` (a Scan's body, an If branch): inputs
// <prefix>iter (i64) and <prefix>cond (bool), `sub`'s initializers and value_info, and output 0
// the condition passed on; the caller adds the carried inputs, the nodes and the other outputs.
class LoopBodyProto {
 public:
  LoopBodyProto(const onnx::GraphProto& sub, std::string prefix) : prefix_(std::move(prefix)) {
    graph_.set_name(sub.name());
    for (auto [in, type] : {std::pair{"iter", onnx::TensorProto::INT64},
                            std::pair{"cond", onnx::TensorProto::BOOL}}) {
      onnx::ValueInfoProto* vi = graph_.add_input();
      vi->set_name(Name(in));
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    }
    *graph_.mutable_initializer() = sub.initializer();
    *graph_.mutable_value_info() = sub.value_info();
    Node("Identity", {Name("cond")}, Name("cond_out"));
    graph_.add_output()->set_name(Name("cond_out"));
  }

  onnx::GraphProto& graph() { return graph_; }
  /// A name of the wrapper's own: `prefix` + `what`.
  std::string Name(const std::string& what) const { return prefix_ + what; }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& ins,
                        const std::string& out) {
    onnx::NodeProto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string& in : ins) n->add_input(in);
    n->add_output(out);
    return n;
  }
  /// A Constant node `out` holding the i64 scalar `v`; returns `out`.
  std::string ConstI64(const std::string& out, int64_t v) {
    onnx::AttributeProto* a = Node("Constant", {}, out)->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_int64_data(v);
    return out;
  }

 private:
  std::string prefix_;
  onnx::GraphProto graph_;
};

// The Loop as a graph Loop node over its body compiled on its own, run at run time.
absl::StatusOr<std::vector<Value*>> RuntimeLoop(ImportContext& ctx, const onnx::NodeProto& node,
                                                const LoopInputs& in,
                                                const LoopBodyImporter& import_body) {
  const std::string name = NodeDisplayName(node);
  if (!in.carried_sequences.empty()) {
    const int i = in.carried_sequences.begin()->first;
    return absl::UnimplementedError(
        NodePrefix(node) +
        absl::StrCat("loop-carried value ", i, " ('", node.input(i + 2),
                     "') is a sequence; a sequence is carried only through a loop unrolled at "
                     "compile time (a constant trip count and condition)"));
  }
  std::vector<TensorType> carried_types;
  std::vector<std::string> carried_names;
  for (int i = 0; i < in.num_carried; ++i) {
    carried_types.push_back(in.carried[i]->type());
    carried_names.push_back(node.input(i + 2));
  }
  absl::StatusOr<LoopBody> body = import_body(*in.body, carried_types, {}, name + "/body");
  if (!body.ok()) {
    return absl::Status(body.status().code(),
                        NodePrefix(node) + "body: " + std::string(body.status().message()));
  }
  for (Value* v : {in.m, in.c}) {
    if (v != nullptr && v->type().NumElements() != 1) {
      return absl::InvalidArgumentError(
          NodePrefix(node) + absl::StrCat(v == in.m ? "the trip count M" : "the condition",
                                          " has type ", v->type().ToString(),
                                          ", expected one element"));
    }
  }
  if (in.m != nullptr && in.m->type().dtype != DType::kInt64) {
    return absl::InvalidArgumentError(NodePrefix(node) + "the trip count M must be int64");
  }
  if (in.c != nullptr && in.c->type().dtype != DType::kBool) {
    return absl::InvalidArgumentError(NodePrefix(node) + "the condition must be bool");
  }
  int64_t scan_length = -1;
  if (in.num_scan > 0) {
    std::optional<int64_t> implied = ImpliedTripCount(ctx, node, in.num_carried, in.num_scan);
    std::optional<int64_t> m = in.m ? ConstScalarValue(in.m) : std::nullopt;
    if (implied) {
      scan_length = *implied;
    } else if (m && *m > 0) {
      scan_length = *m;
    } else if (m) {
      return absl::UnimplementedError(
          NodePrefix(node) + absl::StrCat("the trip count M is ", *m,
                                          ", so its scan outputs are empty (zero-sized tensors "
                                          "are not supported)"));
    } else {
      return absl::UnimplementedError(
          NodePrefix(node) +
          "its scan outputs need a length known at compile time: the trip count M is not a "
          "constant and ONNX shape inference gives no static shape for them (declare the "
          "graph output's shape, or give M with --constant-input if it is a graph input)");
    }
  }
  // An absent trip count is no limit; an absent condition is true.
  Value* m;
  if (in.m == nullptr) {
    m = ConstI64Scalar(ctx, name + "/no_trip_count", INT64_MAX);
  } else {
    KILN_ASSIGN_OR_RETURN(m, ctx.EmitReshape(name + "/trip_count", in.m, {}));
  }
  Value* c;
  if (in.c == nullptr) {
    c = ctx.ConstScalar(name + "/no_cond", DType::kBool, 1);
  } else {
    KILN_ASSIGN_OR_RETURN(c, ctx.EmitReshape(name + "/cond", in.c, {}));
  }
  return EmitLoop(ctx, node, name, m, c, in.carried, carried_names, *body, in.num_scan,
                  scan_length);
}

// An If on the run-time condition `cond` (a bool scalar): each branch a graph Loop of one
// iteration when it is taken and none otherwise, carrying the branch's outputs (zeros before),
// then a Where per output. Output i is a tensor (seq_lengths[i] = -1) or a sequence of
// seq_lengths[i] elements, carried element by element (SequenceAt in the branch's body); `types`
// are the carried tensors' types in that order. A sequence output's elements are set as
// ctx.Sequence(its name) and its value is null.
absl::StatusOr<std::vector<Value*>> GuardedIf(ImportContext& ctx, const onnx::NodeProto& node,
                                              Value* cond, const std::vector<TensorType>& types,
                                              const std::vector<int>& seq_lengths,
                                              const LoopBodyImporter& import_body) {
  const std::string name = NodeDisplayName(node);
  KILN_ASSIGN_OR_RETURN(Value * taken, [&]() -> absl::StatusOr<Value*> {
    AttrMap cast;
    cast.Set("to", int64_t{onnx::TensorProto::INT64});
    return ctx.EmitValue(OpKind::kCast, name + "/then_trips", {cond}, cast);
  }());
  KILN_ASSIGN_OR_RETURN(Value * not_taken,
                        ctx.EmitValue(OpKind::kSub, name + "/else_trips",
                                      {ConstI64Scalar(ctx, name + "/one", 1), taken}));
  Value* always = ctx.ConstScalar(name + "/always", DType::kBool, 1);
  std::vector<Value*> initial;
  for (size_t i = 0; i < types.size(); ++i) {
    initial.push_back(
        ctx.graph().AddConstant(absl::StrCat(name, "/before", i), Tensor::Zeros(types[i])));
  }
  // The carried values' names in messages: each output, each element of a sequence output.
  std::vector<std::string> names;
  for (size_t i = 0; i < seq_lengths.size(); ++i) {
    const std::string out = static_cast<int>(i) < node.output_size() ? node.output(i) : "";
    if (seq_lengths[i] < 0) names.push_back(out);
    for (int k = 0; k < seq_lengths[i]; ++k) names.push_back(absl::StrCat(out, "[", k, "]"));
  }
  std::vector<std::vector<Value*>> results;
  for (const char* which : {"then_branch", "else_branch"}) {
    const onnx::GraphProto& branch = *GraphAttr(node, which);
    LoopBodyProto wrap(branch, "__kiln_if_");
    for (size_t i = 0; i < types.size(); ++i) {
      wrap.graph().add_input()->set_name(wrap.Name(absl::StrCat("prev", i)));
    }
    for (const onnx::NodeProto& n : branch.node()) *wrap.graph().add_node() = n;
    for (int i = 0; i < branch.output_size() && i < static_cast<int>(seq_lengths.size()); ++i) {
      if (seq_lengths[i] < 0) {
        *wrap.graph().add_output() = branch.output(i);
        continue;
      }
      for (int k = 0; k < seq_lengths[i]; ++k) {
        const std::string index = wrap.ConstI64(wrap.Name(absl::StrCat("seq", i, "_index", k)), k);
        const std::string element = wrap.Name(absl::StrCat("seq", i, "_", k));
        wrap.Node("SequenceAt", {branch.output(i).name(), index}, element);
        wrap.graph().add_output()->set_name(element);
      }
    }
    const std::string part = absl::StrCat(name, which[0] == 't' ? "/then" : "/else");
    absl::StatusOr<LoopBody> body = import_body(wrap.graph(), types, {}, part);
    if (!body.ok()) {
      return absl::Status(body.status().code(),
                          NodePrefix(node) + which + ": " + std::string(body.status().message()));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                          EmitLoop(ctx, node, part, which[0] == 't' ? taken : not_taken, always,
                                   initial, names, *body, 0, -1));
    results.push_back(std::move(outs));
  }
  std::vector<Value*> selected;
  for (size_t i = 0; i < types.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value * v, ctx.EmitValue(OpKind::kWhere, absl::StrCat(name, "/select", i),
                                                   {cond, results[0][i], results[1][i]}));
    selected.push_back(v);
  }
  std::vector<Value*> outputs;
  size_t next = 0;
  for (size_t i = 0; i < seq_lengths.size(); ++i) {
    if (seq_lengths[i] < 0) {
      outputs.push_back(selected[next++]);
      continue;
    }
    std::vector<Value*> elements(selected.begin() + next, selected.begin() + next + seq_lengths[i]);
    next += seq_lengths[i];
    if (static_cast<int>(i) < node.output_size()) ctx.SetSequence(node.output(i), elements);
    outputs.push_back(nullptr);
  }
  return outputs;
}

// The run-time trip count of a Loop with trip count `m` and initial condition `c` (null: none):
// M when the condition holds, else 0.
absl::StatusOr<Value*> RuntimeTrips(ImportContext& ctx, const onnx::NodeProto& node, Value* m,
                                    Value* c) {
  const std::string name = NodeDisplayName(node);
  KILN_ASSIGN_OR_RETURN(Value * trips, ctx.EmitReshape(name + "/trips", m, {}));
  if (c == nullptr) return trips;
  KILN_ASSIGN_OR_RETURN(Value * cond, ctx.EmitReshape(name + "/cond", c, {}));
  return ctx.EmitValue(OpKind::kWhere, name + "/runtime_trips",
                       {cond, trips, ctx.ConstScalar(name + "/zero", DType::kInt64, 0)});
}

// A Loop with a run-time trip count or condition whose body cannot be compiled on its own (an
// op whose shape follows from the iteration number, say), unrolled for the trip count its static
// scan outputs imply, each output checked at run time against the actual trip count
// (RuntimeCheck). kUnimplemented when no static scan output gives the count.
absl::StatusOr<std::vector<Value*>> UnrollForStaticScans(ImportContext& ctx,
                                                         const onnx::NodeProto& node,
                                                         const LoopInputs& in,
                                                         const SubgraphImporter& import) {
  std::optional<int64_t> implied = ImpliedTripCount(ctx, node, in.num_carried, in.num_scan);
  std::optional<int64_t> constant_m = in.m ? ConstScalarValue(in.m) : std::nullopt;
  if (constant_m && implied && *constant_m != *implied) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      absl::StrCat("the trip count M is ", *constant_m,
                                                   " but the static scan outputs imply ", *implied,
                                                   " iterations"));
  }
  if (!implied || in.m == nullptr) {
    return absl::UnimplementedError(NodePrefix(node) + "no static scan output gives its length");
  }
  KILN_ASSIGN_OR_RETURN(Value * runtime_trips, RuntimeTrips(ctx, node, in.m, in.c));
  const std::string name = NodeDisplayName(node);
  LoopInputs fixed = in;
  fixed.m = ctx.ConstScalar(name + "/unrolled_trips", DType::kInt64, static_cast<double>(*implied));
  fixed.c = nullptr;
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> outputs, UnrollLoop(ctx, node, fixed, import));
  const int64_t ran = outputs[in.num_carried]->type().shape[0];
  if (ran != *implied) {
    return absl::UnimplementedError(NodePrefix(node) +
                                    absl::StrCat("the loop's condition ends it after ", ran,
                                                 " iterations, but its static scan outputs imply ",
                                                 *implied));
  }
  graph::AttrMap a;
  a.Set("expected", Ints{*implied});
  a.Set("what", NodePrefix(node) + "the trip count (M, or 0 when the initial condition is false)");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] == nullptr) continue;  // a sequence: its elements come from checked values
    KILN_ASSIGN_OR_RETURN(graph::Node * check,
                          ctx.Emit(OpKind::kRuntimeCheck, absl::StrCat(name, "/checked", i),
                                   {outputs[i], runtime_trips}, a));
    outputs[i] = check->output(0);
  }
  return outputs;
}

absl::StatusOr<std::vector<Value*>> BuildLoop(ImportContext& ctx, const onnx::NodeProto& node,
                                              const std::map<std::string, Value*>& values,
                                              const SubgraphImporter& import,
                                              const LoopBodyImporter& import_body) {
  KILN_ASSIGN_OR_RETURN(LoopInputs in, ReadLoopInputs(ctx, node, values));
  const bool constant_m = in.m == nullptr || ConstScalarValue(in.m).has_value();
  const bool constant_c = in.c == nullptr || ConstScalarValue(in.c).has_value();
  if (constant_m && constant_c) {
    // Unrolled when small and every condition folds; what a failed attempt imported is dead.
    absl::StatusOr<std::vector<Value*>> unrolled = UnrollLoop(ctx, node, in, import);
    if (unrolled.ok() || unrolled.status().code() != absl::StatusCode::kUnimplemented) {
      return unrolled;
    }
  }
  absl::StatusOr<std::vector<Value*>> runtime = RuntimeLoop(ctx, node, in, import_body);
  if (runtime.ok() || runtime.status().code() != absl::StatusCode::kUnimplemented) return runtime;
  absl::StatusOr<std::vector<Value*>> unrolled = UnrollForStaticScans(ctx, node, in, import);
  if (unrolled.ok() || unrolled.status().code() != absl::StatusCode::kUnimplemented) {
    return unrolled;
  }
  return runtime.status();
}

// `v` ([length, ...]) reversed along axis 0 (a Slice with step -1) if `reverse`, then with axis
// 0 moved to `axis` (a Transpose; negative counts from the end): a Loop's scan output placed as
// Scan output `k`.
absl::StatusOr<Value*> PlaceScanOutput(ImportContext& ctx, const onnx::NodeProto& node, int k,
                                       const std::string& name, Value* v, bool reverse,
                                       int64_t axis) {
  const int64_t rank = v->type().rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        NodePrefix(node) + absl::StrCat("scan_output_axes[", k, "] is outside rank ", rank));
  }
  if (reverse) {
    KILN_ASSIGN_OR_RETURN(
        v, ctx.EmitValue(
               OpKind::kSlice, name + "/reverse",
               {v, ctx.ConstI64(name + "/starts", {-1}), ctx.ConstI64(name + "/ends", {INT64_MIN}),
                ctx.ConstI64(name + "/axes", {0}), ctx.ConstI64(name + "/steps", {-1})}));
  }
  if (axis == 0) return v;
  Ints perm;
  for (int64_t d = 0; d < v->type().rank(); ++d) {
    perm.push_back(d < axis ? d + 1 : d == axis ? 0 : d);
  }
  AttrMap a;
  a.Set("perm", perm);
  return ctx.EmitValue(OpKind::kTranspose, name + "/to_axis", {v}, a);
}

// A Scan too long to unroll as a graph Loop node of `length` iterations: its body wrapped in a
// Loop body (iteration_num, cond, the states) that reads scan input j at index iteration_num
// (length - 1 - iteration_num when reversed) along in_axes[j], and passes cond on.
absl::StatusOr<std::vector<Value*>> RuntimeScan(
    ImportContext& ctx, const onnx::NodeProto& node, const onnx::GraphProto& body,
    const std::vector<Value*>& states, const std::vector<Value*>& inputs, int64_t length,
    const Ints& in_axes, const Ints& in_reverse, const Ints& out_axes, const Ints& out_reverse,
    const std::string& name, const LoopBodyImporter& import_body) {
  const int num_states = static_cast<int>(states.size());
  const int num_outputs = body.output_size() - num_states;
  LoopBodyProto wrap(body, "__kiln_scan_");
  for (int i = 0; i < num_states; ++i) *wrap.graph().add_input() = body.input(i);
  std::map<std::string, Value*> aliases;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const std::string src = wrap.Name(absl::StrCat("src", j));
    aliases[src] = inputs[j];
    std::string index = wrap.Name("iter");
    if (in_reverse[j] != 0) {
      const std::string last = wrap.ConstI64(wrap.Name(absl::StrCat("last", j)), length - 1);
      index = wrap.Name(absl::StrCat("index", j));
      wrap.Node("Sub", {last, wrap.Name("iter")}, index);
    }
    onnx::AttributeProto* axis =
        wrap.Node("Gather", {src, index}, body.input(num_states + j).name())->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(in_axes[j]);
  }
  for (const onnx::NodeProto& n : body.node()) *wrap.graph().add_node() = n;
  for (const onnx::ValueInfoProto& out : body.output()) *wrap.graph().add_output() = out;

  std::vector<TensorType> state_types;
  std::vector<std::string> state_names;
  for (int i = 0; i < num_states; ++i) {
    state_types.push_back(states[i]->type());
    state_names.push_back(body.input(i).name());
  }
  absl::StatusOr<LoopBody> loop_body =
      import_body(wrap.graph(), state_types, aliases, name + "/body");
  if (!loop_body.ok()) {
    return absl::Status(loop_body.status().code(),
                        NodePrefix(node) + "body: " + std::string(loop_body.status().message()));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                        EmitLoop(ctx, node, name, ConstI64Scalar(ctx, name + "/length", length),
                                 ctx.ConstScalar(name + "/cond", DType::kBool, 1), states,
                                 state_names, *loop_body, num_outputs, length));
  for (int k = 0; k < num_outputs; ++k) {
    Value*& v = outs[num_states + k];
    KILN_ASSIGN_OR_RETURN(v, PlaceScanOutput(ctx, node, k, absl::StrCat(name, "/scan", k), v,
                                             out_reverse[k] != 0, out_axes[k]));
  }
  return outs;
}

// One Scan over `states` and `inputs` whose scan axes are `in_axes` (opset 9 semantics; opset 8
// calls it once per batch entry).
absl::StatusOr<std::vector<Value*>> ScanOnce(
    ImportContext& ctx, const onnx::NodeProto& node, const onnx::GraphProto& body,
    std::vector<Value*> states, const std::vector<Value*>& inputs, const Ints& in_axes,
    const Ints& in_reverse, const Ints& out_axes, const Ints& out_reverse, const std::string& name,
    const SubgraphImporter& import, const LoopBodyImporter& import_body) {
  const int num_states = static_cast<int>(states.size());
  const int num_inputs = static_cast<int>(inputs.size());
  const int num_outputs = body.output_size() - num_states;
  if (num_inputs == 0) return absl::InvalidArgumentError(NodePrefix(node) + "has no scan input");
  const int64_t length = inputs[0]->type().shape[in_axes[0]];
  for (int j = 1; j < num_inputs; ++j) {
    if (inputs[j]->type().shape[in_axes[j]] != length) {
      return absl::InvalidArgumentError(
          NodePrefix(node) +
          absl::StrCat("scan input ", j, " has ", inputs[j]->type().shape[in_axes[j]],
                       " elements along its scan axis, scan input 0 has ", length));
    }
  }
  if (length == 0 && num_outputs > 0) {
    return absl::UnimplementedError(
        NodePrefix(node) +
        "scans zero elements, so its scan outputs are empty (zero-sized "
        "tensors are not supported)");
  }
  if (length > kMaxUnrolledLoopNodes / std::max(1, body.node_size())) {
    return RuntimeScan(ctx, node, body, states, inputs, length, in_axes, in_reverse, out_axes,
                       out_reverse, name, import_body);
  }
  std::vector<std::vector<Value*>> scans(num_outputs);
  for (int64_t t = 0; t < length; ++t) {
    const std::string iter = absl::StrCat(name, "/iter", t, "/");
    std::map<std::string, Value*> bound;
    for (int i = 0; i < num_states; ++i) bound[body.input(i).name()] = states[i];
    for (int j = 0; j < num_inputs; ++j) {
      int64_t index = in_reverse[j] != 0 ? length - 1 - t : t;
      KILN_ASSIGN_OR_RETURN(bound[body.input(num_states + j).name()],
                            Take(ctx, absl::StrCat(iter, "in", j), inputs[j], index, in_axes[j]));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value*> out, import(body, bound, iter));
    KILN_RETURN_IF_ERROR(RequireTensorOutputs(out, body));
    for (int i = 0; i < num_states; ++i) states[i] = out[i];
    for (int k = 0; k < num_outputs; ++k) scans[k].push_back(out[num_states + k]);
  }
  std::vector<Value*> outputs = states;
  for (int k = 0; k < num_outputs; ++k) {
    if (out_reverse[k] != 0) std::reverse(scans[k].begin(), scans[k].end());
    const int64_t rank = scans[k][0]->type().rank() + 1;
    int64_t axis = out_axes[k] < 0 ? out_axes[k] + rank : out_axes[k];
    if (axis < 0 || axis >= rank) {
      return absl::InvalidArgumentError(NodePrefix(node) + absl::StrCat("scan_output_axes[", k,
                                                                        "] = ", out_axes[k],
                                                                        " is outside rank ", rank));
    }
    KILN_ASSIGN_OR_RETURN(Value * stacked,
                          Stack(ctx, absl::StrCat(name, "/scan", k), scans[k], axis));
    outputs.push_back(stacked);
  }
  return outputs;
}

absl::StatusOr<std::vector<Value*>> BuildScan(ImportContext& ctx, const onnx::NodeProto& node,
                                              const std::map<std::string, Value*>& values,
                                              const SubgraphImporter& import,
                                              const LoopBodyImporter& import_body) {
  const onnx::GraphProto* body = GraphAttr(node, "body");
  std::optional<int64_t> num_inputs = IntAttr(node, "num_scan_inputs");
  if (body == nullptr || !num_inputs) {
    return absl::InvalidArgumentError(NodePrefix(node) + "needs a body graph and num_scan_inputs");
  }
  // Opset 8 has a leading sequence_lens input and a batch axis on every input and output.
  const bool batched = ctx.opset() < 9;
  const int first = batched ? 1 : 0;
  const int num_states = node.input_size() - first - static_cast<int>(*num_inputs);
  const int num_outputs = body->output_size() - num_states;
  if (num_states < 0 || *num_inputs < 1 || num_outputs < 0 ||
      body->input_size() != num_states + *num_inputs) {
    return absl::InvalidArgumentError(
        NodePrefix(node) + absl::StrCat("body has ", body->input_size(), " inputs and ",
                                        body->output_size(), " outputs for ", node.input_size(),
                                        " Scan inputs with num_scan_inputs=", *num_inputs));
  }
  std::vector<Value*> states, inputs;
  for (int i = first; i < node.input_size(); ++i) {
    Value* v = InputOf(node, values, i);
    if (v == nullptr) {
      return absl::InvalidArgumentError(NodePrefix(node) +
                                        absl::StrCat("input ", i, " is missing"));
    }
    (i - first < num_states ? states : inputs).push_back(v);
  }
  auto per_input = [&](const char* attr, int n, int64_t fallback) -> absl::StatusOr<Ints> {
    Ints v = IntsAttr(node, attr);
    if (v.empty()) v.assign(n, fallback);
    if (static_cast<int>(v.size()) != n) {
      return absl::InvalidArgumentError(NodePrefix(node) + absl::StrCat("attribute '", attr,
                                                                        "' has ", v.size(),
                                                                        " values, expected ", n));
    }
    return v;
  };
  const std::string name = NodeDisplayName(node);
  if (batched) {
    if (Value* lens = InputOf(node, values, 0)) {
      // sequence_lens must be the full length for every batch entry.
      if (!lens->is_constant()) {
        return absl::UnimplementedError(
            NodePrefix(node) +
            "sequence_lens arrives at run time; Kiln unrolls a Scan at compile "
            "time and needs it constant");
      }
      for (int64_t b = 0; b < lens->type().NumElements(); ++b) {
        if (lens->constant()->GetAsInt64(b) != inputs[0]->type().shape[1]) {
          return absl::UnimplementedError(
              NodePrefix(node) + "sequence_lens shorter than the scan axis is not supported");
        }
      }
    }
    KILN_ASSIGN_OR_RETURN(Ints reverse, per_input("directions", static_cast<int>(*num_inputs), 0));
    const Ints in_axes(*num_inputs, 0), out_axes(num_outputs, 0), out_reverse(num_outputs, 0);
    const int64_t batch = inputs[0]->type().shape[0];
    std::vector<std::vector<Value*>> per_batch(num_states + num_outputs);
    for (int64_t b = 0; b < batch; ++b) {
      const std::string entry = absl::StrCat(name, "/batch", b);
      std::vector<Value*> s, x;
      for (size_t i = 0; i < states.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(Value * v,
                              Take(ctx, absl::StrCat(entry, "/state", i), states[i], b, 0));
        s.push_back(v);
      }
      for (size_t j = 0; j < inputs.size(); ++j) {
        KILN_ASSIGN_OR_RETURN(Value * v, Take(ctx, absl::StrCat(entry, "/in", j), inputs[j], b, 0));
        x.push_back(v);
      }
      KILN_ASSIGN_OR_RETURN(std::vector<Value*> out,
                            ScanOnce(ctx, node, *body, s, x, in_axes, reverse, out_axes,
                                     out_reverse, entry, import, import_body));
      for (size_t k = 0; k < out.size(); ++k) per_batch[k].push_back(out[k]);
    }
    std::vector<Value*> outputs;
    for (size_t k = 0; k < per_batch.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(Value * stacked,
                            Stack(ctx, absl::StrCat(name, "/out", k), per_batch[k], 0));
      outputs.push_back(stacked);
    }
    return outputs;
  }
  KILN_ASSIGN_OR_RETURN(Ints in_axes,
                        per_input("scan_input_axes", static_cast<int>(*num_inputs), 0));
  KILN_ASSIGN_OR_RETURN(Ints in_reverse,
                        per_input("scan_input_directions", static_cast<int>(*num_inputs), 0));
  KILN_ASSIGN_OR_RETURN(Ints out_axes, per_input("scan_output_axes", num_outputs, 0));
  KILN_ASSIGN_OR_RETURN(Ints out_reverse, per_input("scan_output_directions", num_outputs, 0));
  for (size_t j = 0; j < inputs.size(); ++j) {
    const int64_t rank = inputs[j]->type().rank();
    if (in_axes[j] < 0) in_axes[j] += rank;
    if (in_axes[j] < 0 || in_axes[j] >= rank) {
      return absl::InvalidArgumentError(
          NodePrefix(node) + absl::StrCat("scan_input_axes[", j, "] is outside rank ", rank));
    }
  }
  return ScanOnce(ctx, node, *body, states, inputs, in_axes, in_reverse, out_axes, out_reverse,
                  name, import, import_body);
}

}  // namespace

absl::Status RequireTensorOutputs(const std::vector<Value*>& outs, const onnx::GraphProto& body) {
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] != nullptr) continue;
    return absl::UnimplementedError(absl::StrCat(
        "subgraph '", body.name(), "' output '", body.output(static_cast<int>(i)).name(),
        "' is a sequence; sequences pass only through If branches and loops unrolled at "
        "compile time"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value*>> BuildControlFlow(ImportContext& ctx,
                                                     const onnx::NodeProto& node,
                                                     const std::map<std::string, Value*>& values,
                                                     const SubgraphImporter& import,
                                                     const LoopBodyImporter& import_body) {
  if (node.op_type() == "If") return BuildIf(ctx, node, values, import, import_body);
  if (node.op_type() == "Loop") return BuildLoop(ctx, node, values, import, import_body);
  return BuildScan(ctx, node, values, import, import_body);
}

}  // namespace kiln::importer
