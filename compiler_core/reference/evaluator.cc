// The reference evaluator's entry points: input validation, dispatch to the per-family
// kernels, whole-graph evaluation in topological order, and shared element helpers.
#include "compiler_core/reference/evaluator.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/reference/eval_internal.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::reference {

using graph::OpKind;

std::string NodePrefix(const graph::Node& node) {
  return absl::StrCat("node '", node.name(), "' (", graph::OpName(node.op()), "): ");
}

std::vector<double> ToDoubles(const Tensor& t) {
  int64_t n = t.type.NumElements();
  std::vector<double> out(n);
  if (t.type.dtype == DType::kFloat32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = t.GetAsDouble(i);
  }
  return out;
}

void StoreInt(Tensor& t, int64_t i, int64_t v) {
  switch (t.type.dtype) {
    case DType::kInt8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::kInt16: t.mutable_data<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DType::kInt32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::kInt64: t.mutable_data<int64_t>()[i] = v; break;
    case DType::kUInt8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::kUInt16: t.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DType::kUInt32: t.mutable_data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    case DType::kUInt64: t.mutable_data<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    case DType::kBool: t.mutable_data<uint8_t>()[i] = v != 0; break;
    default: StoreDouble(t, i, static_cast<double>(v)); break;
  }
}

void StoreDouble(Tensor& t, int64_t i, double v) {
  switch (t.type.dtype) {
    case DType::kFloat32: t.mutable_data<float>()[i] = static_cast<float>(v); break;
    case DType::kFloat64: t.mutable_data<double>()[i] = v; break;
    case DType::kFloat16: t.mutable_data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
    case DType::kBFloat16:
      t.mutable_data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case DType::kBool: t.mutable_data<uint8_t>()[i] = v != 0; break;
    default: StoreInt(t, i, static_cast<int64_t>(v)); break;
  }
}

std::shared_ptr<Tensor> FromDoubles(const TensorType& type, const std::vector<double>& values) {
  auto t = Tensor::Zeros(type);
  for (size_t i = 0; i < values.size(); ++i) StoreDouble(*t, static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<int64_t> BroadcastIndex(const Shape& in_shape, const Shape& out_shape) {
  size_t rank = out_shape.size(), off = rank - in_shape.size();
  Shape in_strides = RowMajorStrides(in_shape);
  Shape strides(rank, 0);  // stride in the input for each output dim (0 when broadcast)
  for (size_t d = off; d < rank; ++d) {
    strides[d] = in_shape[d - off] == 1 ? 0 : in_strides[d - off];
  }
  int64_t n = 1;
  for (int64_t d : out_shape) n *= d;
  std::vector<int64_t> index(n);
  Shape pos(rank, 0);
  int64_t cur = 0;
  for (int64_t i = 0; i < n; ++i) {
    index[i] = cur;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++pos[d] < out_shape[d]) {
        cur += strides[d];
        break;
      }
      cur -= strides[d] * (out_shape[d] - 1);
      pos[d] = 0;
    }
  }
  return index;
}

absl::StatusOr<std::vector<TensorPtr>> EvaluateNode(const graph::Node& node,
                                                    const std::vector<TensorPtr>& inputs) {
  if (static_cast<int>(inputs.size()) != node.num_inputs()) {
    return absl::InvalidArgumentError(NodePrefix(node) +
                                      absl::StrCat("got ", inputs.size(), " inputs, expected ",
                                                   node.num_inputs()));
  }
  for (int i = 0; i < node.num_inputs(); ++i) {
    const graph::Value* v = node.input(i);
    if ((v == nullptr) != (inputs[i] == nullptr)) {
      return absl::InvalidArgumentError(
          NodePrefix(node) + absl::StrCat("input ", i, " presence does not match the node"));
    }
    if (v != nullptr && inputs[i]->type != v->type()) {
      return absl::InvalidArgumentError(
          NodePrefix(node) + absl::StrCat("input ", i, " has type ", inputs[i]->type.ToString(),
                                          ", expected ", v->type().ToString()));
    }
  }
  absl::StatusOr<TensorVec> out;
  if (graph::IsLayoutNode(node)) {
    out = EvalLayout(node, inputs);
  } else if (node.op() == OpKind::kLoop) {
    out = EvalLoop(node, inputs);
  } else if (graph::IsNnOp(node.op())) {
    out = EvalNnOp(node, inputs);
  } else if (graph::IsTensorOp(node.op())) {
    out = EvalTensorOp(node, inputs);
  } else {
    switch (node.info().fusion_class) {
      case graph::FusionClass::kElementwise:
      case graph::FusionClass::kBroadcast:
        out = node.op() == OpKind::kBatchNormalization ? EvalNn(node, inputs)
                                                       : EvalElementwise(node, inputs);
        break;
      case graph::FusionClass::kOutEwiseFusable:
      case graph::FusionClass::kReduction:
        out = EvalNn(node, inputs);
        break;
      default:
        out = node.op() == OpKind::kSoftmax || node.op() == OpKind::kLogSoftmax
                  ? EvalNn(node, inputs)
                  : EvalMovement(node, inputs);
    }
  }
  if (!out.ok()) return out.status();
  for (size_t i = 0; i < out->size() && i < node.outputs().size(); ++i) {
    if ((*out)[i]->type != node.output(static_cast<int>(i))->type()) {
      return absl::InternalError(NodePrefix(node) +
                                 absl::StrCat("evaluated output ", i, " has type ",
                                              (*out)[i]->type.ToString(), ", expected ",
                                              node.output(static_cast<int>(i))->type().ToString()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<TensorPtr>> EvaluateGraph(const graph::Graph& graph,
                                                     const std::vector<TensorPtr>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("got ", inputs.size(),
                                                   " graph inputs, expected ",
                                                   graph.inputs().size()));
  }
  std::unordered_map<const graph::Value*, TensorPtr> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value* v = graph.inputs()[i];
    if (inputs[i] == nullptr || inputs[i]->type != v->type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph input ", i, " ('", v->name(), "') has type ",
          inputs[i] ? inputs[i]->type.ToString() : std::string("null"), ", expected ",
          v->type().ToString()));
    }
    env[v] = inputs[i];
  }
  for (const graph::Value* c : graph.constants()) env[c] = c->constant();
  // Free intermediate tensors after their last use to bound memory on large models.
  std::unordered_map<const graph::Value*, int> remaining;
  std::vector<graph::Node*> nodes = graph.nodes();
  for (const graph::Node* node : nodes) {
    for (const graph::Value* in : node->inputs()) {
      if (in != nullptr) ++remaining[in];
    }
  }
  for (const graph::Node* node : nodes) {
    std::vector<TensorPtr> args;
    for (const graph::Value* in : node->inputs()) {
      if (in == nullptr) {
        args.push_back(nullptr);
        continue;
      }
      auto it = env.find(in);
      if (it == env.end()) {
        return absl::InvalidArgumentError(NodePrefix(*node) + "reads a value not yet computed");
      }
      args.push_back(it->second);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<TensorPtr> outs, EvaluateNode(*node, args));
    for (size_t i = 0; i < outs.size(); ++i) env[node->output(static_cast<int>(i))] = outs[i];
    for (const graph::Value* in : node->inputs()) {
      if (in != nullptr && --remaining[in] == 0 && !graph.IsGraphOutput(in) &&
          !in->is_constant()) {
        env.erase(in);
      }
    }
  }
  std::vector<TensorPtr> results;
  for (const graph::Value* out : graph.outputs()) {
    auto it = env.find(out);
    if (it == env.end()) return absl::InvalidArgumentError("graph output is not computed");
    results.push_back(it->second);
  }
  return results;
}

}  // namespace kiln::reference
