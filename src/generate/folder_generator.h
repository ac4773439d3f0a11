// The `folder:DIR` generator: drafts read from a folder, one per candidate file, in file-name
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
// "folder: FILE".
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "generate/generator.h"
#include "task/task.h"

namespace kpilot {

struct DraftFile {
  std::filesystem::path source;  // the candidate file
  ParamValues params;            // from the sidecar, else empty
  std::string summary;           // from the sidecar, else "folder: FILE"
  std::string finding;           // from the sidecar, else ""
};

// The entries of `dir` for `task`, in file-name order, sidecars parsed. Errors name the folder or
// file and the fix: NotFound for a missing folder; InvalidInput for a path that is not a folder,
// a folder without candidate files of the task's extension, a sidecar that is not valid JSON
// ("DIR/NAME.json:LINE: …"), or one with unknown keys or values of the wrong type.
Result<std::vector<DraftFile>> ReadDraftFolder(const std::filesystem::path& dir, const Task& task);

class FolderGenerator : public Generator {
 public:
  // `spec` is the name reported by name(), e.g. "folder:runs/7".
  FolderGenerator(std::string spec, std::vector<DraftFile> entries);
  std::string name() const override { return spec_; }
  // The next min(ctx.k, remaining) entries, read from disk now; an empty list once every entry
  // has been proposed. A candidate file that can no longer be read is an error (the entry counts
  // as used). Safe to call from several threads; each entry is proposed once.
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override;
  size_t remaining() const;

 private:
  std::string spec_;
  std::vector<DraftFile> entries_;
  mutable std::mutex mu_;
  size_t next_ = 0;  // guarded by mu_
};

// "folder:DIR" → a FolderGenerator over ReadDraftFolder(DIR, task).
Result<std::unique_ptr<Generator>> MakeFolderGenerator(const std::string& spec, const Task& task);

}  // namespace kpilot
