// kpilot mcp TASK: the Model Context Protocol server an agent CLI starts to use kpilot as its
// harness (docs/mcp.md). stdout carries the protocol only; everything else goes to stderr.
#include <csignal>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "core/text.h"
#include "mcp/mcp.h"
#include "task/loader.h"
#include "generate/prompt.h"
#include "toolchain/toolchain.h"

namespace kpilot::cli {
namespace {

struct McpArgs {
  std::string task_dir;
  std::string from;
  int max_evals = 50;
  int max_profiles = 20;
  std::string max_time;
  std::string store_dir = ".kpilot";
  std::string workspace;
  std::vector<std::string> skills;
  std::vector<std::string> workloads;
  std::vector<std::string> code_roots;
  std::string timing = "default";
  std::string arch;
  int device = 0;
  std::string counters = "on";
  int64_t parent_run = 0;
  int64_t parent_node = -1;
  std::vector<std::string> defines;
  TaskSourceArgs source;
};

// The instructions an MCP client hands its model with the tools.
std::string Instructions(const Task& task, bool has_start) {
  return fmt::format(
      "kpilot is the harness for optimizing the {} kernel of task {}: it compiles, checks against the reference on "
      "fresh inputs and times candidates in a sandbox, with paired statistics. Call describe_task first{}. Then "
      "loop: write a candidate, call evaluate (source or a workspace file), read the verdict and speedup with its "
      "CI, call profile to see why a node is slow (its findings carry guidance), look up techniques with "
      "search_skills/get_skill and CUTLASS/CuTe code with search_code/read_file. Never time kernels yourself: "
      "evaluate's numbers are the ones that count. When done, call finish: the best is evaluated once more and "
      "recorded.",
      BackendName(task.backend), task.name, has_start ? " and get_source 0 (the starting candidate)" : "");
}

int RunMcp(const McpArgs& a) {
  // A client that goes away must not kill the server with SIGPIPE mid-write: the write fails and
  // the session ends when the input does.
  std::signal(SIGPIPE, SIG_IGN);
  auto task = LoadTaskArg(a.task_dir, a.source);
  if (!task.ok()) return Fail(task.status());
  OptimizeOptions o;
  o.task_dir = std::filesystem::absolute(a.task_dir).string();
  auto from = StartingCandidate(*task, a.from);
  if (!from.ok() && !a.from.empty()) return Fail(from.status());
  if (from.ok()) {
    o.from = std::filesystem::absolute(*from).string();
    if (Status s = AdoptCandidateParams(&task.value(), o.from); !s.ok()) return Fail(s);
  }
  o.workloads = a.workloads;
  o.timing = *ParseTimingMode(a.timing);
  o.arch = a.arch;
  o.device = a.device;
  o.devices = {a.device};
  o.counters = a.counters == "on";
  o.budget = std::max(1, a.max_evals);
  o.footprints = false;
  o.anticipate = false;
  if (NeedsGpu(*task)) {
    auto gpu = GpuAtIndex(SystemGpuProbe(), a.device);
    if (!gpu.ok())
      return Fail(Status::Unavailable("task " + task->name + " needs a GPU: " + gpu.status().message() +
                                      "; run kpilot mcp on a machine with an NVIDIA GPU"));
    if (o.arch.empty()) o.arch = gpu->Arch();
  }
  auto max_time = ParseDuration(a.max_time, "--max-time");
  if (!max_time.ok()) return Fail(max_time.status());
  auto store = Store::Open(a.store_dir);
  if (!store.ok()) return Fail(store.status());

  SessionSettings settings;
  settings.layout = Layout();
  settings.python = a.source.python;
  settings.notices = &std::cerr;
  settings.evaluate_only = true;
  auto session = OptimizeSession::Open(*task, o, **store, settings);
  if (!session.ok()) return Fail(session.status());

  mcp::KpilotToolsOptions to;
  to.limits.max_evaluations = a.max_evals;
  to.limits.max_profiles = a.max_profiles;
  to.limits.max_wall_s = *max_time;
  to.workspace = a.workspace.empty() ? std::filesystem::current_path() : std::filesystem::absolute(a.workspace);
  if (a.code_roots.empty())
    for (const auto& r : FindCutlassTrees(DefaultToolSearch())) to.code_roots.emplace_back(r);
  for (const auto& r : a.code_roots) to.code_roots.emplace_back(std::filesystem::absolute(r));
  auto abi = ReadFile(Layout().include_dir / "kpilot" / "kernel.h");
  if (!abi.ok()) return Fail(abi.status());
  to.abi_header = *abi;
  PromptOptions po;
  SetCandidateCutlass(*task, &po);
  to.cutlass_include = po.cutlass_include;
  to.cutlass_version = po.cutlass_version;
  to.platform = task->backend == Backend::kCuda ? o.arch : "";
  auto params = ParseDefines(*task, a.defines);
  if (!params.ok()) return Fail(params.status());
  to.start_params = *params;
  if (a.parent_run > 0) to.context = {{"run", a.parent_run}, {"node", a.parent_node}};
  std::optional<SkillLibrary> skills;
  std::vector<std::string> skill_dirs;
  bool skills_on = true;
  for (const auto& v : a.skills) {
    if (v == "off" || v == "on") {
      skills_on = v == "on";
    } else if (std::filesystem::is_directory(v)) {
      skill_dirs.push_back(std::filesystem::absolute(v).string());
    } else {
      return Fail(Status::InvalidInput("--skills " + v + ": not a folder of skill cards (<id>/SKILL.md), on or off"));
    }
  }
  if (skills_on) {
    auto lib = LoadSkillLibrary(Layout(), skill_dirs, {}, &std::cerr);
    if (!lib.ok()) return Fail(lib.status().WithContext("loading skill cards (--skills off serves none)"));
    skills = std::move(lib).value();
    to.skills = &*skills;
  }

  // The session's events reach the agent as tool results; nothing is printed of them here.
  class NoProgress : public ProgressSink {
   public:
    void Event(const nlohmann::json&) override {}
  } progress;
  mcp::KpilotTools tools(*task, {*task, session.value()->executor(), **store, progress}, o, to);
  mcp::ServerInfo info;
  info.version = KPILOT_VERSION;
  info.instructions = Instructions(*task, !o.from.empty());
  mcp::Session protocol(tools, info);
  std::cerr << fmt::format("kpilot: MCP server for task {} on stdin/stdout (store {}{})\n", task->name,
                           (*store)->dir().string(), o.from.empty() ? "" : ", starting from " + o.from);
  Status s = mcp::ServeStream(protocol, STDIN_FILENO, STDOUT_FILENO, [&](const std::string& method, double sec) {
    if (method == "tools/call") std::cerr << fmt::format("kpilot: tools/call took {:.2f} s\n", sec);
  });
  tools.Close("the client closed the connection without finish");
  if (tools.run_id() > 0) std::cerr << fmt::format("kpilot: the session's run is {}\n", tools.run_id());
  return s.ok() ? kExitOk : Fail(s);
}

}  // namespace

void AddMcpCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<McpArgs>();
  auto* cmd = app.add_subcommand(
      "mcp", "Serve kpilot's tools to an agent over the Model Context Protocol (stdio; docs/mcp.md)");
  cmd->add_option("task", a->task_dir,
                  "Task folder (holding task.toml), KernelBench problem .py or flashinfer-bench definition .json")
      ->required();
  AddTaskSourceOptions(cmd, &a->source);
  cmd->add_option("--from", a->from,
                  "Starting candidate, evaluated as node 0 (default: the task's first candidates/ file, if any)");
  cmd->add_option("-D", a->defines, "A param of the starting candidate NAME=VALUE (repeatable)");
  cmd->add_option("--max-evals", a->max_evals, "Evaluations the agent may ask for (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-profiles", a->max_profiles, "Counter profiles the agent may ask for (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-time", a->max_time, "Wall-clock limit of the session, e.g. 30m (default: none)");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--workspace", a->workspace,
                  "The folder evaluate's `file` arguments are read from (default: the working directory)");
  cmd->add_option("--skills", a->skills,
                  "A folder of skill cards to add (kpilot cards or plain Agent Skills; repeatable), or off");
  cmd->add_option("--code-root", a->code_roots,
                  "A source tree search_code/read_file may read (repeatable; default: the CUTLASS/CuTe trees found)");
  cmd->add_option("--workload", a->workloads, "Only these workloads (repeatable)");
  cmd->add_option("--timing", a->timing, "Timing procedure: default | kernelbench | flashinfer")
      ->check(CLI::IsMember({"default", "kernelbench", "flashinfer"}))
      ->capture_default_str();
  cmd->add_option("--arch", a->arch, "CUDA target (default: the visible GPU's)");
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_option("--counters", a->counters, "on | off: profile measures counters on cuda tasks")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--parent-run", a->parent_run, "The search run an agent of a command: generator works for")
      ->group("");
  cmd->add_option("--parent-node", a->parent_node, "The node of --parent-run it drafts from")->group("");
  cmd->callback([a, exit_code]() { *exit_code = RunMcp(*a); });
}

}  // namespace kpilot::cli
