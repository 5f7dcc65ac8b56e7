// Tests for the graph IR parser: print → parse → print round trips, and error locations.
#include "compiler_core/ir/graph/parser.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler_core/ir/graph/printer.h"

namespace kiln::graph {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<Tensor> F32(std::vector<int64_t> shape, std::vector<float> values) {
  auto t = Tensor::Zeros(TensorType{DType::kFloat32, std::move(shape)});
  std::memcpy(t->bytes.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::string RoundTrip(const Graph& graph) {
  std::string printed = PrintGraph(graph);
  auto parsed = ParseGraph(printed);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << printed;
  if (!parsed.ok()) return "";
  std::string reprinted = PrintGraph(**parsed);
  EXPECT_EQ(reprinted, printed);
  return reprinted;
}

TEST(ParserTest, RoundTripsConvBlockWithAttributesAndGroups) {
  Graph g;
  g.set_name("conv_block");
  Value* x = g.AddInput("x", TensorType{DType::kFloat32, {1, 2, 4, 4}});
  Value* w = g.AddConstant("w", F32({2, 2, 1, 1}, {1.0f, 0.1f, -2.5f, 1e-7f}));
  Value* b = g.AddConstant("b", F32({2}, {0.5f, 0.5f}));
  AttrMap conv_attrs;
  conv_attrs.Set("dilations", std::vector<int64_t>{1, 1});
  conv_attrs.Set("group", int64_t{1});
  conv_attrs.Set("kernel_shape", std::vector<int64_t>{1, 1});
  conv_attrs.Set("pads", std::vector<int64_t>{0, 0, 0, 0});
  conv_attrs.Set("strides", std::vector<int64_t>{1, 1});
  TensorType t{DType::kFloat32, {1, 2, 4, 4}};
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {t}, conv_attrs);
  conv->set_fusion_group(0);
  AttrMap leaky;
  leaky.Set("alpha", 0.01f);
  Node* relu = g.AddNode(OpKind::kLeakyRelu, "relu", {conv->output(0)}, {t}, leaky);
  relu->set_fusion_group(0);
  AttrMap pool;
  pool.Set("auto_pad", std::string("NOTSET"));
  pool.Set("kernel_shape", std::vector<int64_t>{2, 2});
  Node* mp = g.AddNode(OpKind::kMaxPool, "pool", {relu->output(0)},
                       {TensorType{DType::kFloat32, {1, 2, 2, 2}},
                        TensorType{DType::kInt64, {1, 2, 2, 2}}},
                       pool);
  mp->set_fusion_group(1);
  mp->output(0)->set_name("y");
  mp->output(1)->set_name("indices");
  g.SetOutputs({mp->output(0), mp->output(1)});

  std::string text = RoundTrip(g);
  EXPECT_EQ(text,
            "graph @conv_block(%0 \"x\": f32[1,2,4,4]) -> (%5 \"y\", %6 \"indices\") {\n"
            "  %1 = const f32[2,2,1,1] dense<[1.0,0.10000000149011612,-2.5,"
            "1.0000000116860974e-07]>\n"
            "  %2 = const f32[2] splat<0.5>\n"
            "  %3 = Conv(%0, %1, %2) {dilations=[1,1], group=1, kernel_shape=[1,1], "
            "pads=[0,0,0,0], strides=[1,1]} : f32[1,2,4,4] group=0\n"
            "  %4 = LeakyRelu(%3) {alpha=0.01} : f32[1,2,4,4] group=0\n"
            "  %5, %6 = MaxPool(%4) {auto_pad=\"NOTSET\", kernel_shape=[2,2]} : f32[1,2,2,2], "
            "i64[1,2,2,2] group=1\n"
            "  return %5, %6\n"
            "}\n");
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok());
  const Tensor& w_parsed = *(*parsed)->constants()[0]->constant();
  EXPECT_EQ(w_parsed.data<float>()[1], 0.1f);
  EXPECT_EQ(w_parsed.data<float>()[3], 1e-7f);
  EXPECT_EQ((*parsed)->nodes()[0]->name(), "%3");
  EXPECT_EQ((*parsed)->nodes()[1]->attrs().GetFloat("alpha", 0), 0.01f);
}

TEST(ParserTest, RoundTripsDTypesSpecialFloatsAndOptionalInputs) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kFloat32, {3}});
  Value* lo = g.AddConstant("lo", F32({}, {-std::numeric_limits<float>::infinity()}));
  auto nan_t = F32({3}, {std::nanf(""), -0.0f, 3.0e38f});
  Value* nanc = g.AddConstant("n", nan_t);
  auto i8 = Tensor::Zeros(TensorType{DType::kInt8, {2}});
  i8->mutable_data<int8_t>()[0] = -128;
  i8->mutable_data<int8_t>()[1] = 127;
  Value* c8 = g.AddConstant("i8", i8);
  auto u64 = Tensor::Zeros(TensorType{DType::kUInt64, {1}});
  u64->mutable_data<uint64_t>()[0] = std::numeric_limits<uint64_t>::max();
  Value* cu = g.AddConstant("u64", u64);
  auto f16 = Tensor::Zeros(TensorType{DType::kFloat16, {2}});
  f16->mutable_data<uint16_t>()[0] = FloatToHalf(0.333f);
  f16->mutable_data<uint16_t>()[1] = FloatToHalf(-65504.0f);
  Value* ch = g.AddConstant("f16", f16);
  auto bools = Tensor::Zeros(TensorType{DType::kBool, {3}});
  bools->mutable_data<uint8_t>()[1] = 1;
  Value* cb = g.AddConstant("b", bools);
  auto empty = Tensor::Zeros(TensorType{DType::kInt64, {0}});
  Value* ce = g.AddConstant("e", empty);
  TensorType t{DType::kFloat32, {3}};
  Node* clip = g.AddNode(OpKind::kClip, "clip", {x, lo, nullptr}, {t});
  Node* add = g.AddNode(OpKind::kAdd, "add", {clip->output(0), nanc}, {t});
  AttrMap fl;
  fl.Set("floats", std::vector<float>{1.0f, std::numeric_limits<float>::infinity(), 1e-5f});
  fl.Set("ints", std::vector<int64_t>{-1, 0, 9223372036854775807});
  fl.Set("empty", std::vector<int64_t>{});
  fl.Set("eps", 1e-5f);
  fl.Set("neg", int64_t{-3});
  Node* sum = g.AddNode(OpKind::kSum, "sum", {add->output(0), c8, cu, ch, cb, ce}, {t}, fl);
  sum->output(0)->set_name("out");
  g.SetOutputs({sum->output(0), x});
  std::string text = RoundTrip(g);
  EXPECT_THAT(text, HasSubstr("%1 = const f32[] dense<[-inf]>"));
  EXPECT_THAT(text, HasSubstr("dense<[nan,-0.0,3.0000000054977558e+38]>"));
  EXPECT_THAT(text, HasSubstr("%3 = const i8[2] dense<[-128,127]>"));
  EXPECT_THAT(text, HasSubstr("%4 = const u64[1] dense<[18446744073709551615]>"));
  EXPECT_THAT(text, HasSubstr("%6 = const bool[3] dense<[0,1,0]>"));
  EXPECT_THAT(text, HasSubstr("%7 = const i64[0] dense<[]>"));
  EXPECT_THAT(text, HasSubstr("Clip(%0, %1, _)"));
  EXPECT_THAT(text, HasSubstr("{empty=[], eps=1e-05, floats=[1.0,inf,1e-05], "
                              "ints=[-1,0,9223372036854775807], neg=-3}"));
  EXPECT_THAT(text, HasSubstr("-> (%10 \"out\", %0 \"x\")"));
}

TEST(ParserTest, ParsesHandWrittenTextWithCommentsAndAnyNumbering) {
  auto parsed = ParseGraph(
      "// Test case: comments are skipped.\n"
      "graph @g(%a \"x\": f32[2]) -> (%r \"y\") {  // trailing comment\n"
      "  %c = const f32[2] dense<[1, 2]>\n"
      "  // a full-line comment\n"
      "  %r = Mul(%a, %c) : f32[2]\n"
      "  return %r\n"
      "}\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(PrintGraph(**parsed),
            "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
            "  %1 = const f32[2] dense<[1.0,2.0]>\n"
            "  %2 = Mul(%0, %1) : f32[2]\n"
            "  return %2\n"
            "}\n");
}

TEST(ParserTest, RoundTripsEmptyGraph) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kInt32, {}});
  g.SetOutputs({x});
  EXPECT_EQ(RoundTrip(g), "graph @main(%0 \"x\": i32[]) -> (%0 \"x\") {\n  return %0\n}\n");
}

struct ErrorCase {
  std::string text;
  std::string message;  // expected, including "LINE:COL: "
};

class ParserErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrorTest, ReportsLocation) {
  auto parsed = ParseGraph(GetParam().text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), GetParam().message);
}

constexpr char kHeader[] = "graph @g(%0 \"x\": f32[2]) -> (%1 \"y\") {\n";

INSTANTIATE_TEST_SUITE_P(
    Errors, ParserErrorTest,
    ::testing::Values(
        ErrorCase{std::string(kHeader) + "  %1 = Frobnicate(%0) : f32[2]\n  return %1\n}\n",
                  "2:8: unknown op 'Frobnicate'"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%7) : f32[2]\n  return %1\n}\n",
                  "2:13: use of undefined value %7"},
        ErrorCase{std::string(kHeader) + "  %1 = const f32[32] sha256:0123456789abcdef\n"
                                         "  return %1\n}\n",
                  "2:22: constant %1 is elided (sha256 digest) and cannot be parsed; write its "
                  "elements with dense<[...]> or splat<...>"},
        ErrorCase{std::string(kHeader) + "  %1 = const f32[3] dense<[1.0, 2.0]>\n  return %1\n}\n",
                  "2:36: constant %1 has 2 elements, type f32[3] needs 3"},
        // Sizes are checked before storage is allocated (found by fuzz_graph_parser).
        ErrorCase{std::string(kHeader) + "  %1 = const f32[1644444444444444] splat<1.0>\n"
                                         "  return %1\n}\n",
                  "2:14: constant %1 of type f32[1644444444444444] is larger than the "
                  "268435456 bytes a parsed constant may have"},
        ErrorCase{std::string(kHeader) + "  %1 = const f32[4294967296,4294967296] splat<1.0>\n"
                                         "  return %1\n}\n",
                  "2:14: constant %1 of type f32[4294967296,4294967296] is larger than the "
                  "268435456 bytes a parsed constant may have"},
        ErrorCase{std::string(kHeader) + "  %1 = const f32[1000000] dense<[1.0, 2.0]>\n"
                                         "  return %1\n}\n",
                  "2:27: constant %1 of type f32[1000000] needs 1000000 elements; the text has "
                  "fewer"},
        ErrorCase{std::string(kHeader) + "  %1 = const i8[1] dense<[300]>\n  return %1\n}\n",
                  "2:27: 300 does not fit in i8"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) : q8[2]\n  return %1\n}\n",
                  "2:19: unknown element type 'q8'"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) : f32[2]\n  %1 = Relu(%0) : f32[2]\n"
                                         "  return %1\n}\n",
                  "3:3: value %1 is defined twice"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) {t=tensor<f32[1] sha256:00>} : f32[2]\n"
                                         "  return %1\n}\n",
                  "2:20: tensor attributes are printed as digests and cannot be parsed"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) f32[2]\n  return %1\n}\n",
                  "2:17: expected ':', got 'f32'"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) : f32[2]\n  return %0\n}\n",
                  "3:10: return value 0 is %0 but the signature declares %1"},
        ErrorCase{std::string(kHeader) + "  %1 = Relu(%0) : f32[2]\n",
                  "3:1: expected 'return', got end of input"},
        ErrorCase{"graph @g() -> () {\n  return\n} $", "3:3: unexpected character '$'"},
        ErrorCase{"graph @g(%0 \"x: f32[2]) -> () {}", "1:13: unterminated string"}));

}  // namespace
}  // namespace kiln::graph
