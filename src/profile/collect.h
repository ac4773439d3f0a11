// A kernel profile of one passing candidate, after it was timed: the side-effecting half of
// profiling (the pure half is profiler.h). Stage 1 classes the candidate from its evaluation —
// time, calibration, launch trace — and selects the tools for that class; stage 2 collects only
// the counters those tools need, in-process through CUPTI's range profiler or under ncu (both need
// the GPU to themselves), and runs the tools on every kernel.
//
// `kpilot profile` and the optimizer's profiling step (each new best's counters, through the
// executor's GPU queue) share it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/subprocess.h"
#include "harness/harness.h"
#include "profile/counter_profile.h"
#include "profile/profiler.h"
#include "profile/static_profile.h"
#include "runner/cupti_trace.h"

namespace kpilot {

// Facts every kernel's context shares: the task's (precision, GEMM shape), the workload's minimum
// bytes, the device's limits and SM count.
ProfileContext SharedProfileContext(const Task& task, const Workload& workload, const std::string& arch, int sm_count);

// The share of a call during which no kernel runs, from the last traced check call's kernel busy
// time and span and the timed call's median. Each of the two measures overstates the gaps in its
// own way, so the smaller is taken:
// - the traced span holds gaps the timed call does not: on the H200 sum_reduction's two-kernel
//   candidate launched its second kernel 0.5–5 ms after the first in the check, while its timed
//   call took 67 µs in all;
// - the timed call is also longer than the traced kernels when they run slower under timing (its
//   L2 is flushed before every call): vadd-one-block's single kernel took 0.74 ms traced and
//   1.72 ms timed, with no gap at all.
// Without a timed call (`call_ms` <= 0), the span's share. 0 when nothing was traced.
double LaunchGapShare(double kernel_busy_ns, double span_ns, double call_ms);

// Stage 1's roofline input from a passing evaluation (time, calibration) and the facts of its
// last traced call on `workload` (kernels, memcpys, syncs, LaunchGapShare; its last traced call
// of any workload when none was on that one) copied into `shared`; `trace` receives that call's
// launch trace (empty when the evaluation traced none).
RooflineInput StageOneInput(const Workload& workload, const Evaluation& e, ProfileContext* shared, LaunchTrace* trace);

// Pure: whether `e`, an evaluation already made, holds everything ProfileWithCounters takes from
// one on `workload`, so that a counter profile need not evaluate its candidate again (about
// 0.2 s of GPU time per profile on the H200; docs/results.md, "Busy share with served runners
// and counter jobs"): it passed, its compile has an object and its SASS (not left for later),
// it timed `workload`, and — when it traced calls at all — one of them was on `workload` (the
// runner traces the first six check calls only, so a later workload's may be missing). Whether
// the object still exists on disk is the caller's check.
bool CounterProfileCanTake(const Evaluation& e, const Workload& workload);

// ncu's launch__ metrics and theoretical occupancy from a launch trace, for the first launch of
// each kernel (by mangled name): the CUPTI path reads these from the trace, not the counters.
std::map<std::string, MetricMap> LaunchMetricsFromTrace(const LaunchTrace& trace, const SmLimits* limits, int sm_count);

// Mangled names of the kernels that the evaluation's traced calls launched (`run_details`'
// "launch_trace", every traced call). Empty — nothing known — when it traced none, or when one of
// `workloads` has no traced call: the runner traces the first six check calls only, and a
// candidate may pick its kernel by shape, so the kernels of an untraced workload are unknown.
std::set<std::string> TracedKernelNames(const nlohmann::json& run_details, const std::vector<std::string>& workloads);

// The profiles of `statics` whose kernel is in `launched` (mangled names), or all of them when
// none is (nothing was traced: a static profile, a replay). An object may hold kernels that a
// shape never launches — a template's other instantiation, a fallback path — and their SASS says
// nothing of the call.
std::vector<KernelStaticProfile> LaunchedOnly(const std::vector<KernelStaticProfile>& statics,
                                              const std::set<std::string>& launched);

// One report per kernel of `statics` that ran — its mangled name has a launch shape in `launch` or
// counters in `measured`; all of them when none is named there — with its static profile, that
// launch shape, the counters (matched by kernel name) and the class they give, then the tools.
// With no counters this is the static profile's report. `block` is the occupancy's block size
// when the launch does not say.
std::vector<KernelReport> AnalyzeKernels(const std::vector<KernelStaticProfile>& statics, const ProfileContext& shared,
                                         const RooflineInput& base, const std::vector<KernelMetrics>& measured,
                                         const std::map<std::string, MetricMap>& launch,
                                         const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools,
                                         std::optional<Bottleneck> stage1, int block);

// The kernel profile of `e`, a passing evaluation of `task` at `options` (its compile object is
// profiled, on `workload`): Unavailable when no profiler can run (CUPTI failed and no ncu), the
// runner's or ncu's failure otherwise. `place`: where its runner runs (RunnerChannel::Place, a
// Slurm allocation's node; {} here), ncu's command line after its wrapper.
Result<CounterProfile> ProfileWithCounters(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                           const Task& task, const Workload& workload, const EvalOptions& options,
                                           const Evaluation& e, const std::vector<std::unique_ptr<Tool>>& tools,
                                           const CounterProfileOptions& opt, const RunnerLaunch& place = {});

// The findings of every report, highest severity first.
std::vector<Finding> AllFindings(const std::vector<KernelReport>& reports);

}  // namespace kpilot
