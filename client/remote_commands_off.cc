// Remote subcommands when the service is not built (KILN_BUILD_SERVER=OFF): each says so.
#include "client/remote_commands.h"

namespace kiln::client {
namespace {

int Unavailable() {
  return Fail("this kiln was built without the service (KILN_BUILD_SERVER=OFF): no --server");
}

}  // namespace

int CompileOnServer(const Args&, const std::string&) { return Unavailable(); }
int CheckOnServer(const Args&) { return Unavailable(); }
int StatusCommand(int, char**) { return Unavailable(); }
int JobsCommand(int, char**) { return Unavailable(); }
int WorkersCommand(int, char**) { return Unavailable(); }
int RecordsCommand(int, char**) { return Unavailable(); }
int TuneOnServer(const Args&) { return Unavailable(); }
int CancelCommand(int, char**) { return Unavailable(); }

}  // namespace kiln::client
