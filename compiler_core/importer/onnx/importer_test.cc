// Tests of the ONNX importer: canonical forms per op, error detection, external data, and
// real models from ../shared.
#include "compiler_core/importer/onnx/importer.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler_core/importer/onnx/importer_test_util.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using ::testing::HasSubstr;
using testing_util::ConstInts;
using testing_util::Import;
using testing_util::ModelBuilder;
using testing_util::Only;
using testing_util::SetFloat;
using testing_util::SetInt;
using testing_util::SetInts;
using testing_util::SetString;
using Ints = std::vector<int64_t>;

TEST(ImporterTest, ConvAutoPadResolved) {
  ModelBuilder b;
  b.Input("x", {1, 2, 5, 5});
  b.Init("w", {4, 2, 3, 3}, std::vector<float>(72, 0.1f));
  auto* n = b.Node("Conv", {"x", "w"}, {"y"}, "conv");
  SetString(n, "auto_pad", "SAME_UPPER");
  SetInts(n, "strides", {2, 2});
  b.Output("y", {1, 4, 3, 3});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* conv = Only(**g, OpKind::kConv);
  ASSERT_NE(conv, nullptr);
  EXPECT_FALSE(conv->attrs().Has("auto_pad"));
  EXPECT_EQ(conv->attrs().GetInts("pads"), (Ints{1, 1, 1, 1}));
  EXPECT_EQ(conv->attrs().GetInts("kernel_shape"), (Ints{3, 3}));
  EXPECT_EQ(conv->attrs().GetInts("dilations"), (Ints{1, 1}));
  EXPECT_EQ(conv->attrs().GetInt("group", -1), 1);
  EXPECT_EQ(conv->output(0)->type(), (TensorType{DType::kFloat32, {1, 4, 3, 3}}));
  EXPECT_EQ(conv->output(0)->name(), "y");
  EXPECT_EQ((*g)->outputs()[0], conv->output(0));
}

TEST(ImporterTest, PoolAttrsExplicitAndMaxPoolIndicesOnlyWhenUsed) {
  ModelBuilder b;
  b.Input("x", {1, 1, 4, 4});
  auto* n = b.Node("AveragePool", {"x"}, {"y"}, "avg");
  SetInts(n, "kernel_shape", {2, 2});
  b.Output("y", {1, 1, 3, 3});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* p = Only(**g, OpKind::kAveragePool);
  EXPECT_EQ(p->attrs().GetInts("strides"), (Ints{1, 1}));
  EXPECT_EQ(p->attrs().GetInts("pads"), (Ints{0, 0, 0, 0}));
  EXPECT_EQ(p->attrs().GetInt("ceil_mode", -1), 0);
  EXPECT_EQ(p->attrs().GetInt("count_include_pad", -1), 0);

  ModelBuilder m;
  m.Input("x", {1, 1, 4, 4});
  auto* mp = m.Node("MaxPool", {"x"}, {"y", "idx"}, "mp");
  SetInts(mp, "kernel_shape", {2, 2});
  m.Output("y", {1, 1, 3, 3});
  auto ok = Import(m);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(Only(**ok, OpKind::kMaxPool)->outputs().size(), 1u);
  SetInt(mp, "storage_order", 1);
  m.Output("idx", {1, 1, 3, 3}, onnx::TensorProto::INT64);
  auto with_indices = Import(m);
  ASSERT_TRUE(with_indices.ok()) << with_indices.status();
  Node* pool = Only(**with_indices, OpKind::kMaxPool);
  ASSERT_EQ(pool->outputs().size(), 2u);
  EXPECT_EQ(pool->output(1)->type(), (TensorType{DType::kInt64, {1, 1, 3, 3}}));
  EXPECT_EQ(pool->attrs().GetInt("storage_order", -1), 1);
  EXPECT_EQ((*with_indices)->outputs()[1], pool->output(1));
}

TEST(ImporterTest, ClipAndPadPre11Attributes) {
  ModelBuilder b(/*opset=*/10);
  b.Input("x", {2, 3});
  auto* c = b.Node("Clip", {"x"}, {"c"}, "clip");
  SetFloat(c, "min", -1.0f);
  SetFloat(c, "max", 6.0f);
  auto* p = b.Node("Pad", {"c"}, {"y"}, "pad");
  SetInts(p, "pads", {0, 1, 1, 0});
  SetFloat(p, "value", 2.5f);
  b.Output("y", {3, 4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* clip = Only(**g, OpKind::kClip);
  ASSERT_EQ(clip->num_inputs(), 3);
  EXPECT_EQ(clip->input(1)->constant()->GetAsDouble(0), -1.0);
  EXPECT_EQ(clip->input(2)->constant()->GetAsDouble(0), 6.0);
  EXPECT_EQ(clip->input(1)->type(), (TensorType{DType::kFloat32, {}}));
  Node* pad = Only(**g, OpKind::kPad);
  EXPECT_EQ(ConstInts(pad->input(1)), (Ints{0, 1, 1, 0}));
  EXPECT_EQ(pad->input(2)->constant()->GetAsDouble(0), 2.5);
  EXPECT_EQ(pad->attrs().GetString("mode", ""), "constant");
  EXPECT_EQ(pad->output(0)->type(), (TensorType{DType::kFloat32, {3, 4}}));
}

TEST(ImporterTest, Opset13ClipOptionalInputs) {
  ModelBuilder b;
  b.Input("x", {2});
  auto* t = b.Init("hi", {}, {3.0f});
  (void)t;
  b.Node("Clip", {"x", "", "hi"}, {"y"}, "clip");
  b.Output("y", {2});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* clip = Only(**g, OpKind::kClip);
  ASSERT_EQ(clip->num_inputs(), 3);
  EXPECT_EQ(clip->input(1), nullptr);
  EXPECT_TRUE(clip->input(2)->is_constant());
}

TEST(ImporterTest, SoftmaxPre13IsCoercedTo2d) {
  ModelBuilder b(/*opset=*/11);
  b.Input("x", {2, 3, 4});
  b.Node("Softmax", {"x"}, {"y"}, "sm");  // default axis 1
  b.Output("y", {2, 3, 4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<Node*> nodes = (*g)->nodes();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0]->op(), OpKind::kReshape);
  EXPECT_EQ(ConstInts(nodes[0]->input(1)), (Ints{2, 12}));
  EXPECT_EQ(nodes[1]->op(), OpKind::kSoftmax);
  EXPECT_EQ(nodes[1]->attrs().GetInt("axis", -1), 1);
  EXPECT_EQ(nodes[2]->op(), OpKind::kReshape);
  EXPECT_EQ(nodes[2]->output(0)->type(), (TensorType{DType::kFloat32, {2, 3, 4}}));
  EXPECT_EQ(nodes[2]->output(0)->name(), "y");
}

TEST(ImporterTest, SqueezeSliceReshapeCanonical) {
  ModelBuilder b(/*opset=*/11);
  b.Input("x", {1, 4, 1, 6});
  auto* sq = b.Node("Squeeze", {"x"}, {"s"}, "sq");
  SetInts(sq, "axes", {-2, 0});
  b.InitI64("st", {1});
  b.InitI64("en", {-1});
  b.Node("Slice", {"s", "st", "en"}, {"sl"}, "slice");
  b.InitI64("shape", {0, -1});
  b.Node("Reshape", {"sl", "shape"}, {"r"}, "reshape");
  auto* us = b.Node("Unsqueeze", {"r"}, {"y"}, "us");
  SetInts(us, "axes", {-1});
  b.Output("y", {2, 6, 1});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* squeeze = Only(**g, OpKind::kSqueeze);
  EXPECT_EQ(ConstInts(squeeze->input(1)), (Ints{0, 2}));
  Node* slice = Only(**g, OpKind::kSlice);
  ASSERT_EQ(slice->num_inputs(), 5);
  EXPECT_EQ(ConstInts(slice->input(3)), (Ints{0}));
  EXPECT_EQ(ConstInts(slice->input(4)), (Ints{1}));
  EXPECT_EQ(slice->output(0)->type().shape, (Ints{2, 6}));
  EXPECT_EQ(Only(**g, OpKind::kReshape)->attrs().GetInt("allowzero", -1), 0);
  Node* unsq = Only(**g, OpKind::kUnsqueeze);
  EXPECT_EQ(ConstInts(unsq->input(1)), (Ints{2}));
  EXPECT_EQ(unsq->output(0)->type().shape, (Ints{2, 6, 1}));
}

TEST(ImporterTest, ConstantShapeDropoutFolded) {
  ModelBuilder b;
  b.Input("x", {2, 3});
  auto* c = b.Node("Constant", {}, {"k"}, "k");
  auto* a = c->add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : {1.0f, 2.0f, 3.0f}) a->add_floats(v);
  b.Node("Add", {"x", "k"}, {"s"}, "add");
  b.Node("Dropout", {"s"}, {"d"}, "drop");
  b.Node("Shape", {"d"}, {"shp"}, "shape");
  b.Output("d", {2, 3});
  b.Output("shp", {2}, onnx::TensorProto::INT64);
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Only(**g, OpKind::kConstant), nullptr);
  EXPECT_EQ(Only(**g, OpKind::kShape), nullptr);
  EXPECT_EQ(Only(**g, OpKind::kDropout), nullptr);
  EXPECT_NE(Only(**g, OpKind::kIdentity), nullptr);
  Node* add = Only(**g, OpKind::kAdd);
  EXPECT_TRUE(add->input(1)->is_constant());
  EXPECT_EQ(add->input(1)->constant()->GetAsDouble(2), 3.0);
  EXPECT_EQ(ConstInts((*g)->outputs()[1]), (Ints{2, 3}));
}

TEST(ImporterTest, DropoutMaskIsConstantOnes) {
  ModelBuilder b;
  b.Input("x", {2});
  b.Node("Dropout", {"x"}, {"y", "mask"}, "drop");
  b.Output("y", {2});
  b.Output("mask", {2}, onnx::TensorProto::BOOL);
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Value* mask = (*g)->outputs()[1];
  ASSERT_TRUE(mask->is_constant());
  EXPECT_EQ(mask->type(), (TensorType{DType::kBool, {2}}));
  EXPECT_EQ(ConstInts(mask), (Ints{1, 1}));
}

TEST(ImporterTest, ShapeChainFoldedForReshape) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters emit for x.view(n, -1).
  ModelBuilder b;
  b.Input("x", {2, 3, 4});
  b.InitI64("zero", {0});
  b.InitI64("minus1", {-1});
  b.Node("Shape", {"x"}, {"shp"}, "shape");
  auto* gather = b.Node("Gather", {"shp", "zero"}, {"n"}, "gather");
  SetInt(gather, "axis", 0);
  auto* cat = b.Node("Concat", {"n", "minus1"}, {"target"}, "concat");
  SetInt(cat, "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  b.Output("y", {2, 12});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  Node* reshape = Only(**g, OpKind::kReshape);
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(ConstInts(reshape->input(1)), (Ints{2, -1}));
  EXPECT_EQ(reshape->output(0)->type().shape, (Ints{2, 12}));
}

TEST(ImporterTest, Errors) {
  EXPECT_EQ(ImportOnnxBytes("\x0a\xff\xff garbage", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  {
    ModelBuilder b;
    b.Input("x", {2, 3});
    b.Init("w", {2, 3}, std::vector<float>(6, 1.0f));
    b.Node("Add", {"x", "w"}, {"y"});
    b.Output("y", {2, 3});
    std::string bytes = b.Bytes();
    auto r = ImportOnnxBytes(bytes.substr(0, bytes.size() / 2), "");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  {
    ModelBuilder b;
    b.Input("x", {2, 3});
    b.Node("Relu", {"x", }, {"a"}, "a");
    b.Node("Add", {"a", "c"}, {"b"}, "b");
    b.Node("Relu", {"b"}, {"c"}, "c");
    b.Output("b", {2, 3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("cycle"));
  }
  {
    ModelBuilder b;
    b.Input("x", {2, 3});
    b.Node("Relu", {"nope"}, {"y"}, "r");
    b.Output("y", {2, 3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("node 'r' (Relu): input 'nope' is undefined"));
  }
  {
    ModelBuilder b;
    b.Input("x", {2, 3});
    b.Input("z", {4, 5});
    b.Node("Add", {"x", "z"}, {"y"}, "add");
    b.Output("y", {2, 3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("node 'add' (Add)"));
  }
  {
    ModelBuilder b;
    b.Input("x", {2, 3});
    b.Node("Foo", {"x"}, {"y"}, "x1");
    b.Output("y", {2, 3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(r.status().message(), HasSubstr("node 'x1' (Foo): unsupported op 'Foo'"));
  }
  {
    ModelBuilder b;
    b.Input("x", {3}, "batch");
    b.Node("Relu", {"x"}, {"y"}, "r");
    b.Output("y", {3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "graph input 'x' has symbolic dims [3,batch]: give its shape with --input-shape "
              "x=3,D1");
  }
  {
    ModelBuilder b(/*opset=*/18);
    b.Input("x", {3});
    b.Node("Relu", {"x"}, {"y"}, "r");
    b.Output("y", {3});
    auto r = Import(b);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(r.status().message(), HasSubstr("unsupported opset 18"));
  }
  {
    // Opsets 1..6 are upgraded to 7 by the ONNX version converter and import normally.
    ModelBuilder b(/*opset=*/6);
    b.Input("x", {3});
    b.Node("Relu", {"x"}, {"y"}, "r");
    b.Output("y", {3});
    auto r = Import(b);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->nodes().size(), 1u);
    EXPECT_EQ((*r)->nodes()[0]->op(), graph::OpKind::kRelu);
  }
  EXPECT_EQ(ImportOnnxFile("/nonexistent/model.onnx").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ImporterTest, BFloat16IsCastOnly) {
  ModelBuilder cast(13);
  cast.Input("x", {2}, "", onnx::TensorProto::BFLOAT16);
  SetInt(cast.Node("Cast", {"x"}, {"y"}), "to", onnx::TensorProto::FLOAT);
  cast.Output("y", {2});
  auto g = Import(cast);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->inputs()[0]->type().dtype, DType::kBFloat16);
  ModelBuilder relu(13);
  relu.Input("x", {2}, "", onnx::TensorProto::BFLOAT16);
  relu.Node("Relu", {"x"}, {"y"});
  relu.Output("y", {2}, onnx::TensorProto::BFLOAT16);
  auto r = Import(relu);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(
      r.status().message(),
      HasSubstr("(Relu): bf16 values are supported by Cast, CastLike, Identity and MatMul only"));
}

// ConstantOfShape is folded to a constant up to 64 MiB; a larger one is an Expand of its
// value computed at run time, and one past 1 TiB is refused (nothing is allocated for it).
TEST(ImporterTest, LargeConstantOfShapeIsNotFoldedAtImport) {
  auto build = [](int64_t n) {
    ModelBuilder b;
    b.InitI64("s", {n});
    b.Node("ConstantOfShape", {"s"}, {"y"});
    b.Output("y", {n});
    return b;
  };
  auto small = Import(build(16));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_TRUE((*small)->outputs()[0]->is_constant());
  auto large = Import(build(int64_t{1} << 25));
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_NE(Only(**large, OpKind::kExpand), nullptr);
  EXPECT_EQ((*large)->outputs()[0]->type().NumElements(), int64_t{1} << 25);
  auto huge = Import(build(int64_t{1} << 40));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.status().message(),
              HasSubstr("(ConstantOfShape): output 0 ('y') has type f32[1099511627776]: takes "
                        "4398046511104 bytes, more than the limit of 1099511627776 "
                        "(max_tensor_bytes)"));
}

TEST(ImporterTest, InitializerListedAsInputIsConstant) {
  ModelBuilder b(/*opset=*/8, /*ir_version=*/3);
  b.Input("x", {2});
  b.Input("w", {2});
  b.Init("w", {2}, {1.0f, 2.0f});
  b.Node("Mul", {"x", "w"}, {"y"}, "mul");
  b.Output("y", {2});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->inputs().size(), 1u);
  EXPECT_TRUE(Only(**g, OpKind::kMul)->input(1)->is_constant());
}

TEST(ImporterTest, ExternalData) {
  std::string dir = ::testing::TempDir() + "/kiln_ext_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::vector<float> w{0.0f, 0.0f, 1.5f, -2.0f, 4.0f, 8.0f};  // 8 bytes of padding first
  {
    std::ofstream out(dir + "/weights.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  }
  ModelBuilder b;
  b.Input("x", {2, 2});
  auto* t = b.g()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add_kv("location", "weights.bin");
  add_kv("offset", "8");
  add_kv("length", "16");
  b.Node("Add", {"x", "w"}, {"y"}, "add");
  b.Output("y", {2, 2});
  auto g = ImportOnnxBytes(b.Bytes(), dir);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Value* c = Only(**g, OpKind::kAdd)->input(1);
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->constant()->GetAsDouble(0), 1.5);
  EXPECT_EQ(c->constant()->GetAsDouble(3), 8.0);
  // Bytes with no directory (an upload to kilnd, a worker's task) never read files: not even
  // ones in the working directory.
  absl::Status uploaded = ImportOnnxBytes(b.Bytes(), "").status();
  EXPECT_EQ(uploaded.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(uploaded.message(),
            "tensor 'w': external data ('weights.bin') is refused in a model sent as bytes; only a "
            "model file may refer to files beside it (the kiln CLI inlines them before "
            "uploading)");
  // What the CLI uploads instead: the same model with the data inlined, importable as bytes.
  absl::StatusOr<std::string> inlined = InlineExternalDataOfModel(b.Bytes(), dir);
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  auto from_upload = ImportOnnxBytes(*inlined, "");
  ASSERT_TRUE(from_upload.ok()) << from_upload.status();
  EXPECT_EQ(graph::GraphHash(**from_upload), graph::GraphHash(**g));
  EXPECT_EQ(*InlineExternalDataOfModel(*inlined, ""), *inlined);  // nothing left to inline
  // Missing file and escaping locations fail.
  EXPECT_FALSE(ImportOnnxBytes(b.Bytes(), dir + "/missing").ok());
  t->mutable_external_data(0)->set_value("../weights.bin");
  EXPECT_EQ(ImportOnnxBytes(b.Bytes(), dir).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ImporterTest, RealModels) {
  struct Case {
    const char* path;
    TensorType out;
  };
  for (const Case& c :
       {Case{"../shared/models/mlp/model.onnx", {DType::kFloat32, {1, 10}}},
        Case{"../shared/models/lenet/model.onnx", {DType::kFloat32, {1, 10}}},
        Case{"../shared/models/squeezenet1_1/model.onnx", {DType::kFloat32, {1, 1000}}},
        Case{"../shared/models/resnet18/model.onnx", {DType::kFloat32, {1, 1000}}},
        Case{"../shared/models/mobilenet_v2/model.onnx", {DType::kFloat32, {1, 1000}}}}) {
    if (!std::filesystem::exists(c.path)) GTEST_SKIP() << c.path << " is not available";
    auto g = ImportOnnxFile(c.path);
    ASSERT_TRUE(g.ok()) << c.path << ": " << g.status();
    ASSERT_EQ((*g)->outputs().size(), 1u);
    EXPECT_EQ((*g)->outputs()[0]->type(), c.out) << c.path;
  }
  if (std::filesystem::exists("../shared/models/transformer_encoder/model.onnx")) {
    auto g = ImportOnnxFile("../shared/models/transformer_encoder/model.onnx");
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_NE(Only(**g, OpKind::kLayerNormalization), nullptr);
    EXPECT_EQ((*g)->outputs()[0]->type(), (TensorType{DType::kFloat32, {1, 64, 256}}));
  }
}

}  // namespace
}  // namespace kiln::importer

namespace kiln::importer {
namespace {

// x[batch,4] + y[batch,4] -> z, Relu -> r: two inputs sharing one dim_param.
std::string SharedBatchModel(const std::string& y_first_dim = "batch") {
  ModelBuilder b;
  b.Input("x", {});
  b.Input("y", {});
  for (int i = 0; i < 2; ++i) {
    auto* shape = b.g()->mutable_input(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
    const std::string first = i == 0 ? "batch" : y_first_dim;
    if (first.empty()) {
      shape->add_dim();  // unknown: neither value nor dim_param
    } else {
      shape->add_dim()->set_dim_param(first);
    }
    shape->add_dim()->set_dim_value(4);
  }
  b.Node("Add", {"x", "y"}, {"z"});
  b.Node("Relu", {"z"}, {"r"});
  b.Output("r", {});
  auto* out_shape = b.g()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  out_shape->add_dim()->set_dim_param("batch");
  out_shape->add_dim()->set_dim_value(4);
  return b.Bytes();
}

absl::StatusOr<std::unique_ptr<Graph>> ImportWith(const std::string& bytes,
                                                  const std::vector<std::string>& specs) {
  std::vector<NamedShape> given;
  for (const std::string& spec : specs) {
    absl::Status parsed = ParseInputShape(spec, given);
    if (!parsed.ok()) return parsed;
  }
  absl::StatusOr<ShapeProfiles> profiles = ProfilesOf(given);
  if (!profiles.ok()) return profiles.status();
  EXPECT_LE(profiles->size(), 1u);
  ImportOptions options;
  if (!profiles->empty()) options.input_shapes = profiles->front();
  return ImportOnnxBytes(bytes, "", options);
}

TEST(InputShapesTest, SymbolicInputWithoutShapeNamesEachInputAndTheFlag) {
  auto r = ImportWith(SharedBatchModel(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "graph input 'x' has symbolic dims [batch,4]: give its shape with --input-shape "
            "x=D0,4; graph input 'y' has symbolic dims [batch,4]: give its shape with "
            "--input-shape y=D0,4");
}

TEST(InputShapesTest, OneInputBindsTheDimParamItShares) {
  auto r = ImportWith(SharedBatchModel(), {"x=3,4"});
  ASSERT_TRUE(r.ok()) << r.status();
  const Graph& g = **r;
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[0]->type().shape, (Ints{3, 4}));
  EXPECT_EQ(g.inputs()[1]->type().shape, (Ints{3, 4}));
  EXPECT_EQ(g.outputs()[0]->type().shape, (Ints{3, 4}));
  // Another batch is another graph (and so another artifact key).
  auto other = ImportWith(SharedBatchModel(), {"y=5,4"});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ((*other)->inputs()[0]->type().shape, (Ints{5, 4}));
}

TEST(InputShapesTest, BadShapesAreClearErrors) {
  const std::string model = SharedBatchModel();
  auto two_values = ImportWith(model, {"x=3,4", "y=2,4"});
  EXPECT_EQ(two_values.status().message(),
            "--input-shape: dim 'batch' is 3 in input 'x' (dim 0) but 2 in input 'y' (dim 0); "
            "one dim_param takes one value");
  auto fixed = ImportWith(model, {"x=3,5"});
  EXPECT_EQ(fixed.status().message(),
            "--input-shape x=3,5: dim 1 of graph input 'x' [batch,4] is fixed at 4");
  auto rank = ImportWith(model, {"x=3"});
  EXPECT_EQ(rank.status().message(),
            "--input-shape x=3: graph input 'x' has rank 2 [batch,4], the shape gives 1 dims");
  auto unknown = ImportWith(model, {"r=3,4"});
  EXPECT_EQ(unknown.status().message(),
            "--input-shape: 'r' is not a graph input (inputs: x, y)");
  for (const auto* r : {&two_values, &fixed, &rank, &unknown}) {
    EXPECT_EQ(r->status().code(), absl::StatusCode::kInvalidArgument);
  }
  // Sizes past 1 TiB (or past int64) are refused before anything is planned.
  auto huge = ImportWith(model, {"x=9223372036854775807,4"});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(huge.status().message(),
            "graph input 'x' has type f32[9223372036854775807,4]: its element count overflows "
            "int64");
  TensorType big{DType::kFloat32, {int64_t{1} << 20, int64_t{1} << 18}};
  EXPECT_EQ(big.CheckedNumBytes(), kMaxTensorBytes);
  big.shape[1] += 1;
  EXPECT_EQ(big.CheckedNumBytes(), -1);
  // An unknown dim (no dim_param) is bound by nothing but its own input's shape.
  auto anonymous = ImportWith(SharedBatchModel(""), {"x=3,4"});
  EXPECT_EQ(anonymous.status().message(),
            "graph input 'y' has symbolic dims [?,4]: give its shape with --input-shape y=D0,4");
  EXPECT_TRUE(ImportWith(SharedBatchModel(""), {"x=3,4", "y=3,4"}).ok());
}

TEST(InputShapesTest, ParseAndFormat) {
  std::vector<NamedShape> given;
  EXPECT_TRUE(ParseInputShape("x=1,3,224,224", given).ok());
  EXPECT_TRUE(ParseInputShape("scalar=", given).ok());
  EXPECT_TRUE(ParseInputShape("x=1,3,224,224", given).ok());  // the same shape again
  auto one = ProfilesOf(given);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(FormatInputShapes(one->front()), "scalar= x=1,3,224,224");
  EXPECT_EQ(ParseInputShape("x", given).message(),
            "--input-shape 'x': no '=' (expected NAME=D0,D1,...)");
  EXPECT_EQ(ParseInputShape("=1,2", given).message(),
            "--input-shape '=1,2': empty input name (expected NAME=D0,D1,...)");
  EXPECT_EQ(ParseInputShape("y=1,-1", given).message(),
            "--input-shape 'y=1,-1': dim '-1' is not an integer >= 0 (expected NAME=D0,D1,...)");
  EXPECT_EQ(ParseInputShape("y=1,b", given).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(given.size(), 3u);  // failed specs add nothing
}

// A fixed dim may be 0: an empty KV cache on a language model's first decoding step.
TEST(InputShapesTest, ZeroDimIsAFixedSize) {
  std::vector<NamedShape> given;
  ASSERT_TRUE(ParseInputShape("past_key_0=1,2,0,32", given).ok());
  auto one = ProfilesOf(given);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(FormatInputShapes(one->front()), "past_key_0=1,2,0,32");
}

// Bounded dims: MIN..MAX dims record their minimums (a fixed dim its value); ranges need a
// minimum map, and exclude several profiles.
TEST(InputShapesTest, BoundedDimsParseAndFormat) {
  std::vector<NamedShape> given;
  InputShapes mins;
  ASSERT_TRUE(ParseInputShape("input=1..4,1..64,256", given, &mins).ok());
  ASSERT_TRUE(ParseInputShape("mask=2..2,8", given, &mins).ok());  // a one-value range is fixed
  EXPECT_EQ(mins, (InputShapes{{"input", {1, 1, 256}}}));
  auto profiles = BoundedProfilesOf(given, mins);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ(FormatBoundedShapes(profiles->front(), mins), "input=1..4,1..64,256 mask=2,8");
  EXPECT_EQ(ParseInputShape("x=4..1,3", given, &mins).message(),
            "--input-shape 'x=4..1,3': dim '4..1' is not a range MIN..MAX of integers with 1 <= "
            "MIN <= MAX (expected NAME=D0,D1,..., a dim either N or MIN..MAX)");
  EXPECT_EQ(ParseInputShape("x=0..4", given, &mins).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseInputShape("x=1..", given, &mins).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseInputShape("input=1..2,64,256", given, &mins).message(),
            "--input-shape 'input=1..2,64,256': input 'input' has bounded dims twice (expected "
            "NAME=D0,D1,..., a dim either N or MIN..MAX)");
  EXPECT_EQ(ParseInputShape("x=1..4", given).message(),
            "--input-shape 'x=1..4': dim '1..4' is a range; this command takes fixed dims only "
            "(expected NAME=D0,D1,...)");
  given.push_back({"input", {2, 16, 256}});
  EXPECT_EQ(BoundedProfilesOf(given, mins).status().message(),
            "--input-shape: bounded dims (MIN..MAX) and several shape profiles (input=4,64,256 "
            "mask=2,8 | input=2,16,256 mask=2,8) cannot be combined; give one bounded profile");
}

// The k-th shape of an input is profile k's; an input given once is in every profile.
TEST(InputShapesTest, ProfilesOfGroupsTheKthShapes) {
  std::vector<NamedShape> given;
  for (const char* spec : {"x=1,3", "mask=1", "x=8,3", "y=2", "y=5"}) {
    ASSERT_TRUE(ParseInputShape(spec, given).ok()) << spec;
  }
  auto profiles = ProfilesOf(given);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(FormatProfiles(*profiles), "mask=1 x=1,3 y=2 | mask=1 x=8,3 y=5");
  auto again = ProfilesOf(GivenShapes(*profiles));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *profiles);
  EXPECT_TRUE(ProfilesOf({})->empty());

  ASSERT_TRUE(ParseInputShape("y=7", given).ok());
  EXPECT_EQ(ProfilesOf(given).status().message(),
            "--input-shape: input 'x' is given 2 shapes and 'y' 3; give each input once (for "
            "every profile) or once per profile");
  // Equal profiles collapse into one.
  auto same = ProfilesOf({{"x", {1, 3}}, {"x", {1, 3}}, {"x", {2, 3}}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(FormatProfiles(*same), "x=1,3 | x=2,3");
}

TEST(InputShapesTest, ReadInputSignatures) {
  auto sigs = ReadInputSignatures(SharedBatchModel());
  ASSERT_TRUE(sigs.ok()) << sigs.status();
  ASSERT_EQ(sigs->size(), 2u);
  EXPECT_EQ((*sigs)[0].name, "x");
  EXPECT_TRUE((*sigs)[0].symbolic());
  EXPECT_EQ((*sigs)[0].DimsText(), "[batch,4]");
  EXPECT_EQ(ReadInputSignatures("garbage").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::importer
