#include "store/schema.h"

#include <array>
#include <string>

#include "store/sqlite.h"

namespace kpilot {
namespace fs = std::filesystem;
namespace {

struct Migration {
  int version;      // user_version after this step
  const char* sql;  // ends by setting user_version to `version` (PRAGMA takes no parameters)
};

// Append only. Timestamps are ISO 8601 UTC text; blob columns hold a sha256 (64 lowercase hex)
// or "" when there is no such blob.
constexpr std::array kMigrations = {
    Migration{1, R"sql(
CREATE TABLE tasks (
  id             INTEGER PRIMARY KEY,
  name           TEXT NOT NULL,
  dir            TEXT NOT NULL,
  definition_sha TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  UNIQUE (name, definition_sha)
);
CREATE TABLE candidates (
  id          INTEGER PRIMARY KEY,
  task_id     INTEGER NOT NULL REFERENCES tasks(id),
  source_path TEXT NOT NULL,
  source_blob TEXT NOT NULL,
  params_json TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (task_id, source_blob, params_json)
);
CREATE TABLE evaluations (
  id           INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  created_at   TEXT NOT NULL,
  backend      TEXT NOT NULL,
  verdict      TEXT NOT NULL,
  speedup      REAL NOT NULL,
  result_blob  TEXT NOT NULL,
  log_blob     TEXT NOT NULL,
  ptxas_blob   TEXT NOT NULL,
  sass_blob    TEXT NOT NULL
);
-- ListEvaluations(candidate_id) and the foreign-key check from candidates to evaluations.
CREATE INDEX evaluations_by_candidate ON evaluations(candidate_id, id);
CREATE TABLE kv (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
PRAGMA user_version = 1;
)sql"},
    Migration{2, R"sql(
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  task_name    TEXT NOT NULL,
  task_dir     TEXT NOT NULL,
  config_json  TEXT NOT NULL,
  status       TEXT NOT NULL,
  stop_reason  TEXT NOT NULL,
  best_speedup REAL NOT NULL,
  best_node    INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
);
CREATE TABLE run_nodes (
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  node          INTEGER NOT NULL,
  parent        INTEGER NOT NULL,
  proposal      INTEGER NOT NULL,
  evaluation_id INTEGER NOT NULL,
  source_name   TEXT NOT NULL,
  source_blob   TEXT NOT NULL,
  params_json   TEXT NOT NULL,
  summary       TEXT NOT NULL,
  finding       TEXT NOT NULL,
  verdict       TEXT NOT NULL,
  speedup       REAL NOT NULL,
  result_blob   TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  PRIMARY KEY (run_id, node)
);
CREATE TABLE run_events (
  run_id       INTEGER NOT NULL REFERENCES runs(id),
  seq          INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
PRAGMA user_version = 2;
)sql"},
    // One row per card offered/applied and per finding reported/acted on, for each proposal
    // (skills/: RecordUsage). run_id 0 is usage outside a run, so no foreign key to runs.
    Migration{3, R"sql(
CREATE TABLE skill_usage (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL,
  node       INTEGER NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('card', 'tool')),
  name       TEXT NOT NULL,
  fired      INTEGER NOT NULL,
  applied    INTEGER NOT NULL,
  speedup    REAL NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX skill_usage_by_name ON skill_usage(kind, name);
PRAGMA user_version = 3;
)sql"},
    // Baseline timings of PyTorch-defined tasks (docs/pytorch.md): eager and torch.compile, per
    // problem file (sha256), GPU, torch version, timing procedure and workload (torch_baselines.cc).
    Migration{4, R"sql(
CREATE TABLE torch_baselines (
  problem_sha  TEXT NOT NULL,
  gpu          TEXT NOT NULL,
  torch        TEXT NOT NULL,
  baseline     TEXT NOT NULL CHECK (baseline IN ('eager', 'compile')),
  timing       TEXT NOT NULL,
  workload     TEXT NOT NULL,
  ms           REAL NOT NULL,
  statistic    TEXT NOT NULL,
  samples_json TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  PRIMARY KEY (problem_sha, gpu, torch, baseline, timing, workload)
);
PRAGMA user_version = 4;
)sql"},
};

constexpr bool VersionsAreConsecutive() {
  for (size_t i = 0; i < kMigrations.size(); ++i)
    if (kMigrations[i].version != static_cast<int>(i) + 1) return false;
  return true;
}
static_assert(VersionsAreConsecutive(), "migration N must take the schema to version N");

constexpr int kLatest = kMigrations.back().version;

Status TooNew(const fs::path& db_path, int64_t version) {
  return Status::InvalidInput("store " + db_path.string() + " has schema " + std::to_string(version) +
                              "; this kpilot knows up to " + std::to_string(kLatest) +
                              " — upgrade kpilot or use another --store");
}

}  // namespace

int LatestStoreSchemaVersion() { return kLatest; }

Result<int> MigrateStore(sqlite3* db, const fs::path& db_path) {
  Result<int64_t> version = QueryInt(db, db_path, "PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version > kLatest) return TooNew(db_path, *version);
  for (const Migration& m : kMigrations) {
    if (*version >= m.version) continue;
    Result<std::unique_ptr<Transaction>> txn = Transaction::Begin(db, db_path);
    if (!txn.ok()) return txn.status().WithContext("migrating to schema " + std::to_string(m.version));
    // Another process may have migrated while we waited for the write lock.
    version = QueryInt(db, db_path, "PRAGMA user_version");
    if (!version.ok()) return version.status();
    if (*version > kLatest) return TooNew(db_path, *version);
    if (*version >= m.version) continue;  // the transaction rolls back: nothing was written
    KPILOT_RETURN_IF_ERROR(
        ExecScript(db, db_path, m.sql).WithContext("migrating to schema " + std::to_string(m.version)));
    version = QueryInt(db, db_path, "PRAGMA user_version");
    if (!version.ok()) return version.status();
    if (*version != m.version) {
      return Status::Internal(db_path.string() + ": migration " + std::to_string(m.version) + " left user_version at " +
                              std::to_string(*version));
    }
    KPILOT_RETURN_IF_ERROR((*txn)->Commit());
  }
  return static_cast<int>(*version);
}

}  // namespace kpilot
