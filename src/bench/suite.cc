// Suite discovery: which layout a folder has and the problems it holds, from file names alone.
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "bench/bench.h"

namespace kpilot {

namespace fs = std::filesystem;

namespace {

// "level12" → 12; anything else → −1.
int LevelNumber(const std::string& folder) {
  if (folder.rfind("level", 0) != 0 || folder.size() == 5) return -1;
  for (size_t i = 5; i < folder.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(folder[i]))) return -1;
  return std::stoi(folder.substr(5));
}

// "19_ReLU" → 19; no leading number → −1.
long ProblemNumber(const std::string& stem) {
  size_t i = 0;
  while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i]))) ++i;
  if (i == 0 || i >= stem.size() || stem[i] != '_') return -1;
  return std::stol(stem.substr(0, i));
}

std::vector<fs::path> SortedEntries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path IfFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p : fs::path();
}

std::vector<BenchProblem> KernelBenchProblems(const fs::path& root) {
  std::vector<std::pair<int, fs::path>> levels;
  for (const auto& d : SortedEntries(root))
    if (fs::is_directory(d) && LevelNumber(d.filename().string()) >= 0)
      levels.push_back({LevelNumber(d.filename().string()), d});
  std::sort(levels.begin(), levels.end());
  std::vector<BenchProblem> out;
  for (const auto& [n, dir] : levels) {
    std::vector<std::pair<long, BenchProblem>> found;
    for (const auto& f : SortedEntries(dir)) {
      std::string stem = f.stem().string();
      if (f.extension() != ".py" || !fs::is_regular_file(f) || ProblemNumber(stem) < 0) continue;
      BenchProblem p;
      p.level = std::to_string(n);
      p.stem = stem;
      p.id = dir.filename().string() + "/" + stem;
      p.path = f;
      // Starting candidates: ROOT/candidates/<stem>/, else beside the level's problems.
      for (const fs::path& c : {root / "candidates" / stem, dir / "candidates" / stem}) {
        if (p.native.empty()) p.native = IfFile(c / "native.cu");
        if (p.model_new.empty()) p.model_new = IfFile(c / "model_new.py");
      }
      found.push_back({ProblemNumber(stem), p});
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [num, p] : found) out.push_back(std::move(p));
  }
  return out;
}

std::vector<BenchProblem> FlashInferProblems(const fs::path& root) {
  std::vector<BenchProblem> out;
  for (const auto& op : SortedEntries(root / "definitions")) {
    if (!fs::is_directory(op)) continue;
    for (const auto& f : SortedEntries(op)) {
      if (f.extension() != ".json" || !fs::is_regular_file(f)) continue;
      BenchProblem p;
      p.level = op.filename().string();
      p.stem = f.stem().string();
      p.id = p.level + "/" + p.stem;
      p.path = f;
      p.native = IfFile(root / "native" / (p.stem + ".cu"));
      if (p.native.empty()) p.native = IfFile(root / "candidates" / p.stem / "native.cu");
      out.push_back(std::move(p));
    }
  }
  return out;
}

bool IsTaskFolder(const fs::path& p) { return fs::is_regular_file(p / "task.toml"); }

std::vector<BenchProblem> TaskFolderProblems(const fs::path& root) {
  std::vector<BenchProblem> out;
  auto add = [&out](const fs::path& dir, const std::string& level) {
    BenchProblem p;
    p.level = level;
    p.stem = dir.filename().string();
    p.id = level + "/" + p.stem;
    p.path = dir;
    out.push_back(std::move(p));
  };
  // Tasks directly under the root form one level, "all"; folders of tasks are levels by name.
  for (const auto& d : SortedEntries(root))
    if (fs::is_directory(d) && IsTaskFolder(d)) add(d, "all");
  for (const auto& d : SortedEntries(root)) {
    if (!fs::is_directory(d) || IsTaskFolder(d)) continue;
    for (const auto& t : SortedEntries(d))
      if (fs::is_directory(t) && IsTaskFolder(t)) add(t, d.filename().string());
  }
  return out;
}

}  // namespace

const char* SuiteFormatName(SuiteFormat f) {
  switch (f) {
    case SuiteFormat::kKernelBench:
      return "kernelbench";
    case SuiteFormat::kFlashInfer:
      return "flashinfer";
    case SuiteFormat::kTaskFolders:
      return "tasks";
  }
  return "tasks";
}

Result<Suite> DiscoverSuite(const fs::path& root_in) {
  std::error_code ec;
  if (!fs::is_directory(root_in, ec))
    return Status::InvalidInput(
        "suite " + root_in.string() +
        ": not a folder — give a KernelBench-layout folder "
        "(level1/, level2/ …), a flashinfer-bench dataset (definitions/) or a folder of task folders");
  Suite s;
  s.root = fs::absolute(root_in).lexically_normal();
  if (s.root.filename().empty()) s.root = s.root.parent_path();
  s.name = s.root.filename().string();
  if (fs::is_directory(s.root / "definitions")) {
    s.format = SuiteFormat::kFlashInfer;
    s.problems = FlashInferProblems(s.root);
  } else if (!(s.problems = KernelBenchProblems(s.root)).empty()) {
    s.format = SuiteFormat::kKernelBench;
  } else {
    s.format = SuiteFormat::kTaskFolders;
    s.problems = TaskFolderProblems(s.root);
  }
  if (s.problems.empty())
    return Status::InvalidInput(
        "suite " + s.root.string() +
        " holds no problem: expected level<N>/<n>_<Name>.py (KernelBench), definitions/<op_type>/<name>.json "
        "(flashinfer-bench) or <task>/task.toml and <level>/<task>/task.toml (kpilot task folders)");
  return s;
}

Result<std::vector<BenchProblem>> SelectProblems(const Suite& suite, const std::vector<std::string>& levels,
                                                 const std::string& glob) {
  std::vector<std::string> known;
  for (const auto& p : suite.problems)
    if (std::find(known.begin(), known.end(), p.level) == known.end()) known.push_back(p.level);
  std::vector<std::string> wanted;
  for (std::string l : levels) {
    if (suite.format == SuiteFormat::kKernelBench && LevelNumber(l) >= 0) l = std::to_string(LevelNumber(l));
    if (std::find(known.begin(), known.end(), l) == known.end()) {
      std::string have;
      for (const auto& k : known) have += (have.empty() ? "" : ", ") + k;
      return Status::InvalidInput("--levels " + l + ": suite " + suite.name + " has levels " + have);
    }
    wanted.push_back(l);
  }
  std::vector<BenchProblem> out;
  for (const auto& p : suite.problems) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), p.level) == wanted.end()) continue;
    if (!glob.empty() && fnmatch(glob.c_str(), p.stem.c_str(), 0) != 0 && fnmatch(glob.c_str(), p.id.c_str(), 0) != 0)
      continue;
    out.push_back(p);
  }
  return out;
}

Result<fs::path> FindEvalCandidate(const fs::path& dir, const BenchProblem& p) {
  // The level's folder as the suite names it: level1/ for KernelBench, the op_type or level otherwise.
  std::string level_folder = p.id.substr(0, p.id.find('/'));
  std::vector<fs::path> bases = {dir, dir / level_folder};
  for (const auto& base : bases)
    for (const char* ext : {".cu", ".py", ".json", ".cpp"})
      if (auto f = IfFile(base / (p.stem + ext)); !f.empty()) return f;
  for (const auto& base : bases) {
    fs::path folder = base / p.stem;
    if (!fs::is_directory(folder)) continue;
    for (const char* name : {"native.cu", "model_new.py"})
      if (auto f = IfFile(folder / name); !f.empty()) return f;
    std::vector<fs::path> files;
    for (const auto& f : SortedEntries(folder))
      if (fs::is_regular_file(f) &&
          (f.extension() == ".cu" || f.extension() == ".py" || f.extension() == ".json" || f.extension() == ".cpp"))
        files.push_back(f);
    if (files.size() == 1) return files.front();
    if (files.size() > 1)
      return Status::InvalidInput("--eval-only: " + folder.string() + " holds " + std::to_string(files.size()) +
                                  " candidate files — name the one to evaluate native.cu or model_new.py");
  }
  return Status::NotFound("--eval-only: no candidate for " + p.id + " in " + dir.string() + " (tried " + p.stem +
                          ".cu/.py/.json/.cpp and " + p.stem + "/ there and under " + level_folder + "/)");
}

std::vector<fs::path> UnmatchedEvalCandidates(const fs::path& dir, const Suite& suite) {
  std::set<std::string> stems, levels;
  for (const auto& p : suite.problems) {
    stems.insert(p.stem);
    levels.insert(p.id.substr(0, p.id.find('/')));
  }
  auto is_candidate_file = [](const fs::path& f) {
    const auto e = f.extension();
    return fs::is_regular_file(f) && (e == ".cu" || e == ".py" || e == ".json" || e == ".cpp");
  };
  std::vector<fs::path> unmatched;
  auto scan = [&](const fs::path& base, bool top) {
    for (const auto& e : SortedEntries(base)) {
      const std::string name = e.filename().string();
      if (name.empty() || name[0] == '.' || name == "__pycache__") continue;
      if (fs::is_directory(e)) {
        if (top && levels.count(name)) continue;  // a level folder: scanned below
        if (!stems.count(name)) unmatched.push_back(e);
      } else if (is_candidate_file(e) && !stems.count(e.stem().string())) {
        unmatched.push_back(e);
      }
    }
  };
  scan(dir, true);
  for (const auto& level : levels)
    if (fs::is_directory(dir / level)) scan(dir / level, false);
  return unmatched;
}

}  // namespace kpilot
