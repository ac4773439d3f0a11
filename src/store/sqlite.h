// Thin RAII layer over the SQLite C API, private to store/.
//
// Every SQL text passes through Statement (sqlite3_prepare_v3); values enter only through the
// Bind* calls, never by splicing them into the text. Errors become Status values whose message
// names the database file, what was being done, SQLite's own words and, where there is one,
// the fix.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace kpilot {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct SqliteFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;
using SqliteStmtPtr = std::unique_ptr<sqlite3_stmt, SqliteFinalizer>;

// The Status for SQLite result code `rc` (extended codes understood), with the message
// "<db_path>: <what>: <sqlite message> — <fix>". Codes map as follows:
//   BUSY / LOCKED                    → Unavailable (another process held the lock too long)
//   CONSTRAINT_FOREIGNKEY            → NotFound    (a referenced row does not exist)
//   CONSTRAINT_*                     → InvalidInput
//   CANTOPEN / PERM / READONLY / AUTH → InvalidInput (permissions, wrong path)
//   NOTADB / CORRUPT                 → InvalidInput (not a kpilot database)
//   anything else                    → Internal
// `db` may be null (then only `rc` is used).
Status SqliteError(sqlite3* db, int rc, const std::filesystem::path& db_path, const std::string& what);

// One prepared statement. Bind* use 1-based indexes like SQLite; a failed bind is remembered
// and reported by the next Step/Run. Borrows `db`, which must outlive the statement.
class Statement {
 public:
  // Prepares the first statement of `sql`; any text after it is an error (use ExecScript).
  static Result<Statement> Prepare(sqlite3* db, const std::filesystem::path& db_path, std::string_view sql);

  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindText(int index, std::string_view value);

  // Advances: true when a row is ready to read, false when the statement is done.
  Result<bool> Step();
  // Steps to completion, discarding any rows.
  Status Run();

  int64_t ColumnInt(int col) const;
  double ColumnDouble(int col) const;
  std::string ColumnText(int col) const;  // "" for NULL

 private:
  Statement(sqlite3* db, std::filesystem::path db_path, SqliteStmtPtr stmt)
      : db_(db), db_path_(std::move(db_path)), stmt_(std::move(stmt)) {}
  void NoteBind(int rc, int index);

  sqlite3* db_;
  std::filesystem::path db_path_;
  SqliteStmtPtr stmt_;
  Status bind_error_;
};

// Prepares and runs each statement of `script` in turn (DDL, pragmas with literal values).
// Stops at the first error. For trusted, constant SQL only: it binds nothing.
Status ExecScript(sqlite3* db, const std::filesystem::path& db_path, std::string_view script);

// Runs a statement that yields one integer (e.g. "PRAGMA user_version", "SELECT COUNT(*)…").
Result<int64_t> QueryInt(sqlite3* db, const std::filesystem::path& db_path, std::string_view sql);

// A write transaction taken with BEGIN IMMEDIATE, so the write lock is held (or waited for,
// up to the busy timeout) from the start and two writers never deadlock upgrading a read lock.
// Rolls back on destruction unless Commit() succeeded.
class Transaction {
 public:
  static Result<std::unique_ptr<Transaction>> Begin(sqlite3* db, const std::filesystem::path& db_path);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Status Commit();

 private:
  Transaction(sqlite3* db, std::filesystem::path db_path) : db_(db), db_path_(std::move(db_path)) {}
  sqlite3* db_;
  std::filesystem::path db_path_;
  bool done_ = false;
};

}  // namespace kpilot
