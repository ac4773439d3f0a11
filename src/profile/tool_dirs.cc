// Where rule-file tools are looked for, and the tools a profile or a run uses (rule_tool.h).
#include <cstdlib>

#include "profile/rule_tool.h"

namespace kpilot {

std::vector<std::filesystem::path> RuleToolDirs(const std::filesystem::path& task_path,
                                                const std::filesystem::path& user_dir,
                                                const std::vector<std::string>& tool_dirs) {
  std::vector<std::filesystem::path> dirs;
  if (!task_path.empty())
    dirs.push_back(std::filesystem::is_directory(task_path) ? task_path : task_path.parent_path());
  if (!user_dir.empty()) dirs.push_back(user_dir);
  for (const auto& d : tool_dirs) dirs.push_back(d);
  return dirs;
}

Result<std::vector<std::unique_ptr<Tool>>> LoadTools(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::unique_ptr<Tool>> tools = BuiltinTools();
  auto user = LoadRuleToolsFromDirs(dirs);
  if (!user.ok()) return user.status();
  for (auto& t : *user) tools.push_back(std::move(t));
  return tools;
}

std::filesystem::path UserToolDir() {
  const char* home = std::getenv("HOME");
  return home && *home ? std::filesystem::path(home) / ".config/kpilot/tools" : std::filesystem::path();
}

}  // namespace kpilot
