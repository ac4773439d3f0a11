// Parsing and validating one SKILL.md: the front matter through yaml-cpp, the body by its
// headings. Every problem is collected with the file line it concerns.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "skills/skills.h"
#include "skills/text.h"

#include "skills/card_reader.h"

namespace kpilot {
namespace card_internal {

bool IsKebab(const std::string& s) {
  static const std::regex kKebab("^[a-z0-9]+(-[a-z0-9]+)*$");
  return std::regex_match(s, kKebab);
}

bool IsUpperParam(const std::string& s) {
  static const std::regex kUpper("^[A-Z][A-Z0-9_]*$");
  return std::regex_match(s, kUpper);
}

// Characters, not bytes: Agent Skills limits the description to 1024 characters.
size_t Utf8Length(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string Quoted(const std::string& s) { return "`" + s + "`"; }

std::string JoinQuoted(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + Quoted(s);
  return out;
}

nlohmann::json YamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it) j[it->first.Scalar()] = YamlToJson(it->second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& e : n) j.push_back(YamlToJson(e));
    return j;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "?") {  // plain scalars may be numbers or booleans; quoted ones stay text
    if (s == "true" || s == "false") return s == "true";
    nlohmann::json num = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (num.is_number()) return num;
  }
  return s;
}

}  // namespace card_internal

namespace {

const std::vector<std::string> kRequiredFields = {"name",          "description", "id",       "intent", "anchor",
                                                  "preconditions", "effect",      "risks",    "scope",  "requires",
                                                  "provides",      "conflicts",   "triggers", "params"};

// A plain Agent Skill's front matter may hold these besides `name` and `description` (the Agent
// Skills format's optional fields); any field of kpilot's makes it a kpilot card, validated whole.
const std::vector<std::string> kPlainSkillOptionalFields = {"license", "allowed-tools", "metadata", "compatibility"};

bool IsPlainSkill(const YAML::Node& root) {
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (k != "name" && k != "description" &&
        std::find(kPlainSkillOptionalFields.begin(), kPlainSkillOptionalFields.end(), k) ==
            kPlainSkillOptionalFields.end())
      return false;
  }
  return true;
}

// The body's sections, in order; the last is matched as a prefix and must say it is an example.
const std::vector<std::string> kSections = {"## Recipe", "## Preconditions", "## Before / After",
                                            "## Example configuration"};
constexpr char kExampleNote[] = "(example, not a precondition)";

}  // namespace

namespace card_internal {

std::map<std::string, YAML::Node> CardReader::Keys(const YAML::Node& map, const std::string& field,
                                                   const std::vector<std::string>& required,
                                                   const std::vector<std::string>& optional, int line) {
  std::map<std::string, YAML::Node> keys;
  auto name = [&](const std::string& k) { return field.empty() ? k : field + "." + k; };
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
    int at = Line(it->first, line);
    if (keys.count(k)) {
      Problem(at, name(k), "given twice", "keep one `" + k + ":` line");
      continue;
    }
    bool known = std::find(required.begin(), required.end(), k) != required.end() ||
                 std::find(optional.begin(), optional.end(), k) != optional.end();
    if (!known) {
      std::vector<std::string> all = required;
      all.insert(all.end(), optional.begin(), optional.end());
      std::optional<std::string> near = ClosestWord(k, all);
      Problem(at, name(k), "unknown field",
              near ? "did you mean `" + *near + "`?" : "the fields are " + JoinQuoted(all) + " (skills/README.md)");
      continue;
    }
    keys[k] = it->second;
  }
  for (const auto& k : required)
    if (!keys.count(k))
      Problem(line, name(k), "missing", "add `" + k + ":` (every field is required; see skills/README.md)");
  return keys;
}

std::optional<std::string> CardReader::Text(const YAML::Node& n, const std::string& field, int line, bool allow_empty) {
  if (!n.IsScalar()) {
    Problem(Line(n, line), field, "must be text", "write `" + field.substr(field.rfind('.') + 1) + ": some text`");
    return std::nullopt;
  }
  std::string s = n.Scalar();
  if (!allow_empty && Trim(s).empty()) {
    Problem(Line(n, line), field, "is empty", "fill it in");
    return std::nullopt;
  }
  return s;
}

std::optional<std::vector<std::string>> CardReader::TextList(const YAML::Node& n, const std::string& field, int line,
                                                             bool allow_empty) {
  if (!n.IsSequence()) {
    Problem(Line(n, line), field, "must be a list", "write `[a, b]` or one `- item` per line (`[]` for none)");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string item = field + "[" + std::to_string(i) + "]";
    auto s = Text(n[i], item, Line(n, line));
    if (!s) {
      ok = false;
      continue;
    }
    if (std::find(out.begin(), out.end(), *s) != out.end()) {
      Problem(Line(n[i], line), field, "`" + *s + "` is listed twice", "keep one");
      ok = false;
      continue;
    }
    out.push_back(*s);
  }
  if (ok && out.empty() && !allow_empty) {
    Problem(Line(n, line), field, "is empty", "list at least one entry");
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return out;
}

void CardReader::CheckKnown(const YAML::Node& list_node, const std::vector<std::string>& list, const std::string& field,
                            const std::vector<std::string>& known, const std::string& what,
                            const std::string& where_listed) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (std::find(known.begin(), known.end(), list[i]) != known.end()) continue;
    std::optional<std::string> near = ClosestWord(list[i], known);
    std::string fix = near ? "did you mean `" + *near + "`? (" + where_listed + ")"
                           : "use one of " + JoinQuoted(known) + " (" + where_listed + ")";
    Problem(Line(list_node[i], Line(list_node, root_line_)), field, "unknown " + what + " `" + list[i] + "`", fix);
  }
}

void CardReader::ReadIdentity(const std::map<std::string, YAML::Node>& f, const std::string& folder, SkillCard* card) {
  auto text = [&](const char* key, std::string* out) {
    auto it = f.find(key);
    if (it == f.end()) return false;
    auto s = Text(it->second, key, root_line_);
    if (s) *out = Trim(*s);
    return s.has_value();
  };
  if (text("id", &card->id)) {
    int line = Line(f.at("id"), root_line_);
    CheckKebab(card->id, "id", line, "smem-padding-swizzle");
    CheckFolder(card->id, "id", line, folder, "rename the folder or change `id` (and `name`) so that they agree");
  }
  if (text("name", &card->name) && !card->id.empty() && card->name != card->id)
    Problem(Line(f.at("name"), root_line_), "name", "`" + card->name + "` differs from id `" + card->id + "`",
            "set `name: " + card->id + "` (Agent Skills loads the card by name)");
  if (text("description", &card->description))
    CheckDescription(card->description, Line(f.at("description"), root_line_));
  if (text("intent", &card->intent) && card->intent.find('\n') != std::string::npos)
    Problem(Line(f.at("intent"), root_line_), "intent", "must be one line",
            "say the change in one imperative sentence");
  text("anchor", &card->anchor);
}

void CardReader::ReadPlainSkill(const YAML::Node& root, const std::string& folder, SkillCard* card) {
  auto f = Keys(root, "", {"name", "description"}, kPlainSkillOptionalFields, 1);
  card->text_only = true;
  if (f.count("name")) {
    if (auto s = Text(f["name"], "name", root_line_)) card->name = Trim(*s);
    int line = Line(f["name"], root_line_);
    if (CheckKebab(card->name, "name", line, "pdf-forms"))
      CheckFolder(card->name, "name", line, folder,
                  "rename the folder or change `name` so that they agree (Agent Skills loads a skill by its folder)");
  }
  if (f.count("description")) {
    if (auto s = Text(f["description"], "description", root_line_)) card->description = Trim(*s);
    CheckDescription(card->description, Line(f["description"], root_line_));
  }
  card->id = card->name;
  card->intent = card->description.substr(0, card->description.find('\n'));
}

void CardReader::ReadPreconditions(const YAML::Node& n, SkillCard* card) {
  int line = Line(n, root_line_);
  if (!n.IsSequence() || n.size() == 0) {
    Problem(line, "preconditions", n.IsSequence() ? "is empty" : "must be a list",
            "list `- what: …` / `why: …` entries; every technique has preconditions");
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string field = "preconditions[" + std::to_string(i) + "]";
    if (!n[i].IsMap()) {
      Problem(Line(n[i], line), field, "must be a mapping {what, why}", "write `- what: …` and `why: …`");
      continue;
    }
    auto keys = Keys(n[i], field, {"what", "why"}, {}, Line(n[i], line));
    Precondition p;
    auto what = keys.count("what") ? Text(keys["what"], field + ".what", line) : std::nullopt;
    auto why = keys.count("why") ? Text(keys["why"], field + ".why", line) : std::nullopt;
    if (what && why) card->preconditions.push_back({Trim(*what), Trim(*why)});
  }
}

void CardReader::ReadEffect(const YAML::Node& n, SkillCard* card) {
  int line = Line(n, root_line_);
  if (!n.IsMap()) {
    Problem(line, "effect", "must be a mapping {expected, measured}", "write `expected: …` and `measured: []`");
    return;
  }
  auto keys = Keys(n, "effect", {"expected", "measured"}, {}, line);
  if (keys.count("expected")) {
    if (auto s = Text(keys["expected"], "effect.expected", line)) card->effect_expected = Trim(*s);
  }
  if (!keys.count("measured")) return;
  const YAML::Node& m = keys["measured"];
  if (!m.IsSequence()) {
    Problem(Line(m, line), "effect.measured", "must be a list",
            "write `measured: []` until a kpilot run measures the card");
    return;
  }
  for (size_t i = 0; i < m.size(); ++i) {
    std::string field = "effect.measured[" + std::to_string(i) + "]";
    if (!m[i].IsMap() || !m[i]["provenance"]) {
      Problem(Line(m[i], line), field, "a measured effect needs its provenance",
              "add `provenance: {task: …, device: …, run: …}` (measured effects come from kpilot runs)");
      continue;
    }
    card->effect_measured.push_back({YamlToJson(m[i]["provenance"]), YamlToJson(m[i])});
  }
}

void CardReader::ReadScope(const YAML::Node& n, SkillCard* card) {
  int line = Line(n, root_line_);
  if (!n.IsMap()) {
    Problem(line, "scope", "must be a mapping {cases, languages, platforms}",
            "write `cases: […]`, `languages: [cuda]`, `platforms: [sm_80, sm_90a]`");
    return;
  }
  auto keys = Keys(n, "scope", {"cases", "languages", "platforms"}, {"dtypes"}, line);
  if (keys.count("cases")) {
    if (auto v = TextList(keys["cases"], "scope.cases", line, false)) card->scope_cases = *v;
  }
  if (keys.count("languages")) {
    if (auto v = TextList(keys["languages"], "scope.languages", line, false)) {
      card->scope_languages = *v;
      CheckKnown(keys["languages"], *v, "scope.languages", SkillLanguages(), "language", "skills/README.md");
    }
  }
  if (keys.count("platforms")) {
    if (auto v = TextList(keys["platforms"], "scope.platforms", line, false)) {
      card->scope_platforms = *v;
      CheckKnown(keys["platforms"], *v, "scope.platforms", SkillPlatforms(), "platform", "skills/README.md");
    }
  }
  if (keys.count("dtypes")) {
    if (auto v = TextList(keys["dtypes"], "scope.dtypes", line, false)) {
      card->scope_dtypes = *v;
      CheckKnown(keys["dtypes"], *v, "scope.dtypes", SkillDTypes(), "element type", "docs/task-format.md");
    }
  }
}

void CardReader::ReadFeatures(const std::map<std::string, YAML::Node>& f, SkillCard* card) {
  std::vector<std::string> vocabulary;
  for (const Feature& feature : FeatureVocabulary()) vocabulary.emplace_back(feature.name);
  auto read = [&](const char* key, std::vector<std::string>* out) {
    auto it = f.find(key);
    if (it == f.end()) return;
    auto v = TextList(it->second, key, root_line_, std::string(key) != "provides");
    if (!v) return;
    *out = *v;
    CheckKnown(it->second, *v, key, vocabulary, "feature",
               "the feature vocabulary of skills/README.md; add a row there for a new feature");
  };
  read("requires", &card->requires_features);
  read("provides", &card->provides);
  read("conflicts", &card->conflicts);
  auto overlap = [&](const std::vector<std::string>& a, const std::vector<std::string>& b, const char* field,
                     const char* what) {
    for (const auto& x : a) {
      if (std::find(b.begin(), b.end(), x) == b.end()) continue;
      Problem(Line(f.at(field), root_line_), field, "feature `" + x + "` is both " + what,
              "a card cannot need, give or exclude the same feature at once; remove it from one list");
    }
  };
  if (f.count("requires")) overlap(card->requires_features, card->provides, "requires", "required and provided");
  if (f.count("conflicts")) {
    overlap(card->conflicts, card->provides, "conflicts", "conflicting and provided");
    overlap(card->conflicts, card->requires_features, "conflicts", "conflicting and required");
  }
}

void CardReader::ReadBody(const std::string& body, int first_line, const SkillCard& card) {
  // The line of each section heading (0 when absent), and where each section's text ends.
  std::vector<int> at(kSections.size(), 0);
  std::vector<std::string> lines;
  std::istringstream in(body);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (size_t i = 0; i < lines.size(); ++i) {
    for (size_t s = 0; s < kSections.size(); ++s) {
      bool match = s + 1 == kSections.size() ? lines[i].rfind(kSections[s], 0) == 0 : Trim(lines[i]) == kSections[s];
      if (match && at[s] == 0) at[s] = first_line + static_cast<int>(i);
    }
  }
  for (size_t s = 0; s < kSections.size(); ++s)
    if (at[s] == 0)
      Problem(first_line, "body", "missing section `" + kSections[s] + "`",
              "the body has, in order: " + JoinQuoted(kSections) + " (skills/README.md)");
  for (size_t s = 1; s < kSections.size(); ++s) {
    if (at[s] == 0 || at[s - 1] == 0 || at[s] > at[s - 1]) continue;
    Problem(at[s], "body",
            "section `" + kSections[s] + "` comes before `" + kSections[s - 1] + "` (line " +
                std::to_string(at[s - 1]) + ")",
            "order the sections " + JoinQuoted(kSections));
  }
  if (std::find(at.begin(), at.end(), 0) != at.end()) return;
  auto section = [&](size_t s) {  // the lines of section s, up to the next heading of level 2
    std::vector<std::string> out;
    for (size_t i = at[s] - first_line + 1; i < lines.size() && lines[i].rfind("## ", 0) != 0; ++i)
      out.push_back(lines[i]);
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::regex& re) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& l) { return std::regex_search(l, re); });
  };
  if (!has(section(0), std::regex(R"(^\s*1\.\s)")))
    Problem(at[0], "body", "`## Recipe` has no numbered edits", "write the technique as a list `1. …`, `2. …`");
  bool cuda = std::find(card.scope_languages.begin(), card.scope_languages.end(), "cuda") != card.scope_languages.end();
  if (!has(section(2), std::regex(cuda ? "^```cuda" : "^```")))
    Problem(at[2], "body", std::string("`## Before / After` has no ") + (cuda ? "```cuda" : "```") + " fragment",
            "show a short before/after code fragment in a fenced block");
  if (lines[at[3] - first_line].find(kExampleNote) == std::string::npos)
    Problem(at[3], "body", "the example configuration must say it is not a precondition",
            "title it `## Example configuration " + std::string(kExampleNote) + "`");
}

bool CardReader::Read(const std::string& text, const std::string& folder, SkillCard* card) {
  // The front matter: between a first line "---" and the next line "---".
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts.push_back(i + 1);
  auto line_text = [&](size_t i) {
    size_t end = i + 1 < starts.size() ? starts[i + 1] - 1 : text.size();
    std::string l = text.substr(starts[i], end - starts[i]);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    return l;
  };
  if (text.empty() || line_text(0) != "---") {
    Problem(1, "front matter", "the file does not start with a `---` line",
            "put the YAML front matter between two `---` lines");
    return false;
  }
  size_t close = 0;
  for (size_t i = 1; i < starts.size() && close == 0; ++i)
    if (line_text(i) == "---") close = i;
  if (close == 0) {
    Problem(1, "front matter", "no closing `---` line", "end the YAML front matter with a line `---`");
    return false;
  }
  std::string yaml = text.substr(starts[1], starts[close] - starts[1]);
  std::string body = close + 1 < starts.size() ? text.substr(starts[close + 1]) : "";
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    Problem(e.mark.line >= 0 ? e.mark.line + 2 : 1, "front matter", "YAML syntax: " + e.msg,
            "fix the YAML at column " + std::to_string(e.mark.column + 1));
    return false;
  }
  if (!root.IsMap()) {
    Problem(2, "front matter", "is not a mapping", "write one `field: value` per line (skills/README.md)");
    return false;
  }
  if (IsPlainSkill(root)) {
    ReadPlainSkill(root, folder, card);
    card->body = body;
    return count_ == 0;
  }
  auto f = Keys(root, "", kRequiredFields, {}, 1);
  try {
    ReadIdentity(f, folder, card);
    if (f.count("preconditions")) ReadPreconditions(f["preconditions"], card);
    if (f.count("effect")) ReadEffect(f["effect"], card);
    if (f.count("risks")) {
      if (auto v = TextList(f["risks"], "risks", root_line_, false)) card->risks = *v;
    }
    if (f.count("scope")) ReadScope(f["scope"], card);
    ReadFeatures(f, card);
    if (f.count("triggers")) ReadTriggers(f["triggers"], card);
    if (f.count("params")) ReadParams(f["params"], card);
  } catch (const YAML::Exception& e) {  // a node of an unexpected shape that slipped past the checks
    Problem(e.mark.line >= 0 ? e.mark.line + 2 : 1, "front matter", e.msg,
            "check the field's type against skills/README.md");
  }
  card->body = body;
  ReadBody(body, static_cast<int>(close) + 2, *card);
  return count_ == 0;
}

}  // namespace card_internal

std::optional<SkillCard> ParseSkillCard(const std::string& text, const std::filesystem::path& file,
                                        const std::string& folder, const ValidationOptions& options,
                                        std::vector<SkillProblem>* problems) {
  SkillCard card;
  card.source = file;
  card_internal::CardReader reader(file, options, problems);
  if (!reader.Read(text, folder, &card)) return std::nullopt;
  return card;
}

}  // namespace kpilot
