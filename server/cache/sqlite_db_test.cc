// Tests for the RAII SQLite wrappers: connection pragmas, binds and getters, error codes and
// transaction rollback.
#include "server/cache/sqlite_db.h"

#include <gtest/gtest.h>

#include "server/cache/test_util.h"

namespace kiln::cache {
namespace {

using ::kiln::cache::testing::TempDir;

std::string QueryText(Database& db, const char* sql) {
  absl::StatusOr<Statement> stmt = Statement::Prepare(db, sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->ColumnText(0);
}

int64_t QueryInt(Database& db, const char* sql) {
  absl::StatusOr<Statement> stmt = Statement::Prepare(db, sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->ColumnInt64(0);
}

TEST(SqliteDbTest, OpenSetsWalForeignKeysAndBusyTimeout) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/t.db", /*busy_timeout_ms=*/1234);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(QueryText(*db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryInt(*db, "PRAGMA foreign_keys"), 1);
  EXPECT_EQ(QueryInt(*db, "PRAGMA busy_timeout"), 1234);
  EXPECT_EQ(db->path(), dir.path() + "/t.db");
}

TEST(SqliteDbTest, OpenFailsInMissingDirectory) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/no/such/dir/t.db");
  EXPECT_EQ(db.status().code(), absl::StatusCode::kUnavailable);
}

TEST(SqliteDbTest, BindsAndReadsEveryTypeByIndexAndName) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB, n TEXT)").ok());
  {
    absl::StatusOr<Statement> insert =
        Statement::Prepare(*db, "INSERT INTO t VALUES (?, ?, :s, :b, :n)");
    ASSERT_TRUE(insert.ok()) << insert.status();
    ASSERT_TRUE(insert->BindInt64(1, int64_t{1} << 40).ok());
    ASSERT_TRUE(insert->BindDouble(2, 2.5).ok());
    ASSERT_TRUE(insert->BindText(":s", "text").ok());
    ASSERT_TRUE(insert->BindBlob(":b", std::string("a\0b", 3)).ok());
    ASSERT_TRUE(insert->BindNull(":n").ok());
    ASSERT_TRUE(insert->Run().ok());
    EXPECT_EQ(db->Changes(), 1);
    // Reset clears bindings: an empty blob stays a zero-length blob, not NULL.
    ASSERT_TRUE(insert->Reset().ok());
    ASSERT_TRUE(insert->BindInt64(1, 2).ok());
    ASSERT_TRUE(insert->BindBlob(":b", "").ok());
    ASSERT_TRUE(insert->Run().ok());
  }
  absl::StatusOr<Statement> select = Statement::Prepare(*db, "SELECT * FROM t ORDER BY i DESC");
  ASSERT_TRUE(select.ok()) << select.status();
  EXPECT_EQ(select->ColumnCount(), 5);
  absl::StatusOr<bool> row = select->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(select->ColumnInt64(0), int64_t{1} << 40);
  EXPECT_EQ(select->ColumnDouble(1), 2.5);
  EXPECT_EQ(select->ColumnText(2), "text");
  EXPECT_EQ(select->ColumnBlob(3), std::string("a\0b", 3));
  EXPECT_TRUE(select->ColumnIsNull(4));
  EXPECT_EQ(select->ColumnText(4), "");
  row = select->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(select->ColumnInt64(0), 2);
  EXPECT_TRUE(select->ColumnIsNull(1));  // unbound after Reset
  EXPECT_FALSE(select->ColumnIsNull(3));
  EXPECT_EQ(select->ColumnBlob(3), "");
  row = select->Step();
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(*row);
}

TEST(SqliteDbTest, ErrorsMapToCanonicalCodes) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Exec("CREATE TABLE t (k TEXT PRIMARY KEY)").ok());

  absl::StatusOr<Statement> bad = Statement::Prepare(*db, "SELEKT 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);

  absl::StatusOr<Statement> insert = Statement::Prepare(*db, "INSERT INTO t VALUES (:k)");
  ASSERT_TRUE(insert.ok());
  absl::Status unknown = insert->BindText(":nope", "x");
  EXPECT_EQ(unknown, absl::InvalidArgumentError("statement has no parameter ':nope'"));
  ASSERT_TRUE(insert->BindText(":k", "x").ok());
  ASSERT_TRUE(insert->Run().ok());
  ASSERT_TRUE(insert->Reset().ok());
  ASSERT_TRUE(insert->BindText(":k", "x").ok());
  EXPECT_EQ(insert->Run().code(), absl::StatusCode::kAlreadyExists);
}

TEST(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  absl::StatusOr<Database> db = Database::Open(dir.path() + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Exec("CREATE TABLE t (k INTEGER)").ok());
  {
    absl::StatusOr<Transaction> txn = Transaction::Begin(*db);
    ASSERT_TRUE(txn.ok()) << txn.status();
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1)").ok());
  }  // rolled back
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM t"), 0);
  {
    absl::StatusOr<Transaction> txn = Transaction::Begin(*db);
    ASSERT_TRUE(txn.ok()) << txn.status();
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(txn->Commit().ok());
    EXPECT_EQ(txn->Commit(), absl::FailedPreconditionError("transaction is no longer active"));
  }
  EXPECT_EQ(QueryInt(*db, "SELECT COUNT(*) FROM t"), 1);
  EXPECT_EQ(QueryInt(*db, "SELECT k FROM t"), 2);
}

TEST(SqliteDbTest, MovedFromObjectsAreInert) {
  TempDir dir;
  absl::StatusOr<Database> opened = Database::Open(dir.path() + "/t.db");
  ASSERT_TRUE(opened.ok());
  Database db = std::move(*opened);
  absl::StatusOr<Statement> stmt = Statement::Prepare(db, "SELECT 7");
  ASSERT_TRUE(stmt.ok());
  Statement moved = std::move(*stmt);
  absl::StatusOr<bool> row = moved.Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(moved.ColumnInt64(0), 7);
}

}  // namespace
}  // namespace kiln::cache
