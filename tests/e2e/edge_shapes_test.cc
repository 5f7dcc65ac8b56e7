// Small ONNX models built in C++ and run through the whole pipeline (import, passes, lowering,
// codegen, runtime) against hand-computed outputs: LpPool / GlobalLpPool (no conformance data
// exists for them), rank-0 tensors and empty tensors (a dimension of 0).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "onnx/onnx_pb.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using Shape = std::vector<int64_t>;

/// A graph input or output: name, shape and element type (float unless told).
struct Io {
  std::string name;
  Shape shape;
  int elem_type = onnx::TensorProto::FLOAT;
};

/// Builds an ONNX model (opset 13 unless told) input by input and node by node.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(7);
    model_.add_opset_import()->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }
  void Input(const Io& io) { SetInfo(model_.mutable_graph()->add_input(), io); }
  void Output(const Io& io) { SetInfo(model_.mutable_graph()->add_output(), io); }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(outs[0] + "_node");
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  static void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void IntsAttr(onnx::NodeProto* n, const std::string& name, const Shape& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  const onnx::ModelProto& model() const { return model_; }

 private:
  static void SetInfo(onnx::ValueInfoProto* v, const Io& io) {
    v->set_name(io.name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(io.elem_type);
    auto* shape = t->mutable_shape();  // present even for rank 0
    for (int64_t d : io.shape) shape->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
};

Tensor F32(const Shape& shape, const std::vector<float>& v) {
  Tensor t;
  t.type = TensorType{DType::kFloat32, shape};
  t.bytes.resize(static_cast<size_t>(t.type.NumBytes()));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.type.NumElements());
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.type.NumElements()));
  if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

class EdgeShapesTest : public ::testing::Test {
 protected:
  /// Compiles `b`'s model for the host and loads it.
  static absl::StatusOr<std::unique_ptr<runtime::Executable>> Compile(const ModelBuilder& b) {
    fs::path path = fs::temp_directory_path() /
                    ("kiln_edge_" + std::to_string(getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx");
    std::ofstream(path, std::ios::binary) << b.model().SerializeAsString();
    auto compiled = pipeline::CompileModelFile(path.string(), pipeline::CompileOptions{});
    fs::remove(path);
    if (!compiled.ok()) return compiled.status();
    return runtime::Executable::Load(compiled->artifact);
  }

  /// Runs `exe` on `inputs`.
  static absl::StatusOr<std::vector<Tensor>> Run(runtime::Executable& exe,
                                                 const std::vector<Tensor>& inputs) {
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : inputs) ptrs.push_back(&t);
    return exe.Run(ptrs);
  }

  /// Compiles `b`'s model for the host and runs it on `inputs`.
  static absl::StatusOr<std::vector<Tensor>> CompileAndRun(const ModelBuilder& b,
                                                           const std::vector<Tensor>& inputs) {
    auto exe = Compile(b);
    if (!exe.ok()) return exe.status();
    return Run(**exe, inputs);
  }

  /// Compiles `b`'s model, runs it on `inputs` and checks each output's shape and values.
  void Check(const ModelBuilder& b, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& expected) {
    auto outputs = CompileAndRun(b, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    ASSERT_EQ(outputs->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ((*outputs)[i].type, expected[i].type) << "output " << i;
      std::vector<float> got = Floats((*outputs)[i]), want = Floats(expected[i]);
      ASSERT_EQ(got.size(), want.size()) << "output " << i;
      for (size_t j = 0; j < want.size(); ++j) {
        EXPECT_NEAR(got[j], want[j], 1e-5f * std::max(1.0f, std::fabs(want[j])))
            << "output " << i << " element " << j;
      }
    }
  }
};

// LpPool (p = 2, kernel 2, pads 1/1) over [3, -4]: windows [pad, 3], [3, -4], [-4, pad].
// LpPool (p = 1, kernel 2x2, stride 2) and GlobalLpPool (p default 2, and p = 3) over a 2x2.
TEST_F(EdgeShapesTest, LpPoolAndGlobalLpPool) {
  ModelBuilder b;
  b.Input({"x", {1, 1, 2}});
  b.Input({"y", {1, 1, 2, 2}});
  auto* lp = b.Node("LpPool", {"x"}, {"lp"});
  ModelBuilder::IntsAttr(lp, "kernel_shape", {2});
  ModelBuilder::IntsAttr(lp, "pads", {1, 1});
  ModelBuilder::IntAttr(lp, "p", 2);
  auto* lp1 = b.Node("LpPool", {"y"}, {"lp1"});
  ModelBuilder::IntsAttr(lp1, "kernel_shape", {2, 2});
  ModelBuilder::IntsAttr(lp1, "strides", {2, 2});
  ModelBuilder::IntAttr(lp1, "p", 1);
  b.Node("GlobalLpPool", {"y"}, {"glp"});
  auto* glp3 = b.Node("GlobalLpPool", {"y"}, {"glp3"});
  ModelBuilder::IntAttr(glp3, "p", 3);
  b.Output({"lp", {1, 1, 3}});
  b.Output({"lp1", {1, 1, 1, 1}});
  b.Output({"glp", {1, 1, 1, 1}});
  b.Output({"glp3", {1, 1, 1, 1}});
  Check(b, {F32({1, 1, 2}, {3, -4}), F32({1, 1, 2, 2}, {1, -2, 2, 4})},
        {F32({1, 1, 3}, {3, 5, 4}), F32({1, 1, 1, 1}, {9}), F32({1, 1, 1, 1}, {5}),
         F32({1, 1, 1, 1}, {static_cast<float>(std::cbrt(1.0 + 8 + 8 + 64))})});
}

TEST_F(EdgeShapesTest, ScalarAddAndRelu) {
  ModelBuilder b;
  b.Input({"a", {}});
  b.Input({"b", {}});
  b.Node("Add", {"a", "b"}, {"sum"});
  b.Node("Relu", {"a"}, {"relu"});
  b.Output({"sum", {}});
  b.Output({"relu", {}});
  Check(b, {F32({}, {-1.5f}), F32({}, {4.0f})}, {F32({}, {2.5f}), F32({}, {0.0f})});
}

// A scalar graph input fed as a one-element tensor ([1], [1,1]), as exporters' wrappers feed a
// voice-activity model's sample rate and ONNX Runtime runs it: taken as the scalar, with the
// same outputs bit for bit. Any other shape for it keeps its error, and so does a scalar fed for
// an input declared [1] (ONNX Runtime refuses that too).
TEST_F(EdgeShapesTest, OneElementTensorFeedsAScalarInput) {
  ModelBuilder b;
  b.Input({"x", {3}});
  b.Input({"sr", {}, onnx::TensorProto::INT64});
  b.Input({"gain", {1}});
  auto* cast = b.Node("Cast", {"sr"}, {"srf"});
  ModelBuilder::IntAttr(cast, "to", onnx::TensorProto::FLOAT);
  b.Node("Mul", {"x", "srf"}, {"scaled"});
  b.Node("Mul", {"scaled", "gain"}, {"y"});
  b.Output({"y", {3}});
  auto exe = Compile(b);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto sr = [](const Shape& shape, int64_t rate) {
    Tensor t;
    t.type = TensorType{DType::kInt64, shape};
    t.bytes.resize(static_cast<size_t>(t.type.NumBytes()));
    for (size_t i = 0; i < t.bytes.size(); i += sizeof rate) {
      std::memcpy(t.bytes.data() + i, &rate, sizeof rate);
    }
    return t;
  };
  const Tensor x = F32({3}, {1, -2, 0.5f}), gain = F32({1}, {0.25f});
  auto scalar = Run(**exe, {x, sr({}, 16000), gain});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  ASSERT_EQ(scalar->size(), 1u);
  EXPECT_EQ((*scalar)[0].type, (TensorType{DType::kFloat32, {3}}));
  EXPECT_EQ(Floats((*scalar)[0]), (std::vector<float>{4000, -8000, 2000}));
  for (const Shape& one : {Shape{1}, Shape{1, 1}}) {
    auto fed = Run(**exe, {x, sr(one, 16000), gain});
    ASSERT_TRUE(fed.ok()) << fed.status();
    ASSERT_EQ(fed->size(), 1u);
    EXPECT_EQ((*fed)[0].type, (*scalar)[0].type);
    EXPECT_EQ((*fed)[0].bytes, (*scalar)[0].bytes);
  }
  for (const Shape& other : {Shape{2}, Shape{0}, Shape{1, 2}}) {
    auto refused = Run(**exe, {x, sr(other, 16000), gain});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.status().message(),
              "input 1 ('sr'): expected shape [], got [" + absl::StrJoin(other, ",") + "]");
  }
  auto scalar_for_vector = Run(**exe, {x, sr({}, 16000), F32({}, {0.25f})});
  ASSERT_FALSE(scalar_for_vector.ok());
  EXPECT_EQ(scalar_for_vector.status().message(), "input 2 ('gain'): expected shape [1], got []");
}

TEST_F(EdgeShapesTest, ReduceSumToScalar) {
  ModelBuilder b;
  b.Input({"x", {2, 3}});
  auto* r = b.Node("ReduceSum", {"x"}, {"s"});
  ModelBuilder::IntAttr(r, "keepdims", 0);
  b.Output({"s", {}});
  Check(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {F32({}, {21})});
}

TEST_F(EdgeShapesTest, EmptyAddBroadcast) {
  ModelBuilder b;
  b.Input({"a", {0, 3}});
  b.Input({"b", {1, 3}});
  b.Node("Add", {"a", "b"}, {"c"});
  b.Output({"c", {0, 3}});
  Check(b, {F32({0, 3}, {}), F32({1, 3}, {1, 2, 3})}, {F32({0, 3}, {})});
}

TEST_F(EdgeShapesTest, ConcatWithEmptyOperand) {
  ModelBuilder b;
  b.Input({"a", {2, 0}});
  b.Input({"b", {2, 3}});
  auto* c = b.Node("Concat", {"a", "b"}, {"c"});
  ModelBuilder::IntAttr(c, "axis", 1);
  b.Output({"c", {2, 3}});
  Check(b, {F32({2, 0}, {}), F32({2, 3}, {1, 2, 3, 4, 5, 6})},
        {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
}

TEST_F(EdgeShapesTest, EmptyMatMul) {
  ModelBuilder b;
  b.Input({"a", {0, 4}});
  b.Input({"b", {4, 5}});
  b.Node("MatMul", {"a", "b"}, {"c"});
  b.Output({"c", {0, 5}});
  std::vector<float> bv(20, 1.0f);
  Check(b, {F32({0, 4}, {}), F32({4, 5}, bv)}, {F32({0, 5}, {})});
}

TEST_F(EdgeShapesTest, EmptyRelu) {
  ModelBuilder b;
  b.Input({"x", {0}});
  b.Node("Relu", {"x"}, {"y"});
  b.Output({"y", {0}});
  Check(b, {F32({0}, {})}, {F32({0}, {})});
}

// A bf16 MatMul (bf16 is a storage type) sums exact f32 products in f32 and rounds once to
// bf16 (round to nearest even): 64 products of 1/64-sized values, where summing in bf16 would
// lose the small terms. Expected: the same sums in double; rounding to bf16 is off by at most
// half an ulp, 2^-8 of the value (bf16 keeps 8 significant bits).
TEST_F(EdgeShapesTest, BFloat16MatMulSumsInF32) {
  constexpr int64_t kM = 3, kK = 64, kN = 5;
  ModelBuilder b;
  b.Input({"a", {kM, kK}, onnx::TensorProto::BFLOAT16});
  b.Input({"b", {kK, kN}, onnx::TensorProto::BFLOAT16});
  b.Node("MatMul", {"a", "b"}, {"c"});
  b.Output({"c", {kM, kN}, onnx::TensorProto::BFLOAT16});
  auto bf16 = [](const Shape& shape, const std::vector<float>& v) {
    Tensor t;
    t.type = TensorType{DType::kBFloat16, shape};
    t.bytes.resize(static_cast<size_t>(t.type.NumBytes()));
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = FloatToBFloat16(v[i]);
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    }
    return t;
  };
  std::vector<float> av(kM * kK), bv(kK * kN);
  for (size_t i = 0; i < av.size(); ++i) av[i] = 1.0f + static_cast<float>(i % 7) / 64;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 11 + 1) / 64;
  Tensor a = bf16({kM, kK}, av), bt = bf16({kK, kN}, bv);
  auto outputs = CompileAndRun(b, {a, bt});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 1u);
  const Tensor& c = (*outputs)[0];
  ASSERT_EQ(c.type, (TensorType{DType::kBFloat16, {kM, kN}}));
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double want = 0;
      for (int64_t k = 0; k < kK; ++k) {
        want += double{BFloat16ToFloat(FloatToBFloat16(av[i * kK + k]))} *
                BFloat16ToFloat(FloatToBFloat16(bv[k * kN + j]));
      }
      uint16_t h = 0;
      std::memcpy(&h, c.bytes.data() + 2 * (i * kN + j), 2);
      EXPECT_NEAR(BFloat16ToFloat(h), want, std::fabs(want) * (1.0 / 256 + 1e-6))
          << "c[" << i << ", " << j << "]";
    }
  }
}

}  // namespace
}  // namespace kiln
