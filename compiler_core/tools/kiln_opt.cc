// kiln-opt: reads graph IR text (or an ONNX model), runs graph passes, prints the result; or
// reads loop IR text (a part starting with "func"), applies a schedule and prints the loop IR.
// The driver of the golden tests, modeled on mlir-opt (-passes=, -split-input-file,
// -print-ir-after).
//
//   kiln-opt [-passes=a,b,c] [-split-input-file] [-print-ir-after=a,b|all] [-verify-each=0|1]
//            [-int8-dot4=0|1] [-symbolic-dims] [-schedule=FILE] [-schedule-text=STEPS]
//            [-target=T [-default-schedule] [-emit=llvm|llvm-unoptimized|ptx]] [FILE|-]
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_replace.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/passes/graph/pass.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "compiler_core/support/status_macros.h"

namespace kiln {
namespace {

constexpr char kUsage[] =
    "usage: kiln-opt [options] [FILE|-]\n"
    "Reads graph IR text (or an ONNX model when FILE ends in .onnx), runs passes, prints the IR.\n"
    "  -passes=a,b,c          passes to run in order (default: none)\n"
    "  -split-input-file      split the input at '// -----' lines; process each part alone\n"
    "  -print-ir-after=a,b    print the IR to stderr after these passes ('all' for every pass)\n"
    "  -verify-each=0|1       verify the input and the IR after each pass (default: 1)\n"
    "  -symbolic-dims         ONNX input: keep dynamic input dims symbolic (dim_params become\n"
    "                         symbols) instead of refusing them\n"
    "  -int8-dot4=0|1         the target has a u8 x s8 dot product (VNNI): enables conv-u8s8 and\n"
    "                         matmul-u8s8 (default: 0)\n"
    "  -schedule=FILE         loop IR: apply the schedule in FILE (one step per line)\n"
    "  -schedule-text=STEPS   loop IR: apply these steps ('split(i, 4); vectorize(i.i)')\n"
    "  -target=T              loop IR: the target of -default-schedule and -emit (host,\n"
    "                         cpu:<llvm cpu name>, cuda:sm_80 .. cuda:sm_90a; default host)\n"
    "  -default-schedule      loop IR: apply the target's default schedule first\n"
    "  -precision=P           loop IR, cuda target: fp32 (default), tf32, fp16 or bf16\n"
    "  -emit=llvm|ptx         loop IR: print the scheduled func's optimized LLVM IR, or its PTX\n"
    "                         (a cuda target), instead of the loop IR; llvm-unoptimized: the\n"
    "                         LLVM IR as emitted, to replay with opt -pass-remarks-missed\n"
    "Loop IR input (a part whose first line is 'func ...') is parsed, verified, scheduled\n"
    "(the flags' steps, then the part's own '// SCHEDULE: STEPS' lines), verified and printed.\n"
    "  -list-passes           print the registered pass names\n";

constexpr char kSplitMarker[] = "// -----";

struct Options {
  std::vector<std::string> passes;
  std::vector<std::string> print_after;
  bool split_input_file = false;
  bool verify = true;
  bool int8_dot4 = false;  // -int8-dot4=
  bool symbolic_dims = false;  // -symbolic-dims
  bool list_passes = false;
  std::string schedule_file;  // -schedule=
  std::string schedule_text;  // -schedule-text=
  std::string target = "host";     // -target=
  bool default_schedule = false;   // -default-schedule
  std::string emit;                // -emit=: "", "llvm" or "ptx"
  std::string precision = "fp32";  // -precision=
  std::string input = "-";
};

std::vector<std::string> SplitList(absl::string_view list) {
  return absl::StrSplit(list, ',', absl::SkipEmpty());
}

/// Parses argv; returns an error message for a bad flag.
absl::StatusOr<Options> ParseArgs(int argc, char** argv) {
  Options options;
  bool have_input = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg != "-" && absl::StartsWith(arg, "-")) {
      absl::ConsumePrefix(&arg, "-");
      absl::ConsumePrefix(&arg, "-");  // accept -flag and --flag alike
      std::string flag(arg);
      if (absl::ConsumePrefix(&arg, "passes=")) {
        options.passes = SplitList(arg);
      } else if (absl::ConsumePrefix(&arg, "print-ir-after=")) {
        options.print_after = SplitList(arg);
      } else if (absl::ConsumePrefix(&arg, "verify-each=")) {
        if (!absl::SimpleAtob(std::string(arg), &options.verify)) {
          return absl::InvalidArgumentError(absl::StrCat("bad value in -", flag));
        }
      } else if (absl::ConsumePrefix(&arg, "int8-dot4=")) {
        if (!absl::SimpleAtob(std::string(arg), &options.int8_dot4)) {
          return absl::InvalidArgumentError(absl::StrCat("bad value in -", flag));
        }
      } else if (arg == "symbolic-dims") {
        options.symbolic_dims = true;
      } else if (absl::ConsumePrefix(&arg, "schedule=")) {
        options.schedule_file = std::string(arg);
      } else if (absl::ConsumePrefix(&arg, "schedule-text=")) {
        options.schedule_text = std::string(arg);
      } else if (absl::ConsumePrefix(&arg, "target=")) {
        options.target = std::string(arg);
      } else if (absl::ConsumePrefix(&arg, "emit=")) {
        if (arg != "llvm" && arg != "llvm-unoptimized" && arg != "ptx") {
          return absl::InvalidArgumentError(absl::StrCat("bad value in -", flag,
                                                         " (expected llvm, llvm-unoptimized or ptx)"));
        }
        options.emit = std::string(arg);
      } else if (absl::ConsumePrefix(&arg, "precision=")) {
        options.precision = std::string(arg);
      } else if (arg == "default-schedule") {
        options.default_schedule = true;
      } else if (arg == "split-input-file") {
        options.split_input_file = true;
      } else if (arg == "list-passes") {
        options.list_passes = true;
      } else if (arg == "h" || arg == "help") {
        std::cout << kUsage;
        std::exit(0);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unknown option -", flag));
      }
    } else if (!have_input) {
      options.input = std::string(arg);
      have_input = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", std::string(arg),
                                                     "': only one input file is allowed"));
    }
  }
  return options;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::stringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  buffer << file.rdbuf();
  return buffer.str();
}

/// The input split at `// -----` lines. Each part is prefixed with newlines so that parser
/// line numbers stay those of the whole file.
std::vector<std::string> SplitInput(const std::string& text) {
  std::vector<std::string> parts(1);
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), kSplitMarker)) {
      parts.push_back(std::string(line_number, '\n'));
      continue;
    }
    absl::StrAppend(&parts.back(), std::string(line), "\n");
  }
  return parts;
}

/// Reports `status` for `path` as "path:LINE:COL: error: ..." (or "path: error: ...").
void ReportError(const std::string& path, const absl::Status& status) {
  std::cout.flush();  // keep stdout and stderr in order when both go to one pipe
  absl::string_view message = status.message();
  absl::string_view location;
  // Parser messages start with "LINE:COL: ".
  size_t colon = message.find(": ");
  if (colon != absl::string_view::npos &&
      message.substr(0, colon).find_first_not_of("0123456789:") == absl::string_view::npos &&
      colon > 0) {
    location = message.substr(0, colon);
    message.remove_prefix(colon + 2);
  }
  std::string name = path == "-" ? "<stdin>" : path;
  if (!location.empty()) name = absl::StrCat(name, ":", std::string(location));
  std::cerr << name << ": error: " << message << "\n";
}

absl::Status RunOnGraph(graph::Graph& graph, const Options& options) {
  if (options.verify) {
    absl::Status verified = graph::VerifyGraph(graph);
    if (!verified.ok()) {
      return absl::Status(verified.code(),
                          absl::StrCat("input graph is invalid: ", verified.message()));
    }
  }
  passes::PipelineOptions pipeline;
  pipeline.verify = options.verify;
  pipeline.int8_dot4 = options.int8_dot4;
  pipeline.print_after = options.print_after;
  pipeline.printer = [](std::string_view pass, const std::string& ir) {
    std::cout.flush();
    std::cerr << "// -----// IR after " << pass << " //----- //\n" << ir;
  };
  return passes::RunPasses(graph, options.passes, pipeline);
}

/// True if `text`'s first line that is neither blank nor a comment starts a loop IR func.
bool IsLoopIr(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "//")) continue;
    return absl::StartsWith(line, "func ");
  }
  return false;
}

/// The "// SCHEDULE: STEPS" lines of `part` as schedule text that keeps their line and column
/// numbers (other lines blank, the marker blanked out).
std::string InlineSchedule(absl::string_view part) {
  constexpr absl::string_view kMarker = "// SCHEDULE:";
  std::string out;
  for (absl::string_view line : absl::StrSplit(part, '\n')) {
    size_t at = line.find(kMarker);
    if (at != absl::string_view::npos &&
        absl::StripLeadingAsciiWhitespace(line.substr(0, at)).empty()) {
      absl::StrAppend(&out, std::string(at + kMarker.size(), ' '),
                      line.substr(at + kMarker.size()));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

/// Parses the steps of `text` onto `schedule`. Errors name `source` ("schedule SOURCE:LINE:COL:
/// ..."), or keep the input's "LINE:COL: " when `source` is empty (inline steps).
absl::Status AppendSchedule(const std::string& text, const std::string& source,
                            schedule::Schedule& schedule) {
  absl::StatusOr<schedule::Schedule> parsed = schedule::ParseSchedule(text);
  if (!parsed.ok() && !source.empty()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat("schedule ", source, ":", parsed.status().message()));
  }
  if (!parsed.ok()) return parsed.status();
  schedule.steps.insert(schedule.steps.end(), parsed->steps.begin(), parsed->steps.end());
  return absl::OkStatus();
}

/// Loop IR mode for one input part: parse, verify, schedule, verify; returns the printed func.
absl::StatusOr<std::string> RunOnLoopIr(const std::string& part, const Options& options) {
  absl::StatusOr<loop::Func> func = loop::ParseFunc(part);
  if (!func.ok()) return func.status();
  auto verify = [&](absl::string_view what) -> absl::Status {
    absl::Status verified = options.verify ? loop::VerifyFunc(*func) : absl::OkStatus();
    if (verified.ok()) return verified;
    return absl::Status(verified.code(), absl::StrCat(what, " is invalid: ", verified.message()));
  };
  KILN_RETURN_IF_ERROR(verify("input func"));
  std::optional<Target> target;
  if (options.default_schedule || !options.emit.empty()) {
    KILN_ASSIGN_OR_RETURN(target, kiln::ResolveTarget(options.target));
    target->gpu.precision = options.precision;
  }
  schedule::Schedule sched;
  if (options.default_schedule) sched = schedule::DefaultSchedule(*func, *target);
  if (!options.schedule_file.empty()) {
    KILN_ASSIGN_OR_RETURN(std::string text, ReadInput(options.schedule_file));
    KILN_RETURN_IF_ERROR(AppendSchedule(text, options.schedule_file, sched));
  }
  KILN_RETURN_IF_ERROR(AppendSchedule(options.schedule_text, "-schedule-text", sched));
  KILN_RETURN_IF_ERROR(AppendSchedule(InlineSchedule(part), "", sched));
  if (!sched.steps.empty()) {
    KILN_RETURN_IF_ERROR(schedule::ApplySchedule(sched, *func));
    KILN_RETURN_IF_ERROR(verify("scheduled func"));
  }
  if (options.emit == "ptx") return codegen::CompileToPtx({*func}, *target);
  if (options.emit == "llvm") return codegen::EmitLlvmIr({*func}, *target);
  if (options.emit == "llvm-unoptimized") {
    return codegen::EmitLlvmIr({*func}, *target, /*optimize=*/false);
  }
  if (options.default_schedule) {
    return absl::StrCat("// SCHEDULE: ", absl::StrReplaceAll(sched.ToString(), {{"\n", "; "}}),
                        "\n", loop::PrintFunc(*func));
  }
  return loop::PrintFunc(*func);
}

int Main(int argc, char** argv) {
  absl::StatusOr<Options> options = ParseArgs(argc, argv);
  if (!options.ok()) {
    std::cerr << "kiln-opt: " << options.status().message() << "\n" << kUsage;
    return 1;
  }
  if (options->list_passes) {
    for (const std::string& name : passes::RegisteredPassNames()) std::cout << name << "\n";
    return 0;
  }
  if (absl::EndsWith(options->input, ".onnx")) {
    importer::ImportOptions import_options;
    import_options.symbolic_dims = options->symbolic_dims;
    absl::StatusOr<std::unique_ptr<graph::Graph>> graph =
        importer::ImportOnnxFile(options->input, import_options);
    absl::Status status = graph.ok() ? RunOnGraph(**graph, *options) : graph.status();
    if (!status.ok()) {
      ReportError(options->input, status);
      return 1;
    }
    std::cout << graph::PrintGraph(**graph);
    return 0;
  }
  absl::StatusOr<std::string> text = ReadInput(options->input);
  if (!text.ok()) {
    std::cerr << "kiln-opt: " << text.status().message() << "\n";
    return 1;
  }
  std::vector<std::string> parts =
      options->split_input_file ? SplitInput(*text) : std::vector<std::string>{*text};
  bool failed = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) std::cout << kSplitMarker << "\n";
    if (IsLoopIr(parts[i])) {
      absl::StatusOr<std::string> printed = RunOnLoopIr(parts[i], *options);
      if (!printed.ok()) {
        ReportError(options->input, printed.status());
        failed = true;
      } else {
        std::cout << *printed;
      }
      continue;
    }
    absl::StatusOr<std::unique_ptr<graph::Graph>> graph = graph::ParseGraph(parts[i]);
    absl::Status status = graph.ok() ? RunOnGraph(**graph, *options) : graph.status();
    if (!status.ok()) {
      // Keep going, as mlir-opt does, so one bad case does not hide the others.
      ReportError(options->input, status);
      failed = true;
      continue;
    }
    std::cout << graph::PrintGraph(**graph);
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
