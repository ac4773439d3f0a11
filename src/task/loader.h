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

// Tunable params a candidate declares itself (docs/task-format.md, "Candidate-declared params"),
// for tasks that declare none (KernelBench problems, flashinfer definitions): a block comment
//   /* kpilot-params
//   BLOCK = [64, 128, 256]
//   constraints = ["BLOCK * VEC <= 1024"]
//   */
// whose body is TOML with task.toml's [params] rules plus an optional `constraints` key.
struct CandidateParams {
  bool declared = false;             // the source has a kpilot-params block
  int line = 0;                      // where the block starts
  std::vector<TunableParam> params;  // in declaration order; lines are the source's
  std::vector<std::string> constraints;
};
// Pure: finds and checks the first kpilot-params block of `source_text`. No block → declared
// false. Every problem is reported, one per line, as "FILE:LINE: params.NAME: problem — fix"
// (InvalidInput), with `file_name` and the source's own line numbers.
Result<CandidateParams> ParseCandidateParams(const std::string& source_text, const std::string& file_name);
// The same for a file (NotFound when it cannot be read).
Result<CandidateParams> ReadCandidateParams(const std::filesystem::path& source);
// When `task` declares no params, gives it those `candidate` declares (if any); a task's own
// params win. Errors are the candidate's block's.
Status AdoptCandidateParams(Task* task, const std::filesystem::path& candidate);

// Params given for a candidate of `task` (-D flags, an agent's evaluate) checked against its
// declared params: each name declared (when any is), each value one of its values, and every
// constraint whose params are all given held. An unset param keeps the candidate's own #ifndef
// default, which kpilot does not see, so a constraint naming one is not checked. InvalidInput
// "NAME=VALUE: …" or "PARAMS breaks the constraint …" otherwise.
Status CheckParams(const Task& task, const ParamValues& params);

}  // namespace kpilot
