// Internal to src/store: the SQLite-backed Store and the helpers its parts share. Its members are
// defined by part: store.cc (blobs, tasks, candidates, evaluations, kv) and runs.cc (the runs,
// run_nodes and run_events tables of schema 2). Not part of the module's contract: include
// store.h and call Store::Open instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "store/skill_usage.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/torch_baselines.h"

namespace kpilot::store {
namespace fs = std::filesystem;

// Steps an INSERT … RETURNING id to completion, so the autocommit transaction has committed
// (and any error surfaced) before the id is handed out.
Result<int64_t> StepForId(Statement& stmt);

class SqliteStore final : public Store {
 public:
  SqliteStore(fs::path dir, fs::path db_path, SqlitePtr db, int version)
      : dir_(std::move(dir)), db_path_(std::move(db_path)), db_(std::move(db)), version_(version) {}

  const fs::path& dir() const override { return dir_; }
  int SchemaVersion() const override { return version_; }

  Result<std::string> PutBlob(const std::string& content) override;
  Result<std::string> GetBlob(const std::string& sha) override;
  Result<int64_t> AddTask(const TaskRecord& t) override;
  Result<int64_t> AddCandidate(const CandidateRecord& c) override;
  Result<int64_t> AddEvaluation(const EvaluationRecord& e) override;
  Result<std::vector<EvaluationRecord>> ListEvaluations(int64_t candidate_id) override;
  Result<std::optional<EvaluationRecord>> GetEvaluation(int64_t id) override;
  Result<int64_t> CountRows(const std::string& table) override;
  Status PutValue(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>> GetValue(const std::string& key) override;
  Result<std::optional<TaskRecord>> GetTask(int64_t id) override;
  Result<std::optional<CandidateRecord>> GetCandidate(int64_t id) override;
  Result<std::vector<CandidateRecord>> ListCandidates(int64_t task_id) override;
  Result<int64_t> CreateRun(const RunRecord& r) override;
  Status UpdateRun(const RunRecord& r) override;
  Result<std::optional<RunRecord>> GetRun(int64_t id) override;
  Result<std::vector<RunRecord>> ListRuns() override;
  Status AddRunNode(const RunNodeRecord& n) override;
  Result<std::vector<RunNodeRecord>> ListRunNodes(int64_t run_id) override;
  Result<int64_t> AddRunEvent(int64_t run_id, const std::string& kind, const std::string& payload_json) override;
  Result<std::vector<RunEventRecord>> ListRunEvents(int64_t run_id) override;
  Status AddSkillUsage(const std::vector<SkillUsageRecord>& rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    return InsertSkillUsage(db_.get(), db_path_, rows, UtcNow(UtcPrecision::kMillis));
  }
  Status PutBaselineTiming(const BaselineTimingRecord& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    return UpsertBaselineTiming(db_.get(), db_path_, r, UtcNow(UtcPrecision::kMillis));
  }
  Result<std::vector<BaselineTimingRecord>> GetBaselineTimings(const std::string& problem_sha, const std::string& gpu,
                                                               const std::string& torch,
                                                               const std::string& timing) override {
    std::lock_guard<std::mutex> lock(mu_);
    return SelectBaselineTimings(db_.get(), db_path_, problem_sha, gpu, torch, timing);
  }
  Result<std::vector<SkillUsageRecord>> ListSkillUsage() override {
    std::lock_guard<std::mutex> lock(mu_);
    return SelectSkillUsage(db_.get(), db_path_);
  }

 private:
  fs::path BlobPath(const std::string& sha) const { return dir_ / "blobs" / sha.substr(0, 2) / sha.substr(2); }
  // "" is allowed (no blob); anything else must name a blob already in the store.
  Status CheckBlobRef(const std::string& field, const std::string& sha, bool allow_empty) const;
  Result<Statement> Prepare(std::string_view sql) { return Statement::Prepare(db_.get(), db_path_, sql); }

  const fs::path dir_;
  const fs::path db_path_;
  std::mutex mu_;  // serializes use of db_ (and sqlite3_errmsg after a failure)
  SqlitePtr db_;
  const int version_;
};

}  // namespace kpilot::store
