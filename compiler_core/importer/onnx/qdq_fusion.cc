// FuseQdqConvs: DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear, as QDQ quantizers write
// int8 convolutions, becomes one QLinearConv (an int32 accumulator, exact) [and a Max with the
// output zero point for the Relu], the arithmetic ONNX Runtime's QDQ transformer runs; and
// DequantizeLinear -> MatMul -> QuantizeLinear one QLinearMatMul, and DequantizeLinear -> Gemm
// [-> QuantizeLinear] an integer product (MatMulInteger) with the same requantization.
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

// Whether `value` is read by exactly one node input and is not a graph output.
bool SingleUse(const GraphIndex& ix, const std::string& value) {
  auto it = ix.uses.find(value);
  return it != ix.uses.end() && it->second == 1 && !ix.outputs.count(value);
}

// The int32 initializer behind bias input `value` if it is DequantizeLinear(int32 initializer,
// scale, zero point 0) whose scale is x_scale * w_scale exactly for each of the n output
// channels (either scale per tensor or per channel), so that adding it to the int32
// accumulator is what its DequantizeLinear means; else nullopt.
std::optional<std::string> Int32Bias(const onnx::GraphProto& g, const GraphIndex& ix,
                                     const std::string& value, float x_scale,
                                     const std::vector<float>& w_scale, int64_t n) {
  const onnx::NodeProto* db = DequantizeOf(g, ix, value);
  if (db == nullptr || db->input_size() < 2 || !ix.initializers.count(db->input(0)) ||
      ix.initializers.at(db->input(0))->data_type() != onnx::TensorProto::INT32 ||
      !AllZero(ix, *db, 2)) {
    return std::nullopt;
  }
  std::optional<std::vector<float>> sb = FloatValues(ix, db->input(1));
  auto per_channel_ok = [n](size_t size) { return size == 1 || static_cast<int64_t>(size) == n; };
  if (!sb || !per_channel_ok(sb->size()) || !per_channel_ok(w_scale.size())) return std::nullopt;
  for (int64_t c = 0; c < n; ++c) {
    const float expected = x_scale * w_scale[w_scale.size() == 1 ? 0 : c];
    if ((*sb)[sb->size() == 1 ? 0 : c] != expected) return std::nullopt;
  }
  return db->input(0);
}

// The fused replacement of Q (index q) if the pattern holds, else nullopt.
std::optional<std::vector<onnx::NodeProto>> TryFuse(const onnx::GraphProto& g, const GraphIndex& ix,
                                                    const onnx::NodeProto& q, int opset) {
  if (q.input_size() < 3 || q.input(2).empty()) return std::nullopt;  // needs y_zero_point
  auto pit = ix.producer.find(q.input(0));
  if (pit == ix.producer.end()) return std::nullopt;
  const onnx::NodeProto* relu = nullptr;
  const onnx::NodeProto* conv = &g.node(pit->second);
  if (conv->op_type() == "Relu" && SingleUse(ix, q.input(0))) {
    relu = conv;
    auto cit = ix.producer.find(relu->input(0));
    if (cit == ix.producer.end() || !SingleUse(ix, relu->input(0))) return std::nullopt;
    conv = &g.node(cit->second);
  } else if (!SingleUse(ix, q.input(0))) {
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
    const onnx::TensorProto& w = *ix.initializers.at(dw->input(0));
    if (w.dims_size() < 1) return std::nullopt;
    std::optional<std::string> bias = Int32Bias(g, ix, conv->input(2), (*sx)[0], *sw, w.dims(0));
    if (!bias) return std::nullopt;
    fused.add_input(*bias);
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
  if (pit == ix.producer.end() || !SingleUse(ix, q.input(0))) {
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

// Integer Gemm nodes and the initializers they read.
struct FusedGemm {
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> initializers;
};

// Gemm(DequantizeLinear(x), DequantizeLinear(w) [, DequantizeLinear(bias)]) {alpha=1, beta=1,
// transA=0}, with `q` its QuantizeLinear (or null: a float result), as
//   MatMulInteger(x_q, w_q [transposed when transB], x_zp, w_zp) [+ bias_q] -> Cast(float)
//   -> * multiplier [-> QuantizeLinear(·, 1, y_zp)]
// where multiplier[n] = x_scale * w_scale[n] / y_scale (float32, in that order: QLinearConv's
// requantization) or x_scale * w_scale[n] for a float result. The bias must be int32 with zero
// point 0 and scale x_scale * w_scale exactly. Per-tensor x (and y) scales; per-tensor or
// per-output-channel w; 8-bit zero point initializers. nullopt when the pattern does not hold.
std::optional<FusedGemm> TryFuseGemm(const onnx::GraphProto& g, const GraphIndex& ix,
                                     const onnx::NodeProto& gemm, const onnx::NodeProto* q) {
  if (gemm.op_type() != "Gemm" || !gemm.domain().empty() || gemm.input_size() < 2) {
    return std::nullopt;
  }
  int64_t trans_b = 0;
  for (const auto& a : gemm.attribute()) {
    if ((a.name() == "alpha" || a.name() == "beta") && a.f() != 1.0f) return std::nullopt;
    if (a.name() == "transA" && a.i() != 0) return std::nullopt;
    if (a.name() == "transB") trans_b = a.i();
  }
  const onnx::NodeProto* dx = DequantizeOf(g, ix, gemm.input(0));
  const onnx::NodeProto* dw = DequantizeOf(g, ix, gemm.input(1));
  if (dx == nullptr || dw == nullptr || dx->input_size() < 3 || dw->input_size() < 3 ||
      !Is8BitInitializer(ix, dx->input(2)) || !Is8BitInitializer(ix, dw->input(2))) {
    return std::nullopt;
  }
  auto wit = ix.initializers.find(dw->input(0));
  if (wit == ix.initializers.end() || wit->second->dims_size() != 2) return std::nullopt;
  absl::StatusOr<std::shared_ptr<Tensor>> w = TensorFromProto(*wit->second, "");
  if (!w.ok() || DTypeSize((*w)->type.dtype) != 1) return std::nullopt;
  const int64_t rows = (*w)->type.shape[0], cols = (*w)->type.shape[1];
  const int64_t n = trans_b ? rows : cols;
  std::optional<std::vector<float>> sx = FloatValues(ix, dx->input(1));
  std::optional<std::vector<float>> sw = FloatValues(ix, dw->input(1));
  std::optional<std::vector<float>> sy;
  if (q != nullptr) {
    if (q->input_size() < 3 || q->input(2).empty()) return std::nullopt;
    sy = FloatValues(ix, q->input(1));
    if (!sy || sy->size() != 1) return std::nullopt;
  }
  if (!sx || !sw || sx->size() != 1) return std::nullopt;
  if (sw->size() > 1) {
    // Per output channel: w's axis along N.
    int64_t axis = AxisOf(*dw);
    if (axis < 0) axis += 2;
    if (static_cast<int64_t>(sw->size()) != n || axis != (trans_b ? 0 : 1)) return std::nullopt;
  }
  auto w_scale = [&](int64_t c) { return (*sw)[sw->size() == 1 ? 0 : c]; };
  std::string bias;
  if (gemm.input_size() > 2 && !gemm.input(2).empty()) {
    std::optional<std::string> b = Int32Bias(g, ix, gemm.input(2), (*sx)[0], *sw, n);
    if (!b) return std::nullopt;
    bias = *b;
  }
  // The per-column weight zero point of MatMulInteger is [N]; a per-tensor one stays a scalar.
  const std::string base = (gemm.name().empty() ? gemm.output(0) : gemm.name()) + "/integer_gemm";
  FusedGemm out;
  std::string w_name = dw->input(0);
  if (trans_b) {
    auto t = Tensor::Zeros(TensorType{(*w)->type.dtype, {cols, rows}});
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) t->bytes[c * rows + r] = (*w)->bytes[r * cols + c];
    }
    w_name = base + "/w_transposed";
    out.initializers.push_back(TensorToProto(w_name, *t));
  }
  auto multiplier = Tensor::Zeros(TensorType{DType::kFloat32, {n}});
  for (int64_t c = 0; c < n; ++c) {
    const float xw = (*sx)[0] * w_scale(c);
    multiplier->mutable_data<float>()[c] = q != nullptr ? xw / (*sy)[0] : xw;
  }
  out.initializers.push_back(TensorToProto(base + "/multiplier", *multiplier));
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& o) {
    onnx::NodeProto nd;
    nd.set_op_type(op);
    nd.set_name(o);
    for (const std::string& i : in) nd.add_input(i);
    nd.add_output(o);
    out.nodes.push_back(nd);
    return &out.nodes.back();
  };
  node("MatMulInteger", {dx->input(0), w_name, dx->input(2), dw->input(2)}, base + "/acc");
  std::string acc = base + "/acc";
  if (!bias.empty()) {
    node("Add", {acc, bias}, base + "/acc_bias");
    acc = base + "/acc_bias";
  }
  onnx::AttributeProto* to = node("Cast", {acc}, base + "/acc_float")->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  if (q == nullptr) {
    node("Mul", {base + "/acc_float", base + "/multiplier"}, gemm.output(0));
    return out;
  }
  node("Mul", {base + "/acc_float", base + "/multiplier"}, base + "/scaled");
  auto one = Tensor::Zeros(TensorType{DType::kFloat32, {}});
  one->mutable_data<float>()[0] = 1.0f;
  out.initializers.push_back(TensorToProto(base + "/one", *one));
  node("QuantizeLinear", {base + "/scaled", base + "/one", q->input(2)}, q->output(0));
  return out;
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
  std::map<int, std::vector<onnx::NodeProto>> replacements;  // node index → fused nodes
  std::vector<onnx::TensorProto> initializers;
  std::set<int> fused_gemms;  // Gemm nodes whose QuantizeLinear was fused
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& q = g.node(i);
    if (q.op_type() != "QuantizeLinear" || !q.domain().empty()) continue;
    if (auto fused = TryFuse(g, ix, q, opset)) {
      replacements[i] = std::move(*fused);
    } else if (auto mm = TryFuseMatMul(g, ix, q)) {
      replacements[i] = std::move(*mm);
    } else if (auto it = ix.producer.find(q.input(0));
               it != ix.producer.end() && SingleUse(ix, q.input(0))) {
      if (auto gemm = TryFuseGemm(g, ix, g.node(it->second), &q)) {
        replacements[i] = std::move(gemm->nodes);
        for (auto& t : gemm->initializers) initializers.push_back(std::move(t));
        fused_gemms.insert(it->second);
      }
    }
  }
  // Gemms of dequantized operands with a float result (a classifier's last layer).
  for (int i = 0; i < g.node_size(); ++i) {
    if (fused_gemms.count(i) || g.node(i).op_type() != "Gemm") continue;
    if (auto gemm = TryFuseGemm(g, ix, g.node(i), nullptr)) {
      replacements[i] = std::move(gemm->nodes);
      for (auto& t : gemm->initializers) initializers.push_back(std::move(t));
    }
  }
  if (replacements.empty()) return 0;
  for (auto& t : initializers) *g.add_initializer() = std::move(t);
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
