#include "profile/collect.h"

#include <algorithm>
#include <set>

#include "core/fs.h"
#include "profile/ncu.h"
#include "runner/protocol.h"
#include "task/formula.h"

namespace kpilot {
namespace {

// Kernel launches ncu profiles at most per run: a call of a thousand tiny launches would otherwise
// take ncu minutes (each launch is replayed once per pass), and 64 launches of one kernel say what
// a thousand do.
constexpr int kNcuMaxLaunches = 64;

// Metrics every kernel profile collects, whatever the tools: the measured roofline and the launch.
const std::vector<std::string> kBaseMetrics = {"gpu__time_duration.sum",
                                               "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                               "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                               "launch__block_size",
                                               "launch__grid_size",
                                               "launch__registers_per_thread",
                                               "launch__waves_per_multiprocessor"};

// What one counter collection produced.
struct Collected {
  std::vector<KernelMetrics> kernels;
  std::string profiler, version, raw;
  double wall_s = 0;
  nlohmann::json info = nlohmann::json::object();
};

// "void (anonymous namespace)::SoftmaxRows<256>(float const*, …)" → "SoftmaxRows".
std::string BaseName(std::string s) {
  for (size_t p; (p = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(p, 23);
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  std::string head;
  int depth = 0;
  for (char c : s) {
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (c == '(' && depth == 0)
      break;
    else if (depth == 0)
      head += c;
  }
  size_t colon = head.rfind("::");
  return colon == std::string::npos ? head : head.substr(colon + 2);
}

// Whether a profiler's kernel name (ncu: demangled; CUPTI: as its range names it) is `k`.
bool SameKernel(const std::string& profiled, const KernelResources& k) {
  if (!k.mangled.empty() && profiled == k.mangled) return true;
  std::string base = BaseName(k.name);
  return !base.empty() && BaseName(profiled) == base;
}

// Metrics ncu derives from the launch rather than counters: the CUPTI path computes them from the
// eval's launch trace (LaunchMetricsFromTrace) instead of asking CUPTI.
bool LaunchDerived(const std::string& metric) {
  return metric.rfind("launch__", 0) == 0 || metric == "sm__maximum_warps_per_active_cycle_pct";
}

// Counters in-process: kpilot-runner reads them through CUPTI's range profiler. CUPTI numbers its
// auto ranges rather than naming them; range i is the call's i-th kernel launch, named from the
// eval's launch trace of the same call (the same code, so the same launches in the same order).
Result<Collected> CollectWithCupti(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                   RunRequest request, const std::vector<std::string>& metrics,
                                   const LaunchTrace& trace, const RunnerLaunch& place, bool* failed_in_passes) {
  *failed_in_passes = false;
  Collected c;
  c.profiler = "cupti";
  for (const auto& m : metrics)
    if (!LaunchDerived(m)) request.counters.push_back(m);
  auto run = RunRunnerProcess(processes, runner_exe, request, place);
  if (!run.ok()) return run.status().WithContext("running kpilot-runner for counters");
  c.wall_s = run->wall_s;
  const RunResult& result = run->result;
  if (result.status != "passed")
    return Status::Internal("the profile run ended " + result.status + ": " + result.message);
  const auto& d = result.details;
  // Unavailable only when CUPTI's profiler cannot be set up on this machine; a failure during this
  // candidate's passes or decode (e.g. calls that launch different kernels each time) is its own.
  if (d.contains("counters_error")) {
    if (d.value("counters_setup_failed", false)) return Status::Unavailable(d["counters_error"].get<std::string>());
    *failed_in_passes = true;
    return Status::Internal(d["counters_error"].get<std::string>());
  }
  if (!d.contains("counters") || d["counters"].empty()) return Status::Internal("CUPTI recorded no kernel launches");
  c.info = d.value("counters_info", nlohmann::json::object());
  if (d.contains("timeline_s")) c.info["runner_timeline_s"] = d["timeline_s"];
  c.info["runner_wall_s"] = result.wall_s;  // the runner's own clock, from its start to its report
  c.version = c.info.value("chip", "");
  c.raw = d["counters"].dump(1);

  std::vector<TraceKernel> launches = trace.kernels;
  std::stable_sort(launches.begin(), launches.end(),
                   [](const TraceKernel& x, const TraceKernel& y) { return x.start_ns < y.start_ns; });
  std::set<std::string> distinct;
  for (const auto& k : launches) distinct.insert(k.name);
  const size_t ranges = d["counters"].size();
  c.info["range_names"] = launches.size() == ranges ? "from the launch trace, by launch order"
                          : distinct.size() == 1    ? "the trace's only kernel"
                                                    : "unmatched (" + std::to_string(ranges) + " ranges, " +
                                                       std::to_string(launches.size()) + " traced launches)";
  int id = 0;
  for (const auto& r : d["counters"]) {
    KernelMetrics km;
    km.kernel = launches.size() == ranges ? launches[id].name
                : distinct.size() == 1    ? *distinct.begin()
                                          : "range " + r.value("range", std::to_string(id));
    km.id = id++;
    for (auto it = r["metrics"].begin(); it != r["metrics"].end(); ++it)
      if (it->is_number()) km.metrics[it.key()] = it->get<double>();
    c.kernels.push_back(std::move(km));
  }
  c.kernels = MergeInvocations(c.kernels);
  return c;
}

// Counters from ncu wrapped around kpilot-runner, filtered to the candidate's kernels.
Result<Collected> CollectWithNcu(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                 const std::string& ncu, const RunRequest& request,
                                 const std::vector<std::string>& metrics, const std::string& ncu_set,
                                 const std::string& kernel_regex, const RunnerLaunch& place) {
  Collected c;
  c.profiler = "ncu";
  NcuRequest nr;
  if (ncu_set.empty())
    nr.metrics = metrics;
  else
    nr.set = ncu_set;
  nr.kernel_regex = kernel_regex;
  nr.launch_count = kNcuMaxLaunches;
  RunnerLaunch launch = place;
  for (const auto& arg : NcuCommand(ncu, nr)) launch.wrapper.push_back(arg);
  launch.extra_env = {"KPILOT_NO_CUPTI=1"};  // ncu needs CUPTI for itself
  auto run = RunRunnerProcess(processes, runner_exe, request, launch);
  if (!run.ok()) return run.status().WithContext("running ncu");
  c.wall_s = run->wall_s;
  const ProcessResult& proc = run->process;
  auto rows = ParseNcuRawCsv(proc.out);
  if (!rows.ok())
    return Status::Internal("ncu produced no profile (" + proc.Describe() + "): " + Tail(proc.err + proc.out, 1500));
  c.raw = proc.out;
  c.kernels = MergeInvocations(*rows);
  ProcessSpec vspec;
  vspec.argv = {ncu, "--version"};
  auto version = processes.Run(vspec);
  c.version = version.ok() ? ParseNcuVersion(version->out) : "";
  c.info = {{"metrics", nr.metrics.size()}, {"set", ncu_set}};
  return c;
}

}  // namespace

ProfileContext SharedProfileContext(const Task& task, const Workload& workload, const std::string& arch, int sm_count) {
  ProfileContext ctx;
  // Unless the task says, the narrowest floating-point input: bf16 inputs with an f32 output
  // are bf16 work (tensor cores apply).
  DType cp = task.outputs.empty() ? DType::kF32 : task.outputs.front().dtype;
  for (const auto& in : task.inputs)
    if (IsFloat(in.dtype) && DTypeSize(in.dtype) < DTypeSize(cp)) cp = in.dtype;
  if (task.compute_precision) cp = *task.compute_precision;
  ctx.compute_precision = std::string(DTypeName(cp));
  auto vars = FormulaVariables(task.flops_formula);
  ctx.matmul_shaped = vars.ok() && vars->size() >= 3;
  ctx.min_bytes = workload.min_bytes;
  ctx.sm_count = sm_count;
  if (auto limits = SmLimitsFor(arch); limits.ok()) ctx.sm = *limits;
  return ctx;
}

double LaunchGapShare(double kernel_busy_ns, double span_ns, double call_ms) {
  if (span_ns <= 0) return 0;
  double share = 1.0 - kernel_busy_ns / span_ns;
  if (call_ms > 0) share = std::min(share, 1.0 - kernel_busy_ns / (call_ms * 1e6));
  return std::clamp(share, 0.0, 1.0);
}

RooflineInput StageOneInput(const Workload& workload, const Evaluation& e, ProfileContext* shared, LaunchTrace* trace) {
  RooflineInput in;
  in.flops = workload.flops;
  in.min_bytes = workload.min_bytes;
  in.dram_bytes_per_s = e.run.calibration.dram_bytes_per_s;
  in.peak_flops_per_s = e.run.calibration.fp32_flops_per_s;
  for (const auto& t : e.timings)
    if (t.workload == workload.name) in.time_ms = t.candidate.median;
  if (in.time_ms <= 0 && !e.timings.empty()) in.time_ms = e.timings.front().candidate.median;
  *trace = LaunchTrace{};
  const auto& d = e.run.details;
  if (d.is_object() && d.contains("launch_trace") && d["launch_trace"].is_array() && !d["launch_trace"].empty()) {
    // The last traced call on the workload (a counter job's eval checks that one only, several
    // seeds; a search node's own eval checks every workload): the first is cold — CUDA loads
    // each kernel's module at its first launch, which shows up as milliseconds between kernels
    // (histogram-global-atomics: 54% of its call, classed launch-bound).
    const nlohmann::json& calls = d["launch_trace"];
    const nlohmann::json* last = &calls.back();
    for (const auto& c : calls)
      if (c.is_object() && c.value("workload", "") == workload.name) last = &c;
    const nlohmann::json& traced = *last;
    auto t =
        traced.contains("trace") ? LaunchTraceFromJson(traced["trace"]) : Result<LaunchTrace>(Status::NotFound(""));
    if (t.ok()) {
      *trace = *t;
      TraceSummary s = SummarizeTrace(*t, t->kernels.empty() ? 0 : t->kernels.front().stream_id);
      // The kept trace stops at 512 kernels; the runner counts them all.
      shared->kernels_per_call = std::max(s.kernels, traced.value("kernels_total", 0));
      shared->memcpys_per_call = s.memcpys;
      shared->syncs_per_call = s.syncs;
      shared->launch_gap_share = LaunchGapShare(s.kernel_busy_ns, s.span_ns, in.time_ms);
      in.kernels_per_call = shared->kernels_per_call;
      in.launch_overhead_share = shared->launch_gap_share;
    }
  }
  return in;
}

bool CounterProfileCanTake(const Evaluation& e, const Workload& workload) {
  if (!e.verdict.passed() || !e.compile.ok || e.compile.object.empty()) return false;
  if (e.compile.sass.empty() && e.compile.sass_status == kSassLater) return false;
  bool timed = false;
  for (const auto& t : e.timings) timed |= t.workload == workload.name && t.candidate.median > 0;
  if (!timed) return false;
  const auto& d = e.run.details;
  if (!d.is_object() || !d.contains("launch_trace") || !d["launch_trace"].is_array()) return true;
  for (const auto& c : d["launch_trace"])
    if (c.is_object() && c.value("workload", "") == workload.name && c.contains("trace")) return true;
  return false;
}

std::map<std::string, MetricMap> LaunchMetricsFromTrace(const LaunchTrace& trace, const SmLimits* limits,
                                                        int sm_count) {
  std::map<std::string, MetricMap> out;
  for (const auto& k : trace.kernels) {
    if (out.count(k.name)) continue;
    MetricMap m;
    double block = static_cast<double>(k.block[0]) * k.block[1] * k.block[2];
    double grid = static_cast<double>(k.grid[0]) * k.grid[1] * k.grid[2];
    m["launch__block_size"] = block;
    m["launch__grid_size"] = grid;
    m["launch__registers_per_thread"] = k.registers_per_thread;
    if (limits && sm_count > 0 && block > 0) {
      Occupancy occ = ComputeOccupancy(*limits, static_cast<int>(block), k.registers_per_thread,
                                       static_cast<int64_t>(k.static_shared_bytes) + k.dynamic_shared_bytes);
      if (occ.blocks_per_sm > 0) m["launch__waves_per_multiprocessor"] = grid / (occ.blocks_per_sm * sm_count);
      m["sm__maximum_warps_per_active_cycle_pct"] = 100.0 * occ.fraction;  // ncu's theoretical occupancy
    }
    out[k.name] = m;
  }
  return out;
}

std::set<std::string> TracedKernelNames(const nlohmann::json& run_details, const std::vector<std::string>& workloads) {
  std::set<std::string> names, covered;
  if (!run_details.is_object() || !run_details.contains("launch_trace") || !run_details["launch_trace"].is_array())
    return names;
  for (const auto& traced : run_details["launch_trace"]) {
    if (!traced.is_object() || !traced.contains("trace")) continue;
    auto t = LaunchTraceFromJson(traced["trace"]);
    if (!t.ok()) continue;
    for (const auto& k : t->kernels) names.insert(k.name);
    // The runner names each traced call's workload; results stored by older runners have only
    // its label, "workload NAME, seed N".
    if (traced.contains("workload") && traced["workload"].is_string()) {
      covered.insert(traced["workload"].get<std::string>());
    } else if (const std::string call = traced.value("call", ""); call.rfind("workload ", 0) == 0) {
      covered.insert(call.substr(9, call.find(", seed ") - 9));
    }
  }
  for (const auto& w : workloads)
    if (!covered.count(w)) return {};
  return names;
}

std::vector<KernelStaticProfile> LaunchedOnly(const std::vector<KernelStaticProfile>& statics,
                                              const std::set<std::string>& launched) {
  std::vector<KernelStaticProfile> out;
  for (const auto& sp : statics)
    if (launched.count(sp.resources.mangled)) out.push_back(sp);
  return out.empty() ? statics : out;
}

std::vector<KernelReport> AnalyzeKernels(const std::vector<KernelStaticProfile>& statics, const ProfileContext& shared,
                                         const RooflineInput& base, const std::vector<KernelMetrics>& measured,
                                         const std::map<std::string, MetricMap>& launch,
                                         const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools,
                                         std::optional<Bottleneck> stage1, int block) {
  std::set<std::string> ran;
  for (const auto& [name, m] : launch) ran.insert(name);
  for (const auto& m : measured) ran.insert(m.kernel);
  std::vector<KernelReport> reports;
  for (const auto& sp : LaunchedOnly(statics, ran)) {
    ProfileContext ctx = shared;
    ctx.kernel = sp.resources.name;
    ctx.static_profile = sp;
    int b = block;
    RooflineInput in = base;
    // The launch shape from the trace, then the counters (ncu's own launch__ values win).
    if (auto it = launch.find(sp.resources.mangled); it != launch.end()) ctx.metrics = it->second;
    for (const auto& m : measured) {
      if (!SameKernel(m.kernel, sp.resources)) continue;
      for (const auto& [k, v] : m.metrics) ctx.metrics[k] = v;
      ApplyMeasured(m.metrics, &in);
    }
    if (auto it = ctx.metrics.find("launch__block_size"); it != ctx.metrics.end()) b = static_cast<int>(it->second);
    if (ctx.sm) ctx.occupancy = ComputeOccupancy(*ctx.sm, b, sp.resources.registers, sp.resources.shared_bytes);
    ctx.roofline = ClassifyRoofline(in);
    reports.push_back(AnalyzeKernel(ctx, tools, all_tools, stage1));
  }
  return reports;
}

Result<CounterProfile> ProfileWithCounters(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                           const Task& task, const Workload& workload, const EvalOptions& options,
                                           const Evaluation& e, const std::vector<std::unique_ptr<Tool>>& tools,
                                           const CounterProfileOptions& opt, const RunnerLaunch& place) {
  if (!e.verdict.passed()) return Status::InvalidInput("only a passing candidate is profiled");
  if (!e.compile.ok || e.compile.object.empty()) return Status::InvalidInput("the evaluation has no compiled object");
  if (opt.profiler != "auto" && opt.profiler != "cupti" && opt.profiler != "ncu")
    return Status::InvalidInput("profiler " + opt.profiler + ": expected auto, cupti or ncu");
  const bool need_ncu = opt.profiler == "ncu" || !opt.ncu_set.empty();
  if (need_ncu && opt.ncu_path.empty()) return Status::Unavailable("ncu not found on PATH");
  int sm_count = opt.sm_count;
  if (sm_count <= 0) sm_count = e.run.Report().gpu_sm_count;
  const std::string arch = options.compile.cuda_arch.empty() ? "sm_90a" : options.compile.cuda_arch;

  CounterProfile out;
  ProfileContext shared = SharedProfileContext(task, workload, arch, sm_count);
  LaunchTrace trace;
  RooflineInput base = StageOneInput(workload, e, &shared, &trace);
  out.time_ms = base.time_ms;
  RooflineVerdict stage1 = ClassifyRoofline(base);
  out.stage1 = stage1.result;
  std::vector<const Tool*> selected =
      SelectTools(tools, stage1.result, opt.all_tools || stage1.result == Bottleneck::kUnknown);
  std::vector<std::string> metrics = MetricsNeeded(selected);
  metrics.insert(metrics.end(), kBaseMetrics.begin(), kBaseMetrics.end());
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());

  EvalOptions ro = options;
  ro.workloads = {workload.name};
  ro.draw = false;  // the profiled workload alone
  auto request = BuildRunRequest(task, ro);
  if (!request.ok()) return request.status();
  request->profile_only = true;
  request->sandbox = false;
  request->time = false;
  request->seeds = {1};
  request->candidate_object = e.compile.object.string();
  request->reference_object = e.compile.object.string();  // not called in profile-only mode
  request->baseline_object = e.compile.object.string();
  // Room for every launch the eval traced (and a few more): CUPTI's counter-data set-up grows
  // with the ranges it must hold (2 s for 2048 on the H200).
  request->counters_max_ranges = shared.kernels_per_call + 8;
  request->counters_replay = opt.replay;
  std::string names;
  for (const auto& r : e.compile.resources) names += (names.empty() ? "" : "|") + BaseName(r.name);

  Result<Collected> got = Status::Unavailable("not collected");
  if (!need_ncu && opt.profiler != "ncu") {
    bool in_passes = false;
    got = CollectWithCupti(processes, runner_exe, *request, metrics, trace, place, &in_passes);
    if (!got.ok() && in_passes && request->counters_replay == "user") {
      // A call that launches a CUDA graph stops user replay at its first pass (CUPTI_ERROR_UNKNOWN
      // from cuptiRangeProfilerStop, H200, CUDA 13.0); kernel replay, where CUPTI repeats each
      // kernel itself, profiles it (docs/profile-tools.md).
      std::string user_error = got.status().message();
      request->counters_replay = "kernel";
      got = CollectWithCupti(processes, runner_exe, *request, metrics, trace, place, &in_passes);
      if (got.ok())
        out.fallback_note = "CUPTI's user replay failed (" + user_error + "); kernel replay used";
      else
        got = got.status().WithContext("user replay failed (" + user_error + "), then kernel replay");
    }
    if (!got.ok() && opt.profiler == "auto" && !opt.ncu_path.empty())
      out.fallback_note = "CUPTI counters unavailable (" + got.status().message() + "); ncu used";
  }
  if (need_ncu || (!got.ok() && opt.profiler == "auto" && !opt.ncu_path.empty()))
    got = CollectWithNcu(processes, runner_exe, opt.ncu_path, *request, metrics, opt.ncu_set, names, place);
  if (!got.ok()) return got.status();
  out.profiler = got->profiler;
  out.version = got->version;
  out.raw = std::move(got->raw);
  out.wall_s = got->wall_s;
  out.info = got->info;
  out.info["metrics_requested"] = metrics.size();
  out.info["tools_selected"] = selected.size();
  // Launch shape from the eval's trace (ncu reports it itself; CUPTI's counters do not).
  auto launch = LaunchMetricsFromTrace(trace, shared.sm ? &*shared.sm : nullptr, shared.sm_count);
  out.reports = AnalyzeKernels(StaticProfiles(e.compile), shared, base, got->kernels, launch, tools, opt.all_tools,
                               stage1.result, opt.block);
  return out;
}

std::vector<Finding> AllFindings(const std::vector<KernelReport>& reports) {
  std::vector<Finding> out;
  for (const auto& r : reports) out.insert(out.end(), r.findings.begin(), r.findings.end());
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

}  // namespace kpilot
