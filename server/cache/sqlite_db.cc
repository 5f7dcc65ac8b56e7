// RAII SQLite wrappers: connection setup (WAL, foreign keys, busy timeout), prepared statements
// with typed binds and getters, and IMMEDIATE transactions that roll back unless committed.
#include "server/cache/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::cache {

absl::Status SqliteStatus(int rc, std::string_view what, std::string_view detail) {
  std::string message = absl::StrCat("sqlite ", std::string(what), " failed: ",
                                     sqlite3_errstr(rc));
  if (!detail.empty()) absl::StrAppend(&message, " (", std::string(detail), ")");
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
      return absl::UnavailableError(message);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    default:
      return absl::InternalError(message);
  }
}

// ---- Database ---------------------------------------------------------------------------------

absl::StatusOr<Database> Database::Open(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = raw != nullptr ? sqlite3_errmsg(raw) : "";
    sqlite3_close_v2(raw);
    absl::Status s = SqliteStatus(rc, "open", detail);
    return absl::UnavailableError(absl::StrCat("cannot open database '", path, "': ", s.message()));
  }
  Database db(raw, path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  // WAL lets readers proceed during a write; NORMAL sync is durable across process crashes and
  // loses at most the last transactions on power loss, which a cache tolerates.
  KILN_RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=WAL"));
  KILN_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous=NORMAL"));
  KILN_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys=ON"));
  // journal_mode=WAL silently stays "delete" on file systems without shared memory; check.
  KILN_ASSIGN_OR_RETURN(Statement mode, Statement::Prepare(db, "PRAGMA journal_mode"));
  KILN_ASSIGN_OR_RETURN(bool has_row, mode.Step());
  if (!has_row || mode.ColumnText(0) != "wal") {
    return absl::UnavailableError(
        absl::StrCat("database '", path, "' could not be put in WAL mode (journal_mode is '",
                     has_row ? mode.ColumnText(0) : "", "')"));
  }
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

absl::Status Database::Exec(std::string_view sql) {
  char* error = nullptr;
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string detail = error != nullptr ? error : "";
    sqlite3_free(error);
    return SqliteStatus(rc, absl::StrCat("exec '", text, "'"), detail);
  }
  return absl::OkStatus();
}

int64_t Database::Changes() const { return sqlite3_changes64(db_); }

// ---- Statement --------------------------------------------------------------------------------

absl::StatusOr<Statement> Statement::Prepare(Database& db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &raw,
                              nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteStatus(rc, "prepare", sqlite3_errmsg(db.handle()));
    sqlite3_finalize(raw);
    // A statement that does not compile is a bug here unless the database is busy or broken.
    if (s.code() == absl::StatusCode::kInternal) {
      return absl::InternalError(absl::StrCat(s.message(), " in '", std::string(sql), "'"));
    }
    return s;
  }
  return Statement(raw, db.handle());
}

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

absl::Status Statement::Check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK) return absl::OkStatus();
  return SqliteStatus(rc, what, sqlite3_errmsg(db_));
}

absl::StatusOr<int> Statement::ParameterIndex(std::string_view name) const {
  int index = sqlite3_bind_parameter_index(stmt_, std::string(name).c_str());
  if (index == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("statement has no parameter '", std::string(name), "'"));
  }
  return index;
}

absl::Status Statement::BindInt64(int index, int64_t value) {
  return Check(sqlite3_bind_int64(stmt_, index, value), "bind int64");
}
absl::Status Statement::BindDouble(int index, double value) {
  return Check(sqlite3_bind_double(stmt_, index, value), "bind double");
}
absl::Status Statement::BindText(int index, std::string_view value) {
  return Check(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8),
               "bind text");
}
absl::Status Statement::BindBlob(int index, std::string_view value) {
  // A null data pointer would bind NULL; an empty blob must stay a (zero-length) blob.
  static const char kEmpty = 0;
  const char* data = value.empty() ? &kEmpty : value.data();
  return Check(sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT),
               "bind blob");
}
absl::Status Statement::BindNull(int index) {
  return Check(sqlite3_bind_null(stmt_, index), "bind null");
}

absl::Status Statement::BindInt64(std::string_view name, int64_t value) {
  KILN_ASSIGN_OR_RETURN(int index, ParameterIndex(name));
  return BindInt64(index, value);
}
absl::Status Statement::BindDouble(std::string_view name, double value) {
  KILN_ASSIGN_OR_RETURN(int index, ParameterIndex(name));
  return BindDouble(index, value);
}
absl::Status Statement::BindText(std::string_view name, std::string_view value) {
  KILN_ASSIGN_OR_RETURN(int index, ParameterIndex(name));
  return BindText(index, value);
}
absl::Status Statement::BindBlob(std::string_view name, std::string_view value) {
  KILN_ASSIGN_OR_RETURN(int index, ParameterIndex(name));
  return BindBlob(index, value);
}
absl::Status Statement::BindNull(std::string_view name) {
  KILN_ASSIGN_OR_RETURN(int index, ParameterIndex(name));
  return BindNull(index);
}

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  absl::Status s = SqliteStatus(rc, "step", sqlite3_errmsg(db_));
  sqlite3_reset(stmt_);  // leave the statement reusable after an error
  return s;
}

absl::Status Statement::Run() {
  KILN_ASSIGN_OR_RETURN(bool row, Step());
  if (row) return absl::InternalError("statement returned a row where none was expected");
  return absl::OkStatus();
}

absl::Status Statement::Reset() {
  sqlite3_clear_bindings(stmt_);
  return Check(sqlite3_reset(stmt_), "reset");
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }
bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}

std::string Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return "";
  return std::string(static_cast<const char*>(blob), sqlite3_column_bytes(stmt_, column));
}

// ---- Transaction ------------------------------------------------------------------------------

absl::StatusOr<Transaction> Transaction::Begin(Database& db) {
  // IMMEDIATE takes the write lock up front, so a transaction never fails half-way with BUSY
  // on a lock upgrade.
  KILN_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_ != nullptr) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status Transaction::Commit() {
  if (db_ == nullptr) return absl::FailedPreconditionError("transaction is no longer active");
  absl::Status s = db_->Exec("COMMIT");
  if (!s.ok()) return s;  // still active: the destructor rolls back
  db_ = nullptr;
  return absl::OkStatus();
}

}  // namespace kiln::cache
