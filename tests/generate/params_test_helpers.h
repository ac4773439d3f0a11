// Helpers shared by the params generator's tests (params_generator_test.cc, params_search_test.cc):
// constructed tasks, one Propose call, what a draft changed.
#pragma once

#include "generate/params_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "generate/param_moves.h"
#include "generate/param_space.h"
#include "task/formula.h"
#include "task/loader.h"

namespace kpilot::testing_params {

inline Task MakeTask(std::vector<TunableParam> params, std::vector<std::string> constraints = {}) {
  Task t;
  t.name = "t";
  t.backend = Backend::kCuda;
  t.params = std::move(params);
  t.constraints = std::move(constraints);
  return t;
}

inline Finding MakeFinding(std::string id, nlohmann::json evidence = nlohmann::json::object(), double severity = 0.5) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.evidence = std::move(evidence);
  return f;
}

inline ProposalContext MakeContext(ParamValues parent, std::vector<Finding> findings, int k = 1, uint64_t seed = 1) {
  ProposalContext ctx;
  ctx.parent_source = "// kernel";
  ctx.parent_source_name = "kernel.cu";
  ctx.parent_params = std::move(parent);
  ctx.findings = std::move(findings);
  ctx.k = k;
  ctx.seed = seed;
  return ctx;
}

inline std::vector<Draft> Propose(const Task& task, const ProposalContext& ctx) {
  auto r = ProposeParams(task, ctx);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Draft>{};
}

// The param a draft changed relative to `parent` (with defaults), "" when none or several.
inline std::string Changed(const Task& task, const ParamValues& parent, const Draft& d) {
  ParamValues p = WithDefaults(task, parent);
  std::string changed;
  for (const auto& [name, value] : d.params) {
    if (p.at(name) == value) continue;
    if (!changed.empty()) return "";
    changed = name;
  }
  return changed;
}

inline const Task& GemmLikeTask() {
  static const Task task = MakeTask({{"BM", {"64", "128", "256"}},
                                     {"BK", {"16", "32", "64"}},
                                     {"TM", {"4", "8"}},
                                     {"STAGES", {"2", "3", "4"}},
                                     {"UNROLL", {"1", "2", "4"}},
                                     {"MIN_BLOCKS", {"1", "2", "3"}},
                                     {"VEC", {"1", "2", "4"}}});
  return task;
}
inline const ParamValues kGemmParent = {{"BM", "128"},   {"BK", "32"},        {"TM", "8"}, {"STAGES", "3"},
                                        {"UNROLL", "2"}, {"MIN_BLOCKS", "2"}, {"VEC", "2"}};

}  // namespace kpilot::testing_params
