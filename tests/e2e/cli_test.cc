// The `kiln` CLI end to end on a real model: compile → inspect → run, with the output file
// compared to the stored PyTorch reference.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/check.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "gmock/gmock.h"
#include "tests/e2e/kiln_cli.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using testing::Kiln;
using testing::RunShell;

TEST(CliTest, CompileInspectRunLenet) {
  const std::string model_dir = "../shared/models/lenet";
  KILN_REQUIRE_PATH_OR_SKIP(model_dir);
  fs::path tmp = fs::temp_directory_path() / ("kiln_cli_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::string artifact = (tmp / "lenet.kiln").string();

  auto [compile_rc, compile_out] =
      Kiln("compile " + model_dir + "/model.onnx -o " + artifact + " --target host");
  ASSERT_EQ(compile_rc, 0) << compile_out;

  auto [inspect_rc, inspect_out] = Kiln("inspect " + artifact);
  ASSERT_EQ(inspect_rc, 0) << inspect_out;
  EXPECT_NE(inspect_out.find("input:  input: f32[1,1,28,28]"), std::string::npos) << inspect_out;
  EXPECT_NE(inspect_out.find("output: logits: f32[1,10]"), std::string::npos) << inspect_out;
  EXPECT_NE(inspect_out.find("Conv+Relu"), std::string::npos) << "fusion must show in inspect";
  EXPECT_NE(inspect_out.find("compiler version: kiln-"), std::string::npos);

  auto [run_rc, run_out] = Kiln("run " + artifact + " --input input=" + model_dir +
                                "/test_data_set_0/input_0.pb --output-dir " + (tmp / "out").string());
  ASSERT_EQ(run_rc, 0) << run_out;
  auto got = importer::ReadTensorFile((tmp / "out" / "logits.pb").string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name, "logits");
  auto expected = importer::ReadTensorFile(model_dir + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(expected.ok()) << expected.status();
  client::OutputComparison c = client::CompareTensors(got->tensor, expected->tensor, {});
  EXPECT_TRUE(c.pass) << c.error;
  EXPECT_LT(c.max_abs_error, 1e-5);

  // The same model compiled twice gives the same graph hash and identical artifact bytes.
  std::string again = (tmp / "again.kiln").string();
  ASSERT_EQ(Kiln("compile " + model_dir + "/model.onnx -o " + again).first, 0);
  auto read = [](const std::string& p) {
    FILE* f = std::fopen(p.c_str(), "rb");
    std::string s;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
    std::fclose(f);
    return s;
  };
  EXPECT_EQ(read(artifact), read(again)) << "compiles must be deterministic";
  fs::remove_all(tmp);
}

TEST(CliTest, CheckReportsPassAndExitCode) {
  KILN_REQUIRE_PATH_OR_SKIP("examples/squeezenet1_1");
  auto [rc, out] = Kiln("check examples/squeezenet1_1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("PASS test_data_set_0/logits: max_abs_err="), std::string::npos) << out;
}

// A usage error exits 2 with what is wrong and where --help is, on stderr; nothing runs.
TEST(CliTest, UsageErrors) {
  auto usage = [](const std::string& command, const std::string& message) {
    return command + ": " + message + "\nRun '" + command + " --help' for usage.\n";
  };
  struct Case {
    std::string args, command, message;
  };
  for (const Case& c : std::vector<Case>{
           {"frobnicate", "kiln", "unknown command 'frobnicate'"},
           {"compile", "kiln compile", "missing MODEL.onnx"},
           {"compile x.onnx", "kiln compile", "missing -o OUT.kiln"},
           {"compile x.onnx -o y.kiln --bogus", "kiln compile", "unknown flag --bogus"},
           {"compile x.onnx -o y.kiln --print-ir-after", "kiln compile",
            "--print-ir-after needs a value"},
           {"compile x.onnx -o y.kiln --tune=background", "kiln compile",
            "--tune=background needs --server"},
           {"run a.kiln --repeat 0", "kiln run", "--repeat needs a positive integer"},
           {"compile x.onnx -o y.kiln --local --server 127.0.0.1:1", "kiln compile",
            "--local and --server do not go together"},
           {"compile a.onnx b.onnx -o y.kiln", "kiln compile", "unexpected argument 'b.onnx'"},
           {"run a.kiln", "kiln run",
            "missing --output-dir DIR (or --repeat N / --profile FILE to time)"},
           {"run a.kiln --output-dir", "kiln run", "--output-dir needs a value"},
           {"run a.kiln --output-dir d --threads many", "kiln run", "--threads needs an integer"},
           {"inspect", "kiln inspect", "missing OUT.kiln"},
           {"check", "kiln check", "missing DIR"},
           {"tune m.onnx", "kiln tune",
            "measuring needs --server HOST:PORT (a kilnd with measure workers; or KILN_SERVER) "
            "or --local (this machine); --print-space only prints the space"},
           {"tune m.onnx --local --records-out r.jsonl --trials 0", "kiln tune",
            "--trials must be a positive integer"},
           {"status", "kiln status", "missing --server HOST:PORT (or KILN_SERVER)"},
           {"status --server 127.0.0.1:1 extra", "kiln status", "unexpected argument 'extra'"},
           {"jobs --server 127.0.0.1:1 --limit -3", "kiln jobs", "--limit needs an integer >= 0"},
           {"jobs --server 127.0.0.1:1 --state sleeping", "kiln jobs",
            "unknown --state 'sleeping'"},
           {"cancel --server 127.0.0.1:1", "kiln cancel", "missing JOB_ID"},
           {"records frob --server 127.0.0.1:1", "kiln records",
            "unknown verb 'frob' (list, export, import)"},
       }) {
    // Without KILN_SERVER: a command that needs --server must say so.
    auto [rc, out] = RunShell("env -u KILN_SERVER " + testing::BinDir() + "/kiln " + c.args +
                              " 2>&1 >/dev/null");
    EXPECT_EQ(rc, 2) << c.args << "\n" << out;
    EXPECT_EQ(out, usage(c.command, c.message)) << c.args;
  }
  // No command at all: the message, then the usage.
  auto [none_rc, none_out] = Kiln("");
  EXPECT_EQ(none_rc, 2);
  EXPECT_EQ(none_out.rfind(usage("kiln", "missing command"), 0), 0u) << none_out;
  EXPECT_NE(none_out.find("Subcommands:\n  compile "), std::string::npos) << none_out;
}

// --help (and -h, and `kiln help COMMAND`) prints the command's usage and every flag with its
// one-line help on stdout, and exits 0.
TEST(CliTest, HelpOfEveryCommandListsItsFlags) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"compile",
       {"-o,--output OUT.kiln", "--print-ir-after PASS", "--input-shape", "--local",
        "--server HOST:PORT", "--tune background", "--token-file FILE"}},
      {"run", {"--input NAME=FILE.pb", "--output-dir DIR", "--threads N", "--device D"}},
      {"check", {"--constant-input NAME=FILE.pb", "--records FILE.jsonl", "--local"}},
      {"inspect", {"OUT.kiln"}},
      {"tune", {"--print-space", "--records-out FILE.jsonl", "--no-cache-flush", "--random"}},
      {"cancel", {"JOB_ID", "--server HOST:PORT"}},
      {"status", {"--server HOST:PORT", "--timeout-s S", "--tls-ca FILE"}},
      {"jobs", {"--state S", "--limit N", "--kind K"}},
      {"workers", {"--server HOST:PORT", "--tls-server-name NAME"}},
      {"records", {"VERB", "FILE.jsonl", "--hardware-key K"}},
  };
  for (const auto& [command, flags] : commands) {
    for (const std::string& args :
         {command + " --help", command + " -h", "help " + command, command + " x --help"}) {
      auto [rc, out] = RunShell(testing::BinDir() + "/kiln " + args + " 2>/dev/null");
      EXPECT_EQ(rc, 0) << args << "\n" << out;
      EXPECT_NE(out.find("Usage: kiln " + command + " [OPTIONS]"), std::string::npos)
          << args << "\n"
          << out;
      EXPECT_NE(out.find("  -h,--help "), std::string::npos) << args << "\n" << out;
      for (const std::string& flag : flags) {
        EXPECT_NE(out.find("  " + flag), std::string::npos) << args << ": " << flag << "\n" << out;
      }
    }
  }
  for (const char* args : {"--help", "-h", "help"}) {
    auto [rc, out] = RunShell(testing::BinDir() + "/kiln " + args + " 2>/dev/null");
    EXPECT_EQ(rc, 0) << args;
    for (const auto& [command, flags] : commands) {
      EXPECT_NE(out.find("\n  " + command + " "), std::string::npos) << command << "\n" << out;
    }
    EXPECT_NE(out.find("KILN_SERVER"), std::string::npos) << out;
    EXPECT_NE(out.find("--version"), std::string::npos) << out;
  }
}

// --version of each binary: the release, the compiler version exactly as in every artifact's
// cache key, the LLVM version the build used and the git commit.
TEST(CliTest, VersionOfEveryBinary) {
  for (const char* binary : {"kiln", "kilnd", "kiln-worker"}) {
    const std::string path = testing::BinDir() + "/" + binary;
    if (std::string(binary) != "kiln" && !fs::exists(path)) continue;  // built without the service
    auto [rc, out] = RunShell(path + " --version 2>/dev/null");
    EXPECT_EQ(rc, 0) << binary << "\n" << out;
    EXPECT_EQ(out.rfind(absl::StrCat(binary, " ", KILN_RELEASE, "\n"), 0), 0u) << out;
    EXPECT_NE(out.find(absl::StrCat("\ncompiler version: ", pipeline::kCompilerVersion, "\n")),
              std::string::npos)
        << binary << "\n"
        << out;
    EXPECT_NE(out.find(absl::StrCat("\nLLVM version: ", KILN_LLVM_VERSION, "\n")),
              std::string::npos)
        << binary << "\n"
        << out;
    EXPECT_NE(out.find("\ngit commit: "), std::string::npos) << binary << "\n" << out;
  }
}

// kilnd and kiln-worker: --help lists their flags and exits 0; a usage error exits 2, and the
// kiln-worker children's modes are no flags of its command line.
TEST(CliTest, DaemonAndWorkerHelpAndUsageErrors) {
  const std::string kilnd = testing::BinDir() + "/kilnd";
  const std::string worker = testing::BinDir() + "/kiln-worker";
  if (!fs::exists(kilnd) || !fs::exists(worker)) GTEST_SKIP() << "built without the service";
  for (const std::string& help : {kilnd + " --help", kilnd + " -h", worker + " --help"}) {
    auto [rc, out] = RunShell(help + " 2>/dev/null");
    EXPECT_EQ(rc, 0) << help << "\n" << out;
    EXPECT_NE(out.find("  --version "), std::string::npos) << out;
  }
  auto [kilnd_rc, kilnd_help] = RunShell(kilnd + " --help");
  for (const char* flag : {"--listen HOST:PORT", "--data-dir DIR", "--workers INT",
                           "--shutdown-grace DURATION", "--metrics-require-token"}) {
    EXPECT_NE(kilnd_help.find(std::string("  ") + flag), std::string::npos) << flag;
  }
  auto [worker_rc, worker_help] = RunShell(worker + " --help");
  for (const char* flag : {"--connect HOST:PORT", "--slots", "--measure cpu|cuda:N", "--cores"}) {
    EXPECT_NE(worker_help.find(std::string("  ") + flag), std::string::npos) << flag;
  }
  const std::vector<std::pair<std::string, std::string>> errors = {
      {kilnd + " --bogus", "kilnd: unknown flag --bogus"},
      {kilnd + " --listen", "kilnd: --listen needs a value"},
      {kilnd + " --shutdown_grace=soon",
       "kilnd: --shutdown-grace: wants a duration such as 30s, 10m or 1h30m, not 'soon'"},
      {kilnd + " stray", "kilnd: unexpected argument 'stray'"},
      {worker, "kiln-worker: missing --connect"},
      {worker + " --connect 127.0.0.1:1 --bogus", "kiln-worker: unknown flag --bogus"},
      {worker + " --connect 127.0.0.1:1 --slots 0",
       "kiln-worker: --slots: Value 0 not in range 1 to 1024"},
      {worker + " --connect 127.0.0.1:1 --measure gpu",
       "kiln-worker: --measure wants cpu or cuda:N, not 'gpu'"},
      {worker + " --run-compile --connect 127.0.0.1:1", "kiln-worker: unknown flag --run-compile"},
  };
  for (const auto& [command, message] : errors) {
    auto [rc, out] = RunShell(command + " 2>&1 >/dev/null");
    EXPECT_EQ(rc, 2) << command << "\n" << out;
    EXPECT_EQ(out.rfind(message + "\n", 0), 0u) << command << "\n" << out;
    EXPECT_NE(out.find(" --help' for usage.\n"), std::string::npos) << out;
  }
}

// KILN_TARGET is the default --target and the flag beats it; KILN_SERVER makes compile remote
// (here a server nobody answers at: a runtime failure, exit 1) unless --local.
TEST(CliTest, EnvironmentGivesTargetAndServer) {
  const std::string model = "tests/data/rnn_seq_lens/model.onnx";
  const fs::path tmp = fs::temp_directory_path() / ("kiln_cli_env_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "a.kiln").string();
  const std::string kiln = testing::BinDir() + "/kiln ";
  auto target_of = [&](const std::string& env, const std::string& flags) {
    auto [rc, out] = RunShell("env -u KILN_SERVER " + env + " " + kiln + "compile " + model +
                              " -o " + artifact + " " + flags + " 2>&1");
    EXPECT_EQ(rc, 0) << out;
    auto [inspect_rc, inspect] = Kiln("inspect " + artifact);
    EXPECT_EQ(inspect_rc, 0) << inspect;
    const size_t at = inspect.find("target:           ");
    return at == std::string::npos ? inspect : inspect.substr(at, inspect.find('\n', at) - at);
  };
  EXPECT_THAT(target_of("KILN_TARGET=cpu:x86-64-v2", ""),
              ::testing::StartsWith("target:           cpu:x86-64-v2:"));
  EXPECT_THAT(target_of("KILN_TARGET=cpu:x86-64-v2", "--target cpu:x86-64-v3"),
              ::testing::StartsWith("target:           cpu:x86-64-v3:"));
  // KILN_SERVER: compile goes to the server (none answers there) unless --local.
  const std::string nobody = "KILN_SERVER=127.0.0.1:1 KILN_TARGET=cpu:x86-64-v2 ";
  auto [remote_rc, remote_out] =
      RunShell(nobody + kiln + "compile " + model + " -o " + artifact + " --timeout-s 5 2>&1");
  EXPECT_EQ(remote_rc, 1) << remote_out;
  EXPECT_THAT(remote_out, ::testing::HasSubstr("kiln: UNAVAILABLE: "));
  auto [local_rc, local_out] =
      RunShell(nobody + kiln + "compile " + model + " -o " + artifact + " --local 2>&1");
  EXPECT_EQ(local_rc, 0) << local_out;
  EXPECT_THAT(local_out, ::testing::HasSubstr("target x86-64-v2)"));
  // A server-only command takes its server from KILN_SERVER too.
  auto [status_rc, status_out] = RunShell(nobody + kiln + "status --timeout-s 5 2>&1");
  EXPECT_EQ(status_rc, 1) << status_out;
  EXPECT_THAT(status_out, ::testing::HasSubstr("UNAVAILABLE"));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

using ::kiln::testing::Kiln;

// transformer_encoder_dyn: input [batch,seq,256], three data sets at (1,64), (2,16), (3,40).
TEST(CliTest, SymbolicInputShapes) {
  const std::string dir = "../shared/models/transformer_encoder_dyn";
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  // Without --input-shape: the dims stay symbolic, check runs every data set through one
  // artifact, and inspect shows the dims' expressions and the symbols.
  auto [check_rc, check_out] = Kiln("check " + dir);
  ASSERT_EQ(check_rc, 0) << check_out;
  for (const char* line :
       {"symbolic dims: one artifact for all 3 data sets, symbols batch=[0,inf], seq=[0,inf] "
        "(compiled in ", "PASS test_data_set_0/output", "PASS test_data_set_1/output",
        "PASS test_data_set_2/output"}) {
    EXPECT_NE(check_out.find(line), std::string::npos) << line << "\n" << check_out;
  }
  EXPECT_EQ(check_out.find("input shapes: "), std::string::npos) << check_out;
  fs::path tmp = fs::temp_directory_path() / ("kiln_cli_shapes_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "t.kiln").string();
  auto [plain_rc, plain_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact);
  ASSERT_EQ(plain_rc, 0) << plain_out;
  auto [sym_rc, sym_out] = Kiln("inspect " + artifact);
  for (const char* line : {"input:  input: f32[batch,seq,256]\n",
                           "output: output: f32[batch,seq,256]\n",
                           "symbolic dims:    batch=[0,inf] seq=[0,inf] (bound from the input "
                           "shapes at each run)\n"}) {
    EXPECT_NE(sym_out.find(line), std::string::npos) << line << "\n" << sym_out;
  }
  // With it: the artifact has that static shape; check runs only the matching data set.
  auto [rc, out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                        " --input-shape input=2,16,256");
  ASSERT_EQ(rc, 0) << out;
  auto [inspect_rc, inspect_out] = Kiln("inspect " + artifact);
  EXPECT_NE(inspect_out.find("input:  input: f32[2,16,256]"), std::string::npos) << inspect_out;
  EXPECT_NE(inspect_out.find("output: output: f32[2,16,256]"), std::string::npos) << inspect_out;
  auto [one_rc, one_out] = Kiln("check " + dir + " --input-shape input=2,16,256");
  ASSERT_EQ(one_rc, 0) << one_out;
  EXPECT_NE(one_out.find("PASS test_data_set_1/output"), std::string::npos) << one_out;
  EXPECT_NE(one_out.find("SKIP test_data_set_0: input shapes input=1,64,256 differ from the "
                         "compiled input=2,16,256"),
            std::string::npos)
      << one_out;
  // --time-passes: every stage's time, graph passes by name, kernels summed per category.
  auto [timed_rc, timed_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                                    " --input-shape input=1,16,256 --time-passes");
  ASSERT_EQ(timed_rc, 0) << timed_out;
  for (const char* stage : {"time report (--time-passes): total ", "  import\n",
                            "  pass: fusion\n", "     36  schedule\n", "     36  codegen: emit\n",
                            "  codegen: optimize (LLVM O3)\n", "  link\n",
                            "  slowest single stages:\n"}) {
    EXPECT_NE(timed_out.find(stage), std::string::npos) << stage << "\n" << timed_out;
  }
  auto [bad_rc, bad_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                                " --input-shape input=2,16,128");
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(bad_out,
            "kiln: INVALID_ARGUMENT: --input-shape input=2,16,128: dim 2 of graph input 'input' "
            "[batch,seq,256] is fixed at 256\n");
  fs::remove_all(tmp);
}

// Shape profiles: one artifact holds a variant per --input-shape given for the input; the
// runtime runs the matching one and refuses other shapes, naming the compiled profiles.
TEST(CliTest, ShapeProfilesInOneArtifact) {
  const std::string dir = "../shared/models/transformer_encoder_dyn";
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  auto [check_rc, check_out] =
      Kiln("check " + dir +
           " --input-shape input=1,64,256 --input-shape input=2,16,256 --input-shape "
           "input=3,40,256");
  ASSERT_EQ(check_rc, 0) << check_out;
  for (const char* line :
       {"input shapes: input=1,64,256 | input=2,16,256 | input=3,40,256 (compiled in ",
        "PASS test_data_set_0/output", "PASS test_data_set_1/output",
        "PASS test_data_set_2/output"}) {
    EXPECT_NE(check_out.find(line), std::string::npos) << line << "\n" << check_out;
  }
  // Two profiles: the third data set matches none and is skipped.
  auto [two_rc, two_out] =
      Kiln("check " + dir + " --input-shape input=1,64,256 --input-shape input=2,16,256");
  ASSERT_EQ(two_rc, 0) << two_out;
  EXPECT_NE(two_out.find("SKIP test_data_set_2: input shapes input=3,40,256 differ from the "
                         "compiled input=1,64,256 | input=2,16,256"),
            std::string::npos)
      << two_out;

  fs::path tmp = fs::temp_directory_path() / ("kiln_cli_profiles_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "p.kiln").string();
  auto [rc, out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                        " --input-shape input=1,64,256 --input-shape input=2,16,256");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("(2 shape profiles, 72 kernels, graph "), std::string::npos) << out;
  auto [inspect_rc, inspect_out] = Kiln("inspect --kernels " + artifact);
  for (const char* line : {"input:  input: f32[?,?,256]\n", "shape profiles (2;",
                           "profile 0: input: f32[1,64,256] -> output: f32[1,64,256]\n",
                           "profile 1: input: f32[2,16,256] -> output: f32[2,16,256]\n",
                           "    p1_kernel_0  "}) {
    EXPECT_NE(inspect_out.find(line), std::string::npos) << line << "\n" << inspect_out;
  }
  auto [run_rc, run_out] = Kiln("run " + artifact + " --input input=" + dir +
                                "/test_data_set_1/input_0.pb --output-dir " + tmp.string());
  EXPECT_EQ(run_rc, 0) << run_out;
  EXPECT_NE(run_out.find("output.pb f32[2,16,256]"), std::string::npos) << run_out;
  auto [bad_rc, bad_out] = Kiln("run " + artifact + " --input input=" + dir +
                                "/test_data_set_2/input_0.pb --output-dir " + tmp.string());
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(bad_out,
            "kiln: INVALID_ARGUMENT: input shapes input=[3,40,256] match none of the artifact's "
            "2 shape profiles: input=[1,64,256] | input=[2,16,256]\n");
  // A profile that contradicts a fixed dim names its profile.
  auto [fixed_rc, fixed_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                                    " --input-shape input=1,64,256 --input-shape input=2,16,128");
  EXPECT_EQ(fixed_rc, 1);
  EXPECT_EQ(fixed_out,
            "kiln: INVALID_ARGUMENT: shape profile 1 (input=2,16,128): --input-shape "
            "input=2,16,128: dim 2 of graph input 'input' [batch,seq,256] is fixed at 256\n");
  // kiln tune takes one profile.
  auto [tune_rc, tune_out] = Kiln("tune " + dir + "/model.onnx --print-space --input-shape "
                                  "input=1,64,256 --input-shape input=2,16,256");
  EXPECT_EQ(tune_rc, 1);
  EXPECT_NE(tune_out.find("kiln tune takes one shape profile, got 2 (input=1,64,256 | "
                          "input=2,16,256)"),
            std::string::npos)
      << tune_out;
  fs::remove_all(tmp);
}

// If, Loop and Scan (tests/data/control_flow, scripts/make-control-flow-model: references from
// numpy, equal to ONNX Runtime 1.30's within 2e-6): an If whose condition folds is inlined, an If
// on a run-time condition selects, a Loop with a constant trip count and a Scan are unrolled.
TEST(CliTest, ControlFlowModelPassesCheck) {
  auto [rc, out] = Kiln("check tests/data/control_flow");
  ASSERT_EQ(rc, 0) << out;
  for (const char* name : {"if_out", "sel_out", "loop_acc", "loop_scan", "scan_state",
                           "scan_out"}) {
    EXPECT_NE(out.find(std::string("PASS test_data_set_0/") + name + ":"), std::string::npos)
        << name << "\n" << out;
  }
  // The folded If leaves no trace of its else branch (Neg) in the graph.
  auto [ir_rc, ir] = Kiln("check tests/data/control_flow --print-ir-after import");
  ASSERT_EQ(ir_rc, 0) << ir;
  EXPECT_EQ(ir.find("Neg("), std::string::npos) << ir;
  EXPECT_NE(ir.find("Where("), std::string::npos) << ir;
}

// An If on a run-time condition runs only the branch it selects (tests/data/runtime_if,
// scripts/make-runtime-loop-model; equal to ORT 1.30): its then_branches hold a run-time Loop
// whose scan output would fail, and an int32 division by n, on the second data set's n=0, where
// the condition selects else_branch; the second If gives a sequence.
TEST(CliTest, RuntimeIfRunsOnlyTheSelectedBranch) {
  auto [rc, out] = Kiln("check tests/data/runtime_if");
  ASSERT_EQ(rc, 0) << out;
  for (const char* name : {"y", "parts_cat"}) {
    for (int k : {0, 1}) {
      EXPECT_NE(out.find(absl::StrCat("PASS test_data_set_", k, "/", name, ":")), std::string::npos)
          << out;
    }
  }
}

// A bidirectional RNN whose sequence_lens ([4, 1, 2]) arrive at run time
// (tests/data/rnn_seq_lens, scripts/make-rnn-seq-lens-model: numpy references with ONNX
// Runtime's semantics): steps past each entry's length keep its state and give zeros, and the
// reverse direction runs over the first lens[b] inputs.
TEST(CliTest, RecurrentSequenceLengthsAtRunTime) {
  auto [rc, out] = Kiln("check tests/data/rnn_seq_lens");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("PASS test_data_set_0/Y:"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS test_data_set_0/Y_h:"), std::string::npos) << out;
  // A length past the sequence is refused, as ONNX Runtime refuses it.
  const fs::path tmp = fs::temp_directory_path() / ("kiln_rnn_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "rnn.kiln").string();
  auto [compile_rc, compile_out] =
      Kiln("compile tests/data/rnn_seq_lens/model.onnx -o " + artifact);
  ASSERT_EQ(compile_rc, 0) << compile_out;
  std::shared_ptr<Tensor> lens = Tensor::Zeros(TensorType{DType::kInt32, {3}});
  for (int b = 0; b < 3; ++b) lens->mutable_data<int32_t>()[b] = b == 0 ? 5 : 1;
  const std::string lens_file = (tmp / "lens.pb").string();
  ASSERT_TRUE(importer::WriteTensorFile(lens_file, "sequence_lens", *lens).ok());
  auto [run_rc, run_out] =
      Kiln("run " + artifact + " --input X=tests/data/rnn_seq_lens/test_data_set_0/input_0.pb " +
           "--input sequence_lens=" + lens_file + " --output-dir " + (tmp / "out").string());
  EXPECT_EQ(run_rc, 1);
  EXPECT_NE(run_out.find("node 'rnn' (RNN): every sequence_lens value must be in [1, 4] (1 = it "
                         "is): got [0] at run time"),
            std::string::npos)
      << run_out;
  fs::remove_all(tmp);
}

// A model with sequence inputs and outputs (SequenceMap over two sequences): compiled with each
// element's shape as an input shape, run on the data set's SequenceProto files, its sequence
// output written as one SequenceProto that matches the reference.
TEST(CliTest, SequenceInputsAndOutputsRun) {
  const std::string dir = "../shared/conformance/node/test_sequence_map_add_2_sequences";
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  const std::string ds = dir + "/test_data_set_0";
  const fs::path tmp = fs::temp_directory_path() / ("kiln_seq_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  auto x0 = importer::ReadSequenceFile(ds + "/input_0.pb");
  ASSERT_TRUE(x0.ok()) << x0.status();
  std::string shapes;
  for (const char* name : {"x0", "x1"}) {
    for (size_t k = 0; k < x0->size(); ++k) {
      shapes += absl::StrCat(" --input-shape '", name, "[", k,
                             "]=", absl::StrJoin((*x0)[k].tensor.type.shape, ","), "'");
    }
  }
  const std::string artifact = (tmp / "seq.kiln").string();
  auto [compile_rc, compile_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact + shapes);
  ASSERT_EQ(compile_rc, 0) << compile_out;
  auto [run_rc, run_out] =
      Kiln("run " + artifact + " --input x0=" + ds + "/input_0.pb --input x1=" + ds +
           "/input_1.pb --output-dir " + (tmp / "out").string());
  ASSERT_EQ(run_rc, 0) << run_out;
  auto got = importer::ReadSequenceFile((tmp / "out" / "y0.pb").string());
  auto want = importer::ReadSequenceFile(ds + "/output_0.pb");
  ASSERT_TRUE(got.ok() && want.ok());
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < got->size(); ++k) {
    client::OutputComparison c =
        client::CompareTensors((*got)[k].tensor, (*want)[k].tensor, client::Tolerance{});
    EXPECT_TRUE(c.pass) << "element " << k << ": " << client::FormatComparison(c);
  }
  auto [bad_rc, bad_out] =
      Kiln("run " + artifact + " --input x0=" + ds + "/input_1.pb --input x1=" + ds +
           "/input_0.pb --input x2=" + ds + "/input_0.pb --output-dir " + (tmp / "bad").string());
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad_out.find("run: the model has no input named 'x2'"), std::string::npos) << bad_out;
  fs::remove_all(tmp);
}

// A Loop whose trip count and condition are graph inputs is unrolled for the trip count its
// declared scan output implies (5), and a run with another trip count is refused; it is also
// unrolled once --constant-input gives them (check then feeds the remaining input by name).
TEST(CliTest, RuntimeLoopTripCounts) {
  const std::string dir = "../shared/conformance/node/test_loop11";
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  const std::string ds = dir + "/test_data_set_0";
  auto [plain_rc, plain_out] = Kiln("check " + dir);
  EXPECT_EQ(plain_rc, 0) << plain_out;
  const fs::path tmp = fs::temp_directory_path() / ("kiln_loop_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "loop.kiln").string();
  auto [compile_rc, compile_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact);
  ASSERT_EQ(compile_rc, 0) << compile_out;
  std::shared_ptr<Tensor> three = Tensor::Zeros(TensorType{DType::kInt64, {}});
  three->mutable_data<int64_t>()[0] = 3;
  const std::string three_file = (tmp / "three.pb").string();
  ASSERT_TRUE(importer::WriteTensorFile(three_file, "trip_count", *three).ok());
  auto [run_rc, run_out] =
      Kiln("run " + artifact + " --input trip_count=" + three_file + " --input cond=" + ds +
           "/input_1.pb --input y=" + ds + "/input_2.pb --output-dir " + (tmp / "out").string());
  EXPECT_EQ(run_rc, 1);
  EXPECT_NE(run_out.find("node 'res_y' (Loop): the trip count (M, or 0 when the initial "
                         "condition is false): got [3] at run time, the artifact was compiled "
                         "for [5]"),
            std::string::npos)
      << run_out;
  // A constant trip count that contradicts the declared scan output is a compile error.
  auto [const_rc, const_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                                    " --constant-input trip_count=" + three_file);
  EXPECT_EQ(const_rc, 1);
  EXPECT_NE(const_out.find("node 'res_y' (Loop): the trip count M is 3 but the static scan "
                           "outputs imply 5 iterations"),
            std::string::npos)
      << const_out;
  fs::remove_all(tmp);
  auto [rc, out] = Kiln("check " + dir + " --constant-input trip_count=" + ds +
                        "/input_0.pb --constant-input cond=" + ds + "/input_1.pb");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("PASS test_data_set_0/res_scan"), std::string::npos) << out;
  auto [bad_rc, bad_out] = Kiln("check " + dir + " --constant-input y=" + ds + "/input_0.pb");
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(bad_out, "kiln: INVALID_ARGUMENT: --constant-input y: the tensor has element type i64, "
                     "the input f32\n");
  auto [none_rc, none_out] = Kiln("check " + dir + " --constant-input nope=" + ds + "/input_0.pb");
  EXPECT_EQ(none_rc, 1);
  EXPECT_EQ(none_out, "kiln: INVALID_ARGUMENT: --constant-input nope: the model has no graph "
                      "input of that name\n");
}

// tests/data/scalar_rate (scripts/make-scalar-rate-model): a model whose sample rate `sr` is a
// scalar graph input; test_data_set_0 feeds it as a one-element tensor [1], as a voice-activity
// model's wrapper does and ONNX Runtime runs, test_data_set_1 as the scalar. kiln check passes
// both (with --input-shape too, which matches data sets to the compiled shapes), kiln run gives
// the same output for both on an artifact with shape profiles, and sr fed as [2] is refused with
// the runtime's error.
TEST(CliTest, OneElementTensorFeedsAScalarInput) {
  const std::string dir = "tests/data/scalar_rate";
  for (const std::string flags : {"", " --input-shape x=3"}) {
    auto [rc, out] = Kiln("check " + dir + flags);
    EXPECT_EQ(rc, 0) << flags << "\n" << out;
    for (const char* line : {"PASS test_data_set_0/y:", "PASS test_data_set_1/y:"}) {
      EXPECT_NE(out.find(line), std::string::npos) << flags << "\n" << out;
    }
    EXPECT_EQ(out.find("SKIP"), std::string::npos) << flags << "\n" << out;
  }
  const fs::path tmp = fs::temp_directory_path() / ("kiln_cli_scalar_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string artifact = (tmp / "rate.kiln").string();
  auto [compile_rc, compile_out] = Kiln("compile " + dir + "/model.onnx -o " + artifact +
                                        " --input-shape x=3 --input-shape x=4");
  ASSERT_EQ(compile_rc, 0) << compile_out;
  const std::string x = " --input x=" + dir + "/test_data_set_0/input_0.pb";
  std::vector<Tensor> outputs;
  for (int k : {0, 1}) {
    const fs::path out_dir = tmp / absl::StrCat("out", k);
    auto [rc, out] = Kiln(absl::StrCat("run ", artifact, x, " --input sr=", dir, "/test_data_set_",
                                       k, "/input_1.pb --output-dir ", out_dir.string()));
    ASSERT_EQ(rc, 0) << out;
    auto y = importer::ReadTensorFile((out_dir / "y.pb").string());
    ASSERT_TRUE(y.ok()) << y.status();
    outputs.push_back(y->tensor);
  }
  EXPECT_EQ(outputs[0].type, (TensorType{DType::kFloat32, {3}}));
  EXPECT_EQ(outputs[0].type, outputs[1].type);
  EXPECT_EQ(outputs[0].bytes, outputs[1].bytes);
  std::shared_ptr<Tensor> two = Tensor::Zeros(TensorType{DType::kInt64, {2}});
  const std::string two_file = (tmp / "sr_two.pb").string();
  ASSERT_TRUE(importer::WriteTensorFile(two_file, "sr", *two).ok());
  auto [bad_rc, bad_out] = Kiln("run " + artifact + x + " --input sr=" + two_file +
                                " --output-dir " + (tmp / "bad").string());
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(bad_out, "kiln: INVALID_ARGUMENT: input 1 ('sr'): expected shape [], got [2]\n");
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace kiln
