// The /metrics HTTP endpoint: a libmicrohttpd daemon on its own thread that answers
// GET /metrics with a Registry's text exposition. Nothing else is served.
#ifndef KILN_SERVER_METRICS_HTTP_SERVER_H_
#define KILN_SERVER_METRICS_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/metrics/metrics.h"

namespace kiln::metrics {

/// A running endpoint; destroying it stops the daemon (in-flight requests finish first).
class MetricsServer {
 public:
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The bound port (the ephemeral one chosen when started with port 0).
  int port() const { return port_; }
  /// "HOST:PORT" as bound, e.g. "127.0.0.1:39211".
  std::string address() const;

 private:
  friend absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const Registry&,
                                                                           const std::string&, int);
  MetricsServer() = default;

  struct Daemon;
  std::unique_ptr<Daemon> daemon_;
  std::string host_;
  int port_ = 0;
};

/// Serves `registry` (which must outlive the server) at http://HOST:PORT/metrics. `host` is an
/// IPv4 literal or "localhost"; `port` 0 picks an ephemeral port. Other paths answer 404 and
/// other methods 405. Errors: kInvalidArgument for a bad host or port, kUnavailable if the port
/// cannot be bound.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const Registry& registry,
                                                                  const std::string& host,
                                                                  int port);

/// The same, from a "HOST:PORT" flag value such as kilnd's --metrics-listen.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const Registry& registry,
                                                                  const std::string& listen);

}  // namespace kiln::metrics

#endif  // KILN_SERVER_METRICS_HTTP_SERVER_H_
