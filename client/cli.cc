// The kiln command line (client/cli.h): one table of subcommands, each with its positional
// arguments and flags, turned into a CLI11 app; what CLI11 parses becomes an Args.
#include "client/cli.h"

#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/command_line.h"

namespace kiln::client {
namespace {

/// A flag: its CLI11 names ("--target", "-o,--output"; the last is its key in Args), the name
/// of its value (nullptr: a flag without one), its one-line help. Every flag with a value may
/// be given again; the subcommand decides what several values mean.
struct Flag {
  const char* names;
  const char* value;
  const char* help;
};

/// A positional argument; the optional ones follow the required ones.
struct Positional {
  const char* name;
  const char* help;
  bool required = true;
};

/// A subcommand: its name, one-line help, arguments, flags and the text after its flags.
struct Command {
  const char* name;
  const char* help;
  std::vector<Positional> positionals;
  std::vector<Flag> flags;
  const char* footer = "";
};

// Flags of several subcommands.
constexpr Flag kTarget{"--target", "T",
                       "host (this CPU; with --server kilnd's), native (this CPU, also through "
                       "kilnd), cpu:<LLVM CPU name>[:+f,-f,...] or cuda:sm_NN; default "
                       "$KILN_TARGET, else host"};
constexpr Flag kPrecision{"--precision", "P",
                          "fp32 (default), or tf32|fp16|bf16: matmuls and convs of a cuda "
                          "target on tensor cores"};
constexpr Flag kPrintIrAfter{"--print-ir-after", "PASS",
                             "print the IR after PASS (a graph pass, import, lower, schedule, "
                             "llvm or all) to stderr; repeatable"};
constexpr Flag kDisablePass{"--disable-pass", "PASS", "skip the graph pass PASS; repeatable"};
constexpr Flag kRecords{"--records", "FILE.jsonl",
                        "apply the best tuning records of FILE.jsonl (kiln tune --local)"};
constexpr Flag kHardwareKey{"--hardware-key", "K", "the hardware whose tuning records apply"};
constexpr Flag kInputShape{"--input-shape", "NAME=D0,D1,...",
                           "a shape for a graph input with symbolic dims (a dim may be MIN..MAX); "
                           "repeatable: one shape profile per shape"};
constexpr Flag kConstantInput{"--constant-input", "NAME=FILE.pb",
                              "compile the graph input NAME as the constant tensor in FILE.pb; "
                              "repeatable"};
constexpr Flag kDevice{"--device", "D",
                       "run on cpu or cuda:N (default: cuda:0 for a CUDA artifact, else cpu)"};
constexpr Flag kServer{"--server", "HOST:PORT", "the kilnd to use; default $KILN_SERVER"};
constexpr Flag kTimeout{"--timeout-s", "S", "seconds each call to kilnd may take (default 600)"};
constexpr Flag kLocal{"--local", nullptr, "compile here even when KILN_SERVER is set"};
constexpr Flag kProgress{
    "--progress", nullptr,
    "(--server) print the remote compile's progress to stderr (default: on a terminal)"};
constexpr Flag kQuiet{"--quiet", nullptr, "(--server) no progress on stderr"};
constexpr Flag kJson{"--json", nullptr, "print the result as one JSON object"};
constexpr Flag kTrials{"--trials", "N", "candidates measured in all (default 64)"};
constexpr Flag kTimeBudget{"--time-budget-s", "S", "stop tuning after S seconds (0: no limit)"};
constexpr Flag kSeed{"--seed", "S", "the random seed"};
// How a command reaches kilnd (client/channel.h).
constexpr Flag kTlsCa{"--tls-ca", "FILE",
                      "PEM CA that verifies kilnd's certificate (turns TLS on)"};
constexpr Flag kTlsServerName{"--tls-server-name", "NAME",
                              "the name to check kilnd's certificate against"};
constexpr Flag kTokenFile{"--token-file", "FILE",
                          "file holding the bearer token alone (default: $KILN_TOKEN)"};

constexpr char kServerFooter[] =
    "With --server (or KILN_SERVER set), the model is uploaded to kilnd only if it lacks it,\n"
    "compiled there and the artifact downloaded and verified; --local compiles here even when\n"
    "KILN_SERVER is set.\n";

constexpr char kCompileFooter[] =
    "PASS is a graph pass (constant-folding, simplify, fold-batchnorm, matmul-layout,\n"
    "matmul-pack, cse, dce, layout-nchwc, conv-u8s8, matmul-u8s8, fusion), \"import\", \"lower\"\n"
    "(loop IR before scheduling), \"schedule\" (after), \"llvm\" or \"all\".\n"
    "A target cuda:sm_80|sm_86|sm_89|sm_90|sm_90a compiles PTX for that NVIDIA GPU on any host.\n"
    "--input-shape gives a graph input with symbolic dims (dim_param) a concrete shape; giving\n"
    "an input several shapes compiles one shape profile per shape into one artifact, and a dim\n"
    "given as a range MIN..MAX (one profile) is a bounded dim that runs every length within it.\n"
    "--constant-input compiles a graph input as the constant in FILE.pb (an onnx.TensorProto).\n";

// Every subcommand. Flags with values may be written --flag VALUE or --flag=VALUE.
const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"compile",
       "compile an ONNX model into an artifact (here, or on kilnd with --server)",
       {{"MODEL.onnx", "the model to compile"}},
       {{"-o,--output", "OUT.kiln", "the artifact to write (required)"},
        kTarget,
        kPrecision,
        kPrintIrAfter,
        kDisablePass,
        kRecords,
        kHardwareKey,
        kInputShape,
        kConstantInput,
        {"--time-passes", nullptr, "print each compile stage's time (a local compile)"},
        {"--depfile", "FILE",
         "write a Makefile depfile: the artifact depends on the model, its external data, "
         "--records, --constant-input files and kiln itself (for Ninja/Make)"},
        kServer,
        kLocal,
        kJson,
        kProgress,
        kQuiet,
        kTimeout,
        {"--untuned", nullptr, "(--server) ignore kilnd's tuning records"},
        {"--tune", "background",
         "(--server) compile now, then tune the model in a batch job on kilnd"},
        kTrials,
        kTimeBudget,
        kSeed,
        kTlsCa,
        kTlsServerName,
        kTokenFile},
       kCompileFooter},
      {"run",
       "run an artifact on input tensor files, writing each output as DIR/<name>.pb",
       {{"OUT.kiln", "the artifact to run"}},
       {{"--input", "NAME=FILE.pb",
         "an input tensor (onnx.TensorProto; a SequenceProto for a sequence input); repeatable"},
        {"--output-dir", "DIR", "where the outputs go (required unless timing or profiling)"},
        {"--threads", "N", "threads to run on (default 0: one per online core)"},
        kDevice,
        {"--repeat", "N", "time N runs; print the median and p90 latency"},
        {"--warmup", "W", "untimed runs before timing (default 1 with --repeat or --profile)"},
        {"--profile", "TRACE.json",
         "profile every kernel call of the timed runs (default 10): print the slowest kernels "
         "and write a Chrome trace (Perfetto, chrome://tracing)"}},
       "Inputs missing from --input are an error. With --repeat or --profile, --output-dir is\n"
       "optional (the outputs of one more run are written when it is given).\n"},
      {"check",
       "compile DIR/model.onnx, run DIR/test_data_set_*/ and compare with the expected outputs",
       {{"DIR", "the model directory"}},
       {kTarget, kPrecision, kPrintIrAfter, kDisablePass, kRecords, kHardwareKey, kInputShape,
        kConstantInput, kDevice, kServer, kLocal, kJson, kProgress, kQuiet, kTimeout, kTlsCa,
        kTlsServerName, kTokenFile},
       "Exits 0 only if every output passes. Without --input-shape, a model with symbolic dims\n"
       "is compiled once per distinct set of input shapes of its data sets.\n"},
      {"inspect",
       "summarize an artifact: target, versions, inputs, ops, kernels, compute, memory",
       {{"OUT.kiln", "the artifact"}},
       {{"--kernels", nullptr, "also every kernel: tensors bound, workload, tuning, schedule"},
        {"--memory", nullptr, "also the arena plan: each buffer's offset, size, live range"},
        {"--json", nullptr, "the summary and the whole manifest as one JSON object"},
        {"--dot", nullptr, "the fused graph in Graphviz dot (kernels, tensors between them)"}},
       "The summary names tensors as the model does where the compiler kept the name.\n"},
      {"tune",
       "auto-tune a model's kernels: print the schedule space, or measure here or on kilnd",
       {{"MODEL.onnx", "the model to tune"}},
       {{"--print-space", nullptr, "print each workload's schedule space and exit"},
        {"--samples", "N", "(--print-space) also print N sampled candidates"},
        {"--local", nullptr, "measure on this machine (needs --records-out)"},
        {"--records-out", "FILE.jsonl", "(--local) append the tuning records here"},
        kServer,
        kTarget,
        kTrials,
        kTimeBudget,
        {"--threads", "N", "(--local) cores to measure with (default 1)"},
        kSeed,
        {"--random", nullptr, "random search instead of the cost model's"},
        {"--no-cache-flush", nullptr, "(--local) do not flush caches between measurements"},
        kHardwareKey,
        kDisablePass,
        kInputShape,
        {"--device", "cuda:N", "(--local, a cuda target) the GPU measured on (default cuda:0)"},
        kJson,
        kTimeout,
        kTlsCa,
        kTlsServerName,
        kTokenFile},
       "Measuring needs --local (this machine) or --server (a kilnd with measure workers).\n"},
      {"cancel",
       "cancel a job on kilnd",
       {{"JOB_ID", "the job"}},
       {kServer, kTimeout, kTlsCa, kTlsServerName, kTokenFile}},
      {"status",
       "print kilnd's compiler version, uptime, workers, jobs and cache",
       {},
       {kServer, kJson, kTimeout, kTlsCa, kTlsServerName, kTokenFile}},
      {"jobs",
       "list kilnd's jobs",
       {},
       {kServer,
        {"--state", "S", "only jobs in state queued|running|succeeded|failed|cancelled"},
        {"--limit", "N", "at most N jobs (0: all)"},
        {"--kind", "K", "only jobs of kind compile|tune|workloads|build|measure|all; repeatable"},
        kJson,
        kTimeout,
        kTlsCa,
        kTlsServerName,
        kTokenFile}},
      {"workers",
       "list the workers registered with kilnd",
       {},
       {kServer, kJson, kTimeout, kTlsCa, kTlsServerName, kTokenFile}},
      {"records",
       "list, export (JSON lines) or import kilnd's tuning records",
       {{"VERB", "list, export or import"},
        {"FILE.jsonl", "(import) the records to import", /*required=*/false}},
       {kServer,
        kHardwareKey,
        {"--json", nullptr, "(list, import) print the result as one JSON object"},
        kTimeout,
        kTlsCa,
        kTlsServerName,
        kTokenFile}},
  };
  return commands;
}

constexpr char kFooter[] =
    "Run 'kiln COMMAND --help' for a command's flags.\n"
    "Environment: KILN_SERVER is the default --server (then compile and check go to kilnd\n"
    "unless --local), KILN_TARGET the default --target, KILN_TOKEN the default bearer token;\n"
    "a flag on the command line beats the environment.\n"
    "Exit status: 0 success, 1 failure (an error, or a check that fails), 2 usage error.\n";

/// Where CLI11 puts one subcommand's values; stable addresses, as CLI11 keeps pointers.
struct Values {
  const Command* command = nullptr;
  CLI::App* app = nullptr;
  std::deque<std::string> positionals;
  std::deque<std::vector<std::string>> values;  // per flag with a value
  std::deque<bool> bools;                       // per flag without one
};

/// The key of a flag in Args: its last name ("--output" of "-o,--output").
std::string KeyOf(const Flag& flag) {
  std::vector<std::string> names = absl::StrSplit(flag.names, ',');
  return names.back();
}

/// Adds `command` to `app` with its values in `v`.
void AddCommand(CLI::App& app, const Command& command, Values& v) {
  v.command = &command;
  v.app = app.add_subcommand(command.name, command.help);
  v.app->footer(command.footer);
  for (const Positional& p : command.positionals) {
    CLI::Option* o = v.app->add_option(p.name, v.positionals.emplace_back(), p.help)->type_name("");
    if (p.required) o->required();
  }
  for (const Flag& f : command.flags) {
    if (f.value == nullptr) {
      v.app->add_flag(f.names, v.bools.emplace_back(false), f.help);
      continue;
    }
    // One value per occurrence, every occurrence kept.
    v.app->add_option(f.names, v.values.emplace_back(), f.help)
        ->type_name(f.value)
        ->allow_extra_args(false)
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
}

/// The Args of the subcommand parsed.
Args ArgsOf(const Values& v) {
  Args args;
  args.command = v.command->name;
  size_t i = 0;
  for (const Positional& p : v.command->positionals) {
    if (v.app->count(p.name) > 0) args.positional.push_back(v.positionals[i]);
    ++i;
  }
  size_t value = 0, flag = 0;
  for (const Flag& f : v.command->flags) {
    if (f.value == nullptr) {
      if (v.bools[flag++]) args.flags.insert({KeyOf(f), "true"});
      continue;
    }
    for (const std::string& s : v.values[value++]) args.flags.insert({KeyOf(f), s});
  }
  return args;
}

bool Takes(const Command& command, const char* key) {
  for (const Flag& f : command.flags) {
    if (KeyOf(f) == key) return true;
  }
  return false;
}

/// KILN_SERVER and KILN_TARGET, where the command takes the flag and the line does not give it.
void ApplyEnvironment(const Command& command, Args& args) {
  for (auto [flag, variable] :
       {std::pair{"--server", "KILN_SERVER"}, {"--target", "KILN_TARGET"}}) {
    const char* value = std::getenv(variable);
    if (value == nullptr || *value == '\0' || !Takes(command, flag) || args.Has(flag)) continue;
    // --local keeps a compile or check here; tune --local measures here either way.
    if (std::string(flag) == "--server" && args.Has("--local")) continue;
    args.flags.insert({flag, value});
  }
}

}  // namespace

std::optional<int> ParseKilnCommandLine(int argc, char** argv, Args& args) {
  CLI::App app("kiln: compile, run, check and inspect ONNX models, here or through kilnd", "kiln");
  SetUpApp(app, "kiln");
  app.footer(kFooter);
  app.require_subcommand(1);
  std::deque<Values> values;
  for (const Command& command : Commands()) AddCommand(app, command, values.emplace_back());
  // `kiln help [COMMAND]` is `kiln [COMMAND] --help`; a word that is no command is named.
  std::vector<char*> line(argv, argv + argc);
  std::string help = "--help";
  if (argc >= 2 && std::string(argv[1]) == "help") {
    line.erase(line.begin() + 1);
    line.push_back(help.data());
  }
  if (line.size() >= 2 && line[1][0] != '-') {
    bool known = false;
    for (const Command& command : Commands()) known = known || command.name == std::string(line[1]);
    if (!known) return UsageError("kiln", absl::StrCat("unknown command '", line[1], "'"));
  }
  if (std::optional<int> done = ParseCommandLine(app, static_cast<int>(line.size()), line.data())) {
    // No command at all: the usage, as a usage error.
    if (line.size() == 1) std::cerr << app.help();
    return done;
  }
  for (const Values& v : values) {
    if (v.app->parsed()) {
      args = ArgsOf(v);
      ApplyEnvironment(*v.command, args);
      break;
    }
  }
  return std::nullopt;
}

}  // namespace kiln::client
