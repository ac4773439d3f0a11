// The llm:PROVIDER:MODEL[@BASE_URL] generator: asks a language model for whole candidate files.
//
// Each draft is one conversation: the system and user prompts rendered from templates (prompt.h)
// with the task, the ABI header, the parent's source and verdict evidence, its profile class and
// findings (raw numbers only with raw_metrics), the search memory and the siblings already
// drafted; then, when the model calls tools (code_tools.h), their answers, up to
// tool_calls_per_proposal calls per draft; then the reply. The candidate is the one fenced
// block that defines kpilot_launch, or a submit_candidate call. A reply without usable code (no
// code, several files, no exported kpilot_launch) is answered with reask.md, up to `reasks`
// times; a draft that never yields code comes back with Draft::failure set to every reason, so
// the search remembers it. ctx.k drafts are asked in parallel (the client bounds concurrency).
// Once the client has spent `max_cost_usd` no further request is made; the draft fails with
// "spending cap reached" and the optimizer stops the run with reason "cost".
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "llm/llm.h"
#include "generate/generator.h"
#include "generate/transcripts.h"

namespace kpilot {

struct LlmGeneratorOptions {
  llm::LlmConfig config;  // tool budget, re-asks, prompts_dir, code_roots
  bool raw_metrics = false;
  double max_cost_usd = 0;                      // 0: no cap here (the optimizer still has its own)
  std::filesystem::path include_dir;            // holds kpilot/kernel.h
  std::filesystem::path prompts_dir;            // the shipped templates
  std::shared_ptr<RunTranscripts> transcripts;  // told the run and parent before each proposal (may be null)
};

// `name` is the spec ("llm:openai:gpt-4o"). The templates are loaded and checked here, so a bad
// override is an error before anything is sent: InvalidInput/NotFound naming the file.
Result<std::unique_ptr<Generator>> MakeLlmGenerator(const std::string& name, const Task& task,
                                                    std::shared_ptr<llm::ChatClient> client,
                                                    LlmGeneratorOptions options);

// What a run states before the first request: which endpoint receives what.
std::string LlmDisclosure(const std::string& describe, const LlmGeneratorOptions& options);

}  // namespace kpilot
