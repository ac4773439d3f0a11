#include "store/sqlite.h"

namespace kpilot {
namespace fs = std::filesystem;

Status SqliteError(sqlite3* db, int rc, const fs::path& db_path, const std::string& what) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = db_path.string() + ": " + what + ": " + detail;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg +
                                 " — another kpilot process held the store for too long; "
                                 "retry when it has finished");
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return Status::NotFound(msg);
      return Status::InvalidInput(msg);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return Status::InvalidInput(msg +
                                  " — check that the folder and file are writable by you, "
                                  "or use another --store");
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return Status::InvalidInput(msg +
                                  " — this is not a usable kpilot database; move it away "
                                  "or use another --store");
    case SQLITE_FULL:
      return Status::Internal(msg + " — free some disk space");
    default:
      return Status::Internal(msg);
  }
}

Result<Statement> Statement::Prepare(sqlite3* db, const fs::path& db_path, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), 0, &raw, &tail);
  SqliteStmtPtr stmt(raw);
  if (rc != SQLITE_OK) return SqliteError(db, rc, db_path, "preparing SQL");
  if (tail != nullptr &&
      std::string_view(tail, sql.data() + sql.size() - tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    return Status::Internal(db_path.string() + ": SQL holds more than one statement: " + std::string(sql));
  }
  if (stmt == nullptr) return Status::Internal(db_path.string() + ": empty SQL statement");
  return Statement(db, db_path, std::move(stmt));
}

void Statement::NoteBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_error_.ok())
    bind_error_ = SqliteError(db_, rc, db_path_, "binding parameter " + std::to_string(index));
}

Statement& Statement::BindInt(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_.get(), index, value), index);
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_.get(), index, value), index);
  return *this;
}

Statement& Statement::BindText(int index, std::string_view value) {
  NoteBind(sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8), index);
  return *this;
}

Result<bool> Statement::Step() {
  if (!bind_error_.ok()) return bind_error_;
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, db_path_, std::string("running \"") + sqlite3_sql(stmt_.get()) + "\"");
}

Status Statement::Run() {
  while (true) {
    Result<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

int64_t Statement::ColumnInt(int col) const { return sqlite3_column_int64(stmt_.get(), col); }

double Statement::ColumnDouble(int col) const { return sqlite3_column_double(stmt_.get(), col); }

std::string Statement::ColumnText(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_.get(), col);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), col)));
}

Status ExecScript(sqlite3* db, const fs::path& db_path, std::string_view script) {
  const char* next = script.data();
  const char* end = script.data() + script.size();
  while (next < end) {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v3(db, next, static_cast<int>(end - next), 0, &raw, &tail);
    SqliteStmtPtr stmt(raw);
    if (rc != SQLITE_OK) return SqliteError(db, rc, db_path, "preparing SQL");
    next = tail;
    if (stmt == nullptr) continue;  // whitespace or a comment
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE)
      return SqliteError(db, rc, db_path, std::string("running \"") + sqlite3_sql(stmt.get()) + "\"");
  }
  return Status::Ok();
}

Result<int64_t> QueryInt(sqlite3* db, const fs::path& db_path, std::string_view sql) {
  Result<Statement> stmt = Statement::Prepare(db, db_path, sql);
  if (!stmt.ok()) return stmt.status();
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(db_path.string() + ": no row from \"" + std::string(sql) + "\"");
  return stmt->ColumnInt(0);
}

Result<std::unique_ptr<Transaction>> Transaction::Begin(sqlite3* db, const fs::path& db_path) {
  KPILOT_RETURN_IF_ERROR(ExecScript(db, db_path, "BEGIN IMMEDIATE"));
  return std::unique_ptr<Transaction>(new Transaction(db, db_path));
}

Transaction::~Transaction() {
  if (!done_) (void)ExecScript(db_, db_path_, "ROLLBACK");
}

Status Transaction::Commit() {
  KPILOT_RETURN_IF_ERROR(ExecScript(db_, db_path_, "COMMIT"));
  done_ = true;
  return Status::Ok();
}

}  // namespace kpilot
