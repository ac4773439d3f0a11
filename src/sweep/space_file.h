// The space file of `kpilot sweep` (docs/sweep.md, "The space file"): its layout in one place,
// read by the space executor (exec/space_executor.h) and written by the sweep (sweep/sweep.h).
// This half of the sweep module is its own library, kpilot_sweep_space, which needs only core,
// task and harness, so exec can link it without depending on the sweep's driver.
//
// A space file is one JSON object: a header (version, task, task_dir, candidate, workload,
// baseline, created, gpu, calibration, toolchain, timing) and "configs", one entry per
// configuration, written one entry per line. While a sweep runs, each batch's finished entries
// are appended to a journal beside it (FILE.journal, one entry per line); a whole-file rewrite
// folds the journal in and removes it.
//
// Readers take the typed view (Space, SpaceConfig). Writers keep the header and entries as JSON,
// so keys another tool added to a file (bench/spaces/add_static_mix.py) survive a resume.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "harness/harness.h"
#include "runner/protocol.h"
#include "task/task.h"
#include "toolchain/toolchain.h"

namespace kpilot {

// The header's "version"; a file with another one is not resumed.
inline constexpr int kSpaceFileVersion = 1;

// ---- Reading ----

// One configuration of a space file, as stored.
struct SpaceConfig {
  ParamValues params;
  std::string object_sha;
  std::string status;  // passed | incorrect | runtime_error | compile_error | timeout | suspicious | error | not_run
  std::string message;
  double compile_s = 0;
  std::vector<double> candidate_ms;        // every sample
  std::vector<double> baseline_ms;         // pair i taken next to candidate_ms[i]
  std::vector<KernelResources> resources;  // the ptxas report (cuda), for the optimizer's static findings
  nlohmann::json mixes =
      nlohmann::json::array();  // [{"kernel", "mix"}]: each kernel's SASS instruction mix, when stored
};

struct Space {
  std::filesystem::path file;
  std::string task;
  std::string workload;
  std::string baseline;     // what speedups are over ("reference", a baseline name)
  std::string gpu;          // the header's GPU name ("" when not recorded)
  Calibration calibration;  // the sweep's GPU ceilings (invalid when not recorded)
  std::vector<SpaceConfig> configs;
};

// Reads a space file. InvalidInput naming the file (and the config index) when it is not one.
Result<Space> LoadSpace(const std::filesystem::path& file);

// The verdict a stored status stands for. "not_run" (the sweep was interrupted) and "error" (the
// runner failed on it: kpilot's or the machine's fault) are runtime errors: nothing is known of
// the candidate, so a search sees a failure. InvalidInput for a status no sweep writes.
Result<VerdictKind> SpaceVerdict(const std::string& status);

// ---- Writing ----

// What a new space file's header records about the sweep; the file's own identity.
struct SpaceIdentity {
  std::string task;
  std::filesystem::path task_dir;   // written absolute
  std::filesystem::path candidate;  // written absolute
  std::string workload;
  std::string baseline;  // the task's baseline name ("reference" when it has none)
};

// The header of a new space file: version, the identity and `created` (ISO 8601, UTC). The sweep
// adds gpu, calibration, toolchain and timing on every run.
nlohmann::json NewSpaceHeader(const SpaceIdentity& id, const std::string& created);

// Whether `status` is final (an evaluation's or compile_error); "" and "not_run" are not.
bool FinalSpaceStatus(const std::string& status);

// A configuration not evaluated yet: {"params": …, "status": "not_run"}.
nlohmann::json NotRunEntry(const ParamValues& params);

// One kernel's entry in a configuration's "resources": its ptxas report, and its SASS instruction
// mix (profile's ToJson(InstructionMix)) unless `mix` is null.
nlohmann::json ResourceEntry(const KernelResources& r, const nlohmann::json& mix);

// The entry fields that come from evaluating an object: status, message (the verdict's summary)
// and, when the run was timed, every sample, both medians, the speedup and the paired speedup.
nlohmann::json EvaluatedFields(const RunResult& run);

// Those of EvaluatedFields' keys that `entry` has: what is copied to every configuration that
// compiled to the same object.
nlohmann::json EvaluatedPart(const nlohmann::json& entry);

// The key under which an entry's params are matched on resume: the "params" object as JSON text.
std::string SpaceEntryKey(const nlohmann::json& params);

// The file's text: `header` (without "configs") pretty-printed, then "configs" with one entry
// per line, so the file stays readable and diffs between runs stay small.
std::string SpaceFileText(const nlohmann::json& header, const std::vector<nlohmann::json>& entries);

// SpaceFileText written atomically to `file`; the journal beside it is then removed (folded in:
// a stale journal would only repeat entries). Errors name the file.
Status WriteSpaceFile(const std::filesystem::path& file, const nlohmann::json& header,
                      const std::vector<nlohmann::json>& entries);

// FILE.journal for a space file FILE.
std::filesystem::path SpaceJournalPath(const std::filesystem::path& file);

// Appends `entries` to FILE.journal, one per line. Internal naming the journal when it cannot.
Status AppendSpaceJournal(const std::filesystem::path& file, const std::vector<nlohmann::json>& entries);

// An existing space file as a sweep resumes it: its header without "configs", and its entries by
// SpaceEntryKey with the journal's lines applied over them (the journal is newer). A journal line
// that is not an entry (a write cut short by a kill) is skipped and counted.
struct SpaceFileEntries {
  nlohmann::json header;
  std::map<std::string, nlohmann::json> entries;
  size_t journal_lines_skipped = 0;
};
// InvalidInput when `file` cannot be read or is not a space file of kSpaceFileVersion; a missing
// journal is no error.
Result<SpaceFileEntries> ReadSpaceFileEntries(const std::filesystem::path& file);

}  // namespace kpilot
