#include "generate/prompt.h"

#include <algorithm>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/fs.h"
#include "toolchain/toolchain.h"

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
  std::string s =
      "## Tunable params\n\nkpilot passes these to the compiler as -DNAME=VALUE; the parent is compiled with " +
      ParamsText(ctx.parent_params, "their defaults") +
      ", and your file is compiled with the same values. "
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
    for (const auto& f : ctx.findings)
      s += fmt::format("{}. `{}` (severity {:.2f}): {}\n", i++, f.id, f.severity, f.guidance);
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
  if (!ctx.profile_on_request)  // held back for get_profile: its evidence would name the findings
    for (const auto& f : ctx.findings)
      if (!f.evidence.empty()) ev[f.id] = f.evidence;
  if (!ev.empty()) j["finding_evidence"] = ev;
  if (j.empty()) return "";
  return "## Raw metrics of the parent\n\n" + Fence("json", j.dump(2)) + "\n";
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

constexpr const char* kPreconditionsHeading = "Preconditions (what must hold — why the technique fails without it):";
constexpr const char* kRisksHeading = "Risks:";
constexpr const char* kRecipeHeading = "Recipe:";

// Folded YAML text on one line.
std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The front matter (between the first `---` line and the next) and the body after it.
void SplitCard(const std::string& text, std::string* front, std::string* body) {
  std::vector<std::string> lines = SplitLines(text);
  size_t close = 0;
  if (!lines.empty() && lines[0] == "---")
    for (size_t i = 1; i < lines.size() && !close; ++i)
      if (lines[i] == "---") close = i;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (close && i <= close) {
      if (i > 0 && i < close) *front += lines[i] + "\n";
    } else {
      *body += lines[i] + "\n";
    }
  }
}

// The lines of the body's `## NAME` section, without its heading and outer blank lines.
std::vector<std::string> BodySection(const std::string& body, const std::string& name) {
  std::vector<std::string> out;
  bool in = false, fence = false;
  for (const auto& line : SplitLines(body)) {
    bool fence_line = line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0;
    if (!fence && line.rfind("## ", 0) == 0) {
      if (in) break;
      in = line.substr(3, name.size()) == name;
      continue;
    }
    if (fence_line) fence = !fence;
    if (in) out.push_back(line);
  }
  while (!out.empty() && out.front().find_first_not_of(" \t") == std::string::npos) out.erase(out.begin());
  while (!out.empty() && out.back().find_first_not_of(" \t") == std::string::npos) out.pop_back();
  return out;
}

// Cards that add a technique first, then tune-only ones; each group in retrieval's order.
std::vector<const OfferedSkill*> PromptedSkills(const ProposalContext& ctx, size_t max_skills) {
  std::vector<const OfferedSkill*> out;
  if (!ctx.skills_enabled) return out;
  for (bool tune_only : {false, true})
    for (const auto& s : ctx.skills)
      if (s.tune_only == tune_only && out.size() < max_skills) out.push_back(&s);
  return out;
}

std::string SkillsSection(const ProposalContext& ctx, const PromptOptions& options) {
  std::vector<const OfferedSkill*> cards = PromptedSkills(ctx, options.max_skills);
  if (cards.empty()) return "";
  std::string head =
      "## Skill cards that fit this kernel\n\n"
      "kpilot's skill library offers these techniques for the parent, ranked for its profile and platform. "
      "Apply a card only where its preconditions hold, following its recipe; mind its risks.";
  if (options.tools)
    head += fmt::format(
        " `get_skill` returns a whole card (with its Before / After code); `list_skills` lists all {} offered.",
        ctx.skills.size());
  head += "\n\n";
  const std::string foot =
      "End your reply, after the code block, with one line naming the cards your file applies: "
      "`Applied skills: <id>, <id>` (ids as above), or `Applied skills: none`.\n\n";
  if (head.size() + foot.size() >= options.max_skill_chars) return "";
  size_t left = options.max_skill_chars - head.size() - foot.size();
  std::string body;
  for (size_t c = 0; c < cards.size(); ++c) {
    // Each card gets an equal share of what is left; what a short card leaves goes to the next.
    size_t share = left / (cards.size() - c);
    std::string note = options.tools ? "… (cut here; get_skill `" + cards[c]->id + "` gives the whole card)\n"
                                     : std::string("… (cut here)\n");
    std::vector<std::string> lines = SkillCardLines(*cards[c]);
    size_t full = 1;  // the blank line after the card
    for (const auto& l : lines) full += l.size() + 1;
    std::string text;
    if (full <= share) {
      for (const auto& l : lines) text += l + "\n";
    } else {
      size_t taken = 0;
      for (size_t used = 0; taken < lines.size() && used + lines[taken].size() + 1 + note.size() + 1 <= share; ++taken)
        used += lines[taken].size() + 1;
      // No heading without a line under it.
      while (taken > 1 && (lines[taken - 1] == kPreconditionsHeading || lines[taken - 1] == kRisksHeading ||
                           lines[taken - 1] == kRecipeHeading))
        --taken;
      if (taken == 0) break;  // not even the card's first line fits: no more cards
      for (size_t i = 0; i < taken; ++i) text += lines[i] + "\n";
      text += note;
    }
    text += "\n";
    body += text;
    left -= text.size();
  }
  if (body.empty()) return "";
  return head + body + foot;
}

std::string SkillFoldersSection(const ProposalContext& ctx) {
  if (!ctx.skills_enabled || ctx.skills.empty()) return "";
  std::string s =
      "## Skill cards for this kernel\n\n"
      "kpilot's skill library offers these cards for the parent, ranked for its profile and platform. Each is an "
      "Agent Skills folder in this workspace, `skills/<id>/SKILL.md` (the same folders are under `.claude/skills/`). "
      "Read a card before you apply it: its preconditions say when the technique fails, its recipe how to apply "
      "it.\n\n";
  int i = 1;
  for (const auto& k : ctx.skills) {
    s += fmt::format("{}. `{}` (skills/{}/SKILL.md): {}", i++, k.id, k.id, k.intent);
    if (k.tune_only) s += " — the parent already has what it provides: use it to tune";
    if (!k.reason.empty()) s += ". Offered because: " + k.reason;
    s += "\n";
  }
  s += std::string("\nIf your file applies any of these cards, write their ids to the file `") + kAppliedSkillsFile +
       "` in the workspace root, one id per line (write `none` when you applied none). kpilot reads that file and "
       "the candidate, nothing else.\n\n";
  return s;
}

}  // namespace

std::vector<std::string> OfferedSkillIds(const ProposalContext& ctx) {
  std::vector<std::string> ids;
  if (ctx.skills_enabled)
    for (const auto& s : ctx.skills) ids.push_back(s.id);
  return ids;
}

std::vector<std::string> SkillCardLines(const OfferedSkill& skill) {
  std::vector<std::string> out;
  out.push_back("### `" + skill.id + "`: " + skill.intent);
  if (skill.tune_only)
    out.push_back("The parent already has what this card provides: use it to tune, not to add it again.");
  if (!skill.reason.empty()) out.push_back("Offered because: " + OneLine(skill.reason));
  std::string front, body;
  SplitCard(skill.card_text, &front, &body);
  std::vector<std::string> preconditions, risks;
  try {
    YAML::Node n = YAML::Load(front);
    if (n.IsMap() && n["preconditions"] && n["preconditions"].IsSequence())
      for (const auto& p : n["preconditions"])
        if (p.IsMap() && p["what"] && p["why"])
          preconditions.push_back("- " + OneLine(p["what"].as<std::string>()) + " — " +
                                  OneLine(p["why"].as<std::string>()));
    if (n.IsMap() && n["risks"] && n["risks"].IsSequence())
      for (const auto& r : n["risks"])
        if (r.IsScalar()) risks.push_back("- " + OneLine(r.as<std::string>()));
  } catch (const YAML::Exception&) {
    // Cards come validated from the library; a card that does not parse here still gives its recipe.
  }
  if (!preconditions.empty()) {
    out.push_back(kPreconditionsHeading);
    out.insert(out.end(), preconditions.begin(), preconditions.end());
  }
  // Risks before the recipe: a card cut to fit the prompt loses the end of its recipe (get_skill
  // has it), not its warnings.
  if (!risks.empty()) {
    out.push_back(kRisksHeading);
    out.insert(out.end(), risks.begin(), risks.end());
  }
  std::vector<std::string> recipe = BodySection(body, "Recipe");
  // A plain Agent Skill has no Recipe section: its whole body is what it says.
  if (recipe.empty())
    for (const auto& line : SplitLines(body))
      if (line.find_first_not_of(" \t") != std::string::npos) recipe.push_back(line);
  if (!recipe.empty()) {
    out.push_back(kRecipeHeading);
    out.insert(out.end(), recipe.begin(), recipe.end());
  }
  return out;
}

std::string CandidateExtension(const Task& task) { return task.backend == Backend::kCuda ? ".cu" : ".cpp"; }

void SetCandidateCutlass(const Task& task, PromptOptions* options) {
  static const std::optional<CutlassHeaders> found = FindCutlass(DefaultToolSearch());
  if (task.backend != Backend::kCuda || !task.cutlass || !found) return;
  options->cutlass_version = found->version;
  options->cutlass_include = found->include.string();
}

PromptVars BuildPromptVars(const Task& task, const ProposalContext& ctx, const PromptOptions& options) {
  PromptVars v;
  v["task_name"] = task.name;
  v["task_description"] = task.description.empty() ? "(no description: read task.toml)" : task.description;
  v["backend"] = std::string(BackendName(task.backend));
  v["extension"] = CandidateExtension(task);
  v["compile_command"] = task.backend == Backend::kCuda
                             ? "nvcc -O3 -lineinfo -std=c++17 -Xcompiler -fPIC -shared for the GPU's architecture"
                             : "g++ -O3 -march=native -fopenmp -std=c++17 -fPIC -shared";
  if (task.backend == Backend::kCuda && !options.cutlass_version.empty())
    v["compile_command"] += " and CUTLASS " + options.cutlass_version + "'s headers on the include path (-I " +
                            options.cutlass_include +
                            "): CuTe through #include <cute/tensor.hpp>, CUTLASS through #include <cutlass/...>; on "
                            "sm_90a, CuTe's SM90 GMMA (wgmma) and TMA copy atoms";
  v["task_toml"] = Fence("toml", TaskTomlText(task));
  v["reference_name"] = task.reference.path.filename().string();
  auto ref = ReadFile(task.reference.path);
  v["reference_source"] =
      ref.ok() ? Fence(task.reference.kind == ReferenceKind::kPython ? "python" : CodeLanguage(task), *ref)
               : "(the reference could not be read)\n";
  v["abi_header"] = Fence("c", options.abi_header);
  v["params"] = ParamsSection(task, ctx);
  v["parent_name"] = ctx.parent_source_name;
  v["parent_source"] = Fence(CodeLanguage(task), ctx.parent_source);
  v["parent_verdict"] =
      ctx.parent_verdict == "passed"
          ? fmt::format("passed, {:.3f}× the task's baseline", ctx.parent_speedup)
          : ctx.parent_verdict + (ctx.parent_verdict_summary.empty() ? "" : ": " + ctx.parent_verdict_summary);
  std::string evidence;
  if (ctx.parent_verdict != "passed" && (!ctx.parent_verdict_summary.empty() || !ctx.parent_verdict_evidence.empty())) {
    evidence =
        "## What went wrong with the parent\n\n" + ctx.parent_verdict + ": " + ctx.parent_verdict_summary + "\n\n";
    if (!ctx.parent_verdict_evidence.empty()) {
      auto j = nlohmann::json::parse(ctx.parent_verdict_evidence, nullptr, false);
      evidence += Fence("json", j.is_discarded() ? ctx.parent_verdict_evidence : j.dump(2)) + "\n";
    }
  }
  v["verdict_evidence"] = evidence;
  // --tools on-request: the profile is served by get_profile only (and not at all without tools).
  v["profile"] = !ctx.profile_on_request ? ProfileSection(ctx)
                 : options.tools ? "## Profile of the parent\n\nNot shown here: call `get_profile` for the parent's "
                                   "roofline class and the profiling tools' findings with their guidance.\n\n"
                                 : "";
  v["raw_metrics"] = options.raw_metrics ? RawMetricsSection(ctx) : "";
  v["memory"] =
      ctx.memory_summary.empty() ? "" : "## What the search has tried so far\n\n" + ctx.memory_summary + "\n\n";
  std::string siblings;
  for (const auto& s : ctx.sibling_summaries)
    if (!s.empty()) siblings += "- " + s + "\n";
  v["siblings"] =
      siblings.empty() ? "" : "## Already tried from this parent — do not repeat these\n\n" + siblings + "\n";
  v["tools"] =
      options.tools
          ? "## Tools\n\nYou may call tools before answering: `search_code` and `read_file` over reference source "
            "trees (CUTLASS/CuTe headers and examples first when configured), `get_profile` for the parent's "
            "findings (and raw counters when this run allows them), `list_skills`/`get_skill`. Calls are "
            "limited per draft; when you are done, answer with the file or call `submit_candidate`.\n\n"
          : "";
  v["mcp"] = "";  // the command: generator's section on kpilot's MCP server, when it configures one
  v["draft_note"] = ctx.k > 1 ? fmt::format(
                                    "This is draft {} of {} asked at once from the same parent: make it a "
                                    "different idea from the most obvious one (for example, answer finding {} "
                                    "when there is one).\n\n",
                                    options.draft + 1, ctx.k, options.draft + 1)
                              : "";
  v["candidate_file"] = options.candidate_file;
  v["skills"] = SkillsSection(ctx, options);
  v["skill_folders"] = SkillFoldersSection(ctx);
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
      return Status::InvalidInput(
          fmt::format("{}:{}: unknown placeholder {{{{{}}}}} — known: {}", file, line, name, known));
    }
    out.append(text, pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace kpilot
