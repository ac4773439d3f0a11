// The runner protocol: the request the harness writes for `kpilot-runner` and the versioned
// JSON result the runner prints on stdout. Both sides link this file, so the wire format has
// one definition.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sandbox/sandbox.h"
#include "task/task.h"

namespace kpilot {

inline constexpr int kRunnerProtocolVersion = 1;

// How the cuda backend times. `default`: kpilot's method (L2 flushed before every call, events
// on the given stream, rotated input sets, ABAB pairs until the medians' CIs are tight).
// `kernelbench` and `flashinfer` reproduce those harnesses' procedures (see README).
enum class TimingMode { kDefault, kKernelBench, kFlashInfer };
std::string_view TimingModeName(TimingMode m);
std::optional<TimingMode> ParseTimingMode(std::string_view name);

struct TimingConfig {
  TimingMode mode = TimingMode::kDefault;
  int input_sets = 3;           // input sets rotated between calls (cuda backend)
  int warmup = 3;               // untimed calls of each side before sampling
  int min_reps = 10;            // pairs sampled at least
  int max_reps = 2000;          // pairs sampled at most
  double max_seconds = 3.0;     // sampling time cap per workload (both sides together)
  double target_rel_ci = 0.01;  // stop once both medians' 95% CI half-widths are within this
};

struct RunTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // concrete, for one workload
  InitSpec init;               // inputs
  Tolerance tolerance;         // outputs
};

struct RunWorkload {
  std::string name;
  std::vector<RunTensor> inputs;
  std::vector<RunTensor> outputs;
  std::vector<double> scalar_values;  // in Task::scalars order
  double flops = 0;                   // the task's formulas for this workload (0 = unknown)
  double min_bytes = 0;
  bool timed = true;  // false: checked only (a drawn workload)
};

// Ceilings measured once per GPU (the harness caches them in the store and passes them back).
struct Calibration {
  std::string gpu;              // "NVIDIA H200 / driver 13.0 / sm 1980 MHz": the cache key
  double dram_bytes_per_s = 0;  // device-to-device copy, bytes read + written per second
  double fp32_flops_per_s = 0;  // FFMA rate, 2 FLOP per FMA
  bool valid() const { return dram_bytes_per_s > 0 && fp32_flops_per_s > 0; }
};

struct RunRequest {
  Backend backend = Backend::kHost;
  std::string reference_object;  // shared objects, absolute paths
  std::string candidate_object;
  std::string baseline_object;      // may equal reference_object
  std::vector<ScalarSpec> scalars;  // names and dtypes (values per workload)
  std::vector<RunWorkload> workloads;
  std::vector<uint64_t> seeds = {1, 2, 3};
  bool time = true;  // false: correctness only
  TimingConfig timing;
  double timeout_s = 120;           // wall-clock limit of the whole run, enforced by the supervisor
  double cpu_seconds = 0;           // RLIMIT_CPU of the worker; 0 = derived from timeout_s
  int64_t file_bytes = 64ll << 20;  // RLIMIT_FSIZE of the worker (caps what candidates write)
  int64_t address_space_bytes = 0;  // RLIMIT_AS of the worker on the host backend; 0 = none
  bool sandbox = true;              // isolate the worker (sandbox/sandbox.h; KPILOT_SANDBOX overrides)
  // Folders and files the worker must not see (the task folder, the store, the compile cache,
  // home folders). The objects above must not lie inside them: the harness copies them into the
  // request's folder (StageObjects).
  std::vector<std::string> sandbox_hide;
  // cuda backend
  int device = 0;                          // CUDA device index
  bool energy = false;                     // NVML energy per call (adds ≥ 1 s per side per workload)
  bool libraries = true;                   // false: library use makes the verdict incorrect
  std::optional<DType> compute_precision;  // for the lowered-precision check
  Calibration calibration;                 // empty: the runner measures it and reports it back
  std::string lock_dir = "/tmp";           // where the per-GPU timing lock lives
  // Profiling (kpilot profile under ncu): call only the candidate, once per workload on the
  // first seed's inputs, with no reference, checks or timing, so a profiler sees its kernels alone.
  bool profile_only = false;
  // With profile_only: hardware counters to read in-process through CUPTI's range profiler (ncu
  // metric names), one range per kernel launch of the candidate's calls, in launch order; values
  // land in details["counters"] as [{"range", "metrics": {name: value}}] (CUPTI names auto ranges
  // by number, not kernel), failures in details["counters_error"], costs in details["counters_info"].
  std::vector<std::string> counters;
  // Kernel launches one call makes, when known (the eval's launch trace): sizes CUPTI's counter
  // data, whose set-up grows with the ranges it must hold. 0: the runner's default maximum.
  int counters_max_ranges = 0;
  // How CUPTI replays the call for multi-pass metrics: "user" (the runner calls the candidate once
  // per pass: no memory save/restore) or "kernel" (CUPTI replays each kernel itself, saving and
  // restoring device memory around it).
  std::string counters_replay = "user";
  // Sweeps (kpilot sweep): more candidate objects, each checked on the first seed and timed
  // against the baseline in this one process; results in details["sweep"], one entry per object.
  std::vector<std::string> sweep_objects;
  // kpilot calibrate: measure the GPU's ceilings (DRAM, L2, FP32, tensor cores, launch overhead)
  // and report them in details["calibration"]; no objects are loaded.
  bool calibrate_only = false;
};

// {"gpu", "dram_bytes_per_s", "fp32_flops_per_s"}: the runner's result field, a space file's
// header and the keys `kpilot calibrate --json` prints. Missing fields read as 0 (invalid).
nlohmann::json ToJson(const Calibration& c);
Calibration CalibrationFromJson(const nlohmann::json& j);

nlohmann::json ToJson(const RunRequest& r);
Result<RunRequest> RunRequestFromJson(const nlohmann::json& j);
// A request file (kpilot-runner --request FILE, or a line of --serve); errors name the file.
Result<RunRequest> ReadRunRequestFile(const std::string& path);

// One correctness comparison: one output of one call.
struct CheckRecord {
  std::string workload;
  uint64_t seed = 0;
  std::string output;
  int64_t numel = 0;
  int64_t mismatches = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t first_bad_index = -1;
  double first_bad_value = 0;     // candidate's value there
  double first_bad_expected = 0;  // reference's value there
  bool guards_intact = true;      // bytes around the output untouched
  bool ok = true;
};

struct TimingRecord {
  std::string workload;
  std::vector<double> candidate_ms;  // every sample, in order
  std::vector<double> baseline_ms;   // pair i taken next to candidate_ms[i]
  std::string method;                // how samples were taken, e.g. "host steady_clock per call"
  std::string statistic = "median";  // what the procedure reports: "median" or "mean"
  std::vector<double> host_ms;       // cuda: host clock around launch + device sync, per candidate call
  std::vector<double> cupti_ms;      // cuda: CUPTI span of the candidate's kernels per call (if traced)
  double loop_wall_ms = 0;           // the worker's own clock over the whole sampling loop
  double joules_per_call = 0;        // --energy: candidate, from NVML's total-energy counter
  double watts = 0;
  double baseline_joules_per_call = 0;
  double baseline_watts = 0;
};

// The runner's status: what it observed. The harness turns it into a Verdict.
//   passed | incorrect | runtime_error | timeout | suspicious | error (kpilot or task fault)
// A served runner's state after a request (details["served"]).
struct ServedState {
  int request = 0;     // 1 for the first request a server took
  int pid = 0;         // the server's process
  bool ready = false;  // it takes the next request; false: it retires
  std::string why;     // why it retires
};

// What other modules read of a run's details, typed. The details keep the whole report, as the
// runner or the torch worker wrote it, for the record and `--json`; this is its contract.
struct RunReport {
  std::string gpu_name;               // the cuda runner's details.gpu.name, the torch worker's details.gpu
  int gpu_sm_count = 0;               // the cuda runner only
  std::string torch_version;          // the torch worker only
  std::optional<ServedState> served;  // a served runner only
  // Seconds since the worker started at each step's end (details.timeline_s): "objects",
  // "checks", "timing", ...
  std::map<std::string, double> timeline_s;
  // The torch worker's steps, in seconds (details.python_start_s, import_torch_s, the
  // candidate's, reference's and baseline's *_setup_s summed as setup_s, a torch.compile
  // baseline's compile_s, gpu_lock_wait_s as lock_wait_s, check_s, timing_s); 0 where the worker
  // did not report them. No step counts another's seconds.
  double python_start_s = 0, import_torch_s = 0, setup_s = 0, compile_s = 0, lock_wait_s = 0, check_s = 0, timing_s = 0;
  // The torch worker's checks of the reference itself (details.reference_flaws): "constant_output",
  // "ignores_inputs", "random", "nondeterministic", each with a sentence of evidence.
  struct ReferenceFlaw {
    std::string flaw, evidence;
  };
  std::vector<ReferenceFlaw> reference_flaws;
  // The torch worker's details.out_of_memory: the run failed because the GPU's memory ran out.
  bool out_of_memory = false;
  // The seconds spent on checks and timing proper: from the objects' load to the end of timing
  // (of the checks, for a run that was not timed); 0 where the timeline does not say.
  double ChecksAndTimingSeconds() const;
};

// The typed view of `details` (RunResult::details). Pure; keys that are missing or of another
// type leave their defaults.
RunReport ReadRunReport(const nlohmann::json& details);

struct RunResult {
  int version = kRunnerProtocolVersion;
  std::string status;
  std::string message;  // one sentence: what happened, naming workload/seed/output
  std::string phase;    // load | reference | correctness | timing | done
  std::vector<CheckRecord> checks;
  std::vector<TimingRecord> timings;
  std::string candidate_stdout_tail;  // what the candidate printed (tail)
  std::string candidate_stderr_tail;
  SandboxReport sandbox;              // the sandbox that was in force, and what it denied
  int leftover_processes_killed = 0;  // processes the candidate left behind, killed by the supervisor
  int exit_signal = 0;                // the signal that ended the worker, 0 if none
  double wall_s = 0;
  std::vector<std::string> warnings;                  // e.g. other processes on the GPU, CUPTI unavailable
  Calibration calibration;                            // cuda: the ceilings used (measured now or passed in)
  bool calibration_measured = false;                  // true when this run measured them (harness caches them)
  nlohmann::json details = nlohmann::json::object();  // launch trace, library use, clocks, GPU
  RunReport Report() const { return ReadRunReport(details); }
};

nlohmann::json ToJson(const RunResult& r);
// The result's "sandbox" object: the SandboxReport and leftover_processes_killed.
nlohmann::json SandboxJson(const RunResult& r);
// The verdict's part of r.sandbox.denied: a run that would have passed is "suspicious" (it tried
// to reach beyond its sandbox), its message naming the attempts; any other status stays, its
// message naming them too. Status "error" (kpilot's fault) is left alone.
void ApplySandboxDenials(RunResult* r);

// JSON has no NaN or Inf; errors can be both. Encoded as the strings "nan", "inf", "-inf".
nlohmann::json JsonNumber(double v);
// Its inverse (null reads as NaN); throws nlohmann's type_error or std::runtime_error on anything else.
double NumFrom(const nlohmann::json& j);

// JSON text that never throws: text that is not UTF-8 (a candidate's output, a log cut inside
// a character) becomes U+FFFD instead of aborting the writer.
std::string JsonText(const nlohmann::json& j);
Result<RunResult> RunResultFromJson(const nlohmann::json& j);

}  // namespace kpilot
