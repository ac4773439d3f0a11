// kpilot profile: the bottleneck class of a candidate's kernels and plain-language findings.
//
//   kpilot profile TASK CANDIDATE [--workload W] [--all-tools] [--raw] [--json]   (GPU + ncu)
//   kpilot profile TASK CANDIDATE --static [--block N]                            (no GPU)
//   kpilot profile --import-ncu FILE.csv                                          (no GPU)
//   kpilot profile --list-tools
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "core/stats.h"
#include "device/device.h"
#include "harness/harness.h"
#include "profile/ncu.h"
#include "profile/profiler.h"
#include "profile/rule_tool.h"
#include "profile/static_profile.h"
#include "runner/cupti_trace.h"
#include "runner/protocol.h"
#include "store/store.h"
#include "task/formula.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

struct ProfileArgs {
  std::string task_dir;
  TaskSourceArgs source;  // --python, --workloads FILE.jsonl
  std::string candidate;
  std::string workload;
  std::string import_ncu;
  std::vector<std::string> tools_dirs;
  std::string store_dir = ".kpilot";
  std::string arch;
  int block = 256;
  bool static_only = false;
  bool json = false;
  bool all_tools = false;
  bool raw = false;
  bool list_tools = false;
  bool no_store = false;
  bool fresh = false;
  std::string profiler = "auto";  // auto | cupti | ncu
  std::string ncu_set;            // e.g. "full": ncu collects that set instead of the tools' metrics
  std::string save_raw;           // write the profiler's raw output here
  std::string replay = "user";    // how CUPTI repeats the call for multi-pass metrics: user | kernel
};

// What one counter collection produced.
struct Collected {
  std::vector<KernelMetrics> kernels;
  std::string profiler;           // "cupti" | "ncu"
  std::string version;            // ncu version or CUPTI chip
  std::string raw;                // ncu's CSV, or the counters as JSON
  double wall_s = 0;              // the profiler's own process
  nlohmann::json info = nlohmann::json::object();
};

// Kernel launches ncu profiles at most per run: a call of a thousand tiny launches would otherwise
// take ncu minutes (each launch is replayed once per pass), and 64 launches of one kernel say what
// a thousand do.
constexpr int kNcuMaxLaunches = 64;

// Metrics every kernel profile collects, whatever the tools: the measured roofline and the launch.
const std::vector<std::string> kBaseMetrics = {
    "gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__block_size", "launch__grid_size",
    "launch__registers_per_thread", "launch__waves_per_multiprocessor"};

Result<std::vector<std::unique_ptr<Tool>>> LoadTools(const ProfileArgs& a) {
  std::vector<std::unique_ptr<Tool>> tools = BuiltinTools();
  std::vector<std::filesystem::path> dirs;
  // Rule files beside the task: its folder (for a problem or definition file, the file's folder).
  if (!a.task_dir.empty())
    dirs.push_back(std::filesystem::is_directory(a.task_dir) ? std::filesystem::path(a.task_dir)
                                                               : std::filesystem::path(a.task_dir).parent_path());
  if (const char* home = std::getenv("HOME"); home && *home) dirs.push_back(std::filesystem::path(home) / ".config/kpilot/tools");
  for (const auto& d : a.tools_dirs) dirs.push_back(d);
  auto user = LoadRuleToolsFromDirs(dirs);
  if (!user.ok()) return user.status();
  for (auto& t : *user) tools.push_back(std::move(t));
  return tools;
}

std::string ClassList(const Tool& t) {
  std::string out;
  for (Bottleneck b : t.classes()) out += (out.empty() ? "" : ",") + std::string(BottleneckName(b));
  return out;
}

// "void (anonymous namespace)::SoftmaxRows<256>(float const*, …)" → "SoftmaxRows".
std::string BaseName(std::string s) {
  for (size_t p; (p = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(p, 23);
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  std::string head;
  int depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == '(' && depth == 0) break;
    else if (depth == 0) head += c;
  }
  size_t colon = head.rfind("::");
  return colon == std::string::npos ? head : head.substr(colon + 2);
}

void FillTaskFacts(const Task& task, ProfileContext* ctx) {
  // Unless the task says, the narrowest floating-point input: bf16 inputs with an f32 output
  // are bf16 work (tensor cores apply).
  DType cp = task.outputs.empty() ? DType::kF32 : task.outputs.front().dtype;
  for (const auto& in : task.inputs)
    if (IsFloat(in.dtype) && DTypeSize(in.dtype) < DTypeSize(cp)) cp = in.dtype;
  if (task.compute_precision) cp = *task.compute_precision;
  ctx->compute_precision = std::string(DTypeName(cp));
  auto vars = FormulaVariables(task.flops_formula);
  ctx->matmul_shaped = vars.ok() && vars->size() >= 3;
}

// The report both ways: JSON (header fields, `extra` fields, kernels) and the text for people.
struct Rendered {
  nlohmann::json json;
  std::string text;
};

Rendered Render(const ProfileArgs& a, const std::vector<KernelReport>& reports, const nlohmann::json& header,
                const nlohmann::json& extra = nlohmann::json::object()) {
  Rendered r;
  r.json = header;
  for (auto it = extra.begin(); it != extra.end(); ++it) r.json[it.key()] = it.value();
  r.json["kernels"] = nlohmann::json::array();
  for (const auto& k : reports) r.json["kernels"].push_back(ToJson(k, a.raw));
  for (auto it = header.begin(); it != header.end(); ++it)
    if (it->is_string()) r.text += fmt::format("{:<10} {}\n", it.key(), it->get<std::string>());
  for (const auto& k : reports) r.text += "\n" + RenderReport(k, a.raw);
  return r;
}

int Emit(const ProfileArgs& a, const Rendered& r) {
  if (a.json) std::cout << r.json.dump(2) << "\n";
  else std::cout << r.text;
  return kExitOk;
}

int ListTools(const ProfileArgs& a) {
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  for (const auto& t : *tools)
    std::cout << fmt::format("{:<32} {:<56} {}\n", t->id(), ClassList(*t), t->description());
  return kExitOk;
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

// ncu's launch__ metrics and theoretical occupancy, computed from the eval's launch trace for the
// first launch of each kernel (by mangled name).
std::map<std::string, MetricMap> LaunchMetricsFromTrace(const LaunchTrace& trace, const SmLimits* limits, int sm_count) {
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

// Counters in-process: kpilot-runner reads them through CUPTI's range profiler. CUPTI numbers its
// auto ranges rather than naming them; range i is the call's i-th kernel launch, named from the
// eval's launch trace of the same call (the same code, so the same launches in the same order).
Result<Collected> CollectWithCupti(RunRequest request, const std::vector<std::string>& metrics, const LaunchTrace& trace) {
  Collected c;
  c.profiler = "cupti";
  for (const auto& m : metrics)
    if (!LaunchDerived(m)) request.counters.push_back(m);
  auto run = RunRunnerProcess(SystemProcessRunner(), RunnerPath(), request);
  if (!run.ok()) return run.status().WithContext("running kpilot-runner for counters");
  c.wall_s = run->wall_s;
  const RunResult& result = run->result;
  if (result.status != "passed") return Status::Internal("the profile run ended " + result.status + ": " + result.message);
  const auto& d = result.details;
  if (d.contains("counters_error")) return Status::Unavailable(d["counters_error"].get<std::string>());
  if (!d.contains("counters") || d["counters"].empty()) return Status::Unavailable("CUPTI recorded no kernel launches");
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
Result<Collected> CollectWithNcu(const std::string& ncu, const RunRequest& request, const std::vector<std::string>& metrics,
                                 const std::string& ncu_set, const std::string& kernel_regex) {
  Collected c;
  c.profiler = "ncu";
  NcuRequest nr;
  if (ncu_set.empty()) nr.metrics = metrics;
  else nr.set = ncu_set;
  nr.kernel_regex = kernel_regex;
  nr.launch_count = kNcuMaxLaunches;
  std::vector<std::string> wrapper = NcuCommand(ncu, nr);
  RunnerLaunch launch;
  launch.wrapper = wrapper;
  launch.extra_env = {"KPILOT_NO_CUPTI=1"};  // ncu needs CUPTI for itself
  auto run = RunRunnerProcess(SystemProcessRunner(), RunnerPath(), request, launch);
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
  auto version = SystemProcessRunner().Run(vspec);
  c.version = version.ok() ? ParseNcuVersion(version->out) : "";
  c.info = {{"metrics", nr.metrics.size()}, {"set", ncu_set}};
  return c;
}

int ImportNcu(const ProfileArgs& a) {
  auto text = ReadFile(a.import_ncu);
  if (!text.ok()) return Fail(text.status());
  auto rows = ParseNcuRawCsv(*text);
  if (!rows.ok()) return Fail(rows.status().WithContext(a.import_ncu));
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  std::vector<KernelReport> reports = AnalyzeImported(*rows, *tools, a.all_tools);
  return Emit(a, Render(a, reports, {{"source", a.import_ncu}, {"mode", "imported ncu CSV (no task context)"}}));
}

int ProfileCandidate(const ProfileArgs& a) {
  // A PyTorch-defined task is profiled like a native one: the runner calls the .cu alone on inputs
  // drawn from the task's shapes (normal(0, 1); no reference is run in profile mode).
  auto task = LoadTaskArg(a.task_dir, a.source);
  if (!task.ok()) return Fail(task.status());
  if (task->backend != Backend::kCuda)
    return Fail(Status::InvalidInput("kpilot profile works on cuda tasks; " + task->name + " is a host task"));
  if (!std::filesystem::exists(a.candidate)) return Fail(Status::NotFound(a.candidate + ": no such candidate file"));
  const Workload* w = a.workload.empty() ? &task->workloads.back() : task->FindWorkload(a.workload);
  if (!w) return Fail(Status::InvalidInput("--workload " + a.workload + ": no such workload in " + task->name));

  std::string why;
  auto gpus = SystemGpuProbe().List(&why);
  std::optional<GpuInfo> gpu;
  if (!gpus.empty()) gpu = gpus.front();
  std::string ncu = FindOnPath("ncu");
  if (a.profiler != "auto" && a.profiler != "cupti" && a.profiler != "ncu")
    return Fail(Status::InvalidInput("--profiler " + a.profiler + ": expected auto, cupti or ncu"));
  if (a.replay != "user" && a.replay != "kernel")
    return Fail(Status::InvalidInput("--replay " + a.replay + ": expected user or kernel"));
  const bool need_ncu = a.profiler == "ncu" || !a.ncu_set.empty();
  if (!a.static_only && (!gpu || (need_ncu && ncu.empty())))
    return Fail(Status::Unavailable(std::string(!gpu ? "no usable GPU (" + why + ")" : "ncu not found on PATH") +
                                    ": a kernel profile needs " + (need_ncu ? "a GPU and ncu" : "a GPU") +
                                    "; add --static for the profile that needs neither"));
  const auto started = std::chrono::steady_clock::now();
  // Where the profile's wall time goes, step by step (JSON "steps_s").
  nlohmann::json steps = nlohmann::json::object();
  auto step_mark = started;
  auto step = [&](const char* name) {
    auto now = std::chrono::steady_clock::now();
    steps[name] = std::chrono::duration<double>(now - step_mark).count();
    step_mark = now;
  };

  auto workspace = OpenWorkspace(a.store_dir, a.no_store);
  if (!workspace.ok()) return Fail(workspace.status());
  Store* store_ptr = workspace->store.get();
  auto toolchain = MakeSystemToolchain(workspace->cache_dir, IncludeDir());
  CompileOptions copt;
  copt.cuda_arch = !a.arch.empty() ? a.arch : gpu ? gpu->Arch() : "sm_90a";
  auto compiled = toolchain->Compile(a.candidate, {}, copt);
  if (!compiled.ok()) return Fail(compiled.status());
  if (!compiled->ok) {
    std::cerr << "kpilot: the candidate does not compile: " << compiled->first_error << "\n";
    return kExitNotPassed;
  }
  step("compile");
  // Everything that changes the report is in the key: the binary, workload, mode, tool choice,
  // static block size and the user tool folders.
  std::string tool_dirs;
  for (const auto& d : a.tools_dirs) tool_dirs += d + ";";
  std::string archive_key =
      fmt::format("profile/v2/{}/{}/{}/{}/block{}/{}", compiled->key, w->name,
                  a.static_only ? "static" : "kernel/" + a.profiler + "/" + a.ncu_set, a.all_tools ? "all" : "selected",
                  a.block, Sha256Hex(tool_dirs).substr(0, 12));
  if (store_ptr && !a.fresh && a.save_raw.empty()) {
    auto cached = store_ptr->GetValue(archive_key);
    if (cached.ok() && cached->has_value()) {
      auto stored = nlohmann::json::parse(**cached, nullptr, false);
      if (!stored.is_discarded() && stored.contains("json") && stored.contains("text")) {
        if (a.json) std::cout << stored["json"].dump(2) << "\n";
        else std::cout << "(served from the store; --fresh profiles again)\n" << stored["text"].get<std::string>();
        return kExitOk;
      }
    }
  }
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  auto limits = SmLimitsFor(copt.cuda_arch);
  auto statics = StaticProfiles(*compiled);
  Calibration cal = gpu ? LoadCalibration(store_ptr, *gpu) : Calibration{};
  step("static_profile");

  RooflineInput base;
  base.flops = w->flops;
  base.min_bytes = w->min_bytes;
  base.dram_bytes_per_s = cal.dram_bytes_per_s;
  base.peak_flops_per_s = cal.fp32_flops_per_s;
  ProfileContext shared;
  FillTaskFacts(*task, &shared);
  shared.min_bytes = w->min_bytes;
  if (gpu) shared.sm_count = gpu->sm_count;
  if (limits.ok()) shared.sm = *limits;

  std::vector<KernelMetrics> measured;
  LaunchTrace eval_trace;
  std::optional<Bottleneck> stage1_class;  // the class the counters were chosen for
  std::map<std::string, MetricMap> launch_metrics;  // by mangled kernel name
  nlohmann::json json_extra = nlohmann::json::object();
  nlohmann::json header = {{"task", task->name}, {"candidate", a.candidate}, {"workload", w->name},
                           {"arch", copt.cuda_arch}};
  if (!a.static_only) {
    // Time it first (and take its launch trace), then one counter pass over the candidate alone:
    // in-process through CUPTI by default, or under ncu.
    EvalOptions opt;
    opt.workloads = {w->name};
    opt.compile = copt;
    opt.calibration = cal;
    auto python = MakePythonTaskRunner(*task, a.source.python);  // PyTorch tasks: timed by the torch worker
    if (!python.ok()) return Fail(python.status());
    Evaluator evaluator(*toolchain, SystemProcessRunner(), RunnerPath(), python->get());
    std::cerr << "kpilot: timing " << a.candidate << " on " << w->name << " …\n";
    auto e = evaluator.Evaluate(*task, a.candidate, opt);
    if (!e.ok()) return Fail(e.status());
    step("eval");
    if (e->run.details.contains("timeline_s")) json_extra["eval_timeline_s"] = e->run.details["timeline_s"];
    if (!e->verdict.passed()) {
      std::cerr << "kpilot: the candidate did not pass (" << VerdictName(e->verdict.kind) << ": " << e->verdict.summary
                << "); profile a passing candidate\n";
      return kExitNotPassed;
    }
    if (e->run.calibration.valid()) {
      base.dram_bytes_per_s = e->run.calibration.dram_bytes_per_s;
      base.peak_flops_per_s = e->run.calibration.fp32_flops_per_s;
    }
    if (!e->timings.empty()) base.time_ms = e->timings.front().candidate.median;
    if (e->run.details.contains("launch_trace") && !e->run.details["launch_trace"].empty()) {
      // The last traced call (the eval checks one workload, several seeds): the first is cold —
      // CUDA loads each kernel's module at its first launch, which shows up as milliseconds
      // between kernels (histogram-global-atomics: 54% of its call, classed launch-bound).
      const nlohmann::json& traced = e->run.details["launch_trace"].back();
      auto trace = LaunchTraceFromJson(traced["trace"]);
      if (trace.ok()) {
        eval_trace = *trace;
        TraceSummary s = SummarizeTrace(*trace, trace->kernels.empty() ? 0 : trace->kernels.front().stream_id);
        // The kept trace stops at 512 kernels; the runner counts them all.
        shared.kernels_per_call = std::max(s.kernels, traced.value("kernels_total", 0));
        shared.memcpys_per_call = s.memcpys;
        shared.syncs_per_call = s.syncs;
        shared.launch_gap_share = s.span_ns > 0 ? 1.0 - s.kernel_busy_ns / s.span_ns : 0;
        base.kernels_per_call = shared.kernels_per_call;
        base.launch_overhead_share = shared.launch_gap_share;
      }
    }
    RooflineVerdict stage1 = ClassifyRoofline(base);
    stage1_class = stage1.result;
    std::vector<const Tool*> selected = SelectTools(*tools, stage1.result, a.all_tools || stage1.result == Bottleneck::kUnknown);
    std::vector<std::string> metrics = MetricsNeeded(selected);
    metrics.insert(metrics.end(), kBaseMetrics.begin(), kBaseMetrics.end());
    std::sort(metrics.begin(), metrics.end());
    metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());

    auto request = BuildRunRequest(*task, opt);
    if (!request.ok()) return Fail(request.status());
    request->profile_only = true;
    request->sandbox = false;
    request->time = false;
    request->seeds = {1};
    request->candidate_object = compiled->object.string();
    request->reference_object = compiled->object.string();  // not called in profile-only mode
    request->baseline_object = compiled->object.string();
    // Room for every launch the eval traced (and a few more): CUPTI's counter-data set-up grows
    // with the ranges it must hold (2 s for 2048 on the H200).
    request->counters_max_ranges = shared.kernels_per_call + 8;
    request->counters_replay = a.replay;
    std::string names;
    for (const auto& r : compiled->resources) names += (names.empty() ? "" : "|") + BaseName(r.name);

    Result<Collected> got = Status::Unavailable("not collected");
    std::string fallback_note;
    if (a.profiler != "ncu" && a.ncu_set.empty()) {
      std::cerr << "kpilot: CUPTI counters, " << metrics.size() << " metrics for " << selected.size() << " tools …\n";
      got = CollectWithCupti(*request, metrics, eval_trace);
      if (!got.ok() && a.profiler == "auto" && !ncu.empty()) {
        fallback_note = "CUPTI counters unavailable (" + got.status().message() + "); ncu used";
        std::cerr << "kpilot: " << fallback_note << "\n";
      }
    }
    if (a.profiler == "ncu" || !a.ncu_set.empty() || (!got.ok() && a.profiler == "auto" && !ncu.empty())) {
      std::cerr << "kpilot: ncu, " << (a.ncu_set.empty() ? std::to_string(metrics.size()) + " metrics for " +
                                                               std::to_string(selected.size()) + " tools"
                                                         : "--set " + a.ncu_set)
                << " …\n";
      got = CollectWithNcu(ncu, *request, metrics, a.ncu_set, names);
    }
    if (!got.ok()) return Fail(got.status());
    step("counters");
    measured = std::move(got->kernels);
    if (!a.save_raw.empty()) {
      Status ws = WriteFileAtomic(a.save_raw, got->raw);
      if (!ws.ok()) return Fail(ws.WithContext("--save-raw"));
    }
    header["profiler"] = got->profiler;
    if (got->profiler == "ncu") header["ncu"] = got->version;
    else header["cupti_chip"] = got->version;
    if (!fallback_note.empty()) header["profiler_note"] = fallback_note;
    json_extra["profiler_wall_s"] = got->wall_s;
    json_extra["profiler_info"] = got->info;
    // Launch shape from the eval's trace (ncu reports it itself; CUPTI's counters do not).
    launch_metrics = LaunchMetricsFromTrace(eval_trace, limits.ok() ? &*limits : nullptr, shared.sm_count);
    header["time_ms"] = fmt::format("{:.4f}", base.time_ms);
  }

  std::vector<KernelReport> reports;
  for (const auto& sp : statics) {
    ProfileContext ctx = shared;
    ctx.kernel = sp.resources.name;
    ctx.static_profile = sp;
    int block = a.block;
    RooflineInput in = base;
    // The launch shape from the trace, then the counters (ncu's own launch__ values win).
    if (auto it = launch_metrics.find(sp.resources.mangled); it != launch_metrics.end()) ctx.metrics = it->second;
    for (const auto& m : measured) {
      if (!SameKernel(m.kernel, sp.resources)) continue;
      for (const auto& [k, v] : m.metrics) ctx.metrics[k] = v;
      ApplyMeasured(m.metrics, &in);
    }
    if (auto it = ctx.metrics.find("launch__block_size"); it != ctx.metrics.end()) block = static_cast<int>(it->second);
    if (limits.ok()) ctx.occupancy = ComputeOccupancy(*limits, block, sp.resources.registers, sp.resources.shared_bytes);
    ctx.roofline = ClassifyRoofline(in);
    reports.push_back(AnalyzeKernel(ctx, *tools, a.all_tools, stage1_class));
  }
  step("analysis");
  json_extra["steps_s"] = steps;
  if (!a.static_only)
    json_extra["profile_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Rendered out = Render(a, reports, header, json_extra);
  if (store_ptr) {
    ProfileArgs for_store = a;
    for_store.raw = true;  // the archive keeps the counters
    nlohmann::json archived = {{"json", Render(for_store, reports, header, json_extra).json}, {"text", out.text}};
    Status s = store_ptr->PutValue(archive_key, archived.dump());
    if (!s.ok()) std::cerr << "kpilot: warning: could not archive the profile: " << s.message() << "\n";
  }
  return Emit(a, out);
}

int RunProfile(const ProfileArgs& a) {
  if (a.list_tools) return ListTools(a);
  if (!a.import_ncu.empty()) return ImportNcu(a);
  if (a.task_dir.empty() || a.candidate.empty())
    return Fail(Status::InvalidInput("kpilot profile needs TASK CANDIDATE (or --import-ncu FILE, or --list-tools)"));
  return ProfileCandidate(a);
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Classify a candidate's bottleneck and say what to change (ncu, SASS, trace)");
  cmd->add_option("task", a->task_dir, "Task folder, KernelBench problem .py or flashinfer-bench definition .json");
  AddTaskSourceOptions(cmd, &a->source);
  cmd->add_option("candidate", a->candidate, "Candidate source (.cu)");
  cmd->add_option("--workload", a->workload, "Workload to profile (default: the last, usually the largest)");
  cmd->add_flag("--static", a->static_only, "Only the static profile (ptxas, SASS, occupancy): no GPU needed");
  cmd->add_option("--block", a->block, "Block size for the static occupancy (default 256; a kernel profile reads it)");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_flag("--all-tools", a->all_tools, "Run every tool, not only those for the kernel's class");
  cmd->add_flag("--raw", a->raw, "Also print the raw counters");
  cmd->add_option("--import-ncu", a->import_ncu, "Analyse an ncu --csv --page raw file taken elsewhere");
  cmd->add_flag("--list-tools", a->list_tools, "List every tool with its classes");
  cmd->add_option("--tools", a->tools_dirs, "Folder of rule files (*.toml) with more tools (repeatable)");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_flag("--no-store", a->no_store, "Neither read nor archive profiles");
  cmd->add_flag("--fresh", a->fresh, "Profile again even if the store has this binary's profile");
  cmd->add_option("--arch", a->arch, "CUDA target (default: the visible GPU's, else sm_90a)");
  cmd->add_option("--profiler", a->profiler,
                  "Where counters come from: cupti (in-process, no ncu start-up), ncu, or auto (cupti, else ncu)")
      ->capture_default_str();
  cmd->add_option("--replay", a->replay,
                  "How CUPTI repeats the call for metrics that need several passes: user (kpilot calls it again) "
                  "or kernel (CUPTI replays each kernel, saving and restoring device memory)")
      ->capture_default_str();
  cmd->add_option("--ncu-set", a->ncu_set, "Have ncu collect this section set (e.g. full) instead of the tools' metrics");
  cmd->add_option("--save-raw", a->save_raw, "Write the profiler's raw output here (ncu's CSV or the CUPTI counters as JSON)");
  cmd->callback([a, exit_code]() { *exit_code = RunProfile(*a); });
}

}  // namespace kpilot::cli
