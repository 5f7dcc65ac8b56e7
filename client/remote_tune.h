// Tune jobs from the CLI: the TuneRequest of the tune flags, and submitting it.
#ifndef KILN_CLIENT_REMOTE_TUNE_H_
#define KILN_CLIENT_REMOTE_TUNE_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/args.h"
#include "client/remote.h"
#include "kiln/v1/service.pb.h"

namespace kiln::client {

/// The usage error of --trials, --time-budget-s or --seed (a message naming the flag), or "".
std::string TuneFlagError(const Args& args);

/// The tune request of --target, --disable-pass, --trials (default 64), --time-budget-s,
/// --seed, --hardware-key and --random (no model yet). Errors: kInvalidArgument naming the flag.
absl::StatusOr<kiln::v1::TuneRequest> TuneRequestFrom(const Args& args);

/// Uploads the model if the server lacks it and submits `request` for it as a tune job;
/// returns the job id. Errors: the server's.
absl::StatusOr<std::string> SubmitTune(RemoteClient& client, const std::string& model_bytes,
                                       kiln::v1::TuneRequest request);

}  // namespace kiln::client

#endif  // KILN_CLIENT_REMOTE_TUNE_H_
