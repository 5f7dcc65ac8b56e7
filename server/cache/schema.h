// The storage schema: a schema_version table and an ordered list of migrations, applied in one
// transaction when the database is opened. A database newer than this binary is refused rather
// than misread.
#ifndef KILN_SERVER_CACHE_SCHEMA_H_
#define KILN_SERVER_CACHE_SCHEMA_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/cache/sqlite_db.h"

namespace kiln::cache {

/// The schema version this binary writes (the number of migrations it knows).
int LatestSchemaVersion();

/// The version recorded in `db`; 0 for a fresh database without a schema_version table.
absl::StatusOr<int> ReadSchemaVersion(Database& db);

/// Brings `db` to LatestSchemaVersion(), applying the missing migrations in order in one
/// IMMEDIATE transaction (all or nothing). kFailedPrecondition "database 'P' has schema version
/// N, newer than this kilnd supports (M)" if the database is ahead of the binary.
absl::Status MigrateSchema(Database& db);

}  // namespace kiln::cache

#endif  // KILN_SERVER_CACHE_SCHEMA_H_
