// Bounded dims end to end: small ONNX graphs compiled once with MIN..MAX dims, run at several
// lengths, against the same graph compiled for each exact shape; and the compile-time and
// run-time errors.
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/importer_test_util.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/pipeline/workloads.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/support/status_macros.h"
#include "gtest/gtest.h"

namespace kiln::pipeline {
namespace {

using importer::testing_util::ModelBuilder;
using importer::testing_util::SetInt;
using importer::testing_util::SetInts;

/// Declares input or output `name` with `dims`, a dim of -1 being symbolic ("<name>_d<i>").
void Declare(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = tt->mutable_shape()->add_dim();
    if (dims[i] < 0) {
      d->set_dim_param(name + "_d" + std::to_string(i));
    } else {
      d->set_dim_value(dims[i]);
    }
  }
}

/// x [S, 8] → y = Softmax(x x^T) x [S, 8] (softmax and the second matmul reduce along S) and
/// m = ReduceMax(x x^T, axis 1) [S].
ModelBuilder Attention() {
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, 8});
  SetInts(b.Node("Transpose", {"x"}, {"xt"}), "perm", {1, 0});
  b.Node("MatMul", {"x", "xt"}, {"scores"});
  SetInt(b.Node("Softmax", {"scores"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "x"}, {"y"});
  auto* m = b.Node("ReduceMax", {"scores"}, {"m"});
  SetInts(m, "axes", {1});
  SetInt(m, "keepdims", 0);
  Declare(b.g()->add_output(), "y", {-1, 8});
  Declare(b.g()->add_output(), "m", {-1});
  return b;
}

/// x [B, 6] → r = ReduceSum(Reshape(x, [-1, 3]), axis 1) [2B] and Relu(x) [B, 6].
ModelBuilder ReshapeRows() {
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, 6});
  b.InitI64("rows", {-1, 3});
  b.InitI64("axes", {1});
  b.Node("Reshape", {"x", "rows"}, {"r3"});
  SetInt(b.Node("ReduceSum", {"r3", "axes"}, {"r"}), "keepdims", 0);
  b.Node("Relu", {"x"}, {"relu"});
  Declare(b.g()->add_output(), "r", {-1});
  Declare(b.g()->add_output(), "relu", {-1, 6});
  return b;
}

/// x [B, S, 4] → mean over S (ReduceMean, keepdims 0) [B, 4] and over S and the last dim [B].
ModelBuilder MeanPool() {
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, -1, 4});
  auto* m = b.Node("ReduceMean", {"x"}, {"pooled"});
  SetInts(m, "axes", {1});
  SetInt(m, "keepdims", 0);
  auto* m2 = b.Node("ReduceMean", {"x"}, {"both"});
  SetInts(m2, "axes", {1, 2});
  SetInt(m2, "keepdims", 0);
  Declare(b.g()->add_output(), "pooled", {-1, 4});
  Declare(b.g()->add_output(), "both", {-1});
  return b;
}

/// x [S, B, 8] → y [S, B, 12]: a dynamically quantized Linear layer as ORT's quantize_dynamic
/// writes it (DynamicQuantizeLinear over the whole tensor, MatMulInteger with an int8 weight,
/// Cast, Mul by the scales); on VNNI the product runs as matmul-u8s8 on words.
ModelBuilder DynamicInt8Linear() {
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, -1, 8});
  onnx::TensorProto* w = b.g()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT8);
  w->add_dims(8);
  w->add_dims(12);
  std::string bytes;
  for (int i = 0; i < 8 * 12; ++i) bytes.push_back(static_cast<char>((i * 37) % 255 - 127));
  w->set_raw_data(bytes);
  b.Init("w_scale", {}, {0.01f});
  b.Node("DynamicQuantizeLinear", {"x"}, {"xq", "x_scale", "x_zp"});
  b.Node("MatMulInteger", {"xq", "w", "x_zp"}, {"acc"});
  SetInt(b.Node("Cast", {"acc"}, {"accf"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Mul", {"x_scale", "w_scale"}, {"scale"});
  b.Node("Mul", {"accf", "scale"}, {"y"});
  Declare(b.g()->add_output(), "y", {-1, -1, 12});
  return b;
}

absl::StatusOr<CompileResult> Compile(const ModelBuilder& b, const importer::InputShapes& max,
                                      const importer::InputShapes& min = {}) {
  CompileOptions options;
  options.shape_profiles = {max};
  options.bounded_min_shapes = min;
  const std::string bytes = b.Bytes();
  return CompileProfiles(
      [&](const importer::InputShapes& shapes) {
        return importer::ImportOnnxBytes(bytes, ::testing::TempDir(), {shapes});
      },
      options);
}

Tensor Input(const std::vector<int64_t>& shape) {
  Tensor t = *Tensor::Zeros(TensorType{DType::kFloat32, shape});
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.type.NumElements(); ++i) p[i] = 1.5f * std::sin(0.37f * i + 0.2f);
  return t;
}

absl::StatusOr<std::vector<Tensor>> RunOnce(const CompileResult& compiled, const Tensor& x) {
  KILN_ASSIGN_OR_RETURN(auto exe, runtime::Executable::Load(compiled.artifact, 1));
  return exe->Run({&x});
}

/// Runs `bounded` at x's shape and the graph compiled for exactly that shape; outputs must have
/// the same shapes and agree within 1e-5.
void ExpectMatchesStatic(const ModelBuilder& b, const CompileResult& bounded,
                         const std::vector<int64_t>& shape) {
  SCOPED_TRACE("shape [" + absl::StrJoin(shape, ",") + "]");
  const Tensor x = Input(shape);
  absl::StatusOr<CompileResult> exact = Compile(b, {{"x", shape}});
  ASSERT_TRUE(exact.ok()) << exact.status();
  absl::StatusOr<std::vector<Tensor>> want = RunOnce(*exact, x);
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(bounded, x);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < got->size(); ++o) {
    ASSERT_EQ((*got)[o].type, (*want)[o].type) << "output " << o;
    const float* g = (*got)[o].data<float>();
    const float* w = (*want)[o].data<float>();
    for (int64_t i = 0; i < (*got)[o].type.NumElements(); ++i) {
      ASSERT_NEAR(g[i], w[i], 1e-5) << "output " << o << " element " << i;
    }
  }
}

TEST(BoundedDimsTest, SoftmaxMatMulAndReduceMaxAlongABoundedDim) {
  const ModelBuilder b = Attention();
  absl::StatusOr<CompileResult> bounded = Compile(b, {{"x", {16, 8}}}, {{"x", {1, 8}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  const kiln::v1::Manifest& m = bounded->artifact.manifest;
  ASSERT_EQ(m.bound_symbols_size(), 1);
  EXPECT_EQ(m.bound_symbols(0).name(), "x:0");
  EXPECT_EQ(m.bound_symbols(0).min(), 1);
  EXPECT_EQ(m.bound_symbols(0).max(), 16);
  ASSERT_EQ(m.outputs(1).lengths_size(), 1);
  EXPECT_EQ(m.outputs(1).lengths(0).symbol(), 0);
  for (int64_t s : {1, 5, 13, 16}) ExpectMatchesStatic(b, *bounded, {s, 8});
}

// `kiln tune` with ranges plans what the bounded compile plans: the tuner is asked for exactly
// the compiled kernels' workloads (so its records apply), which differ from the fixed-shape
// compile's where a bound needs masking.
TEST(BoundedDimsTest, TuningPlansTheBoundedKernels) {
  const ModelBuilder b = Attention();
  const std::string bytes = b.Bytes();
  const GraphImporter import = [&](const importer::InputShapes& shapes) {
    return importer::ImportOnnxBytes(bytes, ::testing::TempDir(), {shapes});
  };
  auto keys_of = [&](const importer::InputShapes& min) -> std::set<std::string> {
    CompileOptions options;
    options.shape_profiles = {{{"x", {16, 8}}}};
    options.bounded_min_shapes = min;
    absl::StatusOr<std::vector<ModelWorkload>> workloads =
        ExtractImportedWorkloads(import, options);
    EXPECT_TRUE(workloads.ok()) << workloads.status();
    absl::StatusOr<CompileResult> compiled = CompileProfiles(import, options);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    std::set<std::string> planned, kernels;
    if (!workloads.ok() || !compiled.ok()) return planned;
    for (const ModelWorkload& w : *workloads) planned.insert(w.workload_key);
    for (const kiln::v1::KernelCall& k : compiled->artifact.manifest.kernels()) {
      kernels.insert(k.workload_key());
    }
    EXPECT_EQ(planned, kernels);
    return planned;
  };
  const std::set<std::string> bounded = keys_of({{"x", {1, 8}}});
  const std::set<std::string> fixed = keys_of({});
  EXPECT_FALSE(bounded.empty());
  EXPECT_NE(bounded, fixed);
}

TEST(BoundedDimsTest, ReshapeKeepsTheBoundedDimOutermost) {
  const ModelBuilder b = ReshapeRows();
  absl::StatusOr<CompileResult> bounded = Compile(b, {{"x", {8, 6}}}, {{"x", {2, 6}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  const kiln::v1::Manifest& m = bounded->artifact.manifest;
  ASSERT_EQ(m.outputs(0).lengths_size(), 1);
  EXPECT_EQ(m.outputs(0).lengths(0).mul(), 2);  // r has 2B rows
  for (int64_t n : {2, 3, 8}) ExpectMatchesStatic(b, *bounded, {n, 6});
}

TEST(BoundedDimsTest, MeanOverABoundedDimAveragesTheLengthOnly) {
  const ModelBuilder b = MeanPool();
  absl::StatusOr<CompileResult> bounded = Compile(b, {{"x", {3, 10, 4}}}, {{"x", {1, 1, 4}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1, 1, 4}, {2, 7, 4}, {3, 10, 4}}) {
    ExpectMatchesStatic(b, *bounded, shape);
  }
}

// The quantization range is over the run's elements only (the padding is masked out of the
// min and max), and the int8 product reads the uint8 rows as words through a Bitcast whose
// outer dims keep their run-time lengths.
TEST(BoundedDimsTest, DynamicallyQuantizedLinearLayer) {
  const ModelBuilder b = DynamicInt8Linear();
  absl::StatusOr<CompileResult> bounded = Compile(b, {{"x", {6, 3, 8}}}, {{"x", {1, 1, 8}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1, 1, 8}, {4, 2, 8}, {6, 3, 8}, {5, 1, 8}}) {
    ExpectMatchesStatic(b, *bounded, shape);
  }
}

TEST(BoundedDimsTest, TheFirstTokensAreStaticAtEveryLength) {
  // x [B, S, 4] with S in 2..9: Gather(x, 0, axis 1) (a first-token pooling) and
  // Slice(x, [0, 2) along axis 1), each valid at every length.
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, -1, 4});
  b.InitI64("zero", {0});
  b.InitI64("start", {0});
  b.InitI64("end", {2});
  b.InitI64("axis1", {1});
  auto* g = b.Node("Gather", {"x", "zero"}, {"first"});
  SetInt(g, "axis", 1);
  b.Node("Slice", {"x", "start", "end", "axis1"}, {"two"});
  Declare(b.g()->add_output(), "first", {-1, 1, 4});
  Declare(b.g()->add_output(), "two", {-1, 2, 4});
  absl::StatusOr<CompileResult> bounded = Compile(b, {{"x", {3, 9, 4}}}, {{"x", {1, 2, 4}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1, 2, 4}, {2, 5, 4}, {3, 9, 4}}) {
    ExpectMatchesStatic(b, *bounded, shape);
  }
  // Index 2 is past the shortest length (2): refused.
  ModelBuilder c(13);
  Declare(c.g()->add_input(), "x", {-1, -1, 4});
  c.InitI64("two", {2});
  SetInt(c.Node("Gather", {"x", "two"}, {"third"}, "third"), "axis", 1);
  Declare(c.g()->add_output(), "third", {-1, 1, 4});
  absl::StatusOr<CompileResult> refused = Compile(c, {{"x", {3, 9, 4}}}, {{"x", {1, 2, 4}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node 'third' (Gather): it gathers along dim 1"),
            std::string::npos)
      << refused.status();
}

TEST(BoundedDimsTest, RunOutsideTheBoundsIsRefused) {
  absl::StatusOr<CompileResult> bounded = Compile(ReshapeRows(), {{"x", {8, 6}}}, {{"x", {2, 6}}});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1, 6}, {9, 6}, {4, 5}, {4}}) {
    absl::StatusOr<std::vector<Tensor>> out = RunOnce(*bounded, Input(shape));
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("expected [2..8,6]"), std::string::npos) << out.status();
  }
  absl::StatusOr<std::vector<Tensor>> out = RunOnce(*bounded, Input({9, 6}));
  EXPECT_NE(out.status().message().find("dim 0 is outside the bounded range of x:0 (2..8)"),
            std::string::npos)
      << out.status();
}

TEST(BoundedDimsTest, DimsThatMeetAreOneSymbol) {
  ModelBuilder b(13);
  Declare(b.g()->add_input(), "x", {-1, 4});
  Declare(b.g()->add_input(), "y", {-1, 4});
  b.Node("Add", {"x", "y"}, {"z"});
  Declare(b.g()->add_output(), "z", {-1, 4});
  CompileOptions options;
  options.shape_profiles = {{{"x", {6, 4}}, {"y", {6, 4}}}};
  options.bounded_min_shapes = {{"x", {1, 4}}, {"y", {1, 4}}};
  const std::string bytes = b.Bytes();
  absl::StatusOr<CompileResult> compiled = CompileProfiles(
      [&](const importer::InputShapes& shapes) {
        return importer::ImportOnnxBytes(bytes, ::testing::TempDir(), {shapes});
      },
      options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->artifact.manifest.bound_symbols_size(), 1);
  auto exe = runtime::Executable::Load(compiled->artifact, 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const Tensor x = Input({3, 4}), y = Input({2, 4});
  absl::StatusOr<std::vector<Tensor>> out = (*exe)->Run({&x, &y});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("which an earlier dim set to 3"), std::string::npos)
      << out.status();
  out = (*exe)->Run({&x, &x});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].type.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_FLOAT_EQ((*out)[0].data<float>()[5], 2 * x.data<float>()[5]);
}

/// The compile error of `b` with x bounded 1..max in dim 0.
std::string BoundedError(const ModelBuilder& b, const std::vector<int64_t>& max) {
  std::vector<int64_t> min = max;
  min[0] = 1;
  absl::StatusOr<CompileResult> compiled = Compile(b, {{"x", max}}, {{"x", min}});
  EXPECT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(compiled.status().message());
}

TEST(BoundedDimsTest, LengthsUsedAsDataAreRefusedEvenWhenTheMaximumAndOneBelowAgree) {
  // Equal(S, 1) is false at S = 64 and 63; the probe at the minimum (1) sees it differ. A Shape
  // as a graph output is refused too.
  {
    // S - B is 0 wherever both dims move together (4,4), (3,3), (1,1); the probes that lower
    // one dim at a time see it differ.
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {-1, -1});
    b.InitI64("zero", {0});
    b.InitI64("one", {1});
    b.Node("Shape", {"x"}, {"shape"});
    b.Node("Gather", {"shape", "zero"}, {"batch"});
    b.Node("Gather", {"shape", "one"}, {"seq"});
    b.Node("Sub", {"seq", "batch"}, {"diff"});
    SetInt(b.Node("Cast", {"diff"}, {"difff"}), "to", onnx::TensorProto::FLOAT);
    b.Node("Add", {"x", "difff"}, {"y"}, "add");
    Declare(b.g()->add_output(), "y", {-1, -1});
    absl::StatusOr<CompileResult> compiled = Compile(b, {{"x", {4, 4}}}, {{"x", {1, 1}}});
    ASSERT_FALSE(compiled.ok());
    EXPECT_NE(compiled.status().message().find("node 'add' (Add): input 1 is a value computed "
                                               "from a bounded dim's length"),
              std::string::npos)
        << compiled.status();
  }
  for (bool shape_output : {false, true}) {
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {1, -1, 4});
    b.InitI64("one", {1});
    b.Node("Shape", {"x"}, {"shape"});
    if (shape_output) {
      Declare(b.g()->add_output(), "shape", {3});
      b.g()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
          onnx::TensorProto::INT64);
    } else {
      b.Node("Gather", {"shape", "one"}, {"seq"});
      b.Node("Equal", {"seq", "one"}, {"single"});
      b.Node("Where", {"single", "x", "x"}, {"y"}, "where");
      Declare(b.g()->add_output(), "y", {1, -1, 4});
    }
    absl::StatusOr<CompileResult> compiled = Compile(b, {{"x", {1, 64, 4}}}, {{"x", {1, 1, 4}}});
    ASSERT_FALSE(compiled.ok());
    const std::string want = shape_output ? "graph output 'shape' is a value computed from a "
                                            "bounded dim's length"
                                          : "node 'where' (Where): input 0 is a value computed "
                                            "from a bounded dim's length";
    EXPECT_NE(compiled.status().message().find(want), std::string::npos) << compiled.status();
  }
}

TEST(BoundedDimsTest, OpsWithoutARuleAreClearErrors) {
  {
    ModelBuilder b(17);
    Declare(b.g()->add_input(), "x", {4, -1});
    b.Init("scale", {1}, {1.0f});
    SetInt(b.Node("LayerNormalization", {"x", "scale"}, {"y"}, "norm"), "axis", 0);
    Declare(b.g()->add_output(), "y", {4, -1});
    std::vector<int64_t> max = {4, 8}, min = {4, 1};
    absl::StatusOr<CompileResult> compiled = Compile(b, {{"x", max}}, {{"x", min}});
    ASSERT_FALSE(compiled.ok());
    EXPECT_EQ(compiled.status().message(),
              "node 'norm' (LayerNormalization): it normalizes over dim 1 of length x:1 (bound "
              "8); bounded dims (--input-shape MIN..MAX) cannot pass through it yet: give fixed "
              "shapes or one shape profile per shape");
  }
  {
    // ArgMax's -inf fill would tie with an infinite element and win as the last index.
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {-1, 4});
    auto* n = b.Node("ArgMax", {"x"}, {"y"}, "argmax");
    SetInt(n, "axis", 0);
    SetInt(n, "select_last_index", 1);
    Declare(b.g()->add_output(), "y", {1, 4});
    b.g()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
    EXPECT_NE(BoundedError(b, {8, 4}).find("node 'argmax' (ArgMax): select_last_index along "
                                           "dim 0"),
              std::string::npos);
  }
  {
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {-1, 4});
    SetInt(b.Node("Concat", {"x", "x"}, {"y"}, "cat"), "axis", 0);
    Declare(b.g()->add_output(), "y", {-1, 4});
    EXPECT_NE(BoundedError(b, {8, 4}).find("node 'cat' (Concat): it joins or splits along dim 0"),
              std::string::npos);
  }
  {
    // The length as data: x / N.
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {-1, 4});
    b.InitI64("zero", {0});
    b.Node("Shape", {"x"}, {"shape"});
    b.Node("Gather", {"shape", "zero"}, {"n"});
    SetInt(b.Node("Cast", {"n"}, {"nf"}), "to", onnx::TensorProto::FLOAT);
    b.Node("Div", {"x", "nf"}, {"y"}, "div");
    Declare(b.g()->add_output(), "y", {-1, 4});
    EXPECT_NE(BoundedError(b, {8, 4}).find("node 'div' (Div): input 1 is a value computed from "
                                           "a bounded dim's length"),
              std::string::npos);
  }
  {
    // Two bounded dims merged into one output dim.
    ModelBuilder b(13);
    Declare(b.g()->add_input(), "x", {-1, -1});
    b.InitI64("flat", {-1});
    b.Node("Reshape", {"x", "flat"}, {"y"});
    Declare(b.g()->add_output(), "y", {-1});
    absl::StatusOr<CompileResult> compiled = Compile(b, {{"x", {4, 5}}}, {{"x", {1, 1}}});
    ASSERT_FALSE(compiled.ok());
    EXPECT_NE(compiled.status().message().find("graph output 'y' dim 0 is x:0 (bound 4) x x:1 "
                                               "(bound 5): it mixes bounded dims"),
              std::string::npos)
        << compiled.status();
  }
}

}  // namespace
}  // namespace kiln::pipeline
