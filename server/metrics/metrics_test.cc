// The exposition text of each metric kind, exactly; promtool's verdict on it; the /metrics
// endpoint over loopback HTTP.
#include "server/metrics/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/http_server.h"
#include "server/metrics/service_metrics.h"

namespace kiln::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

void FillExample(Registry& registry) {
  auto& requests = registry.AddCounter("kiln_requests_total", "Finished RPCs.");
  requests.Add({{"method", "Compile"}, {"code", "OK"}}).Increment(3);
  requests.Add({{"method", "Compile"}, {"code", "INVALID_ARGUMENT"}}).Increment();
  auto& depth = registry.AddGauge("kiln_jobs_queued", "Jobs waiting.\nSecond \\ line.");
  depth.Add().Set(2.5);
  auto& latency =
      registry.AddHistogram("kiln_compile_duration_seconds", "Compile time.", {0.1, 1, 10});
  Histogram& h = latency.Add({{"target", "cpu \"host\""}});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(20);
  registry.AddCounter("kiln_unused_total", "No series yet.");
}

TEST(MetricsTest, ExpositionTextOfEachKind) {
  Registry registry;
  FillExample(registry);
  EXPECT_EQ(registry.Serialize(),
            "# HELP kiln_requests_total Finished RPCs.\n"
            "# TYPE kiln_requests_total counter\n"
            "kiln_requests_total{code=\"INVALID_ARGUMENT\",method=\"Compile\"} 1\n"
            "kiln_requests_total{code=\"OK\",method=\"Compile\"} 3\n"
            "# HELP kiln_jobs_queued Jobs waiting.\\nSecond \\\\ line.\n"
            "# TYPE kiln_jobs_queued gauge\n"
            "kiln_jobs_queued 2.5\n"
            "# HELP kiln_compile_duration_seconds Compile time.\n"
            "# TYPE kiln_compile_duration_seconds histogram\n"
            "kiln_compile_duration_seconds_bucket{target=\"cpu \\\"host\\\"\",le=\"0.1\"} 1\n"
            "kiln_compile_duration_seconds_bucket{target=\"cpu \\\"host\\\"\",le=\"1\"} 3\n"
            "kiln_compile_duration_seconds_bucket{target=\"cpu \\\"host\\\"\",le=\"10\"} 3\n"
            "kiln_compile_duration_seconds_bucket{target=\"cpu \\\"host\\\"\",le=\"+Inf\"} 4\n"
            "kiln_compile_duration_seconds_sum{target=\"cpu \\\"host\\\"\"} 21.05\n"
            "kiln_compile_duration_seconds_count{target=\"cpu \\\"host\\\"\"} 4\n"
            "# HELP kiln_unused_total No series yet.\n"
            "# TYPE kiln_unused_total counter\n");
}

TEST(MetricsTest, FormatValue) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1e-9), "1e-09");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(MetricsTest, CounterNeverDecreasesGaugeDoes) {
  Registry registry;
  Counter& c = registry.AddCounter("c_total", "c").Add();
  c.Increment(2);
  c.Increment(-5);
  EXPECT_EQ(c.Value(), 2);
  Gauge& g = registry.AddGauge("g", "g").Add();
  g.Increment(3);
  g.Decrement(5);
  EXPECT_EQ(g.Value(), -2);
}

TEST(MetricsTest, SameLabelsSameSeries) {
  Registry registry;
  auto& family = registry.AddCounter("x_total", "x");
  EXPECT_EQ(&family.Add({{"a", "1"}}), &family.Add({{"a", "1"}}));
  EXPECT_NE(&family.Add({{"a", "1"}}), &family.Add({{"a", "2"}}));
}

TEST(MetricsTest, CollectHookRunsBeforeSerialize) {
  Registry registry;
  Gauge& g = registry.AddGauge("kiln_workers", "Workers.").Add();
  int calls = 0;
  registry.AddCollectHook([&] { g.Set(++calls); });
  EXPECT_THAT(registry.Serialize(), HasSubstr("kiln_workers 1\n"));
  EXPECT_THAT(registry.Serialize(), HasSubstr("kiln_workers 2\n"));
}

TEST(MetricsTest, ConcurrentIncrementsAreNotLost) {
  Registry registry;
  auto& family = registry.AddCounter("n_total", "n");
  Histogram& h = registry.AddHistogram("h_seconds", "h", {1}).Add();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        family.Add({{"shard", std::to_string(t % 2)}}).Increment();
        h.Observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(family.Add({{"shard", "0"}}).Value() + family.Add({{"shard", "1"}}).Value(), 8000);
  EXPECT_EQ(h.Collect().count, 8000u);
}

TEST(MetricsDeathTest, BadNamesAbort) {
  Registry registry;
  EXPECT_DEATH(registry.AddCounter("bad-name", "x"), "invalid metric name");
  registry.AddGauge("dup", "x");
  EXPECT_DEATH(registry.AddGauge("dup", "x"), "registered twice");
  auto& h = registry.AddHistogram("h", "x", {1});
  EXPECT_DEATH(h.Add({{"le", "1"}}), "reserved");
  EXPECT_DEATH(registry.AddHistogram("h2", "x", {2, 1}), "strictly increasing");
}

// Runs `promtool check metrics` on `text`; returns its exit status and output, or skips.
std::pair<int, std::string> Promtool(const std::string& text) {
  // ctest runs the tests of this binary as parallel processes: names unique per process and call.
  static int calls = 0;
  std::string stem = ::testing::TempDir() + "/kiln_metrics_" + std::to_string(getpid()) + "_" +
                     std::to_string(calls++);
  std::string in = stem + ".txt", out = stem + ".out";
  std::ofstream(in) << text;
  std::string cmd = "promtool check metrics < " + in + " > " + out + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream f(out);
  std::string output((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(in.c_str());
  std::remove(out.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, output};
}

bool HavePromtool() { return std::system("command -v promtool > /dev/null 2>&1") == 0; }

TEST(MetricsTest, PromtoolAcceptsExampleAndServiceMetrics) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed (scripts/setup installs prometheus)";
  Registry registry;
  FillExample(registry);
  auto [rc, output] = Promtool(registry.Serialize());
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "");

  Registry service;
  ServiceMetrics m(service);
  m.requests.Add({{"method", "Compile"}, {"code", "OK"}}).Increment();
  m.cache_hits.Increment();
  m.compile_seconds.Observe(1.5);
  m.request_seconds.Add({{"method", "Compile"}}).Observe(0.01);
  m.jobs_finished.Add({{"state", "succeeded"}}).Increment();
  m.blob_bytes_received.Add({{"kind", "model"}}).Increment(1000);
  std::tie(rc, output) = Promtool(service.Serialize());
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "") << service.Serialize();
}

TEST(MetricsTest, PromtoolRejectsBrokenText) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed (scripts/setup installs prometheus)";
  EXPECT_NE(Promtool("# TYPE x counter\nx{a=\"1\" 1\n").first, 0);
}

// A bare HTTP/1.0 GET over loopback: returns the whole response (status line, headers, body).
std::string HttpGet(int port, const std::string& method, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  timeval tv{/*tv_sec=*/5, /*tv_usec=*/0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string request = method + " " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  for (int i = 0; i < 1000; ++i) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

TEST(MetricsServerTest, ServesMetricsOnEphemeralLoopbackPort) {
  Registry registry;
  FillExample(registry);
  auto server = StartMetricsServer(registry, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->address(), "127.0.0.1:" + std::to_string((*server)->port()));

  std::string ok = HttpGet((*server)->port(), "GET", "/metrics");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n")) << ok;
  EXPECT_THAT(ok, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(ok, HasSubstr("\r\n\r\n" + registry.Serialize()));
  EXPECT_THAT(HttpGet((*server)->port(), "GET", "/other"), HasSubstr(" 404 "));
  EXPECT_THAT(HttpGet((*server)->port(), "POST", "/metrics"), HasSubstr(" 405 "));
}

TEST(MetricsServerTest, BadAddressesAreErrors) {
  Registry registry;
  EXPECT_EQ(StartMetricsServer(registry, "no-port").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StartMetricsServer(registry, "example.com", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StartMetricsServer(registry, "127.0.0.1", 70000).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto first = StartMetricsServer(registry, "127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(StartMetricsServer(registry, "127.0.0.1", (*first)->port()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kiln::metrics
