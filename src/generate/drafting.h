// The generate module's contract for code that drafts kernels without a Generator: `kpilot
// lineage`'s walk and admission ask a model or an agent for whole kernels of their own, built from
// the same pieces as the llm: and command: generators:
//   - prompt templates, their placeholders and rendering (prompt.h: BuildPromptVars,
//     LoadPromptTemplate, RenderPrompt, CandidateExtension);
//   - taking a kernel out of a reply (reply.h: ExtractCandidate, FencedBlocks, CodeFingerprint);
//   - agent command lines and runs (command_line.h: SplitCommandLine, JoinCommandLine;
//     command_generator.h: CommandGeneratorOptions, CommandOptionsFromSpec, RunAgentCommand);
//   - the transcripts of every exchange (transcripts.h: RunTranscripts, TranscriptArchive);
//   - the generator setup and LLM config (generator.h: GeneratorSetup, LoadGeneratorConfig).
// Code outside generate includes this header or generator.h, never the others: what they declare
// beyond the names above is the generators' own and may change with them.
#pragma once

#include "generate/command_generator.h"
#include "generate/command_line.h"
#include "generate/generator.h"
#include "generate/prompt.h"
#include "generate/reply.h"
#include "generate/transcripts.h"
