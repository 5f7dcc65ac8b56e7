// absl::Status ↔ grpc::Status. Both use the canonical google.rpc.Code numbering (0..16), which
// the static_asserts below pin down.
#include "wire/status.h"

#include "absl/strings/str_cat.h"

namespace kiln::wire {

static_assert(static_cast<int>(absl::StatusCode::kOk) == static_cast<int>(grpc::StatusCode::OK));
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) ==
              static_cast<int>(grpc::StatusCode::DATA_LOSS));
static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) ==
              static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) ==
              static_cast<int>(grpc::StatusCode::UNAUTHENTICATED));

namespace {

bool InRange(int64_t code) {
  return code >= 0 && code <= static_cast<int64_t>(absl::StatusCode::kUnauthenticated);
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status ToAbslStatus(const grpc::Status& status, absl::string_view rpc) {
  if (status.ok()) return absl::OkStatus();
  if (rpc.empty()) return StatusFromCode(status.error_code(), status.error_message());
  return StatusFromCode(status.error_code(), absl::StrCat(rpc, ": ", status.error_message()));
}

absl::StatusCode CodeFromInt(int64_t code) {
  return InRange(code) ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
}

absl::Status StatusFromCode(int64_t code, absl::string_view message) {
  if (code == 0) return absl::OkStatus();
  if (!InRange(code)) return absl::UnknownError(absl::StrCat("status code ", code, ": ", message));
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace kiln::wire
