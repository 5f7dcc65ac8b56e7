// The /metrics HTTP endpoint: prometheus-cpp's pull exposer (civetweb) serving a collectable,
// optionally behind HTTP Basic authentication.
#ifndef KILN_SERVER_METRICS_ENDPOINT_H_
#define KILN_SERVER_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"

namespace prometheus {
class Exposer;
}

namespace kiln::metrics {

/// Checks the credentials of a scrape (HTTP Basic: user name, password); true admits it.
using ScrapeAuth = std::function<bool(const std::string& user, const std::string& password)>;

/// A running endpoint; destroying it stops the HTTP server (in-flight scrapes finish first).
class MetricsEndpoint {
 public:
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  /// The bound port (the ephemeral one chosen when started with port 0).
  int port() const { return port_; }
  /// "HOST:PORT" as bound, e.g. "127.0.0.1:39211".
  std::string address() const;

 private:
  friend absl::StatusOr<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(
      std::shared_ptr<prometheus::Collectable>, const std::string&, ScrapeAuth);
  MetricsEndpoint() = default;

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;
  int port_ = 0;
};

/// Serves `metrics` in the text exposition format at http://LISTEN/metrics, where `listen` is
/// "HOST:PORT" with an IPv4 host ("localhost" means 127.0.0.1) and port 0 picking an ephemeral
/// one. With `auth`, a scrape needs HTTP Basic credentials that `auth` admits (else 401). Other
/// paths answer 404. Errors: kInvalidArgument for a malformed address, kUnavailable if the port
/// cannot be bound.
absl::StatusOr<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(
    std::shared_ptr<prometheus::Collectable> metrics, const std::string& listen,
    ScrapeAuth auth = nullptr);

}  // namespace kiln::metrics

#endif  // KILN_SERVER_METRICS_ENDPOINT_H_
