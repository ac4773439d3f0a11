// The gate of a lineage step, as pure functions: the reply parsers, the declaration check, the
// line diff and citation check, and the round-trip rule.
#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/fs.h"
#include "lineage/lineage.h"

namespace kpilot::lineage {
namespace {

using nlohmann::json;

const FeatureSet kClasses = {"memory-bound", "compute-bound", "latency-bound", "launch-bound", "mixed"};

std::string Join(const FeatureSet& s) {
  std::string out;
  for (const auto& f : s) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "(none)" : out;
}

// The one ```json block of a reply, parsed; InvalidInput worded for the generator otherwise.
Result<json> JsonBlock(const std::string& reply, const std::string& what) {
  std::vector<json> found;
  for (const auto& b : FencedBlocks(reply)) {
    if (b.language != "json") continue;
    json j = json::parse(b.code, nullptr, false);
    if (j.is_discarded()) return Status::InvalidInput("the ```json block is not valid JSON");
    found.push_back(std::move(j));
  }
  if (found.empty()) return Status::InvalidInput("no ```json block with " + what);
  if (found.size() > 1) return Status::InvalidInput("several ```json blocks; send exactly one with " + what);
  if (!found.front().is_object()) return Status::InvalidInput("the ```json block must be an object with " + what);
  return found.front();
}

std::vector<std::string> Strings(const json& j, const std::string& key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::string Text(const json& j, const std::string& key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Result<FeatureSet> Features(const json& j, const std::string& key) {
  if (!j.contains(key) || !j[key].is_array())
    return Status::InvalidInput("\"" + key + "\" must be a list of feature names");
  FeatureSet out;
  for (const auto& v : j[key]) {
    if (!v.is_string()) return Status::InvalidInput("\"" + key + "\" must hold only strings");
    out.insert(v.get<std::string>());
  }
  return out;
}

DraftCard CardFromJson(const json& c) {
  DraftCard d;
  if (!c.is_object()) return d;
  d.id = Text(c, "id");
  d.description = Text(c, "description");
  d.intent = Text(c, "intent");
  if (c.contains("preconditions") && c["preconditions"].is_array())
    for (const auto& p : c["preconditions"])
      if (p.is_object()) d.preconditions.emplace_back(Text(p, "what"), Text(p, "why"));
  d.expected_effect = Text(c, "expected_effect");
  d.risks = Strings(c, "risks");
  d.cases = Strings(c, "cases");
  d.requires_features = Strings(c, "requires");
  d.conflicts = Strings(c, "conflicts");
  if (c.contains("triggers") && c["triggers"].is_object()) {
    d.trigger_findings = Strings(c["triggers"], "findings");
    d.trigger_classes = Strings(c["triggers"], "classes");
  }
  d.recipe = Strings(c, "recipe");
  return d;
}

std::string Normalize(const std::string& s) {
  std::string out;
  bool blank = false;
  for (char ch : s) {
    if (ch == ' ' || ch == '\t' || ch == '\r') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += ch;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

Result<FeatureSet> LoadFeatureVocabulary(const std::filesystem::path& readme) {
  auto text = ReadFile(readme);
  if (!text.ok()) return text.status();
  size_t at = text->find("\n## Feature vocabulary");
  if (at == std::string::npos)
    return Status::InvalidInput(
        readme.string() + ": no '## Feature vocabulary' table — give a skills README that has one (skills/README.md)");
  size_t end = text->find("\n## ", at + 5);
  std::string section = text->substr(at, end == std::string::npos ? std::string::npos : end - at);
  static const std::regex kRow(R"(^\|\s*`([a-z0-9-]+)`\s*\|)");
  FeatureSet out;
  for (const auto& line : Lines(section)) {
    std::smatch m;
    if (std::regex_search(line, m, kRow)) out.insert(m[1]);
  }
  if (out.empty()) return Status::InvalidInput(readme.string() + ": the '## Feature vocabulary' table has no rows");
  return out;
}

Result<Proposal> ParseProposal(const std::string& reply) {
  auto j =
      JsonBlock(reply, "the declaration (naive, mechanism, feature, locus, before_features, after_features, card)");
  if (!j.ok()) return j.status();
  Proposal p;
  p.summary = SummaryLine(reply);
  p.naive = j->value("naive", false);
  if (p.naive) return p;
  p.mechanism = Text(*j, "mechanism");
  p.feature = Text(*j, "feature");
  p.locus = Text(*j, "locus");
  if (p.feature.empty())
    return Status::InvalidInput("the declaration names no \"feature\" (the vocabulary feature removed)");
  if (p.locus.empty())
    return Status::InvalidInput("the declaration has no \"locus\" (where in the code the mechanism was)");
  auto before = Features(*j, "before_features");
  if (!before.ok()) return before.status();
  auto after = Features(*j, "after_features");
  if (!after.ok()) return after.status();
  p.before_features = *before;
  p.after_features = *after;
  if (j->contains("reference_features")) {
    auto ref = Features(*j, "reference_features");
    if (!ref.ok()) return ref.status();
    p.reference_features = *ref;
  }
  p.card = CardFromJson(j->value("card", json::object()));
  ExtractedCandidate c = ExtractCandidate(reply);
  if (c.source.empty()) return Status::InvalidInput("no simplified kernel: " + c.problem);
  p.source = c.source;
  return p;
}

std::string CheckDeclaration(const Proposal& p, const FeatureSet& vocabulary, const std::optional<FeatureSet>& current,
                             const FeatureSet& known_findings) {
  auto unknown = [&](const FeatureSet& s) {
    FeatureSet out;
    for (const auto& f : s)
      if (!vocabulary.count(f)) out.insert(f);
    return out;
  };
  FeatureSet named = p.before_features;
  named.insert(p.after_features.begin(), p.after_features.end());
  named.insert(p.feature);
  if (p.reference_features) named.insert(p.reference_features->begin(), p.reference_features->end());
  named.insert(p.card.requires_features.begin(), p.card.requires_features.end());
  named.insert(p.card.conflicts.begin(), p.card.conflicts.end());
  if (FeatureSet u = unknown(named); !u.empty())
    return "features not in the vocabulary: " + Join(u) + " (use only the vocabulary's names)";
  if (current && p.before_features != *current)
    return "before_features {" + Join(p.before_features) + "} differ from the current kernel's features {" +
           Join(*current) + "} (the state after the last accepted step)";
  if (!p.before_features.count(p.feature))
    return "the removed feature " + p.feature + " is not among before_features {" + Join(p.before_features) + "}";
  FeatureSet gone, added;
  std::set_difference(p.before_features.begin(), p.before_features.end(), p.after_features.begin(),
                      p.after_features.end(), std::inserter(gone, gone.end()));
  std::set_difference(p.after_features.begin(), p.after_features.end(), p.before_features.begin(),
                      p.before_features.end(), std::inserter(added, added.end()));
  if (gone.empty()) return "nothing removed: before_features and after_features are the same";
  if (gone.size() > 1) return "several mechanisms removed (" + Join(gone) + "); remove exactly one per step";
  if (*gone.begin() != p.feature)
    return "after_features lack " + *gone.begin() + ", not the declared feature " + p.feature;
  if (!added.empty()) return "after_features add " + Join(added) + "; a removal must not add features";
  for (const auto& r : p.card.requires_features)
    if (!p.after_features.count(r))
      return "the card requires " + r + ", which the simplified kernel (where the card would be applied) lacks";
  for (const auto& c : p.card.conflicts)
    if (p.after_features.count(c) || c == p.feature)
      return "the card conflicts with " + c + ", which is present where it was applied";
  const DraftCard& d = p.card;
  if (d.intent.empty() || d.description.empty() || d.expected_effect.empty())
    return "the draft card needs intent, description and expected_effect";
  if (d.preconditions.empty())
    return "the draft card has no precondition ({what, why}: why the technique fails without it)";
  for (const auto& [what, why] : d.preconditions)
    if (what.empty() || why.empty()) return "every precondition of the draft card needs both what and why";
  if (d.risks.empty()) return "the draft card names no risk";
  if (d.trigger_findings.empty() && d.trigger_classes.empty())
    return "the draft card has no trigger (findings or classes)";
  for (const auto& c : p.card.trigger_classes)
    if (!kClasses.count(c)) return "trigger class " + c + " is not a roofline class (" + Join(kClasses) + ")";
  if (!known_findings.empty())
    for (const auto& f : p.card.trigger_findings)
      if (!known_findings.count(f)) return "trigger finding " + f + " is not a finding id of kpilot's profiler tools";
  return "";
}

Result<CitationReply> ParseCitations(const std::string& reply) {
  auto j = JsonBlock(reply, "removes, citations and explanation");
  if (!j.ok()) return j.status();
  CitationReply c;
  auto removes = Features(*j, "removes");
  if (!removes.ok()) return removes.status();
  c.removes = *removes;
  c.explanation = Text(*j, "explanation");
  if (!j->contains("citations") || !(*j)["citations"].is_array())
    return Status::InvalidInput("\"citations\" must be a list of {side, line, text}");
  for (const auto& e : (*j)["citations"]) {
    if (!e.is_object() || !e.contains("line") || !e["line"].is_number_integer())
      return Status::InvalidInput("each citation needs an integer \"line\"");
    Citation ci;
    ci.side = Text(e, "side");
    ci.line = e["line"].get<int>();
    ci.text = Text(e, "text");
    if (ci.side != "before" && ci.side != "after")
      return Status::InvalidInput(
          fmt::format("citation of line {}: \"side\" must be \"before\" or \"after\"", ci.line));
    c.citations.push_back(std::move(ci));
  }
  return c;
}

LineDiff DiffLines(const std::string& before, const std::string& after) {
  std::vector<std::string> a = Lines(before), b = Lines(after);
  size_t n = a.size(), m = b.size();
  // lcs[i][j]: LCS length of a[i..] and b[j..].
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  LineDiff d;
  size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] == b[j]) {
      ++i;
      ++j;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      d.removed.insert(static_cast<int>(++i));
    } else {
      d.added.insert(static_cast<int>(++j));
    }
  }
  while (i < n) d.removed.insert(static_cast<int>(++i));
  while (j < m) d.added.insert(static_cast<int>(++j));
  return d;
}

std::optional<std::string> LineOf(const std::string& text, int n) {
  std::vector<std::string> lines = Lines(text);
  if (n < 1 || n > static_cast<int>(lines.size())) return std::nullopt;
  return lines[static_cast<size_t>(n - 1)];
}

std::string CheckCitations(const CitationReply& c, const std::string& feature, const std::string& before,
                           const std::string& after) {
  if (c.removes != FeatureSet{feature})
    return "the confirming call says the change removes {" + Join(c.removes) + "}, not exactly {" + feature + "}";
  LineDiff diff = DiffLines(before, after);
  int before_cited = 0;
  for (const auto& ci : c.citations) {
    const std::string& text = ci.side == "before" ? before : after;
    auto line = LineOf(text, ci.line);
    std::string where = fmt::format("{} line {}", ci.side, ci.line);
    if (!line) return "citation of " + where + ": the " + ci.side + " source has no such line";
    if (Normalize(*line) != Normalize(ci.text) || Normalize(ci.text).empty())
      return "citation of " + where + " does not match the code: cited \"" + ci.text + "\", the line is \"" + *line +
             "\"";
    const std::set<int>& changed = ci.side == "before" ? diff.removed : diff.added;
    if (!changed.count(ci.line))
      return "citation of " + where + " (\"" + Normalize(*line) + "\") is a line the change did not " +
             (ci.side == "before" ? "remove" : "write");
    before_cited += ci.side == "before";
  }
  if (before_cited == 0) return "no citation of the before source: cite the lines that held the mechanism";
  return "";
}

RoundTripDecision JudgeRoundTrip(const std::vector<double>& ratios, double min_ratio) {
  RoundTripDecision d;
  if (ratios.empty()) {
    d.reason = "no round-trip trial";
    return d;
  }
  d.worst = *std::min_element(ratios.begin(), ratios.end());
  for (size_t t = 0; t < ratios.size(); ++t)
    if (!(ratios[t] >= min_ratio)) {
      d.reason = fmt::format(
          "the rebuilt kernel reached {:.3f}× of the pre-removal speed in trial {} of {} (needs ≥ {:.2f} "
          "in every trial)",
          ratios[t], t + 1, ratios.size(), min_ratio);
      return d;
    }
  d.passed = true;
  return d;
}

}  // namespace kpilot::lineage
