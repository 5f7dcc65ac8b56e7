// Tests for schema migrations: a fresh database reaches the latest version once, and a database
// from a newer kilnd is refused.
#include "server/cache/schema.h"

#include <gtest/gtest.h>

#include "server/cache/test_util.h"

namespace kiln::cache {
namespace {

using ::kiln::cache::testing::TempDir;

int64_t QueryInt(Database& db, const char* sql) {
  absl::StatusOr<Statement> stmt = Statement::Prepare(db, sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->ColumnInt64(0);
}

TEST(SchemaTest, MigratesFreshDatabaseOnce) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/k.db");
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(LatestSchemaVersion(), 5);
  absl::StatusOr<int> before = ReadSchemaVersion(*db);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, 0);

  ASSERT_TRUE(MigrateSchema(*db).ok());
  ASSERT_TRUE(MigrateSchema(*db).ok());  // idempotent
  absl::StatusOr<int> after = ReadSchemaVersion(*db);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 5);
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM schema_version"), 5);
  EXPECT_EQ(QueryInt(*db,
                     "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                     "('blobs', 'artifacts', 'jobs', 'tuning_records', 'cost_models', "
                     "'model_workloads')"),
            6);
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM pragma_table_info('tuning_records') "
                          "WHERE name = 'record'"),
            1);
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM pragma_table_info('tuning_records') "
                          "WHERE name = 'confirmed'"),
            1);
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM pragma_table_info('jobs') "
                          "WHERE name = 'model_digest'"),
            1);
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name = 'owner'"),
            1);
}

TEST(SchemaTest, RefusesNewerDatabase) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/k.db");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(MigrateSchema(*db).ok());
  ASSERT_TRUE(db->Exec("INSERT INTO schema_version (version) VALUES (7)").ok());
  EXPECT_EQ(MigrateSchema(*db),
            absl::FailedPreconditionError("database '" + dir.path() +
                                          "/k.db' has schema version 7, newer than this kilnd "
                                          "supports (5)"));
  absl::StatusOr<int> version = ReadSchemaVersion(*db);
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, 7);  // untouched
}

}  // namespace
}  // namespace kiln::cache
