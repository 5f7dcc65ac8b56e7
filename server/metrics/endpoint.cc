// prometheus-cpp's Exposer behind kiln's error model: its exceptions (a port that cannot be
// bound) become absl::Status here and never cross this file.
#include "server/metrics/endpoint.h"

#include <arpa/inet.h>

#include <exception>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace kiln::metrics {

MetricsEndpoint::~MetricsEndpoint() = default;

std::string MetricsEndpoint::address() const { return absl::StrCat(host_, ":", port_); }

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(
    std::shared_ptr<prometheus::Collectable> metrics, const std::string& listen, ScrapeAuth auth) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: listen address '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  in_addr parsed{};
  if (inet_pton(AF_INET, host.c_str(), &parsed) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: host '", listen.substr(0, colon),
                                                   "' is not an IPv4 address or 'localhost'"));
  }
  auto endpoint = std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint());
  std::string failure = "no listening port";
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", absl::StrCat(host, ":", port), "num_threads", "2",
        // A scrape that sends nothing for this long is dropped (ms).
        "request_timeout_ms", "10000"});
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::vector<int> ports;
  if (endpoint->exposer_ != nullptr) ports = endpoint->exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ", host, ":", port,
                                               " (in use or not permitted): ", failure));
  }
  if (auth) endpoint->exposer_->RegisterAuth(std::move(auth), "kiln metrics");
  endpoint->exposer_->RegisterCollectable(metrics);
  endpoint->port_ = ports.front();
  endpoint->host_ = host;
  return endpoint;
}

}  // namespace kiln::metrics
