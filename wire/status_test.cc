// absl::Status ↔ grpc::Status round trips keep every code and message; wire codes out of range
// become kUnknown.
#include "wire/status.h"

#include "gtest/gtest.h"

namespace kiln::wire {
namespace {

TEST(StatusTest, EveryCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status s(static_cast<absl::StatusCode>(code), code == 0 ? "" : "msg: x=1");
    grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), std::string(s.message()));
    EXPECT_EQ(ToAbslStatus(g), s);
    EXPECT_EQ(StatusFromCode(code, s.message()), s);
    EXPECT_EQ(CodeFromInt(code), s.code());
  }
}

TEST(StatusTest, RpcNamePrefixesTheMessage) {
  grpc::Status g(grpc::StatusCode::NOT_FOUND, "no blob");
  EXPECT_EQ(ToAbslStatus(g, "FetchArtifact"), absl::NotFoundError("FetchArtifact: no blob"));
  EXPECT_TRUE(ToAbslStatus(grpc::Status::OK, "FetchArtifact").ok());
}

TEST(StatusTest, FromCode) {
  EXPECT_TRUE(StatusFromCode(0, "ignored").ok());
  EXPECT_EQ(StatusFromCode(3, "bad"), absl::InvalidArgumentError("bad"));
}

TEST(StatusTest, OutOfRangeCodeIsUnknown) {
  EXPECT_EQ(StatusFromCode(99, "odd"), absl::UnknownError("status code 99: odd"));
  EXPECT_EQ(StatusFromCode(-1, "odd"), absl::UnknownError("status code -1: odd"));
  EXPECT_EQ(CodeFromInt(17), absl::StatusCode::kUnknown);
  EXPECT_EQ(CodeFromInt(-5), absl::StatusCode::kUnknown);
  // (A grpc::Status cannot hold a code past its enum: gRPC maps an unknown wire code to
  // UNKNOWN on receipt, and building one here would be undefined behaviour.)
}

}  // namespace
}  // namespace kiln::wire
