// The one place where absl::Status and grpc::Status meet. Abseil's canonical codes are gRPC's
// codes (google.rpc.Code), so the conversion is exact in both directions: nothing is lost.
#ifndef KILN_SERVER_STATUS_CONVERT_H_
#define KILN_SERVER_STATUS_CONVERT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace kiln::server {

/// absl::Status → grpc::Status: same code, same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

/// grpc::Status → absl::Status: same code, same message (error_details are dropped; Kiln sends
/// none).
absl::Status ToAbslStatus(const grpc::Status& status);

/// A status from the (google.rpc.Code, message) pair the proto carries in TaskResult and JobEvent.
/// An out-of-range code becomes kUnknown with the number in the message.
absl::Status StatusFromCode(int32_t code, const std::string& message);

}  // namespace kiln::server

#endif  // KILN_SERVER_STATUS_CONVERT_H_
