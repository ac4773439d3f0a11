// Inside the skills module: the reader of one SKILL.md (card.cc: identity, preconditions,
// effect, scope, features, body and the whole file; card_moves.cc: triggers and the params
// generator's moves) and the small text helpers both use. Code outside src/skills uses skills.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "skills/skills.h"

namespace kpilot::card_internal {

bool IsKebab(const std::string& s);
bool IsUpperParam(const std::string& s);
size_t Utf8Length(const std::string& s);
std::string Quoted(const std::string& s);  // `s`
std::string JoinQuoted(const std::vector<std::string>& v);
nlohmann::json YamlToJson(const YAML::Node& n);

class CardReader {
 public:
  CardReader(std::filesystem::path file, const ValidationOptions& options, std::vector<SkillProblem>* problems)
      : file_(std::move(file)), options_(options), problems_(problems) {}

  // Parses `text`; true when the card has no problem.
  bool Read(const std::string& text, const std::string& folder, SkillCard* card);

 private:
  void Problem(int line, std::string field, std::string message, std::string fix = "") {
    problems_->push_back({file_, line, std::move(field), std::move(message), std::move(fix)});
    ++count_;
  }
  // The file line of a node of the front matter (which starts on line 2), or `fallback`.
  int Line(const YAML::Node& n, int fallback) const { return n.Mark().line >= 0 ? n.Mark().line + 2 : fallback; }
  // The keys of a mapping (first occurrence each); reports duplicates, missing and unknown keys.
  std::map<std::string, YAML::Node> Keys(const YAML::Node& map, const std::string& field,
                                         const std::vector<std::string>& required,
                                         const std::vector<std::string>& optional, int line);
  std::optional<std::string> Text(const YAML::Node& n, const std::string& field, int line, bool allow_empty = false);
  std::optional<std::vector<std::string>> TextList(const YAML::Node& n, const std::string& field, int line,
                                                   bool allow_empty);
  // The entries of `list` that are not in `known`, each reported with a fix.
  void CheckKnown(const YAML::Node& list_node, const std::vector<std::string>& list, const std::string& field,
                  const std::vector<std::string>& known, const std::string& what, const std::string& where_listed);

  // The rules a card's id (or a plain skill's name) and description keep, each a problem when
  // broken: kebab-case of at most 64 characters (true when it is), the folder's name, and Agent
  // Skills' 1024 characters.
  bool CheckKebab(const std::string& value, const std::string& field, int line, const std::string& example) {
    if (IsKebab(value) && value.size() <= 64) return true;
    Problem(line, field, "`" + value + "` is not kebab-case of at most 64 characters",
            "use lower-case letters, digits and single hyphens, e.g. `" + example + "`");
    return false;
  }
  void CheckFolder(const std::string& value, const std::string& field, int line, const std::string& folder,
                   const std::string& fix) {
    if (value != folder) Problem(line, field, "`" + value + "` differs from the folder name `" + folder + "`", fix);
  }
  void CheckDescription(const std::string& description, int line) {
    if (Utf8Length(description) > 1024)
      Problem(line, "description",
              "is " + std::to_string(Utf8Length(description)) + " characters long (Agent Skills allows 1024)",
              "shorten it; details belong in the body");
  }
  void ReadIdentity(const std::map<std::string, YAML::Node>& f, const std::string& folder, SkillCard* card);
  // A plain Agent Skill: `name` (== the folder) and `description`, and nothing of kpilot's.
  void ReadPlainSkill(const YAML::Node& root, const std::string& folder, SkillCard* card);
  void ReadPreconditions(const YAML::Node& n, SkillCard* card);
  void ReadEffect(const YAML::Node& n, SkillCard* card);
  void ReadScope(const YAML::Node& n, SkillCard* card);
  void ReadFeatures(const std::map<std::string, YAML::Node>& f, SkillCard* card);
  void ReadTriggers(const YAML::Node& n, SkillCard* card);
  void ReadParams(const YAML::Node& n, SkillCard* card);
  std::optional<ParamMove> ReadMove(const YAML::Node& n, const std::string& field);
  void ReadBody(const std::string& body, int first_line, const SkillCard& card);

  std::vector<std::string> FindingIds() const { return {options_.finding_ids.begin(), options_.finding_ids.end()}; }

  std::filesystem::path file_;
  const ValidationOptions& options_;
  std::vector<SkillProblem>* problems_;
  int count_ = 0;
  int root_line_ = 1;
};

}  // namespace kpilot::card_internal
