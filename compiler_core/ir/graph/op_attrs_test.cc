// Tests of the typed attribute schema (op_attrs.def): defaults, decoding, the checks Parse and
// VerifyAttrs make (kinds, enum spellings, 0/1 flags, undeclared and missing required
// attributes) with their exact errors, and the consistency of the schema table itself. That
// op_attrs.def agrees with ONNX's schemas (every attribute, kind, default, required) is checked
// by kiln-op-table (ctest docs_operators_table).
#include "compiler_core/ir/graph/op_attrs.h"

#include <set>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(OpAttrsTest, AbsentAttributesReadAsTheirOnnxDefaults) {
  const ConvAttrs conv = ConvAttrs::From(AttrMap{});
  EXPECT_EQ(conv.group, 1);
  EXPECT_EQ(conv.auto_pad, AutoPad::kNotSet);
  EXPECT_EQ(conv.quant, Quant::kNone);
  EXPECT_THAT(conv.strides, IsEmpty());
  const ResizeAttrs resize = ResizeAttrs::From(AttrMap{});
  EXPECT_EQ(resize.coordinate_transformation_mode, CoordinateTransform::kHalfPixel);
  EXPECT_EQ(resize.nearest_mode, NearestMode::kRoundPreferFloor);
  EXPECT_FLOAT_EQ(resize.cubic_coeff_a, -0.75f);
  EXPECT_FALSE(resize.exclude_outside);
  EXPECT_FLOAT_EQ(SeluAttrs::From(AttrMap{}).gamma, 1.05070102214813232421875f);
  EXPECT_THAT(MeanVarianceNormalizationAttrs::From(AttrMap{}).axes, ElementsAre(0, 2, 3));
  EXPECT_FALSE(ShapeAttrs::From(AttrMap{}).end.has_value());
  EXPECT_TRUE(ReduceAttrs::From(AttrMap{}).keepdims);
  EXPECT_EQ(LoopAttrs::From(AttrMap{}).scan_length, -1);
}

TEST(OpAttrsTest, PresentAttributesDecodeTyped) {
  AttrMap m;
  m.Set("group", int64_t{32});
  m.Set("auto_pad", std::string("SAME_LOWER"));
  m.Set("strides", std::vector<int64_t>{2, 2});
  m.Set("quant", std::string("u8s8"));
  const ConvAttrs conv = ConvAttrs::From(m);
  EXPECT_EQ(conv.group, 32);
  EXPECT_EQ(conv.auto_pad, AutoPad::kSameLower);
  EXPECT_THAT(conv.strides, ElementsAre(2, 2));
  EXPECT_EQ(conv.quant, Quant::kU8S8);
  EXPECT_EQ(AttrEnumName(conv.auto_pad), "SAME_LOWER");

  AttrMap shape;
  shape.Set("end", int64_t{-1});
  EXPECT_EQ(ShapeAttrs::From(shape).end, -1);
  AttrMap gemm;
  gemm.Set("transB", int64_t{1});
  gemm.Set("alpha", int64_t{2});  // an INT where ONNX declares FLOAT reads as the float
  EXPECT_TRUE(GemmAttrs::From(gemm).transB);
  EXPECT_FLOAT_EQ(GemmAttrs::From(gemm).alpha, 2.0f);
}

TEST(OpAttrsTest, ParseNamesTheAttributeItsValueAndWhatIsAllowed) {
  AttrMap pad;
  pad.Set("mode", std::string("wrap"));
  EXPECT_EQ(PadAttrs::Parse(pad, "node 'p' (Pad): ").status().message(),
            "node 'p' (Pad): attribute 'mode' is \"wrap\"; expected one of constant, reflect, "
            "edge");
  AttrMap conv;
  conv.Set("group", 2.0f);
  EXPECT_EQ(ConvAttrs::Parse(conv, "node 'c' (Conv): ").status().message(),
            "node 'c' (Conv): attribute 'group' is float; expected int");
  AttrMap quant;
  quant.Set("quant", std::string("s4"));
  EXPECT_EQ(ConvAttrs::Parse(quant, "").status().message(),
            "attribute 'quant' is \"s4\"; expected one of \"\", u8, u8s8");
  AttrMap flag;
  flag.Set("keepdims", int64_t{2});
  EXPECT_EQ(ReduceAttrs::Parse(flag, "").status().message(),
            "attribute 'keepdims' is 2; expected 0 or 1");
  AttrMap good;
  good.Set("mode", std::string("edge"));
  absl::StatusOr<PadAttrs> parsed = PadAttrs::Parse(good, "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->mode, PadMode::kEdge);
}

TEST(OpAttrsTest, NodesAreCheckedWhenTheirTypesAreInferred) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kFloat32, {2, 3}});
  AttrMap typo;
  typo.Set("axsi", int64_t{1});
  Node* softmax = g.AddNode(OpKind::kSoftmax, "s", {x}, {x->type()}, typo);
  EXPECT_EQ(VerifyAttrs(*softmax).message(),
            "node 's' (Softmax): attribute 'axsi' is not an attribute of Softmax (it has axis)");
  EXPECT_EQ(InferOutputTypes(*softmax).status().message(), VerifyAttrs(*softmax).message());

  AttrMap none;
  none.Set("alpha", 1.0f);
  Node* relu = g.AddNode(OpKind::kRelu, "r", {x}, {x->type()}, none);
  EXPECT_EQ(VerifyAttrs(*relu).message(),
            "node 'r' (Relu): attribute 'alpha' is not an attribute of Relu (it has none)");

  Node* concat = g.AddNode(OpKind::kConcat, "c", {x, x}, {TensorType{DType::kFloat32, {4, 3}}});
  EXPECT_EQ(InferOutputTypes(*concat).status().message(),
            "node 'c' (Concat): missing attribute 'axis'");
  concat->attrs().Set("axis", int64_t{0});
  ASSERT_TRUE(InferOutputTypes(*concat).ok());
  EXPECT_EQ((*InferOutputTypes(*concat))[0], (TensorType{DType::kFloat32, {4, 3}}));
  EXPECT_EQ(ConcatAttrs::Parse(AttrMap{}, "node 'c' (Concat): ").status().message(),
            "node 'c' (Concat): missing attribute 'axis'");

  AttrMap common;  // the common set applies to every op
  common.Set("shape", std::vector<int64_t>{2, 3});
  Node* neg = g.AddNode(OpKind::kNeg, "n", {x}, {x->type()}, common);
  EXPECT_TRUE(VerifyAttrs(*neg).ok());
  EXPECT_THAT(CommonAttrs::Of(*neg).shape, ElementsAre(2, 3));
}

TEST(OpAttrsTest, EveryOpIsInAtMostOneSetAndEveryDefaultIsASpelling) {
  const std::vector<AttrSetSpec>& schema = AttrSchema();
  ASSERT_FALSE(schema.empty());
  EXPECT_STREQ(schema.front().name, "Common");
  EXPECT_THAT(schema.front().ops, IsEmpty());
  std::set<OpKind> seen;
  for (const AttrSetSpec& set : schema) {
    std::set<std::string> names;
    for (OpKind op : set.ops) {
      EXPECT_TRUE(seen.insert(op).second) << OpName(op) << " is in two sets";
      EXPECT_EQ(AttrSetOf(op), &set);
    }
    for (const AttrSpec& a : set.attrs) {
      EXPECT_TRUE(names.insert(a.name).second) << set.name << "." << a.name << " twice";
      if (a.required) {
        EXPECT_FALSE(a.default_value.has_value()) << set.name << "." << a.name;
        continue;
      }
      if (a.kind != AttrKind::kEnum) continue;
      // The default names an enumerator whose index is within the spellings.
      EXPECT_EQ(std::string(a.default_text).rfind('k', 0), 0u) << set.name << "." << a.name;
    }
  }
  EXPECT_EQ(AttrSetOf(OpKind::kRelu), nullptr);
  EXPECT_STREQ(AttrSetOf(OpKind::kAveragePool)->name, "Pool");
  EXPECT_STREQ(AttrSetOf(OpKind::kConvTranspose)->name, "Conv");
}

#ifdef KILN_CHECK_ATTR_SETS
// Sanitizer builds abort when code reads a node through another op's struct.
TEST(OpAttrsDeathTest, ReadingThroughAnotherOpsSetAborts) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kFloat32, {2, 3}});
  Node* relu = g.AddNode(OpKind::kRelu, "r", {x}, {x->type()});
  EXPECT_DEATH(ConvAttrs::Of(*relu),
               "node 'r' \\(Relu\\): attributes read as ConvAttrs; its op's set is none");
  EXPECT_THAT(CommonAttrs::Of(*relu).shape, IsEmpty());  // the common set fits every op
}
#endif

TEST(OpAttrsTest, TransposeWithoutPermReversesTheAxes) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kFloat32, {2, 3, 4}});
  Node* t = g.AddNode(OpKind::kTranspose, "t", {x}, {TensorType{DType::kFloat32, {4, 3, 2}}});
  EXPECT_THAT(TransposePermutation(*t), ElementsAre(2, 1, 0));
  t->attrs().Set("perm", std::vector<int64_t>{1, 0, 2});
  EXPECT_THAT(TransposePermutation(*t), ElementsAre(1, 0, 2));
}

TEST(OpAttrsTest, OrFillGivesRankDependentDefaults) {
  EXPECT_THAT(OrFill({}, 3, 1), ElementsAre(1, 1, 1));
  EXPECT_THAT(OrFill({2, 2}, 2, 1), ElementsAre(2, 2));
  EXPECT_THAT(OrFill({}, 0, 1), IsEmpty());
}

}  // namespace
}  // namespace kiln::graph
