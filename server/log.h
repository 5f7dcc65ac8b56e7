// Structured logs: one line per event on stderr, `ts=... level=... event=... key=value ...`.
// Values with spaces, quotes or '=' are quoted, so a line splits unambiguously.
#ifndef KILN_SERVER_LOG_H_
#define KILN_SERVER_LOG_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {

/// One key=value field of a log line. Builds from strings and numbers.
struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(v) {}
  LogField(std::string_view k, const absl::Status& s)
      : key(k), value(s.ok() ? "OK" : s.ToString()) {}
  LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  LogField(std::string_view k, T v) : key(k), value(absl::StrCat(v)) {}
  std::string key;
  std::string value;
};

enum class LogLevel { kInfo, kWarning, kError };

/// Writes one line: `ts=<RFC3339 UTC ms> level=<level> event=<event> <fields...>`. Thread-safe;
/// a line is written with one write(2), so lines from threads never interleave.
void LogEvent(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});

inline void LogInfo(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent(LogLevel::kInfo, event, fields);
}
inline void LogWarning(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent(LogLevel::kWarning, event, fields);
}
inline void LogError(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent(LogLevel::kError, event, fields);
}

/// Formats one line without writing it (for tests).
std::string FormatLogLine(LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields);

}  // namespace kiln::server

#endif  // KILN_SERVER_LOG_H_
