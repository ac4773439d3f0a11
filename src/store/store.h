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
  std::string source_path;  // as given by the user
  std::string source_blob;  // sha256 of the source text
  std::string params_json;  // {"BLOCK":"256"}
};

struct EvaluationRecord {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::string created_at;   // ISO 8601 UTC
  std::string backend;      // "host" | "cuda"
  std::string verdict;      // compile_error | runtime_error | timeout | incorrect | suspicious | passed
  double speedup = 0;       // geometric mean over workloads, 0 when not passed
  std::string result_blob;  // sha256 of the full evaluation JSON
  std::string log_blob;     // compile log, "" when none
  std::string ptxas_blob;   // ptxas report JSON, "" when none
  std::string sass_blob;    // SASS text, "" when none
};

// Thread safety: one Store may be shared by the threads of a process (calls are serialized
// inside it). Several Store objects — in one process or in several — may use the same folder at
// once: the index runs in WAL mode with a 5000 ms busy timeout and every Add*/Put* is a single
// statement, so a process killed at any point leaves whole rows. Blobs are written atomically
// (temporary file, fsync, rename) and a row may only refer to a blob already in the store, so no
// row ever points at a missing or torn blob. A writer that cannot get the lock within the
// timeout gets Unavailable.
//
// Errors: every message names the store file or blob path involved and, where there is one,
// the fix. Records are never deleted, so an id once returned stays valid.
// An optimization run (kpilot optimize): its configuration, state and best result.
struct RunRecord {
  int64_t id = 0;
  std::string task_name;
  std::string task_dir;
  std::string config_json;  // the options it was started with (resume reuses them)
  std::string status;       // running | finished | interrupted | failed
  std::string stop_reason;  // budget, time, plateau, target, exhausted, …
  double best_speedup = 0;
  int64_t best_node = -1;
  std::string created_at;
  std::string updated_at;
};

// One evaluated node of a run's search tree.
struct RunNodeRecord {
  int64_t run_id = 0;
  int64_t node = 0;  // the node's id in the tree (0 = root)
  int64_t parent = -1;
  int64_t proposal = -1;      // the run event that proposed it (-1 for the root)
  int64_t evaluation_id = 0;  // evaluations.id ("0" when it was not stored)
  std::string source_name;
  std::string source_blob;  // sha256 of the candidate source
  std::string params_json;
  std::string summary;
  std::string finding;
  std::string verdict;
  double speedup = 0;
  std::string result_blob;  // the evaluation JSON (timings, profile summary)
  std::string created_at;
};

// One row of skill-card and micro-profiling-tool usage (schema 3): a card offered to / applied by
// a proposal, or a finding reported for / acted on by it. skills/ aggregates the rows.
struct SkillUsageRecord {
  int64_t id = 0;
  int64_t run_id = 0;  // 0 outside a run
  int64_t node = -1;   // the child node the proposal became (-1 when none)
  std::string kind;    // "card" | "tool"
  std::string name;    // card id or finding id
  bool fired = false;  // offered (card) / reported (tool)
  bool applied = false;
  double speedup = 0;  // the child's speedup over its parent; 0 when not measured
  std::string created_at;
};

// One cached baseline timing of a PyTorch-defined task (schema 4): the eager reference or its
// torch.compile, timed on one GPU with one torch version by one procedure, for one workload.
struct BaselineTimingRecord {
  std::string problem_sha;  // sha256 of the problem or definition file
  std::string gpu;          // the GPU's name as the worker reported it ("cpu" on the cpu device)
  std::string torch;        // torch.__version__
  std::string baseline;     // "eager" | "compile"
  std::string timing;       // the procedure: default | kernelbench | flashinfer
  std::string workload;
  double ms = 0;             // the procedure's statistic of the samples, milliseconds
  std::string statistic;     // "median" | "mean"
  std::string samples_json;  // every sample, a JSON array of milliseconds
  std::string created_at;
};

// Everything else a run decides, in order: proposals, selections, promotions, stops.
struct RunEventRecord {
  int64_t run_id = 0;
  int64_t seq = 0;
  std::string kind;  // proposal | select | promote | reject | close | stop | resume
  std::string payload_json;
  std::string created_at;
};

class Store {
 public:
  // Opens (creating if needed) the store in `dir`, migrating its schema forward. A database with
  // a newer schema than this kpilot knows is an error naming both versions:
  //   "store .kpilot/kpilot.db has schema 7; this kpilot knows up to 1 — upgrade kpilot or use
  //    another --store"   (InvalidInput)
  // A folder that cannot be created or written, or a kpilot.db that is not a SQLite database,
  // is InvalidInput naming the path and what to do.
  static Result<std::unique_ptr<Store>> Open(const std::filesystem::path& dir);
  // The newest schema version this build of kpilot knows; Open leaves every store at it.
  static int LatestSchemaVersion();
  virtual ~Store() = default;

  virtual const std::filesystem::path& dir() const = 0;
  // The schema version of the database, as left by Open.
  virtual int SchemaVersion() const = 0;

  // Blobs: Put returns the sha256 (64 lowercase hex); content already present is not written
  // again. Get verifies the content against its sha: a missing blob is NotFound, a malformed
  // sha (anything but 64 lowercase hex digits) is InvalidInput, a blob whose content no longer
  // matches its name is Internal ("…corrupt… delete it").
  virtual Result<std::string> PutBlob(const std::string& content) = 0;
  virtual Result<std::string> GetBlob(const std::string& sha) = 0;

  // Upserts by (name, definition_sha); returns the id. A second call with the same key returns
  // the same id and records `dir` as the task's current folder. `name` must not be empty and
  // `definition_sha` must be a sha256 (InvalidInput otherwise). `t.id` is ignored.
  virtual Result<int64_t> AddTask(const TaskRecord& t) = 0;
  // Upserts by (task_id, source_blob, params_json); returns the id. `params_json` must be a JSON
  // object (or "" for none) and is stored canonically — keys sorted, no spaces — so the same
  // parameters written differently are the same candidate; "" is stored as "{}". `source_blob`
  // must be the sha256 of a blob already in the store (PutBlob the source first); `source_path`
  // is updated to the latest one given. A task_id or source blob not in the store → NotFound.
  // `c.id` is ignored.
  virtual Result<int64_t> AddCandidate(const CandidateRecord& c) = 0;
  // Inserts; `created_at` is filled in when empty. Returns the id. Each *_blob is "" or the
  // sha256 of a blob already in the store. A candidate_id or blob not in the store → NotFound;
  // a blob field that is neither "" nor a sha256, an empty backend or verdict, or a speedup that
  // is negative or not finite → InvalidInput. `e.id` is ignored.
  virtual Result<int64_t> AddEvaluation(const EvaluationRecord& e) = 0;

  // All evaluations of a candidate, oldest first (empty for an unknown candidate).
  virtual Result<std::vector<EvaluationRecord>> ListEvaluations(int64_t candidate_id) = 0;
  virtual Result<std::optional<EvaluationRecord>> GetEvaluation(int64_t id) = 0;
  // Row counts, for consistency checks: "tasks", "candidates", "evaluations", "kv", "runs",
  // "run_nodes", "run_events", "skill_usage", "torch_baselines"; any other name →
  // InvalidInput.
  virtual Result<int64_t> CountRows(const std::string& table) = 0;

  // Small key→value cache for values measured once per machine (e.g. GPU calibration).
  // Put overwrites; Get of an absent key is nullopt. An empty key → InvalidInput.
  virtual Status PutValue(const std::string& key, const std::string& value) = 0;
  virtual Result<std::optional<std::string>> GetValue(const std::string& key) = 0;

  // Runs (schema 2). Each write is one statement, committed as it happens, so a run killed at
  // any point resumes from exactly what was recorded.
  virtual Result<int64_t> CreateRun(const RunRecord& r) = 0;
  virtual Status UpdateRun(const RunRecord& r) = 0;  // status, stop_reason, best_* by id
  virtual Result<std::optional<RunRecord>> GetRun(int64_t id) = 0;
  virtual Result<std::vector<RunRecord>> ListRuns() = 0;
  virtual Status AddRunNode(const RunNodeRecord& n) = 0;  // unique (run_id, node)
  virtual Result<std::vector<RunNodeRecord>> ListRunNodes(int64_t run_id) = 0;
  // Appends an event; returns its seq (1, 2, … per run).
  virtual Result<int64_t> AddRunEvent(int64_t run_id, const std::string& kind, const std::string& payload_json) = 0;
  virtual Result<std::vector<RunEventRecord>> ListRunEvents(int64_t run_id) = 0;

  // Look-ups by id (nullopt when absent) and the candidates of a task, oldest first. The
  // defaults report Internal so that test doubles need not implement what they do not use;
  // the SQLite store implements them all.
  virtual Result<std::optional<TaskRecord>> GetTask(int64_t id);
  virtual Result<std::optional<CandidateRecord>> GetCandidate(int64_t id);
  virtual Result<std::vector<CandidateRecord>> ListCandidates(int64_t task_id);

  // Skill usage (schema 3). AddSkillUsage writes all rows in one transaction (or none): kind must
  // be "card" or "tool", name non-empty, speedup finite and >= 0 (InvalidInput otherwise);
  // created_at is filled in when empty. ListSkillUsage returns every row, oldest first.
  virtual Status AddSkillUsage(const std::vector<SkillUsageRecord>& rows);
  virtual Result<std::vector<SkillUsageRecord>> ListSkillUsage();

  // Baseline timings of PyTorch-defined tasks (schema 4). Put upserts by (problem_sha, gpu, torch,
  // baseline, timing, workload) — a later measurement replaces an earlier one; baseline must be
  // "eager" or "compile", ms finite and > 0, and the key fields non-empty (InvalidInput
  // otherwise). Get returns the rows of one problem on one GPU and torch version under one
  // procedure, both baselines, ordered by baseline then workload.
  virtual Status PutBaselineTiming(const BaselineTimingRecord& r);
  virtual Result<std::vector<BaselineTimingRecord>> GetBaselineTimings(const std::string& problem_sha,
                                                                       const std::string& gpu, const std::string& torch,
                                                                       const std::string& timing);
};

// A store timestamp (ISO 8601 UTC with milliseconds, as every created_at is written) as seconds
// since the epoch; nullopt when `iso` is not one.
std::optional<double> StoreTimeSeconds(const std::string& iso);

}  // namespace kpilot
