// The `replay:DIR` proposer: drafts read from a folder, one per candidate file, in file-name
// order, whatever the parent — for replaying a recorded run, scripted experiments and tests.
//
// Folder layout:
//   DIR/010_vec4.cu         a candidate: every regular file with the task's extension (.cu for
//                           cuda tasks, .cpp for host tasks), hidden files excepted
//   DIR/010_vec4.json       optional sidecar (also accepted as 010_vec4.cu.json, not both):
//                           {"params": {"VEC": 4}, "summary": "…", "finding": "scalar-global-loads"}
//                           params values are strings or numbers (passed as -DNAME=VALUE as
//                           written); every key is optional; other keys are errors.
// Files of other extensions are ignored. Without a sidecar a draft has no params and the summary
// "replay: FILE".
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "propose/proposer.h"
#include "task/task.h"

namespace kpilot {

struct ReplayEntry {
  std::filesystem::path source;   // the candidate file
  ParamValues params;             // from the sidecar, else empty
  std::string summary;            // from the sidecar, else "replay: FILE"
  std::string finding;            // from the sidecar, else ""
};

// The entries of `dir` for `task`, in file-name order, sidecars parsed. Errors name the folder or
// file and the fix: NotFound for a missing folder; InvalidInput for a path that is not a folder,
// a folder without candidate files of the task's extension, a sidecar that is not valid JSON
// ("DIR/NAME.json:LINE: …"), or one with unknown keys or values of the wrong type.
Result<std::vector<ReplayEntry>> ReadReplayFolder(const std::filesystem::path& dir, const Task& task);

class ReplayProposer : public Proposer {
 public:
  // `spec` is the name reported by name(), e.g. "replay:runs/7".
  ReplayProposer(std::string spec, std::vector<ReplayEntry> entries);
  std::string name() const override { return spec_; }
  // The next min(ctx.k, remaining) entries, read from disk now; an empty list once every entry
  // has been proposed. A candidate file that can no longer be read is an error (the entry counts
  // as used). Safe to call from several threads; each entry is proposed once.
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override;
  size_t remaining() const;

 private:
  std::string spec_;
  std::vector<ReplayEntry> entries_;
  mutable std::mutex mu_;
  size_t next_ = 0;  // guarded by mu_
};

// "replay:DIR" → a ReplayProposer over ReadReplayFolder(DIR, task).
Result<std::unique_ptr<Proposer>> MakeReplayProposer(const std::string& spec, const Task& task);

}  // namespace kpilot
