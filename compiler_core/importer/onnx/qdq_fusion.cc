// FuseQdqConvs: DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear, as QDQ quantizers write
// int8 convolutions, becomes one QLinearConv (an int32 accumulator, exact) [and a Max with the
// output zero point for the Relu], the arithmetic ONNX Runtime's QDQ transformer runs; and
// DequantizeLinear -> MatMul -> QuantizeLinear one QLinearMatMul.
#include "compiler_core/importer/onnx/qdq_fusion.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/importer/onnx/tensor_proto.h"

namespace kiln::importer {
namespace {

struct GraphIndex {
  std::map<std::string, int> producer;  // value → node index
  std::map<std::string, int> uses;      // value → number of node inputs reading it
  std::map<std::string, const onnx::TensorProto*> initializers;
  std::set<std::string> outputs;  // graph outputs
};

GraphIndex Index(const onnx::GraphProto& g) {
  GraphIndex ix;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& out : g.node(i).output()) ix.producer[out] = i;
    for (const auto& in : g.node(i).input()) ++ix.uses[in];
  }
  for (const auto& t : g.initializer()) ix.initializers[t.name()] = &t;
  for (const auto& o : g.output()) ix.outputs.insert(o.name());
  return ix;
}

// The DequantizeLinear node producing `value`, if any.
const onnx::NodeProto* DequantizeOf(const onnx::GraphProto& g, const GraphIndex& ix,
                                    const std::string& value) {
  auto it = ix.producer.find(value);
  if (it == ix.producer.end()) return nullptr;
  const onnx::NodeProto& n = g.node(it->second);
  return n.op_type() == "DequantizeLinear" && n.domain().empty() ? &n : nullptr;
}

// Float values of an initializer (scales), or nullopt.
std::optional<std::vector<float>> FloatValues(const GraphIndex& ix, const std::string& name) {
  auto it = ix.initializers.find(name);
  if (it == ix.initializers.end()) return std::nullopt;
  absl::StatusOr<std::shared_ptr<Tensor>> t = TensorFromProto(*it->second, "");
  if (!t.ok() || (*t)->type.dtype != DType::kFloat32) return std::nullopt;
  const float* p = (*t)->data<float>();
  return std::vector<float>(p, p + (*t)->type.NumElements());
}

// Whether every element of integer initializer `name` is zero (an absent one counts).
bool AllZero(const GraphIndex& ix, const onnx::NodeProto& dq, int input) {
  if (dq.input_size() <= input || dq.input(input).empty()) return true;
  auto it = ix.initializers.find(dq.input(input));
  if (it == ix.initializers.end()) return false;
  absl::StatusOr<std::shared_ptr<Tensor>> t = TensorFromProto(*it->second, "");
  if (!t.ok() || IsFloat((*t)->type.dtype)) return false;
  for (int64_t i = 0; i < (*t)->type.NumElements(); ++i) {
    if ((*t)->GetAsInt64(i) != 0) return false;
  }
  return true;
}

int64_t AxisOf(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "axis") return a.i();
  }
  return 1;
}

// The fused replacement of Q (index q) if the pattern holds, else nullopt.
std::optional<std::vector<onnx::NodeProto>> TryFuse(const onnx::GraphProto& g, const GraphIndex& ix,
                                                    const onnx::NodeProto& q, int opset) {
  if (q.input_size() < 3 || q.input(2).empty()) return std::nullopt;  // needs y_zero_point
  auto single = [&](const std::string& v) {
    return ix.uses.count(v) && ix.uses.at(v) == 1 && !ix.outputs.count(v);
  };
  auto pit = ix.producer.find(q.input(0));
  if (pit == ix.producer.end()) return std::nullopt;
  const onnx::NodeProto* relu = nullptr;
  const onnx::NodeProto* conv = &g.node(pit->second);
  if (conv->op_type() == "Relu" && single(q.input(0))) {
    relu = conv;
    auto cit = ix.producer.find(relu->input(0));
    if (cit == ix.producer.end() || !single(relu->input(0))) return std::nullopt;
    conv = &g.node(cit->second);
  } else if (!single(q.input(0))) {
    return std::nullopt;
  }
  if (conv->op_type() != "Conv" || !conv->domain().empty() || conv->input_size() < 2) {
    return std::nullopt;
  }
  if (relu != nullptr && opset < 12) return std::nullopt;  // Max on uint8/int8 needs opset 12
  const onnx::NodeProto* dx = DequantizeOf(g, ix, conv->input(0));
  const onnx::NodeProto* dw = DequantizeOf(g, ix, conv->input(1));
  if (dx == nullptr || dw == nullptr || dx->input_size() < 2 || dw->input_size() < 2) {
    return std::nullopt;
  }
  // Per-tensor x and y scales, per-tensor or per-output-channel (axis 0) weight scales; a
  // constant quantized weight.
  std::optional<std::vector<float>> sx = FloatValues(ix, dx->input(1));
  std::optional<std::vector<float>> sw = FloatValues(ix, dw->input(1));
  std::optional<std::vector<float>> sy = FloatValues(ix, q.input(1));
  if (!sx || !sw || !sy || sx->size() != 1 || sy->size() != 1) return std::nullopt;
  if (sw->size() > 1 && AxisOf(*dw) != 0) return std::nullopt;
  if (!ix.initializers.count(dw->input(0))) return std::nullopt;
  onnx::NodeProto fused;
  fused.set_op_type("QLinearConv");
  fused.set_name(conv->name().empty() ? q.output(0) + "/qlinearconv" : conv->name());
  auto zp_or_empty = [](const onnx::NodeProto& dq) {
    return dq.input_size() > 2 ? dq.input(2) : std::string();
  };
  for (const std::string& in : {dx->input(0), dx->input(1), zp_or_empty(*dx), dw->input(0),
                                dw->input(1), zp_or_empty(*dw), q.input(1), q.input(2)}) {
    fused.add_input(in);
  }
  if (conv->input_size() > 2 && !conv->input(2).empty()) {
    // The bias must be int32 with zero point 0 and scale x_scale * w_scale exactly, so that
    // adding it to the accumulator is what its DequantizeLinear means.
    const onnx::NodeProto* db = DequantizeOf(g, ix, conv->input(2));
    if (db == nullptr || !ix.initializers.count(db->input(0)) ||
        ix.initializers.at(db->input(0))->data_type() != onnx::TensorProto::INT32 ||
        !AllZero(ix, *db, 2)) {
      return std::nullopt;
    }
    std::optional<std::vector<float>> sb = FloatValues(ix, db->input(1));
    if (!sb) return std::nullopt;
    for (size_t c = 0; c < sb->size(); ++c) {
      float expected = (*sx)[0] * (*sw)[sw->size() == 1 ? 0 : c];
      if ((*sb)[c] != expected) return std::nullopt;
    }
    fused.add_input(db->input(0));
  }
  for (const auto& a : conv->attribute()) *fused.add_attribute() = a;
  std::vector<onnx::NodeProto> out;
  if (relu == nullptr) {
    fused.add_output(q.output(0));
    out.push_back(fused);
    return out;
  }
  // Relu before quantization is a Max with the output zero point after it (rounding is
  // monotonic and round(0) = 0).
  const std::string pre = q.output(0) + "/before_relu";
  fused.add_output(pre);
  onnx::NodeProto max;
  max.set_op_type("Max");
  max.set_name(relu->name().empty() ? q.output(0) + "/relu" : relu->name());
  max.add_input(pre);
  max.add_input(q.input(2));
  max.add_output(q.output(0));
  out.push_back(fused);
  out.push_back(max);
  return out;
}

// Whether `name` is an initializer of an 8-bit integer type (a zero point of int8 data).
bool Is8BitInitializer(const GraphIndex& ix, const std::string& name) {
  auto it = ix.initializers.find(name);
  return it != ix.initializers.end() && (it->second->data_type() == onnx::TensorProto::UINT8 ||
                                         it->second->data_type() == onnx::TensorProto::INT8);
}

// DequantizeLinear(a) -> MatMul(·, DequantizeLinear(b)) -> QuantizeLinear as one QLinearMatMul
// (per-tensor a and y, per-tensor or per-column b; 8-bit zero points on both), or nullopt.
std::optional<std::vector<onnx::NodeProto>> TryFuseMatMul(const onnx::GraphProto& g,
                                                          const GraphIndex& ix,
                                                          const onnx::NodeProto& q) {
  if (q.input_size() < 3 || q.input(2).empty()) return std::nullopt;
  auto pit = ix.producer.find(q.input(0));
  if (pit == ix.producer.end() || ix.uses.at(q.input(0)) != 1 || ix.outputs.count(q.input(0))) {
    return std::nullopt;
  }
  const onnx::NodeProto& mm = g.node(pit->second);
  if (mm.op_type() != "MatMul" || !mm.domain().empty() || mm.input_size() != 2) {
    return std::nullopt;
  }
  const onnx::NodeProto* da = DequantizeOf(g, ix, mm.input(0));
  const onnx::NodeProto* db = DequantizeOf(g, ix, mm.input(1));
  if (da == nullptr || db == nullptr || da->input_size() < 3 || db->input_size() < 3 ||
      !Is8BitInitializer(ix, da->input(2)) || !Is8BitInitializer(ix, db->input(2))) {
    return std::nullopt;
  }
  std::optional<std::vector<float>> sa = FloatValues(ix, da->input(1));
  std::optional<std::vector<float>> sb = FloatValues(ix, db->input(1));
  std::optional<std::vector<float>> sy = FloatValues(ix, q.input(1));
  if (!sa || !sb || !sy || sa->size() != 1 || sy->size() != 1) return std::nullopt;
  if (sb->size() > 1) {
    // Per column: a 2-D constant b quantized along its last axis.
    auto bit = ix.initializers.find(db->input(0));
    if (bit == ix.initializers.end() || bit->second->dims_size() != 2) return std::nullopt;
    const int64_t axis = AxisOf(*db);
    if ((axis != 1 && axis != -1) || static_cast<int64_t>(sb->size()) != bit->second->dims(1)) {
      return std::nullopt;
    }
  }
  onnx::NodeProto fused;
  fused.set_op_type("QLinearMatMul");
  fused.set_name(mm.name().empty() ? q.output(0) + "/qlinearmatmul" : mm.name());
  for (const std::string& in : {da->input(0), da->input(1), da->input(2), db->input(0),
                                db->input(1), db->input(2), q.input(1), q.input(2)}) {
    fused.add_input(in);
  }
  fused.add_output(q.output(0));
  return std::vector<onnx::NodeProto>{fused};
}

// Removes the nodes of `g` none of whose outputs is read (by a node, a subgraph, or as a graph
// output), until none is left; ONNX nodes have no side effects.
void DropDeadNodes(onnx::GraphProto& g) {
  for (bool changed = true; changed;) {
    std::set<std::string> read;
    for (const auto& out : g.output()) read.insert(out.name());
    for (const auto& n : g.node()) {
      for (const auto& in : n.input()) read.insert(in);
      OuterScopeNames(n, read);
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> live;
    changed = false;
    for (const auto& n : g.node()) {
      bool used = n.output_size() == 0;
      for (const auto& out : n.output()) used = used || (!out.empty() && read.count(out));
      if (used) {
        *live.Add() = n;
      } else {
        changed = true;
      }
    }
    g.mutable_node()->Swap(&live);
  }
}

}  // namespace

int FuseQdqConvs(onnx::GraphProto& g, int opset) {
  if (opset < 10) return 0;  // QLinearConv, QLinearMatMul
  GraphIndex ix = Index(g);
  std::map<int, std::vector<onnx::NodeProto>> replacements;  // Q node index → fused nodes
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& q = g.node(i);
    if (q.op_type() != "QuantizeLinear" || !q.domain().empty()) continue;
    if (auto fused = TryFuse(g, ix, q, opset)) {
      replacements[i] = std::move(*fused);
    } else if (auto mm = TryFuseMatMul(g, ix, q)) {
      replacements[i] = std::move(*mm);
    }
  }
  if (replacements.empty()) return 0;
  // Each fused node takes its Q node's place, so the graph stays topologically sorted; the Conv,
  // Relu and weight DequantizeLinear nodes it replaces are then dropped (their outputs have no
  // reader any more), so they are never imported.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g.node_size(); ++i) {
    auto it = replacements.find(i);
    if (it == replacements.end()) {
      *nodes.Add() = g.node(i);
    } else {
      for (onnx::NodeProto& n : it->second) *nodes.Add() = std::move(n);
    }
  }
  g.mutable_node()->Swap(&nodes);
  DropDeadNodes(g);
  return static_cast<int>(replacements.size());
}

}  // namespace kiln::importer
