// Loading a native task folder (task.toml) into a Task.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"
#include "task/task.h"

namespace kpilot {

// Loads and validates `dir/task.toml` (or a path to a task.toml file). Every problem found is
// reported, one per line, as "task.toml:LINE: field: problem — how to fix" in an InvalidInput
// status; a missing folder or file is NotFound. Validates: required fields, dtypes, init
// distributions and their parameters, shapes over axes bound by every workload, scalar values,
// tolerances (non-negative; matched_ratio in (0,1]), duplicate names (tensors, scalars,
// workloads, params), formulas that do not parse or use unknown names, params and constraints,
// and that every referenced source file exists. Flops and bytes are evaluated per workload.
Result<Task> LoadTask(const std::filesystem::path& dir_or_file);

}  // namespace kpilot
