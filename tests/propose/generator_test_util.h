// Shared by the llm: and command: generator tests: the smallest file the ABI check accepts, and
// the context of a parent on the host saxpy example.
#pragma once

#include <string>

#include "propose/proposer.h"

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

}  // namespace kpilot::testing
