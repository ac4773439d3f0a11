#include "generate/code_tools.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool Searchable(const fs::path& p) {
  static const char* kExt[] = {".h",  ".hpp", ".cuh", ".hh", ".inl", ".cu", ".cpp",
                               ".cc", ".cxx", ".c",   ".py", ".md",  ".txt"};
  std::string e = p.extension().string();
  return std::find(std::begin(kExt), std::end(kExt), e) != std::end(kExt);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> Terms(const std::string& q) {
  std::vector<std::string> t;
  std::istringstream in(Lower(q));
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

// True when `p` lies inside `root` (both canonical).
bool Inside(const fs::path& p, const fs::path& root) {
  auto r = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return r.first == root.end();
}

}  // namespace

CodeTools::CodeTools(CodeToolsOptions options, const ProposalContext* ctx) : options_(std::move(options)), ctx_(ctx) {}

std::string CodeTools::RootName(size_t i) const {
  std::string name = options_.roots[i].filename().string();
  if (name.empty()) name = options_.roots[i].parent_path().filename().string();
  for (size_t j = 0; j < options_.roots.size(); ++j)
    if (j != i && options_.roots[j].filename() == options_.roots[i].filename()) return "#" + std::to_string(i);
  return name;
}

std::vector<llm::ToolSpec> CodeTools::Specs() const {
  std::vector<llm::ToolSpec> specs;
  if (!options_.roots.empty()) {
    std::string trees;
    for (size_t i = 0; i < options_.roots.size(); ++i) trees += (trees.empty() ? "" : ", ") + RootName(i);
    specs.push_back(
        {"search_code",
         "Search the reference source trees (" + trees +
             ") for lines matching a query; returns ranked "
             "\"TREE/path:line: text\" hits, at most " +
             std::to_string(options_.max_hits) + ".",
         {{"type", "object"},
          {"properties",
           {{"query", {{"type", "string"}, {"description", "words that must all appear in a line, or a regex"}}},
            {"regex", {{"type", "boolean"}, {"description", "treat query as an ECMAScript regex"}}},
            {"path_contains", {{"type", "string"}, {"description", "only files whose path contains this"}}}}},
          {"required", {"query"}}}});
    specs.push_back({"read_file",
                     "Read part of a file from the source trees, by the TREE/path a search returned.",
                     {{"type", "object"},
                      {"properties",
                       {{"path", {{"type", "string"}}},
                        {"start_line", {{"type", "integer"}, {"description", "1-based, default 1"}}},
                        {"max_lines", {{"type", "integer"}, {"description", "default 200, at most 400"}}}}},
                      {"required", {"path"}}}});
  }
  specs.push_back(
      {"get_profile",
       "The parent candidate's roofline class and ranked findings with guidance.",
       {{"type", "object"},
        {"properties", {{"counters", {{"type", "boolean"}, {"description", "also the raw numbers, when allowed"}}}}}}});
  specs.push_back({"list_skills",
                   "The skill cards (optimization techniques with preconditions, recipe and risks) kpilot's library "
                   "offers for this parent, best first: id, intent, tune_only, why it was offered.",
                   {{"type", "object"}, {"properties", json::object()}}});
  specs.push_back({"get_skill",
                   "One offered skill card's whole text (SKILL.md) by id.",
                   {{"type", "object"},
                    {"properties", {{"name", {{"type", "string"}, {"description", "the card id from list_skills"}}}}},
                    {"required", {"name"}}}});
  specs.push_back({"submit_candidate",
                   "Submit the one complete candidate file (instead of a fenced code block).",
                   {{"type", "object"},
                    {"properties",
                     {{"source", {{"type", "string"}, {"description", "the whole file"}}},
                      {"summary", {{"type", "string"}, {"description", "one line: what changed and why"}}},
                      {"finding", {{"type", "string"}, {"description", "the finding id it answers, if any"}}},
                      {"applied_skills",
                       {{"type", "array"},
                        {"items", {{"type", "string"}}},
                        {"description", "ids of the skill cards the file applies"}}}}},
                    {"required", {"source"}}}});
  return specs;
}

std::string CodeTools::Call(const std::string& name, const json& args) const {
  try {
    if (name == "search_code" && !options_.roots.empty())
      return SearchCode(args.at("query").get<std::string>(), args.value("regex", false),
                        args.value("path_contains", ""));
    if (name == "read_file" && !options_.roots.empty())
      return ReadFile(args.at("path").get<std::string>(), args.value("start_line", 1), args.value("max_lines", 200));
    if (name == "get_profile") {
      if (!ctx_) return "error: no profile";
      std::string s =
          "roofline class: " + (ctx_->bottleneck.empty() ? std::string("(not profiled)") : ctx_->bottleneck) + "\n";
      if (ctx_->findings.empty()) s += "no findings\n";
      for (const auto& f : ctx_->findings)
        s += fmt::format("- {} (severity {:.2f}): {}\n", f.id, f.severity, f.guidance);
      if (args.value("counters", false)) {
        if (!options_.raw_metrics)
          return s + "(raw counters are not shared in this run: it was started without --raw-metrics)\n";
        json ev = json::object();
        for (const auto& f : ctx_->findings) ev[f.id] = f.evidence;
        s += "evidence: " + ev.dump() + "\n";
        if (!ctx_->parent_metrics.empty()) s += "metrics: " + ctx_->parent_metrics + "\n";
      }
      return s;
    }
    if (name == "list_skills") return ListSkills();
    if (name == "get_skill") return GetSkill(args.at("name").get<std::string>());
    return "error: unknown tool \"" + name + "\"";
  } catch (const std::exception& e) {
    return "error: bad arguments for " + name + ": " + e.what();
  }
}

std::string CodeTools::ListSkills() const {
  if (!ctx_ || !ctx_->skills_enabled) return "[]  (skill cards are off in this run: --skills off)";
  if (ctx_->skills.empty())
    return "[]  (no skill card of the library fits this kernel: none matches its profile, platform and features)";
  json list = json::array();
  for (const auto& s : ctx_->skills)
    list.push_back({{"id", s.id}, {"intent", s.intent}, {"tune_only", s.tune_only}, {"reason", s.reason}});
  return list.dump(1);
}

std::string CodeTools::GetSkill(const std::string& name) const {
  if (!ctx_ || !ctx_->skills_enabled) return "error: skill cards are off in this run (--skills off)";
  std::string ids;
  for (const auto& s : ctx_->skills) {
    if (s.id == name) {
      if (s.card_text.size() <= options_.max_read_bytes) return s.card_text;
      size_t cut = s.card_text.rfind('\n', options_.max_read_bytes);
      cut = cut == std::string::npos ? 0 : cut + 1;
      return s.card_text.substr(0, cut) + fmt::format("… (cut after {} of {} bytes)\n", cut, s.card_text.size());
    }
    ids += (ids.empty() ? "" : ", ") + s.id;
  }
  if (ids.empty()) return "error: no skill card named \"" + name + "\": no card of the library fits this kernel";
  return "error: no offered skill card named \"" + name + "\"; the offered cards are: " + ids;
}

fs::path CodeTools::Resolve(const std::string& path, std::string* error) const {
  fs::path p(path);
  if (p.is_absolute()) {
    *error = "error: give the path as TREE/relative/path from a search hit, not an absolute path";
    return {};
  }
  auto it = p.begin();
  if (it == p.end()) {
    *error = "error: empty path";
    return {};
  }
  std::string head = it->string();
  fs::path rel;
  for (++it; it != p.end(); ++it) {
    if (*it == "..") {
      *error = "error: \"..\" is not allowed in paths";
      return {};
    }
    if (*it != ".") rel /= *it;
  }
  for (size_t i = 0; i < options_.roots.size(); ++i) {
    if (RootName(i) != head) continue;
    std::error_code ec;
    fs::path root = fs::canonical(options_.roots[i], ec);
    if (ec) break;
    fs::path full = fs::canonical(root / rel, ec);  // follows symlinks: must still be inside
    if (ec) {
      *error = "error: no such file " + path;
      return {};
    }
    if (!Inside(full, root)) {
      *error = "error: " + path + " leads outside the source trees";
      return {};
    }
    return full;
  }
  std::string trees;
  for (size_t i = 0; i < options_.roots.size(); ++i) trees += (trees.empty() ? "" : ", ") + RootName(i);
  *error = "error: " + path + " is not in a source tree (trees: " + trees + ")";
  return {};
}

std::string CodeTools::ReadFile(const std::string& path, int start_line, int max_lines) const {
  std::string error;
  fs::path full = Resolve(path, &error);
  if (full.empty()) return error;
  if (!fs::is_regular_file(full)) return "error: " + path + " is not a file";
  start_line = std::max(1, start_line);
  max_lines = std::clamp(max_lines, 1, 400);
  std::ifstream in(full);
  std::string out, line;
  int n = 0, taken = 0;
  while (std::getline(in, line)) {
    if (++n < start_line) continue;
    if (taken >= max_lines || out.size() + line.size() > options_.max_read_bytes) {
      out += fmt::format("… (cut at line {}; read on with start_line={})\n", n - 1, n);
      return out;
    }
    out += line + "\n";
    ++taken;
  }
  if (taken == 0) return fmt::format("(the file has {} lines)", n);
  return out;
}

std::string CodeTools::SearchCode(const std::string& query, bool regex, const std::string& path_filter) const {
  std::vector<std::string> terms = Terms(query);
  std::optional<std::regex> re;
  if (regex) {
    try {
      re.emplace(query, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& e) {
      return std::string("error: bad regex: ") + e.what();
    }
  } else if (terms.empty()) {
    return "error: empty query";
  }
  struct Hit {
    double score;
    size_t order;
    std::string text;
  };
  std::vector<Hit> hits;
  size_t scanned = 0;
  for (size_t r = 0; r < options_.roots.size(); ++r) {
    std::error_code ec;
    fs::path root = fs::canonical(options_.roots[r], ec);
    if (ec) continue;
    // Symlinks are neither followed into folders nor read as files: nothing outside the tree.
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
         it != end && scanned < options_.max_scan_files; it.increment(ec)) {
      if (ec) break;
      if (it->is_symlink() || !it->is_regular_file() || !Searchable(it->path())) continue;
      if (it->file_size(ec) > options_.max_file_bytes) continue;
      std::string rel = RootName(r) + "/" + fs::relative(it->path(), root).string();
      if (!path_filter.empty() && Lower(rel).find(Lower(path_filter)) == std::string::npos) continue;
      ++scanned;
      std::ifstream in(it->path());
      std::string line;
      int n = 0;
      std::string lrel = Lower(rel);
      // Earlier trees first, then headers, then files whose path names CuTe/CUTLASS or a term.
      double file_bonus = -static_cast<double>(r) * 10;
      std::string ext = it->path().extension().string();
      if (ext == ".h" || ext == ".hpp" || ext == ".cuh") file_bonus += 2;
      if (lrel.find("cute") != std::string::npos || lrel.find("cutlass") != std::string::npos) file_bonus += 1;
      for (const auto& t : terms)
        if (lrel.find(t) != std::string::npos) file_bonus += 3;
      while (std::getline(in, line)) {
        ++n;
        bool match;
        double score = file_bonus;
        if (re) {
          match = std::regex_search(line, *re);
        } else {
          std::string l = Lower(line);
          match = std::all_of(terms.begin(), terms.end(),
                              [&](const std::string& t) { return l.find(t) != std::string::npos; });
          if (match && l.find(Lower(query)) != std::string::npos) score += 5;  // the query as a phrase
        }
        if (!match) continue;
        std::string text =
            line.substr(line.find_first_not_of(" \t") == std::string::npos ? 0 : line.find_first_not_of(" \t"), 200);
        hits.push_back({score, hits.size(), fmt::format("{}:{}: {}", rel, n, text)});
        if (hits.size() > 20000) break;
      }
    }
  }
  if (hits.empty()) return "no matches for \"" + query + "\"";
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.score > b.score; });
  std::string out;
  size_t shown = std::min(hits.size(), options_.max_hits);
  for (size_t i = 0; i < shown; ++i) out += hits[i].text + "\n";
  if (hits.size() > shown)
    out += fmt::format("… {} more matches; narrow the query or use path_contains\n", hits.size() - shown);
  return out;
}

}  // namespace kpilot
