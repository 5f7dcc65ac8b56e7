// absl::Status ↔ grpc::Status round trips keep every code and message.
#include "server/status_convert.h"

#include "gtest/gtest.h"
#include "server/log.h"

namespace kiln::server {
namespace {

TEST(StatusConvertTest, EveryCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status s(static_cast<absl::StatusCode>(code), code == 0 ? "" : "msg: x=1");
    grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), std::string(s.message()));
    EXPECT_EQ(ToAbslStatus(g), s);
  }
}

TEST(StatusConvertTest, FromCode) {
  EXPECT_TRUE(StatusFromCode(0, "ignored").ok());
  EXPECT_EQ(StatusFromCode(3, "bad"), absl::InvalidArgumentError("bad"));
  EXPECT_EQ(StatusFromCode(99, "odd").code(), absl::StatusCode::kUnknown);
}

TEST(LogTest, QuotesValuesThatNeedIt) {
  std::string line = FormatLogLine(LogLevel::kInfo, "job.failed",
                                   {{"job", "j1"}, {"error", "bad model: x=\"y\""}, {"n", 3}});
  EXPECT_NE(line.find(" level=info event=job.failed job=j1 error=\"bad model: x=\\\"y\\\"\" n=3\n"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace kiln::server
