// Accepted lineage steps reversed into skill cards (skills/README.md's format), their consistency
// with the feature states, and their rendering to SKILL.md.
#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/fs.h"
#include "lineage/lineage.h"

namespace kpilot::lineage {
namespace {

using ojson = nlohmann::ordered_json;

std::string Kebab(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of `text` whose numbers are in `which`, with "// …" between runs; at most `limit`.
std::string Excerpt(const std::string& text, const std::set<int>& which, size_t limit) {
  std::vector<std::string> lines = Lines(text);
  std::string out;
  int last = 0;
  size_t taken = 0;
  for (int n : which) {
    if (taken == limit) {
      out += "// …\n";
      break;
    }
    if (last && n != last + 1) out += "// …\n";
    out += lines[static_cast<size_t>(n - 1)] + "\n";
    last = n;
    ++taken;
  }
  return out.empty() ? "// (no line of its own)\n" : out;
}

ojson Array(const std::vector<std::string>& v) {
  ojson a = ojson::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

ojson Array(const FeatureSet& v) { return Array(std::vector<std::string>(v.begin(), v.end())); }

std::string YamlString(const std::string& s) { return ojson(s).dump(-1, ' ', false, ojson::error_handler_t::replace); }

SkillCard CardFromStep(const Step& s, const Provenance& pv, const std::string& id) {
  const Proposal& p = s.proposal;
  const DraftCard& d = p.card;
  FeatureSet requires_set = d.requires_features.empty()
                                ? p.after_features
                                : FeatureSet(d.requires_features.begin(), d.requires_features.end());
  FeatureSet conflicts;
  for (const auto& c : d.conflicts)
    if (!p.after_features.count(c) && c != p.feature) conflicts.insert(c);
  SkillCard card;
  card.id = id;
  ojson& f = card.front;
  f["name"] = id;
  f["description"] = d.description;
  f["id"] = id;
  f["intent"] = d.intent;
  f["anchor"] = p.locus;
  f["preconditions"] = ojson::array();
  for (const auto& [what, why] : d.preconditions) f["preconditions"].push_back({{"what", what}, {"why", why}});
  ojson measured = {{"provenance",
                     {{"source", "kpilot lineage"},
                      {"task", pv.task},
                      {"device", pv.device},
                      {"platform", pv.platform},
                      {"date", s.date},
                      {"kpilot_version", pv.kpilot_version},
                      {"run", pv.run_id},
                      {"step", s.index},
                      {"from", s.after_name},
                      {"to", s.before_name}}},
                    {"paired_speedup", s.effect},
                    {"ci", {s.effect_ci.lo, s.effect_ci.hi}},
                    {"round_trip", s.round_trip}};
  f["effect"] = {{"expected", d.expected_effect}, {"measured", ojson::array({measured})}};
  // A mechanism that made the expert slower where it was mined is still a card (the walk
  // accepted it), but whoever applies it should read that first.
  std::vector<std::string> risks = d.risks;
  if (s.effect_ci.hi < 1)
    risks.insert(risks.begin(),
                 fmt::format("Slower where it was mined: the expert of {} on {} ran at {:.3f}× [{:.3f}, {:.3f}] "
                             "with it against without it (paired); measure before keeping it.",
                             pv.task, pv.device, s.effect, s.effect_ci.lo, s.effect_ci.hi));
  f["risks"] = Array(risks);
  f["scope"] = {{"cases", Array(d.cases.empty() ? std::vector<std::string>{pv.task} : d.cases)},
                {"languages", {pv.language}},
                {"platforms", {pv.platform}}};
  f["requires"] = Array(requires_set);
  f["provides"] = {p.feature};
  f["conflicts"] = Array(conflicts);
  f["triggers"] = {{"findings", Array(d.trigger_findings)}, {"classes", Array(d.trigger_classes)}};
  f["params"] = ojson::array();  // a mined card is a source change; params cannot realize it

  std::string b = "# " + (p.mechanism.empty() ? id : p.mechanism) + "\n\n";
  b += fmt::format("Mined by `kpilot lineage` (run {}, step {}) from the expert kernel of task {} on {}.\n\n",
                   pv.run_id, s.index, pv.task, pv.device);
  b += "## Recipe\n\n";
  std::vector<std::string> recipe = d.recipe.empty() ? std::vector<std::string>{d.intent} : d.recipe;
  for (size_t i = 0; i < recipe.size(); ++i) b += fmt::format("{}. {}\n", i + 1, recipe[i]);
  b += "\n## Preconditions\n\n";
  for (const auto& [what, why] : d.preconditions) b += "- " + what + " " + why + "\n";
  if (!requires_set.empty()) {
    std::string feats;
    for (const auto& r : requires_set) feats += (feats.empty() ? "`" : ", `") + r + "`";
    b += "- The code already has " + feats + ".\n";
  }
  LineDiff diff = DiffLines(s.before_source, p.source);
  b += "\n## Before / After\n\n```" + pv.language + "\n// Before (" + s.after_name + "):\n" +
       Excerpt(p.source, diff.added, 40) + "\n// After (" + s.before_name + "):\n" +
       Excerpt(s.before_source, diff.removed, 60) + "```\n";
  b += "\n## Example configuration (example, not a precondition)\n\n";
  b += fmt::format("The expert's setting, in {}: {}. Measured: {:.3f}× [{:.3f}, {:.3f}] (paired, {} → {}).\n",
                   s.before_name, p.locus, s.effect, s.effect_ci.lo, s.effect_ci.hi, s.after_name, s.before_name);
  card.body = b;
  return card;
}

}  // namespace

std::vector<SkillCard> CardsFromSteps(const std::vector<Step>& steps, const Provenance& provenance) {
  std::vector<SkillCard> cards;
  std::set<std::string> used;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    std::string base = Kebab(it->proposal.card.id.empty() ? it->proposal.feature : it->proposal.card.id);
    if (base.empty()) base = "lineage-step";
    std::string id = base;
    for (int n = 2; used.count(id); ++n) id = base + "-" + std::to_string(n);
    used.insert(id);
    cards.push_back(CardFromStep(*it, provenance, id));
  }
  return cards;
}

std::string CheckCardChain(const std::vector<SkillCard>& cards, const FeatureSet& naive, const FeatureSet& expert) {
  FeatureSet state = naive;
  auto set_of = [](const ojson& a) {
    FeatureSet s;
    for (const auto& v : a) s.insert(v.get<std::string>());
    return s;
  };
  for (const auto& c : cards) {
    for (const auto& r : set_of(c.front.at("requires")))
      if (!state.count(r)) return c.id + ": requires " + r + ", which the state before it lacks";
    for (const auto& p : set_of(c.front.at("provides")))
      if (state.count(p)) return c.id + ": provides " + p + ", which the state before it already has";
    for (const auto& x : set_of(c.front.at("conflicts")))
      if (state.count(x)) return c.id + ": conflicts with " + x + ", which the state before it has";
    for (const auto& p : set_of(c.front.at("provides"))) state.insert(p);
  }
  if (state != expert) {
    std::string got, want;
    for (const auto& f : state) got += " " + f;
    for (const auto& f : expert) want += " " + f;
    return "the cards applied to the naive state give {" + got + " } instead of the expert's {" + want + " }";
  }
  return "";
}

std::string ToYaml(const ojson& v, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  std::string out;
  auto scalar = [](const ojson& x) { return x.is_string() ? YamlString(x.get<std::string>()) : x.dump(); };
  auto inline_value = [&](const ojson& x) -> std::string {
    if (x.is_array() && x.empty()) return " []";
    if (x.is_object() && x.empty()) return " {}";
    if (x.is_array() && std::all_of(x.begin(), x.end(), [](const ojson& e) { return e.is_primitive(); })) {
      std::string s = " [";
      for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + scalar(x[i]);
      return s + "]";
    }
    if (x.is_primitive()) return " " + scalar(x);
    return "";
  };
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) {
      std::string in = inline_value(x);
      out += pad + k + ":" + (in.empty() ? "\n" + ToYaml(x, indent + 2) : in + "\n");
    }
  } else if (v.is_array()) {
    for (const auto& x : v) {
      std::string in = inline_value(x);
      if (!in.empty()) {
        out += pad + "-" + in + "\n";
        continue;
      }
      // "- " then the nested block with its first line pulled up onto the dash.
      std::string nested = ToYaml(x, indent + 2);
      out += pad + "- " + nested.substr(static_cast<size_t>(indent + 2));
    }
  } else {
    out += pad + scalar(v) + "\n";
  }
  return out;
}

std::string RenderSkillCard(const SkillCard& card) { return "---\n" + ToYaml(card.front) + "---\n\n" + card.body; }

Result<std::vector<std::filesystem::path>> WriteCards(const std::vector<SkillCard>& cards,
                                                      const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> written;
  for (const auto& c : cards) {
    std::filesystem::path file = dir / c.id / "SKILL.md";
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) return Status::InvalidInput(file.parent_path().string() + ": cannot create the folder: " + ec.message());
    Status s = WriteFileAtomic(file, RenderSkillCard(c));
    if (!s.ok()) return s;
    written.push_back(file);
  }
  return written;
}

}  // namespace kpilot::lineage
