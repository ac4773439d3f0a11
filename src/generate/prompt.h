// Prompts for the llm: and command: generators, from template files a user can override.
//
// A template is a text file with {{name}} placeholders. kpilot ships defaults in prompts/
// (system.md, propose.md, reask.md for llm:; agent.md and guidance.md for command:) and a user
// copies any of them into a folder named by `prompts_dir` in the LLM config to change them; a
// file there replaces the shipped one of the same name. Placeholders (PromptVars) are whole
// sections, each with its own heading, or "" when there is nothing to say, so a template needs no
// conditionals. An unknown placeholder is an error naming the file and line, so a typo does not
// silently send "{{memroy}}" to a model.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "generate/generator.h"

namespace kpilot {

using PromptVars = std::map<std::string, std::string>;

// The file in a command: workspace where the agent lists the skill cards it applied, one id a line.
inline constexpr char kAppliedSkillsFile[] = "APPLIED_SKILLS";

struct PromptOptions {
  bool raw_metrics = false;    // the raw_metrics section (compile resources, roofline numbers,
                               // each finding's evidence); otherwise only class, ids and guidance
  bool tools = false;          // the tools section (function calling is on)
  int draft = 0;               // this draft's index among ctx.k asked at once
  std::string abi_header;      // the text of include/kpilot/kernel.h
  std::string candidate_file;  // the file an agent writes (command:), e.g. "candidate.cu"
  // The CUTLASS/CuTe headers a CUDA candidate compiles against (CandidateCutlass), named with
  // their folder in the compile command; "" when they are off or absent.
  std::string cutlass_version;
  std::string cutlass_include;
  // The skills section (llm:): at most max_skills of ctx.skills (cards that add a technique first,
  // then tune-only ones, each group in retrieval's order), at most max_skill_chars in all; card
  // bodies are cut at line ends, never inside a line.
  size_t max_skills = 3;
  size_t max_skill_chars = 6000;
};

// The CUTLASS headers the toolchain puts on a candidate's include path for `task` (FindCutlass
// over DefaultToolSearch, looked up once per process): a CUDA task whose `cutlass` is not false.
// Sets PromptOptions::cutlass_version/cutlass_include; leaves them "" otherwise.
void SetCandidateCutlass(const Task& task, PromptOptions* options);

// The ids of ctx.skills, or none when ctx.skills_enabled is false: what a draft may name as applied.
std::vector<std::string> OfferedSkillIds(const ProposalContext& ctx);

// One card for a prompt: id and intent, why retrieval offered it, its preconditions (what — why)
// from the front matter, its risks, then the body's `## Recipe` section (last, so that a card cut
// to fit loses recipe steps rather than warnings), one item a line. Pure; a card whose front
// matter does not parse gives the id, intent and recipe only.
std::vector<std::string> SkillCardLines(const OfferedSkill& skill);

// The file extension of the task's candidates: ".cu" (cuda) or ".cpp" (host).
std::string CandidateExtension(const Task& task);

// Every placeholder, from the task and the context:
//   task_name task_description backend extension compile_command task_toml reference_name
//   reference_source abi_header params parent_name parent_source parent_verdict verdict_evidence
//   profile raw_metrics memory siblings tools draft_note candidate_file skills skill_folders mcp
// `skills` (for propose.md) holds the offered cards' excerpts and asks the model to end its reply
// with "Applied skills: id, …"; `skill_folders` (for agent.md) lists the cards copied into an
// agent's workspace and asks for the file APPLIED_SKILLS. Both are "" with skills off or no cards.
PromptVars BuildPromptVars(const Task& task, const ProposalContext& ctx, const PromptOptions& options);

// The template `name` ("propose.md"): from `override_dir` when it has one, else `shipped_dir`.
// NotFound naming both folders and the fix when neither has it.
Result<std::string> LoadPromptTemplate(const std::string& name, const std::filesystem::path& override_dir,
                                       const std::filesystem::path& shipped_dir);

// Replaces every {{name}} in `text`. InvalidInput "FILE:LINE: unknown placeholder {{x}}" (with
// the known names) for a name not in `vars`; `file` only names the template in messages.
Result<std::string> RenderPrompt(const std::string& text, const PromptVars& vars, const std::string& file);

}  // namespace kpilot
