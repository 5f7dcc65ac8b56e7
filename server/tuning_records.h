// Which tuning records a compile applies: kilnd fills CompileOptions.records from its store
// before it computes the artifact key, so the key covers them.
#ifndef KILN_SERVER_TUNING_RECORDS_H_
#define KILN_SERVER_TUNING_RECORDS_H_

#include "absl/status/status.h"
#include "compiler_core/support/target.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

/// Replaces `options.records` with the best stored record of every workload on one hardware
/// key of `target`: `options.hardware_key` when the client named it, else the key of the
/// target with the most records (ties: the smaller key), which is then written into
/// `options.hardware_key`. Leaves both empty when the target has no records or
/// `options.untuned` is set. Errors: kNotFound when the client named a hardware key with no
/// record for the target; those of the storage.
absl::Status FillTuningRecords(cache::Storage& storage, const Target& target,
                               v1::CompileOptions& options);

}  // namespace kiln::server

#endif  // KILN_SERVER_TUNING_RECORDS_H_
