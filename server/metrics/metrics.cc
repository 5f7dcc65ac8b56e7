// Metric types, the registry, and the text exposition format 0.0.4.
#include "server/metrics/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace kiln::metrics {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "kiln metrics: %s\n", message.c_str());
  std::abort();
}

bool IsValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes backslash and newline; label values also escape the double quote.
std::string Escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"} with `extra` (histogram "le") last; empty when there are no labels.
std::string LabelText(const Labels& labels, const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  std::string out;
  auto add = [&](const std::string& name, const std::string& value) {
    absl::StrAppend(&out, out.empty() ? "{" : ",", name, "=\"", Escape(value, true), "\"");
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (!extra_name.empty()) add(extra_name, extra_value);
  if (!out.empty()) out += "}";
  return out;
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void CheckBounds(const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      Die("histogram bounds must be finite and strictly increasing");
    }
  }
}

template <typename T>
void WriteFamily(const Family<T>& family, MetricType type, std::string& out) {
  const std::string& name = family.name();
  absl::StrAppend(&out, "# HELP ", name, " ", Escape(family.help(), false), "\n");
  absl::StrAppend(&out, "# TYPE ", name, " ", TypeName(type), "\n");
  family.ForEach([&](const Labels& labels, const T& metric) {
    if constexpr (std::is_same_v<T, Histogram>) {
      Histogram::Snapshot s = metric.Collect();
      for (size_t i = 0; i < s.bounds.size(); ++i) {
        absl::StrAppend(&out, name, "_bucket", LabelText(labels, "le", FormatValue(s.bounds[i])),
                        " ", s.cumulative[i], "\n");
      }
      absl::StrAppend(&out, name, "_bucket", LabelText(labels, "le", "+Inf"), " ", s.count, "\n");
      absl::StrAppend(&out, name, "_sum", LabelText(labels), " ", FormatValue(s.sum), "\n");
      absl::StrAppend(&out, name, "_count", LabelText(labels), " ", s.count, "\n");
    } else {
      absl::StrAppend(&out, name, LabelText(labels), " ", FormatValue(metric.Value()), "\n");
    }
  });
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  // The shortest %g precision that reads back to the same double.
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void Counter::Increment(double v) {
  if (v > 0) value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  CheckBounds(bounds_);
}

void Histogram::Observe(double v) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && v > bounds_[bucket]) ++bucket;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[bucket];
  sum_ += v;
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) bounds.push_back(b);
  return bounds;
}

template <typename T>
T& Family<T>::Add(const Labels& labels) {
  for (const auto& [label, value] : labels) {
    if (!IsValidName(label, /*allow_colon=*/false) || label.rfind("__", 0) == 0) {
      Die(absl::StrCat("metric ", name_, ": invalid label name '", label, "'"));
    }
    if (std::is_same_v<T, Histogram> && label == "le") {
      Die(absl::StrCat("histogram ", name_, ": the label 'le' is reserved"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<T>& slot = metrics_[labels];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<T>(bounds_);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template <typename T>
void Family<T>::ForEach(const std::function<void(const Labels&, const T&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [labels, metric] : metrics_) fn(labels, *metric);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::CheckNewName(const std::string& name) {
  if (!IsValidName(name, /*allow_colon=*/true))
    Die(absl::StrCat("invalid metric name '", name, "'"));
  for (const Entry& e : families_) {
    const std::string& existing = e.counter ? e.counter->name()
                                  : e.gauge ? e.gauge->name()
                                            : e.histogram->name();
    if (existing == name) Die(absl::StrCat("metric '", name, "' registered twice"));
  }
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckNewName(name);
  Entry e{MetricType::kCounter, std::make_unique<Family<Counter>>(name, help), nullptr, nullptr};
  families_.push_back(std::move(e));
  return *families_.back().counter;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckNewName(name);
  Entry e{MetricType::kGauge, nullptr, std::make_unique<Family<Gauge>>(name, help), nullptr};
  families_.push_back(std::move(e));
  return *families_.back().gauge;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> bounds) {
  CheckBounds(bounds);
  std::lock_guard<std::mutex> lock(mu_);
  CheckNewName(name);
  Entry e{MetricType::kHistogram, nullptr, nullptr,
          std::make_unique<Family<Histogram>>(name, help, std::move(bounds))};
  families_.push_back(std::move(e));
  return *families_.back().histogram;
}

void Registry::AddCollectHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::Serialize() const {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hooks = hooks_;
  }
  // Hooks run unlocked: they set gauges, which may be in this registry.
  for (const auto& hook : hooks) hook();
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : families_) {
    if (e.counter) WriteFamily(*e.counter, e.type, out);
    if (e.gauge) WriteFamily(*e.gauge, e.type, out);
    if (e.histogram) WriteFamily(*e.histogram, e.type, out);
  }
  return out;
}

}  // namespace kiln::metrics
