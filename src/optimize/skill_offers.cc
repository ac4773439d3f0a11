// Skill cards offered per expansion and their usage (skill_offers.h).
#include "optimize/skill_offers.h"

#include <algorithm>

#include "core/fs.h"

namespace kpilot {

using nlohmann::json;

namespace {

// Cards retrieval offers per expansion (the generators show fewer: llm: its top 3).
constexpr size_t kSkillsOffered = 8;

// A finding's evidence as the strings retrieval matches a card move's condition against: every
// string value, alone ("long_scoreboard") and with its key ("limiter: shared memory").
std::vector<std::string> EvidenceStrings(const json& evidence) {
  std::vector<std::string> out;
  if (!evidence.is_object()) return out;
  for (const auto& [key, value] : evidence.items())
    if (value.is_string()) {
      out.push_back(value.get<std::string>());
      out.push_back(key + ": " + value.get<std::string>());
    }
  return out;
}

}  // namespace

SkillOffers::SkillOffers(const Task& task, const OptimizeOptions& opts, const SkillLibrary* library, UsageLog* usage)
    : task_(task), opts_(opts), library_(library), usage_(usage) {
  if (usage_ && opts_.skills)
    if (auto stats = ReadUsageStats(*usage_); stats.ok())
      for (auto& u : *stats)
        if (u.kind == "card") card_usage_[u.name] = u;
}

std::vector<OfferedSkill> SkillOffers::For(int64_t node, const NodeData& n) {
  std::vector<OfferedSkill> out;
  if (!opts_.skills || !library_) return out;
  RetrievalContext rc;
  // Cards are matched to the parent's findings only when the tools' guidance is pushed to the
  // generator: under the feedback and guidance ablations a card's trigger would leak the finding.
  if (opts_.feedback == FeedbackMode::kTools && opts_.guidance == GuidanceMode::kProactive) {
    for (const auto& f : n.findings) rc.findings.push_back({f.id, EvidenceStrings(f.evidence), f.guidance});
    rc.roofline_class = n.bottleneck;
  }
  rc.task_text = task_.name + ". " + task_.description;
  // What the parent's code already has: cards that require a feature need it present, cards
  // whose provides are all present become tune-only.
  rc.features = DetectFeatures(n.source);
  rc.language = task_.backend == Backend::kCuda ? "cuda" : "cpp";
  rc.platform = task_.backend == Backend::kCuda ? opts_.arch : "";
  for (const auto& t : task_.inputs) rc.dtypes.insert(std::string(DTypeName(t.dtype)));
  for (const auto& t : task_.outputs) rc.dtypes.insert(std::string(DTypeName(t.dtype)));
  if (task_.compute_precision) rc.dtypes.insert(std::string(DTypeName(*task_.compute_precision)));
  RetrieveOptions ro;
  ro.limit = kSkillsOffered;
  // Text-only cards (plain Agent Skills) are for generators that read: llm: and command:.
  ro.text_only = opts_.generator.rfind("llm:", 0) == 0 || opts_.generator.rfind("command:", 0) == 0;
  ro.usage = &card_usage_;
  Retrieval r = Retrieve(*library_, rc, ro);
  auto& offered = offered_[node];
  for (const RetrievedCard& rcard : r.cards) {
    OfferedSkill s;
    s.id = rcard.card->id;
    s.intent = rcard.card->intent;
    s.tune_only = rcard.tune_only;
    s.reason = rcard.reason;
    s.folder = rcard.card->source.parent_path();
    auto [text, unread] = card_text_.try_emplace(s.id);
    if (unread) {
      auto read = ReadFile(rcard.card->source);
      text->second = read.ok() ? *read : "";
    }
    s.card_text = text->second;
    for (const MatchedMove& m : rcard.moves) {
      const ParamMove& pm = rcard.card->params.at(m.index);
      s.moves.push_back(
          {pm.param, std::string(MoveDirectionName(pm.move)), pm.value.value_or(""), pm.trigger, m.reason});
    }
    if (std::find(offered.begin(), offered.end(), s.id) == offered.end()) offered.push_back(s.id);
    out.push_back(std::move(s));
  }
  return out;
}

Status SkillOffers::RecordChild(int64_t run_id, int64_t node, const Draft& d, int64_t parent,
                                const NodeData& parent_data, const NodeData& child) {
  if (!usage_ || !opts_.skills) return Status::Ok();
  UsageEvent ev;
  ev.run_id = run_id;
  ev.node = node;
  if (auto it = offered_.find(parent); it != offered_.end()) ev.cards_offered = it->second;
  ev.cards_applied = d.skills_applied;
  for (const auto& f : parent_data.findings)
    if (std::find(ev.findings_fired.begin(), ev.findings_fired.end(), f.id) == ev.findings_fired.end())
      ev.findings_fired.push_back(f.id);
  if (!d.targeted_finding.empty()) ev.findings_applied.push_back(d.targeted_finding);
  if (parent_data.speedup > 0 && child.speedup > 0) ev.speedup = child.speedup / parent_data.speedup;
  if (ev.cards_offered.empty() && ev.cards_applied.empty() && ev.findings_fired.empty() && ev.findings_applied.empty())
    return Status::Ok();
  return RecordUsage(*usage_, ev);
}

}  // namespace kpilot
