// What the command lines of kiln, kiln-worker and kilnd share: --version's text, CLI11 parsing
// whose usage errors exit 2 (--help and --version exit 0), and the message of a usage error
// found after parsing. CLI11 is a heavy header: it is only forward-declared here, and only the
// .cc files that define a command line include it.
#ifndef KILN_CLIENT_COMMAND_LINE_H_
#define KILN_CLIENT_COMMAND_LINE_H_

#include <optional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}  // namespace CLI

namespace kiln::client {

/// The exit status of a usage error (unknown flag or command, missing or bad value, missing
/// argument); runtime failures exit 1.
inline constexpr int kUsageExitCode = 2;

/// --version's text, one item per line: "<program> <release>", the compiler version (as in
/// every artifact's cache key), the LLVM version and the git commit the build was configured
/// at ("unknown" outside a git checkout).
std::string VersionText(std::string_view program);

/// Gives `app` what every Kiln binary has: -h/--help, --version (VersionText of `program`),
/// and help columns wide enough for the flag names.
void SetUpApp(CLI::App& app, std::string_view program);

/// Parses argv with `app`; CLI11's exceptions end here. Returns nullopt when the command
/// should run, else the exit status after printing: 0 for --help (the help of the subcommand
/// it follows) and --version, on stdout; kUsageExitCode for a usage error, on stderr, as
/// UsageError with the subcommand's name.
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv);

/// Prints "<command>: <message>" and "Run '<command> --help' for usage." to stderr; returns
/// kUsageExitCode. `command` is the program and subcommand, e.g. "kiln compile".
int UsageError(std::string_view command, std::string_view message);

}  // namespace kiln::client

#endif  // KILN_CLIENT_COMMAND_LINE_H_
