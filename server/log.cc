// Structured key=value log lines on stderr.
#include "server/log.h"

#include <unistd.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kiln::server {
namespace {

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || c == '\n' || c == '\t') return true;
  }
  return false;
}

void AppendValue(std::string& out, std::string_view v) {
  if (!NeedsQuotes(v)) {
    out.append(v);
    return;
  }
  out.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

std::string FormatLogLine(LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields) {
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", LevelName(level), " event=");
  AppendValue(line, event);
  for (const LogField& f : fields) {
    line.push_back(' ');
    line.append(f.key);
    line.push_back('=');
    AppendValue(line, f.value);
  }
  line.push_back('\n');
  return line;
}

void LogEvent(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  std::string line = FormatLogLine(level, event, fields);
  // One write(2) per line: atomic for lines up to PIPE_BUF on pipes, and never interleaved
  // mid-line with other threads' lines on regular files in practice.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace kiln::server
