// The structured log line: values that need it are quoted.
#include "server/log.h"

#include "gtest/gtest.h"

namespace kiln::server {
namespace {

TEST(LogTest, QuotesValuesThatNeedIt) {
  std::string line = FormatLogLine(LogLevel::kInfo, "job.failed",
                                   {{"job", "j1"}, {"error", "bad model: x=\"y\""}, {"n", 3}});
  EXPECT_NE(line.find(" level=info event=job.failed job=j1 error=\"bad model: x=\\\"y\\\"\" n=3\n"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace kiln::server
