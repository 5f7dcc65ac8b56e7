// Load benchmark of a running kilnd (not a test): cache-hit round trips for one model. A round
// trip is what `kiln compile --server` does on a hit: FindMissingBlobs, Compile, FetchArtifact
// (verified). Prints sequential latency p50/p99, then throughput and latency with N concurrent
// clients, each on its own connection: of round trips, then of the Compile RPC alone.
//   kiln-bench-load --server HOST:PORT --model MODEL.onnx [--requests N] [--clients C]
//                   [--duration-s S] [--target T]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "client/remote.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string server, model, target = "host";
  std::string tls_ca, token_file;  // TLS and bearer token (client/channel.h)
  int requests = 200;   // sequential round trips
  int clients = 16;     // concurrent clients in the throughput phase
  int duration_s = 10;  // length of the throughput phase
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void PrintLatency(const char* label, const std::vector<double>& ms) {
  std::printf("%-34s n=%-6zu p50 %8.2f ms   p90 %8.2f ms   p99 %8.2f ms   max %8.2f ms\n", label,
              ms.size(), Percentile(ms, 50), Percentile(ms, 90), Percentile(ms, 99),
              Percentile(ms, 100));
}

struct Phase {
  std::vector<double> ms;  // latency of each successful request
  int errors = 0;
  double seconds = 0;
};

// Runs `request` in a loop on f.clients threads, each with its own RemoteClient (a local
// subchannel pool: one connection per client), for f.duration_s.
Phase Concurrently(const Flags& f, const kiln::client::ChannelSecurity& security,
                   const std::function<absl::Status(kiln::client::RemoteClient&)>& request) {
  std::vector<std::vector<double>> per_client(static_cast<size_t>(f.clients));
  std::atomic<int> errors{0};
  auto phase_start = Clock::now();
  auto phase_end = phase_start + std::chrono::seconds(f.duration_s);
  std::vector<std::thread> threads;
  for (int c = 0; c < f.clients; ++c) {
    threads.emplace_back([&, c] {
      kiln::client::RemoteClient client(f.server, /*timeout_ms=*/60'000, security);
      // Bounded by the phase's end (and each RPC's deadline).
      while (Clock::now() < phase_end) {
        auto t = Clock::now();
        if (!request(client).ok()) {
          ++errors;
          continue;
        }
        per_client[static_cast<size_t>(c)].push_back(Ms(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  Phase phase;
  phase.seconds = Ms(phase_start) / 1000.0;
  for (const auto& v : per_client) phase.ms.insert(phase.ms.end(), v.begin(), v.end());
  phase.errors = errors.load();
  return phase;
}

int Usage(const std::string& error) {
  std::fprintf(stderr,
               "kiln-bench-load: %s\nusage: kiln-bench-load --server HOST:PORT --model MODEL.onnx "
               "[--requests N] [--clients C] [--duration-s S] [--target T] [--tls-ca FILE] "
               "[--token-file FILE]\n",
               error.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--server")
      f.server = value;
    else if (flag == "--tls-ca")
      f.tls_ca = value;
    else if (flag == "--token-file")
      f.token_file = value;
    else if (flag == "--model")
      f.model = value;
    else if (flag == "--target")
      f.target = value;
    else if (flag == "--requests")
      ok = absl::SimpleAtoi(value, &f.requests) && f.requests > 0;
    else if (flag == "--clients")
      ok = absl::SimpleAtoi(value, &f.clients) && f.clients > 0;
    else if (flag == "--duration-s")
      ok = absl::SimpleAtoi(value, &f.duration_s) && f.duration_s > 0;
    else
      return Usage("unknown flag " + flag);
    if (!ok) return Usage("bad value for " + flag);
  }
  if (argc % 2 == 0) return Usage("every flag needs a value");
  if (f.server.empty() || f.model.empty()) return Usage("--server and --model are required");

  std::ifstream in(f.model, std::ios::binary);
  if (!in) return Usage("cannot read " + f.model);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string model = buf.str();
  const kiln::v1::Digest digest = kiln::client::DigestOf(model);
  kiln::client::RemoteCompileOptions options;
  options.target = f.target;

  // Warm-up: upload and compile once (a miss on a fresh server), then one hit.
  absl::StatusOr<kiln::client::ChannelSecurity> security =
      kiln::client::LoadChannelSecurity(f.tls_ca, f.token_file);
  if (!security.ok()) return Usage(std::string(security.status().message()));
  std::printf("channel: %s, %s\n", security->tls_ca_pem.empty() ? "plaintext" : "TLS",
              security->token.empty() ? "no token" : "bearer token");
  kiln::client::RemoteClient warm(f.server, 600'000, *security);
  auto start = Clock::now();
  auto first = warm.CompileModel(model, digest, options);
  if (!first.ok()) {
    std::fprintf(stderr, "kiln-bench-load: %s\n", first.status().ToString().c_str());
    return 1;
  }
  std::printf("model %s (%zu bytes) -> artifact %s (%lld bytes)\n", f.model.c_str(), model.size(),
              first->response.artifact_digest().hash().substr(0, 16).c_str(),
              static_cast<long long>(first->response.artifact_digest().size_bytes()));
  std::printf("first request: cache %s, %.0f ms (compile %.0f ms)\n",
              first->response.cache_hit() ? "hit" : "miss", Ms(start),
              first->response.compile_ms());
  const double artifact_mb = static_cast<double>(first->artifact.size()) / (1 << 20);

  // Sequential cache hits: the round trip, and the Compile RPC alone.
  std::vector<double> round_trip, compile_only;
  kiln::v1::CompileRequest request;
  *request.mutable_model_digest() = digest;
  request.set_target(f.target);
  for (int i = 0; i < f.requests; ++i) {
    auto t = Clock::now();
    auto r = warm.CompileModel(model, digest, options);
    if (!r.ok() || !r->response.cache_hit()) {
      std::fprintf(stderr, "kiln-bench-load: request %d: %s\n", i,
                   r.ok() ? "not a cache hit" : r.status().ToString().c_str());
      return 1;
    }
    round_trip.push_back(Ms(t));
    t = Clock::now();
    if (!warm.Compile(request).ok()) return 1;
    compile_only.push_back(Ms(t));
  }
  std::printf("\nsequential, 1 client:\n");
  PrintLatency("  hit round trip (compile+fetch)", round_trip);
  PrintLatency("  Compile RPC only (hit)", compile_only);

  // C clients, each on its own channel, for duration_s: first whole round trips, then the
  // Compile RPC alone (the cache-hit answer, no artifact bytes).
  int errors = 0;
  auto round_trips = Concurrently(f, *security, [&](kiln::client::RemoteClient& client) {
    return client.CompileModel(model, digest, options).status();
  });
  std::printf("\n%d concurrent clients, %.1f s:\n", f.clients, round_trips.seconds);
  PrintLatency("  hit round trip (compile+fetch)", round_trips.ms);
  std::printf("  throughput: %.1f requests/s, %.1f MiB/s of artifacts, %d errors\n",
              static_cast<double>(round_trips.ms.size()) / round_trips.seconds,
              static_cast<double>(round_trips.ms.size()) * artifact_mb / round_trips.seconds,
              round_trips.errors);
  errors += round_trips.errors;
  auto compiles = Concurrently(f, *security, [&](kiln::client::RemoteClient& client) {
    return client.Compile(request).status();
  });
  std::printf("\n%d concurrent clients, %.1f s:\n", f.clients, compiles.seconds);
  PrintLatency("  Compile RPC only (hit)", compiles.ms);
  std::printf("  throughput: %.1f requests/s, %d errors\n",
              static_cast<double>(compiles.ms.size()) / compiles.seconds, compiles.errors);
  errors += compiles.errors;
  return errors == 0 ? 0 : 1;
}
