#include "store/torch_baselines.h"

#include <cmath>

#include "store/sqlite.h"

namespace kpilot {

Status UpsertBaselineTiming(sqlite3* db, const std::filesystem::path& db_path, const BaselineTimingRecord& r,
                            const std::string& now) {
  if (r.baseline != "eager" && r.baseline != "compile")
    return Status::InvalidInput("baseline timing: baseline must be \"eager\" or \"compile\", got \"" + r.baseline +
                                "\"");
  for (const auto* field : {&r.problem_sha, &r.gpu, &r.torch, &r.timing, &r.workload})
    if (field->empty())
      return Status::InvalidInput("baseline timing: problem_sha, gpu, torch, timing and workload must all be set");
  if (!std::isfinite(r.ms) || r.ms <= 0)
    return Status::InvalidInput("baseline timing " + r.workload + ": ms must be a finite number > 0, got " +
                                std::to_string(r.ms));
  Result<Statement> stmt = Statement::Prepare(
      db, db_path,
      "INSERT INTO torch_baselines (problem_sha, gpu, torch, baseline, timing, workload, ms, statistic, samples_json, "
      "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (problem_sha, gpu, torch, baseline, timing, workload) DO UPDATE SET ms = excluded.ms, "
      "statistic = excluded.statistic, samples_json = excluded.samples_json, created_at = excluded.created_at");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, r.problem_sha).BindText(2, r.gpu).BindText(3, r.torch).BindText(4, r.baseline);
  stmt->BindText(5, r.timing).BindText(6, r.workload).BindDouble(7, r.ms).BindText(8, r.statistic);
  stmt->BindText(9, r.samples_json.empty() ? "[]" : r.samples_json);
  stmt->BindText(10, r.created_at.empty() ? now : r.created_at);
  return stmt->Run();
}

Result<std::vector<BaselineTimingRecord>> SelectBaselineTimings(sqlite3* db, const std::filesystem::path& db_path,
                                                                const std::string& problem_sha, const std::string& gpu,
                                                                const std::string& torch, const std::string& timing) {
  Result<Statement> stmt = Statement::Prepare(
      db, db_path,
      "SELECT problem_sha, gpu, torch, baseline, timing, workload, ms, statistic, samples_json, created_at "
      "FROM torch_baselines WHERE problem_sha = ?1 AND gpu = ?2 AND torch = ?3 AND timing = ?4 "
      "ORDER BY baseline, workload");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, problem_sha).BindText(2, gpu).BindText(3, torch).BindText(4, timing);
  std::vector<BaselineTimingRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    BaselineTimingRecord r;
    r.problem_sha = stmt->ColumnText(0);
    r.gpu = stmt->ColumnText(1);
    r.torch = stmt->ColumnText(2);
    r.baseline = stmt->ColumnText(3);
    r.timing = stmt->ColumnText(4);
    r.workload = stmt->ColumnText(5);
    r.ms = stmt->ColumnDouble(6);
    r.statistic = stmt->ColumnText(7);
    r.samples_json = stmt->ColumnText(8);
    r.created_at = stmt->ColumnText(9);
    out.push_back(std::move(r));
  }
}

}  // namespace kpilot
