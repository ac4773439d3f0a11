// The runs of `kpilot optimize` in the store (schema 2): the runs, run_nodes and run_events tables.
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "core/text.h"
#include "store/sqlite_store.h"

namespace kpilot::store {
namespace {

RunRecord ReadRun(const Statement& st) {
  RunRecord r;
  r.id = st.ColumnInt(0);
  r.task_name = st.ColumnText(1);
  r.task_dir = st.ColumnText(2);
  r.config_json = st.ColumnText(3);
  r.status = st.ColumnText(4);
  r.stop_reason = st.ColumnText(5);
  r.best_speedup = st.ColumnDouble(6);
  r.best_node = st.ColumnInt(7);
  r.created_at = st.ColumnText(8);
  r.updated_at = st.ColumnText(9);
  return r;
}

constexpr const char* kRunColumns =
    "id, task_name, task_dir, config_json, status, stop_reason, best_speedup, best_node, created_at, updated_at";

}  // namespace

Result<int64_t> SqliteStore::CreateRun(const RunRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO runs (task_name, task_dir, config_json, status, stop_reason, best_speedup, best_node, "
      "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8) RETURNING id");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, r.task_name).BindText(2, r.task_dir).BindText(3, r.config_json).BindText(4, r.status);
  stmt->BindText(5, r.stop_reason)
      .BindDouble(6, r.best_speedup)
      .BindInt(7, r.best_node)
      .BindText(8, UtcNow(UtcPrecision::kMillis));
  return StepForId(*stmt);
}

Status SqliteStore::UpdateRun(const RunRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "UPDATE runs SET status = ?2, stop_reason = ?3, best_speedup = ?4, best_node = ?5, updated_at = ?6 "
      "WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, r.id).BindText(2, r.status).BindText(3, r.stop_reason).BindDouble(4, r.best_speedup);
  stmt->BindInt(5, r.best_node).BindText(6, UtcNow(UtcPrecision::kMillis));
  return stmt->Run();
}

Result<std::optional<RunRecord>> SqliteStore::GetRun(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, id);
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(ReadRun(*stmt));
}

Result<std::vector<RunRecord>> SqliteStore::ListRuns() {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  std::vector<RunRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(ReadRun(*stmt));
  }
}

Status SqliteStore::AddRunNode(const RunNodeRecord& n) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO run_nodes (run_id, node, parent, proposal, evaluation_id, source_name, source_blob, params_json, "
      "summary, finding, verdict, speedup, result_blob, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, n.run_id).BindInt(2, n.node).BindInt(3, n.parent).BindInt(4, n.proposal);
  stmt->BindInt(5, n.evaluation_id).BindText(6, n.source_name).BindText(7, n.source_blob);
  stmt->BindText(8, n.params_json).BindText(9, n.summary).BindText(10, n.finding).BindText(11, n.verdict);
  stmt->BindDouble(12, std::isfinite(n.speedup) ? n.speedup : 0).BindText(13, n.result_blob);
  stmt->BindText(14, n.created_at.empty() ? UtcNow(UtcPrecision::kMillis) : n.created_at);
  return stmt->Run();
}

Result<std::vector<RunNodeRecord>> SqliteStore::ListRunNodes(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "SELECT run_id, node, parent, proposal, evaluation_id, source_name, source_blob, params_json, summary, "
      "finding, verdict, speedup, result_blob, created_at FROM run_nodes WHERE run_id = ?1 ORDER BY node");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, run_id);
  std::vector<RunNodeRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    RunNodeRecord n;
    n.run_id = stmt->ColumnInt(0);
    n.node = stmt->ColumnInt(1);
    n.parent = stmt->ColumnInt(2);
    n.proposal = stmt->ColumnInt(3);
    n.evaluation_id = stmt->ColumnInt(4);
    n.source_name = stmt->ColumnText(5);
    n.source_blob = stmt->ColumnText(6);
    n.params_json = stmt->ColumnText(7);
    n.summary = stmt->ColumnText(8);
    n.finding = stmt->ColumnText(9);
    n.verdict = stmt->ColumnText(10);
    n.speedup = stmt->ColumnDouble(11);
    n.result_blob = stmt->ColumnText(12);
    n.created_at = stmt->ColumnText(13);
    out.push_back(std::move(n));
  }
}

Result<int64_t> SqliteStore::AddRunEvent(int64_t run_id, const std::string& kind, const std::string& payload_json) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt = Prepare(
      "INSERT INTO run_events (run_id, seq, kind, payload_json, created_at) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?1), ?2, ?3, ?4) RETURNING seq");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, run_id).BindText(2, kind).BindText(3, payload_json).BindText(4, UtcNow(UtcPrecision::kMillis));
  return StepForId(*stmt);
}

Result<std::vector<RunEventRecord>> SqliteStore::ListRunEvents(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Statement> stmt =
      Prepare("SELECT run_id, seq, kind, payload_json, created_at FROM run_events WHERE run_id = ?1 ORDER BY seq");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, run_id);
  std::vector<RunEventRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(
        {stmt->ColumnInt(0), stmt->ColumnInt(1), stmt->ColumnText(2), stmt->ColumnText(3), stmt->ColumnText(4)});
  }
}

}  // namespace kpilot::store
