// Internal to src/generate: the rules that map a profile finding to moves of param roles, as the
// params generator (params_generator.cc) applies them; finding_rules.cc holds the tables. Not part
// of the module's contract: include params_generator.h instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"
#include "generate/params_generator.h"

namespace kpilot::generate {

// Findings to moves. A finding takes the first row whose `id` is a substring of its id and whose
// conditions hold. A row without moves says params cannot fix the finding (`no_fix` says what
// would). docs/generate.md mirrors this table.

struct Move {
  ParamRole role;
  int dir;          // +1: later in the declared order ("up"), −1: earlier
  const char* why;  // the expected effect, completing "…; <why>"
  // The role moved instead when the space has no param of `role` (a kernel without a register
  // tile keeps its accumulators per block tile, so the block tile stands in for it).
  ParamRole fallback = ParamRole::kOther;
};

struct Rule {
  const char* id;
  const char* limiter = nullptr;  // substring of evidence["limiter"]; "" = evidence names none
  const char* stall = nullptr;    // substring of the dominant stall reason (DominantStall)
  std::vector<Move> moves;
  const char* no_fix = "";
};

// The move of a compute-bound parent (ProposalContext::bottleneck) when no finding maps to a param.
inline const Move kComputeBoundMove = {ParamRole::kRegisterTile, +1,
                                       "larger tiles do more arithmetic per loaded element", ParamRole::kTile};

bool ContainsNoCase(std::string_view haystack, std::string_view needle);

// The rule for a finding: the first whose id is a substring of the finding's id and whose limiter
// and stall conditions hold; nullptr when none does.
const Rule* MatchRule(const Finding& f);

// What the finding measured, in a few words from its evidence ("theoretical occupancy is 25%,
// limited by registers"); its severity when no known number is there.
std::string Measured(const Finding& f);

}  // namespace kpilot::generate
