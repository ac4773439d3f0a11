#include "propose/prompt.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/fs.h"

namespace kpilot {
namespace {

std::string Fence(const std::string& lang, const std::string& code) {
  std::string body = code;
  if (!body.empty() && body.back() != '\n') body += '\n';
  return "```" + lang + "\n" + body + "```\n";
}

std::string CodeLanguage(const Task& task) { return task.backend == Backend::kCuda ? "cuda" : "cpp"; }

std::string ParamsSection(const Task& task, const ProposalContext& ctx) {
  if (task.params.empty()) return "";
  std::string s = "## Tunable params\n\nkpilot passes these to the compiler as -DNAME=VALUE; the parent is compiled with " +
                  ParamsText(ctx.parent_params, "their defaults") + ", and your file is compiled with the same values. "
                  "Keep a `#ifndef NAME / #define NAME <default>` for each param you use; another part of the search "
                  "tunes them.\n\n";
  for (const auto& p : task.params) {
    std::string values;
    for (const auto& v : p.values) values += (values.empty() ? "" : ", ") + v;
    s += "- " + p.name + " ∈ {" + values + "}\n";
  }
  if (!task.constraints.empty()) {
    s += "\nConstraints:";
    for (const auto& c : task.constraints) s += " `" + c + "`";
    s += "\n";
  }
  return s + "\n";
}

std::string ProfileSection(const ProposalContext& ctx) {
  if (ctx.bottleneck.empty() && ctx.findings.empty()) return "";
  std::string s = "## Profile of the parent\n\n";
  if (!ctx.bottleneck.empty()) s += "Roofline class: " + ctx.bottleneck + "\n\n";
  if (!ctx.findings.empty()) {
    s += "Findings, most severe first (each says what to change and why):\n\n";
    int i = 1;
    for (const auto& f : ctx.findings) s += fmt::format("{}. `{}` (severity {:.2f}): {}\n", i++, f.id, f.severity, f.guidance);
    s += "\nIf your change answers one finding, name it on a line `Finding: <id>`.\n";
  }
  return s + "\n";
}

std::string RawMetricsSection(const ProposalContext& ctx) {
  nlohmann::json j = nlohmann::json::object();
  if (!ctx.parent_metrics.empty()) {
    auto m = nlohmann::json::parse(ctx.parent_metrics, nullptr, false);
    if (!m.is_discarded()) j["parent"] = m;
  }
  nlohmann::json ev = nlohmann::json::object();
  for (const auto& f : ctx.findings)
    if (!f.evidence.empty()) ev[f.id] = f.evidence;
  if (!ev.empty()) j["finding_evidence"] = ev;
  if (j.empty()) return "";
  return "## Raw metrics of the parent\n\n" + Fence("json", j.dump(2)) + "\n";
}

}  // namespace

std::string CandidateExtension(const Task& task) { return task.backend == Backend::kCuda ? ".cu" : ".cpp"; }

PromptVars BuildPromptVars(const Task& task, const ProposalContext& ctx, const PromptOptions& options) {
  PromptVars v;
  v["task_name"] = task.name;
  v["task_description"] = task.description.empty() ? "(no description: read task.toml)" : task.description;
  v["backend"] = std::string(BackendName(task.backend));
  v["extension"] = CandidateExtension(task);
  v["compile_command"] = task.backend == Backend::kCuda
                             ? "nvcc -O3 -lineinfo -std=c++17 -Xcompiler -fPIC -shared for the GPU's architecture"
                             : "g++ -O3 -march=native -fopenmp -std=c++17 -fPIC -shared";
  auto toml = ReadFile(task.dir / "task.toml");
  v["task_toml"] = toml.ok() ? Fence("toml", *toml) : "(task.toml could not be read)\n";
  v["reference_name"] = task.reference.path.filename().string();
  auto ref = ReadFile(task.reference.path);
  v["reference_source"] = ref.ok() ? Fence(task.reference.kind == ReferenceKind::kPython ? "python" : CodeLanguage(task), *ref)
                                   : "(the reference could not be read)\n";
  v["abi_header"] = Fence("c", options.abi_header);
  v["params"] = ParamsSection(task, ctx);
  v["parent_name"] = ctx.parent_source_name;
  v["parent_source"] = Fence(CodeLanguage(task), ctx.parent_source);
  v["parent_verdict"] = ctx.parent_verdict == "passed"
                            ? fmt::format("passed, {:.3f}× the task's baseline", ctx.parent_speedup)
                            : ctx.parent_verdict + (ctx.parent_verdict_summary.empty() ? "" : ": " + ctx.parent_verdict_summary);
  std::string evidence;
  if (ctx.parent_verdict != "passed" && (!ctx.parent_verdict_summary.empty() || !ctx.parent_verdict_evidence.empty())) {
    evidence = "## What went wrong with the parent\n\n" + ctx.parent_verdict + ": " + ctx.parent_verdict_summary + "\n\n";
    if (!ctx.parent_verdict_evidence.empty()) {
      auto j = nlohmann::json::parse(ctx.parent_verdict_evidence, nullptr, false);
      evidence += Fence("json", j.is_discarded() ? ctx.parent_verdict_evidence : j.dump(2)) + "\n";
    }
  }
  v["verdict_evidence"] = evidence;
  v["profile"] = ProfileSection(ctx);
  v["raw_metrics"] = options.raw_metrics ? RawMetricsSection(ctx) : "";
  v["memory"] = ctx.memory_summary.empty() ? "" : "## What the search has tried so far\n\n" + ctx.memory_summary + "\n\n";
  std::string siblings;
  for (const auto& s : ctx.sibling_summaries)
    if (!s.empty()) siblings += "- " + s + "\n";
  v["siblings"] = siblings.empty() ? "" : "## Already tried from this parent — do not repeat these\n\n" + siblings + "\n";
  v["tools"] = options.tools
                   ? "## Tools\n\nYou may call tools before answering: `search_code` and `read_file` over reference source "
                     "trees (CUTLASS/CuTe headers and examples first when configured), `get_profile` for the parent's "
                     "findings (and raw counters when this run allows them), `list_skills`/`get_skill`. Calls are "
                     "limited per draft; when you are done, answer with the file or call `submit_candidate`.\n\n"
                   : "";
  v["draft_note"] = ctx.k > 1 ? fmt::format("This is draft {} of {} asked at once from the same parent: make it a "
                                            "different idea from the most obvious one (for example, answer finding {} "
                                            "when there is one).\n\n",
                                            options.draft + 1, ctx.k, options.draft + 1)
                              : "";
  v["candidate_file"] = options.candidate_file;
  return v;
}

Result<std::string> LoadPromptTemplate(const std::string& name, const std::filesystem::path& override_dir,
                                       const std::filesystem::path& shipped_dir) {
  if (!override_dir.empty() && std::filesystem::exists(override_dir / name)) return ReadFile(override_dir / name);
  if (std::filesystem::exists(shipped_dir / name)) return ReadFile(shipped_dir / name);
  return Status::NotFound("prompt template " + name + " is in neither " +
                          (override_dir.empty() ? std::string("(no prompts_dir configured)") : override_dir.string()) +
                          " nor " + shipped_dir.string() + " — set KPILOT_PROMPTS_DIR to kpilot's prompts/ folder");
}

Result<std::string> RenderPrompt(const std::string& text, const PromptVars& vars, const std::string& file) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 2, close - open - 2);
    auto it = vars.find(name);
    if (it == vars.end()) {
      int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(open), '\n'));
      std::string known;
      for (const auto& [k, _] : vars) known += (known.empty() ? "" : " ") + k;
      return Status::InvalidInput(fmt::format("{}:{}: unknown placeholder {{{{{}}}}} — known: {}", file, line, name, known));
    }
    out.append(text, pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace kpilot
