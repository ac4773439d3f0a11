// A sweep: a task's whole tunable space evaluated once, every configuration stored with every
// timing sample in a space file (docs/sweep.md; the file's layout is sweep/space_file.h).
//
// Configurations compile on a pool of threads; one kpilot-runner process checks (first seed
// only) and times a batch of objects; configurations that compile to the same bytes are
// evaluated once. Each batch's results are journaled at once and the space file is rewritten
// every 30 s and at the end, so an interrupted sweep resumes where it stopped. PyTorch-defined
// tasks are evaluated by the torch worker, one object at a time.
//
// A sweep goes through four steps, in this order, each of which may fail with the input at fault
// named (InvalidInput, NotFound) or the machine (Unavailable):
//
//   auto sweep = Sweep::Plan(task, options, &observer);   // the space; --dry-run stops here
//   sweep->ChooseGpu(SystemGpuProbe());                     // cuda tasks: the device
//   sweep->Open(SystemProcessRunner());                     // the space file, resumed or new
//   auto summary = sweep->Run(env);                         // compile, evaluate, save
//
// Candidates that fail to compile, crash or are wrong are entries of the space file (data), not
// errors. Run's error means the task, the machine or kpilot is at fault (the reference does not
// compile, a compiler is missing, the runner fails on the task's own objects).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "exec/executor.h"
#include "harness/harness.h"
#include "task/task.h"
#include "toolchain/toolchain.h"

namespace kpilot {

// What a sweep is asked to do; the fields of `kpilot sweep`'s flags (docs/sweep.md).
struct SweepOptions {
  std::filesystem::path candidate;  // the source whose -D params span the space (.cu, or .cpp on the host backend)
  std::string workload;             // the one workload timed; "" = the task's first
  int jobs = 0;                     // compile threads; 0 = every core (one fewer while a cuda sweep evaluates)
  int batch = 32;                   // objects per runner process; at least 1
  std::filesystem::path out;        // the space file; "" = sweep-<task>.json; an existing one is resumed
  size_t cap = 100000;              // at most this many configurations
  double max_seconds = 0.5;         // the timing loop's cap per configuration, seconds
  double timeout_s = 0;             // per configuration inside a batch, seconds; 0 = 5 + 3 × max_seconds
  double stop_after_s = 0;          // start no new batch after this many seconds; 0 = no limit
  std::string arch;                 // CUDA target; "" = the chosen GPU's, else nvcc's default (sm_90a)
  int device = 0;                   // CUDA device index
  bool compile_only = false;        // compile every configuration, evaluate none (works without a GPU)
  // Whether evaluating the task needs a GPU here: kpilot's cuda backend does, and so does a
  // PyTorch-defined cuda task unless the torch device is the cpu. Its candidates are then .cu files.
  bool needs_gpu = false;
  // The batches run elsewhere (SweepEnv::channels: on a cluster's nodes): no GPU is needed here,
  // but a cuda task's candidates are still .cu files, compiled for `arch`.
  bool runs_elsewhere = false;
};

// The best passed configuration so far, by speedup over the task's baseline.
struct SweepBest {
  ParamValues params;
  double speedup = 0;
  double median_ms = 0;
  nlohmann::json entry;  // its space-file entry, samples included
};

// Where a sweep stands after a batch.
struct SweepProgress {
  size_t done = 0;  // configurations with a final status
  size_t total = 0;
  double elapsed_s = 0;  // since the sweep was planned
  std::optional<SweepBest> best;
};

// What a sweep tells while it runs. Compiled is called from the compile threads, one call at a
// time; the rest from the thread that calls Open or Run. The default does nothing.
class SweepObserver {
 public:
  virtual ~SweepObserver() = default;
  // The space file is open: `configs` in all, `resumed` of them already final there.
  virtual void Opened(const std::filesystem::path& /*out*/, size_t /*configs*/, size_t /*resumed*/) {}
  // Lines of the journal that were not entries (a write cut short); those configurations run again.
  virtual void JournalLinesSkipped(const std::filesystem::path& /*journal*/, size_t /*lines*/) {}
  // `configs` configurations are to compile on `threads` threads (called only when some are).
  virtual void CompileStarted(size_t /*configs*/, int /*threads*/) {}
  // After every compile: `compiled` of `total`, `errors` of them compile errors.
  virtual void Compiled(size_t /*compiled*/, size_t /*total*/, size_t /*errors*/, double /*elapsed_s*/) {}
  // A batch of `objects` objects got its results in `batch_s` seconds.
  virtual void BatchEvaluated(size_t /*objects*/, double /*batch_s*/, const SweepProgress& /*progress*/) {}
};

// What Run works with; all borrowed, and they must outlive Run.
struct SweepEnv {
  Toolchain* toolchain = nullptr;      // compiles the configurations, the reference and the baseline
  ProcessRunner* processes = nullptr;  // starts kpilot-runner
  std::filesystem::path runner;        // the kpilot-runner executable
  // PyTorch-defined tasks: the torch worker that checks and times each object (required unless
  // compile_only); null for native tasks.
  PythonTaskRunner* python = nullptr;
  Calibration calibration;  // the chosen GPU's ceilings from the store; invalid when none
  // Called with the ceilings a runner measured (when `calibration` was invalid), to store them.
  std::function<void(const Calibration&)> calibration_measured;
  // Batches elsewhere (kpilot sweep --executor slurm): `channel_queues` evaluation queues, each
  // sending its batches through the channel `channels` makes for it (exec/executor.h); a channel
  // that cannot run a batch is replaced, up to kChannelAttempts times in a row. Native tasks only.
  RunnerChannelFactory channels;
  int channel_queues = 1;
};

// The end of a sweep: what the space file holds.
struct SweepSummary {
  std::filesystem::path out;
  size_t configs = 0;
  // Configurations by status; with compile_only, compiled ones count as "compiled". "not_run"
  // appears only when some remain.
  std::map<std::string, int> by_status;
  // Every configuration has a final status (or every one compiled, with compile_only).
  bool complete = false;
  bool stopped = false;         // stop_after_s passed before every batch had started
  std::vector<SweepBest> best;  // the ten fastest passed configurations, fastest first
};

class SweepRun;

class Sweep {
 public:
  // Checks the task (it declares params), the candidate (exists, the backend's extension), the
  // workload and the batch size, and lists the valid configurations (at most options.cap).
  // `observer` (borrowed, may be null) hears of the steps after this one.
  static Result<std::unique_ptr<Sweep>> Plan(Task task, SweepOptions options, SweepObserver* observer = nullptr);
  ~Sweep();
  Sweep(const Sweep&) = delete;
  Sweep& operator=(const Sweep&) = delete;

  const Task& task() const;
  const std::string& workload() const;
  size_t size() const;          // configurations planned (valid ones, up to the cap)
  size_t combinations() const;  // the product of every param's value count

  // Picks GPU options.device when options.needs_gpu. InvalidInput for a device index the machine
  // lacks; Unavailable when there is no GPU and the sweep is not compile-only.
  Status ChooseGpu(GpuProbe& probe);
  const std::optional<GpuInfo>& gpu() const;

  // Opens the space file: resumed when it holds this sweep (same task, workload and candidate
  // file name), else started; written at once, so an unwritable path fails here. InvalidInput
  // naming the file and the fix otherwise. `processes` runs nvcc and g++ for their versions.
  Status Open(ProcessRunner& processes);

  // Compiles every configuration not final in the file and evaluates the new objects in batches
  // (none with compile_only), then writes the space file. The file is written even when Run fails.
  Result<SweepSummary> Run(const SweepEnv& env);

 private:
  explicit Sweep(std::unique_ptr<SweepRun> run);
  std::unique_ptr<SweepRun> run_;
};

}  // namespace kpilot
