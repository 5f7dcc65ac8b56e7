// `kiln tune --local` end to end on a real model: records are written, a compile with them
// applies them (tuning digest, tuned kernels, a new artifact) and still passes `kiln check`,
// the same records give the identical artifact, and a malformed record file is refused with
// its line number.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler_core/support/sha256.h"
#include "tests/e2e/kiln_cli.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using testing::Kiln;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int CountLines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(TuneCliTest, LocalTuneThenCompileWithRecords) {
  const std::string model_dir = "../shared/models/lenet";
  KILN_REQUIRE_PATH_OR_SKIP(model_dir);
  fs::path tmp = fs::temp_directory_path() / ("kiln_tune_cli_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string records = (tmp / "records.jsonl").string();

  auto [tune_rc, tune_out] = Kiln("tune " + model_dir + "/model.onnx --local --trials 24 --seed 3 "
                                  "--records-out " + records);
  ASSERT_EQ(tune_rc, 0) << tune_out;
  EXPECT_NE(tune_out.find("estimated latency of the "), std::string::npos) << tune_out;
  EXPECT_NE(tune_out.find("speedup"), std::string::npos) << tune_out;
  const std::string lines = ReadFile(records);
  // 24 measured candidates (those with an empty trace are not recorded) plus the defaults.
  EXPECT_GE(CountLines(lines), 20) << lines;
  EXPECT_NE(lines.find("\"provenance\":\"MEASURED\""), std::string::npos);

  const std::string plain = (tmp / "plain.kiln").string();
  const std::string tuned = (tmp / "tuned.kiln").string();
  const std::string again = (tmp / "again.kiln").string();
  ASSERT_EQ(Kiln("compile " + model_dir + "/model.onnx -o " + plain).first, 0);
  auto [c_rc, c_out] =
      Kiln("compile " + model_dir + "/model.onnx -o " + tuned + " --records " + records);
  ASSERT_EQ(c_rc, 0) << c_out;
  ASSERT_EQ(Kiln("compile " + model_dir + "/model.onnx -o " + again + " --records " + records)
                .first,
            0);
  auto [i_rc, inspect] = Kiln("inspect --kernels " + tuned);
  ASSERT_EQ(i_rc, 0) << inspect;
  EXPECT_NE(inspect.find("tuning:           records "), std::string::npos) << inspect;
  EXPECT_NE(inspect.find(" (record "), std::string::npos) << inspect;
  auto [p_rc, plain_inspect] = Kiln("inspect --kernels " + plain);
  EXPECT_NE(plain_inspect.find("tuning:           none (default schedules)"), std::string::npos);
  EXPECT_EQ(plain_inspect.find(" (record "), std::string::npos);
  // Tuned and untuned artifacts differ; the same records give the identical artifact.
  EXPECT_NE(Sha256Hex(ReadFile(tuned)), Sha256Hex(ReadFile(plain)));
  EXPECT_EQ(Sha256Hex(ReadFile(tuned)), Sha256Hex(ReadFile(again)));

  auto [check_rc, check_out] = Kiln("check " + model_dir + " --records " + records);
  EXPECT_EQ(check_rc, 0) << check_out;
  EXPECT_NE(check_out.find("PASS"), std::string::npos) << check_out;

  // A malformed line: refused with its number, nothing compiled.
  const std::string bad = (tmp / "bad.jsonl").string();
  {
    std::ofstream out(bad);
    out << lines.substr(0, lines.find('\n') + 1) << "{\"workload_key\": 7}\n";
  }
  const std::string none = (tmp / "none.kiln").string();
  auto [nokey_rc, nokey_out] = Kiln("compile " + model_dir + "/model.onnx -o " + none +
                                    " --records " + records + " --hardware-key nope");
  EXPECT_EQ(nokey_rc, 1);
  EXPECT_NE(nokey_out.find("has no record for hardware key 'nope'"), std::string::npos)
      << nokey_out;
  auto [bad_rc, bad_out] =
      Kiln("compile " + model_dir + "/model.onnx -o " + none + " --records " + bad);
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad_out.find(bad + ": line 2: "), std::string::npos) << bad_out;
  EXPECT_FALSE(fs::exists(none));
  fs::remove_all(tmp);
}

TEST(TuneCliTest, PrintSpaceIsDeterministic) {
  const std::string model = "../shared/models/lenet/model.onnx";
  KILN_REQUIRE_PATH_OR_SKIP(model);
  auto [rc1, out1] = Kiln("tune " + model + " --print-space --samples 3 --seed 5");
  auto [rc2, out2] = Kiln("tune " + model + " --print-space --samples 3 --seed 5");
  ASSERT_EQ(rc1, 0) << out1;
  EXPECT_EQ(out1, out2);
  EXPECT_NE(out1.find("default candidate:\nconfig: "), std::string::npos) << out1;
  EXPECT_NE(out1.find("sample 2:\nconfig: "), std::string::npos) << out1;
  auto [rc3, out3] = Kiln("tune " + model);  // a usage error: no --server, no --local
  EXPECT_EQ(rc3, 2);
  EXPECT_NE(out3.find("needs --server HOST:PORT"), std::string::npos) << out3;
}

}  // namespace
}  // namespace kiln
