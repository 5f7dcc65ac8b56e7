// Bad input never crashes kiln: each malformed model, bad target or corrupted artifact gets a
// precise error on stderr and exit status 1. Runs the real `kiln` binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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
  ExpectError("run " + artifact + " --input z=" + model + " --output-dir " + (dir_ / "out").string(),
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
  AddNode(m, "TfIdfVectorizer", {"x"}, {"y"}, "vectorizer");
  AddValueInfo(m.mutable_graph()->add_output(), "y", {3, 3});
  CommandResult r =
      RunKiln("compile " + WriteModel("tfidf.onnx", m) + " -o " + (dir_ / "o.kiln").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("UNIMPLEMENTED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vectorizer"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("TfIdfVectorizer"), std::string::npos) << r.output;
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
  ExpectError("run " + artifact + " --input x=" + input + " --output-dir " + (dir_ / "out").string(),
              "x");

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

}  // namespace
}  // namespace kiln
