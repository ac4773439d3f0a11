// The torch_baselines table (schema 4), private to store/: the SQL behind
// Store::PutBaselineTiming and Store::GetBaselineTimings. The caller serializes access to `db`.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

namespace kpilot {

// Checks the row, then inserts or replaces it; `now` fills an empty created_at.
Status UpsertBaselineTiming(sqlite3* db, const std::filesystem::path& db_path, const BaselineTimingRecord& r,
                            const std::string& now);
Result<std::vector<BaselineTimingRecord>> SelectBaselineTimings(sqlite3* db, const std::filesystem::path& db_path,
                                                                const std::string& problem_sha, const std::string& gpu,
                                                                const std::string& torch, const std::string& timing);

}  // namespace kpilot
