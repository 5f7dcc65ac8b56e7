// A small Prometheus client with the shape of prometheus-cpp: a Registry owns metric Families;
// a Family holds one Counter, Gauge or Histogram per label set. Everything is thread-safe, and
// Registry::Serialize writes the text exposition format 0.0.4 (checked by `promtool check
// metrics` in the tests).
#ifndef KILN_SERVER_METRICS_METRICS_H_
#define KILN_SERVER_METRICS_METRICS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::metrics {

/// Label name → value. Ordered, so that the exposition is deterministic.
using Labels = std::map<std::string, std::string>;

/// A monotonically increasing value, e.g. requests served.
class Counter {
 public:
  /// Adds `v`; a negative `v` is ignored (counters never go down).
  void Increment(double v = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down, e.g. queue depth.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Increment(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Decrement(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// Counts observations into cumulative buckets by upper bound, plus their sum and count.
class Histogram {
 public:
  /// `bounds`: strictly increasing finite upper bounds; the +Inf bucket is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then one for +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Collect() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
};

/// Bucket bounds `start`, `start*factor`, ... (`count` of them).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

/// One metric name with its help text and one metric per label set.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<double> bounds = {})
      : name_(std::move(name)), help_(std::move(help)), bounds_(std::move(bounds)) {}

  /// The metric for `labels`, created at zero on first use. The reference stays valid for the
  /// registry's lifetime. Label names must match [a-zA-Z_][a-zA-Z0-9_]* (aborts otherwise: a
  /// programming error); a histogram may not use the label "le".
  T& Add(const Labels& labels = {});

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }

  /// Calls `fn(labels, metric)` for every series, in label order, under the family's lock.
  void ForEach(const std::function<void(const Labels&, const T&)>& fn) const;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<T>> metrics_;
};

/// Owns families and writes them all in registration order.
class Registry {
 public:
  /// Registers a family. Names must match [a-zA-Z_:][a-zA-Z0-9_:]* and be unique; counter names
  /// should end in "_total" (promtool's convention). A bad or duplicate name aborts: these are
  /// fixed at compile time, so that is a programming error.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help);
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help);
  /// `bounds`: strictly increasing finite bucket upper bounds.
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> bounds);

  /// Runs before every Serialize, e.g. to set gauges from state owned elsewhere (queue depth).
  void AddCollectHook(std::function<void()> hook);

  /// The text exposition format 0.0.4 of every family: # HELP, # TYPE, then one line per sample.
  /// A family with no series yet still gets its HELP and TYPE lines.
  std::string Serialize() const;

 private:
  struct Entry {
    MetricType type;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
  };
  void CheckNewName(const std::string& name);

  mutable std::mutex mu_;
  std::vector<Entry> families_;
  std::vector<std::function<void()>> hooks_;
};

/// The exposition format's number syntax: integers without a fraction ("3"), others with the
/// shortest round-trip digits ("0.25"), "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);

/// The content type of Serialize's output.
inline constexpr char kExpositionContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace kiln::metrics

#endif  // KILN_SERVER_METRICS_METRICS_H_
