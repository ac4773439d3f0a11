// The command:CMDLINE generator: any agent CLI (Codex, Claude Code, a script) writes the draft.
//
// For each draft kpilot prepares a fresh workspace folder:
//   INSTRUCTIONS.md           what to do (prompts/agent.md; also given on the agent's stdin)
//   GUIDANCE.md               the parent's verdict evidence, profile findings, search memory and
//                             siblings not to repeat (prompts/guidance.md)
//   task/task.toml, task/<reference>   the task and its reference source
//   parent/<parent file>      the candidate to improve
//   include/kpilot/kernel.h   the ABI header
// and runs argv there (no shell) with a timeout, in its own process group, with an environment
// holding only the allowed variables (LlmConfig::allowed_env, or PATH HOME USER LANG LC_ALL TERM
// TMPDIR when none are configured) plus KPILOT_WORKSPACE and KPILOT_CANDIDATE. The agent runs
// with the user's permissions: kpilot confines what it takes back — the regular file
// candidate.cu / candidate.cpp in the workspace root, at most 1 MiB — not what the agent can do.
// A run that writes no such file, writes one without an exported kpilot_launch, or times out
// gives a draft with Draft::failure saying so (stdout/stderr tails included); the workspace is
// removed afterwards. ctx.k agents run at once, at most `max_concurrency`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/subprocess.h"
#include "llm/llm.h"
#include "generate/generator.h"
#include "generate/transcripts.h"
#include "sandbox/sandbox.h"

namespace kpilot {

struct CommandGeneratorOptions {
  std::vector<std::string> argv;         // the agent's command line, split (command_line.h)
  std::vector<std::string> allowed_env;  // names passed through; empty: the defaults above
  double timeout_s = 1800;
  int max_concurrency = 2;
  bool raw_metrics = false;
  std::filesystem::path include_dir;            // holds kpilot/kernel.h
  std::filesystem::path prompts_dir;            // the shipped templates
  std::filesystem::path prompts_override;       // LlmConfig::prompts_dir ("" = none)
  bool keep_workspaces = false;                 // for debugging: leave them in $TMPDIR
  std::shared_ptr<RunTranscripts> transcripts;  // each agent run archived (may be null)
  // kpilot-runner: the agent runs under `--sandbox` (AgentSandboxSpec); empty: as the user.
  std::filesystem::path sandbox_runner;
  std::vector<std::string> sandbox_hide;  // what the agent must not see (the store, the task folder)
  // kpilot's MCP server for the agent (docs/mcp.md): the kpilot executable ("" = none) and the
  // evaluations each agent may ask it for (0 = none). The workspace then holds .mcp.json (Claude
  // Code) and .codex/config.toml (Codex) starting `kpilot mcp` on the workspace's copy of the task,
  // from the parent at its params, with a store in the workspace (.kpilot), which is kept under
  // `agent_stores` (STORE/agent-sessions/run<R>-node<N>-draft<D>) after the agent exits.
  std::filesystem::path mcp_server;
  int mcp_evaluations = 0;
  std::filesystem::path agent_stores;
};

// An agent's sandbox: the network kept (it reaches its model provider) and the user's uid (its
// credentials and configuration are the user's), but its own PID namespace (kpilot's processes
// and their environment, with kpilot's API keys, are out of sight), a read-only view with the
// store and the task folder hidden, and only the workspace and the agent CLIs' own state folders
// in $HOME (.claude, .codex, .gemini, .cache, .config, …) writable. The folder of `program` (the
// agent's executable, looked up on PATH) stays readable wherever it is.
SandboxSpec AgentSandboxSpec(const std::filesystem::path& workspace, const std::vector<std::string>& hide,
                             const std::string& program);

// The default variables an agent sees when none are configured.
const std::vector<std::string>& DefaultAgentEnvironment();

// "NAME=VALUE" for each allowed name set in `environ_entries` (this process's environment when
// null), plus `extra`. Nothing else passes, secret-looking names included unless listed.
std::vector<std::string> AgentEnvironment(const std::vector<std::string>& allowed,
                                          const std::vector<std::string>& extra,
                                          const std::vector<std::string>* environ_entries = nullptr);

// `processes` is borrowed. The templates are loaded and checked here.
Result<std::unique_ptr<Generator>> MakeCommandGenerator(const std::string& name, const Task& task,
                                                        ProcessRunner& processes, CommandGeneratorOptions options);

// Runs the agent once in `dir` (prepared by the caller) with `stdin_text` on its stdin, in its own
// process group with options.timeout_s, and an environment holding only the allowed variables plus
// KPILOT_WORKSPACE=dir and KPILOT_CANDIDATE=candidate_file, confined by AgentSandboxSpec when
// options.sandbox_runner is set (unless KPILOT_SANDBOX=none); archives the run (stdin, stdout and
// stderr tails, the sandbox's report) when options.transcripts is set. Any exit, signal or timeout is a result; a
// non-ok Status only when the program cannot be started. Shared with `kpilot lineage`'s command generator.
Result<ProcessResult> RunAgentCommand(ProcessRunner& processes, const CommandGeneratorOptions& options,
                                      const std::filesystem::path& dir, const std::string& stdin_text,
                                      const std::string& candidate_file);

// The options of a command:CMDLINE generator from its spec and the LLM config: argv split from
// CMDLINE (command_line.h), or the config's command_argv when CMDLINE is blank; allowed_env,
// timeout, concurrency and prompts_dir from the config. InvalidInput naming the spec on a bad
// command line.
Result<CommandGeneratorOptions> CommandOptionsFromSpec(const std::string& spec, const llm::LlmConfig& config);

// Writes one draft's workspace into `dir` (exists, empty) and returns the instructions text.
Result<std::string> PrepareAgentWorkspace(const std::filesystem::path& dir, const Task& task,
                                          const ProposalContext& ctx, const CommandGeneratorOptions& options,
                                          int draft);

// What a run states before the first agent starts.
std::string CommandDisclosure(const CommandGeneratorOptions& options);

}  // namespace kpilot
