// Helpers for loader tests: a task folder in a temporary directory, and matching of
// "task.toml:LINE: field: problem — fix" lines in a Status message.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/fs.h"
#include "core/status.h"

namespace kpilot::testing_util {

// A task folder under $TMPDIR, removed when the test ends.
class TaskDir {
 public:
  TaskDir() : dir_(std::move(TempDir::Create("kpilot-task-test-").value())) {}

  const std::filesystem::path& path() const { return dir_.path(); }

  void Write(const std::string& name, const std::string& content) const {
    std::filesystem::path p = dir_.path() / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

 private:
  TempDir dir_;
};

// 1-based number of the `nth` line of `text` containing `snippet` (0 when there is none).
inline int LineContaining(const std::string& text, const std::string& snippet, int nth = 1) {
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(snippet) != std::string::npos && --nth == 0) return n;
  ADD_FAILURE() << "no line contains \"" << snippet << "\"";
  return 0;
}

// Success when `status` is InvalidInput and one line of its message reads
// "task.toml:LINE: FIELD: ...PROBLEM... — <a fix>".
inline ::testing::AssertionResult HasProblem(const Status& status, int line, const std::string& field,
                                             const std::string& problem) {
  if (status.code() != StatusCode::kInvalidInput) {
    return ::testing::AssertionFailure() << "expected InvalidInput, got " << status.ToString();
  }
  const std::string prefix = "task.toml:" + std::to_string(line) + ": " + field + ": ";
  std::istringstream in(status.message());
  std::string l;
  while (std::getline(in, l)) {
    if (l.rfind(prefix, 0) != 0) continue;
    size_t dash = l.find(" — ");
    if (l.find(problem, prefix.size()) > dash) continue;  // the problem is before the fix
    if (dash == std::string::npos || dash + 6 >= l.size()) {
      return ::testing::AssertionFailure() << "no fix after \" — \" in: " << l;
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no line starting \"" << prefix << "\" mentions \"" << problem
                                       << "\" and a fix; message was:\n"
                                       << status.message();
}

inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not in:\n" << text;
}

// Number of problems (lines) in an InvalidInput message.
inline int ProblemCount(const Status& status) {
  if (status.ok()) return 0;
  int n = 1;
  for (char c : status.message()) n += c == '\n';
  return n;
}

}  // namespace kpilot::testing_util
