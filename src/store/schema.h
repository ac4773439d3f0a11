// The store's schema and its forward migrations, private to store/.
//
// The schema version lives in PRAGMA user_version. Migration N takes a database at version N-1
// to version N; each runs in its own write transaction that also sets user_version, so a crash
// leaves the database at a whole version. Migrations are only ever appended: a released step is
// never edited, because databases in the wild already hold its result.
#pragma once

#include <sqlite3.h>

#include <filesystem>

#include "core/status.h"

namespace kpilot {

// The newest schema version this build knows (the number of migration steps).
int LatestStoreSchemaVersion();

// Brings the database at `db_path` (already open as `db`) up to LatestStoreSchemaVersion() and
// returns the version it ends at. Safe when several processes open the same new store at once:
// each step re-reads user_version under the write lock and skips work another process has done.
// A database newer than this build → InvalidInput naming both versions and the fix.
Result<int> MigrateStore(sqlite3* db, const std::filesystem::path& db_path);

}  // namespace kpilot
