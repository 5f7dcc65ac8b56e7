// The child side of a limited helper process (limited_process.h): one serialized request on
// stdin, one serialized result on stdout. Used by kiln-graph-hash and `kiln-worker --run-*`.
#ifndef KILN_SERVER_CHILD_MAIN_H_
#define KILN_SERVER_CHILD_MAIN_H_

#include <cstdint>
#include <iostream>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {

/// Reads one serialized `Request` from stdin and writes `run(request)` (a `Result`, which has
/// error_code and error_message fields) serialized to stdout; input that is not a `Request`
/// gets a Result with INVALID_ARGUMENT. Returns the exit status: 0, or 1 if stdout failed.
template <typename Request, typename Result, typename Run>
int ServeOneRequest(Run run) {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  Request request;
  Result result;
  if (!request.ParseFromString(input)) {
    result.set_error_code(static_cast<int32_t>(absl::StatusCode::kInvalidArgument));
    result.set_error_message(
        absl::StrCat("stdin is not a serialized ", Request::descriptor()->full_name()));
  } else {
    result = run(request);
  }
  const std::string out = result.SerializeAsString();
  std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace kiln::server

#endif  // KILN_SERVER_CHILD_MAIN_H_
