// RPC accounting: one structured log line and one metrics report per finished RPC.
#include "server/rpc_call.h"

#include "server/log.h"

namespace kiln::server {

void RecordRpc(MetricsHooks* metrics, const std::string& method, const absl::Status& status,
               absl::Time start, const std::string& peer) {
  absl::Duration elapsed = absl::Now() - start;
  if (metrics) metrics->RpcFinished(method, status.code(), absl::ToDoubleSeconds(elapsed));
  std::string code = absl::StatusCodeToString(status.code());
  double ms = absl::ToDoubleMilliseconds(elapsed);
  if (status.ok()) {
    LogInfo("rpc", {{"method", method}, {"code", code}, {"ms", ms}, {"peer", peer}});
  } else {
    LogInfo("rpc", {{"method", method},
                    {"code", code},
                    {"ms", ms},
                    {"peer", peer},
                    {"error", std::string(status.message())}});
  }
}

}  // namespace kiln::server
