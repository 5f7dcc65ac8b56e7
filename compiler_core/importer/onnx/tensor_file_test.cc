// Tests of TensorProto file reading (raw and typed fields) and writing.
#include "compiler_core/importer/onnx/tensor_file.h"

#include <unistd.h>
#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/kiln_" + std::to_string(getpid()) + "_" + name;
}

void WriteProto(const std::string& path, const onnx::TensorProto& p) {
  std::ofstream out(path, std::ios::binary);
  ASSERT_TRUE(p.SerializeToOstream(&out));
}

TEST(TensorFileTest, RoundTripRaw) {
  auto t = Tensor::Zeros(TensorType{DType::kFloat32, {2, 2}});
  for (int i = 0; i < 4; ++i) t->mutable_data<float>()[i] = 0.5f * i - 1;
  std::string path = TempPath("rt.pb");
  ASSERT_TRUE(WriteTensorFile(path, "x", *t).ok());
  auto r = ReadTensorFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->name, "x");
  EXPECT_EQ(r->tensor.type, t->type);
  EXPECT_EQ(r->tensor.GetAsDouble(3), 0.5);
}

TEST(TensorFileTest, TypedFields) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(3);
  for (int64_t v : {7, -8, 9}) p.add_int64_data(v);
  WriteProto(TempPath("i64.pb"), p);
  auto r = ReadTensorFile(TempPath("i64.pb"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor.GetAsInt64(1), -8);

  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(FloatToHalf(1.5f));
  h.add_int32_data(FloatToHalf(-2.0f));
  WriteProto(TempPath("f16.pb"), h);
  r = ReadTensorFile(TempPath("f16.pb"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor.GetAsDouble(0), 1.5);
  EXPECT_EQ(r->tensor.GetAsDouble(1), -2.0);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_double_data(3.25);
  WriteProto(TempPath("f64.pb"), d);
  r = ReadTensorFile(TempPath("f64.pb"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor.type.rank(), 0);
  EXPECT_EQ(r->tensor.GetAsDouble(0), 3.25);
}

TEST(TensorFileTest, Errors) {
  EXPECT_EQ(ReadTensorFile(TempPath("missing.pb")).status().code(),
            absl::StatusCode::kNotFound);
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(4);
  p.add_float_data(1.0f);
  WriteProto(TempPath("short.pb"), p);
  EXPECT_EQ(ReadTensorFile(TempPath("short.pb")).status().code(),
            absl::StatusCode::kInvalidArgument);
  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  s.add_string_data("a");
  WriteProto(TempPath("str.pb"), s);
  EXPECT_EQ(ReadTensorFile(TempPath("str.pb")).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(TensorFileTest, ReadsModelReference) {
  auto r = ReadTensorFile("../shared/models/mlp/test_data_set_0/input_0.pb");
  if (!r.ok() && r.status().code() == absl::StatusCode::kNotFound) {
    GTEST_SKIP() << "../shared/models/mlp is not available";
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor.type, (TensorType{DType::kFloat32, {1, 784}}));
}

}  // namespace
}  // namespace kiln::importer
