// Shared pieces of kpilot's subcommands: the command table entry, locating kpilot's own files,
// and turning a Status into a message and an exit code.
//
// Exit codes, the same for every subcommand:
//   0  success (for eval: the candidate passed)
//   1  the candidate or run did not pass (or kpilot hit an internal error)
//   2  usage or input error (bad flags, malformed task.toml, missing file)
//   3  the machine lacks what was asked for (no GPU, no nvcc, …); the message says how to fix it
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/fs.h"
#include "core/status.h"
#include "device/device.h"
#include "harness/harness.h"
#include "runner/protocol.h"
#include "session/session.h"
#include "slurm/slurm.h"
#include "skills/skills.h"
#include "store/store.h"

namespace kpilot::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotPassed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;
inline constexpr int kExitInternal = 70;  // a defect of kpilot's (EX_SOFTWARE)

// One subcommand: `add` registers it on the app and stores the exit code in *exit_code when it
// runs. Each lives in its own file (doctor.cc, eval.cc, …).
struct Command {
  const char* name;
  std::function<void(CLI::App& app, int* exit_code)> add;
};

void AddDoctorCommand(CLI::App& app, int* exit_code);
void AddEvalCommand(CLI::App& app, int* exit_code);
void AddProfileCommand(CLI::App& app, int* exit_code);
void AddOptimizeCommand(CLI::App& app, int* exit_code);
// runs, show and export
void AddRunsCommands(CLI::App& app, int* exit_code);
void AddCalibrateCommand(CLI::App& app, int* exit_code);
void AddSweepCommand(CLI::App& app, int* exit_code);
// skills list | show | validate | stats | retrieve
void AddSkillsCommand(CLI::App& app, int* exit_code);
void AddLineageCommand(CLI::App& app, int* exit_code);
void AddBenchCommand(CLI::App& app, int* exit_code);
// report RUN_ID: a run, bench or lineage walk as one HTML page
void AddReportCommand(CLI::App& app, int* exit_code);
// mcp TASK: the Model Context Protocol server agents call kpilot's tools through
void AddMcpCommand(CLI::App& app, int* exit_code);

// Where a command keeps things: the store (unless --no-store) and the compile cache inside it, or
// a scratch cache folder removed at exit.
struct Workspace {
  std::unique_ptr<Store> store;  // null with --no-store
  std::optional<TempDir> scratch;
  std::filesystem::path cache_dir;
};
Result<Workspace> OpenWorkspace(const std::string& store_dir, bool no_store);
// The store that runs, show, export and report read: one that does not exist yet is not made (a
// wrong --store, or a command run from another folder, would otherwise leave an empty store
// behind); NotFound naming the folder and --store.
Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& store_dir);

// The store key of a GPU's calibration (name, driver, SM count, clock), and reading and writing
// it (calibrate.cc). LoadCalibration returns an invalid Calibration when none is stored; `full`
// receives everything stored (tensor-core rates, L2, launch overhead, device limits).
std::string CalibrationKey(const GpuInfo& gpu);
Calibration LoadCalibration(Store* store, const GpuInfo& gpu, nlohmann::json* full = nullptr);
Status SaveCalibration(Store& store, const GpuInfo& gpu, const Calibration& c, const nlohmann::json& details);

// `-D NAME=VALUE` flags (eval, profile) checked against the task's declared params: each name
// declared, each value one of its values, and every constraint whose params are all set held.
Result<ParamValues> ParseDefines(const Task& task, const std::vector<std::string>& defines);

// "30m", "90s", "2h", "45" (seconds) → seconds; "" → 0. InvalidInput naming `flag` otherwise.
Result<double> ParseDuration(const std::string& s, const std::string& flag);

// Prints "kpilot: <message>" to stderr and returns the exit code for the status.
int Fail(const Status& s);

// One line for a `counters` event of a run (a counter profile, docs/search.md): "node 3: cupti
// 0.81 s, memory-bound; barrier-stall, tail-effect", or "node 3: no profile: <why>". The live
// progress and `kpilot show` print it.
std::string CountersGist(const nlohmann::json& event);

// kpilot-runner: $KPILOT_RUNNER, else beside this executable.
std::filesystem::path RunnerPath();
// The folder containing kpilot/kernel.h: $KPILOT_INCLUDE_DIR, else ../include beside this
// executable (installed), else the source tree this kpilot was built from.
std::filesystem::path IncludeDir();
// The shipped prompt templates of the llm:/command: generators: $KPILOT_PROMPTS_DIR, else
// ../share/kpilot/prompts beside this executable (installed), else the nearest prompts/ above it
// holding system.md (a build tree), else the source tree's.
std::filesystem::path PromptsDir();
// The built-in skill cards: $KPILOT_SKILLS_DIR, else ../share/kpilot/skills beside this executable
// (installed), else the nearest skills/ above it holding README.md, else the source tree's.
std::filesystem::path SkillsDir();
// The example rule files (examples/tools/*.toml), whose rule ids skill cards may name as triggers:
// $KPILOT_EXAMPLE_TOOLS_DIR, else ../share/kpilot/tools (installed), else the tree's examples/tools.
std::filesystem::path ExampleToolsDir();

// kpilot's Python worker package (the folder holding kpilot_torch/): $KPILOT_PYTHONPATH, else
// ../share/kpilot/python beside this executable (installed), else the nearest python/ above it
// holding kpilot_torch/worker.py, else the source tree's python/.
std::filesystem::path PythonPackageDir();

// ---- TASK arguments that may be PyTorch-defined (torch_tasks.cc, docs/pytorch.md) ----

// --python and --workloads, shared by the subcommands that take a TASK.
struct TaskSourceArgs {
  std::string python;          // "" = python3 on PATH
  std::string workloads_file;  // flashinfer workloads JSONL; "" = found beside the definition
  bool no_libraries = false;   // --no-libraries: the task's `libraries` set to false
  bool no_cutlass = false;     // --no-cutlass: the task's `cutlass` set to false
};
void AddTaskSourceOptions(CLI::App* cmd, TaskSourceArgs* args);
// A task folder, a KernelBench problem .py or a flashinfer definition .json (LoadAnyTask).
Result<Task> LoadTaskArg(const std::string& path, const TaskSourceArgs& args);
// The candidate a search (or an agent's session) starts from: `from`, else the first (sorted)
// native candidate in the task's candidates/ — for a problem or definition file,
// <its folder>/candidates/<its stem>/, else <its folder>/../candidates/<its stem>/ (a suite's
// layout, e.g. examples/kernelbench). InvalidInput naming the folder and --from when there is none.
Result<std::string> StartingCandidate(const Task& task, const std::string& from);
// The worker that evaluates a task with a Python reference; null for a native task. NotFound
// (with the fix) when the interpreter or kpilot's Python package is missing.
Result<std::unique_ptr<PythonTaskRunner>> MakePythonTaskRunner(const Task& task, const std::string& python);
// --executor slurm: the worker of tasks with a Python reference started in each allocation
// (slurm::ClusterRunner), the same interpreter and package at the same paths on the nodes.
slurm::PythonRunnerFactory ClusterPythonWorkers(const std::string& python);
// The --compile-on local|slurm option of the commands that compile.
void AddCompileOnFlag(CLI::App* cmd, std::string* compile_on);
// --compile-on: null for "local"; for "slurm", the compile allocation of --slurm-config's
// [slurm] table (compile_partition, compile_cpus), started now so that its errors (no sbatch, a
// rejected partition) come before any evaluation. `quiet`: no progress lines (--json).
Result<std::unique_ptr<slurm::CompileAllocation>> StartCompileOn(const std::string& compile_on,
                                                                 const std::string& slurm_config,
                                                                 const std::string& job_name, bool quiet);

// Where this executable's shipped parts are (the paths above, and ~/.config/kpilot/tools), for
// the libraries that assemble a run (session/session.h).
InstallLayout Layout();

}  // namespace kpilot::cli
