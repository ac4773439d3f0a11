#include "store/skill_usage.h"

#include <cmath>

#include "store/sqlite.h"

namespace kpilot {

Status InsertSkillUsage(sqlite3* db, const std::filesystem::path& db_path, const std::vector<SkillUsageRecord>& rows,
                        const std::string& now) {
  for (const SkillUsageRecord& r : rows) {
    if (r.kind != "card" && r.kind != "tool")
      return Status::InvalidInput("skill usage: kind must be \"card\" or \"tool\", got \"" + r.kind + "\"");
    if (r.name.empty()) return Status::InvalidInput("skill usage: name is empty");
    if (!std::isfinite(r.speedup) || r.speedup < 0) {
      return Status::InvalidInput("skill usage " + r.name + ": speedup must be a finite number >= 0, got " +
                                  std::to_string(r.speedup));
    }
  }
  if (rows.empty()) return Status::Ok();
  Result<std::unique_ptr<Transaction>> txn = Transaction::Begin(db, db_path);
  if (!txn.ok()) return txn.status().WithContext("recording skill usage");
  for (const SkillUsageRecord& r : rows) {
    Result<Statement> stmt =
        Statement::Prepare(db, db_path,
                           "INSERT INTO skill_usage (run_id, node, kind, name, fired, applied, speedup, created_at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!stmt.ok()) return stmt.status();
    stmt->BindInt(1, r.run_id).BindInt(2, r.node).BindText(3, r.kind).BindText(4, r.name);
    stmt->BindInt(5, r.fired ? 1 : 0).BindInt(6, r.applied ? 1 : 0).BindDouble(7, r.speedup);
    stmt->BindText(8, r.created_at.empty() ? now : r.created_at);
    KPILOT_RETURN_IF_ERROR(stmt->Run());
  }
  return (*txn)->Commit();
}

Result<std::vector<SkillUsageRecord>> SelectSkillUsage(sqlite3* db, const std::filesystem::path& db_path) {
  Result<Statement> stmt = Statement::Prepare(
      db, db_path,
      "SELECT id, run_id, node, kind, name, fired, applied, speedup, created_at FROM skill_usage ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  std::vector<SkillUsageRecord> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    SkillUsageRecord r;
    r.id = stmt->ColumnInt(0);
    r.run_id = stmt->ColumnInt(1);
    r.node = stmt->ColumnInt(2);
    r.kind = stmt->ColumnText(3);
    r.name = stmt->ColumnText(4);
    r.fired = stmt->ColumnInt(5) != 0;
    r.applied = stmt->ColumnInt(6) != 0;
    r.speedup = stmt->ColumnDouble(7);
    r.created_at = stmt->ColumnText(8);
    out.push_back(std::move(r));
  }
}

}  // namespace kpilot
