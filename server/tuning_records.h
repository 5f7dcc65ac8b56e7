// Which tuning records a compile applies: kilnd fills CompileOptions.records from its store
// before it computes the artifact key, so the key covers them.
#ifndef KILN_SERVER_TUNING_RECORDS_H_
#define KILN_SERVER_TUNING_RECORDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler_core/support/target.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

/// SHA-256 hex of `options` without what record selection fills in (records, hardware key,
/// untuned): the options that shape a model's kernels, under which Storage keeps the model's
/// workload keys (PutModelWorkloads).
std::string WorkloadOptionsHash(const v1::CompileOptions& options);

/// `options` with only the records of `workload_keys` (a model's workloads); the hardware key
/// is cleared when none is left, so a model no record applies to compiles with the options
/// (and under the key) of an untuned compile.
v1::CompileOptions OnlyRecordsOf(const v1::CompileOptions& options,
                                 const std::vector<std::string>& workload_keys);

/// Replaces `options.records` with the best stored record of every workload on one hardware
/// key of `target`: `options.hardware_key` when the client named it, else the key of the
/// target with the most records (ties: the smaller key), which is then written into
/// `options.hardware_key`. With `workload_keys` (the model's workloads, when kilnd knows them)
/// only their records are kept (OnlyRecordsOf), so the artifact key covers exactly the records
/// the compile applies and tuning another model does not change it. Leaves both empty when the
/// target has no records or `options.untuned` is set. Errors: kNotFound when the client named a
/// hardware key with no record for the target; those of the storage.
absl::Status FillTuningRecords(cache::Storage& storage, const Target& target,
                               v1::CompileOptions& options,
                               const std::vector<std::string>* workload_keys = nullptr);

}  // namespace kiln::server

#endif  // KILN_SERVER_TUNING_RECORDS_H_
