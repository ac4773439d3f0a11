#include "generate/command_generator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/fs.h"
#include "core/sha256.h"
#include "generate/command_line.h"
#include "generate/prompt.h"
#include "generate/reply.h"
#include "task/loader.h"

extern char** environ;

namespace kpilot {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxCandidateBytes = 1 << 20;

std::string CandidateFile(const Task& task) { return "candidate" + CandidateExtension(task); }

// The workspace folders a card is copied into: kpilot's own listing and Claude Code's project skills.
const char* const kSkillRoots[] = {"skills", ".claude/skills"};
constexpr size_t kMaxAppliedSkillsBytes = 64 << 10;
constexpr size_t kMaxSkillFileBytes = 1 << 20;

// Where an agent's MCP server keeps its store in the workspace (CommandGeneratorOptions::mcp_server).
constexpr char kAgentStore[] = ".kpilot";

// The command line of kpilot's MCP server for an agent drafting from ctx's parent in `dir`.
std::vector<std::string> McpServerArgs(const fs::path& dir, const ProposalContext& ctx,
                                       const CommandGeneratorOptions& options, const std::string& parent_file) {
  std::vector<std::string> args = {"mcp", (dir / "task").string(), "--from", (dir / "parent" / parent_file).string()};
  for (const auto& [k, v] : ctx.parent_params) {
    args.push_back("-D");
    args.push_back(k + "=" + v);
  }
  for (const std::string& a :
       {std::string("--store"), (dir / kAgentStore).string(), std::string("--workspace"), dir.string(),
        std::string("--max-evals"), std::to_string(options.mcp_evaluations), std::string("--parent-run"),
        std::to_string(ctx.run_id), std::string("--parent-node"), std::to_string(ctx.parent_node)})
    args.push_back(a);
  return args;
}

// Writes the MCP configs Claude Code (.mcp.json) and Codex (.codex/config.toml) read in `dir`, and
// returns the instructions' section about them; "" (and nothing written) when the agent gets no
// server: none configured, or a task whose workspace copy kpilot cannot load (PyTorch-defined).
Result<std::string> WriteMcpConfigs(const fs::path& dir, const Task& task, const ProposalContext& ctx,
                                    const CommandGeneratorOptions& options, const std::string& parent_file) {
  if (options.mcp_server.empty() || options.mcp_evaluations <= 0) return std::string();
  if (task.format != TaskFormat::kNative || !LoadTask(dir / "task").ok()) return std::string();
  const std::vector<std::string> args = McpServerArgs(dir, ctx, options, parent_file);
  nlohmann::json server = {{"command", options.mcp_server.string()}, {"args", args}};
  // An agent in kpilot's agent sandbox cannot make the candidate sandbox inside it (its syscall
  // filter denies the namespaces): its server runs its checks in the agent's own confinement,
  // where they can do nothing the agent could not. Those verdicts only advise the agent; the
  // search evaluates the file it writes in the candidate sandbox, as every draft.
  const char* over = std::getenv("KPILOT_SANDBOX");
  const bool agent_confined = !options.sandbox_runner.empty() && !(over && std::string(over) == "none");
  // The GPU's timing lock is a file in /tmp, which a confined agent sees only as its private /tmp:
  // its server's evaluations would time on the GPU while the search's do. A cuda task's confined
  // agent gets no server.
  if (agent_confined && task.backend == Backend::kCuda) return std::string();
  if (agent_confined) server["env"] = {{"KPILOT_SANDBOX", "none"}};
  nlohmann::json claude = {{"mcpServers", {{"kpilot", server}}}};
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / ".mcp.json", claude.dump(2) + "\n"));
  // TOML basic strings take JSON's escapes.
  std::string codex = "[mcp_servers.kpilot]\ncommand = " + nlohmann::json(options.mcp_server.string()).dump() +
                      "\nargs = " + nlohmann::json(args).dump() + "\n" +
                      (agent_confined ? "env = { KPILOT_SANDBOX = \"none\" }\n" : "");
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / ".codex" / "config.toml", codex));
  return fmt::format(
      "## kpilot's tools (MCP)\n\nThis workspace configures kpilot's MCP server `kpilot` (.mcp.json for Claude Code, "
      ".codex/config.toml for Codex). Use its tools instead of guessing: `evaluate` compiles, checks and times a "
      "draft in kpilot's harness (give `file: \"{}\"` once you wrote it, or `source`), `profile` says why a node is "
      "slow, `search_skills`/`get_skill` and `search_code`/`read_file` find techniques and CUTLASS/CuTe code. You "
      "have {} evaluations; the parent is node 0. Your answer is still the file `{}`.\n\n",
      CandidateFile(task), options.mcp_evaluations, CandidateFile(task));
}

// Keeps the store of an agent's MCP sessions (its evaluations and tool calls) after the workspace
// is removed: STORE/agent-sessions/run<R>-node<N>-draft<D>, without its compile cache.
void KeepAgentStore(const fs::path& dir, const ProposalContext& ctx, const CommandGeneratorOptions& options,
                    int index) {
  std::error_code ec;
  const fs::path from = dir / kAgentStore;
  if (options.agent_stores.empty() || !fs::is_directory(from, ec)) return;
  const fs::path to = options.agent_stores / fmt::format("run{}-node{}-draft{}", ctx.run_id, ctx.parent_node, index);
  fs::create_directories(to, ec);
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (e.path().filename() == "cache") continue;
    fs::copy(e.path(), to / e.path().filename(),
             fs::copy_options::recursive | fs::copy_options::overwrite_existing | fs::copy_options::skip_symlinks, ec);
  }
}

// Card ids are kebab-case (the library validates them); anything else must not name a path.
bool SafeSkillId(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// Copies one offered card into the workspace as an Agent Skills folder: SKILL.md is the card text
// kpilot validated; the folder's other regular files (examples, scripts) come along, links and
// dot-folders do not, nor files over 1 MiB.
Status CopySkillFolder(const OfferedSkill& skill, const fs::path& to) {
  Status s = WriteFileAtomic(to / "SKILL.md", skill.card_text);
  if (!s.ok()) return s;
  std::error_code ec;
  if (skill.folder.empty() || !fs::is_directory(skill.folder, ec)) return Status::Ok();
  for (fs::recursive_directory_iterator it(skill.folder, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind('.', 0) == 0) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink() || !it->is_regular_file()) continue;
    fs::path rel = fs::relative(it->path(), skill.folder);
    if (rel == "SKILL.md" || it->file_size(ec) > kMaxSkillFileBytes || ec) {
      ec.clear();
      continue;
    }
    fs::create_directories((to / rel).parent_path(), ec);
    if (!ec) fs::copy_file(it->path(), to / rel, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::Internal("copying skill card file " + it->path().string() + ": " + ec.message());
  }
  return Status::Ok();
}

std::string LastLines(const std::string& text, size_t bytes) {
  std::string t = Tail(text, bytes);
  for (auto& c : t)
    if (c == '\n') c = ' ';
  return t;
}

class CommandGenerator : public Generator {
 public:
  CommandGenerator(std::string name, const Task& task, ProcessRunner& processes, CommandGeneratorOptions options)
      : name_(std::move(name)), task_(task), processes_(processes), options_(std::move(options)) {}

  std::string name() const override { return name_; }

  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    if (options_.transcripts) options_.transcripts->SetContext(ctx.run_id, ctx.parent_node);
    Repeats(ctx.parent_source);
    auto c = std::make_shared<ProposalContext>(ctx);
    return std::async(std::launch::async, [this, c]() -> Result<std::vector<Draft>> {
      std::vector<Draft> drafts;
      int k = std::max(1, c->k), width = std::max(1, options_.max_concurrency);
      for (int start = 0; start < k; start += width) {
        std::vector<std::future<Result<Draft>>> wave;
        for (int i = start; i < std::min(k, start + width); ++i)
          wave.push_back(std::async(std::launch::async, [this, c, i] {
            RunTranscripts::Scope scope(c->run_id, c->parent_node);  // requests for other parents run beside it
            return OneDraft(*c, i);
          }));
        for (auto& f : wave) {
          Result<Draft> d = f.get();
          if (!d.ok()) return d.status();  // kpilot's own failure (workspace, the program missing)
          drafts.push_back(std::move(d).value());
        }
      }
      return drafts;
    });
  }

 private:
  Result<Draft> OneDraft(const ProposalContext& ctx, int index) {
    auto dir = TempDir::Create("kpilot-agent-");
    if (!dir.ok()) return dir.status();
    if (options_.keep_workspaces) dir->Keep();
    auto instructions = PrepareAgentWorkspace(dir->path(), task_, ctx, options_, index);
    if (!instructions.ok()) return instructions.status();
    std::string file = CandidateFile(task_);
    auto run = RunAgentCommand(processes_, options_, dir->path(), *instructions, file);
    KeepAgentStore(dir->path(), ctx, options_, index);
    if (!run.ok()) return run.status();
    Draft d;
    d.params = ctx.parent_params;
    d.source_name = fmt::format("agent_n{}_d{}{}", ctx.parent_node, index, CandidateExtension(task_));
    std::string program = fs::path(options_.argv.front()).filename().string();
    auto failed = [&](const std::string& why) {
      // The agent's own stderr: the sandbox's report line is kept apart (the transcript has it).
      d.failure = why + " (" + run->Describe(options_.timeout_s) +
                  "; stderr: " + LastLines(WithoutSandboxReports(run->err), 300) + ")";
      d.summary = program + ": no candidate";
      return d;
    };
    if (run->timed_out) return failed(fmt::format("the agent timed out after {:.0f} s", options_.timeout_s));
    // Only a regular file, not a link (which could point anywhere), and not a huge one.
    struct stat st;
    fs::path cand = dir->path() / file;
    if (lstat(cand.c_str(), &st) != 0) return failed("the agent wrote no " + file + " in its workspace");
    if (!S_ISREG(st.st_mode)) return failed(file + " is not a regular file (a link or a folder is not taken back)");
    if (static_cast<size_t>(st.st_size) > kMaxCandidateBytes) return failed(file + " is larger than 1 MiB");
    auto source = ReadFile(cand);
    if (!source.ok()) return failed(source.status().message());
    if (std::string problem = AbiProblem(*source); !problem.empty()) return failed(file + ": " + problem);
    if (Repeats(*source))
      return failed(file + " is the same code as the parent's or an earlier draft's (only comments or layout differ)");
    d.source = *source;
    std::string summary = SummaryLine(*source);
    d.summary = program + ": " + (summary.empty() ? "agent rewrite" : summary);
    if (!run->Succeeded()) d.summary += " (agent " + run->Describe(options_.timeout_s) + ")";
    AppliedSkills applied = FilterAppliedSkills(ReadAppliedSkills(dir->path()), OfferedSkillIds(ctx));
    d.skills_applied = applied.kept;
    d.summary += DroppedSkillsNote(applied.dropped);
    return d;
  }

  // The ids in the workspace's APPLIED_SKILLS: a regular file (not a link) of at most 64 KiB;
  // anything else reads as none.
  static std::vector<std::string> ReadAppliedSkills(const fs::path& dir) {
    struct stat st;
    fs::path file = dir / kAppliedSkillsFile;
    if (lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<size_t>(st.st_size) > kMaxAppliedSkillsBytes)
      return {};
    auto text = ReadFile(file);
    return text.ok() ? SkillIdList(*text) : std::vector<std::string>{};
  }

  bool Repeats(const std::string& source) {
    std::lock_guard<std::mutex> lock(seen_mu_);
    return !seen_.insert(Sha256Hex(CodeFingerprint(source))).second;
  }

  std::string name_;
  const Task& task_;
  ProcessRunner& processes_;
  CommandGeneratorOptions options_;
  std::mutex seen_mu_;
  std::set<std::string> seen_;  // fingerprints of the parents and drafts so far
};

}  // namespace

const std::vector<std::string>& DefaultAgentEnvironment() {
  static const std::vector<std::string> kNames = {"PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR"};
  return kNames;
}

std::vector<std::string> AgentEnvironment(const std::vector<std::string>& allowed,
                                          const std::vector<std::string>& extra,
                                          const std::vector<std::string>* environ_entries) {
  std::vector<std::string> source;
  if (environ_entries)
    source = *environ_entries;
  else
    for (char** e = environ; e && *e; ++e) source.emplace_back(*e);
  std::vector<std::string> out;
  for (const auto& entry : source) {
    std::string name = entry.substr(0, entry.find('='));
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

SandboxSpec AgentSandboxSpec(const fs::path& workspace, const std::vector<std::string>& hide,
                             const std::string& program) {
  SandboxSpec s;
  s.network = true;
  s.drop_user = false;
  s.hide = hide;
  s.keep_writable = {workspace.string()};
  if (const std::string found = FindOnPath(program); !found.empty())
    s.keep_read_only.push_back(fs::absolute(found).parent_path().string());
  if (const char* home = std::getenv("HOME"); home && *home) {
    std::error_code ec;
    for (const char* own :
         {".claude", ".claude.json", ".codex", ".gemini", ".cache", ".config", ".local/state", ".npm"})
      if (fs::exists(fs::path(home) / own, ec)) s.keep_writable.push_back((fs::path(home) / own).string());
  }
  return s;
}

Result<ProcessResult> RunAgentCommand(ProcessRunner& processes, const CommandGeneratorOptions& options,
                                      const fs::path& dir, const std::string& stdin_text,
                                      const std::string& candidate_file) {
  ProcessSpec spec;
  std::optional<TempDir> sandbox_dir;  // the spec lives outside the agent's workspace
  bool enabled = true;
  auto over = ApplySandboxOverride(
      AgentSandboxSpec(dir, options.sandbox_hide, options.argv.empty() ? std::string() : options.argv.front()),
      std::getenv("KPILOT_SANDBOX"), &enabled);
  if (!over.ok()) return over.status();
  if (!options.sandbox_runner.empty() && enabled) {
    auto t = TempDir::Create("kpilot-agent-sandbox-");
    if (!t.ok()) return t.status();
    sandbox_dir.emplace(std::move(t).value());
    const fs::path file = sandbox_dir->path() / "sandbox.json";
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(file, ToJson(*over).dump()));
    spec.argv = {options.sandbox_runner.string(), "--sandbox", file.string(), "--"};
  }
  spec.argv.insert(spec.argv.end(), options.argv.begin(), options.argv.end());
  spec.cwd = dir;
  spec.env = AgentEnvironment(options.allowed_env.empty() ? DefaultAgentEnvironment() : options.allowed_env,
                              {"KPILOT_WORKSPACE=" + dir.string(), "KPILOT_CANDIDATE=" + candidate_file});
  spec.stdin_data = stdin_text;
  spec.timeout_s = options.timeout_s;
  spec.max_output_bytes = 1 << 20;
  auto run = processes.Run(spec);
  if (!run.ok())
    return run.status().WithContext("the command generator could not start " + JoinCommandLine(options.argv));
  if (options.transcripts) {
    llm::Exchange e;
    e.endpoint = "command: " + JoinCommandLine(options.argv);
    e.request_json = nlohmann::json{{"stdin", stdin_text}}.dump();
    nlohmann::json response = {{"stdout", Tail(run->out, 64 << 10)}, {"stderr", Tail(run->err, 64 << 10)}};
    if (auto report = FindSandboxReport(run->err)) response["sandbox"] = ToJson(*report);
    e.response_json = response.dump();
    e.status = run->exit_code;
    e.attempts = 1;
    e.seconds = run->wall_s;
    e.error = run->Succeeded() ? "" : run->Describe(options.timeout_s);
    options.transcripts->Record(e);
  }
  return run;
}

Result<CommandGeneratorOptions> CommandOptionsFromSpec(const std::string& spec, const llm::LlmConfig& config) {
  CommandGeneratorOptions o;
  std::string line = spec.substr(spec.rfind("command:", 0) == 0 ? 8 : 0);
  if (line.find_first_not_of(" \t") == std::string::npos) {
    o.argv = config.command_argv;
  } else {
    auto argv = SplitCommandLine(line);
    if (!argv.ok()) return argv.status().WithContext("--generator " + spec);
    o.argv = *argv;
  }
  o.allowed_env = config.allowed_env;
  o.timeout_s = config.command_timeout_s;
  o.mcp_evaluations = config.command_mcp_evaluations;
  o.max_concurrency = config.max_concurrency;
  o.prompts_override = config.prompts_dir;
  return o;
}

Result<std::string> PrepareAgentWorkspace(const fs::path& dir, const Task& task, const ProposalContext& ctx,
                                          const CommandGeneratorOptions& options, int draft) {
  auto abi = ReadFile(options.include_dir / "kpilot" / "kernel.h");
  if (!abi.ok()) return abi.status().WithContext("the candidate ABI header for the command generator");
  PromptOptions po;
  po.raw_metrics = options.raw_metrics;
  po.draft = draft;
  po.abi_header = *abi;
  po.candidate_file = CandidateFile(task);
  SetCandidateCutlass(task, &po);
  PromptVars vars = BuildPromptVars(task, ctx, po);
  std::string parent_name = ctx.parent_source_name.empty() ? "parent" + CandidateExtension(task)
                                                           : fs::path(ctx.parent_source_name).filename().string();
  const std::string toml = TaskTomlText(task);
  auto ref = ReadFile(task.reference.path);
  if (!ref.ok()) return ref.status();
  // The task first: the MCP server's config is written only when the workspace's copy loads.
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / "task" / "task.toml", toml));
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / "task" / task.reference.path.filename(), *ref));
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / "parent" / parent_name, ctx.parent_source));
  auto mcp = WriteMcpConfigs(dir, task, ctx, options, parent_name);
  if (!mcp.ok()) return mcp.status();
  vars["mcp"] = *mcp;
  std::string texts[2];
  const char* names[2] = {"agent.md", "guidance.md"};
  for (int i = 0; i < 2; ++i) {
    auto t = LoadPromptTemplate(names[i], options.prompts_override, options.prompts_dir);
    if (!t.ok()) return t.status();
    auto r = RenderPrompt(*t, vars, names[i]);
    if (!r.ok()) return r.status();
    texts[i] = *r;
  }
  const std::vector<std::pair<fs::path, const std::string*>> files = {{dir / "INSTRUCTIONS.md", &texts[0]},
                                                                      {dir / "GUIDANCE.md", &texts[1]},
                                                                      {dir / "include" / "kpilot" / "kernel.h", &*abi}};
  for (const auto& [path, text] : files) {
    Status s = WriteFileAtomic(path, *text);
    if (!s.ok()) return s;
  }
  if (ctx.skills_enabled) {
    for (const auto& skill : ctx.skills) {
      if (!SafeSkillId(skill.id)) return Status::InvalidInput("skill card id \"" + skill.id + "\" is not kebab-case");
      for (const char* root : kSkillRoots) {
        Status s = CopySkillFolder(skill, dir / root / skill.id);
        if (!s.ok()) return s;
      }
    }
  }
  return texts[0];
}

std::string CommandDisclosure(const CommandGeneratorOptions& o) {
  std::string env;
  for (const auto& n : o.allowed_env.empty() ? DefaultAgentEnvironment() : o.allowed_env)
    env += (env.empty() ? "" : " ") + n;
  return "kpilot: the command generator runs " + JoinCommandLine(o.argv) +
         " (no shell) in a fresh workspace per draft holding the task (task.toml, the reference source), the parent "
         "candidate's source, its guidance, the skill cards retrieved for it and the ABI header; it runs as YOU" +
         std::string(o.sandbox_runner.empty()
                         ? ", unconfined,"
                         : " in a sandbox (its own processes only, the store and task folder hidden, "
                           "files writable only in the workspace and its own state folders in your home; "
                           "network kept)") +
         " with only these variables: " + env +
         fmt::format("; timeout {:.0f} s. What the agent sends, and where, is up to the agent.\n", o.timeout_s);
}

Result<std::unique_ptr<Generator>> MakeCommandGenerator(const std::string& name, const Task& task,
                                                        ProcessRunner& processes, CommandGeneratorOptions options) {
  if (options.argv.empty())
    return Status::InvalidInput(
        "generator " + name + ": no command — give one (command:'codex exec -') or set command_argv in the LLM config");
  for (const char* file : {"agent.md", "guidance.md"}) {
    auto t = LoadPromptTemplate(file, options.prompts_override, options.prompts_dir);
    if (!t.ok()) return t.status();
    ProposalContext probe;
    probe.task = &task;
    auto r = RenderPrompt(*t, BuildPromptVars(task, probe, {}), file);
    if (!r.ok()) return r.status();
  }
  if (FindOnPath(options.argv.front()).empty())
    return Status::NotFound("generator " + name + ": " + options.argv.front() +
                            " is not on PATH (nor an executable path)");
  return std::unique_ptr<Generator>(new CommandGenerator(name, task, processes, std::move(options)));
}

}  // namespace kpilot
