// kilnd's metric set in prometheus-cpp's text exposition, exactly where it is ours (names, help,
// labels, buckets); promtool's verdict on it; the collect hook; the /metrics endpoint over
// loopback HTTP, with and without HTTP Basic authentication.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/endpoint.h"
#include "server/metrics/service_metrics.h"
#include "tests/service/process.h"

namespace kiln::metrics {
namespace {

using ::kiln::testing::HttpGet;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::shared_ptr<ServiceMetrics> Example() {
  auto m = std::make_shared<ServiceMetrics>(BuildInfo{"1.2.3", "kiln-1.2.3+src.ab.llvm19"});
  m->requests.Add({{"method", "Compile"}, {"code", "OK"}}).Increment(3);
  m->requests.Add({{"method", "Compile"}, {"code", "INVALID_ARGUMENT"}}).Increment();
  m->cache_hits.Increment();
  m->compile_seconds.Observe(0.07);
  m->compile_seconds.Observe(300);
  m->request_seconds.Add({{"method", "Compile"}}, m->request_buckets).Observe(0.01);
  m->queue_wait_seconds.Add({{"kind", "compile"}}, m->queue_wait_buckets).Observe(0.002);
  m->jobs_finished.Add({{"kind", "compile"}, {"state", "succeeded"}}).Increment();
  m->blob_bytes_received.Add({{"kind", "model"}}).Increment(1000);
  m->SetWorkerCounts({{{{"kind", "compile"}, {"device", "cpu"}}, 2}});
  return m;
}

TEST(MetricsTest, ExpositionOfOurFamilies) {
  std::string text = Example()->Serialize();
  EXPECT_THAT(text, HasSubstr("# HELP kiln_build_info kilnd's release and compiler version (the "
                              "value is 1).\n# TYPE kiln_build_info gauge\n"
                              "kiln_build_info{compiler_version=\"kiln-1.2.3+src.ab.llvm19\","
                              "version=\"1.2.3\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("kiln_requests_total{code=\"OK\",method=\"Compile\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_requests_total{code=\"INVALID_ARGUMENT\",method=\"Compile\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_cache_hits_total 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_cache_misses_total 0\n"));
  // 12 buckets from 50 ms doubling: 0.07 s lands in le=0.1, 300 s only in +Inf.
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_count 2\n"
                              "kiln_compile_duration_seconds_sum 300.07\n"
                              "kiln_compile_duration_seconds_bucket{le=\"0.05\"} 0\n"
                              "kiln_compile_duration_seconds_bucket{le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_bucket{le=\"102.4\"} 1\n"
                              "kiln_compile_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kiln_job_queue_wait_seconds_bucket{kind=\"compile\",le=\"0.004\"} "
                              "1\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_jobs_finished_total{kind=\"compile\",state=\"succeeded\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_workers{device=\"cpu\",kind=\"compile\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kiln_blob_bytes_received_total{kind=\"model\"} 1000\n"));
}

TEST(MetricsTest, WorkerSeriesFollowTheLastCounts) {
  auto m = Example();
  m->SetWorkerCounts({{{{"kind", "measure"}, {"device", "cuda:0"}}, 1}});
  std::string text = m->Serialize();
  EXPECT_THAT(text, HasSubstr("kiln_workers{device=\"cuda:0\",kind=\"measure\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("kiln_workers{device=\"cpu\"")));
}

TEST(MetricsTest, CollectHookRunsBeforeEachScrape) {
  auto m = Example();
  int scrapes = 0;
  m->SetCollectHook([&scrapes](ServiceMetrics& self) { self.cache_bytes.Set(++scrapes * 10); });
  EXPECT_THAT(m->Serialize(), HasSubstr("kiln_cache_size_bytes 10\n"));
  EXPECT_THAT(m->Serialize(), HasSubstr("kiln_cache_size_bytes 20\n"));
  m->SetCollectHook(nullptr);
  EXPECT_THAT(m->Serialize(), HasSubstr("kiln_cache_size_bytes 20\n"));
}

TEST(MetricsTest, ExponentialBuckets) {
  EXPECT_THAT(ExponentialBuckets(0.5, 4, 3), ::testing::ElementsAre(0.5, 2, 8));
}

// Runs `promtool check metrics` on `text`; returns its exit status and output.
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

TEST(MetricsTest, PromtoolAcceptsServiceMetrics) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed (scripts/setup installs prometheus)";
  std::string text = Example()->Serialize();
  auto [rc, output] = Promtool(text);
  EXPECT_EQ(rc, 0) << output << text;
  EXPECT_EQ(output, "") << text;
  EXPECT_NE(Promtool("# TYPE x counter\nx{a=\"1\" 1\n").first, 0);
}

TEST(MetricsEndpointTest, ServesMetricsOnEphemeralLoopbackPort) {
  auto m = Example();
  auto endpoint = StartMetricsEndpoint(m, "127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  ASSERT_GT((*endpoint)->port(), 0);
  EXPECT_EQ((*endpoint)->address(), "127.0.0.1:" + std::to_string((*endpoint)->port()));

  std::string ok = HttpGet((*endpoint)->port(), "/metrics");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n")) << ok;
  EXPECT_THAT(ok, HasSubstr("Content-Type: text/plain"));
  EXPECT_THAT(ok, HasSubstr("kiln_requests_total{code=\"OK\",method=\"Compile\"} 3\n"));
  EXPECT_THAT(HttpGet((*endpoint)->port(), "/other"), HasSubstr(" 404 "));
}

TEST(MetricsEndpointTest, BasicAuthAdmitsOnlyWhatTheCheckAdmits) {
  auto m = Example();
  auto endpoint =
      StartMetricsEndpoint(m, "localhost:0", [](const std::string&, const std::string& password) {
        return password == "s3cret-token-0123";
      });
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  std::string none = HttpGet(port, "/metrics");
  EXPECT_THAT(none, StartsWith("HTTP/1.1 401 ")) << none;
  EXPECT_THAT(none, Not(HasSubstr("kiln_requests_total")));
  std::string wrong =
      HttpGet(port, "/metrics", "Authorization: Basic " + absl::Base64Escape("kiln:nope") + "\r\n");
  EXPECT_THAT(wrong, StartsWith("HTTP/1.1 401 ")) << wrong;
  std::string right =
      HttpGet(port, "/metrics",
              "Authorization: Basic " + absl::Base64Escape("kiln:s3cret-token-0123") + "\r\n");
  EXPECT_THAT(right, StartsWith("HTTP/1.1 200 OK\r\n")) << right;
  EXPECT_THAT(right, HasSubstr("kiln_requests_total{code=\"OK\",method=\"Compile\"} 3\n"));
}

TEST(MetricsEndpointTest, BadAddressesAreErrors) {
  auto m = Example();
  EXPECT_EQ(StartMetricsEndpoint(m, "no-port").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StartMetricsEndpoint(m, "example.com:0").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StartMetricsEndpoint(m, "127.0.0.1:70000").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto first = StartMetricsEndpoint(m, "127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> taken =
      StartMetricsEndpoint(m, "127.0.0.1:" + std::to_string((*first)->port()));
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable) << taken.status();
}

}  // namespace
}  // namespace kiln::metrics
