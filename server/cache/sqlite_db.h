// RAII wrappers over the SQLite C API, modeled on SQLiteCpp: a Database connection, prepared
// Statements and Transactions, all move-only and reporting errors as absl::Status. <sqlite3.h>
// stays in the .cc so that nothing above the storage module sees SQLite.
#ifndef KILN_SERVER_CACHE_SQLITE_DB_H_
#define KILN_SERVER_CACHE_SQLITE_DB_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::cache {

/// One SQLite connection. Not thread-safe: callers serialize access.
class Database {
 public:
  /// Opens (creating) the database file at `path` in WAL mode with foreign keys on and a busy
  /// timeout of `busy_timeout_ms`. kUnavailable if it cannot be opened.
  static absl::StatusOr<Database> Open(const std::string& path, int busy_timeout_ms = 5000);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Runs one or more statements without results (DDL, pragmas).
  absl::Status Exec(std::string_view sql);
  /// Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t Changes() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// A prepared statement. Bind parameters (1-based index or ":name"), Step through rows, read
/// columns (0-based) while Step returned true, Reset to reuse.
class Statement {
 public:
  /// kInternal if `sql` does not compile (a programming error in the storage module).
  static absl::StatusOr<Statement> Prepare(Database& db, std::string_view sql);

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  absl::Status BindInt64(int index, int64_t value);
  absl::Status BindDouble(int index, double value);
  /// Binds a copy of `value` as TEXT.
  absl::Status BindText(int index, std::string_view value);
  /// Binds a copy of `value` as a BLOB (an empty view binds a zero-length blob, not NULL).
  absl::Status BindBlob(int index, std::string_view value);
  absl::Status BindNull(int index);
  /// Named-parameter forms; kInvalidArgument if the statement has no parameter `name`
  /// (including its prefix, e.g. ":digest").
  absl::Status BindInt64(std::string_view name, int64_t value);
  absl::Status BindDouble(std::string_view name, double value);
  absl::Status BindText(std::string_view name, std::string_view value);
  absl::Status BindBlob(std::string_view name, std::string_view value);
  absl::Status BindNull(std::string_view name);

  /// Advances: true if a row is available, false when done. kUnavailable on a busy/locked
  /// database or I/O error, kResourceExhausted when the disk is full, kAlreadyExists on a
  /// constraint violation.
  absl::StatusOr<bool> Step();
  /// Steps to completion, expecting no rows.
  absl::Status Run();
  /// Resets to run again and clears the bindings.
  absl::Status Reset();

  int ColumnCount() const;
  bool ColumnIsNull(int column) const;
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  /// TEXT (or BLOB) bytes of the column; empty for NULL.
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;

 private:
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  absl::StatusOr<int> ParameterIndex(std::string_view name) const;
  absl::Status Check(int rc, std::string_view what) const;
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
};

/// BEGIN IMMEDIATE on construction (through Begin), ROLLBACK on destruction unless committed.
class Transaction {
 public:
  static absl::StatusOr<Transaction> Begin(Database& db);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  absl::Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;  // null once committed, rolled back or moved from
};

/// Maps an SQLite result code to a canonical status: busy/locked/I/O → kUnavailable, full →
/// kResourceExhausted, constraint → kAlreadyExists, corrupt → kDataLoss, else kInternal.
absl::Status SqliteStatus(int rc, std::string_view what, std::string_view detail);

}  // namespace kiln::cache

#endif  // KILN_SERVER_CACHE_SQLITE_DB_H_
