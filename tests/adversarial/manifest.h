// The adversarial suite's manifest (tests/adversarial/manifest.toml): one [[case]] per candidate.
// Shared by adversarial_manifest_test (CPU: the manifest is consistent and everything compiles)
// and adversarial_test (GPU: every case gets its verdict).
#pragma once

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace kpilot::adversarial {

namespace fs = std::filesystem;

// Under the source tree the tests were built from, or $KPILOT_TEST_SOURCE_DIR (test_paths.h).
inline fs::path SuiteDir() { return kpilot::testing::SourceDir() / "tests" / "adversarial"; }
inline fs::path CandidatesDir() { return SuiteDir() / "candidates"; }
inline fs::path TasksDir() { return SuiteDir() / "tasks"; }
inline fs::path ManifestPath() { return SuiteDir() / "manifest.toml"; }

inline const std::vector<std::string>& ValidVerdicts() {
  static const std::vector<std::string> v = {"compile_error", "runtime_error", "timeout",
                                             "incorrect",     "suspicious",    "passed"};
  return v;
}
inline bool IsValidVerdict(const std::string& s) {
  const auto& v = ValidVerdicts();
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct Case {
  std::string name;                          // the file's stem, e.g. "side_stream"
  std::string file;                          // relative to candidates/
  std::string task;                          // folder under tasks/
  std::string expected;                      // a verdict name
  std::vector<std::string> also_ok;          // other acceptable verdicts
  std::vector<std::string> reason_contains;  // any one must appear in the summary (case-insensitive)
  double timeout_s = 60;
  std::string timing = "default";            // the timing procedure (default | kernelbench | flashinfer)
  std::string klass;                         // the exploit class ("control" for honest candidates)
  std::string incident;                      // the public incident or report the class comes from
  std::vector<std::string> warning_contains; // any one must appear in one of the run's warnings
  int runs = 1;                              // evaluations in a row; the last one's verdict counts
  std::string why;
  int line = 0;

  fs::path source() const { return CandidatesDir() / file; }
  fs::path task_dir() const { return TasksDir() / task; }
  bool Accepts(const std::string& verdict) const {
    return verdict == expected || std::find(also_ok.begin(), also_ok.end(), verdict) != also_ok.end();
  }
};

inline std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// True when `reason_contains` is empty or one of its words occurs in `summary` (case-insensitive).
inline bool ReasonMatches(const Case& c, const std::string& summary) {
  if (c.reason_contains.empty()) return true;
  const std::string s = Lower(summary);
  for (const auto& w : c.reason_contains)
    if (s.find(Lower(w)) != std::string::npos) return true;
  return false;
}

// True when `warning_contains` is empty or one of its words occurs in one of `warnings`.
inline bool WarningMatches(const Case& c, const std::vector<std::string>& warnings) {
  if (c.warning_contains.empty()) return true;
  for (const auto& w : warnings)
    for (const auto& word : c.warning_contains)
      if (Lower(w).find(Lower(word)) != std::string::npos) return true;
  return false;
}

struct Manifest {
  std::vector<Case> cases;
  std::vector<std::string> errors;  // "manifest.toml:LINE: problem"
};

// Parses and validates the manifest's shape: required keys, known keys only, valid verdicts,
// unique files. (Whether files and tasks exist is checked by the tests, so that each problem is
// reported where it belongs.)
inline Manifest LoadManifest(const fs::path& path = ManifestPath()) {
  Manifest m;
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path.filename().string() << ":" << e.source().begin.line << ": " << e.description();
    m.errors.push_back(os.str());
    return m;
  }
  auto where = [&](const toml::node& n) {
    return path.filename().string() + ":" + std::to_string(n.source().begin.line) + ": ";
  };
  for (auto&& [key, node] : root)
    if (key != "case") m.errors.push_back(where(node) + "unknown top-level key \"" + std::string(key.str()) + "\"");
  const toml::array* cases = root["case"].as_array();
  if (cases == nullptr) {
    m.errors.push_back(path.filename().string() + ":1: no [[case]] tables");
    return m;
  }
  static const std::set<std::string> kKeys = {"file",      "task",     "expected", "also_ok",          "reason_contains",
                                              "timeout_s", "timing",   "class",    "incident",         "warning_contains",
                                              "runs",      "why"};
  std::set<std::string> files;
  for (const toml::node& node : *cases) {
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      m.errors.push_back(where(node) + "[[case]] is not a table");
      continue;
    }
    Case c;
    c.line = static_cast<int>(t->source().begin.line);
    const std::string at = where(*t);
    for (auto&& [key, value] : *t)
      if (!kKeys.count(std::string(key.str())))
        m.errors.push_back(where(value) + "unknown key \"" + std::string(key.str()) + "\" in [[case]]");
    auto str = [&](const char* key, std::string* out, bool required) {
      if (const toml::node* n = t->get(key)) {
        if (auto v = n->value<std::string>()) *out = *v;
        else m.errors.push_back(where(*n) + key + " must be a string");
      } else if (required) {
        m.errors.push_back(at + "[[case]] lacks " + key);
      }
    };
    auto strings = [&](const char* key, std::vector<std::string>* out) {
      const toml::node* n = t->get(key);
      if (n == nullptr) return;
      if (auto v = n->value<std::string>()) {
        out->push_back(*v);
      } else if (const toml::array* a = n->as_array()) {
        for (const toml::node& e : *a) {
          if (auto s = e.value<std::string>()) out->push_back(*s);
          else m.errors.push_back(where(e) + key + " must hold strings");
        }
      } else {
        m.errors.push_back(where(*n) + key + " must be a string or a list of strings");
      }
    };
    str("file", &c.file, true);
    str("task", &c.task, true);
    str("expected", &c.expected, true);
    str("why", &c.why, true);
    strings("also_ok", &c.also_ok);
    str("timing", &c.timing, false);
    if (c.timing != "default" && c.timing != "kernelbench" && c.timing != "flashinfer")
      m.errors.push_back(at + c.file + ": timing = \"" + c.timing + "\" is not default, kernelbench or flashinfer");
    strings("reason_contains", &c.reason_contains);
    strings("warning_contains", &c.warning_contains);
    str("class", &c.klass, true);
    str("incident", &c.incident, true);
    if (c.klass != "control" && !c.klass.empty() && c.incident.empty() && t->get("incident"))
      m.errors.push_back(at + c.file + ": incident is empty");
    if (const toml::node* n = t->get("runs")) {
      if (auto v = n->value<int64_t>(); v && *v >= 1 && *v <= 3) c.runs = static_cast<int>(*v);
      else m.errors.push_back(where(*n) + "runs must be 1, 2 or 3");
    }
    if (const toml::node* n = t->get("timeout_s")) {
      if (auto v = n->value<double>(); v && *v > 0) c.timeout_s = *v;
      else m.errors.push_back(where(*n) + "timeout_s must be a positive number");
    }
    c.name = fs::path(c.file).stem().string();
    if (!c.expected.empty() && !IsValidVerdict(c.expected))
      m.errors.push_back(at + c.file + ": expected = \"" + c.expected + "\" is not a verdict");
    for (const auto& v : c.also_ok) {
      if (!IsValidVerdict(v)) m.errors.push_back(at + c.file + ": also_ok \"" + v + "\" is not a verdict");
      if (v == c.expected) m.errors.push_back(at + c.file + ": also_ok repeats the expected verdict \"" + v + "\"");
    }
    for (const auto& w : c.reason_contains)
      if (w.empty()) m.errors.push_back(at + c.file + ": reason_contains holds an empty word");
    if (c.why.empty() && t->get("why")) m.errors.push_back(at + c.file + ": why is empty");
    if (!c.file.empty() && fs::path(c.file).extension() != ".cu")
      m.errors.push_back(at + c.file + ": candidates are .cu files");
    if (!c.file.empty() && !files.insert(c.file).second) m.errors.push_back(at + c.file + " is listed twice");
    m.cases.push_back(std::move(c));
  }
  return m;
}

inline std::string JoinLines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

}  // namespace kpilot::adversarial
