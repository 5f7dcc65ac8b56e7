// Tests of the per-op type and shape rules and of the verifier.
#include "compiler_core/ir/graph/shape_rules.h"

#include <memory>

#include "compiler_core/ir/graph/tensor_op_rules.h"
#include "compiler_core/ir/graph/verifier.h"
#include "gtest/gtest.h"

namespace kiln::graph {
namespace {

using Shape = std::vector<int64_t>;

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

std::shared_ptr<const Tensor> I64(const std::vector<int64_t>& v) {
  auto t = Tensor::Zeros(TensorType{DType::kInt64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t->mutable_data<int64_t>()[i] = v[i];
  return t;
}

// Builds a one-node graph and returns the inferred types.
absl::StatusOr<std::vector<TensorType>> Infer(Graph& g, OpKind op, std::vector<Value*> inputs,
                                              AttrMap attrs = {}, int num_outputs = 1) {
  Node* n = g.AddNode(op, "n", std::move(inputs), std::vector<TensorType>(num_outputs), attrs);
  return InferOutputTypes(*n);
}

TEST(BroadcastShapesTest, Rules) {
  EXPECT_EQ(*BroadcastShapes({2, 3}, {3}), (Shape{2, 3}));
  EXPECT_EQ(*BroadcastShapes({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(*BroadcastShapes({}, {5}), (Shape{5}));
  EXPECT_EQ(BroadcastShapes({2, 3}, {4, 5}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeRulesTest, AddMismatchNamesNode) {
  Graph g;
  auto r = Infer(g, OpKind::kAdd, {g.AddInput("a", F32({2, 3})), g.AddInput("b", F32({4, 5}))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("node 'n' (Add)"), std::string::npos);
}

TEST(ShapeRulesTest, Conv) {
  Graph g;
  AttrMap a;
  a.Set("kernel_shape", Shape{3, 3});
  a.Set("strides", Shape{2, 2});
  a.Set("pads", Shape{1, 1, 1, 1});
  a.Set("dilations", Shape{1, 1});
  a.Set("group", int64_t{1});
  auto r = Infer(g, OpKind::kConv,
                 {g.AddInput("x", F32({1, 3, 224, 224})), g.AddInput("w", F32({64, 3, 3, 3})),
                  g.AddInput("b", F32({64}))},
                 a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({1, 64, 112, 112}));
  Graph g2;
  auto bad = Infer(g2, OpKind::kConv,
                   {g2.AddInput("x", F32({1, 3, 8, 8})), g2.AddInput("w", F32({4, 3, 3}))});
  EXPECT_EQ(bad.status().message(), "node 'n' (Conv): input 1 has rank 3, expected 4");
}

TEST(ShapeRulesTest, GroupedConv1dDilated) {
  Graph g;
  AttrMap a;
  a.Set("group", int64_t{2});
  a.Set("dilations", Shape{2});
  auto r = Infer(g, OpKind::kConv, {g.AddInput("x", F32({1, 4, 10})),
                                    g.AddInput("w", F32({6, 2, 3}))}, a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({1, 6, 6}));
}

TEST(ShapeRulesTest, PoolCeilMode) {
  Graph g;
  AttrMap a;
  a.Set("kernel_shape", Shape{3, 3});
  a.Set("strides", Shape{2, 2});
  a.Set("ceil_mode", int64_t{1});
  auto r = Infer(g, OpKind::kMaxPool, {g.AddInput("x", F32({1, 64, 112, 112}))}, a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({1, 64, 56, 56}));
  Graph g2;
  a.Set("ceil_mode", int64_t{0});
  r = Infer(g2, OpKind::kAveragePool, {g2.AddInput("x", F32({1, 64, 112, 112}))}, a);
  EXPECT_EQ((*r)[0], F32({1, 64, 55, 55}));
}

TEST(ShapeRulesTest, GemmAndMatMul) {
  Graph g;
  AttrMap a;
  a.Set("transB", int64_t{1});
  auto r = Infer(g, OpKind::kGemm, {g.AddInput("a", F32({1, 784})),
                                    g.AddInput("b", F32({512, 784})), g.AddInput("c", F32({512}))},
                 a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({1, 512}));
  Graph g2;
  r = Infer(g2, OpKind::kMatMul, {g2.AddInput("a", F32({2, 1, 3, 4})),
                                  g2.AddInput("b", F32({5, 4, 6}))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({2, 5, 3, 6}));
  Graph g3;
  r = Infer(g3, OpKind::kMatMul, {g3.AddInput("a", F32({4})), g3.AddInput("b", F32({4, 6}))});
  EXPECT_EQ((*r)[0], F32({6}));
}

TEST(ShapeRulesTest, DataMovement) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 4}));
  AttrMap none;
  auto r = Infer(g, OpKind::kReshape, {x, g.AddConstant("s", I64({0, -1}))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], F32({2, 12}));
  AttrMap fa;
  fa.Set("axis", int64_t{2});
  EXPECT_EQ((*Infer(g, OpKind::kFlatten, {x}, fa))[0], F32({6, 4}));
  AttrMap tp;
  tp.Set("perm", Shape{2, 0, 1});
  EXPECT_EQ((*Infer(g, OpKind::kTranspose, {x}, tp))[0], F32({4, 2, 3}));
  EXPECT_EQ((*Infer(g, OpKind::kUnsqueeze, {x, g.AddConstant("ax", I64({0, 4}))}))[0],
            F32({1, 2, 3, 4, 1}));
  Value* y = g.AddInput("y", F32({1, 3, 1}));
  EXPECT_EQ((*Infer(g, OpKind::kSqueeze, {y, g.AddConstant("ax2", I64({2}))}))[0], F32({1, 3}));
  EXPECT_EQ((*Infer(g, OpKind::kPad, {x, g.AddConstant("p", I64({0, 1, 2, 0, 1, 0}))}))[0],
            F32({2, 5, 6}));
  AttrMap ca;
  ca.Set("axis", int64_t{1});
  EXPECT_EQ((*Infer(g, OpKind::kConcat, {x, x}, ca))[0], F32({2, 6, 4}));
  EXPECT_EQ((*Infer(g, OpKind::kShape, {x}))[0], (TensorType{DType::kInt64, {3}}));
  Value* idx = g.AddInput("i", TensorType{DType::kInt64, {5, 2}});
  EXPECT_EQ((*Infer(g, OpKind::kGather, {x, idx}, ca))[0], F32({2, 5, 2, 4}));
  auto s = Infer(g, OpKind::kSlice,
                 {x, g.AddConstant("st", I64({-1, 0})), g.AddConstant("en", I64({-100, 4})),
                  g.AddConstant("ax", I64({2, 1})), g.AddConstant("sp", I64({-2, 2}))});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0], F32({2, 2, 2}));
}

TEST(ShapeRulesTest, NonConstantShapeIsUnimplemented) {
  Graph g;
  auto r = Infer(g, OpKind::kReshape,
                 {g.AddInput("x", F32({6})), g.AddInput("s", TensorType{DType::kInt64, {2}})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ShapeRulesTest, DetGridSampleRoiAlign) {
  Graph g;
  auto det = Infer(g, OpKind::kDet, {g.AddInput("m", F32({4, 3, 3}))});
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ((*det)[0], F32({4}));
  EXPECT_FALSE(Infer(g, OpKind::kDet, {g.AddInput("r", F32({3, 2}))}).ok());
  AttrMap gs;
  gs.Set("mode", std::string("bicubic"));
  auto grid = Infer(g, OpKind::kGridSample,
                    {g.AddInput("x", F32({2, 3, 8, 9})), g.AddInput("g", F32({2, 4, 5, 2}))}, gs);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ((*grid)[0], F32({2, 3, 4, 5}));
  gs.Set("padding_mode", std::string("wrap"));
  auto bad = Infer(g, OpKind::kGridSample,
                   {g.AddInput("x2", F32({2, 3, 8, 9})), g.AddInput("g2", F32({2, 4, 5, 2}))}, gs);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "node 'n' (GridSample): attribute 'padding_mode' is \"wrap\"; expected one of zeros, "
            "border, reflection");
  AttrMap ra;
  ra.Set("output_height", int64_t{3});
  ra.Set("output_width", int64_t{2});
  auto roi = Infer(g, OpKind::kRoiAlign,
                   {g.AddInput("x3", F32({1, 5, 8, 8})), g.AddInput("rois", F32({7, 4})),
                    g.AddInput("b", TensorType{DType::kInt64, {7}})},
                   ra);
  ASSERT_TRUE(roi.ok()) << roi.status();
  EXPECT_EQ((*roi)[0], F32({7, 5, 3, 2}));
}

TEST(VerifierTest, AcceptsAndRejects) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* relu = g.AddNode(OpKind::kRelu, "relu", {x}, {F32({2, 3})});
  g.SetOutputs({relu->output(0)});
  EXPECT_TRUE(VerifyGraph(g).ok());
  Node* bad = g.AddNode(OpKind::kRelu, "relu2", {relu->output(0)}, {F32({3, 2})});
  g.SetOutputs({bad->output(0)});
  absl::Status s = VerifyGraph(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'relu2' (Relu): output 0 has type f32[3,2], expected f32[2,3]");
}

TEST(VerifierTest, UseBeforeDefinition) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* a = g.AddNode(OpKind::kRelu, "a", {x}, {F32({2})});
  Node* b = g.InsertNodeBefore(a, OpKind::kNeg, "b", {a->output(0)}, {F32({2})});
  g.SetOutputs({b->output(0)});
  absl::Status s = VerifyGraph(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("node 'b' (Neg)"), std::string::npos);
}

// Shape arithmetic over attribute and constant values is overflow-checked: a wrapped product or
// sum could pass a check and type a tensor wrongly (f32[4] reshaped to [2^62+1, 4], whose
// element count wraps to 4), or divide by zero (blocksize^2 wrapping to 0).
TEST(ShapeRulesTest, OverflowingShapeArithmeticIsInvalid) {
  auto message = [](const absl::StatusOr<std::vector<TensorType>>& r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    return std::string(r.status().message());
  };
  constexpr int64_t kHuge = int64_t{1} << 62;
  Graph g;
  Value* x4 = g.AddInput("x", F32({4}));
  EXPECT_EQ(message(Infer(g, OpKind::kReshape, {x4, g.AddConstant("s", I64({kHuge + 1, 4}))})),
            "node 'n' (Reshape): cannot reshape f32[4] to [4611686018427387905,4]: its element "
            "count overflows int64");
  EXPECT_EQ(message(Infer(g, OpKind::kTile, {x4, g.AddConstant("r", I64({kHuge}))})),
            "node 'n' (Tile): tiled dim 0 overflows int64");
  EXPECT_EQ(message(Infer(g, OpKind::kPad, {x4, g.AddConstant("p", I64({INT64_MAX, INT64_MAX}))})),
            "node 'n' (Pad): padded dim 0 overflows int64");
  Value* x = g.AddInput("x4d", F32({1, 4, 8, 8}));
  AttrMap block;
  block.Set("blocksize", int64_t{1} << 32);
  EXPECT_EQ(message(Infer(g, OpKind::kDepthToSpace, {x}, block)),
            "node 'n' (DepthToSpace): blocksize^2 overflows int64");
  AttrMap conv;
  conv.Set("dilations", Shape{kHuge, 1});
  EXPECT_EQ(message(Infer(g, OpKind::kConv, {x, g.AddInput("w", F32({2, 4, 3, 3}))}, conv)),
            "node 'n' (Conv): window of spatial dim 0 overflows int64");
  AttrMap pads;
  pads.Set("pads", Shape{INT64_MAX, 0, 1, 0});
  pads.Set("kernel_shape", Shape{2, 2});
  EXPECT_EQ(message(Infer(g, OpKind::kMaxPool, {x}, pads)),
            "node 'n' (MaxPool): padded input of spatial dim 0 overflows int64");
  AttrMap group;
  group.Set("group", int64_t{1} << 62);
  EXPECT_EQ(message(Infer(g, OpKind::kConv, {x, g.AddInput("w4", F32({4, 4, 3, 3}))}, group)),
            "node 'n' (Conv): input channels 4 do not match weight f32[4,4,3,3] with group "
            "4611686018427387904");
  AttrMap transposed;
  transposed.Set("strides", Shape{kHuge, 1});
  EXPECT_EQ(message(Infer(g, OpKind::kConvTranspose, {x, g.AddInput("wt", F32({4, 2, 3, 3}))},
                          transposed)),
            "node 'n' (ConvTranspose): output spatial dim 0 overflows int64");
  auto scalar = [&](const char* name, float v) {
    auto t = Tensor::Zeros(F32({}));
    *t->mutable_data<float>() = v;
    return g.AddConstant(name, t);
  };
  EXPECT_EQ(message(Infer(g, OpKind::kRange,
                          {scalar("start", 0), scalar("limit", 1e30f), scalar("delta", 1)})),
            "node 'n' (Range): element count ceil((1e+30 - 0) / 1) is not an int64");
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {

// fuzz_onnx_import found an output label byte 0xae indexing EinsumSpec::size out of bounds
// (fuzz/seeds/onnx_import/einsum_non_ascii_output_label.onnx).
TEST(EinsumTest, LabelsOutsideTheAlphabetAreRefused) {
  auto spec = ParseEinsum("...ii ->\xae..i", {{2, 3, 3}});
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), "bad output label '\xae' (byte 174)");
  EXPECT_EQ(ParseEinsum("ij->i5", {{2, 3}}).status().message(), "bad output label '5' (byte 53)");
  auto ok = ParseEinsum("...ii->...i", {{2, 3, 3}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->output, "9i");
}

TEST(EinsumTest, AnEllipsisOfMoreThanTenDimsIsRefused) {
  std::vector<int64_t> shape(12, 1);
  auto spec = ParseEinsum("...->...", {shape});
  EXPECT_EQ(spec.status().message(),
            "term '...': its ellipsis covers 12 dims; at most 10 are supported");
}

}  // namespace
}  // namespace kiln::graph
