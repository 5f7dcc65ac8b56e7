// kiln run --repeat/--warmup/--profile, kiln compile --depfile, and the runtime's refusal of an
// artifact built for CPU features this host lacks, through the CLI on SqueezeNet 1.1
// (examples/squeezenet1_1, kept in the repo).
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/kiln_cli.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

constexpr char kModel[] = "examples/squeezenet1_1/model.onnx";
constexpr char kInput[] = "input=examples/squeezenet1_1/test_data_set_0/input_0.pb";

class RunCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("kiln_run_cli_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    auto [status, out] = Kiln(std::string("compile ") + kModel + " -o " + Artifact() +
                              " --depfile " + Artifact() + ".d");
    ASSERT_EQ(status, 0) << out;
    // The inspect tests read an artifact for one named CPU, so that the kernels they count do
    // not depend on the host's (with 16 vector registers the default schedule picks Winograd
    // for SqueezeNet's 3x3 convs, with AVX-512's 32 the direct conv).
    std::tie(status, out) = Kiln(std::string("compile ") + kModel + " -o " + InspectArtifact() +
                                 " --target cpu:rocketlake");
    ASSERT_EQ(status, 0) << out;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string Artifact() { return (*dir_ / "squeezenet.kiln").string(); }
  static std::string InspectArtifact() { return (*dir_ / "squeezenet_rocketlake.kiln").string(); }
  static std::string Read(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static fs::path* dir_;
};
fs::path* RunCliTest::dir_ = nullptr;

TEST_F(RunCliTest, RepeatPrintsMedianAndP90) {
  auto [status, out] = Kiln("run " + Artifact() + " --input " + kInput + " --repeat 5 --warmup 2");
  ASSERT_EQ(status, 0) << out;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(out, m,
                        std::regex(R"(latency: median ([0-9.]+) ms, p90 ([0-9.]+) ms \(min )"
                                   R"(([0-9.]+), max ([0-9.]+), mean [0-9.]+; 5 runs after 2 )"
                                   R"(warm-up\))")))
      << out;
  const double median = std::stod(m[1]), p90 = std::stod(m[2]), min = std::stod(m[3]),
               max = std::stod(m[4]);
  EXPECT_GT(min, 0);
  EXPECT_LE(min, median);
  EXPECT_LE(median, p90);
  EXPECT_LE(p90, max);
  EXPECT_THAT(out, ::testing::Not(HasSubstr("wrote")));  // no --output-dir: nothing written
}

TEST_F(RunCliTest, ProfileWritesAChromeTraceOfEveryKernel) {
  const std::string trace = (*dir_ / "trace.json").string();
  auto [status, out] = Kiln("run " + Artifact() + " --input " + kInput + " --profile " + trace +
                            " --repeat 3 --output-dir " + (*dir_ / "out").string());
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("kernels by median time (40 kernels"));
  EXPECT_THAT(out, HasSubstr("GFLOP/s"));
  EXPECT_THAT(out, HasSubstr("wrote " + trace + " (Chrome trace of 3 runs"));
  EXPECT_TRUE(fs::exists(*dir_ / "out" / "logits.pb")) << out;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Read(trace), &parsed).ok());
  const auto& events = parsed.fields().at("traceEvents").list_value().values();
  ASSERT_EQ(events.size(), 3 * (1 + 40));  // each run, then its 40 kernel calls
  int kernels = 0;
  for (const auto& e : events) {
    const auto& f = e.struct_value().fields();
    EXPECT_EQ(f.at("ph").string_value(), "X");
    EXPECT_GE(f.at("dur").number_value(), 0);
    if (f.at("cat").string_value() == "kernel") {
      ++kernels;
      EXPECT_FALSE(f.at("args").struct_value().fields().at("symbol").string_value().empty());
    }
  }
  EXPECT_EQ(kernels, 120);
}

TEST_F(RunCliTest, TimingNeedsNoOutputDirButRunDoes) {
  auto [status, out] = Kiln("run " + Artifact() + " --input " + kInput);
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("missing --output-dir DIR (or --repeat N / --profile FILE to time)"));
  std::tie(status, out) = Kiln("run " + Artifact() + " --input " + kInput + " --repeat 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("--repeat needs a positive integer"));
}

TEST_F(RunCliTest, DepfileNamesTheModelAndTheCompiler) {
  const std::string text = Read(Artifact() + ".d");
  EXPECT_EQ(text.rfind(fs::absolute(Artifact()).lexically_normal().string() + ": \\\n", 0), 0u)
      << text;
  EXPECT_THAT(text, HasSubstr(fs::absolute(kModel).lexically_normal().string()));
  EXPECT_THAT(text, HasSubstr(fs::canonical(BinDir() + "/kiln").string()));
}

TEST_F(RunCliTest, AnArtifactForFeaturesThisCpuLacksIsRefusedAtLoad) {
  // AMD Excavator's XOP and FMA4: no current x86-64 CPU has them.
  const std::string bdver4 = (*dir_ / "bdver4.kiln").string();
  auto [status, out] = Kiln(std::string("compile ") + kModel + " --target cpu:bdver4 -o " + bdver4);
  ASSERT_EQ(status, 0) << out;
  std::tie(status, out) = Kiln("run " + bdver4 + " --input " + kInput + " --repeat 1");
  EXPECT_EQ(status, 1) << out;
  EXPECT_THAT(out, HasSubstr("FAILED_PRECONDITION: the artifact was compiled for cpu:bdver4, "
                             "whose features"));
  EXPECT_THAT(out, HasSubstr("xop"));
  EXPECT_THAT(out, HasSubstr("this CPU lacks; compile it for this CPU (--target host)"));
}

TEST_F(RunCliTest, LocalCompileJson) {
  const std::string artifact = (*dir_ / "json.kiln").string();
  auto [status, out] =
      Kiln(std::string("compile ") + kModel + " -o " + artifact + " --json 2>/dev/null");
  ASSERT_EQ(status, 0) << out;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &parsed).ok()) << out;
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("output").string_value(), artifact);
  EXPECT_EQ(f.at("artifact_bytes").number_value(), static_cast<double>(fs::file_size(artifact)));
  EXPECT_EQ(f.at("kernels").number_value(), 40);
  EXPECT_EQ(f.at("graph_hash").string_value().size(), 64u);
  EXPECT_EQ(f.at("target_key").string_value().rfind("cpu:", 0), 0u);
}

TEST_F(RunCliTest, InspectSummarizesFirst) {
  auto [status, out] = Kiln("inspect " + InspectArtifact());
  ASSERT_EQ(status, 0) << out;
  EXPECT_LT(std::count(out.begin(), out.end(), '\n'), 40) << out;
  size_t longest = 0;
  for (const auto& line : SplitLines(out)) longest = std::max(longest, line.size());
  EXPECT_LT(longest, 160u) << out;  // the target key's features only under --json
  EXPECT_THAT(out, HasSubstr("input:  input: f32[1,3,224,224]"));
  EXPECT_THAT(out, HasSubstr("ops:              66 graph ops in 40 kernels: Conv 26, Relu 26"));
  EXPECT_THAT(out, HasSubstr("kernels:          40: 0 tuned, 40 default schedules"));
  EXPECT_THAT(out, HasSubstr("compute:          705.4 MFLOP per run"));
  EXPECT_THAT(out, HasSubstr("top kernels by FLOPs:\n  kernel_36   Conv+Relu"));
  // Tensors named as the model names them.
  EXPECT_THAT(out, HasSubstr("-> /classifier/classifier.2/Relu"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("workload ")));

  std::tie(status, out) = Kiln("inspect --kernels --memory " + InspectArtifact());
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("kernel_0  Conv+Relu  (input, weights+0, weights+6912, "
                             "/features/features.1/Relu)  43.4 MFLOP"));
  EXPECT_THAT(out, HasSubstr("default schedule"));
  EXPECT_THAT(out, HasSubstr("memory plan (47 buffers, arena "));
}

TEST_F(RunCliTest, InspectJsonAndDot) {
  auto [status, out] = Kiln("inspect --json " + InspectArtifact() + " 2>/dev/null");
  ASSERT_EQ(status, 0) << out;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &parsed).ok()) << out;
  const auto& summary = parsed.fields().at("summary").struct_value().fields();
  EXPECT_EQ(summary.at("kernels").number_value(), 40);
  EXPECT_EQ(summary.at("flops").number_value(), 705421968);
  const auto& manifest = parsed.fields().at("manifest").struct_value().fields();
  EXPECT_EQ(manifest.at("kernels").list_value().values_size(), 40);
  EXPECT_EQ(manifest.at("target_key").string_value().rfind("cpu:", 0), 0u);

  std::tie(status, out) = Kiln("inspect --dot " + InspectArtifact());
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out.rfind("digraph kiln {\n", 0), 0u) << out;
  EXPECT_THAT(out, HasSubstr("  in0 -> k0;\n"));
  EXPECT_THAT(out, HasSubstr("  k0 -> k1 [label=\"/features/features.1/Relu\"];\n"));
  EXPECT_THAT(out, HasSubstr(" -> out0;\n"));
  EXPECT_EQ(out.substr(out.size() - 2), "}\n");
}

}  // namespace
}  // namespace kiln::testing
