// The store: a SQLite index (WAL, schema version in PRAGMA user_version, forward migrations)
// plus content-addressed blobs (sources, logs, ptxas reports, SASS, results) under `blobs/`.
//
// Layout of a store folder (default `.kpilot/` in the working directory):
//   kpilot.db          the index
//   blobs/ab/cdef…     one file per blob, named by its sha256
//   cache/             the compile cache (owned by toolchain/, placed here)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct TaskRecord {
  int64_t id = 0;
  std::string name;
  std::string dir;
  std::string definition_sha;  // sha256 of task.toml (or the definition it came from)
};

struct CandidateRecord {
  int64_t id = 0;
  int64_t task_id = 0;
  std::string source_path;   // as given by the user
  std::string source_blob;   // sha256 of the source text
  std::string params_json;   // {"BLOCK":"256"}
};

struct EvaluationRecord {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::string created_at;    // ISO 8601 UTC
  std::string backend;       // "host" | "cuda"
  std::string verdict;       // compile_error | runtime_error | timeout | incorrect | suspicious | passed
  double speedup = 0;        // geometric mean over workloads, 0 when not passed
  std::string result_blob;   // sha256 of the full evaluation JSON
  std::string log_blob;      // compile log, "" when none
  std::string ptxas_blob;    // ptxas report JSON, "" when none
  std::string sass_blob;     // SASS text, "" when none
};

class Store {
 public:
  // Opens (creating if needed) the store in `dir`, migrating its schema forward. A database with
  // a newer schema than this kpilot knows is an error naming both versions.
  static Result<std::unique_ptr<Store>> Open(const std::filesystem::path& dir);
  virtual ~Store() = default;

  virtual const std::filesystem::path& dir() const = 0;
  virtual int SchemaVersion() const = 0;

  // Blobs: Put returns the sha256; content already present is not written again.
  virtual Result<std::string> PutBlob(const std::string& content) = 0;
  virtual Result<std::string> GetBlob(const std::string& sha) = 0;

  // Upserts by (name, definition_sha); returns the id.
  virtual Result<int64_t> AddTask(const TaskRecord& t) = 0;
  // Upserts by (task_id, source_blob, params_json); returns the id.
  virtual Result<int64_t> AddCandidate(const CandidateRecord& c) = 0;
  // Inserts; `created_at` is filled in when empty. Returns the id.
  virtual Result<int64_t> AddEvaluation(const EvaluationRecord& e) = 0;

  virtual Result<std::vector<EvaluationRecord>> ListEvaluations(int64_t candidate_id) = 0;
  virtual Result<std::optional<EvaluationRecord>> GetEvaluation(int64_t id) = 0;
  // Row counts, for consistency checks: "tasks", "candidates", "evaluations".
  virtual Result<int64_t> CountRows(const std::string& table) = 0;

  // Small key→value cache for values measured once per machine (e.g. GPU calibration).
  virtual Status PutValue(const std::string& key, const std::string& value) = 0;
  virtual Result<std::optional<std::string>> GetValue(const std::string& key) = 0;
};

}  // namespace kpilot
