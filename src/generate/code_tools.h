// The tools a model may call while it drafts (function calling), each bounded:
//   search_code  keyword or regex search over the configured source trees, ranked, ≤ 30 hits
//   read_file    a bounded slice of one file inside those trees (no ../ escapes, no symlinks out)
//   get_profile  the parent's class and findings; raw numbers only when the run allows them
//   list_skills  the skill cards offered for the parent (ProposalContext::skills) as JSON
//   get_skill    one offered card's whole SKILL.md, bounded like read_file
//   submit_candidate          the answer itself (handled by the LLM generator, not here)
// Trees come from LlmConfig::code_roots, CUTLASS/CuTe first by convention: `pip install
// nvidia-cutlass` puts its headers under site-packages/cutlass_library/source, or point at a
// checkout of github.com/NVIDIA/cutlass. kpilot ships none of it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/llm.h"
#include "generate/generator.h"

namespace kpilot {

struct CodeToolsOptions {
  std::vector<std::filesystem::path> roots;  // searchable trees, in ranking order
  bool raw_metrics = false;                  // get_profile may return counters
  size_t max_hits = 30;                      // search_code results per call
  size_t max_read_bytes = 24 * 1024;         // read_file bytes per call
  size_t max_scan_files = 40000;             // search_code stops scanning after this many files
  size_t max_file_bytes = 2 << 20;           // larger files are not searched
};

class CodeTools {
 public:
  // `ctx` is borrowed for get_profile, list_skills and get_skill and must outlive the calls.
  CodeTools(CodeToolsOptions options, const ProposalContext* ctx);

  // The function-calling schemas, submit_candidate included (search_code/read_file only when
  // there are trees).
  std::vector<llm::ToolSpec> Specs() const;
  // The text answered for one call; a bad call (unknown tool, bad arguments, a path outside the
  // trees) is answered with an "error: …" text the model can act on, never a Status.
  std::string Call(const std::string& name, const nlohmann::json& arguments) const;

  // Pieces, public for tests.
  std::string SearchCode(const std::string& query, bool regex, const std::string& path_filter) const;
  std::string ReadFile(const std::string& path, int start_line, int max_lines) const;
  // [{"id", "intent", "tune_only", "reason"}, …] of the offered cards in retrieval's order; with
  // none, "[]" and a note saying no card fits this kernel (or that cards are off in this run).
  std::string ListSkills() const;
  // The offered card's SKILL.md, cut at a line end past max_read_bytes; an unknown name is an
  // error text listing the offered ids.
  std::string GetSkill(const std::string& name) const;
  // The file a tool path names ("ROOT/rel/path", ROOT being a root's folder name, or "#i/…"
  // when names repeat), or an error text when it is outside every tree.
  std::filesystem::path Resolve(const std::string& path, std::string* error) const;

 private:
  std::string RootName(size_t i) const;
  CodeToolsOptions options_;
  const ProposalContext* ctx_;
};

}  // namespace kpilot
