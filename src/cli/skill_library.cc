// Loading the skill-card library the way every subcommand does (skills, optimize): the built-in
// folder, the user folders, then --skills folders, validated against the known finding ids.
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"

namespace kpilot::cli {

namespace fs = std::filesystem;

Result<ValidationOptions> SkillValidation(const std::vector<std::string>& tools_dirs) {
  std::vector<fs::path> rule_dirs = {ExampleToolsDir()};
  if (const char* home = std::getenv("HOME"); home && *home) rule_dirs.push_back(fs::path(home) / ".config/kpilot/tools");
  for (const auto& d : tools_dirs) rule_dirs.push_back(d);
  auto ids = KnownFindingIds(rule_dirs);
  if (!ids.ok()) return ids.status();
  return ValidationOptions{*ids};
}

Result<SkillLibrary> LoadSkillLibrary(const std::vector<std::string>& skills_dirs,
                                      const std::vector<std::string>& tools_dirs) {
  auto options = SkillValidation(tools_dirs);
  if (!options.ok()) return options.status();
  std::vector<fs::path> extra(skills_dirs.begin(), skills_dirs.end());
  auto lib = LoadLibrary(DefaultSkillDirs(SkillsDir(), extra), *options);
  if (!lib.ok()) return lib.status();
  for (const auto& o : lib->overrides)
    std::cerr << fmt::format("kpilot: card {} from {} ({}) overrides {} ({})\n", o.id, o.by.string(),
                             SkillOriginName(o.by_origin), o.replaced.string(), SkillOriginName(o.replaced_origin));
  return lib;
}

}  // namespace kpilot::cli
