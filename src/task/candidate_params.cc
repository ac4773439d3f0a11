// Params declared by a candidate in a `/* kpilot-params … */` block (loader.h).
#include <algorithm>

#include "core/fs.h"
#include "task/formula.h"
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

Status CheckParams(const Task& task, const ParamValues& params) {
  for (const auto& [name, value] : params) {
    if (task.params.empty()) break;
    auto p =
        std::find_if(task.params.begin(), task.params.end(), [&](const TunableParam& t) { return t.name == name; });
    if (p == task.params.end()) {
      std::string known;
      for (const auto& tp : task.params) known += (known.empty() ? "" : ", ") + tp.name;
      return Status::InvalidInput(name + "=" + value + ": task " + task.name + " declares no param " + name +
                                  " (its params: " + known + ")");
    }
    if (std::find(p->values.begin(), p->values.end(), value) == p->values.end()) {
      std::string allowed;
      for (const auto& v : p->values) allowed += (allowed.empty() ? "" : ", ") + v;
      return Status::InvalidInput(name + "=" + value + ": " + name + " must be one of " + allowed +
                                  " (the declared params)");
    }
  }
  if (params.empty()) return Status::Ok();
  for (const auto& c : task.constraints) {
    auto names = FormulaVariables(c);
    if (!names.ok()) return names.status();
    if (!std::all_of(names->begin(), names->end(), [&](const std::string& n) { return params.count(n) > 0; })) continue;
    auto holds = ConstraintsHold({c}, params);
    if (!holds.ok()) return holds.status();
    if (!*holds)
      return Status::InvalidInput(ParamsText(params) + " breaks the constraint \"" + c + "\" of " + task.name +
                                  "'s task.toml");
  }
  return Status::Ok();
}

}  // namespace kpilot
