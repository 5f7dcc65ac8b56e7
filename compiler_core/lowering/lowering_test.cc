// Numeric tests of lowering: each small graph is lowered, run with the loop IR interpreter and
// compared with the reference evaluator (or hand-computed values).
#include <cmath>
#include <random>

#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using testing::F32;
using testing::Floats;
using testing::FromFloats;
using testing::FromInts;
using testing::Random;
using testing::TensorPtr;
using testing::ValueMap;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorPtr Reference(const std::vector<const Node*>& nodes, const ValueMap& inputs) {
  ValueMap env = inputs;
  for (const Node* n : nodes) {
    std::vector<TensorPtr> ins;
    for (const Value* v : n->inputs()) {
      ins.push_back(v == nullptr ? nullptr : v->is_constant() ? v->constant() : env.at(v));
    }
    auto outs = reference::EvaluateNode(*n, ins);
    EXPECT_TRUE(outs.ok()) << outs.status();
    if (!outs.ok()) return nullptr;
    for (size_t k = 0; k < outs->size(); ++k) env[n->output(k)] = (*outs)[k];
  }
  return env.at(nodes.back()->output(0));
}

/// Lowers `nodes`, runs the kernel and compares with the reference evaluator.
void CheckGroup(const std::vector<const Node*>& nodes, const ValueMap& inputs) {
  auto kernel = LowerGroup(nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto got = testing::RunKernel(*kernel, inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << loop::PrintFunc(kernel->func);
  TensorPtr want = Reference(nodes, inputs);
  ASSERT_NE(want, nullptr);
  ASSERT_EQ((*got)->type, want->type);
  std::vector<float> g = Floats(**got), w = Floats(*want);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i])))
        << "element " << i << "\n" << loop::PrintFunc(kernel->func);
  }
}

AttrMap ConvAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                  std::vector<int64_t> pads, std::vector<int64_t> dilations, int64_t group) {
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("pads", pads);
  a.Set("dilations", dilations);
  a.Set("group", group);
  return a;
}

TEST(LowerConvTest, Stride2Pads) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3, 7, 7}));
  Value* w = g.AddConstant("w", Random(F32({4, 3, 3, 3}), 1));
  Value* b = g.AddConstant("b", Random(F32({4}), 2));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {F32({1, 4, 4, 4})},
                         ConvAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1));
  CheckGroup({conv}, {{x, Random(x->type(), 3)}});
}

TEST(LowerConvTest, GroupsAsymmetricPads) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 4, 5, 5}));
  Value* w = g.AddConstant("w", Random(F32({6, 2, 3, 3}), 4));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, nullptr}, {F32({2, 6, 4, 4})},
                         ConvAttrs({3, 3}, {1, 1}, {0, 1, 1, 0}, {1, 1}, 2));
  CheckGroup({conv}, {{x, Random(x->type(), 5)}});
}

TEST(LowerConvTest, DepthwiseDilated) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 4, 6, 6}));
  Value* w = g.AddConstant("w", Random(F32({4, 1, 3, 3}), 6));
  Value* b = g.AddConstant("b", Random(F32({4}), 7));
  Node* conv = g.AddNode(OpKind::kConv, "dw", {x, w, b}, {F32({1, 4, 6, 6})},
                         ConvAttrs({3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4));
  CheckGroup({conv}, {{x, Random(x->type(), 8)}});
}

TEST(LowerConvTest, Conv1dStridedDilated) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 10}));
  Value* w = g.AddConstant("w", Random(F32({3, 2, 3}), 9));
  Node* conv = g.AddNode(OpKind::kConv, "c1", {x, w}, {F32({1, 3, 2})},
                         ConvAttrs({3}, {3}, {0, 0}, {2}, 1));
  CheckGroup({conv}, {{x, Random(x->type(), 10)}});
}

TEST(LowerConvTest, Conv3d) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 4, 5, 5}));
  Value* w = g.AddConstant("w", Random(F32({3, 2, 2, 3, 3}), 15));
  Node* conv = g.AddNode(OpKind::kConv, "c3", {x, w}, {F32({1, 3, 3, 3, 3})},
                         ConvAttrs({2, 3, 3}, {1, 2, 2}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, 1));
  CheckGroup({conv}, {{x, Random(x->type(), 16)}});
}

TEST(LowerConvTest, FusedConvAddRelu) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3, 5, 5}));
  Value* r = g.AddInput("r", F32({1, 4, 5, 5}));
  Value* w = g.AddConstant("w", Random(F32({4, 3, 3, 3}), 11));
  Value* b = g.AddConstant("b", Random(F32({4}), 12));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {F32({1, 4, 5, 5})},
                         ConvAttrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  Node* add = g.AddNode(OpKind::kAdd, "add", {conv->output(0), r}, {F32({1, 4, 5, 5})});
  Node* relu = g.AddNode(OpKind::kRelu, "relu", {add->output(0)}, {F32({1, 4, 5, 5})});
  CheckGroup({conv, add, relu}, {{x, Random(x->type(), 13)}, {r, Random(r->type(), 14)}});
  auto kernel = LowerGroup({conv, add, relu}, "k");
  ASSERT_TRUE(kernel.ok());
  // Params: external inputs in first-use order, then the result.
  EXPECT_THAT(kernel->param_values, ElementsAre(x, w, b, r, relu->output(0)));
  EXPECT_EQ(kernel->func.params.back()->name, "out");
  EXPECT_THAT(loop::PrintFunc(kernel->func),
              HasSubstr("%out[epi.d0, epi.d1, epi.d2, epi.d3] = max((%out[epi.d0, epi.d1, epi.d2, "
                        "epi.d3] + %in3[0, epi.d1, epi.d2, epi.d3]), 0.0)"));
}

/// Random 32-bit words (each four random bytes) of `type` (i32).
TensorPtr RandomWords(const TensorType& type, unsigned seed) {
  std::mt19937 gen(seed);
  auto t = Tensor::Zeros(type);
  for (int64_t i = 0; i < type.NumElements(); ++i) t->mutable_data<uint32_t>()[i] = gen();
  return t;
}

// A u8s8 conv on packed words (NCHW8c: 2 words of 4 channels per block, zero point 5 as the
// padding word, bias) with a requantizing epilogue that changes the dtype twice (i32 → f32 →
// u8): the conv accumulates into an i32 workspace, the epilogue writes the u8 result. Exact.
TEST(LowerConvTest, U8S8ConvWithRequantizingEpilogue) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kInt32, {1, 2, 6, 6, 2}});
  Value* w = g.AddConstant("w", RandomWords({DType::kInt32, {3, 2, 3, 3, 2, 8}}, 21));
  auto bias = Tensor::Zeros({DType::kInt32, {24}});
  for (int i = 0; i < 24; ++i) bias->mutable_data<int32_t>()[i] = 1000 * i - 11000;
  Value* b = g.AddConstant("b", bias);
  AttrMap a = ConvAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
  a.Set("layout", std::string("NCHW8c"));
  a.Set("quant", std::string("u8s8"));
  a.Set("pad_value", int64_t{0x05050505});
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {{DType::kInt32, {1, 3, 3, 3, 8}}}, a);
  AttrMap to_f32, to_u8;
  to_f32.Set("to", int64_t{1});
  to_u8.Set("to", int64_t{2});
  Node* f = g.AddNode(OpKind::kCast, "f", {conv->output(0)}, {F32({1, 3, 3, 3, 8})}, to_f32);
  Value* scale = g.AddConstant("s", FromFloats(F32({}), {0.002f}));
  Value* lo = g.AddConstant("lo", FromFloats(F32({}), {0.0f}));
  Value* hi = g.AddConstant("hi", FromFloats(F32({}), {255.0f}));
  Node* mul = g.AddNode(OpKind::kMul, "mul", {f->output(0), scale}, {F32({1, 3, 3, 3, 8})});
  Node* clip = g.AddNode(OpKind::kClip, "clip", {mul->output(0), lo, hi}, {F32({1, 3, 3, 3, 8})});
  Node* q =
      g.AddNode(OpKind::kCast, "q", {clip->output(0)}, {{DType::kUInt8, {1, 3, 3, 3, 8}}}, to_u8);
  const std::vector<const Node*> nodes = {conv, f, mul, clip, q};
  const ValueMap inputs = {{x, RandomWords(x->type(), 22)}};
  auto kernel = LowerGroup(nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::string text = loop::PrintFunc(kernel->func);
  EXPECT_THAT(text, HasSubstr("dot4_u8s8(%xpad[n, icb, ((oh * 2) + kh), ((ow * 2) + kw), ic], "
                              "%in1[ocb, icb, kh, kw, ic, oc])"));
  EXPECT_THAT(text, HasSubstr("84215045:i32"));  // the padding word 0x05050505
  EXPECT_THAT(text, HasSubstr("workspace"));
  auto got = testing::RunKernel(*kernel, inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << text;
  TensorPtr want = Reference(nodes, inputs);
  ASSERT_NE(want, nullptr);
  ASSERT_EQ((*got)->type, want->type);
  EXPECT_EQ((*got)->bytes, want->bytes) << text;
  int nonzero = 0, saturated = 0;  // the values exercise the whole uint8 range
  for (uint8_t v : want->bytes) nonzero += v != 0, saturated += v == 255;
  EXPECT_GT(nonzero, 20);
  EXPECT_GT(saturated, 0);
}

// A depthwise "quant"="u8" conv: uint8 NCHW8c input padded with the zero point 9 (stride 2),
// int32 weights, bias; exact against the reference.
TEST(LowerConvTest, U8DepthwiseConv) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kUInt8, {1, 2, 7, 7, 8}});
  Value* w = g.AddConstant("w", RandomWords({DType::kInt32, {2, 1, 3, 3, 1, 8}}, 41));
  Value* b = g.AddConstant("b", RandomWords({DType::kInt32, {16}}, 42));
  AttrMap a = ConvAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 16);
  a.Set("layout", std::string("NCHW8c"));
  a.Set("quant", std::string("u8"));
  a.Set("pad_value", int64_t{9});
  Node* conv = g.AddNode(OpKind::kConv, "dw", {x, w, b}, {{DType::kInt32, {1, 2, 4, 4, 8}}}, a);
  auto in = Tensor::Zeros(x->type());
  for (int64_t i = 0; i < x->type().NumElements(); ++i) {
    in->mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i * 53 + 7);
  }
  const ValueMap inputs = {{x, in}};
  auto kernel = LowerGroup({conv}, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::string text = loop::PrintFunc(kernel->func);
  EXPECT_THAT(text, HasSubstr("9:u8"));  // the padding
  auto got = testing::RunKernel(*kernel, inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << text;
  TensorPtr want = Reference({conv}, inputs);
  ASSERT_NE(want, nullptr);
  EXPECT_EQ((*got)->bytes, want->bytes) << text;
}

// u8s8 MatMuls on packed words: B in panels of 32 with a tail panel (N = 70) under a batched A
// sharing it, and a plain B [K/4, N]; exact against the reference.
TEST(LowerMatMulTest, U8S8PackedAndPlain) {
  for (const bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "packed" : "plain");
    Graph g;
    const int64_t n = packed ? 70 : 9;
    Value* a = g.AddInput("a", {DType::kInt32, {3, 2, 10}});
    const TensorType bt =
        packed ? TensorType{DType::kInt32, {3, 10, 32}} : TensorType{DType::kInt32, {10, n}};
    Value* bm = g.AddConstant("b", RandomWords(bt, 31));
    AttrMap attrs;
    attrs.Set("quant", std::string("u8s8"));
    if (packed) {
      attrs.Set("b_layout", std::string("packed32"));
      attrs.Set("b_cols", n);
    }
    Node* mm = g.AddNode(OpKind::kMatMul, "mm", {a, bm}, {{DType::kInt32, {3, 2, n}}}, attrs);
    const ValueMap inputs = {{a, RandomWords(a->type(), 32)}};
    auto kernel = LowerGroup({mm}, "k");
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_THAT(loop::PrintFunc(kernel->func), HasSubstr("dot4_u8s8(%in0["));
    auto got = testing::RunKernel(*kernel, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    TensorPtr want = Reference({mm}, inputs);
    ASSERT_NE(want, nullptr);
    EXPECT_EQ((*got)->bytes, want->bytes);
  }
}

// Bitcast copied as a kernel (where it cannot be a view): little-endian words of 4 bytes.
TEST(LowerLayoutTest, BitcastAssemblesLittleEndianWords) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kUInt8, {2, 8}});
  AttrMap a;
  a.Set("to", int64_t{6});
  Node* bc = g.AddNode(OpKind::kBitcast, "bc", {x}, {{DType::kInt32, {2, 2}}}, a);
  auto in = Tensor::Zeros(x->type());
  for (int i = 0; i < 16; ++i) in->mutable_data<uint8_t>()[i] = static_cast<uint8_t>(17 * i + 3);
  auto kernel = LowerGroup({bc}, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto got = testing::RunKernel(*kernel, {{x, in}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->bytes, in->bytes);
  EXPECT_EQ((*got)->data<uint32_t>()[0], 0x36251403u);
}

TEST(LowerGemmTest, TransposedAlphaBetaBroadcastC) {
  Graph g;
  Value* a = g.AddInput("a", F32({3, 2}));
  Value* bm = g.AddConstant("b", Random(F32({4, 3}), 21));
  Value* c = g.AddConstant("c", Random(F32({4}), 22));
  AttrMap attrs;
  attrs.Set("transA", int64_t{1});
  attrs.Set("transB", int64_t{1});
  attrs.Set("alpha", 0.5f);
  attrs.Set("beta", 2.0f);
  Node* gemm = g.AddNode(OpKind::kGemm, "gemm", {a, bm, c}, {F32({2, 4})}, attrs);
  CheckGroup({gemm}, {{a, Random(a->type(), 23)}});
}

/// The node `op`(a, packed B, c?) reading `b` ([K, N]) packed in panels of `nr`
/// (b_layout="packed<nr>", ir/graph/matmul_packing.h).
Value* PackedWeight(Graph& g, const TensorPtr& b, int64_t nr, AttrMap& attrs) {
  attrs.Set("b_layout", graph::PackedBLayout(nr));
  attrs.Set("b_cols", b->type.shape[1]);
  return g.AddConstant("bp", graph::PackMatMulB(*b, nr));
}

TEST(LowerGemmTest, PackedWeightWithTail) {
  // N = 11 with nr = 4: two full panels (jb, jj) and a tail of 3 columns (jt).
  for (int64_t n : {11, 8, 3}) {
    Graph g;
    Value* a = g.AddInput("a", F32({5, 3}));
    Value* c = g.AddConstant("c", Random(F32({n}), 42));
    AttrMap attrs;
    attrs.Set("transA", int64_t{1});
    attrs.Set("alpha", 0.5f);
    attrs.Set("beta", 2.0f);
    Value* bp = PackedWeight(g, Random(F32({5, n}), 41), 4, attrs);
    Node* gemm = g.AddNode(OpKind::kGemm, "gemm", {a, bp, c}, {F32({3, n})}, attrs);
    CheckGroup({gemm}, {{a, Random(a->type(), 43)}});
    auto kernel = LowerGroup({gemm}, "k");
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    const std::string ir = loop::PrintStmt(kernel->func.body);
    EXPECT_EQ(ir.find("%in1[jb, k, jj]") != std::string::npos, n >= 4) << ir;
    EXPECT_EQ(ir.find("%in1[" + std::to_string(n / 4) + ", k") != std::string::npos,
              n % 4 != 0) << ir;
  }
}

TEST(LowerMatMulTest, PackedSharedWeight) {
  Graph g;
  Value* a = g.AddInput("a", F32({2, 3, 6}));
  AttrMap attrs;
  Value* bp = PackedWeight(g, Random(F32({6, 7}), 44), 4, attrs);
  Node* mm = g.AddNode(OpKind::kMatMul, "mm", {a, bp}, {F32({2, 3, 7})}, attrs);
  CheckGroup({mm}, {{a, Random(a->type(), 45)}});
  auto kernel = LowerGroup({mm}, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_THAT(loop::PrintStmt(kernel->func.body), HasSubstr("for i in 0..6 {"));
}

TEST(LowerMatMulTest, BatchBroadcast) {
  Graph g;
  Value* a = g.AddInput("a", F32({2, 1, 3, 4}));
  Value* b = g.AddInput("b", F32({3, 4, 5}));
  Node* mm = g.AddNode(OpKind::kMatMul, "mm", {a, b}, {F32({2, 3, 3, 5})});
  CheckGroup({mm}, {{a, Random(a->type(), 24)}, {b, Random(b->type(), 25)}});
}

TEST(LowerMatMulTest, SharedWeightFoldsBatchIntoRows) {
  // B is one matrix for every batch: the update nest runs over 2·3·4 = 24 rows.
  Graph g;
  Value* a = g.AddInput("a", F32({2, 3, 4, 6}));
  Value* b = g.AddInput("b", F32({6, 5}));
  Node* mm = g.AddNode(OpKind::kMatMul, "mm", {a, b}, {F32({2, 3, 4, 5})});
  CheckGroup({mm}, {{a, Random(a->type(), 28)}, {b, Random(b->type(), 29)}});
  auto kernel = LowerGroup({mm}, "k");
  ASSERT_TRUE(kernel.ok());
  EXPECT_THAT(loop::PrintStmt(kernel->func.body), ::testing::HasSubstr("for i in 0..24 {"));
}

TEST(LowerMatMulTest, VectorTimesMatrix) {
  Graph g;
  Value* a = g.AddInput("a", F32({4}));
  Value* b = g.AddInput("b", F32({4, 3}));
  Node* mm = g.AddNode(OpKind::kMatMul, "mv", {a, b}, {F32({3})});
  CheckGroup({mm}, {{a, Random(a->type(), 26)}, {b, Random(b->type(), 27)}});
}

AttrMap PoolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                  std::vector<int64_t> pads, int64_t ceil_mode, int64_t include_pad) {
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("pads", pads);
  a.Set("dilations", std::vector<int64_t>(kernel.size(), 1));
  a.Set("ceil_mode", ceil_mode);
  a.Set("count_include_pad", include_pad);
  return a;
}

TEST(LowerPoolTest, MaxPoolCeilModePads) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 6, 6}));
  Node* pool = g.AddNode(OpKind::kMaxPool, "mp", {x}, {F32({1, 2, 4, 4})},
                         PoolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 1, 0));
  CheckGroup({pool}, {{x, Random(x->type(), 31)}});
}

// 1-D windows of 3, stride 2, pads 1, ceil_mode over [1..6]: windows (in input coordinates)
// [-1,1] [1,3] [3,5] [5,7]; the last one holds x[5] = 6, one right pad and one position past
// the padded input.
TEST(LowerPoolTest, AveragePoolCeilModeCountIncludePad) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 1, 6}));
  Node* incl = g.AddNode(OpKind::kAveragePool, "ap1", {x}, {F32({1, 1, 4})},
                         PoolAttrs({3}, {2}, {1, 1}, 1, 1));
  Node* excl = g.AddNode(OpKind::kAveragePool, "ap0", {x}, {F32({1, 1, 4})},
                         PoolAttrs({3}, {2}, {1, 1}, 1, 0));
  ValueMap in = {{x, FromFloats(x->type(), {1, 2, 3, 4, 5, 6})}};
  auto k1 = LowerGroup({incl}, "k1");
  ASSERT_TRUE(k1.ok()) << k1.status();
  auto r1 = testing::RunKernel(*k1, in);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_THAT(Floats(**r1), ElementsAre(1, 3, 5, 3));  // 3/3, 9/3, 15/3, 6/2
  auto k0 = LowerGroup({excl}, "k0");
  ASSERT_TRUE(k0.ok()) << k0.status();
  auto r0 = testing::RunKernel(*k0, in);
  ASSERT_TRUE(r0.ok()) << r0.status();
  EXPECT_THAT(Floats(**r0), ElementsAre(1.5, 3, 5, 6));  // 3/2, 9/3, 15/3, 6/1
}

TEST(LowerPoolTest, AveragePool2dMatchesReference) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 5, 5}));
  Node* pool = g.AddNode(OpKind::kAveragePool, "ap", {x}, {F32({1, 2, 3, 3})},
                         PoolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0));
  CheckGroup({pool}, {{x, Random(x->type(), 32)}});
}

TEST(LowerPoolTest, GlobalAveragePool) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 4, 5}));
  Node* pool = g.AddNode(OpKind::kGlobalAveragePool, "gap", {x}, {F32({2, 3, 1, 1})});
  CheckGroup({pool}, {{x, Random(x->type(), 33)}});
  Node* gmp = g.AddNode(OpKind::kGlobalMaxPool, "gmp", {x}, {F32({2, 3, 1, 1})});
  CheckGroup({gmp}, {{x, Random(x->type(), 34)}});
}

AttrMap LpAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                std::vector<int64_t> pads, int64_t p) {
  AttrMap a = PoolAttrs(kernel, strides, pads, 0, 0);
  a.Set("p", p);
  return a;
}

// LpPool for p = 1, 2, 3 over signed inputs, 1-D and 2-D, with pads and strides.
TEST(LowerPoolTest, LpPoolMatchesReference) {
  Graph g;
  Value* x1 = g.AddInput("x1", F32({2, 3, 7}));
  Value* x2 = g.AddInput("x2", F32({1, 2, 5, 6}));
  for (int64_t p : {1, 2, 3}) {
    // 1-D: kernel 3, stride 2, pads 1/2 -> (7 + 3 - 3) / 2 + 1 = 4 outputs.
    Node* l1 = g.AddNode(OpKind::kLpPool, "lp1", {x1}, {F32({2, 3, 4})},
                         LpAttrs({3}, {2}, {1, 2}, p));
    CheckGroup({l1}, {{x1, Random(x1->type(), 60 + p)}});
    // 2-D: kernel 3x2, strides 2x1, pads (1,0,1,1) -> [3, 6].
    Node* l2 = g.AddNode(OpKind::kLpPool, "lp2", {x2}, {F32({1, 2, 3, 6})},
                         LpAttrs({3, 2}, {2, 1}, {1, 0, 1, 1}, p));
    CheckGroup({l2}, {{x2, Random(x2->type(), 70 + p)}});
    AttrMap ga;
    ga.Set("p", p);
    Node* gl = g.AddNode(OpKind::kGlobalLpPool, "glp", {x2}, {F32({1, 2, 1, 1})}, ga);
    CheckGroup({gl}, {{x2, Random(x2->type(), 80 + p)}});
  }
}

// Hand-computed: p = 2, kernel 2, pads 1/1 over [3, -4]: sqrt(9) = 3, sqrt(9+16) = 5, 4.
TEST(LowerPoolTest, LpPoolHandComputed) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 1, 2}));
  Node* lp = g.AddNode(OpKind::kLpPool, "lp", {x}, {F32({1, 1, 3})}, LpAttrs({2}, {1}, {1, 1}, 2));
  auto k = LowerGroup({lp}, "k");
  ASSERT_TRUE(k.ok()) << k.status();
  auto r = testing::RunKernel(*k, {{x, FromFloats(x->type(), {3, -4})}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Floats(**r), ElementsAre(3, 5, 4));
}

TEST(LowerSoftmaxTest, MiddleAxisAndLogSoftmax) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 5, 3}));
  AttrMap a1;
  a1.Set("axis", int64_t{1});
  Node* sm = g.AddNode(OpKind::kSoftmax, "sm", {x}, {F32({2, 5, 3})}, a1);
  CheckGroup({sm}, {{x, Random(x->type(), 41)}});
  AttrMap a2;
  a2.Set("axis", int64_t{2});
  Node* lsm = g.AddNode(OpKind::kLogSoftmax, "lsm", {x}, {F32({2, 5, 3})}, a2);
  CheckGroup({lsm}, {{x, Random(x->type(), 42)}});
}

TEST(LowerSoftmaxTest, LargeValuesAreStable) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3}));
  AttrMap a;
  a.Set("axis", int64_t{1});
  Node* sm = g.AddNode(OpKind::kSoftmax, "sm", {x}, {F32({1, 3})}, a);
  auto k = LowerGroup({sm}, "k");
  ASSERT_TRUE(k.ok());
  auto r = testing::RunKernel(*k, {{x, FromFloats(x->type(), {1000, 1000, 1000})}});
  ASSERT_TRUE(r.ok()) << r.status();
  for (float v : Floats(**r)) EXPECT_NEAR(v, 1.0 / 3, 1e-6);
}

TEST(LowerDataMovementTest, Concat) {
  Graph g;
  Value* a = g.AddInput("a", F32({2, 3}));
  Value* b = g.AddInput("b", F32({2, 2}));
  AttrMap attrs;
  attrs.Set("axis", int64_t{1});
  Node* cat = g.AddNode(OpKind::kConcat, "cat", {a, b}, {F32({2, 5})}, attrs);
  ValueMap in = {{a, FromFloats(a->type(), {1, 2, 3, 4, 5, 6})},
                 {b, FromFloats(b->type(), {7, 8, 9, 10})}};
  auto k = LowerGroup({cat}, "k");
  ASSERT_TRUE(k.ok()) << k.status();
  auto r = testing::RunKernel(*k, in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Floats(**r), ElementsAre(1, 2, 3, 7, 8, 4, 5, 6, 9, 10));
  CheckGroup({cat}, in);
}

std::vector<float> RunPad(const std::string& mode, float value) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3}));
  Value* pads = g.AddConstant("pads", FromInts({DType::kInt64, {4}}, {0, 2, 0, 2}));
  Value* cv = g.AddConstant("cv", FromFloats(F32({}), {value}));
  AttrMap attrs;
  attrs.Set("mode", mode);
  Node* pad = g.AddNode(OpKind::kPad, "pad", {x, pads, cv}, {F32({1, 7})}, attrs);
  ValueMap in = {{x, FromFloats(x->type(), {1, 2, 3})}};
  auto k = LowerGroup({pad}, "k");
  EXPECT_TRUE(k.ok()) << k.status();
  if (!k.ok()) return {};
  auto r = testing::RunKernel(*k, in);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  CheckGroup({pad}, in);
  return Floats(**r);
}

TEST(LowerDataMovementTest, PadModes) {
  EXPECT_THAT(RunPad("reflect", 0), ElementsAre(3, 2, 1, 2, 3, 2, 1));
  EXPECT_THAT(RunPad("edge", 0), ElementsAre(1, 1, 1, 2, 3, 3, 3));
  EXPECT_THAT(RunPad("constant", 9), ElementsAre(9, 9, 1, 2, 3, 9, 9));
}

TEST(LowerDataMovementTest, TransposeGatherSliceReshape) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 4}));
  ValueMap in = {{x, Random(x->type(), 51)}};
  AttrMap perm;
  perm.Set("perm", std::vector<int64_t>{2, 0, 1});
  CheckGroup({g.AddNode(OpKind::kTranspose, "t", {x}, {F32({4, 2, 3})}, perm)}, in);
  // No perm: ONNX's default, the axes reversed.
  CheckGroup({g.AddNode(OpKind::kTranspose, "t_default", {x}, {F32({4, 3, 2})})}, in);

  Value* idx = g.AddConstant("idx", FromInts({DType::kInt64, {2}}, {-1, 0}));
  AttrMap axis1;
  axis1.Set("axis", int64_t{1});
  CheckGroup({g.AddNode(OpKind::kGather, "gather", {x, idx}, {F32({2, 2, 4})}, axis1)}, in);

  Value* starts = g.AddConstant("starts", FromInts({DType::kInt64, {2}}, {-1, 0}));
  Value* ends = g.AddConstant("ends", FromInts({DType::kInt64, {2}}, {-100, 3}));
  Value* axes = g.AddConstant("axes", FromInts({DType::kInt64, {2}}, {2, 1}));
  Value* steps = g.AddConstant("steps", FromInts({DType::kInt64, {2}}, {-2, 2}));
  CheckGroup({g.AddNode(OpKind::kSlice, "slice", {x, starts, ends, axes, steps},
                        {F32({2, 2, 2})})},
             in);

  Value* shape = g.AddConstant("shape", FromInts({DType::kInt64, {2}}, {6, 4}));
  CheckGroup({g.AddNode(OpKind::kReshape, "reshape", {x, shape}, {F32({6, 4})})}, in);
  Value* axes0 = g.AddConstant("axes0", FromInts({DType::kInt64, {2}}, {0, 3}));
  CheckGroup({g.AddNode(OpKind::kUnsqueeze, "unsq", {x, axes0}, {F32({1, 2, 3, 1, 4})})}, in);
  AttrMap flat;
  flat.Set("axis", int64_t{2});
  CheckGroup({g.AddNode(OpKind::kFlatten, "flatten", {x}, {F32({6, 4})}, flat)}, in);
}

TEST(LowerElementwiseTest, AddBroadcastAndChain) {
  Graph g;
  Value* a = g.AddInput("a", F32({2, 3, 4}));
  Value* b = g.AddInput("b", F32({3, 1}));
  Node* add = g.AddNode(OpKind::kAdd, "add", {a, b}, {F32({2, 3, 4})});
  ValueMap in = {{a, Random(a->type(), 61)}, {b, Random(b->type(), 62)}};
  CheckGroup({add}, in);
  AttrMap alpha;
  alpha.Set("alpha", 0.2f);
  Node* leaky = g.AddNode(OpKind::kLeakyRelu, "leaky", {add->output(0)}, {F32({2, 3, 4})}, alpha);
  Node* sig = g.AddNode(OpKind::kSigmoid, "sig", {leaky->output(0)}, {F32({2, 3, 4})});
  CheckGroup({add, leaky, sig}, in);
  auto k = LowerGroup({add}, "k");
  ASSERT_TRUE(k.ok());
  EXPECT_THAT(loop::PrintFunc(k->func),
              HasSubstr("%out[d0, d1, d2] = (%in0[d0, d1, d2] + %in1[d1, 0])"));
}

TEST(LowerElementwiseTest, ClipBatchNormErfCast) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 2, 2}));
  ValueMap in = {{x, Random(x->type(), 71)}};
  Value* lo = g.AddConstant("lo", FromFloats(F32({}), {-0.25f}));
  Value* hi = g.AddConstant("hi", FromFloats(F32({}), {0.5f}));
  CheckGroup({g.AddNode(OpKind::kClip, "clip", {x, lo, hi}, {x->type()})}, in);
  CheckGroup({g.AddNode(OpKind::kErf, "erf", {x}, {x->type()})}, in);
  std::vector<Value*> bn_in = {x};
  for (int i = 0; i < 4; ++i) {
    auto t = Random(F32({3}), 72 + i);
    if (i == 3) {
      for (int c = 0; c < 3; ++c) t->mutable_data<float>()[c] = 0.5f + c;  // variance > 0
    }
    bn_in.push_back(g.AddConstant("bn" + std::to_string(i), t));
  }
  AttrMap eps;
  eps.Set("epsilon", 1e-3f);
  CheckGroup({g.AddNode(OpKind::kBatchNormalization, "bn", bn_in, {x->type()}, eps)}, in);
  AttrMap to;
  to.Set("to", int64_t{DTypeToOnnx(DType::kInt32)});
  Node* cast = g.AddNode(OpKind::kCast, "cast", {x}, {{DType::kInt32, {2, 3, 2, 2}}}, to);
  auto k = LowerGroup({cast}, "k");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(loop::PrintFunc(k->func), HasSubstr("cast<i32>(%in0[d0, d1, d2, d3])"));
}

TEST(LowerCopyTest, ReshapeCopy) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* y = g.AddInput("y", F32({3, 2}));
  auto k = LowerCopy(x, y, "copy");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->param_values, ElementsAre(x, y));
  auto r = testing::RunKernel(*k, {{x, FromFloats(x->type(), {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Floats(**r), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(LowerErrorsTest, UnsupportedOp) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Node* shape = g.AddNode(OpKind::kShape, "shape_1", {x}, {{DType::kInt64, {2}}});
  auto k = LowerGroup({shape}, "k");
  EXPECT_EQ(k.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("node 'shape_1' (Shape): no lowering"));
}

}  // namespace
}  // namespace kiln::lowering
