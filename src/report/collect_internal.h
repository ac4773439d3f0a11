// Shared by the report's collectors (collect.cc, collect_other.cc); not part of report.h's contract.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace kpilot::report::internal {

// `text` as a JSON object; {} when it is not one (a record written before a field existed).
nlohmann::json ParseObject(const std::string& text);
// `text` cut to `max_bytes` (0: whole) on a UTF-8 boundary, saying how much was left out.
std::string Cut(const std::string& text, size_t max_bytes);
// What every model starts with: the run's row, its shown status and a note when it did not finish.
nlohmann::json RunHeader(Store& store, const RunRecord& run);

Result<nlohmann::json> CollectRun(Store& store, const RunRecord& run, const CollectOptions& options);
Result<nlohmann::json> CollectBench(Store& store, const RunRecord& run);
Result<nlohmann::json> CollectLineage(Store& store, const RunRecord& run, const CollectOptions& options);

}  // namespace kpilot::report::internal
