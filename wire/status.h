// The one place where absl::Status, grpc::Status and the (code, message) pair of the proto meet.
// Abseil's canonical codes are gRPC's codes (google.rpc.Code, 0..16), so the conversions are exact
// in both directions: nothing is lost.
#ifndef KILN_WIRE_STATUS_H_
#define KILN_WIRE_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace kiln::wire {

/// absl::Status → grpc::Status: same code, same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

/// grpc::Status → absl::Status: same code, same message (error_details are dropped; Kiln sends
/// none). With a non-empty `rpc` the message reads `<rpc>: <message>`. A code outside 0..16
/// becomes kUnknown as in StatusFromCode.
absl::Status ToAbslStatus(const grpc::Status& status, absl::string_view rpc = "");

/// The absl::StatusCode of a google.rpc.Code number (what the proto carries, what SQLite
/// stores); kUnknown for a number outside 0..16.
absl::StatusCode CodeFromInt(int64_t code);

/// A status from the (google.rpc.Code, message) pair the proto carries in TaskResult, JobEvent
/// and Job: OK for code 0 (the message is dropped). An out-of-range code becomes kUnknown with
/// the number in the message (`status code 99: <message>`).
absl::Status StatusFromCode(int64_t code, absl::string_view message);

}  // namespace kiln::wire

#endif  // KILN_WIRE_STATUS_H_
