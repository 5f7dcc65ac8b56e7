// The worker's compile step: real model bytes → artifact that parses, with the cache key's
// components; the options hash's canonical form; error codes for bad input.
#include "workers/compile_task.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/artifact.h"
#include "gtest/gtest.h"
#include "workers/protocol.h"

namespace kiln::workers {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

constexpr char kMlp[] = "../shared/models/mlp/model.onnx";

TEST(CompileTaskTest, CompilesModelBytesIntoParsableArtifact) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  kiln::v1::CompileOptions options;
  auto compiled = CompileModelBytes(ReadFile(kMlp), "host", options, ::testing::TempDir());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto artifact = runtime::ParseArtifact(compiled->bytes);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_EQ(compiled->key.graph_hash(), artifact->manifest.graph_hash());
  EXPECT_EQ(compiled->key.target_key(), artifact->manifest.target_key());
  EXPECT_EQ(compiled->key.compiler_version(), pipeline::kCompilerVersion);
  EXPECT_EQ(compiled->key.options_hash(), OptionsHash(options));
  EXPECT_GT(compiled->compile_ms, 0);
}

TEST(CompileTaskTest, DisabledPassesChangeTheOptionsHashNotTheGraphHash) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  kiln::v1::CompileOptions plain, no_fusion;
  no_fusion.add_disabled_passes("fusion");
  auto a = CompileModelBytes(ReadFile(kMlp), "host", plain, ::testing::TempDir());
  auto b = CompileModelBytes(ReadFile(kMlp), "host", no_fusion, ::testing::TempDir());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->key.graph_hash(), b->key.graph_hash());
  EXPECT_NE(a->key.options_hash(), b->key.options_hash());
  auto pa = runtime::ParseArtifact(a->bytes);
  auto pb = runtime::ParseArtifact(b->bytes);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_LT(pa->manifest.kernels_size(), pb->manifest.kernels_size());
}

TEST(CompileTaskTest, ErrorsKeepTheirCodes) {
  kiln::v1::CompileOptions options;
  EXPECT_EQ(CompileModelBytes("not a model", "host", options, ::testing::TempDir()).status().code(),
            absl::StatusCode::kInvalidArgument);
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  std::string model = ReadFile(kMlp);
  EXPECT_EQ(
      CompileModelBytes(model, "cpu:no-such-cpu", options, ::testing::TempDir()).status().code(),
      absl::StatusCode::kInvalidArgument);
  options.add_disabled_passes("no-such-pass");
  auto bad_pass = CompileModelBytes(model, "host", options, ::testing::TempDir());
  EXPECT_EQ(bad_pass.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_pass.status().message().find("no-such-pass"), absl::string_view::npos);
}

TEST(ProtocolTest, OptionsHashIsCanonical) {
  kiln::v1::CompileOptions a, b, empty;
  a.add_disabled_passes("fusion");
  a.add_disabled_passes("cse");
  b.add_disabled_passes("cse");
  b.add_disabled_passes("fusion");
  b.add_disabled_passes("cse");
  EXPECT_EQ(OptionsHash(a), OptionsHash(b));
  EXPECT_NE(OptionsHash(a), OptionsHash(empty));
  EXPECT_EQ(OptionsHash(empty).size(), 64u);
}

// InputShape.min_dims: the bounded dims' minimums; an entry whose every minimum is its dim is
// fixed (as the command line drops it); bad minimums, bounded dims with several profiles and
// tuning with bounded dims are refused.
TEST(ProtocolTest, BoundedMinShapes) {
  auto options_of =
      [](std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>> shapes) {
        kiln::v1::CompileOptions o;
        for (const auto& [name, dims, mins] : shapes) {
          kiln::v1::InputShape* s = o.add_input_shapes();
          s->set_name(name);
          for (int64_t d : dims) s->add_dims(d);
          for (int64_t d : mins) s->add_min_dims(d);
        }
        return o;
      };
  auto mins = BoundedMinShapesOf(options_of({{"x", {4, 64}, {1, 64}}, {"m", {4}, {4}}}));
  ASSERT_TRUE(mins.ok()) << mins.status();
  EXPECT_EQ(*mins, (importer::InputShapes{{"x", {1, 64}}}));
  EXPECT_EQ(BoundedMinShapesOf(options_of({{"x", {4, 64}, {5, 64}}})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BoundedMinShapesOf(options_of({{"x", {4, 64}, {1}}})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BoundedMinShapesOf(options_of({{"x", {4, 64}, {1, 64}}, {"x", {2, 64}, {}}}))
                .status()
                .message(),
            "input_shapes: bounded dims (min_dims) and several shape profiles cannot be combined");
  EXPECT_EQ(OneShapeProfileOf(options_of({{"x", {4, 64}, {1, 64}}})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(OneShapeProfileOf(options_of({{"x", {4, 64}, {4, 64}}})).ok());
}

TEST(ProtocolTest, StatusFromCode) {
  EXPECT_EQ(StatusFromCode(3, "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StatusFromCode(0, "").ok());
  EXPECT_EQ(StatusFromCode(99, "x").code(), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace kiln::workers
