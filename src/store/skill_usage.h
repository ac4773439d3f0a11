// The skill_usage table (schema 3), private to store/: the SQL behind Store::AddSkillUsage and
// Store::ListSkillUsage, kept out of store.cc. The caller serializes access to `db`.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

namespace kpilot {

// Checks every row, then inserts them in one transaction; `now` fills empty created_at.
Status InsertSkillUsage(sqlite3* db, const std::filesystem::path& db_path, const std::vector<SkillUsageRecord>& rows,
                        const std::string& now);
Result<std::vector<SkillUsageRecord>> SelectSkillUsage(sqlite3* db, const std::filesystem::path& db_path);

}  // namespace kpilot
