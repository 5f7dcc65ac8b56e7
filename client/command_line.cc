// CLI11 parsing shared by kiln, kiln-worker and kilnd (client/command_line.h).
#include "client/command_line.h"

#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::client {
namespace {

/// "kiln compile": the app and the subcommands parsed so far.
std::string CommandName(const CLI::App& app) {
  std::string name = app.get_name();
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) {
    at = at->get_subcommands().front();
    absl::StrAppend(&name, " ", at->get_name());
  }
  return name;
}

/// CLI11's message, said the way the rest of Kiln says it where its wording is clumsy:
/// "unknown flag --bogus", "unexpected argument 'x'", "--input needs a value", "missing X".
std::string Reworded(const CLI::ParseError& e) {
  std::string message = e.what();
  for (const char* prefix : {"The following argument was not expected: ",
                             "The following arguments were not expected: "}) {
    if (!absl::StartsWith(message, prefix)) continue;
    std::vector<std::string> parts;
    for (absl::string_view extra :
         absl::StrSplit(absl::StripPrefix(message, prefix), ' ', absl::SkipEmpty())) {
      parts.push_back(absl::StartsWith(extra, "-") && extra != "-"
                          ? absl::StrCat("unknown flag ", extra)
                          : absl::StrCat("unexpected argument '", extra, "'"));
    }
    return absl::StrJoin(parts, "; ");
  }
  // "--input: 1 required NAME=FILE.pb missing"
  if (e.get_name() == "ArgumentMismatch" && absl::StrContains(message, " required ") &&
      absl::EndsWith(message, " missing")) {
    return absl::StrCat(message.substr(0, message.find(':')), " needs a value");
  }
  if (message == "A subcommand is required") return "missing command";
  // "MODEL.onnx is required"
  if (e.get_name() == "RequiredError" && absl::EndsWith(message, " is required")) {
    const std::string what(absl::StripSuffix(message, " is required"));
    if (!absl::StrContains(what, ' ')) return absl::StrCat("missing ", what);
  }
  return message;
}

}  // namespace

void SetUpApp(CLI::App& app, std::string_view program) {
  app.set_help_flag("-h,--help", "print this help and exit");
  std::string version = VersionText(program);
  if (!version.empty() && version.back() == '\n') version.pop_back();
  app.set_version_flag("--version", version,
                       "print the Kiln and compiler versions, LLVM's and the git commit, and exit");
  app.get_formatter()->column_width(36);
}

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, std::cout, std::cerr);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, std::cout, std::cerr);
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    return UsageError(CommandName(app), Reworded(e));
  }
}

int UsageError(std::string_view command, std::string_view message) {
  std::cerr << command << ": " << message << "\nRun '" << command << " --help' for usage.\n";
  return kUsageExitCode;
}

}  // namespace kiln::client
