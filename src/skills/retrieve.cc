// Retrieval: from a kernel's context (findings, class, task text, features, platform) to ranked
// cards, each with the reasons for its place.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "skills/skills.h"
#include "skills/text.h"

namespace kpilot {
namespace {

using skills_text::NormalizePhrase;
using skills_text::Terms;

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

const ContextFinding* FindFinding(const RetrievalContext& ctx, const std::string& id) {
  for (const auto& f : ctx.findings)
    if (f.id == id) return &f;
  return nullptr;
}

// Whether move `mv` applies in `ctx`; its reason in *reason.
bool MoveMatches(const ParamMove& mv, const RetrievalContext& ctx, std::string* reason) {
  if (mv.trigger_is_class) {
    *reason = "class " + mv.trigger;
    return ctx.roofline_class == mv.trigger;
  }
  const ContextFinding* f = FindFinding(ctx, mv.trigger);
  if (!f) return false;
  if (!mv.condition) {
    *reason = "finding " + mv.trigger;
    return true;
  }
  if (f->evidence.empty()) {
    *reason = "finding " + mv.trigger + " (condition `" + mv.condition->text + "` not checked: no evidence)";
    return true;
  }
  for (const auto& alt : mv.condition->alternatives) {
    std::string want = NormalizePhrase(alt);
    for (const auto& e : f->evidence) {
      if (NormalizePhrase(e).find(want) == std::string::npos) continue;
      *reason = "finding " + mv.trigger + " with evidence `" + e + "` (condition `" + mv.condition->text + "`)";
      return true;
    }
  }
  return false;
}

// Why `card` cannot be offered in `ctx`, or "" when it can.
std::string Excluded(const SkillCard& card, const RetrievalContext& ctx) {
  // A plain Agent Skill declares no scope: its description's relevance decides (Retrieve).
  if (card.text_only) return "";
  if (!ctx.platform.empty() && !Contains(card.scope_platforms, ctx.platform))
    return "platform " + ctx.platform + " not in scope [" + Join(card.scope_platforms) + "]";
  if (!ctx.language.empty() && !Contains(card.scope_languages, ctx.language))
    return "language " + ctx.language + " not in scope [" + Join(card.scope_languages) + "]";
  if (!ctx.dtypes.empty() && !card.scope_dtypes.empty() &&
      std::none_of(card.scope_dtypes.begin(), card.scope_dtypes.end(),
                   [&](const std::string& t) { return ctx.dtypes.count(t); }))
    return "element types " + Join(std::vector<std::string>(ctx.dtypes.begin(), ctx.dtypes.end())) + " not in scope [" +
           Join(card.scope_dtypes) + "]";
  std::vector<std::string> missing, clashing;
  for (const auto& f : card.requires_features)
    if (!ctx.features.count(f)) missing.push_back(f);
  for (const auto& f : card.conflicts)
    if (ctx.features.count(f)) clashing.push_back(f);
  if (!missing.empty()) return "requires " + Join(missing) + " (absent)";
  if (!clashing.empty()) return "conflicts with " + Join(clashing) + " (present)";
  return "";
}

}  // namespace

std::vector<double> Bm25Scores(const std::vector<std::string>& documents, const std::string& query) {
  constexpr double kK1 = 1.2, kB = 0.75;
  std::vector<std::map<std::string, int>> tf(documents.size());
  std::map<std::string, int> df;
  double total_length = 0;
  std::vector<double> length(documents.size());
  for (size_t d = 0; d < documents.size(); ++d) {
    std::vector<std::string> terms = Terms(documents[d]);
    length[d] = static_cast<double>(terms.size());
    total_length += length[d];
    for (const auto& t : terms) ++tf[d][t];
    for (const auto& [t, n] : tf[d]) ++df[t];
  }
  std::vector<double> scores(documents.size(), 0);
  if (documents.empty() || total_length == 0) return scores;
  double n_docs = static_cast<double>(documents.size());
  double avg_length = total_length / n_docs;
  std::vector<std::string> q = Terms(query);
  std::sort(q.begin(), q.end());
  q.erase(std::unique(q.begin(), q.end()), q.end());
  for (const auto& t : q) {
    auto it = df.find(t);
    if (it == df.end()) continue;
    double idf = std::log(1 + (n_docs - it->second + 0.5) / (it->second + 0.5));
    for (size_t d = 0; d < documents.size(); ++d) {
      auto f = tf[d].find(t);
      if (f == tf[d].end()) continue;
      double k = kK1 * (1 - kB + kB * length[d] / avg_length);
      scores[d] += idf * f->second * (kK1 + 1) / (f->second + k);
    }
  }
  return scores;
}

Retrieval Retrieve(const SkillLibrary& library, const RetrievalContext& ctx, const RetrieveOptions& options) {
  // Text relevance over the whole library, so a card's score does not depend on what is filtered.
  std::vector<std::string> docs;
  for (const auto& c : library.cards) {
    std::string doc = c.intent + "\n" + c.description;
    for (const auto& s : c.scope_cases) doc += "\n" + s;
    docs.push_back(std::move(doc));
  }
  std::string query = ctx.task_text;
  for (const auto& f : ctx.findings) query += "\n" + f.id + "\n" + f.guidance;
  std::vector<double> bm25 = Bm25Scores(docs, query);

  Retrieval out;
  const double n = static_cast<double>(ctx.findings.size());
  for (size_t i = 0; i < library.cards.size(); ++i) {
    const SkillCard& card = library.cards[i];
    if (std::string why = Excluded(card, ctx); !why.empty()) {
      out.excluded.push_back({card.id, why});
      continue;
    }
    RetrievedCard r;
    r.card = &card;
    r.tune_only =
        !card.provides.empty() && std::all_of(card.provides.begin(), card.provides.end(),
                                              [&](const std::string& f) { return ctx.features.count(f) > 0; });
    for (size_t k = 0; k < card.params.size(); ++k) {
      std::string reason;
      if (MoveMatches(card.params[k], ctx, &reason)) r.moves.push_back({k, reason});
    }
    if (card.text_only && (!options.text_only || bm25[i] <= 0)) {
      out.excluded.push_back({card.id, !options.text_only ? "a text-only card (this generator applies moves only)"
                                                          : "a text-only card whose description does not match"});
      continue;
    }
    if (r.tune_only && (!options.include_tune_only || r.moves.empty())) {
      out.excluded.push_back({card.id, "provides " + Join(card.provides) + " (present)" +
                                           (options.include_tune_only ? " and no params move matches" : "")});
      continue;
    }
    for (size_t rank = 0; rank < ctx.findings.size(); ++rank) {
      const std::string& id = ctx.findings[rank].id;
      if (!Contains(card.trigger_findings, id) || Contains(r.matched_findings, id)) continue;
      r.matched_findings.push_back(id);
      r.trigger_score += n - static_cast<double>(rank);
    }
    r.class_matched = !ctx.roofline_class.empty() && Contains(card.trigger_classes, ctx.roofline_class);
    if (r.class_matched) r.trigger_score += 0.5;
    r.bm25 = bm25[i];
    const UsageStats* usage = nullptr;
    if (options.usage) {
      auto it = options.usage->find(card.id);
      if (it != options.usage->end()) usage = &it->second;
    }
    r.hit_rate = usage ? usage->SmoothedHitRate() : UsageStats{}.SmoothedHitRate();
    std::string triggers;
    for (const auto& f : r.matched_findings) triggers += (triggers.empty() ? "" : ", ") + f;
    if (r.class_matched) triggers += (triggers.empty() ? "class " : ", class ") + ctx.roofline_class;
    r.reason = fmt::format("{}trigger {:g} ({}); bm25 {:.3f}; hit rate {:.2f} ({} of {} applied improved)",
                           r.tune_only ? "tune-only; " : "", r.trigger_score, triggers.empty() ? "none" : triggers,
                           r.bm25, r.hit_rate, usage ? usage->improved : 0, usage ? usage->applied : 0);
    out.cards.push_back(std::move(r));
  }
  std::sort(out.cards.begin(), out.cards.end(), [](const RetrievedCard& a, const RetrievedCard& b) {
    if (a.trigger_score != b.trigger_score) return a.trigger_score > b.trigger_score;
    if (std::abs(a.bm25 - b.bm25) > 1e-9) return a.bm25 > b.bm25;
    if (a.hit_rate != b.hit_rate) return a.hit_rate > b.hit_rate;
    return a.card->id < b.card->id;
  });
  if (options.limit && out.cards.size() > options.limit) out.cards.resize(options.limit);
  return out;
}

nlohmann::json ToJson(const RetrievedCard& r) {
  nlohmann::json moves = nlohmann::json::array();
  for (const auto& m : r.moves) {
    const ParamMove& mv = r.card->params[m.index];
    nlohmann::json j = {
        {"param", mv.param}, {"move", MoveDirectionName(mv.move)}, {"when", mv.when}, {"reason", m.reason}};
    if (mv.value) j["value"] = *mv.value;
    moves.push_back(std::move(j));
  }
  return {{"id", r.card->id},
          {"intent", r.card->intent},
          {"tune_only", r.tune_only},
          {"trigger_score", r.trigger_score},
          {"matched_findings", r.matched_findings},
          {"class_matched", r.class_matched},
          {"bm25", r.bm25},
          {"hit_rate", r.hit_rate},
          {"moves", moves},
          {"reason", r.reason},
          {"source", r.card->source.string()},
          {"origin", SkillOriginName(r.card->origin)}};
}

}  // namespace kpilot
