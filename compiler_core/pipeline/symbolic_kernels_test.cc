// Kernels over symbolic dims (docs/symbolic-shapes.md, "Kernels with symbolic extents"): each
// node of a graph with symbols `seq` and `past` (a decoder's ops), or `N`, `H` and `W` (a CNN's
// convs and pools), is lowered once, scheduled with the default schedule, compiled for the host
// and then run at several symbol values (seq = 1 as in a decode step, past = 0 for an empty
// cache, lengths and image sizes that leave vector, row and column tails), checked against the
// reference evaluator on the same graph with those values written as static dims.
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/codegen/llvm/test_util.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/reference/evaluator.h"
#include "compiler_core/schedule/schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

// SEQ, PAST and TOTAL stand for the dims: quoted symbols in the symbolic graph, numbers in the
// static one. 40 and 24 are not multiples of the vector width, so static loops have tails too.
constexpr char kGraphTemplate[] = R"(graph @main<SYMBOLS>(%0 "x": f32[1,SEQ,40], %1 "w": f32[40,24], %2 "bias": f32[24], %3 "past_k": f32[1,2,PAST,8], %4 "new_k": f32[1,2,SEQ,8], %5 "q": f32[1,2,SEQ,8]) -> (%7 "act", %8 "probs", %12 "attn", %13 "scaled") {
  %6 = MatMul(%0, %1) : f32[1,SEQ,24]
  %7 = Add(%6, %2) : f32[1,SEQ,24]
  %8 = Softmax(%7) {axis=-1} : f32[1,SEQ,24]
  %9 = Concat(%3, %4) {axis=2} : f32[1,2,TOTAL,8]
  %10 = Transpose(%9) {perm=[0,1,3,2]} : f32[1,2,8,TOTAL]
  %11 = MatMul(%5, %10) : f32[1,2,SEQ,TOTAL]
  %14 = Softmax(%11) {axis=-1} : f32[1,2,SEQ,TOTAL]
  %12 = MatMul(%14, %9) : f32[1,2,SEQ,8]
  %13 = Mul(%11, %11) : f32[1,2,SEQ,TOTAL]
  return %7, %8, %12, %13
}
)";

std::string GraphText(const std::string& symbols, const std::string& seq, const std::string& past,
                      const std::string& total) {
  std::string text = absl::StrReplaceAll(
      kGraphTemplate, {{"SEQ", seq}, {"PAST", past}, {"TOTAL", total}});
  return absl::StrReplaceAll(text, {{"<SYMBOLS>", symbols}});
}

std::unique_ptr<graph::Graph> SymbolicGraph() {
  auto g = graph::ParseGraph(GraphText("<past=[0,inf], seq=[1,inf]>", "\"seq\"", "\"past\"",
                                       "\"past + seq\""));
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

std::unique_ptr<graph::Graph> StaticGraph(int64_t seq, int64_t past) {
  auto g = graph::ParseGraph(
      GraphText("", absl::StrCat(seq), absl::StrCat(past), absl::StrCat(seq + past)));
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

// Values in [-1, 1] from a fixed sequence: the same element gets the same value at every seq
// and past, so the two graphs see equal data.
std::shared_ptr<Tensor> Fill(const TensorType& type, unsigned salt) {
  auto t = Tensor::Zeros(type);
  float* f = reinterpret_cast<float*>(t->bytes.data());
  for (int64_t i = 0; i < type.NumElements(); ++i) {
    f[i] = std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(salt));
  }
  return t;
}

struct SymbolicKernel {
  lowering::LoweredKernel kernel;
  loop::Func scheduled;
};

// Lowers `node` alone as kernel `name` and applies the default schedule.
SymbolicKernel Build(const graph::Node& node, const std::string& name,
                     const lowering::KernelSymbols& symbols) {
  absl::StatusOr<lowering::LoweredKernel> k = lowering::LowerGroup({&node}, name, &symbols);
  EXPECT_TRUE(k.ok()) << k.status();
  if (!k.ok()) return {};
  SymbolicKernel out{std::move(*k), {}};
  EXPECT_TRUE(loop::VerifyFunc(out.kernel.func).ok()) << loop::VerifyFunc(out.kernel.func);
  out.scheduled = out.kernel.func;
  schedule::Schedule s = schedule::DefaultSchedule(out.scheduled, codegen::testing::HostTarget());
  absl::Status applied = schedule::ApplySchedule(s, out.scheduled);
  EXPECT_TRUE(applied.ok()) << applied;
  EXPECT_TRUE(loop::VerifyFunc(out.scheduled).ok()) << loop::VerifyFunc(out.scheduled);
  return out;
}

// Runs every kernel of symbolic graph `sym` (whose input `dims_value` holds the symbols'
// values in `symbols`' order) at each case (symbol values in that order) through compiled code
// and the interpreter, and compares each result with the reference evaluator's on
// `make_static(case)`, the same graph with those values as static dims. The tolerance is
// 1e-5 + 1e-5 * |reference| (f32 sums of at most a few hundred terms of magnitude <= 1,
// reassociated by the schedule).
void ExpectKernelsMatchTheReference(
    const graph::Graph& sym, const graph::Value* dims_value,
    const lowering::KernelSymbols& symbols, const std::vector<std::vector<int64_t>>& cases,
    const std::function<std::unique_ptr<graph::Graph>(const std::vector<int64_t>&)>&
        make_static) {
  std::vector<std::pair<const graph::Node*, SymbolicKernel>> kernels;
  std::vector<loop::Func> funcs;
  for (const graph::Node* n : sym.nodes()) {
    kernels.emplace_back(n, Build(*n, absl::StrCat("k", kernels.size()), symbols));
    funcs.push_back(kernels.back().second.scheduled);
  }
  ASSERT_FALSE(::testing::Test::HasFailure());
  absl::StatusOr<std::unique_ptr<codegen::testing::LoadedKernels>> lib =
      codegen::testing::CompileAndLoad(funcs);
  ASSERT_TRUE(lib.ok()) << lib.status();

  for (const std::vector<int64_t>& dims : cases) {
    std::string values;
    for (size_t i = 0; i < dims.size(); ++i) {
      absl::StrAppend(&values, i ? " " : "", symbols.names[i], "=", dims[i]);
    }
    SCOPED_TRACE(values);
    std::unique_ptr<graph::Graph> fixed = make_static(dims);
    ASSERT_NE(fixed, nullptr);
    // Each value of the symbolic graph → the static graph's value in its place, and every
    // static value's data: the inputs filled, the rest from the reference evaluator.
    std::map<const graph::Value*, const graph::Value*> to_static;
    std::map<const graph::Value*, reference::TensorPtr> expected;
    for (size_t i = 0; i < fixed->inputs().size(); ++i) {
      const graph::Value* in = fixed->inputs()[i];
      to_static[sym.inputs()[i]] = in;
      expected[in] = Fill(in->type(), static_cast<unsigned>(i));
    }
    const std::vector<graph::Node*> sym_nodes = sym.nodes(), fixed_nodes = fixed->nodes();
    ASSERT_EQ(sym_nodes.size(), fixed_nodes.size());
    for (size_t i = 0; i < fixed_nodes.size(); ++i) {
      const graph::Node* n = fixed_nodes[i];
      to_static[sym_nodes[i]->output(0)] = n->output(0);
      std::vector<reference::TensorPtr> args;
      for (const graph::Value* v : n->inputs()) args.push_back(expected.at(v));
      absl::StatusOr<std::vector<reference::TensorPtr>> r = reference::EvaluateNode(*n, args);
      ASSERT_TRUE(r.ok()) << r.status();
      expected[n->output(0)] = (*r)[0];
    }

    for (auto& [node, k] : kernels) {
      SCOPED_TRACE(k.scheduled.name + ": " + std::string(graph::OpName(node->op())));
      const graph::Value* result = node->output(0);
      const reference::TensorPtr& want = expected.at(to_static.at(result));
      // One host array per param: dims, inputs (the static graph's data), then the result.
      std::vector<std::vector<uint8_t>> storage;
      size_t out_index = 0;
      for (size_t i = 0; i < k.scheduled.params.size(); ++i) {
        const graph::Value* v = k.kernel.param_values[i];
        if (v == dims_value) {
          storage.emplace_back(reinterpret_cast<const uint8_t*>(dims.data()),
                               reinterpret_cast<const uint8_t*>(dims.data() + dims.size()));
        } else if (v == result) {
          out_index = i;
          storage.emplace_back(want->bytes.size(), 0xFF);
        } else {
          storage.emplace_back(expected.at(to_static.at(v))->bytes);
        }
      }
      ASSERT_TRUE(k.scheduled.workspaces.empty()) << "a symbolic kernel with a workspace";
      std::vector<std::vector<uint8_t>> interpreted = storage;
      std::vector<void*> args, iargs;
      for (auto& s : storage) args.push_back(s.data());
      for (auto& s : interpreted) iargs.push_back(s.data());
      codegen::testing::CallKernel((*lib)->Get(k.scheduled.name), args);
      ASSERT_TRUE(loop::InterpretFunc(k.kernel.func, iargs).ok());
      const float* got = reinterpret_cast<const float*>(storage[out_index].data());
      const float* got_i = reinterpret_cast<const float*>(interpreted[out_index].data());
      const float* ref = reinterpret_cast<const float*>(want->bytes.data());
      const int64_t n = want->type.NumElements();
      int bad = 0;
      for (int64_t e = 0; e < n && bad < 5; ++e) {
        const float tol = 1e-5f + 1e-5f * std::fabs(ref[e]);
        if (!(std::fabs(got[e] - ref[e]) <= tol) || !(std::fabs(got_i[e] - ref[e]) <= tol)) {
          ADD_FAILURE() << "element " << e << " of " << n << ": compiled " << got[e]
                        << ", interpreted " << got_i[e] << ", reference " << ref[e];
          ++bad;
        }
      }
    }
  }
}

class SymbolicKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = SymbolicGraph();
    ASSERT_NE(graph_, nullptr);
    // "kiln.dims": what the runtime fills with the symbols' values, in this order.
    dims_ = graph_->AddInput("kiln.dims", TensorType{DType::kInt64, {2}});
    symbols_.names = {"past", "seq"};
    symbols_.dims = dims_;
  }

  SymbolicKernel Build(const graph::Node& node, const std::string& name) {
    return kiln::Build(node, name, symbols_);
  }

  std::unique_ptr<graph::Graph> graph_;
  graph::Value* dims_ = nullptr;
  lowering::KernelSymbols symbols_;
};

// Every kernel of the decoder graph at each (past, seq).
TEST_F(SymbolicKernelsTest, EveryNodeMatchesTheReferenceAtEveryLength) {
  // seq = 1 with an empty and a long cache (decode steps), a prompt with no cache, and
  // lengths that are not multiples of any vector width or row tile: every combination of a
  // symbolic row tail's blocks (4, 2 and 1 rows below full tiles of up to 8).
  const std::vector<std::pair<int64_t, int64_t>> seq_past = {{1, 0},  {1, 7},  {5, 0},
                                                             {3, 11}, {17, 2}, {1, 63},
                                                             {4, 9},  {8, 3},  {14, 1}};
  std::vector<std::vector<int64_t>> cases;
  for (auto [seq, past] : seq_past) cases.push_back({past, seq});
  ExpectKernelsMatchTheReference(*graph_, dims_, symbols_, cases,
                                 [](const std::vector<int64_t>& d) {
                                   return StaticGraph(d[1], d[0]);
                                 });
}

// A CNN's ops over a symbolic batch and image size (N, H, W; channels static): a padded 3x3
// conv (padding as a select over a clamped load), a depthwise one with uneven pads, a strided
// unpadded one, MaxPool with ceil_mode, AveragePool without the padding in its count, Pad and
// the global pools. @X@ stands for a dim: a quoted expression of the symbols, or a number.
constexpr char kCnnTemplate[] = R"(graph @main@SYMBOLS@(%0 "x": f32[@N@,3,@H@,@W@], %1 "w": f32[8,3,3,3], %2 "b": f32[8], %3 "dw": f32[8,1,3,3], %4 "w2": f32[5,8,3,3]) -> (%5 "conv", %6 "pool", %7 "avg", %8 "dwc", %9 "s2", %10 "gap", %11 "gmp", %12 "pad") {
  %5 = Conv(%0, %1, %2) {dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} : f32[@N@,8,@H@,@W@]
  %6 = MaxPool(%5) {ceil_mode=1, kernel_shape=[3,3], pads=[0,0,0,0], strides=[2,2]} : f32[@N@,8,@PH@,@PW@]
  %7 = AveragePool(%5) {count_include_pad=0, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} : f32[@N@,8,@H@,@W@]
  %8 = Conv(%7, %3) {dilations=[1,1], group=8, kernel_shape=[3,3], pads=[1,1,1,2], strides=[1,1]} : f32[@N@,8,@H@,@W1@]
  %9 = Conv(%6, %4) {dilations=[1,1], group=1, kernel_shape=[3,3], pads=[0,0,0,0], strides=[2,2]} : f32[@N@,5,@SH@,@SW@]
  %10 = GlobalAveragePool(%8) : f32[@N@,8,1,1]
  %11 = GlobalMaxPool(%9) : f32[@N@,5,1,1]
  %12 = Pad(%0) {mode="constant", pads=[0,0,2,0,0,0,1,3]} : f32[@N@,3,@H3@,@W3@]
  return %5, %6, %7, %8, %9, %10, %11, %12
}
)";

/// The CNN graph with dims `d` for @SYMBOLS@, @N@, @H@, @W@, @PH@, @PW@, @W1@, @SH@, @SW@,
/// @H3@, @W3@.
std::unique_ptr<graph::Graph> CnnGraph(const std::vector<std::string>& d) {
  const char* names[] = {"@SYMBOLS@", "@N@", "@H@", "@W@", "@PH@", "@PW@",
                         "@W1@",      "@SH@", "@SW@", "@H3@", "@W3@"};
  std::vector<std::pair<std::string, std::string>> replacements;
  for (size_t i = 0; i < d.size(); ++i) replacements.emplace_back(names[i], d[i]);
  const std::string text = absl::StrReplaceAll(kCnnTemplate, replacements);
  auto g = graph::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? std::move(*g) : nullptr;
}

TEST(SymbolicCnnKernelsTest, EveryNodeMatchesTheReferenceAtEveryImageSize) {
  // The dims as the shape rules give them: MaxPool 3/2 with ceil_mode, the depthwise conv's
  // extra right pad, the strided conv 3/2 over the pooled map.
  auto q = [](const std::string& e) { return absl::StrCat("\"", e, "\""); };
  std::unique_ptr<graph::Graph> g = CnnGraph(
      {"<H=[0,inf], N=[0,inf], W=[0,inf]>", q("N"), q("H"), q("W"), q("floordiv(H - 2, 2) + 1"),
       q("floordiv(W - 2, 2) + 1"), q("W + 1"), q("floordiv(floordiv(H - 2, 2) - 2, 2) + 1"),
       q("floordiv(floordiv(W - 2, 2) - 2, 2) + 1"), q("H + 3"), q("W + 3")});
  ASSERT_NE(g, nullptr);
  graph::Value* dims = g->AddInput("kiln.dims", TensorType{DType::kInt64, {3}});
  lowering::KernelSymbols symbols{{"H", "N", "W"}, dims};
  // (H, N, W): widths that leave every column tail of the register blocks (7, 9, 13, and 16
  // with none), odd heights and a batch of 2.
  const std::vector<std::vector<int64_t>> cases = {{7, 1, 9}, {9, 2, 7}, {12, 1, 13}, {8, 1, 16}};
  ExpectKernelsMatchTheReference(*g, dims, symbols, cases, [](const std::vector<int64_t>& d) {
    const int64_t h = d[0], n = d[1], w = d[2];
    auto pooled = [](int64_t x) { return (x - 2) / 2 + 1; };  // ceil((x - 3) / 2) + 1
    auto s2 = [](int64_t x) { return (x - 3) / 2 + 1; };
    auto str = [](int64_t v) { return absl::StrCat(v); };
    return CnnGraph({"", str(n), str(h), str(w), str(pooled(h)), str(pooled(w)), str(w + 1),
                     str(s2(pooled(h))), str(s2(pooled(w))), str(h + 3), str(w + 3)});
  });
}

// The loops over symbolic dims carry the dims as run-time limits and the buffers their
// expressions; the printed kernel parses back to the same text.
TEST_F(SymbolicKernelsTest, SymbolicKernelPrintsAndParses) {
  const graph::Node* concat = nullptr;
  for (const graph::Node* n : graph_->nodes()) {
    if (n->op() == graph::OpKind::kConcat) concat = n;
  }
  ASSERT_NE(concat, nullptr);
  SymbolicKernel k = Build(*concat, "concat");
  const std::string text = loop::PrintFunc(k.kernel.func);
  EXPECT_THAT(text, HasSubstr("%dims: i64[2]"));
  EXPECT_THAT(text, HasSubstr("%in0: f32[1,2,%dims[0],8]"));
  EXPECT_THAT(text, HasSubstr("%out: f32[1,2,(%dims[0] + %dims[1]),8]"));
  EXPECT_THAT(text, HasSubstr("limit %dims[1]"));
  absl::StatusOr<loop::Func> parsed = loop::ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(loop::PrintFunc(*parsed), text);
  const std::string scheduled = loop::PrintFunc(k.scheduled);
  absl::StatusOr<loop::Func> parsed_scheduled = loop::ParseFunc(scheduled);
  ASSERT_TRUE(parsed_scheduled.ok()) << parsed_scheduled.status() << "\n" << scheduled;
  EXPECT_EQ(loop::PrintFunc(*parsed_scheduled), scheduled);
}

// Ops whose lowering still reads static shapes refuse a symbolic type, naming the node.
TEST_F(SymbolicKernelsTest, StaticOnlyLoweringsRefuseSymbolicTypes) {
  auto g = graph::ParseGraph(
      "graph @main<seq=[1,inf]>(%0 \"x\": f32[1,\"seq\",4]) -> (%1 \"y\") {\n"
      "  %1 = Flatten(%0) {axis=1} : f32[1,\"4*seq\"]\n"
      "  return %1\n"
      "}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  lowering::KernelSymbols symbols{{"seq"}, (*g)->AddInput("kiln.dims", {DType::kInt64, {1}})};
  absl::StatusOr<lowering::LoweredKernel> k =
      lowering::LowerGroup({(*g)->nodes()[0]}, "k", &symbols);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(k.status().message(), HasSubstr("symbolic dims"));
}

}  // namespace
}  // namespace kiln
