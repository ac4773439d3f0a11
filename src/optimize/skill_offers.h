// Inside the optimize module: the skill cards offered to the generator for each expansion, and
// the usage rows that say which were applied and what they did (docs/skills.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optimize/node.h"

namespace kpilot {

class SkillOffers {
 public:
  // Borrowed, may be null: `library` (no cards offered), `usage` (no statistics). Retrieval ranks
  // cards by their hit rate in `usage` (read once; statistics that cannot be read rank every card
  // at the prior, as for a card never applied).
  SkillOffers(const Task& task, const OptimizeOptions& opts, const SkillLibrary* library, UsageLog* usage);

  // The cards retrieval offers for expanding `node` (none with --skills off or no library);
  // remembered as offered for it.
  std::vector<OfferedSkill> For(int64_t node, const NodeData& n);
  // The cards offered for `parent` so far (recorded with each proposal).
  const std::vector<std::string>& Offered(int64_t parent) { return offered_[parent]; }
  // Resume: a recorded proposal's offered cards.
  void Restore(int64_t parent, std::vector<std::string> offered) { offered_[parent] = std::move(offered); }
  // One usage row set per evaluated child: cards offered for its parent and applied by its draft,
  // the parent's findings, and the child's speedup over the parent.
  Status RecordChild(int64_t run_id, int64_t node, const Draft& d, int64_t parent, const NodeData& parent_data,
                     const NodeData& child);

 private:
  const Task& task_;
  const OptimizeOptions& opts_;
  const SkillLibrary* library_;
  UsageLog* usage_;
  std::map<std::string, UsageStats> card_usage_;         // by card id
  std::map<int64_t, std::vector<std::string>> offered_;  // card ids by parent node
  std::map<std::string, std::string> card_text_;         // SKILL.md text by card id, read once per run
};

}  // namespace kpilot
