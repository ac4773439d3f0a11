// Loading skill folders into a library, and the cards' JSON form.
#include <algorithm>
#include <cstdlib>

#include "core/fs.h"
#include "profile/rule_tool.h"
#include "profile/tool.h"
#include "skills/skills.h"

namespace kpilot {
namespace fs = std::filesystem;

std::string SkillProblem::ToString() const {
  std::string out = file.string();
  if (line > 0) out += ":" + std::to_string(line);
  out += ": field `" + field + "`: " + message;
  if (!fix.empty()) out += "; " + fix;
  return out;
}

nlohmann::json ToJson(const SkillProblem& p) {
  return {{"file", p.file.string()}, {"line", p.line}, {"field", p.field}, {"message", p.message}, {"fix", p.fix}};
}

std::string FormatProblems(const std::vector<SkillProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "\n") + p.ToString();
  return out;
}

nlohmann::json ToJson(const SkillCard& c) {
  nlohmann::json pre = nlohmann::json::array();
  for (const auto& p : c.preconditions) pre.push_back({{"what", p.what}, {"why", p.why}});
  nlohmann::json measured = nlohmann::json::array();
  for (const auto& m : c.effect_measured) measured.push_back(m.fields);
  nlohmann::json params = nlohmann::json::array();
  for (const auto& mv : c.params) {
    nlohmann::json j = {{"param", mv.param},
                        {"move", MoveDirectionName(mv.move)},
                        {"when", mv.when},
                        {"trigger", mv.trigger},
                        {"trigger_is_class", mv.trigger_is_class}};
    if (mv.value) j["value"] = *mv.value;
    if (mv.condition)
      j["condition"] = {
          {"text", mv.condition->text}, {"key", mv.condition->key}, {"alternatives", mv.condition->alternatives}};
    params.push_back(std::move(j));
  }
  return {{"id", c.id},
          {"name", c.name},
          {"description", c.description},
          {"intent", c.intent},
          {"anchor", c.anchor},
          {"preconditions", pre},
          {"effect", {{"expected", c.effect_expected}, {"measured", measured}}},
          {"risks", c.risks},
          {"scope", {{"cases", c.scope_cases}, {"languages", c.scope_languages}, {"platforms", c.scope_platforms}}},
          {"requires", c.requires_features},
          {"provides", c.provides},
          {"conflicts", c.conflicts},
          {"triggers", {{"findings", c.trigger_findings}, {"classes", c.trigger_classes}}},
          {"params", params},
          {"body", c.body},
          {"source", c.source.string()},
          {"origin", SkillOriginName(c.origin)},
          {"text_only", c.text_only}};
}

Result<std::set<std::string>> KnownFindingIds(const std::vector<fs::path>& rule_dirs) {
  std::set<std::string> ids;
  for (const auto& tool : BuiltinTools()) ids.insert(tool->id());
  auto rules = LoadRuleToolsFromDirs(rule_dirs);
  if (!rules.ok()) return rules.status().WithContext("reading rule files for the finding ids skill cards may name");
  for (const auto& tool : *rules) ids.insert(tool->id());
  return ids;
}

const SkillCard* SkillLibrary::Find(std::string_view id) const {
  auto it =
      std::lower_bound(cards.begin(), cards.end(), id, [](const SkillCard& c, std::string_view v) { return c.id < v; });
  return it != cards.end() && it->id == id ? &*it : nullptr;
}

Result<std::vector<SkillCard>> LoadSkillDir(const SkillDir& dir, const ValidationOptions& options,
                                            std::vector<SkillProblem>* problems) {
  std::error_code ec;
  if (!fs::is_directory(dir.path, ec)) {
    return Status::InvalidInput("skills folder " + dir.path.string() + " " +
                                (fs::exists(dir.path, ec) ? "is not a folder" : "does not exist") +
                                " — pass a folder that holds <id>/SKILL.md cards");
  }
  // The card folders: `dir` itself when it holds SKILL.md, else its subfolders.
  std::vector<fs::path> folders;
  if (fs::exists(dir.path / "SKILL.md", ec)) {
    folders.push_back(dir.path);
  } else {
    fs::directory_iterator it(dir.path, ec), end;
    if (ec) return Status::InvalidInput("cannot read skills folder " + dir.path.string() + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) return Status::InvalidInput("cannot read skills folder " + dir.path.string() + ": " + ec.message());
      const std::string name = it->path().filename().string();
      // `rejected/` holds the cards `kpilot lineage --admit-on` did not admit: kept, not loaded.
      if (it->is_directory(ec) && name.front() != '.' && name != kRejectedCardsFolder) folders.push_back(it->path());
    }
    std::sort(folders.begin(), folders.end());
  }
  std::vector<SkillCard> cards;
  for (const auto& folder : folders) {
    fs::path file = folder / "SKILL.md";
    if (!fs::exists(file, ec)) {
      problems->push_back({folder, 0, "SKILL.md", "the folder has no SKILL.md",
                           "add one (copy a built-in card) or move the folder out of " + dir.path.string()});
      continue;
    }
    Result<std::string> text = ReadFile(file);
    if (!text.ok()) {
      problems->push_back({file, 0, "SKILL.md", text.status().message(), "check the file's permissions"});
      continue;
    }
    fs::path name = fs::absolute(folder, ec).lexically_normal();
    if (!name.has_filename()) name = name.parent_path();  // "dir/" → "dir"
    std::optional<SkillCard> card = ParseSkillCard(*text, file, name.filename().string(), options, problems);
    if (!card) continue;
    card->origin = dir.origin;
    cards.push_back(std::move(*card));
  }
  return cards;
}

Result<SkillLibrary> LoadLibrary(const std::vector<SkillDir>& dirs, const ValidationOptions& options) {
  SkillLibrary lib;
  std::vector<SkillProblem> problems;
  std::map<std::string, SkillCard> by_id;
  for (const SkillDir& dir : dirs) {
    std::error_code ec;
    if (dir.origin == SkillOrigin::kUser && !fs::exists(dir.path, ec)) continue;
    auto cards = LoadSkillDir(dir, options, &problems);
    if (!cards.ok()) return cards.status();
    for (auto& card : *cards) {
      auto it = by_id.find(card.id);
      if (it != by_id.end()) {
        lib.overrides.push_back({card.id, it->second.source, it->second.origin, card.source, card.origin});
        it->second = std::move(card);
      } else {
        by_id.emplace(card.id, std::move(card));
      }
    }
  }
  if (!problems.empty()) {
    return Status::InvalidInput(FormatProblems(problems) + "\n" + std::to_string(problems.size()) +
                                " problem(s) in skill cards; fix them (kpilot skills validate DIR checks a folder)");
  }
  for (auto& [id, card] : by_id) lib.cards.push_back(std::move(card));
  return lib;
}

std::vector<SkillDir> DefaultSkillDirs(const fs::path& builtin, const std::vector<fs::path>& command_line) {
  std::vector<SkillDir> dirs = {{builtin, SkillOrigin::kBuiltin}};
  if (const char* path = std::getenv("KPILOT_SKILLS_PATH"); path && *path) {
    std::string all = path;
    for (size_t start = 0; start <= all.size();) {
      size_t colon = all.find(':', start);
      std::string entry = all.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!entry.empty()) dirs.push_back({entry, SkillOrigin::kUser});
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dirs.push_back({fs::path(home) / ".config/kpilot/skills", SkillOrigin::kUser});
  }
  for (const auto& d : command_line) dirs.push_back({d, SkillOrigin::kCommandLine});
  return dirs;
}

}  // namespace kpilot
