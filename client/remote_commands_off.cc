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
int StatusCommand(const Args&) { return Unavailable(); }
int JobsCommand(const Args&) { return Unavailable(); }
int WorkersCommand(const Args&) { return Unavailable(); }
int RecordsCommand(const Args&) { return Unavailable(); }
int TuneOnServer(const Args&) { return Unavailable(); }
int CancelCommand(const Args&) { return Unavailable(); }

}  // namespace kiln::client
