// Params declared by a candidate in a `/* kpilot-params … */` block (loader.h).
#include <algorithm>

#include "core/fs.h"
#include "task/loader.h"
#include "task/loader_internal.h"

namespace kpilot {
using namespace loader;

namespace {

constexpr std::string_view kMarker = "kpilot-params";

int LineAt(const std::string& text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The offset of the block's marker: "/*", optional blanks, "kpilot-params"; npos when none.
size_t FindBlock(const std::string& text, size_t* body_start) {
  for (size_t open = text.find("/*"); open != std::string::npos; open = text.find("/*", open + 2)) {
    size_t at = text.find_first_not_of(" \t", open + 2);
    if (at != std::string::npos && text.compare(at, kMarker.size(), kMarker) == 0) {
      *body_start = at + kMarker.size();
      return open;
    }
  }
  return std::string::npos;
}

}  // namespace

Result<CandidateParams> ParseCandidateParams(const std::string& text, const std::string& file_name) {
  CandidateParams out;
  size_t body_start = 0;
  size_t open = FindBlock(text, &body_start);
  if (open == std::string::npos) return out;
  out.declared = true;
  out.line = LineAt(text, open);
  Diagnostics d(file_name);
  size_t close = text.find("*/", body_start);
  if (close == std::string::npos) {
    d.Add(out.line, std::string(kMarker), "the block comment is never closed", "end it with */ on its own line");
    return Status::InvalidInput(d.Joined());
  }
  // The body keeps its place in the file, so TOML's line numbers are the source's.
  std::string body(static_cast<size_t>(LineAt(text, body_start) - 1), '\n');
  body += text.substr(body_start, close - body_start);
  toml::table root;
  try {
    root = toml::parse(body, std::string_view(file_name));
  } catch (const toml::parse_error& e) {
    d.Add(static_cast<int>(e.source().begin.line), std::string(kMarker), std::string(e.description()),
          "write the block as TOML, e.g. BLOCK = [64, 128] (see docs/task-format.md)");
    return Status::InvalidInput(d.Joined());
  }
  out.params = ReadParams(root, d, "constraints");
  if (out.params.empty() && d.empty())
    d.Add(out.line, std::string(kMarker), "the block declares no params",
          "list each as NAME = [values], e.g. BLOCK = [64, 128, 256], or remove the block");
  if (const toml::node* n = root.get("constraints")) out.constraints = ReadConstraints(*n, out.params, d);
  if (!d.empty()) return Status::InvalidInput(d.Joined());
  return out;
}

Result<CandidateParams> ReadCandidateParams(const std::filesystem::path& source) {
  auto text = ReadFile(source);
  if (!text.ok()) return text.status();
  return ParseCandidateParams(*text, source.filename().string());
}

Status AdoptCandidateParams(Task* task, const std::filesystem::path& candidate) {
  if (!task->params.empty()) return Status::Ok();
  auto declared = ReadCandidateParams(candidate);
  if (!declared.ok()) return declared.status();
  task->params = std::move(declared->params);
  task->constraints = std::move(declared->constraints);
  return Status::Ok();
}

}  // namespace kpilot
