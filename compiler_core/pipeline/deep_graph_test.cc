// Deep and oversized graphs through the whole compile: a 50k-node chain compiles (fusion cuts
// it into bounded groups, nothing recurses per node) and computes the right values, and the
// size budget of CompileOptions reaches the importer.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/importer_test_util.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::pipeline {
namespace {

namespace fs = std::filesystem;
using importer::testing_util::ModelBuilder;
using ::testing::HasSubstr;

/// Compiles `b`'s model from a file (CompileModelFile, as the CLI and workers do).
absl::StatusOr<CompileResult> CompileModel(const ModelBuilder& b, const CompileOptions& options) {
  fs::path path =
      fs::path(::testing::TempDir()) /
      (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".onnx");
  std::ofstream(path, std::ios::binary) << b.Bytes();
  absl::StatusOr<CompileResult> compiled = CompileModelFile(path.string(), options);
  fs::remove(path);
  return compiled;
}

// y = x + c + c + ... (50k Adds of one shared constant c = 1): fused in groups of at most
// passes::kMaxFusedNodes, each kernel nesting that many Adds; y = x + 50000 exactly in f32.
TEST(DeepGraphTest, FiftyThousandNodeChainCompilesAndRuns) {
  constexpr int kDepth = 50000;
  ModelBuilder b;
  b.Input("x", {4});
  b.Init("c", {4}, {1, 1, 1, 1});
  std::string prev = "x";
  for (int i = 0; i < kDepth; ++i) {
    std::string out = i + 1 == kDepth ? "y" : "v" + std::to_string(i);
    b.Node("Add", {prev, "c"}, {out});
    prev = out;
  }
  b.Output("y", {4});
  absl::StatusOr<CompileResult> compiled = CompileModel(b, CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto exe = runtime::Executable::Load(compiled->artifact);
  ASSERT_TRUE(exe.ok()) << exe.status();
  Tensor x{TensorType{DType::kFloat32, {4}}, std::vector<uint8_t>(16)};
  for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = static_cast<float>(i) - 1.5f;
  absl::StatusOr<std::vector<Tensor>> outputs = (*exe)->Run({&x});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 1u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*outputs)[0].data<float>()[i], static_cast<float>(i) - 1.5f + kDepth) << i;
  }
}

TEST(DeepGraphTest, MaxTensorBytesReachesTheImport) {
  ModelBuilder b;
  b.Input("x", {8});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y", {8});
  CompileOptions options;
  options.max_tensor_bytes = 16;
  absl::StatusOr<CompileResult> compiled = CompileModel(b, options);
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(compiled.status().message(),
              HasSubstr("graph input 'x' has type f32[8]: takes 32 bytes, more than the limit of "
                        "16 (max_tensor_bytes)"));
  importer::ImportOptions import = ImportOptionsFor(options, {});
  EXPECT_EQ(import.max_tensor_bytes, 16);
  EXPECT_TRUE(CompileModel(b, CompileOptions{}).ok());
}

}  // namespace
}  // namespace kiln::pipeline
