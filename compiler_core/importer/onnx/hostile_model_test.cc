// Hostile models at import: 100k-node chains import in linear time without recursing per
// node, and shapes with negative dims, sizes past int64 or past the size budget
// (ImportOptions::max_tensor_bytes) are kInvalidArgument naming the value and saying why.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/importer/onnx/importer_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::importer {
namespace {

using graph::OpKind;
using ::testing::HasSubstr;
using testing_util::Import;
using testing_util::ModelBuilder;
using testing_util::SetInt;
using testing_util::SetInts;

absl::StatusOr<std::unique_ptr<graph::Graph>> ImportWithBudget(const ModelBuilder& b,
                                                               int64_t max_tensor_bytes) {
  ImportOptions options;
  options.max_tensor_bytes = max_tensor_bytes;
  return ImportOnnxBytes(b.Bytes(), ::testing::TempDir(), options);
}

/// Expects `status` to be kInvalidArgument with a message containing every one of `parts`.
void ExpectInvalid(const absl::Status& status, const std::vector<std::string>& parts) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  for (const std::string& part : parts) {
    EXPECT_THAT(std::string(status.message()), HasSubstr(part));
  }
}

TEST(HostileModelTest, HundredThousandNodeChainImports) {
  constexpr int kDepth = 100000;
  ModelBuilder b;
  b.Input("x", {4});
  std::string prev = "x";
  for (int i = 0; i < kDepth; ++i) {
    std::string out = i + 1 == kDepth ? "y" : "v" + std::to_string(i);
    b.Node("Relu", {prev}, {out});
    prev = out;
  }
  b.Output("y", {4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->num_nodes(), kDepth);
  EXPECT_EQ((*g)->outputs()[0]->producer()->input(0)->producer()->op(), OpKind::kRelu);
}

// c0 + c + c + ... (50k Adds of constants) folds at import, node by node: the output Add reads
// one constant holding c0 + 50000.
TEST(HostileModelTest, FiftyThousandNodeConstantChainFoldsAtImport) {
  constexpr int kDepth = 50000;
  ModelBuilder b;
  b.Input("x", {4});
  b.Init("c0", {4}, {0, 1, 2, 3});
  b.Init("c", {4}, {1, 1, 1, 1});
  std::string prev = "c0";
  for (int i = 0; i < kDepth; ++i) {
    std::string out = "v" + std::to_string(i);
    b.Node("Add", {prev, "c"}, {out});
    prev = out;
  }
  b.Node("Add", {"x", prev}, {"y"});
  b.Output("y", {4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Value* folded = (*g)->outputs()[0]->producer()->input(1);
  ASSERT_TRUE(folded->is_constant());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(folded->constant()->data<float>()[i], static_cast<float>(i + kDepth));
  }
}

TEST(HostileModelTest, NegativeInputDim) {
  ModelBuilder b;
  b.Input("x", {-2, 4});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y", {2, 4});
  auto g = Import(b);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(g.status().message()),
            "graph input 'x' declares dim 0 as -2: dims must not be negative");
  // A symbolic dim bound to a negative value (--input-shape x=4,-3).
  ModelBuilder sym;
  sym.Input("x", {4}, "n");
  sym.Node("Relu", {"x"}, {"y"});
  sym.Output("y", {4});
  sym.g()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_param("n");
  ImportOptions options;
  options.input_shapes["x"] = {4, -3};
  auto bound = ImportOnnxBytes(sym.Bytes(), ::testing::TempDir(), options);
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bound.status().message()),
            "graph input 'x' has type f32[4,-3]: dim 1 is negative");
}

TEST(HostileModelTest, ElementCountPastInt64) {
  ModelBuilder b;
  b.Input("x", {int64_t{1} << 32, int64_t{1} << 32});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y", {int64_t{1} << 32, int64_t{1} << 32});
  auto g = Import(b);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(g.status().message()),
            "graph input 'x' has type f32[4294967296,4294967296]: its element count overflows "
            "int64");
}

TEST(HostileModelTest, ExpandToNegativeDim) {
  ModelBuilder b;
  b.Input("x", {1});
  b.InitI64("shape", {-3});
  b.Node("Expand", {"x", "shape"}, {"y"}, "expand");
  b.Output("y", {3});
  // Declared as f32[3], ONNX shape inference objects.
  ExpectInvalid(Import(b).status(),
                {"(op_type:Expand, node name: expand)", "differ in dimension 0: (-3) vs (3)"});
  // Declared symbolic, ONNX infers f32[-3], which the importer refuses before building anything.
  auto* dim =
      b.g()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
          0);
  dim->set_dim_param("n");
  EXPECT_EQ(std::string(Import(b).status().message()),
            "node 'expand' (Expand): output 0 ('y') has type f32[-3]: dim 0 is negative");
}

TEST(HostileModelTest, ReshapeWhoseElementCountWrapsAround) {
  // (2^62 + 1) * 4 wraps to 4 in int64, the input's element count.
  ModelBuilder b;
  b.Input("x", {4});
  b.InitI64("shape", {(int64_t{1} << 62) + 1, 4});
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y", {(int64_t{1} << 62) + 1, 4});
  auto g = Import(b);
  ExpectInvalid(g.status(), {"node 'reshape' (Reshape)", "overflows int64"});
}

TEST(HostileModelTest, TileWhoseSizeWrapsAround) {
  // 4 * 2^62 wraps to 0 in int64.
  ModelBuilder b;
  b.Input("x", {4});
  b.InitI64("reps", {int64_t{1} << 62});
  b.Node("Tile", {"x", "reps"}, {"y"}, "tile");
  b.Output("y", {0});
  auto g = Import(b);
  ExpectInvalid(g.status(), {"node 'tile' (Tile)", "overflows int64"});
}

TEST(HostileModelTest, PadsWhoseSumWrapsAround) {
  // INT64_MAX + INT64_MAX wraps to -2: the output would have been f32[2].
  ModelBuilder b;
  b.Input("x", {4});
  b.InitI64("pads", {INT64_MAX, INT64_MAX});
  b.Node("Pad", {"x", "pads"}, {"y"}, "pad");
  b.Output("y", {2});
  auto g = Import(b);
  ExpectInvalid(g.status(), {"node 'pad' (Pad)", "overflows int64"});
}

TEST(HostileModelTest, HugeResizeIsRefusedBeforeItsTapsAreBuilt) {
  ModelBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.InitI64("sizes", {1, 1, int64_t{1} << 40, int64_t{1} << 40});
  b.Node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
  b.Output("y", {1, 1, int64_t{1} << 40, int64_t{1} << 40});
  auto g = Import(b);
  ExpectInvalid(g.status(), {"node 'resize' (Resize): output 0", "overflows int64"});
}

/// Declares output "y" of rank `rank` with symbolic dims, so that ONNX infers its shape.
void SymbolicOutput(ModelBuilder& b, int rank) {
  b.Output("y", {});
  auto* shape = b.g()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < rank; ++i) shape->add_dim()->set_dim_param("d" + std::to_string(i));
}

// Attributes ONNX shape inference divides by: a zero stride, or a blocksize whose square wraps
// to 0, killed the process with SIGFPE inside the ONNX library.
TEST(HostileModelTest, DivisorAttributesAreCheckedBeforeOnnxShapeInference) {
  {
    ModelBuilder b;
    b.Input("x", {1, 4, 2, 2});
    SetInt(b.Node("DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t{1} << 32);
    SymbolicOutput(b, 4);
    auto g = Import(b);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'd2s' (DepthToSpace): attribute 'blocksize' must be positive with a square "
              "that fits int64, got 4294967296");
  }
  {
    ModelBuilder b;
    b.Input("x", {1, 1, 4, 4});
    b.Init("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    SetInts(b.Node("Conv", {"x", "w"}, {"y"}, "conv"), "strides", {0, 1});
    SymbolicOutput(b, 4);
    auto g = Import(b);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'conv' (Conv): attribute 'strides' must be positive, got [0,1]");
  }
}

// ONNX 1.12's ConvTranspose shape inference segfaults on a rank-2 X with a rank-3 W (found by
// fuzz_onnx_import; the model is also a seed in fuzz/seeds/onnx_import): declared ranks of
// Conv and ConvTranspose are checked before it runs.
TEST(HostileModelTest, ConvRanksAreCheckedBeforeOnnxShapeInference) {
  {
    ModelBuilder b;
    b.Input("x", {1, 1});
    b.Input("w", {1, 2, 0});
    b.Node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
    SymbolicOutput(b, 2);
    auto g = Import(b);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'deconv' (ConvTranspose): input 0 has rank 2, expected at least 3 (N, C, "
              "spatial...)");
  }
  {
    ModelBuilder b;
    b.Input("x", {1, 1, 4, 4});
    b.Init("w", {1, 1, 3}, std::vector<float>(3, 1.0f));
    b.Node("Conv", {"x", "w"}, {"y"}, "conv");
    SymbolicOutput(b, 4);
    auto g = Import(b);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'conv' (Conv): input 1 has rank 3, expected 4 (the rank of input 0)");
  }
  {
    // ConvInteger's shape inference segfaulted the same way (fuzz/seeds/onnx_import/
    // convinteger_rank_mismatch.onnx).
    ModelBuilder b;
    b.Input("x", {1, 1, 3}, "", onnx::TensorProto::UINT8);
    b.Input("w", {1, 1, 2, 2}, "", onnx::TensorProto::UINT8);
    b.Node("ConvInteger", {"x", "w"}, {"y"}, "convint");
    SymbolicOutput(b, 3);
    auto g = Import(b);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'convint' (ConvInteger): input 1 has rank 4, expected 3 (the rank of input 0)");
  }
  {
    ModelBuilder b;
    b.Input("x", {1, 1, 4, 4}, "", onnx::TensorProto::UINT8);
    b.Input("w", {1, 1, 3}, "", onnx::TensorProto::INT8);
    b.Node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "qconv");
    SymbolicOutput(b, 4);
    auto g = Import(b);
    EXPECT_EQ(std::string(g.status().message()),
              "node 'qconv' (QLinearConv): input 3 has rank 3, expected 4 (the rank of input 0)");
  }
}

// Kiln's own graph-IR ops (ops.def) are not ONNX ops: a model naming one gets the importer's
// "unsupported op", not the checker's error.
TEST(HostileModelTest, KilnInternalOpsAreUnsupportedOnnxOps) {
  for (const char* op : {"BoundMask", "LayoutTransform", "RuntimeCheck", "Mish"}) {
    ModelBuilder b;
    b.Input("x", {1});
    b.Input("y", {1});
    b.Node(op, {"x", "y"}, {"z"}, "n");
    SymbolicOutput(b, 1);
    auto g = Import(b);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented) << op;
    EXPECT_EQ(std::string(g.status().message()),
              absl::StrCat("node 'n' (", op, "): unsupported op '", op, "' (domain ai.onnx)"));
  }
}

// GRU with a rank-0 R read R's last dim (undefined behaviour; fuzz_onnx_import, seed
// fuzz/seeds/onnx_import/gru_rank0_r.onnx); W, R, B, P and the initial states are checked
// against the shapes the ONNX spec gives them.
TEST(HostileModelTest, RecurrentOperandShapesAreChecked) {
  {
    ModelBuilder b;
    b.Input("X", {6, 3, 3});
    b.Input("W", {1, 15, 3});
    b.Input("R", {});
    SetInt(b.Node("GRU", {"X", "W", "R"}, {"", "Y_h"}, "gru"), "hidden_size", 5);
    SymbolicOutput(b, 3);
    EXPECT_EQ(std::string(Import(b).status().message()),
              "node 'gru' (GRU): R has type f32[]; expected rank 3");
  }
  {
    ModelBuilder b;
    b.Input("X", {6, 3, 3});
    b.Input("W", {1, 15, 4});
    b.Input("R", {1, 15, 5});
    SetInt(b.Node("GRU", {"X", "W", "R"}, {"", "Y_h"}, "gru"), "hidden_size", 5);
    SymbolicOutput(b, 3);
    EXPECT_EQ(std::string(Import(b).status().message()),
              "node 'gru' (GRU): W has type f32[1,15,4]; expected [1,15,3] (hidden_size 5, 1 "
              "direction)");
  }
}

// ONNX 1.12's Gemm 6 -> 7 version adapter segfaulted on a B declared without a shape
// (fuzz_onnx_import; seed fuzz/seeds/onnx_import/legacy_gemm_unshaped_b.onnx).
TEST(HostileModelTest, LegacyGemmNeedsRank2Operands) {
  ModelBuilder b(/*opset=*/6);
  b.Input("a", {4, 3});
  b.Input("b", {});
  b.Input("c", {1, 5});
  b.Node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  SymbolicOutput(b, 2);
  auto g = Import(b);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(g.status().message()),
            "node 'gemm' (Gemm): input 1 ('b') has rank 0; upgrading opset 6 needs rank 2");
}

// ONNX 1.12's LayerNormalization shape inference segfaulted on a rank-0 X with the default axis
// (fuzz_onnx_import; seed fuzz/seeds/onnx_import/layernorm_rank0_x.onnx).
TEST(HostileModelTest, LayerNormAxisIsCheckedAgainstTheDeclaredRank) {
  ModelBuilder b(/*opset=*/17);
  b.Input("X", {});
  b.Input("W", {5});
  b.Node("LayerNormalization", {"X", "W"}, {"Y"}, "ln");
  SymbolicOutput(b, 0);
  auto g = Import(b);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(g.status().message()),
            "node 'ln' (LayerNormalization): axis -1 is out of range for input 0 of rank 0");
}

// Range over constants whose element count is no int64 (it was typed f32[0]: a wrong artifact),
// and OneHot with a NaN depth (an undefined float-to-int conversion).
TEST(HostileModelTest, CountsFromFloatConstantsAreChecked) {
  {
    ModelBuilder b;
    b.Init("start", {}, {0.0f});
    b.Init("limit", {}, {1e30f});
    b.Init("delta", {}, {1.0f});
    b.Node("Range", {"start", "limit", "delta"}, {"y"}, "range");
    SymbolicOutput(b, 1);
    ExpectInvalid(Import(b).status(), {"node 'range' (Range): element count", "not an int64"});
  }
  {
    ModelBuilder b;
    b.Input("i", {2}, "", onnx::TensorProto::INT64);
    b.Init("depth", {}, {std::nanf("")});
    b.Init("values", {2}, {0.0f, 1.0f});
    b.Node("OneHot", {"i", "depth", "values"}, {"y"}, "onehot");
    SymbolicOutput(b, 2);
    ExpectInvalid(Import(b).status(),
                  {"node 'onehot' (OneHot): depth nan is not a non-negative int64"});
  }
}

TEST(HostileModelTest, SizeBudget) {
  constexpr int64_t kBudget = 1024;
  {
    ModelBuilder b;  // a graph input
    b.Input("x", {512});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y", {512});
    EXPECT_EQ(std::string(ImportWithBudget(b, kBudget).status().message()),
              "graph input 'x' has type f32[512]: takes 2048 bytes, more than the limit of 1024 "
              "(max_tensor_bytes)");
    EXPECT_TRUE(ImportWithBudget(b, 2048).ok());
  }
  {
    ModelBuilder b;  // an initializer (every value computed from it is small)
    b.Init("w", {512}, std::vector<float>(512, 1.0f));
    b.Node("ReduceSum", {"w"}, {"y"});
    b.Output("y", {1});
    EXPECT_EQ(std::string(ImportWithBudget(b, kBudget).status().message()),
              "tensor 'w' has type f32[512]: takes 2048 bytes, more than the limit of 1024 "
              "(max_tensor_bytes)");
  }
  {
    ModelBuilder b;  // a value the model computes
    b.Input("x", {4});
    b.InitI64("reps", {100});
    b.Node("Tile", {"x", "reps"}, {"y"}, "tile");
    b.Output("y", {400});
    ExpectInvalid(ImportWithBudget(b, kBudget).status(),
                  {"node 'tile' (Tile): output 0",
                   "f32[400]: takes 1600 bytes, more than the "
                   "limit of 1024 (max_tensor_bytes)"});
  }
  {
    ModelBuilder b;  // a filled constant
    b.InitI64("shape", {1000});
    b.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
    b.Output("y", {1000});
    ExpectInvalid(ImportWithBudget(b, kBudget).status(),
                  {"node 'fill' (ConstantOfShape): output 0", "takes 4000 bytes"});
  }
}

}  // namespace
}  // namespace kiln::importer
