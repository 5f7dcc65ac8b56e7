// Symbolic dims in the graph IR: tensor types, the text format, the graph hash, the shape
// rules that read dims as expressions, and shapes as values (sym_values.h).
#include <memory>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "compiler_core/ir/graph/sym_values.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/ir/graph/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::graph {
namespace {

using ::testing::HasSubstr;
using Dims = std::vector<sym::Expr>;

const sym::Symbol kSeq{"seq", 1, 4096};
const sym::Symbol kPast{"past", 0, 4096};
const sym::Symbol kN{"N", 0, sym::kUnbounded};
const sym::Symbol kH{"H", 0, sym::kUnbounded};
const sym::Symbol kW{"W", 0, sym::kUnbounded};

sym::Expr S(const sym::Symbol& s) { return sym::Expr::Sym(s); }

sym::Expr E(const std::string& text) {
  absl::StatusOr<sym::Expr> e = sym::Parse(
      text, {{"seq", kSeq}, {"past", kPast}, {"N", kN}, {"H", kH}, {"W", kW}});
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : sym::Expr::Invalid();
}

TensorType F32(const Dims& d) { return TensorType::WithDims(DType::kFloat32, d); }

std::shared_ptr<const Tensor> I64(const std::vector<int64_t>& v) {
  auto t = Tensor::Zeros(TensorType{DType::kInt64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t->mutable_data<int64_t>()[i] = v[i];
  return t;
}

// Adds a node typed by its shape rule (as the importer does); the rule's error on failure.
absl::StatusOr<Value*> Emit(Graph& g, OpKind op, std::vector<Value*> inputs, AttrMap attrs = {}) {
  Node* n = g.AddNode(op, "n", std::move(inputs), std::vector<TensorType>(1), std::move(attrs));
  absl::StatusOr<std::vector<TensorType>> types = InferOutputTypes(*n);
  if (!types.ok()) return types.status();
  n->output(0)->set_type((*types)[0]);
  std::vector<std::optional<std::vector<sym::Expr>>> values = InferSymValues(*n);
  if (values[0]) n->output(0)->set_sym_value(values[0]);
  return n->output(0);
}

TEST(SymbolicTypeTest, WithDimsKeepsStaticTypesStatic) {
  TensorType t = F32({1, 3, 224});
  EXPECT_TRUE(t.is_static());
  EXPECT_EQ(t, (TensorType{DType::kFloat32, {1, 3, 224}}));
  EXPECT_EQ(t.NumElements(), 672);

  TensorType s = F32({1, S(kPast) + S(kSeq), 32});
  EXPECT_FALSE(s.is_static());
  EXPECT_EQ(s.shape, (std::vector<int64_t>{1, kSymbolicDim, 32}));
  EXPECT_EQ(s.ToString(), "f32[1,past + seq,32]");
  EXPECT_EQ(s.NumElements(), -1);
  EXPECT_EQ(s.CheckedNumBytes(), -1);
  EXPECT_EQ(s.NumElementsExpr(), E("32*past + 32*seq"));
  EXPECT_EQ(s.dim(1), S(kSeq) + S(kPast));
  EXPECT_EQ(s, F32({1, S(kSeq) + S(kPast), 32}));
  EXPECT_NE(s, F32({1, S(kSeq), 32}));
}

TEST(SymbolicTypeTest, SizeCheckAtARunsSymbolValues) {
  TensorType t = F32({1, S(kSeq), 1024});
  absl::StatusOr<int64_t> bytes = CheckTensorSizeAt(t, {{"seq", 5}}, 1 << 20, "output 0");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, 5 * 1024 * 4);
  absl::StatusOr<int64_t> big = CheckTensorSizeAt(t, {{"seq", 4096}}, 1 << 20, "output 0");
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(big.status().message(),
            "output 0 has type f32[1,seq,1024] at seq=4096: it takes 16777216 bytes, more than "
            "the limit of 1048576 (max_tensor_bytes)");
  absl::StatusOr<int64_t> negative =
      CheckTensorSizeAt(F32({S(kSeq) - 2}), {{"seq", 1}}, 1 << 20, "node 'n' output 0");
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "node 'n' output 0 has type f32[seq - 2] at seq=1: dim 0 is -1");
  absl::StatusOr<int64_t> unbound = CheckTensorSizeAt(t, {}, 1 << 20, "output 0");
  EXPECT_EQ(unbound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unbound.status().message(),
            "output 0 has type f32[1,seq,1024]: dim 1: evaluating seq: symbol 'seq' has no value");
}

constexpr char kDecoderText[] =
    "graph @main<past=[0,4096], seq=[1,4096]>(%0 \"k_past\": f32[1,2,\"past\",32], %1 \"k_new\": "
    "f32[1,2,\"seq\",32]) -> (%2 \"k\") {\n"
    "  %2 = Concat(%0, %1) {axis=2} : f32[1,2,\"past + seq\",32]\n"
    "  return %2\n"
    "}\n";

TEST(SymbolicTypeTest, TextFormatRoundTrips) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(kDecoderText);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(PrintGraph(**g), kDecoderText);
  const TensorType& out = (*g)->outputs()[0]->type();
  EXPECT_EQ(out.ToString(), "f32[1,2,past + seq,32]");
  std::vector<sym::Symbol> symbols = *GraphSymbols(**g);
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0].name, "past");
  EXPECT_EQ(symbols[1].max, 4096);
  // The shape rule agrees with the printed type.
  EXPECT_EQ((*InferOutputTypes(*(*g)->nodes()[0]))[0], out);
}

TEST(SymbolicTypeTest, TextFormatErrors) {
  EXPECT_THAT(ParseGraph("graph @m(%0 \"x\": f32[\"sq\"]) -> (%0 \"y\") {\n return %0\n}\n")
                  .status()
                  .message(),
              HasSubstr("1:22: bad symbolic dimension: unknown symbol 'sq' at column 1 of 'sq'"));
  EXPECT_THAT(ParseGraph("graph @m<n=[4,2]>(%0 \"x\": f32[\"n\"]) -> (%0 \"y\") {\n return %0\n}\n")
                  .status()
                  .message(),
              HasSubstr("the symbol's maximum (>= its minimum, or inf)"));
  EXPECT_THAT(
      ParseGraph("graph @m<n=[0,inf], n=[1,2]>(%0 \"x\": f32[\"n\"]) -> (%0 \"y\") {\n return %0\n}\n")
          .status()
          .message(),
      HasSubstr("symbol 'n' is declared twice"));
}

TEST(SymbolicTypeTest, VerifierChecksSymbols) {
  absl::StatusOr<std::unique_ptr<Graph>> good = ParseGraph(kDecoderText);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(VerifyGraph(**good).ok()) << VerifyGraph(**good);
  // A symbol no input gives by itself: no run could bind it.
  absl::StatusOr<std::unique_ptr<Graph>> free_symbol = ParseGraph(
      "graph @main<k=[0,inf], n=[0,inf]>(%0 \"x\": f32[\"2*n\"]) -> (%1 \"y\") {\n"
      "  %1 = Relu(%0) : f32[\"2*n\"]\n"
      "  return %1\n"
      "}\n");
  ASSERT_TRUE(free_symbol.ok()) << free_symbol.status();
  EXPECT_EQ(VerifyGraph(**free_symbol).message(),
            "graph input 0 ('x') has type f32[2*n], whose symbol 'n' no graph input dim gives "
            "by itself");
  // One name, two ranges.
  Graph g;
  Value* a = g.AddInput("a", F32({S(kSeq)}));
  Value* b = g.AddInput("b", F32({sym::Expr::Sym(sym::Symbol{"seq", 0, 7})}));
  g.SetOutputs({a, b});
  EXPECT_EQ(VerifyGraph(g).message(),
            "symbol 'seq' has range [1, 4096] in one type and [0, 7] in another");
}

TEST(SymbolicTypeTest, GraphHashCoversDimsAndRanges) {
  auto hash_of = [](const std::string& text) {
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(text);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? GraphHash(**g) : std::string();
  };
  const std::string base = kDecoderText;
  std::string other_range = base;
  other_range.replace(other_range.find("seq=[1,4096]"), 12, "seq=[1,2048]");
  EXPECT_NE(hash_of(base), hash_of(other_range));
  std::string other_dim = base;
  other_dim.replace(other_dim.find("\"seq\",32]) ->"), 5, "\"past\"");
  EXPECT_NE(hash_of(base), hash_of(other_dim));
  EXPECT_EQ(hash_of(base), hash_of(base));
  // Static graphs hash as before: graph_hash_test's golden digest checks it.
}

TEST(SymbolicShapeRulesTest, DecoderShapes) {
  Graph g;
  Value* ids_emb = g.AddInput("h", F32({1, S(kSeq), 256}));
  Value* w = g.AddConstant("w", Tensor::Zeros(TensorType{DType::kFloat32, {256, 1024}}));
  Value* bias = g.AddConstant("b", Tensor::Zeros(TensorType{DType::kFloat32, {1024}}));
  // Projection and bias: [1,seq,256] x [256,1024] + [1024].
  absl::StatusOr<Value*> proj = Emit(g, OpKind::kMatMul, {ids_emb, w});
  ASSERT_TRUE(proj.ok()) << proj.status();
  EXPECT_EQ((*proj)->type(), F32({1, S(kSeq), 1024}));
  absl::StatusOr<Value*> biased = Emit(g, OpKind::kAdd, {*proj, bias});
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_EQ((*biased)->type().ToString(), "f32[1,seq,1024]");

  // Heads: Reshape to [0,0,4,256] (0 copies the input's dim), Transpose to [1,4,seq,256].
  AttrMap no_zero;
  no_zero.Set("allowzero", int64_t{0});
  absl::StatusOr<Value*> heads =
      Emit(g, OpKind::kReshape, {*biased, g.AddConstant("s", I64({0, 0, 4, 256}))}, no_zero);
  ASSERT_TRUE(heads.ok()) << heads.status();
  EXPECT_EQ((*heads)->type().ToString(), "f32[1,seq,4,256]");
  AttrMap perm;
  perm.Set("perm", std::vector<int64_t>{0, 2, 1, 3});
  absl::StatusOr<Value*> q = Emit(g, OpKind::kTranspose, {*heads}, perm);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ((*q)->type().ToString(), "f32[1,4,seq,256]");

  // The cache grows along the dynamic dim; attention scores are [1,4,seq,past + seq].
  Value* past = g.AddInput("k_past", F32({1, 4, S(kPast), 256}));
  AttrMap axis2;
  axis2.Set("axis", int64_t{2});
  absl::StatusOr<Value*> k = Emit(g, OpKind::kConcat, {past, *q}, axis2);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->type().ToString(), "f32[1,4,past + seq,256]");
  AttrMap kt_perm;
  kt_perm.Set("perm", std::vector<int64_t>{0, 1, 3, 2});
  absl::StatusOr<Value*> kt = Emit(g, OpKind::kTranspose, {*k}, kt_perm);
  ASSERT_TRUE(kt.ok()) << kt.status();
  absl::StatusOr<Value*> scores = Emit(g, OpKind::kMatMul, {*q, *kt});
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_EQ((*scores)->type().ToString(), "f32[1,4,seq,past + seq]");
  AttrMap last;
  last.Set("axis", int64_t{-1});
  absl::StatusOr<Value*> probs = Emit(g, OpKind::kSoftmax, {*scores}, last);
  ASSERT_TRUE(probs.ok()) << probs.status();
  EXPECT_EQ((*probs)->type(), (*scores)->type());

  // Flatten and Reshape with -1 divide the element count symbolically.
  absl::StatusOr<Value*> flat =
      Emit(g, OpKind::kReshape, {*biased, g.AddConstant("s2", I64({-1, 1024}))}, no_zero);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ((*flat)->type().ToString(), "f32[seq,1024]");
  // A target that cannot hold the elements is refused, naming both shapes.
  absl::StatusOr<Value*> bad =
      Emit(g, OpKind::kReshape, {*biased, g.AddConstant("s3", I64({-1, 1000}))}, no_zero);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("cannot reshape f32[1,seq,1024] to [-1,1000]"));
}

TEST(SymbolicShapeRulesTest, BroadcastNeedsProvablyEqualDims) {
  Graph g;
  Value* a = g.AddInput("a", F32({1, S(kSeq)}));
  Value* b = g.AddInput("b", F32({S(kPast), 1}));
  absl::StatusOr<Value*> outer = Emit(g, OpKind::kAdd, {a, b});
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ((*outer)->type().ToString(), "f32[past,seq]");
  Value* c = g.AddInput("c", F32({1, S(kPast)}));
  absl::StatusOr<Value*> mismatch = Emit(g, OpKind::kAdd, {a, c});
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.status().message(),
              HasSubstr("node 'n' (Add): input shapes [1,seq] and [1,past] are not broadcastable"));
}

TEST(SymbolicShapeRulesTest, ConvAndPoolOverSymbolicSpatialDims) {
  Graph g;
  Value* x = g.AddInput("x", F32({S(kN), 3, S(kH), S(kW)}));
  Value* w = g.AddConstant("w", Tensor::Zeros(TensorType{DType::kFloat32, {64, 3, 3, 3}}));
  AttrMap conv;
  conv.Set("kernel_shape", std::vector<int64_t>{3, 3});
  conv.Set("strides", std::vector<int64_t>{2, 2});
  conv.Set("pads", std::vector<int64_t>{0, 0, 0, 0});
  absl::StatusOr<Value*> y = Emit(g, OpKind::kConv, {x, w}, conv);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)->type(), F32({S(kN), 64, E("floordiv(H - 3, 2) + 1"), E("floordiv(W - 3, 2) + 1")}));
  AttrMap pool;
  pool.Set("kernel_shape", std::vector<int64_t>{3, 3});
  pool.Set("strides", std::vector<int64_t>{2, 2});
  pool.Set("ceil_mode", int64_t{1});
  absl::StatusOr<Value*> p = Emit(g, OpKind::kMaxPool, {*y}, pool);
  ASSERT_TRUE(p.ok()) << p.status();
  // ceil((floordiv(H - 3, 2) + 1 - 3) / 2) + 1, checked at H = 224 and 331.
  for (int64_t h : {224, 331, 97}) {
    absl::StatusOr<int64_t> got = sym::Evaluate((*p)->type().dim(2), sym::ValuesOf({{"H", h}}));
    ASSERT_TRUE(got.ok()) << got.status();
    int64_t conv_out = (h - 3) / 2 + 1;
    int64_t pool_out = (conv_out - 3 + 1) / 2 + 1;
    EXPECT_EQ(*got, pool_out) << "H=" << h;
  }
  absl::StatusOr<Value*> gap = Emit(g, OpKind::kGlobalAveragePool, {*p});
  ASSERT_TRUE(gap.ok()) << gap.status();
  EXPECT_EQ((*gap)->type(), F32({S(kN), 64, 1, 1}));
  AttrMap axis1;
  axis1.Set("axis", int64_t{1});
  absl::StatusOr<Value*> flat = Emit(g, OpKind::kFlatten, {*gap}, axis1);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ((*flat)->type().ToString(), "f32[N,64]");
}

TEST(SymbolicShapeRulesTest, SliceClampsSymbolically) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, S(kSeq), 8}));
  auto slice = [&](int64_t start, int64_t end) {
    return Emit(g, OpKind::kSlice,
                {x, g.AddConstant("st", I64({start})), g.AddConstant("en", I64({end})),
                 g.AddConstant("ax", I64({1}))});
  };
  absl::StatusOr<Value*> rest = slice(1, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ((*rest)->type().ToString(), "f32[1,seq - 1,8]");  // seq >= 1
  absl::StatusOr<Value*> last = slice(-1, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)->type().ToString(), "f32[1,1,8]");
  absl::StatusOr<Value*> head = slice(0, 4);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ((*head)->type().ToString(), "f32[1,min(seq, 4),8]");
  for (int64_t seq : {1, 3, 4, 9}) {
    EXPECT_EQ(*sym::Evaluate((*head)->type().dim(1), sym::ValuesOf({{"seq", seq}})),
              std::min<int64_t>(seq, 4));
  }
}

TEST(SymbolicShapeRulesTest, OpsWithoutSymbolicRulesSayWhichInput) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, S(kSeq), 8}));
  absl::StatusOr<Value*> arg = Emit(g, OpKind::kArgMax, {x});
  EXPECT_EQ(arg.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(arg.status().message(),
            "node 'n' (ArgMax): input 0 has symbolic dims (f32[1,seq,8]), which ArgMax does not "
            "support yet");
}

TEST(SymValuesTest, ShapeArithmeticFoldsToExpressions) {
  Graph g;
  Value* ids = g.AddInput("ids", TensorType::WithDims(DType::kInt64, {1, S(kSeq)}));
  Value* past = g.AddInput("past", F32({1, 2, S(kPast), 32}));
  // Shape -> Gather: the lengths; Add: the total length.
  absl::StatusOr<Value*> ids_shape = Emit(g, OpKind::kShape, {ids});
  ASSERT_TRUE(ids_shape.ok()) << ids_shape.status();
  EXPECT_EQ(*(*ids_shape)->sym_value(), (Dims{1, S(kSeq)}));
  AttrMap axis0;
  axis0.Set("axis", int64_t{0});
  Value* one = g.AddConstant("one", Tensor::Zeros(TensorType{DType::kInt64, {}}));
  std::const_pointer_cast<Tensor>(one->constant())->mutable_data<int64_t>()[0] = 1;
  absl::StatusOr<Value*> seq = Emit(g, OpKind::kGather, {*ids_shape, one}, axis0);
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ((*seq)->type().ToString(), "i64[]");
  EXPECT_EQ(*(*seq)->sym_value(), (Dims{S(kSeq)}));
  absl::StatusOr<Value*> past_shape = Emit(g, OpKind::kShape, {past});
  ASSERT_TRUE(past_shape.ok());
  Value* two = g.AddConstant("two", I64({2}));
  absl::StatusOr<Value*> past_len = Emit(g, OpKind::kGather, {*past_shape, two}, axis0);
  ASSERT_TRUE(past_len.ok());
  absl::StatusOr<Value*> total = Emit(g, OpKind::kAdd, {*past_len, *seq});
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ((*total)->type().ToString(), "i64[1]");
  EXPECT_EQ(*(*total)->sym_value(), (Dims{S(kPast) + S(kSeq)}));

  // Concat of lengths and constants as a Reshape target: [1, seq, 2, 128] from f32[1,seq,256].
  Value* tail = g.AddConstant("tail", I64({2, 128}));
  absl::StatusOr<Value*> seq1 =
      Emit(g, OpKind::kUnsqueeze, {*seq, g.AddConstant("ax0", I64({0}))});
  ASSERT_TRUE(seq1.ok()) << seq1.status();
  absl::StatusOr<Value*> target =
      Emit(g, OpKind::kConcat, {g.AddConstant("b", I64({1})), *seq1, tail}, axis0);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*(*target)->sym_value(), (Dims{1, S(kSeq), 2, 128}));
  Value* h = g.AddInput("h", F32({1, S(kSeq), 256}));
  AttrMap no_zero;
  no_zero.Set("allowzero", int64_t{0});
  absl::StatusOr<Value*> reshaped = Emit(g, OpKind::kReshape, {h, *target}, no_zero);
  ASSERT_TRUE(reshaped.ok()) << reshaped.status();
  EXPECT_EQ((*reshaped)->type().ToString(), "f32[1,seq,2,128]");

  // Division folds only where floor and ONNX's truncation agree.
  absl::StatusOr<Value*> half = Emit(g, OpKind::kDiv, {*total, g.AddConstant("d", I64({2}))});
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*(*half)->sym_value(), (Dims{E("floordiv(past + seq, 2)")}));
  absl::StatusOr<Value*> neg = Emit(g, OpKind::kSub, {g.AddConstant("z", I64({0})), *total});
  ASSERT_TRUE(neg.ok());
  absl::StatusOr<Value*> neg_half = Emit(g, OpKind::kDiv, {*neg, g.AddConstant("d2", I64({2}))});
  ASSERT_TRUE(neg_half.ok());
  EXPECT_FALSE((*neg_half)->sym_value().has_value());
}

}  // namespace
}  // namespace kiln::graph
