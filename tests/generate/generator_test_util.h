// Shared by the llm: and command: generator tests: the smallest file the ABI check accepts, and
// the context of a parent on the host saxpy example.
#pragma once

#include <string>

#include "core/fs.h"
#include "generate/generator.h"
#include "test_paths.h"

namespace kpilot::testing {

inline const std::string kMinimalKernel = R"(#include <kpilot/kernel.h>
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* in, int ni, const kpilot_tensor* out, int no,
                                const kpilot_scalar* s, int ns, void* stream) { return 0; }
)";

// A parent of `task` with one finding, CHUNK=4096 VEC=8, asking for one draft.
inline ProposalContext ParentContext(const Task& task, const std::string& source) {
  ProposalContext c;
  c.task = &task;
  c.parent_source = source;
  c.parent_source_name = "omp_simd.cpp";
  c.parent_params = {{"CHUNK", "4096"}, {"VEC", "8"}};
  c.parent_verdict = "passed";
  Finding f;
  f.id = "scalar-global-loads";
  f.guidance = "use wider loads";
  c.findings = {f};
  c.k = 1;
  return c;
}

// A card of the built-in library (skills/ID/SKILL.md) as retrieval would offer it: its whole
// text, its folder and the intent line of its front matter.
inline OfferedSkill BuiltinCard(const std::string& id, bool tune_only = false) {
  OfferedSkill s;
  s.id = id;
  s.folder = SourceDir() / "skills" / id;
  auto text = ReadFile(s.folder / "SKILL.md");
  s.card_text = text.ok() ? *text : "";
  size_t at = s.card_text.find("\nintent: ");
  if (at != std::string::npos) s.intent = s.card_text.substr(at + 9, s.card_text.find('\n', at + 1) - at - 9);
  s.tune_only = tune_only;
  s.reason = "REASON-" + id;
  return s;
}

}  // namespace kpilot::testing
