// The compiler version is derived from the compiler sources: the built one matches the tree it
// was built from, and changing a compiler source (not a test) changes it.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "compiler_core/pipeline/compile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::MatchesRegex;

/// Runs compiler_version.cmake over the tree at `root` and returns what it prints.
std::string VersionOf(const fs::path& root, const std::string& llvm = KILN_LLVM_VERSION) {
  std::string cmd = std::string(KILN_CMAKE_COMMAND) + " -DSOURCE_DIR=" + root.string() +
                    " -DLLVM_VERSION=" + llvm + " -P " +
                    (root / "compiler_core/support/compiler_version.cmake").string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

/// A copy of the compiler sources (compiler_core/ and the artifact proto) in a fresh directory.
class SourceCopy {
 public:
  SourceCopy() {
    root_ = fs::temp_directory_path() / ("kiln_version_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proto/kiln/v1");
    fs::copy("compiler_core", root_ / "compiler_core", fs::copy_options::recursive);
    for (const char* p : {"artifact.proto", "tuning.proto"}) {
      fs::copy_file(fs::path("proto/kiln/v1") / p, root_ / "proto/kiln/v1" / p);
    }
  }
  ~SourceCopy() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }
  void Append(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel, std::ios::app) << text;
  }

 private:
  fs::path root_;
};

TEST(CompilerVersionTest, HasTheDocumentedForm) {
  EXPECT_THAT(std::string(kCompilerVersion),
              MatchesRegex("kiln-[0-9]+\\.[0-9]+\\.[0-9]+\\+src\\.[0-9a-f]{16}\\.llvm[0-9.]+"));
  EXPECT_EQ(std::string(kCompilerSourceDigest).size(), 64u);
  EXPECT_EQ(std::string(kCompilerVersion).find(std::string(kCompilerSourceDigest).substr(0, 16)),
            std::string("kiln-0.1.0+src.").size());
}

TEST(CompilerVersionTest, BuiltVersionMatchesTheSourceTree) {
  // Fails when the binary is stale against the tree it runs in, as a cache key would be.
  EXPECT_EQ(VersionOf(fs::current_path()), kCompilerVersion);
}

TEST(CompilerVersionTest, ChangesWithACompilerSource) {
  SourceCopy copy;
  const std::string base = VersionOf(copy.root());
  ASSERT_EQ(base, kCompilerVersion);
  copy.Append("compiler_core/schedule/default_schedule.cc", "\n// a changed schedule\n");
  const std::string changed = VersionOf(copy.root());
  EXPECT_NE(changed, base);
  EXPECT_THAT(changed, MatchesRegex("kiln-.*\\+src\\.[0-9a-f]{16}\\.llvm.*"));
}

TEST(CompilerVersionTest, ChangesWithTheArtifactFormatAndLlvm) {
  SourceCopy copy;
  const std::string base = VersionOf(copy.root());
  EXPECT_NE(VersionOf(copy.root(), "20.1.0"), base);
  copy.Append("proto/kiln/v1/artifact.proto", "\n// a new field\n");
  EXPECT_NE(VersionOf(copy.root()), base);
}

TEST(CompilerVersionTest, IgnoresTests) {
  SourceCopy copy;
  const std::string base = VersionOf(copy.root());
  copy.Append("compiler_core/schedule/schedule_test.cc", "\n// another test\n");
  EXPECT_EQ(VersionOf(copy.root()), base);
}

TEST(CompilerVersionTest, CountsANewSourceFile) {
  SourceCopy copy;
  const std::string base = VersionOf(copy.root());
  copy.Append("compiler_core/schedule/new_rule.h", "// a new header\n");
  EXPECT_NE(VersionOf(copy.root()), base);
}

}  // namespace
}  // namespace kiln::pipeline
