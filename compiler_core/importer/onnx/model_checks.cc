// Model-level checks run before building the graph: opsets, op support, definedness and
// order, external data, and the ONNX library's checker and shape inference.
#include "compiler_core/importer/onnx/model_checks.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/quant_builders.h"
#include "compiler_core/importer/onnx/sequence_builders.h"
#include "compiler_core/importer/onnx/tensor_proto.h"
#include "compiler_core/importer/onnx/training_builders.h"
#include "compiler_core/ir/graph/op.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

namespace kiln::importer {
namespace {

constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 17;

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

absl::Status InlineTensor(onnx::TensorProto& t, const std::string& base_dir, int64_t max_bytes) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(auto tensor, TensorFromProto(t, base_dir, max_bytes));
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(tensor->bytes.data()), tensor->bytes.size()));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

}  // namespace

std::string NodeDisplayName(const onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  if (node.output_size() > 0) return node.output(0);
  return node.op_type();
}

std::string NodePrefix(const onnx::NodeProto& node) {
  return absl::StrCat("node '", NodeDisplayName(node), "' (", node.op_type(), "): ");
}

absl::StatusOr<int> CheckOpsets(const onnx::ModelProto& model) {
  int opset = -1;
  bool training = false;
  for (const auto& imp : model.opset_import()) {
    if (IsDefaultDomain(imp.domain())) opset = static_cast<int>(imp.version());
    training |= imp.domain() == kTrainingDomain;
  }
  // A model of training-domain ops alone (an optimizer step) has no default-domain nodes; the
  // ops it decomposes into are Kiln's own.
  if (opset < 0 && training) return kMaxOpset;
  if (opset < 0) {
    if (model.ir_version() >= 3 || model.opset_import_size() > 0) {
      return absl::InvalidArgumentError("model imports no default-domain (ai.onnx) opset");
    }
    opset = 1;
  }
  // Opsets 1..6 are upgraded to 7 with the ONNX version converter (UpgradeLegacyOpset).
  if (opset < 1 || opset > kMaxOpset) {
    return absl::UnimplementedError(absl::StrCat("unsupported opset ", opset,
                                                 " of domain ai.onnx (supported: 1..6 through the version converter, ", kMinOpset,
                                                 "..", kMaxOpset, ")"));
  }
  return opset;
}

absl::Status UpgradeLegacyOpset(onnx::ModelProto& model, int& opset) {
  if (opset >= kMinOpset) return absl::OkStatus();
  // ONNX 1.12's converter dereferences values nothing defines (found by fuzz/onnx_import):
  // every node input and every graph output must be defined before it runs.
  KILN_RETURN_IF_ERROR(SortNodes(*model.mutable_graph()));
  {
    std::set<std::string> defined;
    for (const auto& v : model.graph().input()) defined.insert(v.name());
    for (const auto& t : model.graph().initializer()) defined.insert(t.name());
    for (const auto& n : model.graph().node()) defined.insert(n.output().begin(), n.output().end());
    for (const auto& out : model.graph().output()) {
      if (defined.count(out.name()) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", out.name(), "' is not produced by any node"));
      }
    }
  }
  // Its Gemm 6 -> 7 adapter indexes A's and B's dims unchecked (fuzz/onnx_import: a graph
  // input B declared without a shape segfaults it): a graph input or initializer they read must
  // have rank 2.
  {
    std::map<std::string, int> ranks;  // -1: a graph input declared without a shape
    for (const auto& v : model.graph().input()) {
      const auto& t = v.type().tensor_type();
      ranks[v.name()] = t.has_shape() ? t.shape().dim_size() : -1;
    }
    for (const auto& t : model.graph().initializer()) ranks[t.name()] = t.dims_size();
    for (const auto& n : model.graph().node()) {
      if (n.op_type() != "Gemm") continue;
      for (int i = 0; i < 2 && i < n.input_size(); ++i) {
        auto it = ranks.find(n.input(i));
        if (it == ranks.end() || it->second == 2) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", n.name(), "' (Gemm): input ", i, " ('", n.input(i), "') ",
            it->second < 0 ? "has no declared shape" : absl::StrCat("has rank ", it->second),
            "; upgrading opset ", opset, " needs rank 2"));
      }
    }
  }
  // The ONNX library reports conversion failures by throwing; keep them inside this function.
  try {
    model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
  } catch (const std::exception& e) {
    return absl::UnimplementedError(absl::StrCat("cannot upgrade opset ", opset, " to ",
                                                 kMinOpset, " with the ONNX version converter: ",
                                                 e.what()));
  }
  opset = kMinOpset;
  return absl::OkStatus();
}

namespace {

// Checks the nodes of `graph` and of every subgraph nested in it.
/// The highest tensor rank an axis attribute may address.
constexpr int64_t kMaxAxisRank = 64;

absl::Status CheckGraphOpsSupported(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    const bool control_flow = IsDefaultDomain(node.domain()) && IsControlFlowOp(node.op_type());
    const bool quant = IsDefaultDomain(node.domain()) && IsQuantOp(node.op_type());
    const bool training = IsTrainingOp(node.domain(), node.op_type());
    const bool sequence = IsDefaultDomain(node.domain()) && IsSequenceOp(node.op_type());
    // ops.def also holds Kiln's own ops (BoundMask, LayoutTransform, ...), which no ONNX
    // opset registers: an ONNX op is one ONNX 1.12's schema registry knows.
    const bool onnx_op = IsDefaultDomain(node.domain()) && graph::OpKindFromName(node.op_type()) &&
                         onnx::OpSchemaRegistry::Schema(node.op_type()) != nullptr;
    if (!control_flow && !quant && !training && !sequence && !onnx_op) {
      std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
      return absl::UnimplementedError(NodePrefix(node) + absl::StrCat("unsupported op '",
                                                                  node.op_type(), "' (domain ",
                                                                  domain, ")"));
    }
    for (const auto& a : node.attribute()) {
      // ONNX 1.12's shape inference indexes shapes with axis attributes unchecked (fuzz/
      // onnx_import found LayerNormalization axis -32769): refuse axes no tensor can have
      // before it runs. Ranks past kMaxAxisRank are not supported anyway.
      if (a.name() == "axis" || a.name() == "axes") {
        for (int64_t axis : a.type() == onnx::AttributeProto::INTS
                                ? std::vector<int64_t>(a.ints().begin(), a.ints().end())
                                : std::vector<int64_t>{a.i()}) {
          if (axis < -kMaxAxisRank || axis >= kMaxAxisRank) {
            return absl::InvalidArgumentError(
                NodePrefix(node) +
                absl::StrCat("attribute '", a.name(), "' holds ", axis,
                             ", out of range for any tensor (rank <= ", kMaxAxisRank, ")"));
          }
        }
      }
      if (a.type() != onnx::AttributeProto::GRAPH) continue;
      if (!control_flow && node.op_type() != "SequenceMap") {
        return absl::UnimplementedError(
            NodePrefix(node) + absl::StrCat("graph attribute '", a.name(), "' is not supported"));
      }
      KILN_RETURN_IF_ERROR(CheckGraphOpsSupported(a.g()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void GraphOuterScopeNames(const onnx::GraphProto& g, std::set<std::string>& names) {
  std::set<std::string> defined, read;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& n : g.node()) {
    for (const auto& out : n.output()) defined.insert(out);
    for (const auto& in : n.input()) read.insert(in);
    OuterScopeNames(n, read);
  }
  for (const auto& out : g.output()) read.insert(out.name());
  for (const std::string& name : read) {
    if (!name.empty() && !defined.count(name)) names.insert(name);
  }
}

void OuterScopeNames(const onnx::NodeProto& node, std::set<std::string>& names) {
  for (const auto& a : node.attribute()) {
    if (a.type() == onnx::AttributeProto::GRAPH) GraphOuterScopeNames(a.g(), names);
  }
}

bool IsControlFlowOp(const std::string& op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

absl::Status CheckOpsSupported(const onnx::ModelProto& model) {
  return CheckGraphOpsSupported(model.graph());
}

namespace {

// The ranks a graph declares for its inputs, value_infos and initializers.
std::unordered_map<std::string, int> DeclaredRanks(const onnx::GraphProto& g) {
  std::unordered_map<std::string, int> ranks;
  for (const auto* infos : {&g.input(), &g.value_info()}) {
    for (const onnx::ValueInfoProto& vi : *infos) {
      if (vi.type().tensor_type().has_shape()) {
        ranks[vi.name()] = vi.type().tensor_type().shape().dim_size();
      }
    }
  }
  for (const onnx::TensorProto& t : g.initializer()) ranks[t.name()] = t.dims_size();
  return ranks;
}

// The ops whose ONNX shape inference (convPoolShapeInference, convTransposeShapeInference)
// indexes the weight's dims by the input's rank without checking it (a rank-2 X with a rank-3
// W segfaulted in convTransposeShapeInference, a rank-3 X with a rank-4 W in ConvInteger's;
// found by fuzz_onnx_import): the input and weight positions. Declared ranks are checked first.
struct ConvInputs {
  const char* op_type;
  int x;
  int w;
};
constexpr ConvInputs kConvOps[] = {
    {"Conv", 0, 1}, {"ConvTranspose", 0, 1}, {"ConvInteger", 0, 1}, {"QLinearConv", 0, 3}};

const ConvInputs* ConvOp(const std::string& op_type) {
  for (const ConvInputs& c : kConvOps) {
    if (op_type == c.op_type) return &c;
  }
  return nullptr;
}

absl::Status CheckConvRanks(const std::unordered_map<std::string, int>& ranks,
                            const onnx::NodeProto& node, const ConvInputs& positions) {
  if (node.input_size() <= positions.w) return absl::OkStatus();  // the checker reports it
  auto rank = [&ranks](const std::string& name) {
    auto it = ranks.find(name);
    return it == ranks.end() ? -1 : it->second;
  };
  const int x = rank(node.input(positions.x)), w = rank(node.input(positions.w));
  if (x >= 0 && x < 3) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      absl::StrCat("input ", positions.x, " has rank ", x,
                                                   ", expected at least 3 (N, C, spatial...)"));
  }
  if (x >= 0 && w >= 0 && w != x) {
    return absl::InvalidArgumentError(
        NodePrefix(node) + absl::StrCat("input ", positions.w, " has rank ", w, ", expected ", x,
                                        " (the rank of input ", positions.x, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBeforeShapeInference(const onnx::ModelProto& model) {
  // A worklist over the graph and its subgraphs.
  std::vector<const onnx::GraphProto*> graphs{&model.graph()};
  while (!graphs.empty()) {
    const onnx::GraphProto* g = graphs.back();
    graphs.pop_back();
    std::optional<std::unordered_map<std::string, int>> ranks;  // made at the first Conv
    for (const onnx::NodeProto& node : g->node()) {
      if (const ConvInputs* conv = ConvOp(node.op_type())) {
        if (!ranks) ranks = DeclaredRanks(*g);
        KILN_RETURN_IF_ERROR(CheckConvRanks(*ranks, node, *conv));
      }
      // LayerNormalization's shape inference indexes X's dims by `axis` (default -1) without
      // checking them: a rank-0 X segfaulted it (fuzz_onnx_import).
      if (node.op_type() == "LayerNormalization" && node.input_size() > 0) {
        if (!ranks) ranks = DeclaredRanks(*g);
        auto it = ranks->find(node.input(0));
        int64_t axis = -1;
        for (const onnx::AttributeProto& a : node.attribute()) {
          if (a.name() == "axis") axis = a.i();
        }
        if (it != ranks->end() && (axis < -it->second || axis >= it->second)) {
          return absl::InvalidArgumentError(
              NodePrefix(node) +
              absl::StrCat("axis ", axis, " is out of range for input 0 of rank ", it->second));
        }
      }
      for (const onnx::AttributeProto& a : node.attribute()) {
        if (a.type() == onnx::AttributeProto::GRAPH) graphs.push_back(&a.g());
        const bool window =
            a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
        if (window && a.type() == onnx::AttributeProto::INTS) {
          for (int64_t v : a.ints()) {
            if (v > 0) continue;
            return absl::InvalidArgumentError(NodePrefix(node) +
                                              absl::StrCat("attribute '", a.name(),
                                                           "' must be positive, got [",
                                                           absl::StrJoin(a.ints(), ","), "]"));
          }
        }
        if (a.name() == "blocksize" && a.type() == onnx::AttributeProto::INT &&
            (a.i() <= 0 || !CheckedMul(a.i(), a.i()))) {
          return absl::InvalidArgumentError(
              NodePrefix(node) + absl::StrCat("attribute 'blocksize' must be positive with a "
                                              "square that fits int64, got ",
                                              a.i()));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SortNodes(onnx::GraphProto& graph) {
  std::set<std::string> outside;  // graph inputs and initializers
  for (const auto& in : graph.input()) outside.insert(in.name());
  for (const auto& init : graph.initializer()) outside.insert(init.name());
  int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (producer.count(out) || outside.count(out)) {
        return absl::InvalidArgumentError(NodePrefix(graph.node(i)) +
                                          absl::StrCat("value '", out, "' is defined more than once"));
      }
      producer[out] = i;
    }
  }
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    // Explicit inputs, then what its subgraphs read from this graph (they must come first too).
    std::set<std::string> outer_scope;
    OuterScopeNames(graph.node(i), outer_scope);
    std::vector<std::string> reads(graph.node(i).input().begin(), graph.node(i).input().end());
    for (const std::string& name : outer_scope) {
      if (producer.count(name) || outside.count(name)) reads.push_back(name);
    }
    for (const auto& in : reads) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (outside.count(in)) continue;
        return absl::InvalidArgumentError(
            NodePrefix(graph.node(i)) + absl::StrCat("input '", in, "' is undefined"));
      }
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  std::set<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.insert(u);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[i] > 0) {
        return absl::InvalidArgumentError(NodePrefix(graph.node(i)) + "is on a cycle");
      }
    }
  }
  std::vector<onnx::NodeProto> sorted;
  sorted.reserve(n);
  for (int i : order) sorted.push_back(std::move(*graph.mutable_node(i)));
  graph.clear_node();
  for (auto& node : sorted) *graph.add_node() = std::move(node);
  return absl::OkStatus();
}

absl::Status InlineExternalData(onnx::GraphProto& graph, const std::string& base_dir,
                                int64_t max_bytes) {
  for (auto& init : *graph.mutable_initializer()) {
    KILN_RETURN_IF_ERROR(InlineTensor(init, base_dir, max_bytes));
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) KILN_RETURN_IF_ERROR(InlineTensor(*attr.mutable_t(), base_dir, max_bytes));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ExternalDataFiles(std::string_view bytes,
                                                           const std::string& base_dir) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("not a serialized onnx.ModelProto");
  }
  std::set<std::string> files;
  auto add = [&](const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (const auto& entry : t.external_data()) {
      if (entry.key() != "location") continue;
      files.insert(base_dir.empty() ? entry.value() : base_dir + "/" + entry.value());
    }
  };
  std::vector<const onnx::GraphProto*> graphs{&model.graph()};
  while (!graphs.empty()) {
    const onnx::GraphProto* g = graphs.back();
    graphs.pop_back();
    for (const auto& init : g->initializer()) add(init);
    for (const auto& node : g->node()) {
      for (const auto& attr : node.attribute()) {
        if (attr.has_t()) add(attr.t());
        if (attr.has_g()) graphs.push_back(&attr.g());
        for (const auto& sub : attr.graphs()) graphs.push_back(&sub);
      }
    }
  }
  return std::vector<std::string>(files.begin(), files.end());
}

absl::StatusOr<std::string> InlineExternalDataOfModel(std::string_view bytes,
                                                      const std::string& base_dir) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("not a serialized onnx.ModelProto");
  }
  bool external = false;
  auto check = [&](const onnx::TensorProto& t) {
    external |= t.data_location() == onnx::TensorProto::EXTERNAL;
  };
  for (const auto& init : model.graph().initializer()) check(init);
  for (const auto& node : model.graph().node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) check(attr.t());
    }
  }
  if (!external) return std::string(bytes);
  KILN_RETURN_IF_ERROR(InlineExternalData(*model.mutable_graph(), base_dir, kMaxTensorBytes));
  if (model.ByteSizeLong() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        "the model with its external data inlined is past protobuf's 2 GiB limit");
  }
  return model.SerializeAsString();
}

namespace {

using TypeMap = std::map<std::string, onnx::TypeProto>;

void Infer(onnx::ModelProto& model) {
  // Data propagation folds shape computations (Shape -> Gather -> Concat ...) so that ops
  // fed by them get static output types.
  onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/0,
                                      /*data_prop_val=*/true);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
}

bool HasSymbolicDim(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_param()) return true;
  }
  return false;
}

// Symbolic dims that shape inference invents (a Range's length "unk__0", ...) equal the static
// dims of the declared graph outputs that inference (without those declarations) gives them:
// infers `unshaped` (the model without value_info and output shapes), binds each such dim_param to
// the declared value (a param bound to two values stays unbound) and adds to `types` every
// value whose type becomes fully static.
void BindInferredDims(onnx::ModelProto& unshaped, const onnx::GraphProto& declared,
                      TypeMap& types) {
  try {
    Infer(unshaped);
  } catch (const std::exception&) {
    return;  // the first inference succeeded; this refinement is optional
  }
  std::map<std::string, int64_t> bound;
  std::set<std::string> conflicting;
  for (int i = 0; i < declared.output_size() && i < unshaped.graph().output_size(); ++i) {
    const auto& want = declared.output(i).type().tensor_type();
    const auto& got = unshaped.graph().output(i).type().tensor_type();
    if (!want.has_shape() || !got.has_shape() ||
        want.shape().dim_size() != got.shape().dim_size()) {
      continue;
    }
    for (int d = 0; d < want.shape().dim_size(); ++d) {
      const auto& w = want.shape().dim(d);
      const auto& g = got.shape().dim(d);
      if (!w.has_dim_value() || !g.has_dim_param()) continue;
      auto [it, inserted] = bound.emplace(g.dim_param(), w.dim_value());
      if (!inserted && it->second != w.dim_value()) conflicting.insert(g.dim_param());
    }
  }
  for (const std::string& p : conflicting) bound.erase(p);
  if (bound.empty()) return;
  for (const auto& vi : unshaped.graph().value_info()) {
    auto it = types.find(vi.name());
    if (it != types.end() && !HasSymbolicDim(it->second)) continue;
    onnx::TypeProto type = vi.type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) continue;
    for (auto& d : *type.mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      auto b = d.has_dim_param() ? bound.find(d.dim_param()) : bound.end();
      if (b != bound.end()) d.set_dim_value(b->second);
    }
    if (!HasSymbolicDim(type)) types[vi.name()] = type;
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, onnx::TypeProto>> CheckAndInfer(onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("onnx checker: ", e.what()));
  }
  try {
    Infer(model);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("onnx shape inference: ", e.what()));
  }
  TypeMap types;
  bool symbolic = false;
  for (const auto& vi : model.graph().value_info()) {
    types[vi.name()] = vi.type();
    symbolic |= HasSymbolicDim(vi.type());
  }
  for (const auto& vi : model.graph().output()) types[vi.name()] = vi.type();
  if (symbolic) {
    // Inferred again from scratch, without the declared output shapes (copied only here: the
    // copy holds the weights too).
    onnx::ModelProto unshaped = model;
    unshaped.mutable_graph()->clear_value_info();
    for (auto& out : *unshaped.mutable_graph()->mutable_output()) {
      if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
    }
    BindInferredDims(unshaped, model.graph(), types);
  }
  return types;
}

absl::Status BindConstantInputs(const std::map<std::string, std::string>& constants,
                                onnx::GraphProto& graph) {
  for (const auto& [name, bytes] : constants) {
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--constant-input ", name, ": ", why));
    };
    int index = -1;
    for (int i = 0; i < graph.input_size(); ++i) {
      if (graph.input(i).name() == name) index = i;
    }
    for (const auto& init : graph.initializer()) {
      if (init.name() == name) index = -1;  // an initializer listed as an input
    }
    if (index < 0) return bad("the model has no graph input of that name");
    if (!graph.input(index).type().has_tensor_type()) {
      return bad("the input is not a tensor (a sequence or optional input cannot be a constant)");
    }
    onnx::TensorProto tensor;
    if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
        !tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return bad("the file is not a serialized onnx.TensorProto");
    }
    const onnx::ValueInfoProto& in = graph.input(index);
    const auto& declared = in.type().tensor_type();
    if (tensor.data_type() == onnx::TensorProto::UNDEFINED) {
      return bad("the file is not a serialized onnx.TensorProto (no element type)");
    }
    if (declared.elem_type() != tensor.data_type()) {
      auto type_name = [](int t) {
        std::optional<DType> d = DTypeFromOnnx(t);
        return d ? std::string(DTypeName(*d)) : absl::StrCat("ONNX type ", t);
      };
      return bad(absl::StrCat("the tensor has element type ", type_name(tensor.data_type()),
                              ", the input ", type_name(declared.elem_type())));
    }
    if (declared.has_shape()) {
      if (declared.shape().dim_size() != tensor.dims_size()) {
        return bad(absl::StrCat("the tensor has rank ", tensor.dims_size(), ", the input ",
                                declared.shape().dim_size()));
      }
      for (int d = 0; d < tensor.dims_size(); ++d) {
        const auto& dim = declared.shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() != tensor.dims(d)) {
          return bad(absl::StrCat("dim ", d, " of the tensor is ", tensor.dims(d),
                                  ", the input fixes it at ", dim.dim_value()));
        }
      }
    }
    tensor.set_name(name);
    *graph.add_initializer() = std::move(tensor);
    graph.mutable_input()->DeleteSubrange(index, 1);
  }
  return absl::OkStatus();
}

}  // namespace kiln::importer
