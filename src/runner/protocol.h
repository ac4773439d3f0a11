// The runner protocol: the request the harness writes for `kpilot-runner` and the versioned
// JSON result the runner prints on stdout. Both sides link this file, so the wire format has
// one definition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "task/task.h"

namespace kpilot {

inline constexpr int kRunnerProtocolVersion = 1;

struct TimingConfig {
  int warmup = 3;                  // untimed calls of each side before sampling
  int min_reps = 10;               // pairs sampled at least
  int max_reps = 2000;             // pairs sampled at most
  double max_seconds = 3.0;        // sampling time cap per workload (both sides together)
  double target_rel_ci = 0.01;     // stop once both medians' 95% CI half-widths are within this
};

struct RunTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;      // concrete, for one workload
  InitSpec init;                   // inputs
  Tolerance tolerance;             // outputs
};

struct RunWorkload {
  std::string name;
  std::vector<RunTensor> inputs;
  std::vector<RunTensor> outputs;
  std::vector<double> scalar_values;  // in Task::scalars order
};

struct RunRequest {
  Backend backend = Backend::kHost;
  std::string reference_object;    // shared objects, absolute paths
  std::string candidate_object;
  std::string baseline_object;     // may equal reference_object
  std::vector<ScalarSpec> scalars; // names and dtypes (values per workload)
  std::vector<RunWorkload> workloads;
  std::vector<uint64_t> seeds = {1, 2, 3};
  bool time = true;                // false: correctness only
  TimingConfig timing;
  double timeout_s = 120;          // wall-clock limit of the whole run, enforced by the supervisor
  double cpu_seconds = 0;          // RLIMIT_CPU of the worker; 0 = derived from timeout_s
  int64_t file_bytes = 64ll << 20; // RLIMIT_FSIZE of the worker (caps what candidates write)
  int64_t address_space_bytes = 0; // RLIMIT_AS of the worker on the host backend; 0 = none
  bool sandbox = true;             // try PID and network namespaces
};

nlohmann::json ToJson(const RunRequest& r);
Result<RunRequest> RunRequestFromJson(const nlohmann::json& j);

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
  double first_bad_value = 0;      // candidate's value there
  double first_bad_expected = 0;   // reference's value there
  bool guards_intact = true;       // bytes around the output untouched
  bool ok = true;
};

struct TimingRecord {
  std::string workload;
  std::vector<double> candidate_ms;  // every sample, in order
  std::vector<double> baseline_ms;   // pair i taken next to candidate_ms[i]
  std::string method;                // how samples were taken, e.g. "host steady_clock per call"
};

// The runner's status: what it observed. The harness turns it into a Verdict.
//   passed | incorrect | runtime_error | timeout | suspicious | error (kpilot or task fault)
struct RunResult {
  int version = kRunnerProtocolVersion;
  std::string status;
  std::string message;               // one sentence: what happened, naming workload/seed/output
  std::string phase;                 // load | reference | correctness | timing | done
  std::vector<CheckRecord> checks;
  std::vector<TimingRecord> timings;
  std::string candidate_stdout_tail; // what the candidate printed (tail)
  std::string candidate_stderr_tail;
  bool pid_namespace = false;        // the sandbox that was in force
  bool net_namespace = false;
  int leftover_processes_killed = 0; // processes the candidate left behind, killed by the supervisor
  int exit_signal = 0;               // the signal that ended the worker, 0 if none
  double wall_s = 0;
};

nlohmann::json ToJson(const RunResult& r);
Result<RunResult> RunResultFromJson(const nlohmann::json& j);

}  // namespace kpilot
