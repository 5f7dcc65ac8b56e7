// ONNX import driver: parses and checks the model, then builds the graph node by node through
// the per-op builders, typing every value with the shape rules and cross-checking the types
// ONNX shape inference found.
#include "compiler_core/importer/onnx/importer.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/control_flow.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/importer/onnx/qdq_fusion.h"
#include "compiler_core/importer/onnx/quant_builders.h"
#include "compiler_core/importer/onnx/sequence_builders.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/importer/onnx/tensor_proto.h"
#include "compiler_core/importer/onnx/training_builders.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Value;
using TypeMap = std::map<std::string, onnx::TypeProto>;

// Converts every attribute; a tensor attribute must fit `max_bytes`.
absl::StatusOr<AttrMap> ConvertAttrs(const onnx::NodeProto& node, int64_t max_bytes) {
  AttrMap attrs;
  for (const auto& a : node.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT: attrs.Set(a.name(), static_cast<int64_t>(a.i())); break;
      case onnx::AttributeProto::FLOAT: attrs.Set(a.name(), a.f()); break;
      case onnx::AttributeProto::STRING: attrs.Set(a.name(), a.s()); break;
      case onnx::AttributeProto::INTS:
        attrs.Set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case onnx::AttributeProto::FLOATS:
        attrs.Set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end()));
        break;
      case onnx::AttributeProto::TENSOR: {
        absl::StatusOr<std::shared_ptr<Tensor>> t = TensorFromProto(a.t(), "", max_bytes);
        if (!t.ok()) {
          return absl::Status(t.status().code(),
                              NodePrefix(node) + absl::StrCat("attribute '", a.name(),
                                                              "': ", t.status().message()));
        }
        attrs.Set(a.name(), std::shared_ptr<const Tensor>(std::move(*t)));
        break;
      }
      default:
        return absl::UnimplementedError(
            NodePrefix(node) + absl::StrCat("attribute '", a.name(), "' has an unsupported kind"));
    }
  }
  return attrs;
}

// The tensor of a Constant node, from any of its value forms.
absl::StatusOr<std::shared_ptr<const Tensor>> ConstantValue(const onnx::NodeProto& node,
                                                            const AttrMap& attrs) {
  KILN_ASSIGN_OR_RETURN(const graph::ConstantAttrs constant,
                        graph::ConstantAttrs::Parse(attrs, NodePrefix(node)));
  if (constant.value) return constant.value;
  auto make = [](DType dtype, size_t n, bool scalar) {
    TensorType type{dtype, {}};
    if (!scalar) type.shape.push_back(static_cast<int64_t>(n));
    return Tensor::Zeros(type);
  };
  for (const auto& a : node.attribute()) {
    if (a.name() == "value_float") {
      auto t = make(DType::kFloat32, 1, true);
      *t->mutable_data<float>() = a.f();
      return std::shared_ptr<const Tensor>(t);
    }
    if (a.name() == "value_int") {
      auto t = make(DType::kInt64, 1, true);
      *t->mutable_data<int64_t>() = a.i();
      return std::shared_ptr<const Tensor>(t);
    }
    if (a.name() == "value_floats") {
      auto t = make(DType::kFloat32, a.floats_size(), false);
      for (int i = 0; i < a.floats_size(); ++i) t->mutable_data<float>()[i] = a.floats(i);
      return std::shared_ptr<const Tensor>(t);
    }
    if (a.name() == "value_ints") {
      auto t = make(DType::kInt64, a.ints_size(), false);
      for (int i = 0; i < a.ints_size(); ++i) t->mutable_data<int64_t>()[i] = a.ints(i);
      return std::shared_ptr<const Tensor>(t);
    }
  }
  return absl::UnimplementedError(NodePrefix(node) + "unsupported value form");
}

// The symbol of dim `i` of graph input `input`: its dim_param as an identifier, else
// "<input>_<i>"; range [0, inf).
sym::Symbol InputSymbol(const std::string& input, int i, const std::string& dim_param) {
  std::string name = dim_param.empty() ? absl::StrCat(input, "_", i) : dim_param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') c = '_';
  }
  if (!sym::IsSymbolName(name)) name = "_" + name;
  return sym::Symbol{name, 0, sym::kUnbounded};
}

absl::StatusOr<TensorType> InputType(const onnx::ValueInfoProto& vi, bool symbolic_dims) {
  const std::string& name = vi.name();
  if (!vi.type().has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat("graph input '", name, "' is not a tensor"));
  }
  const auto& tt = vi.type().tensor_type();
  std::optional<DType> dtype = DTypeFromOnnx(tt.elem_type());
  if (!dtype) {
    return absl::UnimplementedError(absl::StrCat("graph input '", name,
                                                 "' has unsupported element type ",
                                                 tt.elem_type()));
  }
  if (!tt.has_shape()) {
    return absl::UnimplementedError(
        absl::StrCat("graph input '", name, "' has no shape (static shapes only)"));
  }
  if (symbolic_dims) {
    std::vector<sym::Expr> dims;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      dims.push_back(d.has_dim_value()
                         ? sym::Expr(d.dim_value())
                         : sym::Expr::Sym(InputSymbol(name, i, d.dim_param())));
    }
    return TensorType::WithDims(*dtype, dims);
  }
  TensorType type{*dtype, {}};
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (!d.has_dim_value()) {
      std::string what = d.has_dim_param() ? absl::StrCat("'", d.dim_param(), "'") : "unknown";
      return absl::UnimplementedError(absl::StrCat("graph input '", name,
                                                   "' has a non-static shape: dim ", i, " is ",
                                                   what));
    }
    type.shape.push_back(d.dim_value());
  }
  return type;
}

// The element types of sequence graph input `vi`: one per element "name[k]" the options give
// (contiguous from 0), with the sequence's element type. kUnimplemented naming the flag when
// none is given.
absl::StatusOr<std::vector<TensorType>> SequenceInputTypes(const onnx::ValueInfoProto& vi,
                                                           const ImportOptions& options) {
  const std::string& name = vi.name();
  const auto& elem = vi.type().sequence_type().elem_type();
  std::optional<DType> dtype =
      elem.has_tensor_type() ? DTypeFromOnnx(elem.tensor_type().elem_type()) : std::nullopt;
  if (!dtype) {
    return absl::UnimplementedError(absl::StrCat("graph input '", name,
                                                 "' is a sequence of non-tensors or of an "
                                                 "unsupported element type"));
  }
  std::vector<TensorType> types;
  for (int64_t k = 0;; ++k) {
    const std::string element = SequenceElementName(name, k);
    auto it = options.input_shapes.find(element);
    if (it == options.input_shapes.end()) break;
    // The declared element shape, if any, fixes the rank and the dims with values.
    if (elem.tensor_type().has_shape()) {
      const auto& declared = elem.tensor_type().shape();
      bool ok = declared.dim_size() == static_cast<int>(it->second.size());
      for (int d = 0; ok && d < declared.dim_size(); ++d) {
        ok = !declared.dim(d).has_dim_value() || declared.dim(d).dim_value() == it->second[d];
      }
      if (!ok) {
        std::vector<std::string> dims;
        for (const auto& d : declared.dim()) {
          dims.push_back(d.has_dim_value()       ? absl::StrCat(d.dim_value())
                         : d.dim_param().empty() ? "?"
                                                 : d.dim_param());
        }
        return absl::InvalidArgumentError(
            absl::StrCat("--input-shape ", element, "=", absl::StrJoin(it->second, ","),
                         ": the elements of "
                         "sequence input '",
                         name, "' are declared [", absl::StrJoin(dims, ","), "]"));
      }
    }
    types.push_back(TensorType{*dtype, it->second});
  }
  for (const auto& [given, dims] : options.input_shapes) {
    std::optional<std::pair<std::string, int64_t>> e = ParseSequenceElementName(given);
    if (e && e->first == name && e->second >= static_cast<int64_t>(types.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-shape ", given, ": the elements of sequence input '", name,
          "' must be numbered from 0 without gaps (", types.size(), " given before the gap)"));
    }
  }
  if (types.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("graph input '", name,
                     "' is a sequence: give its length and element shapes with "
                     "--input-shape ",
                     name, "[0]=D0,D1,... --input-shape ", name,
                     "[1]=... (kiln check "
                     "takes them from the data set; an empty sequence input is not supported)"));
  }
  return types;
}

// The static type ONNX knows for a value, if fully known.
std::optional<TensorType> KnownType(const TypeMap& types, const std::string& name) {
  auto it = types.find(name);
  if (it == types.end() || !it->second.has_tensor_type()) return std::nullopt;
  const auto& tt = it->second.tensor_type();
  std::optional<DType> dtype = DTypeFromOnnx(tt.elem_type());
  if (!dtype || !tt.has_shape()) return std::nullopt;
  TensorType type{*dtype, {}};
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    type.shape.push_back(d.dim_value());
  }
  return type;
}

// kInvalidArgument when ONNX shape inference (or a declaration) gives a node output of `g` a
// static type that fails CheckTensorSize (a negative dim, a size past int64 or `max_bytes`):
// the model asks for a tensor Kiln refuses, and says so before any builder computes with it.
absl::Status CheckKnownTypes(const onnx::GraphProto& g, const TypeMap& types, int64_t max_bytes) {
  for (const onnx::NodeProto& node : g.node()) {
    for (int i = 0; i < node.output_size(); ++i) {
      std::optional<TensorType> type = KnownType(types, node.output(i));
      if (!type) continue;
      KILN_RETURN_IF_ERROR(CheckTensorSize(
          *type, max_bytes,
          NodePrefix(node) + absl::StrCat("output ", i, " ('", node.output(i), "')")));
    }
  }
  return absl::OkStatus();
}

// bf16 is a storage type: Cast and CastLike convert to and from it, Identity passes it on and
// MatMul multiplies it (summing in f32); no other op computes on it.
absl::Status CheckBFloat16(const OnnxNode& node, const BuiltOutputs& outs) {
  if (node.op == graph::OpKind::kCast || node.op == graph::OpKind::kCastLike ||
      node.op == graph::OpKind::kIdentity || node.op == graph::OpKind::kMatMul) {
    return absl::OkStatus();
  }
  std::vector<Value*> values = node.inputs;
  values.insert(values.end(), outs.begin(), outs.end());
  for (const Value* v : values) {
    if (v != nullptr && v->type().dtype == DType::kBFloat16) {
      return absl::UnimplementedError(
          node.Prefix() + "bf16 values are supported by Cast, CastLike, Identity and MatMul only");
    }
  }
  return absl::OkStatus();
}

absl::Status BuildNodes(const onnx::GraphProto& g, ImportContext& ctx, const TypeMap& types,
                        std::map<std::string, Value*>& values, const std::string& prefix = "");

// Imports a control-flow subgraph (SubgraphImporter) in the scope `outer`: its initializers
// and `bound` inputs shadow the outer names, its values are named `prefix` + their name.
absl::StatusOr<std::vector<Value*>> ImportSubgraph(ImportContext& ctx,
                                                   const std::map<std::string, Value*>& outer,
                                                   const onnx::GraphProto& body,
                                                   const std::map<std::string, Value*>& bound,
                                                   const std::string& prefix) {
  std::map<std::string, Value*> scope = outer;
  for (const auto& init : body.initializer()) {
    KILN_ASSIGN_OR_RETURN(auto t, TensorFromProto(init, "", ctx.max_tensor_bytes()));
    scope[init.name()] = ctx.graph().AddConstant(prefix + init.name(), std::move(t));
  }
  for (const auto& in : body.input()) {
    auto it = bound.find(in.name());
    if (it != bound.end()) {
      scope[in.name()] = it->second;
    } else if (!scope.count(in.name()) && ctx.Sequence(in.name()) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("subgraph '", body.name(), "' input '", in.name(), "' is not bound"));
    }
  }
  for (const auto& node : body.node()) {
    for (const auto& in : node.input()) ctx.MarkUsed(in);
  }
  for (const auto& out : body.output()) ctx.MarkUsed(out.name());
  // The static types the subgraph declares (value_info, outputs; ONNX shape inference fills
  // value_info too), for ops whose output shape they fix (a run-time Loop's scan outputs).
  TypeMap declared;
  for (const auto* infos : {&body.value_info(), &body.output()}) {
    for (const onnx::ValueInfoProto& vi : *infos) declared[vi.name()] = vi.type();
  }
  KILN_RETURN_IF_ERROR(CheckKnownTypes(body, declared, ctx.max_tensor_bytes()));
  for (const auto& [name, type] : declared) {
    if (std::optional<TensorType> known = KnownType(declared, name)) ctx.SetKnownType(name, *known);
  }
  KILN_RETURN_IF_ERROR(BuildNodes(body, ctx, {}, scope, prefix));
  std::vector<Value*> outputs;
  for (const auto& out : body.output()) {
    auto it = scope.find(out.name());
    if (it == scope.end() && ctx.Sequence(out.name()) != nullptr) {
      outputs.push_back(nullptr);  // a sequence: its elements are ctx.Sequence(out.name())
      continue;
    }
    if (it == scope.end() || it->second == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("subgraph '", body.name(), "' output '", out.name(), "' is undefined"));
    }
    outputs.push_back(it->second);
  }
  return outputs;
}

// A Loop body as a graph of its own (LoopBodyImporter): its inputs are iteration_num, cond and
// the carried values, then a proxy input per non-constant outer-scope value it reads (in name
// order; `aliases` first, under their own names); outer constants are shared as the body's
// constants.
absl::StatusOr<LoopBody> ImportLoopBody(ImportContext& ctx,
                                        const std::map<std::string, Value*>& outer,
                                        const onnx::GraphProto& body,
                                        const std::vector<TensorType>& carried,
                                        const std::map<std::string, Value*>& aliases,
                                        const std::string& name) {
  LoopBody result;
  result.graph = std::make_shared<Graph>();
  Graph& g = *result.graph;
  g.set_name(name);
  ImportContext body_ctx(g, ctx.opset(), ctx.max_tensor_bytes());
  std::map<std::string, Value*> bound;
  bound[body.input(0).name()] = g.AddInput(body.input(0).name(), TensorType{DType::kInt64, {}});
  bound[body.input(1).name()] = g.AddInput(body.input(1).name(), TensorType{DType::kBool, {}});
  for (size_t i = 0; i < carried.size(); ++i) {
    const std::string& in = body.input(static_cast<int>(i) + 2).name();
    bound[in] = g.AddInput(in, carried[i]);
  }
  std::set<std::string> free;  // the names the body reads from outside
  GraphOuterScopeNames(body, free);
  std::vector<std::pair<std::string, Value*>> reads(aliases.begin(), aliases.end());
  for (const std::string& n : free) {
    if (aliases.count(n)) continue;
    if (ctx.Sequence(n) != nullptr) {
      return absl::UnimplementedError(absl::StrCat("outer-scope value '", n,
                                                   "' is a sequence; a loop run over its "
                                                   "compiled body reads tensors only"));
    }
    auto it = outer.find(n);
    if (it == outer.end() || it->second == nullptr) continue;  // undefined: BuildNodes says so
    reads.emplace_back(n, it->second);
  }
  std::map<std::string, Value*> scope;
  for (const auto& [n, v] : reads) {
    if (v->is_constant()) {
      scope[n] = g.AddConstant(v->name(), v->constant());
    } else {
      scope[n] = g.AddInput(n, v->type());
      result.outer_inputs.push_back(v);
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> outputs,
                        ImportSubgraph(body_ctx, scope, body, bound, ""));
  KILN_RETURN_IF_ERROR(RequireTensorOutputs(outputs, body));
  g.SetOutputs(std::move(outputs));
  return result;
}

// If, Loop or Scan (control_flow.h). An output that is a value from outside the node (a
// branch returning an outer value as is) gets an Identity, so naming the output does not
// rename that value.
absl::StatusOr<BuiltOutputs> BuildControlFlowNode(ImportContext& ctx, const onnx::NodeProto& proto,
                                                  const std::map<std::string, Value*>& values) {
  SubgraphImporter import = [&](const onnx::GraphProto& body,
                                const std::map<std::string, Value*>& bound,
                                const std::string& sub_prefix) {
    return ImportSubgraph(ctx, values, body, bound, sub_prefix);
  };
  LoopBodyImporter import_body =
      [&](const onnx::GraphProto& body, const std::vector<TensorType>& carried,
          const std::map<std::string, Value*>& aliases, const std::string& name) {
        return ImportLoopBody(ctx, values, body, carried, aliases, name);
      };
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                        BuildControlFlow(ctx, proto, values, import, import_body));
  std::set<const Value*> outer;
  for (const auto& [name, v] : values) outer.insert(v);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] == nullptr || !outer.count(outs[i])) continue;  // null: a sequence output
    KILN_ASSIGN_OR_RETURN(graph::Node * copy,
                          ctx.Emit(graph::OpKind::kIdentity,
                                   absl::StrCat(NodeDisplayName(proto), "/out", i), {outs[i]}, {}));
    outs[i] = copy->output(0);
  }
  return outs;
}

absl::Status BuildNodes(const onnx::GraphProto& g, ImportContext& ctx, const TypeMap& types,
                        std::map<std::string, Value*>& values, const std::string& prefix) {
  for (const auto& proto : g.node()) {
    std::string display = NodeDisplayName(proto);
    for (const auto& in : proto.input()) {
      if (!in.empty() && !values.count(in) && ctx.Sequence(in) == nullptr) {
        return absl::InvalidArgumentError(NodePrefix(proto) +
                                          absl::StrCat("input '", in, "' is undefined"));
      }
    }
    BuiltOutputs outs;
    OnnxNode node;
    const bool sequence_in = proto.input_size() > 0 && ctx.Sequence(proto.input(0)) != nullptr;
    if (IsSequenceOp(proto.op_type()) || (proto.op_type() == "Identity" && sequence_in)) {
      if (proto.op_type() == "Identity") {
        ctx.SetSequence(proto.output(0), *ctx.Sequence(proto.input(0)));
        continue;
      }
      SubgraphImporter import = [&](const onnx::GraphProto& body,
                                    const std::map<std::string, Value*>& bound,
                                    const std::string& sub_prefix) {
        return ImportSubgraph(ctx, values, body, bound, sub_prefix);
      };
      KILN_RETURN_IF_ERROR(BuildSequenceOp(ctx, proto, values, import, prefix));
      continue;
    }
    if (IsControlFlowOp(proto.op_type())) {
      node.proto = &proto;
      node.name = display;
      KILN_ASSIGN_OR_RETURN(outs, BuildControlFlowNode(ctx, proto, values));
    } else {
      KILN_ASSIGN_OR_RETURN(AttrMap attrs, ConvertAttrs(proto, ctx.max_tensor_bytes()));
      if (proto.op_type() == "Constant") {
        KILN_ASSIGN_OR_RETURN(auto t, ConstantValue(proto, attrs));
        values[proto.output(0)] = ctx.graph().AddConstant(prefix + proto.output(0), t);
        continue;
      }
      node.proto = &proto;
      const bool quant = IsQuantOp(proto.op_type());
      const bool training = IsTrainingOp(proto.domain(), proto.op_type());
      node.op = quant || training ? graph::OpKind::kIdentity
                                  : *graph::OpKindFromName(proto.op_type());
      node.name = display;
      node.attrs = std::move(attrs);
      for (const auto& in : proto.input()) node.inputs.push_back(in.empty() ? nullptr : values[in]);
      if (quant) {
        KILN_ASSIGN_OR_RETURN(outs, BuildQuantOp(ctx, node));
      } else if (training) {
        KILN_ASSIGN_OR_RETURN(outs, BuildTrainingOp(ctx, node));
      } else {
        KILN_ASSIGN_OR_RETURN(outs, BuildNode(ctx, node));
        KILN_RETURN_IF_ERROR(CheckBFloat16(node, outs));
      }
    }
    for (Value*& out : outs) {
      KILN_ASSIGN_OR_RETURN(out, FoldSmallConstant(ctx, out));
    }
    for (int i = 0; i < proto.output_size(); ++i) {
      const std::string& name = proto.output(i);
      if (name.empty()) continue;
      Value* v = i < static_cast<int>(outs.size()) ? outs[i] : nullptr;
      if (v == nullptr && IsControlFlowOp(proto.op_type()) && ctx.Sequence(name) != nullptr) {
        continue;  // a sequence output of If or Loop
      }
      if (v == nullptr) {
        if (ctx.IsUsed(name)) {
          return absl::UnimplementedError(node.Prefix() +
                                          absl::StrCat("output ", i, " ('", name,
                                                       "') is not supported"));
        }
        continue;
      }
      KILN_RETURN_IF_ERROR(
          CheckTensorSize(v->type(), ctx.max_tensor_bytes(),
                          node.Prefix() + absl::StrCat("output ", i, " ('", name, "')")));
      v->set_name(prefix + name);
      values[name] = v;
      std::optional<TensorType> known = KnownType(types, name);
      if (known && *known != v->type()) {
        return absl::InvalidArgumentError(
            node.Prefix() + absl::StrCat("output ", i, " ('", name, "') has type ",
                                         v->type().ToString(), " but onnx shape inference says ",
                                         known->ToString()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxBytes(std::string_view bytes,
                                                       const std::string& base_dir,
                                                       const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("cannot parse the ONNX model: not a valid ModelProto");
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError(bytes.empty() ? "the ONNX model file is empty"
                                                    : "the ONNX model has no graph");
  }
  KILN_ASSIGN_OR_RETURN(int opset, CheckOpsets(model));
  KILN_RETURN_IF_ERROR(CheckOpsSupported(model));
  KILN_RETURN_IF_ERROR(CheckBeforeShapeInference(model));
  KILN_RETURN_IF_ERROR(UpgradeLegacyOpset(model, opset));
  onnx::GraphProto& g = *model.mutable_graph();
  KILN_RETURN_IF_ERROR(SortNodes(g));
  KILN_RETURN_IF_ERROR(InlineExternalData(g, base_dir, options.max_tensor_bytes));
  // Constant inputs become initializers; then input types: symbolic dims take the given shapes
  // (or the error naming the flag).
  for (const auto& [name, tensor] : options.constant_inputs) {
    if (options.input_shapes.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' is given both --constant-input and --input-shape (a constant "
          "input has its tensor's shape; drop the --input-shape)"));
    }
  }
  KILN_RETURN_IF_ERROR(BindConstantInputs(options.constant_inputs, g));
  const bool symbolic = options.symbolic_dims && options.input_shapes.empty();
  if (!symbolic) KILN_RETURN_IF_ERROR(BindInputShapes(options.input_shapes, g));
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::map<std::string, TensorType> input_types;
  std::map<std::string, std::vector<TensorType>> sequence_inputs;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;  // an initializer listed as input (IR < 4)
    // Input sizes are checked first, before ONNX shape inference computes with them.
    if (in.type().has_sequence_type()) {
      KILN_ASSIGN_OR_RETURN(sequence_inputs[in.name()], SequenceInputTypes(in, options));
      for (size_t k = 0; k < sequence_inputs[in.name()].size(); ++k) {
        KILN_RETURN_IF_ERROR(CheckTensorSize(
            sequence_inputs[in.name()][k], options.max_tensor_bytes,
            absl::StrCat("graph input '", SequenceElementName(in.name(), static_cast<int64_t>(k)),
                         "'")));
      }
      continue;
    }
    KILN_ASSIGN_OR_RETURN(input_types[in.name()], InputType(in, symbolic));
    KILN_RETURN_IF_ERROR(CheckTensorSize(input_types[in.name()], options.max_tensor_bytes,
                                         absl::StrCat("graph input '", in.name(), "'")));
  }
  KILN_ASSIGN_OR_RETURN(TypeMap types, CheckAndInfer(model));
  KILN_RETURN_IF_ERROR(CheckKnownTypes(g, types, options.max_tensor_bytes));
  FuseQdqConvs(g, opset);

  auto graph = std::make_unique<Graph>();
  ImportContext ctx(*graph, opset, options.max_tensor_bytes);
  for (const auto& [name, type] : types) {
    if (std::optional<TensorType> known = KnownType(types, name)) ctx.SetKnownType(name, *known);
  }
  for (const auto& node : g.node()) {
    for (const auto& in : node.input()) ctx.MarkUsed(in);
  }
  for (const auto& out : g.output()) ctx.MarkUsed(out.name());
  {
    std::set<std::string> read, unread;
    for (const auto& node : g.node()) {
      for (const auto& in : node.input()) read.insert(in);
      OuterScopeNames(node, read);
    }
    for (const auto& out : g.output()) {
      if (!read.count(out.name())) unread.insert(out.name());
    }
    ctx.SetUnreadGraphOutputs(std::move(unread));
  }

  std::map<std::string, Value*> values;
  for (const auto& init : g.initializer()) {
    KILN_ASSIGN_OR_RETURN(auto t, TensorFromProto(init, base_dir, options.max_tensor_bytes));
    values[init.name()] = graph->AddConstant(init.name(), std::move(t));
  }
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    if (auto seq = sequence_inputs.find(in.name()); seq != sequence_inputs.end()) {
      std::vector<Value*> elements;
      for (size_t k = 0; k < seq->second.size(); ++k) {
        const std::string name = SequenceElementName(in.name(), static_cast<int64_t>(k));
        elements.push_back(graph->AddInput(name, seq->second[k]));
      }
      ctx.SetSequence(in.name(), std::move(elements));
      continue;
    }
    values[in.name()] = graph->AddInput(in.name(), input_types[in.name()]);
  }
  KILN_RETURN_IF_ERROR(BuildNodes(g, ctx, types, values));

  std::vector<Value*> outputs;
  for (const auto& out : g.output()) {
    if (const std::vector<Value*>* seq = ctx.Sequence(out.name())) {
      // A sequence output: its elements, each the graph output "name[k]".
      for (size_t k = 0; k < seq->size(); ++k) {
        const std::string name = SequenceElementName(out.name(), static_cast<int64_t>(k));
        KILN_ASSIGN_OR_RETURN(Value * v,
                              ctx.EmitValue(graph::OpKind::kIdentity, name, {(*seq)[k]}));
        v->set_name(name);
        outputs.push_back(v);
      }
      continue;
    }
    auto it = values.find(out.name());
    if (it == values.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(), "' is undefined"));
    }
    outputs.push_back(it->second);
  }
  graph->SetOutputs(std::move(outputs));
  absl::Status verified = graph::VerifyGraph(*graph);
  if (!verified.ok()) {
    return absl::InternalError(absl::StrCat("imported graph fails verification: ",
                                            std::string(verified.message())));
  }
  return graph;
}

absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxFile(const std::string& path,
                                                      const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a directory, not an ONNX model file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ONNX model '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ImportOnnxBytes(buffer.str(), dir, options);
}

}  // namespace kiln::importer
