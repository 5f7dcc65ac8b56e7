// Startup recovery: every job a previous kilnd left QUEUED or RUNNING is prepared again (its
// model imported, its key computed) and re-queued, finished from the cache, or failed.
#ifndef KILN_SERVER_RECOVERY_H_
#define KILN_SERVER_RECOVERY_H_

#include "absl/status/status.h"
#include "server/cache/storage.h"
#include "server/compile_prep.h"
#include "server/scheduler.h"

namespace kiln::server {

struct RecoveryCounts {
  int requeued = 0;
  int from_cache = 0;
  int failed = 0;
};

/// Recovers the live jobs in `storage`. Only a storage error fails it; a job that cannot be
/// prepared any more (its model was lost) is marked FAILED with the reason.
absl::StatusOr<RecoveryCounts> RecoverJobs(cache::Storage* storage, CompilePreparer* preparer,
                                           Scheduler* scheduler);

}  // namespace kiln::server

#endif  // KILN_SERVER_RECOVERY_H_
