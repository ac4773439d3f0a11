#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "cli/cli.h"
#include "profile/rule_tool.h"

namespace kpilot::cli {

int Fail(const Status& s) {
  std::cerr << "kpilot: " << s.message() << "\n";
  return ExitCodeFor(s);
}

std::filesystem::path RunnerPath() {
  if (const char* env = std::getenv("KPILOT_RUNNER"); env && *env) return env;
  return ExecutableDir() / "kpilot-runner";
}

std::filesystem::path IncludeDir() {
  if (const char* env = std::getenv("KPILOT_INCLUDE_DIR"); env && *env) return env;
  // Installed (<prefix>/bin/kpilot beside <prefix>/include), or a build tree inside the source
  // tree (build/bin/kpilot): the nearest include/kpilot/kernel.h above the executable.
  for (std::filesystem::path dir = ExecutableDir(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
    if (std::filesystem::exists(dir / "include" / "kpilot" / "kernel.h")) return dir / "include";
  if (auto source = BuildTreeSourceDir()) return *source / "include";
  return ExecutableDir().parent_path() / "include";  // where an install puts it (errors name it)
}

namespace {

// A folder kpilot ships: $env, else <prefix>/share/kpilot/<installed> beside this executable
// (installed), else the nearest <in_tree> above it holding `marker` (a build tree), else, for an
// executable of a build tree, the source tree's <in_tree>; else the installed place (missing:
// errors name it).
std::filesystem::path ShippedDir(const char* env_name, const std::filesystem::path& installed,
                                 const std::filesystem::path& in_tree, const std::filesystem::path& marker) {
  if (const char* env = std::getenv(env_name); env && *env) return env;
  for (std::filesystem::path dir = ExecutableDir(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / "share" / "kpilot" / installed / marker))
      return dir / "share" / "kpilot" / installed;
    if (std::filesystem::exists(dir / in_tree / marker)) return dir / in_tree;
  }
  if (auto source = BuildTreeSourceDir()) return *source / in_tree;
  return ExecutableDir().parent_path() / "share" / "kpilot" / installed;
}

}  // namespace

std::filesystem::path PromptsDir() { return ShippedDir("KPILOT_PROMPTS_DIR", "prompts", "prompts", "system.md"); }

std::filesystem::path SkillsDir() { return ShippedDir("KPILOT_SKILLS_DIR", "skills", "skills", "README.md"); }

std::filesystem::path ExampleToolsDir() {
  return ShippedDir("KPILOT_EXAMPLE_TOOLS_DIR", "tools", std::filesystem::path("examples") / "tools",
                    "l2_locality.toml");
}

std::filesystem::path PythonPackageDir() {
  return ShippedDir("KPILOT_PYTHONPATH", "python", "python", std::filesystem::path("kpilot_torch") / "worker.py");
}

InstallLayout Layout() {
  InstallLayout l;
  std::error_code ec;
  l.kpilot = std::filesystem::read_symlink("/proc/self/exe", ec);
  l.runner = RunnerPath();
  l.include_dir = IncludeDir();
  l.prompts_dir = PromptsDir();
  l.skills_dir = SkillsDir();
  l.example_tools = ExampleToolsDir();
  l.python_package = PythonPackageDir();
  l.user_tools = UserToolDir();
  return l;
}

Result<Workspace> OpenWorkspace(const std::string& store_dir, bool no_store) {
  Workspace w;
  if (!no_store) {
    auto s = Store::Open(store_dir);
    if (!s.ok()) return s.status();
    w.store = std::move(s).value();
    w.cache_dir = w.store->dir() / "cache";
    return w;
  }
  auto t = TempDir::Create("kpilot-cache-");
  if (!t.ok()) return t.status();
  w.scratch.emplace(std::move(t).value());
  w.cache_dir = w.scratch->path();
  return w;
}

Result<double> ParseDuration(const std::string& s, const std::string& flag) {
  if (s.empty()) return 0.0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit(end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0)
    return Status::InvalidInput(flag + " " + s + ": expected a duration such as 30m, 90s or 2h");
  if (unit.empty() || unit == "s") return v;
  if (unit == "m") return v * 60;
  if (unit == "h") return v * 3600;
  return Status::InvalidInput(flag + " " + s + ": unknown unit \"" + unit + "\" (use s, m or h)");
}

}  // namespace kpilot::cli
