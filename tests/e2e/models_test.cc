// End-to-end: compile each real model with Kiln's CPU backend, run it, and compare every output
// with the reference stored beside it (|got - expected| <= 1e-4 + 1e-3 |expected|).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/check.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "onnx/onnx_pb.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

void ExpectModelPasses(const std::string& dir) {
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  pipeline::CompileOptions options;  // host target
  auto report = client::CheckModelDir(dir, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->outputs.empty());
  for (const client::OutputComparison& c : report->outputs) {
    EXPECT_TRUE(c.pass) << dir << " " << c.data_set << "/" << c.name << ": " << c.error;
    std::cout << dir << " " << c.name << ": max_abs_err=" << c.max_abs_error
              << " max_rel_err=" << c.max_rel_error << " compile_ms="
              << report->compile.timings.total_ms << "\n";
  }
  EXPECT_TRUE(report->all_pass);
}

TEST(ModelsTest, ExampleSqueezenetInRepo) { ExpectModelPasses("examples/squeezenet1_1"); }

class ManifestModelsTest : public ::testing::TestWithParam<std::string> {};
TEST_P(ManifestModelsTest, Passes) {
  KILN_REQUIRE_PATH_OR_SKIP("../shared/models/MANIFEST.tsv");
  ExpectModelPasses("../shared/models/" + GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shared, ManifestModelsTest, ::testing::ValuesIn(testing::ManifestModels()),
                         testing::ParamName);

// The CNNs of ../shared/models and the mlp with the batch dim of their input and outputs made
// symbolic (dim_param "N", as exporters mark it): kiln check compiles each once with a symbolic
// batch (one artifact; mobilenet_v2 once per shape, for its Clip) and passes at
// batch 1 (test_data_set_0 as stored) and at batch 4 (x, 0.5 x, -x and x
// flipped along its last axis; references from ONNX Runtime 1.30 in
// tests/data/symbolic_batch/, made by scripts/make-symbolic-batch-refs). mobilenet_v2's logits
// hardly depend on the input (rows differ by 4e-8), so for it this checks shapes more than
// batch indexing; the others' rows differ by 0.01-4.
class SymbolicBatchTest : public ::testing::TestWithParam<std::string> {};

// A batch of 4 from the batch-1 tensor x: [x, 0.5 x, -x, x flipped along its last axis].
Tensor Batch4(const Tensor& x) {
  TensorType type = x.type;
  type.shape[0] = 4;
  Tensor out = *Tensor::Zeros(type);
  const int64_t n = x.type.NumElements();
  const int64_t row = x.type.shape.back();
  const float* in = x.data<float>();
  float* o = out.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) {
    o[i] = in[i];
    o[n + i] = 0.5f * in[i];
    o[2 * n + i] = -in[i];
    o[3 * n + i] = in[(i / row) * row + (row - 1 - i % row)];
  }
  return out;
}

TEST_P(SymbolicBatchTest, PassesAtBatch1And4) {
  const std::string name = GetParam();
  const std::filesystem::path src = "../shared/models/" + name;
  KILN_REQUIRE_PATH_OR_SKIP(src.string());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_symbolic_" + name + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "test_data_set_0");
  std::filesystem::create_directories(dir / "test_data_set_1");
  onnx::ModelProto model;
  {
    std::ifstream in(src / "model.onnx", std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&in));
  }
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  auto make_symbolic = [](onnx::ValueInfoProto& vi) {
    auto* dim = vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    dim->Clear();
    dim->set_dim_param("N");
  };
  for (auto& in : *model.mutable_graph()->mutable_input()) {
    if (!initializers.count(in.name())) make_symbolic(in);
  }
  for (auto& out : *model.mutable_graph()->mutable_output()) make_symbolic(out);
  model.mutable_graph()->clear_value_info();
  {
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
  }
  for (const char* file : {"input_0.pb", "output_0.pb"}) {
    std::filesystem::copy_file(src / "test_data_set_0" / file, dir / "test_data_set_0" / file);
  }
  absl::StatusOr<importer::NamedTensor> x =
      importer::ReadTensorFile((src / "test_data_set_0" / "input_0.pb").string());
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_TRUE(importer::WriteTensorFile((dir / "test_data_set_1" / "input_0.pb").string(), x->name,
                                        Batch4(x->tensor))
                  .ok());
  std::filesystem::copy_file("tests/data/symbolic_batch/" + name + ".b4.output_0.pb",
                             dir / "test_data_set_1" / "output_0.pb");

  auto report = client::CheckModelDir(dir.string(), pipeline::CompileOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  // One artifact with a symbolic batch: every op of these models (Gemm, Conv, pooling, the
  // NCHW<x>c layout) has a symbolic lowering, except mobilenet_v2's Clip, whose importer
  // builder does not take symbolic inputs yet (ops.def), so it compiles once per batch size,
  // saying why.
  if (name != "mobilenet_v2") {
    EXPECT_EQ(report->symbolic.rfind("one artifact for all 2 data sets", 0), 0u)
        << report->symbolic;
    EXPECT_TRUE(report->input_shapes.empty()) << report->symbolic;
  } else {
    EXPECT_NE(report->symbolic.find("(Clip): input 0 has symbolic dims"), std::string::npos)
        << report->symbolic;
    ASSERT_EQ(report->input_shapes.size(), 2u) << "one compile per batch size";
  }
  ASSERT_EQ(report->outputs.size(), 2u);
  for (const client::OutputComparison& c : report->outputs) {
    EXPECT_TRUE(c.pass) << name << " " << c.data_set << "/" << c.name << ": " << c.error;
    std::cout << name << " " << c.data_set << " " << c.name << ": max_abs_err=" << c.max_abs_error
              << "\n";
  }

  // One compile with the batch bounded (--input-shape x=1..4,...) runs both data sets.
  pipeline::CompileOptions bounded;
  std::vector<int64_t> max = x->tensor.type.shape, min = max;
  max[0] = 4;
  bounded.shape_profiles = {{{x->name, max}}};
  bounded.bounded_min_shapes = {{x->name, min}};
  report = client::CheckModelDir(dir.string(), bounded);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->input_shapes.size(), 1u);
  EXPECT_NE(report->input_shapes[0].find("=1..4,"), std::string::npos) << report->input_shapes[0];
  ASSERT_EQ(report->outputs.size(), 2u);
  for (const client::OutputComparison& c : report->outputs) {
    EXPECT_TRUE(c.pass) << name << " bounded " << c.data_set << "/" << c.name << ": " << c.error;
    std::cout << name << " bounded " << c.data_set << " " << c.name
              << ": max_abs_err=" << c.max_abs_error << "\n";
  }
  std::filesystem::remove_all(dir);
}
INSTANTIATE_TEST_SUITE_P(Shared, SymbolicBatchTest,
                         ::testing::Values("mlp", "lenet", "squeezenet1_1", "resnet18",
                                           "mobilenet_v2"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// transformer_encoder_dyn (batch and sequence symbolic; data sets at (1,64), (2,16), (3,40)) in
// one artifact two ways: three shape profiles, and one bounded profile input=1..4,1..64,256
// whose kernels mask the padding of the sequence dim before Softmax and the attention matmul.
TEST(ModelsTest, TransformerEncoderDynProfilesAndBoundedDims) {
  const std::string dir = "../shared/models/transformer_encoder_dyn";
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  pipeline::CompileOptions profiles;
  profiles.shape_profiles = {
      {{"input", {1, 64, 256}}}, {{"input", {2, 16, 256}}}, {{"input", {3, 40, 256}}}};
  pipeline::CompileOptions bounded;
  bounded.shape_profiles = {{{"input", {4, 64, 256}}}};
  bounded.bounded_min_shapes = {{"input", {1, 1, 256}}};
  for (const pipeline::CompileOptions* options : {&profiles, &bounded}) {
    auto report = client::CheckModelDir(dir, *options);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->input_shapes.size(), 1u) << "one artifact";
    ASSERT_EQ(report->outputs.size(), 3u) << report->input_shapes[0];
    for (const client::OutputComparison& c : report->outputs) {
      EXPECT_TRUE(c.pass) << report->input_shapes[0] << " " << c.data_set << ": " << c.error;
      std::cout << report->input_shapes[0] << " " << c.data_set
                << ": max_abs_err=" << c.max_abs_error << "\n";
    }
  }
}

// The full-size classic CNNs of the ONNX "light" suite (weights made by ConstantOfShape).
class LightModelsTest : public ::testing::TestWithParam<std::string> {};
TEST_P(LightModelsTest, Passes) {
  ExpectModelPasses("../shared/conformance/light/light_" + GetParam());
}
INSTANTIATE_TEST_SUITE_P(Light, LightModelsTest,
                         ::testing::Values("bvlc_alexnet", "densenet121", "inception_v1",
                                           "inception_v2", "resnet50", "shufflenet", "squeezenet",
                                           "vgg19", "zfnet512"));

// An int8 QDQ ResNet-18 (DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear throughout, uint8
// activations, int8 per-channel weights, int32 biases), rebuilt from ../shared/models/resnet18 by
// scripts/qdq_quantize.py with the calibration ranges in tests/data/resnet18_int8/ranges.json,
// passes kiln check against ONNX Runtime 1.30's int8 execution (all graph optimizations: ORT
// runs the QDQ convolutions as QLinearConv) of test_data_set_0 (tests/data/resnet18_int8/
// output_0.pb, scripts/make-int8-resnet18-refs). Without the QDQ fusion (float convolutions of
// dequantized values, rounding twice) the logits are 0.06 off, far outside the tolerance.
TEST(ModelsTest, Int8QdqResnet18MatchesOnnxRuntime) {
  const std::filesystem::path src = "../shared/models/resnet18";
  KILN_REQUIRE_PATH_OR_SKIP(src.string());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_int8_resnet18_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "test_data_set_0");
  const std::string cmd = "/usr/bin/python3 scripts/qdq_quantize.py quantize " +
                          (src / "model.onnx").string() + " tests/data/resnet18_int8/ranges.json " +
                          (dir / "model.onnx").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::filesystem::copy_file(src / "test_data_set_0" / "input_0.pb",
                             dir / "test_data_set_0" / "input_0.pb");
  std::filesystem::copy_file("tests/data/resnet18_int8/output_0.pb",
                             dir / "test_data_set_0" / "output_0.pb");
  auto report = client::CheckModelDir(dir.string(), pipeline::CompileOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->outputs.size(), 1u);
  const client::OutputComparison& c = report->outputs[0];
  EXPECT_TRUE(c.pass) << c.error;
  EXPECT_LT(c.max_abs_error, 1e-4);
  // One convolution kernel per Conv of the model: the replaced float Conv nodes are dead code.
  int int_convs = 0;
  for (const auto& k : report->compile.artifact.manifest.kernels()) {
    if (k.fused_ops().find("Conv") != std::string::npos) ++int_convs;
  }
  EXPECT_EQ(int_convs, 20);
  std::filesystem::remove_all(dir);
}

// The transformer encoder quantized dynamically as ONNX Runtime's quantize_dynamic does
// (scripts/dynamic_quantize.py: DynamicQuantizeLinear → MatMulInteger → Cast → Mul for every
// MatMul with a constant weight; int8 weights, uint8 activations with a zero point computed per
// inference) against ONNX Runtime 1.30's int8 execution of test_data_set_0 (tests/data/
// transformer_encoder_dynint8/output_0.pb, scripts/make-int8-transformer-refs). The float parts
// (LayerNorm, softmax) differ from ORT's in the last bits, which moves a few activations across
// a rounding boundary of their dynamic quantization: one step (~0.005 here) in a few percent of
// the outputs. The float model is 0.0175 off the same reference, so a tolerance of 0.01 checks
// the int8 arithmetic (on VNNI: the matmul-u8s8 products).
TEST(ModelsTest, DynamicInt8TransformerMatchesOnnxRuntime) {
  const std::filesystem::path src = "../shared/models/transformer_encoder";
  KILN_REQUIRE_PATH_OR_SKIP(src.string());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_dynint8_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "test_data_set_0");
  const std::string cmd = "/usr/bin/python3 scripts/dynamic_quantize.py " +
                          (src / "model.onnx").string() + " " + (dir / "model.onnx").string() +
                          " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::filesystem::copy_file(src / "test_data_set_0" / "input_0.pb",
                             dir / "test_data_set_0" / "input_0.pb");
  std::filesystem::copy_file("tests/data/transformer_encoder_dynint8/output_0.pb",
                             dir / "test_data_set_0" / "output_0.pb");
  const client::Tolerance one_step{/*atol=*/1e-2, /*rtol=*/0};
  auto report = client::CheckModelDir(dir.string(), pipeline::CompileOptions{}, one_step);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->outputs.size(), 1u);
  EXPECT_TRUE(report->outputs[0].pass) << report->outputs[0].error;
  EXPECT_LT(report->outputs[0].max_abs_error, 1e-2);
  // The float model against the int8 reference: outside the tolerance.
  std::filesystem::copy_file(src / "model.onnx", dir / "model.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  auto float_report = client::CheckModelDir(dir.string(), pipeline::CompileOptions{}, one_step);
  ASSERT_TRUE(float_report.ok()) << float_report.status();
  EXPECT_FALSE(float_report->outputs[0].pass);
  EXPECT_GT(float_report->outputs[0].max_abs_error, 1.5e-2);
  std::filesystem::remove_all(dir);
}

// A QDQ MatMul as ORT's quantize_static writes one (DequantizeLinear of a uint8 activation and
// of an int8 per-column weight, MatMul, QuantizeLinear), and a QDQ Gemm (weight [N, K] with
// transB=1 and per-output-channel scales, an int32 bias), are fused at import into integer
// products (QLinearMatMul; MatMulInteger + bias) and run as such (matmul-u8s8 on VNNI): the
// uint8 output equals, exactly, the integer arithmetic y = saturate(round(acc * (sa * sb[n] /
// sy)) + zy) with acc = sum_k (a - za) (b - zb) [+ bias[n]], computed here. The float reading
// of the QDQ graph rounds twice; the imported graph is checked to hold an int32 product.
void CheckQdqProduct(bool gemm) {
  constexpr int64_t M = 6, K = 36, N = 40;
  const float sa = 0.05f, sy = 0.09f;
  const uint8_t za = 3, zy = 7;
  std::vector<float> sb(N);
  std::vector<int8_t> b(K * N);  // [K, N], or [N, K] for the Gemm (transB=1)
  std::vector<int32_t> bias(N);
  std::vector<uint8_t> a(M * K);
  uint32_t seed = 99;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int64_t n = 0; n < N; ++n) sb[n] = 0.002f + 0.0001f * static_cast<float>(n);
  for (auto& v : b) v = static_cast<int8_t>(static_cast<int>(next() % 255) - 127);
  for (auto& v : a) v = static_cast<uint8_t>(next() >> 24);
  for (auto& v : bias) v = static_cast<int32_t>(next() % 4001) - 2000;

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("qdq_matmul");
  auto add_io = [](onnx::ValueInfoProto* v, const std::string& name, int type,
                   std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_io(g->add_input(), "a", onnx::TensorProto::UINT8, {M, K});
  add_io(g->add_output(), "y", onnx::TensorProto::UINT8, {M, N});
  auto init = [&](const std::string& name, int type, std::vector<int64_t> dims, const void* data,
                  size_t bytes) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(static_cast<const char*>(data), bytes));
  };
  const std::vector<int8_t> zb(N, 0);
  init("sa", onnx::TensorProto::FLOAT, {}, &sa, 4);
  init("za", onnx::TensorProto::UINT8, {}, &za, 1);
  init("b", onnx::TensorProto::INT8, gemm ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
       b.data(), b.size());
  std::vector<float> sbias(N);
  for (int64_t n = 0; n < N; ++n) sbias[n] = sa * sb[n];
  const std::vector<int32_t> zbias(N, 0);
  init("bias", onnx::TensorProto::INT32, {N}, bias.data(), 4 * N);
  init("sbias", onnx::TensorProto::FLOAT, {N}, sbias.data(), 4 * N);
  init("zbias", onnx::TensorProto::INT32, {N}, zbias.data(), 4 * N);
  init("sb", onnx::TensorProto::FLOAT, {N}, sb.data(), 4 * N);
  init("zb", onnx::TensorProto::INT8, {N}, zb.data(), N);
  init("sy", onnx::TensorProto::FLOAT, {}, &sy, 4);
  init("zy", onnx::TensorProto::UINT8, {}, &zy, 1);
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("DequantizeLinear", {"a", "sa", "za"}, "a_dq");
  onnx::AttributeProto* axis = node("DequantizeLinear", {"b", "sb", "zb"}, "b_dq")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(gemm ? 0 : 1);
  if (gemm) {
    onnx::AttributeProto* bias_axis =
        node("DequantizeLinear", {"bias", "sbias", "zbias"}, "bias_dq")->add_attribute();
    bias_axis->set_name("axis");
    bias_axis->set_type(onnx::AttributeProto::INT);
    bias_axis->set_i(0);
    onnx::AttributeProto* trans_b =
        node("Gemm", {"a_dq", "b_dq", "bias_dq"}, "mm")->add_attribute();
    trans_b->set_name("transB");
    trans_b->set_type(onnx::AttributeProto::INT);
    trans_b->set_i(1);
  } else {
    node("MatMul", {"a_dq", "b_dq"}, "mm");
  }
  node("QuantizeLinear", {"mm", "sy", "zy"}, "y");

  std::vector<uint8_t> want(M * N);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      int32_t acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        acc += (a[m * K + k] - za) * b[gemm ? n * K + k : k * N + n];
      }
      if (gemm) acc += bias[n];
      const float multiplier = sa * sb[n] / sy;
      const float q = std::nearbyint(static_cast<float>(acc) * multiplier) + zy;
      want[m * N + n] = static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f));
    }
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (std::string(gemm ? "kiln_qdq_gemm_" : "kiln_qdq_matmul_") + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "test_data_set_0");
  {
    std::ofstream f(dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&f));
  }
  auto tensor = [](std::vector<int64_t> dims, const std::vector<uint8_t>& bytes) {
    auto t = Tensor::Zeros(TensorType{DType::kUInt8, std::move(dims)});
    t->bytes = bytes;
    return *t;
  };
  ASSERT_TRUE(importer::WriteTensorFile((dir / "test_data_set_0" / "input_0.pb").string(), "a",
                                        tensor({M, K}, a))
                  .ok());
  ASSERT_TRUE(importer::WriteTensorFile((dir / "test_data_set_0" / "output_0.pb").string(), "y",
                                        tensor({M, N}, want))
                  .ok());
  pipeline::CompileOptions options;
  options.print_ir_after = {"import"};
  std::string imported;
  options.printer = [&](const std::string& stage, const std::string& ir) {
    if (stage == "import") imported = ir;
  };
  auto report = client::CheckModelDir(dir.string(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->outputs.size(), 1u);
  EXPECT_TRUE(report->outputs[0].pass) << report->outputs[0].error;
  // The product is imported as one int32 MatMul (QLinearMatMul's, MatMulInteger's), not a float
  // one.
  EXPECT_NE(imported.find(") : i32[6,40]"), std::string::npos) << imported;
  EXPECT_EQ(imported.find("= MatMul(%"), imported.rfind("= MatMul(%")) << imported;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(imported, '\n'))) {
    if (line.find("= MatMul(") != std::string::npos) {
      EXPECT_NE(line.find(": i32["), std::string::npos) << line;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelsTest, QdqMatMulRunsAsAnIntegerProduct) { CheckQdqProduct(/*gemm=*/false); }
TEST(ModelsTest, QdqGemmRunsAsAnIntegerProduct) { CheckQdqProduct(/*gemm=*/true); }

}  // namespace
}  // namespace kiln
