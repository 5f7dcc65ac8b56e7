// Tests of TensorProto file reading (raw and typed fields) and writing.
#include "compiler_core/importer/onnx/tensor_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler_core/importer/onnx/tensor_proto.h"
#include "gmock/gmock.h"
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

// A header may claim any shape: sizes are checked (overflow-safe, against the 1 TiB limit and
// against the data present) before anything is allocated, and external-data fields are parsed
// as integers, not trusted.
TEST(TensorProtoTest, ClaimedSizesAreCheckedBeforeAllocating) {
  onnx::TensorProto huge;
  huge.set_name("w");
  huge.set_data_type(onnx::TensorProto::FLOAT);
  huge.add_dims(int64_t{1} << 40);
  huge.set_raw_data(std::string(4, '\0'));
  EXPECT_EQ(TensorFromProto(huge, "").status().message(),
            "tensor 'w' has type f32[1099511627776]: takes 4398046511104 bytes, more than the "
            "limit of 1099511627776 (max_tensor_bytes)");
  onnx::TensorProto overflow = huge;
  overflow.clear_dims();
  overflow.add_dims(int64_t{1} << 32);
  overflow.add_dims(int64_t{1} << 32);
  EXPECT_EQ(TensorFromProto(overflow, "").status().code(), absl::StatusCode::kInvalidArgument);
  onnx::TensorProto short_raw = huge;
  short_raw.set_dims(0, int64_t{1} << 28);
  EXPECT_EQ(TensorFromProto(short_raw, "").status().message(),
            "tensor 'w' of type f32[268435456] has 1 data values, expected 268435456");
  onnx::TensorProto short_typed = short_raw;
  short_typed.clear_raw_data();
  short_typed.add_float_data(1.0f);
  EXPECT_EQ(TensorFromProto(short_typed, "").status().message(),
            "tensor 'w' of type f32[268435456] has 1 data values, expected 268435456");

  const std::string dir = TempPath("ext");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/w.bin", std::ios::binary) << std::string(8, '\0');
  auto external = [&](const std::string& offset, const std::string& length) {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(2);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", "w.bin"},
                               {"offset", offset},
                               {"length", length}}) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    return TensorFromProto(t, dir);
  };
  EXPECT_TRUE(external("0", "8").ok());
  EXPECT_EQ(external("abc", "8").status().message(),
            "tensor 'w': external data offset 'abc' is not a non-negative integer");
  EXPECT_EQ(external("0", "-8").status().message(),
            "tensor 'w': external data length '-8' is not a non-negative integer");
  EXPECT_EQ(external("0", "99999999999999999999").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(external("4", "9223372036854775800").status().message()),
              ::testing::HasSubstr("external data of 9223372036854775800 bytes at offset 4 "
                                   "exceeds file"));
  std::filesystem::remove_all(dir);
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
