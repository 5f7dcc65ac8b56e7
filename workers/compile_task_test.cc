// The worker's compile step: real model bytes → artifact that parses, with the cache key's
// components; the options hash's canonical form; error codes for bad input.
#include "workers/compile_task.h"

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/artifact.h"
#include "gtest/gtest.h"
#include "wire/options.h"
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
  EXPECT_EQ(compiled->key.options_hash(), wire::OptionsHash(options));
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

std::string WorkerBinary() {
  const char* dir = std::getenv("KILN_BIN_DIR");
  return std::string(dir != nullptr ? dir : "build/bin") + "/kiln-worker";
}

// A compile in a `kiln-worker --run-compile` child gives the same artifact as one in process;
// its errors keep their codes.
TEST(CompileTaskTest, CompileInChildMatchesTheInProcessCompile) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  if (!std::filesystem::exists(WorkerBinary())) GTEST_SKIP() << WorkerBinary() << " not built";
  ::signal(SIGPIPE, SIG_IGN);
  kiln::v1::CompileOptions options;
  CompileSandbox sandbox{WorkerBinary(), server::ProcessLimits{}};
  auto child = CompileInChild(ReadFile(kMlp), "host", options, sandbox, absl::Minutes(5));
  ASSERT_TRUE(child.ok()) << child.status();
  auto here = CompileModelBytes(ReadFile(kMlp), "host", options, "");
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_EQ(child->key.SerializeAsString(), here->key.SerializeAsString());
  EXPECT_EQ(child->bytes, here->bytes);
  EXPECT_EQ(child->workload_keys, here->workload_keys);
  absl::Status bad =
      CompileInChild("not a model", "host", options, sandbox, absl::Minutes(1)).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
}

// A compiler that crashes, or outgrows its limits, ends only the child: a clear kInternal.
TEST(CompileTaskTest, CompileInChildSurvivesACrashAndLimits) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  ::signal(SIGPIPE, SIG_IGN);
  kiln::v1::CompileOptions options;
  // A stand-in compiler that crashes: the plumbing sees a signal, not a result.
  const std::string crasher = ::testing::TempDir() + "/kiln-crashing-compiler";
  std::ofstream(crasher) << "#!/bin/sh\necho 'LLVM ERROR: out of luck' >&2\nkill -SEGV $$\n";
  std::filesystem::permissions(crasher, std::filesystem::perms::owner_all);
  absl::Status crashed =
      CompileInChild(ReadFile(kMlp), "host", options,
                     CompileSandbox{crasher, server::ProcessLimits{}}, absl::Minutes(1))
          .status();
  EXPECT_EQ(crashed.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(crashed.message(),
            "the compiler was killed by signal 11 (Segmentation fault); it said: LLVM ERROR: out "
            "of luck\n");
  if (!std::filesystem::exists(WorkerBinary())) GTEST_SKIP() << WorkerBinary() << " not built";
  // The real compiler under a wall-time limit it cannot meet.
  absl::Status slow =
      CompileInChild(ReadFile(kMlp), "host", options,
                     CompileSandbox{WorkerBinary(), server::ProcessLimits{}}, absl::Milliseconds(1))
          .status();
  EXPECT_EQ(slow.code(), absl::StatusCode::kInternal);
  EXPECT_NE(slow.message().find("ran past its time limit"), absl::string_view::npos) << slow;
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

}  // namespace
}  // namespace kiln::workers
