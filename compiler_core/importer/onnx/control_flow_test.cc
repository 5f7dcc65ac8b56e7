// Import errors and scoping of If, Loop and Scan (control_flow.h); their numerics are checked end
// to end by tests/data/control_flow and the conformance cases.
#include "compiler_core/importer/onnx/control_flow.h"

#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/importer/onnx/importer_test_util.h"
#include "compiler_core/ir/graph/printer.h"
#include "gtest/gtest.h"

namespace kiln::importer {
namespace {

using testing_util::ModelBuilder;

// A graph output of float type, rank `rank` and unknown dims.
void UntypedShapeOutput(ModelBuilder& m, const std::string& name, int rank) {
  auto* vi = m.g()->add_output();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < rank; ++i) tt->mutable_shape()->add_dim();
}

void SetGraph(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// A one-node graph `op`(inputs) -> out of float type `dims`, with the given graph inputs.
onnx::GraphProto Body(const std::string& op, const std::vector<std::string>& inputs,
                      const std::string& out, const testing_util::Ints& dims,
                      const std::vector<std::pair<std::string, int>>& graph_inputs = {}) {
  ModelBuilder b;
  for (const auto& [name, type] : graph_inputs) {
    auto* vi = b.g()->add_input();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  }
  b.Node(op, inputs, {out});
  b.Output(out, dims);
  return *b.g();
}

TEST(ControlFlowImportTest, RuntimeIfWithBranchesOfDifferentShapesIsUnimplemented) {
  ModelBuilder m(16);
  m.Input("cond", {}, "", onnx::TensorProto::BOOL);
  m.Input("x", {2, 3});
  m.Input("y", {3, 3});
  auto* n = m.Node("If", {"cond"}, {"out"}, "branch");
  SetGraph(n, "then_branch", Body("Identity", {"x"}, "a", {2, 3}));
  SetGraph(n, "else_branch", Body("Identity", {"y"}, "b", {3, 3}));
  UntypedShapeOutput(m, "out", 2);
  auto r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  EXPECT_NE(r.status().message().find(
                "node 'branch' (If): the condition is only known at run time and output 0 has "
                "type f32[2,3] in then_branch but f32[3,3] in else_branch"),
            std::string::npos)
      << r.status();
}

TEST(ControlFlowImportTest, SubgraphReadsAnOuterValueDefinedAfterIt) {
  // The If comes first in the file but reads "doubled" from the outer scope: the sort must
  // count that as a dependency.
  ModelBuilder m(16);
  m.Input("x", {4});
  m.Init("one", {}, {1.0f});
  auto* cond = m.g()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  auto* n = m.Node("If", {"cond"}, {"out"}, "branch");
  SetGraph(n, "then_branch", Body("Neg", {"doubled"}, "a", {4}));
  SetGraph(n, "else_branch", Body("Identity", {"doubled"}, "b", {4}));
  m.Node("Add", {"x", "x"}, {"doubled"});
  m.Output("out", {4});
  auto r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
}

TEST(ControlFlowImportTest, LoopErrors) {
  auto loop_model = [](int64_t trip_count, bool with_scan) {
    ModelBuilder m(16);
    m.Input("x", {2});
    m.InitI64("trip", {trip_count});
    auto* c = m.g()->add_initializer();
    c->set_name("cond");
    c->set_data_type(onnx::TensorProto::BOOL);
    c->add_int32_data(1);
    ModelBuilder body;
    for (auto [name, type] : {std::pair{"i", onnx::TensorProto::INT64},
                              std::pair{"c_in", onnx::TensorProto::BOOL},
                              std::pair{"acc", onnx::TensorProto::FLOAT}}) {
      auto* vi = body.g()->add_input();
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    }
    body.Node("Identity", {"c_in"}, {"c_out"});
    body.Node("Neg", {"acc"}, {"acc_out"});
    body.Output("c_out", {}, onnx::TensorProto::BOOL);
    body.Output("acc_out", {2});
    if (with_scan) {
      body.Node("Identity", {"acc"}, {"scan"});
      body.Output("scan", {2});
    }
    std::vector<std::string> outs = {"final"};
    if (with_scan) outs.push_back("stacked");
    auto* n = m.Node("Loop", {"trip", "cond", "x"}, outs, "loop");
    SetGraph(n, "body", *body.g());
    UntypedShapeOutput(m, "final", 1);
    if (with_scan) UntypedShapeOutput(m, "stacked", 2);
    return m.Bytes();
  };
  EXPECT_TRUE(ImportOnnxBytes(loop_model(3, true), "").ok());
  auto empty = ImportOnnxBytes(loop_model(0, true), "");
  EXPECT_EQ(empty.status().message(),
            "node 'loop' (Loop): runs zero iterations, so scan output 0 is empty (zero-sized "
            "tensors are not supported)");
  // Too many iterations to unroll: one Loop node over the body, run at run time.
  auto huge = ImportOnnxBytes(loop_model(kMaxUnrolledLoopNodes, false), "");
  ASSERT_TRUE(huge.ok()) << huge.status();
  std::vector<graph::Node*> loops;
  for (graph::Node* n : (*huge)->nodes()) {
    if (n->op() == graph::OpKind::kLoop) loops.push_back(n);
  }
  ASSERT_EQ(loops.size(), 1u) << graph::PrintGraph(**huge);
  EXPECT_EQ(loops[0]->attrs().GetInt("num_carried", -1), 1);
  EXPECT_EQ(loops[0]->input(0)->constant()->GetAsInt64(0), kMaxUnrolledLoopNodes);
  std::shared_ptr<graph::Graph> body = loops[0]->attrs().GetGraph("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(graph::PrintGraph(*body),
            "graph @loop/body(%0 \"i\": i64[], %1 \"c_in\": bool[], %2 \"acc\": f32[2]) -> "
            "(%3 \"c_out\", %4 \"acc_out\") {\n"
            "  %3 = Identity(%1) : bool[]\n"
            "  %4 = Neg(%2) : f32[2]\n"
            "  return %3, %4\n"
            "}\n");
  // Unrolled when small enough: 3 copies of the body.
  auto small = ImportOnnxBytes(loop_model(3, false), "");
  ASSERT_TRUE(small.ok()) << small.status();
  for (const graph::Node* n : (*small)->nodes()) EXPECT_NE(n->op(), graph::OpKind::kLoop);
}

}  // namespace
}  // namespace kiln::importer
