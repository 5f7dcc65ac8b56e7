// Bad input never crashes kiln: each malformed model, bad target or corrupted artifact gets a
// precise error on stderr and exit status 1. Runs the real `kiln` binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler_core/importer/onnx/tensor_file.h"
#include "onnx/onnx_pb.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal
  std::string output;  // stdout and stderr
};

CommandResult RunKiln(const std::string& args) {
  std::string cmd = testing::BinDir() + "/kiln " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

class ErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_errors_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // A model with one float input "x" of `shape`, opset 13, and the given nodes/output.
  static onnx::ModelProto BaseModel(const std::vector<int64_t>& shape) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    m.add_opset_import()->set_version(13);
    auto* g = m.mutable_graph();
    g->set_name("g");
    AddValueInfo(g->add_input(), "x", shape);
    return m;
  }
  static void AddValueInfo(onnx::ValueInfoProto* v, const std::string& name,
                           const std::vector<int64_t>& shape) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  static onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& op,
                                  const std::vector<std::string>& ins,
                                  const std::vector<std::string>& outs, const std::string& name) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  std::string WriteModel(const std::string& name, const onnx::ModelProto& m) {
    return Write(name, m.SerializeAsString());
  }

  // Writes a TensorProto named `name` (f32 for float values, i64 for int64 ones) of `dims` holding
  // `values` as `file` in the test directory; returns its path.
  template <typename T>
  std::string WriteTensor(const std::string& file, const std::string& name,
                          const std::vector<int64_t>& dims, const std::vector<T>& values) {
    onnx::TensorProto t;
    t.set_name(name);
    for (int64_t d : dims) t.add_dims(d);
    if constexpr (std::is_same_v<T, float>) {
      t.set_data_type(onnx::TensorProto::FLOAT);
      for (float v : values) t.add_float_data(v);
    } else {
      t.set_data_type(onnx::TensorProto::INT64);
      for (int64_t v : values) t.add_int64_data(v);
    }
    return Write(file, t.SerializeAsString());
  }

  // The dims and values of the tensor file `path` that `kiln run` wrote (empty if unreadable).
  template <typename T>
  static std::pair<std::vector<int64_t>, std::vector<T>> ReadOutput(const std::string& path) {
    absl::StatusOr<importer::NamedTensor> t = importer::ReadTensorFile(path);
    if (!t.ok()) return {};
    const T* data = t->tensor.data<T>();
    return {t->tensor.type.shape, std::vector<T>(data, data + t->tensor.type.NumElements())};
  }

  void ExpectError(const std::string& args, const std::string& expected_substring) {
    CommandResult r = RunKiln(args);
    EXPECT_EQ(r.exit_code, 1) << "kiln " << args << " must fail cleanly; output:\n" << r.output;
    EXPECT_NE(r.output.find(expected_substring), std::string::npos)
        << "kiln " << args << " output lacks '" << expected_substring << "':\n"
        << r.output;
  }

  fs::path dir_;
};

TEST_F(ErrorsTest, MissingFile) {
  ExpectError("compile " + (dir_ / "nope.onnx").string() + " -o " + (dir_ / "o.kiln").string(),
              "NOT_FOUND");
}

TEST_F(ErrorsTest, TruncatedModel) {
  KILN_REQUIRE_PATH_OR_SKIP("examples/squeezenet1_1/model.onnx");
  std::ifstream in("examples/squeezenet1_1/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = Write("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  ExpectError("compile " + path + " -o " + (dir_ / "o.kiln").string(), "INVALID_ARGUMENT");
  EXPECT_FALSE(fs::exists(dir_ / "o.kiln")) << "no artifact may be written on error";
}

TEST_F(ErrorsTest, NotAProtobuf) {
  std::string path = Write("garbage.onnx", std::string("\xff\xff\xff\xff this is not onnx", 22));
  ExpectError("compile " + path + " -o " + (dir_ / "o.kiln").string(), "INVALID_ARGUMENT");
}

TEST_F(ErrorsTest, EmptyFileAndDirectory) {
  std::string empty = Write("empty.onnx", "");
  ExpectError("compile " + empty + " -o " + (dir_ / "o.kiln").string(),
              "INVALID_ARGUMENT: the ONNX model file is empty");
  ExpectError("compile " + dir_.string() + " -o " + (dir_ / "o.kiln").string(),
              "is a directory, not an ONNX model file");
}

TEST_F(ErrorsTest, UnknownPrintStageAndInputName) {
  onnx::ModelProto m = BaseModel({2});
  AddNode(m, "Relu", {"x"}, {"y"}, "r");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {2});
  std::string model = WriteModel("relu.onnx", m);
  std::string artifact = (dir_ / "relu.kiln").string();
  ExpectError("compile " + model + " -o " + artifact + " --print-ir-after=fuson",
              "--print-ir-after: unknown stage 'fuson'");
  ASSERT_EQ(RunKiln("compile " + model + " -o " + artifact).exit_code, 0);
  ExpectError(
      "run " + artifact + " --input z=" + model + " --output-dir " + (dir_ / "out").string(),
      "the model has no input named 'z' (its inputs: x)");
}

TEST_F(ErrorsTest, GraphWithCycle) {
  onnx::ModelProto m = BaseModel({2});
  AddNode(m, "Add", {"x", "b"}, {"a"}, "first");
  AddNode(m, "Relu", {"a"}, {"b"}, "second");
  AddValueInfo(m.mutable_graph()->add_output(), "b", {2});
  ExpectError("compile " + WriteModel("cycle.onnx", m) + " -o " + (dir_ / "o.kiln").string(),
              "INVALID_ARGUMENT");
}

TEST_F(ErrorsTest, UndefinedInput) {
  onnx::ModelProto m = BaseModel({2});
  AddNode(m, "Add", {"x", "nowhere"}, {"y"}, "adder");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {2});
  ExpectError("compile " + WriteModel("undef.onnx", m) + " -o " + (dir_ / "o.kiln").string(),
              "nowhere");
}

TEST_F(ErrorsTest, ShapeMismatch) {
  onnx::ModelProto m = BaseModel({2, 3});
  AddValueInfo(m.mutable_graph()->add_input(), "z", {4, 5});
  AddNode(m, "Add", {"x", "z"}, {"y"}, "bad_add");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {2, 3});
  ExpectError("compile " + WriteModel("shape.onnx", m) + " -o " + (dir_ / "o.kiln").string(),
              "INVALID_ARGUMENT");
}

TEST_F(ErrorsTest, UnsupportedOpIsNamed) {
  onnx::ModelProto m = BaseModel({3, 3});
  AddNode(m, "StringNormalizer", {"x"}, {"y"}, "normalizer");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {3, 3});
  CommandResult r =
      RunKiln("compile " + WriteModel("strnorm.onnx", m) + " -o " + (dir_ / "o.kiln").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("UNIMPLEMENTED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("normalizer"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("StringNormalizer"), std::string::npos) << r.output;
}

TEST_F(ErrorsTest, BadTarget) {
  onnx::ModelProto m = BaseModel({2});
  AddNode(m, "Relu", {"x"}, {"y"}, "r");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {2});
  std::string model = WriteModel("relu.onnx", m);
  ExpectError("compile " + model + " -o " + (dir_ / "o.kiln").string() + " --target cpu:nonsense",
              "nonsense");
  ExpectError("compile " + model + " -o " + (dir_ / "o.kiln").string() + " --target tpu",
              "INVALID_ARGUMENT");
}

TEST_F(ErrorsTest, CorruptedArtifactAndWrongInput) {
  onnx::ModelProto m = BaseModel({2});
  AddNode(m, "Relu", {"x"}, {"y"}, "r");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {2});
  std::string model = WriteModel("relu.onnx", m);
  std::string artifact = (dir_ / "relu.kiln").string();
  CommandResult ok = RunKiln("compile " + model + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;

  // An input of the wrong shape is refused with the input named.
  onnx::TensorProto t;
  t.set_name("x");
  t.add_dims(3);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) t.add_float_data(1.0f);
  std::string input = Write("x.pb", t.SerializeAsString());
  ExpectError(
      "run " + artifact + " --input x=" + input + " --output-dir " + (dir_ / "out").string(), "x");

  // Flip one byte in the middle of the artifact: detected by the checksum, never run.
  std::fstream f(artifact, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  f.seekg(size / 2);
  char c;
  f.read(&c, 1);
  c ^= 0x40;
  f.seekp(size / 2);
  f.write(&c, 1);
  f.close();
  ExpectError("inspect " + artifact, "checksum");
}

// A Slice whose starts and ends are graph inputs compiles for the declared output shape; run
// time values that give that shape slice as ONNX says, other values are refused with the node,
// the shape they give and the compiled one, and nothing is written.
TEST_F(ErrorsTest, RuntimeSliceOperandsAreChecked) {
  onnx::ModelProto m = BaseModel({6});
  auto add_i64_input = [&](const std::string& name) {
    auto* v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::INT64);
    t->mutable_shape()->add_dim()->set_dim_value(1);
  };
  add_i64_input("starts");
  add_i64_input("ends");
  AddNode(m, "Slice", {"x", "starts", "ends"}, {"y"}, "s");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {3});
  std::string model = WriteModel("slice.onnx", m);
  std::string artifact = (dir_ / "slice.kiln").string();
  CommandResult ok = RunKiln("compile " + model + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;

  std::string xf = WriteTensor<float>("x.pb", "x", {6}, {0, 10, 20, 30, 40, 50});
  auto i64 = [&](const std::string& name, int64_t v) {
    return WriteTensor<int64_t>(name + std::to_string(v) + ".pb", name, {1}, {v});
  };
  // starts -2, ends 100: the last two elements... of a 3-element output is a mismatch; starts
  // -4 (= 2) with ends 100 (clamped to 6) gives [2, 6): 4 elements, also refused; starts 1,
  // ends -2 (= 4) gives [1, 4) = {10, 20, 30}.
  std::string out = (dir_ / "out").string();
  CommandResult run =
      RunKiln("run " + artifact + " --input x=" + xf + " --input starts=" + i64("starts", 1) +
              " --input ends=" + i64("ends", -2) + " --output-dir " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto [shape, got] = ReadOutput<float>(out + "/y.pb");
  EXPECT_EQ(shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(got, (std::vector<float>{10, 20, 30}));

  std::string bad = (dir_ / "bad").string();
  ExpectError("run " + artifact + " --input x=" + xf + " --input starts=" + i64("starts", -4) +
                  " --input ends=" + i64("ends", 100) + " --output-dir " + bad,
              "node 's' (Slice): starts/ends/axes/steps given at run time give output shape "
              "[4], but the artifact was compiled for [3]");
  EXPECT_FALSE(fs::exists(bad + "/y.pb"));
}

// Bounded dims from the command line: x [N, 3] compiled with N=1..4 runs at N=2 (the column
// sums read only the 2 rows, the Relu output has 2 rows), and N=5 or a wrong fixed dim are
// refused with the range, writing nothing.
TEST_F(ErrorsTest, BoundedDimsAreCheckedAtRunTime) {
  onnx::ModelProto m = BaseModel({3});
  auto* dims =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("N");
  dims->add_dim()->set_dim_value(3);
  onnx::TensorProto* axes = m.mutable_graph()->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  auto* sum = AddNode(m, "ReduceSum", {"x", "axes"}, {"y"}, "sum");
  auto* keep = sum->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  AddNode(m, "Relu", {"x"}, {"z"}, "relu");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {3});
  AddValueInfo(m.mutable_graph()->add_output(), "z", {1, 3});
  m.mutable_graph()
      ->mutable_output(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  std::string model = WriteModel("bounded.onnx", m);
  std::string artifact = (dir_ / "bounded.kiln").string();
  CommandResult ok = RunKiln("compile " + model + " --input-shape x=1..4,3 -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("(bounded dims x:0=1..4, "), std::string::npos) << ok.output;
  CommandResult inspect = RunKiln("inspect " + artifact);
  EXPECT_NE(inspect.output.find("input:  x: f32[1..4,3]"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("bounded dims:     x:0=1..4"), std::string::npos) << inspect.output;

  std::string out = (dir_ / "out").string();
  std::string x2 = WriteTensor<float>("x2.pb", "x", {2, 3}, {1, -2, 3, 4, 5, -6});
  CommandResult run = RunKiln("run " + artifact + " --input x=" + x2 + " --output-dir " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto [ys, y] = ReadOutput<float>(out + "/y.pb");
  EXPECT_EQ(ys, (std::vector<int64_t>{3}));
  EXPECT_EQ(y, (std::vector<float>{5, 3, -3}));
  auto [zs, z] = ReadOutput<float>(out + "/z.pb");
  EXPECT_EQ(zs, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(z, (std::vector<float>{1, 0, 3, 4, 5, 0}));

  std::string bad = (dir_ / "bad").string();
  std::string x5 = WriteTensor<float>("x5.pb", "x", {5, 3}, std::vector<float>(15, 1.0f));
  ExpectError("run " + artifact + " --input x=" + x5 + " --output-dir " + bad,
              "input 0 ('x'): got shape [5,3], expected [1..4,3]: dim 0 is outside the bounded "
              "range of x:0 (1..4)");
  std::string x24 = WriteTensor<float>("x24.pb", "x", {2, 4}, std::vector<float>(8, 1.0f));
  ExpectError("run " + artifact + " --input x=" + x24 + " --output-dir " + bad,
              "input 0 ('x'): got shape [2,4], expected [1..4,3]: dim 1 is fixed at 3");
  EXPECT_FALSE(fs::exists(bad + "/y.pb"));
  ExpectError("compile " + model + " --input-shape x=3..2,3 -o " + artifact,
              "--input-shape 'x=3..2,3': dim '3..2' is not a range MIN..MAX of integers with 1 "
              "<= MIN <= MAX");
}

// NonZero compiles for the declared output shape [2, 3]: data with three non-zero elements give
// their row-major indices; data with two are refused naming the node and both shapes, and
// nothing is written.
TEST_F(ErrorsTest, DataDependentShapeIsChecked) {
  onnx::ModelProto m = BaseModel({2, 2});
  AddNode(m, "NonZero", {"x"}, {"y"}, "nz");
  auto* y = m.mutable_graph()->add_output();
  AddValueInfo(y, "y", {2, 3});
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  std::string artifact = (dir_ / "nz.kiln").string();
  CommandResult ok = RunKiln("compile " + WriteModel("nz.onnx", m) + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto input = [&](const std::string& name, std::vector<float> v) {
    return WriteTensor<float>(name, "x", {2, 2}, v);
  };
  std::string out = (dir_ / "out").string();
  CommandResult run = RunKiln("run " + artifact + " --input x=" + input("three.pb", {1, 0, 2, 3}) +
                              " --output-dir " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto [shape, values] = ReadOutput<int64_t>(out + "/y.pb");
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values, (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));  // (0,0), (1,0), (1,1)

  std::string bad = (dir_ / "bad").string();
  ExpectError(
      "run " + artifact + " --input x=" + input("two.pb", {1, 0, 0, 3}) + " --output-dir " + bad,
      "node 'nz' (NonZero): the data given at run time give output shape [2,2], but the "
      "artifact was compiled for [2,3]");
  EXPECT_FALSE(fs::exists(bad + "/y.pb"));
}

// A Resize whose scales are a graph input compiles for the declared output shape: scales that
// give another size along an axis are refused, naming the node and the axis.
TEST_F(ErrorsTest, RuntimeResizeScalesAreChecked) {
  onnx::ModelProto m = BaseModel({1, 1, 2, 2});
  m.mutable_opset_import(0)->set_version(13);
  auto* s = m.mutable_graph()->add_input();
  s->set_name("scales");
  s->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  s->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  AddNode(m, "Resize", {"x", "", "scales"}, {"y"}, "rs");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {1, 1, 4, 4});
  std::string artifact = (dir_ / "rs.kiln").string();
  CommandResult ok = RunKiln("compile " + WriteModel("rs.onnx", m) + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  std::string xf = WriteTensor<float>("x.pb", "x", {1, 1, 2, 2}, {1, 2, 3, 4});
  auto scales = [&](const std::string& name, float n, float h, float w) {
    return WriteTensor<float>(name, "scales", {4}, {n, 1, h, w});
  };
  // Nearest (the default mode), half_pixel, scale 2: each input element becomes a 2x2 block.
  std::string out = (dir_ / "out").string();
  CommandResult run = RunKiln("run " + artifact + " --input x=" + xf + " --input scales=" +
                              scales("s2.pb", 1, 2, 2) + " --output-dir " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto [shape, values] = ReadOutput<float>(out + "/y.pb");
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(values, (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  ExpectError("run " + artifact + " --input x=" + xf + " --input scales=" +
                  scales("s3.pb", 1, 2, 3) + " --output-dir " + (dir_ / "bad").string(),
              "node 'rs' (Resize): scales[3] given at run time give output shape [6], but the "
              "artifact was compiled for [4]");
  // The axes of length 1 have no taps, but their scales are checked as well.
  ExpectError("run " + artifact + " --input x=" + xf + " --input scales=" +
                  scales("batch2.pb", 2, 2, 2) + " --output-dir " + (dir_ / "bad2").string(),
              "node 'rs' (Resize): the output lengths floor(scale * 1) of the axes of length 1 "
              "(scales[0], scales[1]): got [2,1] at run time, the artifact was compiled for [1,1]");
}

// A ReduceSum whose axes are a graph input, [3,2,2] -> [3,2] without keepdims: axes {1} and {2}
// both fit, so both reductions are compiled and the run-time axes select one (negative axes
// count from the end); axes that fit neither are refused.
TEST_F(ErrorsTest, RuntimeReduceAxesAreSelectedAndChecked) {
  onnx::ModelProto m = BaseModel({3, 2, 2});
  auto* axes = m.mutable_graph()->add_input();
  axes->set_name("axes");
  axes->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  axes->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  onnx::NodeProto* n = AddNode(m, "ReduceSum", {"x", "axes"}, {"y"}, "sum");
  auto* keep = n->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  AddValueInfo(m.mutable_graph()->add_output(), "y", {3, 2});
  std::string artifact = (dir_ / "sum.kiln").string();
  CommandResult ok = RunKiln("compile " + WriteModel("sum.onnx", m) + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  std::vector<float> iota(12);
  for (int i = 0; i < 12; ++i) iota[i] = static_cast<float>(i);
  std::string xf = WriteTensor<float>("x.pb", "x", {3, 2, 2}, iota);
  auto run = [&](int64_t axis) {
    std::string out = (dir_ / ("out" + std::to_string(axis + 5))).string();
    CommandResult r = RunKiln(
        "run " + artifact + " --input x=" + xf + " --input axes=" +
        WriteTensor<int64_t>("axes" + std::to_string(axis + 5) + ".pb", "axes", {1}, {axis}) +
        " --output-dir " + out);
    std::vector<float> values = ReadOutput<float>(out + "/y.pb").second;
    return std::make_pair(r, values);
  };
  // x[i][j][k] = 4i + 2j + k.
  EXPECT_EQ(run(1).second, (std::vector<float>{2, 4, 10, 12, 18, 20}));
  EXPECT_EQ(run(-1).second, (std::vector<float>{1, 5, 9, 13, 17, 21}));
  auto [bad, none] = run(0);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("node 'sum' (ReduceSum): the axes given at run time, as a bit mask "
                            "(the sum of 2^axis; 8 for an axis out of range), must be one of the "
                            "sets the static shapes allow ({1} = 2, {2} = 4): got [1] at run "
                            "time"),
            std::string::npos)
      << bad.output;
}

// A sequence graph input compiles with its length and element shapes given as input shapes
// "seq[k]" (its elements become the graph inputs "seq[0]", "seq[1]", ...); without them, or
// with a gap in the numbering, it is refused naming the flag. SplitToSequence, SequenceAt,
// SequenceInsert and ConcatFromSequence become list operations and Slice/Concat nodes.
TEST_F(ErrorsTest, SequenceInputsTakeTheirShapesAsInputShapes) {
  onnx::ModelProto m = BaseModel({2});
  auto* seq = m.mutable_graph()->add_input();
  seq->set_name("seq");
  auto* elem = seq->mutable_type()->mutable_sequence_type()->mutable_elem_type();
  elem->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  // y = Concat(seq[0], x, seq[1]) along axis 0: x split and rejoined, then inserted at 1.
  AddNode(m, "SplitToSequence", {"x"}, {"parts"}, "split");  // x -> [x0], [x1]
  auto axis0 = [](onnx::NodeProto* n) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(0);
  };
  axis0(AddNode(m, "ConcatFromSequence", {"parts"}, {"x_again"}, "rejoin"));
  AddNode(m, "SequenceInsert", {"seq", "x_again", "one"}, {"seq3"}, "insert");
  auto* one = m.mutable_graph()->add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::INT64);
  one->add_int64_data(1);
  AddNode(m, "SequenceAt", {"seq3", "two"}, {"last"}, "at");
  auto* two = m.mutable_graph()->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);
  axis0(AddNode(m, "ConcatFromSequence", {"seq3"}, {"y"}, "concat"));
  AddValueInfo(m.mutable_graph()->add_output(), "y", {5});
  AddValueInfo(m.mutable_graph()->add_output(), "last", {2});
  std::string model = WriteModel("seq.onnx", m);
  std::string artifact = (dir_ / "seq.kiln").string();
  ExpectError("compile " + model + " -o " + artifact,
              "graph input 'seq' is a sequence: give its length and element shapes with "
              "--input-shape seq[0]=D0,D1,... --input-shape seq[1]=...");
  ExpectError("compile " + model + " -o " + artifact +
                  " --input-shape 'seq[0]=1' "
                  "--input-shape 'seq[2]=1'",
              "--input-shape seq[2]: the elements of sequence input 'seq' must be numbered from "
              "0 without gaps (1 given before the gap)");
  CommandResult ok = RunKiln("compile " + model + " -o " + artifact +
                             " --input-shape 'seq[0]=1' --input-shape 'seq[1]=2'");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto tensor = [&](const std::string& name, std::vector<float> v) {
    return WriteTensor<float>(name + ".pb", name, {static_cast<int64_t>(v.size())}, v);
  };
  std::string out = (dir_ / "out").string();
  CommandResult run = RunKiln("run " + artifact + " --input x=" + tensor("x", {1, 2}) +
                              " --input 'seq[0]=" + tensor("s0", {7}) + "' --input 'seq[1]=" +
                              tensor("s1", {8, 9}) + "' --output-dir " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto read = [&](const std::string& name) {
    return ReadOutput<float>(out + "/" + name + ".pb").second;
  };
  EXPECT_EQ(read("y"), (std::vector<float>{7, 1, 2, 8, 9}));  // seq[0], x, seq[1]
  EXPECT_EQ(read("last"), (std::vector<float>{8, 9}));        // element 2 after the insert
}

// A NonZero whose graph output has a symbolic dim is compiled for the upper bound [2, 4] and
// each run returns the shape its data give; one whose output feeds another node needs a static
// shape, and its error says so.
TEST_F(ErrorsTest, DataDependentGraphOutputIsBounded) {
  onnx::ModelProto m = BaseModel({2, 2});
  AddNode(m, "NonZero", {"x"}, {"y"}, "nz");
  auto* y = m.mutable_graph()->add_output();
  y->set_name("y");
  auto* t = y->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  t->mutable_shape()->add_dim()->set_dim_param("n");
  std::string artifact = (dir_ / "nz.kiln").string();
  CommandResult ok = RunKiln("compile " + WriteModel("nz.onnx", m) + " -o " + artifact);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  CommandResult inspect = RunKiln("inspect " + artifact);
  EXPECT_NE(inspect.output.find("output: y: i64[2,4] (an upper bound: each run returns the "
                                "shape its data give)"),
            std::string::npos)
      << inspect.output;
  auto run = [&](const std::string& name, std::vector<float> v) {
    std::string out = (dir_ / name).string();
    CommandResult r = RunKiln("run " + artifact +
                              " --input x=" + WriteTensor<float>(name + ".pb", "x", {2, 2}, v) +
                              " --output-dir " + out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto [shape, values] = ReadOutput<int64_t>(out + "/y.pb");
    return std::make_pair(shape, values);
  };
  auto [shape3, values3] = run("three", {1, 0, 2, 3});
  EXPECT_EQ(shape3, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values3, (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  auto [shape1, values1] = run("one", {0, 0, 0, 5});
  EXPECT_EQ(shape1, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values1, (std::vector<int64_t>{1, 1}));

  onnx::ModelProto fed = BaseModel({2, 2});
  AddNode(fed, "NonZero", {"x"}, {"nz_out"}, "nz");
  AddNode(fed, "Transpose", {"nz_out"}, {"y"}, "t");
  auto* fy = fed.mutable_graph()->add_output();
  fy->set_name("y");
  auto* fyt = fy->mutable_type()->mutable_tensor_type();
  fyt->set_elem_type(onnx::TensorProto::INT64);
  fyt->mutable_shape()->add_dim()->set_dim_param("n");
  fyt->mutable_shape()->add_dim()->set_dim_value(2);
  ExpectError("compile " + WriteModel("fed.onnx", fed) + " -o " + (dir_ / "fed.kiln").string(),
              "node 'nz' (NonZero): the output shape depends on the data (the number of non-zero "
              "elements) and is not known statically");
}

}  // namespace
}  // namespace kiln
