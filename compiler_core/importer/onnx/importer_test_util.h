// Test helpers for the ONNX importer: a small ModelProto builder, attribute setters, and
// lookups in the imported graph.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_TEST_UTIL_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/importer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer::testing_util {

using Ints = std::vector<int64_t>;

// Small ModelProto builder for tests.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13, int ir_version = 8) {
    model_.set_ir_version(ir_version);
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  onnx::GraphProto* g() { return model_.mutable_graph(); }

  void Input(const std::string& name, const Ints& dims, const std::string& dim_param = "",
             int elem_type = onnx::TensorProto::FLOAT) {
    auto* vi = g()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    if (!dim_param.empty()) shape->add_dim()->set_dim_param(dim_param);
  }
  void Output(const std::string& name, const Ints& dims, int elem_type = onnx::TensorProto::FLOAT) {
    auto* vi = g()->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  onnx::TensorProto* Init(const std::string& name, const Ints& dims,
                          const std::vector<float>& values) {
    auto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  void InitI64(const std::string& name, const Ints& values) {
    auto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& name = "") {
    auto* n = g()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out[0] + "_node" : name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  onnx::ModelProto model_;
};

inline void SetInts(onnx::NodeProto* n, const std::string& name, const Ints& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void SetFloat(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void SetString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

inline absl::StatusOr<std::unique_ptr<graph::Graph>> Import(const ModelBuilder& b) {
  return ImportOnnxBytes(b.Bytes(), ::testing::TempDir());
}

inline graph::Node* Only(const graph::Graph& g, graph::OpKind op) {
  for (graph::Node* n : g.nodes()) {
    if (n->op() == op) return n;
  }
  return nullptr;
}

inline std::vector<int64_t> ConstInts(const graph::Value* v) {
  std::vector<int64_t> out;
  if (v == nullptr || !v->is_constant()) return out;
  for (int64_t i = 0; i < v->type().NumElements(); ++i) out.push_back(v->constant()->GetAsInt64(i));
  return out;
}

}  // namespace kiln::importer::testing_util

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_TEST_UTIL_H_
