// Finding the compilers and binary tools, and asking them their versions.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

#include "core/fs.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace fs = std::filesystem;
namespace {

bool IsExecutableFile(const fs::path& p) {
  struct stat sb;
  return stat(p.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::string EnvOr(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

// The site-packages folders of a venv: <venv>/lib/python3.*/site-packages.
std::vector<fs::path> SitePackages(const fs::path& venv) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::path lib = venv / "lib";
  if (!fs::is_directory(lib, ec)) return out;
  for (const auto& py : fs::directory_iterator(lib, ec))
    if (py.path().filename().string().rfind("python3", 0) == 0) out.push_back(py.path() / "site-packages");
  return out;
}

// <venv>/lib/python3.*/site-packages/nvidia/*/bin/<name>: the nvidia-cuda-* wheels put their
// binaries under a per-release folder (nvidia/cu13/bin for 13.x, nvidia/cuda_cuobjdump/bin
// for 12.x).
std::string FindInVenv(const fs::path& venv, const std::string& name) {
  std::error_code ec;
  for (const fs::path& site : SitePackages(venv)) {
    fs::path nvidia = site / "nvidia";
    if (!fs::is_directory(nvidia, ec)) continue;
    for (const auto& pkg : fs::directory_iterator(nvidia, ec)) {
      fs::path cand = pkg.path() / "bin" / name;
      if (IsExecutableFile(cand)) return cand.string();
    }
  }
  return "";
}

}  // namespace

std::string ToolVersionOutput(ProcessRunner& runner, const std::string& program) {
  if (program.empty()) return "";
  ProcessSpec spec;
  spec.argv = {program, "--version"};
  spec.timeout_s = 30;
  auto r = runner.Run(spec);
  if (!r.ok() || !r->Succeeded()) return "";
  return r->out + r->err;
}

ToolSearch DefaultToolSearch() {
  ToolSearch s;
  s.path = EnvOr("PATH", "/usr/local/bin:/usr/bin:/bin");
  s.cuda_home = EnvOr("CUDA_HOME");
  s.dirs = {"/usr/local/cuda/bin"};
  // The project's own venv (scripts/setup-venv.sh), for an executable of a build tree only.
  if (auto source = BuildTreeSourceDir()) s.venvs.push_back(*source / ".venv");
  std::error_code ec;
  fs::path here = fs::current_path(ec);
  if (!ec) s.venvs.push_back(here / ".venv");
  s.cuobjdump_override = EnvOr("KPILOT_CUOBJDUMP");
  if (std::string cutlass = EnvOr("KPILOT_CUTLASS"); !cutlass.empty()) s.cutlass_roots.push_back(cutlass);
  s.cutlass_roots.push_back(ExecutableDir().parent_path() / "share" / "kpilot" / "cutlass");
  return s;
}

std::string FindTool(const std::string& name, const ToolSearch& search) {
  if (name.empty()) return "";
  size_t start = 0;
  const std::string& p = search.path;
  while (!p.empty() && start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty() && IsExecutableFile(fs::path(dir) / name)) return (fs::path(dir) / name).string();
    start = end + 1;
  }
  if (!search.cuda_home.empty() && IsExecutableFile(fs::path(search.cuda_home) / "bin" / name))
    return (fs::path(search.cuda_home) / "bin" / name).string();
  for (const auto& dir : search.dirs)
    if (IsExecutableFile(dir / name)) return (dir / name).string();
  for (const auto& venv : search.venvs) {
    std::string found = FindInVenv(venv, name);
    if (!found.empty()) return found;
  }
  return "";
}

std::vector<std::string> FindCutlassTrees(const ToolSearch& search) {
  auto headers = FindCutlass(search);  // what candidates compile against is what a model reads
  if (!headers) return {};
  std::vector<std::string> trees = {headers->include.string()};
  std::error_code ec;
  if (fs::path examples = headers->include.parent_path() / "examples"; fs::is_directory(examples, ec))
    trees.push_back(examples.string());
  return trees;
}

std::string ParseCutlassVersion(const std::string& version_h) {
  std::string parts[3];
  const char* names[3] = {"CUTLASS_MAJOR", "CUTLASS_MINOR", "CUTLASS_PATCH"};
  for (int i = 0; i < 3; ++i) {
    std::smatch m;
    if (!std::regex_search(version_h, m, std::regex(std::string(R"(#define\s+)") + names[i] + R"(\s+([0-9]+))")))
      return "";
    parts[i] = m[1];
  }
  return parts[0] + "." + parts[1] + "." + parts[2];
}

std::optional<CutlassHeaders> FindCutlass(const ToolSearch& search) {
  std::vector<fs::path> roots = search.cutlass_roots;
  for (const auto& venv : search.venvs)
    for (const fs::path& site : SitePackages(venv)) roots.push_back(site / "cutlass_library" / "source");
  std::error_code ec;
  for (const auto& root : roots) {
    if (!fs::is_directory(root / "include" / "cute", ec) || !fs::is_directory(root / "include" / "cutlass", ec))
      continue;
    CutlassHeaders h;
    h.include = fs::absolute(root / "include", ec).lexically_normal();
    if (fs::is_directory(root / "tools" / "util" / "include", ec))
      h.util_include = fs::absolute(root / "tools" / "util" / "include", ec).lexically_normal();
    auto version = ReadFile(root / "include" / "cutlass" / "version.h");
    h.version = version.ok() ? ParseCutlassVersion(*version) : "";
    if (h.version.empty()) h.version = "unknown";
    return h;
  }
  return std::nullopt;
}

std::string FindCuobjdump(const ToolSearch& search) {
  if (!search.cuobjdump_override.empty())
    return IsExecutableFile(search.cuobjdump_override) ? search.cuobjdump_override : "";
  return FindTool("cuobjdump", search);
}

std::string FindCuobjdump() { return FindCuobjdump(DefaultToolSearch()); }

std::string NvccVersion(ProcessRunner& runner) {
  return ParseNvccVersion(ToolVersionOutput(runner, FindTool("nvcc", DefaultToolSearch())));
}

std::string GxxVersion(ProcessRunner& runner) {
  return ParseGxxVersion(ToolVersionOutput(runner, FindTool("g++", DefaultToolSearch())));
}

Result<std::string> GencodeFlag(const std::string& cuda_arch) {
  static const std::regex kArch(R"(^sm_([0-9]{2,3}[af]?)$)");
  std::smatch m;
  if (!std::regex_match(cuda_arch, m, kArch))
    return Status::InvalidInput("cuda arch \"" + cuda_arch +
                                "\": expected sm_<digits> with an optional a/f suffix, e.g. sm_90a or sm_80");
  return "-gencode=arch=compute_" + m[1].str() + ",code=sm_" + m[1].str();
}

}  // namespace kpilot
