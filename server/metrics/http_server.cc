// libmicrohttpd glue for the /metrics endpoint. <microhttpd.h> stays out of the header.
#include "server/metrics/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::metrics {
namespace {

MHD_Result Reply(MHD_Connection* connection, unsigned status, const std::string& body,
                 const char* content_type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  MHD_Result result = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return result;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* /*version*/, const char* /*upload_data*/,
                         size_t* upload_data_size, void** /*req_cls*/) {
  const auto* registry = static_cast<const Registry*>(cls);
  constexpr char kText[] = "text/plain; charset=utf-8";
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    *upload_data_size = 0;  // a body, if any, is ignored
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET is served\n", kText);
  }
  if (std::strcmp(url, "/metrics") != 0) {
    return Reply(connection, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", kText);
  }
  return Reply(connection, MHD_HTTP_OK, registry->Serialize(), kExpositionContentType);
}

}  // namespace

struct MetricsServer::Daemon {
  MHD_Daemon* mhd = nullptr;
  ~Daemon() {
    if (mhd != nullptr) MHD_stop_daemon(mhd);
  }
};

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::address() const { return absl::StrCat(host_, ":", port_); }

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const Registry& registry,
                                                                  const std::string& host,
                                                                  int port) {
  std::string ip = host == "localhost" ? "127.0.0.1" : host;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: host '", host, "' is not an IPv4 address or 'localhost'"));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: port ", port, " out of range"));
  }
  addr.sin_port = htons(static_cast<uint16_t>(port));
  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  server->daemon_ = std::make_unique<MetricsServer::Daemon>();
  server->daemon_->mhd = MHD_start_daemon(
      MHD_USE_AUTO_INTERNAL_THREAD, /*port=*/0, /*apc=*/nullptr, /*apc_cls=*/nullptr,
      &HandleRequest, const_cast<Registry*>(&registry), MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (server->daemon_->mhd == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", ip, ":", port, " (in use or not permitted)"));
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_->mhd, MHD_DAEMON_INFO_BIND_PORT);
  server->host_ = ip;
  server->port_ = info != nullptr ? info->port : port;
  return server;
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const Registry& registry,
                                                                  const std::string& listen) {
  auto colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: listen address '", listen, "' is not HOST:PORT"));
  }
  return StartMetricsServer(registry, listen.substr(0, colon), port);
}

}  // namespace kiln::metrics
