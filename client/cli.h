// The kiln command line: its subcommands and their flags with one-line help (CLI11, in cli.cc
// alone), parsed into Args for the subcommands of kiln.cc, remote_commands.cc and
// tune_commands.cc.
#ifndef KILN_CLIENT_CLI_H_
#define KILN_CLIENT_CLI_H_

#include <optional>

#include "client/args.h"

namespace kiln::client {

/// Parses kiln's argv into `args`: the subcommand, its positional arguments and flags; then
/// the environment's defaults for flags not given (KILN_SERVER for --server unless --local,
/// KILN_TARGET for --target). Returns nullopt when `args` should run, else the exit status
/// after printing: 0 for --help and --version, 2 for a usage error (unknown command or flag, a
/// missing value or argument).
std::optional<int> ParseKilnCommandLine(int argc, char** argv, Args& args);

}  // namespace kiln::client

#endif  // KILN_CLIENT_CLI_H_
