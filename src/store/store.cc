// The SQLite store: blobs, tasks, candidates, evaluations and kv, and opening (and migrating) the
// database; the runs tables are in runs.cc.
#include "store/store.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/sha256.h"
#include "core/text.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/sqlite_store.h"

namespace kpilot {
namespace fs = std::filesystem;
namespace {

constexpr const char* kDbName = "kpilot.db";
constexpr int kBusyTimeoutMs = 5000;
constexpr const char* kStoreFix = " — fix its permissions or pass another folder with --store";

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Status BadSha(const std::string& field, const std::string& sha) {
  return Status::InvalidInput(field + ": expected a sha256 (64 lowercase hex digits), got \"" + Tail(sha, 80) + "\"");
}

// The canonical text of a parameter object: keys sorted, no spaces. "" means no parameters.
Result<std::string> CanonicalParams(const std::string& params_json) {
  if (params_json.empty()) return std::string("{}");
  nlohmann::json j = nlohmann::json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidInput(
        "candidate params_json: expected a JSON object such as "
        "{\"BLOCK\":\"256\"}, got " +
        Tail(params_json, 200));
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

constexpr const char* kEvaluationColumns =
    "SELECT id, candidate_id, created_at, backend, verdict, speedup, result_blob, log_blob, "
    "ptxas_blob, sass_blob FROM evaluations ";

EvaluationRecord ReadEvaluation(const Statement& s) {
  EvaluationRecord e;
  e.id = s.ColumnInt(0);
  e.candidate_id = s.ColumnInt(1);
  e.created_at = s.ColumnText(2);
  e.backend = s.ColumnText(3);
  e.verdict = s.ColumnText(4);
  e.speedup = s.ColumnDouble(5);
  e.result_blob = s.ColumnText(6);
  e.log_blob = s.ColumnText(7);
  e.ptxas_blob = s.ColumnText(8);
  e.sass_blob = s.ColumnText(9);
  return e;
}

CandidateRecord ReadCandidate(const Statement& s) {
  CandidateRecord c;
  c.id = s.ColumnInt(0);
  c.task_id = s.ColumnInt(1);
  c.source_path = s.ColumnText(2);
  c.source_blob = s.ColumnText(3);
  c.params_json = s.ColumnText(4);
  return c;
}

// Switches the database to WAL (a setting stored in the file, so this is a no-op once any process
// has done it). Changing the journal mode can fail with BUSY at once, without waiting in the busy
// handler, while another process opens the same new store, so BUSY is retried here until
// the busy timeout has passed.
Status UseWal(sqlite3* db, const fs::path& db_path) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  while (true) {
    Result<Statement> wal = Statement::Prepare(db, db_path, "PRAGMA journal_mode = WAL");
    if (!wal.ok()) return wal.status();
    Result<bool> row = wal->Step();
    if (!row.ok()) {
      if (row.status().code() == StatusCode::kUnavailable && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      return row.status().WithContext("switching to WAL journal mode");
    }
    std::string mode = *row ? wal->ColumnText(0) : "";
    if (mode == "wal") return Status::Ok();
    return Status::Unavailable(db_path.string() + ": cannot use WAL journal mode (got \"" + mode +
                               "\") — put the store on a local filesystem with --store");
  }
}

}  // namespace

namespace store {

Result<int64_t> StepForId(Statement& stmt) {
  Result<bool> row = stmt.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal("INSERT … RETURNING returned no row");
  int64_t id = stmt.ColumnInt(0);
  KPILOT_RETURN_IF_ERROR(stmt.Run());
  return id;
}

Status SqliteStore::CheckBlobRef(const std::string& field, const std::string& sha, bool allow_empty) const {
  if (sha.empty() && allow_empty) return Status::Ok();
  if (!IsSha256Hex(sha)) return BadSha(field, sha);
  std::error_code ec;
  if (!fs::is_regular_file(BlobPath(sha), ec)) {
    return Status::NotFound(field + ": blob " + sha + " is not in store " + dir_.string() +
                            " — PutBlob the content before recording its sha");
  }
  return Status::Ok();
}

Result<std::string> SqliteStore::PutBlob(const std::string& content) {
  std::string sha = Sha256Hex(content);
  fs::path path = BlobPath(sha);
  // Blobs are written atomically, so a file of the right size is the same content; a file of
  // another size was damaged outside kpilot and is replaced.
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (!ec && size == content.size()) return sha;
  Status s = WriteFileAtomic(path, content);
  if (!s.ok()) return s.WithContext("store " + dir_.string() + ": writing blob " + sha);
  return sha;
}

Result<std::string> SqliteStore::GetBlob(const std::string& sha) {
  if (!IsSha256Hex(sha)) return BadSha("blob", sha);
  fs::path path = BlobPath(sha);
  Result<std::string> content = ReadFile(path);
  if (!content.ok()) {
    if (content.status().code() == StatusCode::kNotFound)
      return Status::NotFound("blob " + sha + " is not in store " + dir_.string() + " (no file " + path.string() + ")");
    return content.status().WithContext("store " + dir_.string() + ": reading blob " + sha);
  }
  std::string actual = Sha256Hex(*content);
  if (actual != sha) {
    return Status::Internal("blob " + path.string() + " is corrupt: its content hashes to " + actual +
                            " — delete the file; kpilot writes it again when it next produces it");
  }
  return content;
}

Result<int64_t> SqliteStore::AddTask(const TaskRecord& t) {
  if (t.name.empty()) return Status::InvalidInput("task record: name is empty");
  if (!IsSha256Hex(t.definition_sha)) return BadSha("task " + t.name + ": definition_sha", t.definition_sha);
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO tasks (name, dir, definition_sha, created_at) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (name, definition_sha) DO UPDATE SET dir = excluded.dir RETURNING id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, t.name).BindText(2, t.dir).BindText(3, t.definition_sha).BindText(4, UtcNow(UtcPrecision::kMillis));
  return StepForId(*stmt);
}

Result<int64_t> SqliteStore::AddCandidate(const CandidateRecord& c) {
  KPILOT_RETURN_IF_ERROR(CheckBlobRef("candidate source_blob", c.source_blob, /*allow_empty=*/false));
  Result<std::string> params = CanonicalParams(c.params_json);
  if (!params.ok()) return params.status();
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO candidates (task_id, source_path, source_blob, params_json, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (task_id, source_blob, params_json) "
      "DO UPDATE SET source_path = excluded.source_path RETURNING id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, c.task_id).BindText(2, c.source_path).BindText(3, c.source_blob);
  stmt->BindText(4, *params).BindText(5, UtcNow(UtcPrecision::kMillis));
  Result<int64_t> id = StepForId(*stmt);
  if (!id.ok() && id.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("task id " + std::to_string(c.task_id) + " is not in store " + db_path_.string() +
                            " — add the task before its candidates");
  }
  return id;
}

Result<int64_t> SqliteStore::AddEvaluation(const EvaluationRecord& e) {
  if (e.backend.empty() || e.verdict.empty())
    return Status::InvalidInput("evaluation record: backend and verdict must not be empty");
  if (!std::isfinite(e.speedup) || e.speedup < 0) {
    return Status::InvalidInput("evaluation record: speedup must be a finite number >= 0, got " +
                                std::to_string(e.speedup));
  }
  KPILOT_RETURN_IF_ERROR(CheckBlobRef("evaluation result_blob", e.result_blob, true));
  KPILOT_RETURN_IF_ERROR(CheckBlobRef("evaluation log_blob", e.log_blob, true));
  KPILOT_RETURN_IF_ERROR(CheckBlobRef("evaluation ptxas_blob", e.ptxas_blob, true));
  KPILOT_RETURN_IF_ERROR(CheckBlobRef("evaluation sass_blob", e.sass_blob, true));
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO evaluations (candidate_id, created_at, backend, verdict, speedup, result_blob, "
      "log_blob, ptxas_blob, sass_blob) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, e.candidate_id).BindText(2, e.created_at.empty() ? UtcNow(UtcPrecision::kMillis) : e.created_at);
  stmt->BindText(3, e.backend).BindText(4, e.verdict).BindDouble(5, e.speedup);
  stmt->BindText(6, e.result_blob).BindText(7, e.log_blob).BindText(8, e.ptxas_blob);
  stmt->BindText(9, e.sass_blob);
  Result<int64_t> id = StepForId(*stmt);
  if (!id.ok() && id.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("candidate id " + std::to_string(e.candidate_id) + " is not in store " + db_path_.string() +
                            " — add the candidate before its evaluations");
  }
  return id;
}

Result<std::vector<EvaluationRecord>> SqliteStore::ListEvaluations(int64_t candidate_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(std::string(kEvaluationColumns) + "WHERE candidate_id = ?1 ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, candidate_id);
  std::vector<EvaluationRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(ReadEvaluation(*stmt));
  }
}

Result<std::optional<EvaluationRecord>> SqliteStore::GetEvaluation(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(std::string(kEvaluationColumns) + "WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, id);
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<EvaluationRecord>();
  return std::optional<EvaluationRecord>(ReadEvaluation(*stmt));
}

Result<int64_t> SqliteStore::CountRows(const std::string& table) {
  // Table names cannot be bound as parameters, so each countable table has its own fixed SQL.
  struct Count {
    const char* table;
    const char* sql;
  };
  static constexpr Count kCounts[] = {
      {"tasks", "SELECT COUNT(*) FROM tasks"},
      {"candidates", "SELECT COUNT(*) FROM candidates"},
      {"evaluations", "SELECT COUNT(*) FROM evaluations"},
      {"kv", "SELECT COUNT(*) FROM kv"},
      {"runs", "SELECT COUNT(*) FROM runs"},
      {"run_nodes", "SELECT COUNT(*) FROM run_nodes"},
      {"run_events", "SELECT COUNT(*) FROM run_events"},
      {"skill_usage", "SELECT COUNT(*) FROM skill_usage"},
      {"torch_baselines", "SELECT COUNT(*) FROM torch_baselines"},
  };
  for (const Count& c : kCounts) {
    if (table != c.table) continue;
    std::lock_guard<std::mutex> lock(mu_);
    return QueryInt(db_.get(), db_path_, c.sql);
  }
  return Status::InvalidInput(
      "CountRows: unknown table \"" + table +
      "\"; expected tasks, candidates, evaluations, kv, runs, run_nodes, run_events, skill_usage or "
      "torch_baselines");
}

Status SqliteStore::PutValue(const std::string& key, const std::string& value) {
  if (key.empty()) return Status::InvalidInput("store value: key is empty");
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO kv (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) "
      "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, key).BindText(2, value).BindText(3, UtcNow(UtcPrecision::kMillis));
  return stmt->Run();
}

Result<std::optional<std::string>> SqliteStore::GetValue(const std::string& key) {
  if (key.empty()) return Status::InvalidInput("store value: key is empty");
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare("SELECT value FROM kv WHERE key = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, key);
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->ColumnText(0));
}

Result<std::optional<TaskRecord>> SqliteStore::GetTask(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare("SELECT id, name, dir, definition_sha FROM tasks WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, id);
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<TaskRecord>();
  TaskRecord t;
  t.id = stmt->ColumnInt(0);
  t.name = stmt->ColumnText(1);
  t.dir = stmt->ColumnText(2);
  t.definition_sha = stmt->ColumnText(3);
  return std::optional<TaskRecord>(std::move(t));
}

Result<std::optional<CandidateRecord>> SqliteStore::GetCandidate(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt =
      Prepare("SELECT id, task_id, source_path, source_blob, params_json FROM candidates WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, id);
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<CandidateRecord>();
  return std::optional<CandidateRecord>(ReadCandidate(*stmt));
}

Result<std::vector<CandidateRecord>> SqliteStore::ListCandidates(int64_t task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "SELECT id, task_id, source_path, source_blob, params_json FROM candidates "
      "WHERE task_id = ?1 ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, task_id);
  std::vector<CandidateRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(ReadCandidate(*stmt));
  }
}

}  // namespace store

std::optional<double> StoreTimeSeconds(const std::string& iso) {
  static constexpr char kShape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (iso.size() != sizeof(kShape) - 1) return std::nullopt;
  for (size_t i = 0; i < iso.size(); ++i)
    if (kShape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(iso[i])) : iso[i] != kShape[i]) return std::nullopt;
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

Result<std::unique_ptr<Store>> Store::Open(const fs::path& dir) {
  if (dir.empty()) return Status::InvalidInput("store folder is empty — pass a folder with --store");
  std::error_code ec;
  fs::create_directories(dir / "blobs", ec);
  if (ec) {
    return Status::InvalidInput("cannot create store folder " + dir.string() + ": " + ec.message() + kStoreFix);
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidInput("store folder " + dir.string() + " is not writable: " + std::strerror(errno) +
                                kStoreFix);
  }
  fs::path db_path = dir / kDbName;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(db_path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  SqlitePtr db(raw);  // sqlite3_open_v2 allocates a handle even when it fails
  if (rc != SQLITE_OK) return SqliteError(db.get(), rc, db_path, "opening the store");
  sqlite3_extended_result_codes(db.get(), 1);
  // Before anything that takes a lock, so a second process waits instead of failing.
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);

  KPILOT_RETURN_IF_ERROR(UseWal(db.get(), db_path));
  KPILOT_RETURN_IF_ERROR(ExecScript(db.get(), db_path, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"));
  Result<int> version = MigrateStore(db.get(), db_path);
  if (!version.ok()) return version.status();
  return std::unique_ptr<Store>(new store::SqliteStore(dir, db_path, std::move(db), *version));
}

int Store::LatestSchemaVersion() { return LatestStoreSchemaVersion(); }

Result<std::optional<TaskRecord>> Store::GetTask(int64_t) {
  return Status::Internal("this Store does not implement GetTask");
}

Result<std::optional<CandidateRecord>> Store::GetCandidate(int64_t) {
  return Status::Internal("this Store does not implement GetCandidate");
}

Result<std::vector<CandidateRecord>> Store::ListCandidates(int64_t) {
  return Status::Internal("this Store does not implement ListCandidates");
}

Status Store::AddSkillUsage(const std::vector<SkillUsageRecord>&) {
  return Status::Internal("this Store does not implement AddSkillUsage");
}

Result<std::vector<SkillUsageRecord>> Store::ListSkillUsage() {
  return Status::Internal("this Store does not implement ListSkillUsage");
}

Status Store::PutBaselineTiming(const BaselineTimingRecord&) {
  return Status::Internal("this Store does not implement PutBaselineTiming");
}

Result<std::vector<BaselineTimingRecord>> Store::GetBaselineTimings(const std::string&, const std::string&,
                                                                    const std::string&, const std::string&) {
  return Status::Internal("this Store does not implement GetBaselineTimings");
}

}  // namespace kpilot
