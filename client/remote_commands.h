// The CLI subcommands that talk to kilnd: compile/check with --server, status, jobs, workers.
// Built from remote_commands.cc, or from remote_commands_off.cc (each fails with a clear
// message) when the service is not built (KILN_BUILD_SERVER=OFF).
#ifndef KILN_CLIENT_REMOTE_COMMANDS_H_
#define KILN_CLIENT_REMOTE_COMMANDS_H_

#include <string>

#include "client/args.h"

namespace kiln::client {

/// `kiln compile MODEL --server HOST:PORT -o OUT [--json]`: writes the artifact atomically.
int CompileOnServer(const Args& args, const std::string& out);
/// `kiln check DIR --server HOST:PORT`: compiles remotely, runs locally, prints hit or miss.
int CheckOnServer(const Args& args);
/// `kiln status|jobs|workers --server HOST:PORT`.
int StatusCommand(const Args& args);
int JobsCommand(const Args& args);
int WorkersCommand(const Args& args);
/// kiln records list|export|import [FILE] --server HOST:PORT [--hardware-key K].
int RecordsCommand(const Args& args);
/// `kiln tune MODEL --server HOST:PORT [--target T] [--trials N] [--time-budget-s S]
/// [--seed S] [--hardware-key K] [--random] [--json]`: submits a tune job, follows it (a live
/// line on a terminal), prints the per-workload summary; exit 0 when it succeeded.
int TuneOnServer(const Args& args);
/// `kiln cancel JOB_ID --server HOST:PORT`.
int CancelCommand(const Args& args);

}  // namespace kiln::client

#endif  // KILN_CLIENT_REMOTE_COMMANDS_H_
