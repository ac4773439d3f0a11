// kpilot profile: the bottleneck class of a candidate's kernels and plain-language findings.
//
//   kpilot profile TASK CANDIDATE [--workload W] [--all-tools] [--raw] [--json]   (GPU + ncu)
//   kpilot profile TASK CANDIDATE --static [--block N]                            (no GPU)
//   kpilot profile --import-ncu FILE.csv                                          (no GPU)
//   kpilot profile --list-tools
#include <cstdlib>
#include <iostream>
#include <map>

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
#include "store/store.h"
#include "task/formula.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

struct ProfileArgs {
  std::string task_dir;
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
};

// Metrics every kernel profile collects, whatever the tools: the measured roofline and the launch.
const std::vector<std::string> kBaseMetrics = {
    "gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__block_size", "launch__grid_size",
    "launch__registers_per_thread", "launch__waves_per_multiprocessor"};

Result<std::vector<std::unique_ptr<Tool>>> LoadTools(const ProfileArgs& a) {
  std::vector<std::unique_ptr<Tool>> tools = BuiltinTools();
  std::vector<std::filesystem::path> dirs;
  if (!a.task_dir.empty()) dirs.push_back(a.task_dir);
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
  DType cp = task.compute_precision.value_or(task.outputs.empty() ? DType::kF32 : task.outputs.front().dtype);
  ctx->compute_precision = std::string(DTypeName(cp));
  auto vars = FormulaVariables(task.flops_formula);
  ctx->matmul_shaped = vars.ok() && vars->size() >= 3;
}

int Emit(const ProfileArgs& a, const std::vector<KernelReport>& reports, const nlohmann::json& header) {
  if (a.json) {
    nlohmann::json j = header;
    j["kernels"] = nlohmann::json::array();
    for (const auto& r : reports) j["kernels"].push_back(ToJson(r, a.raw));
    std::cout << j.dump(2) << "\n";
  } else {
    for (auto it = header.begin(); it != header.end(); ++it)
      if (it->is_string()) std::cout << fmt::format("{:<10} {}\n", it.key(), it->get<std::string>());
    for (const auto& r : reports) std::cout << "\n" << RenderReport(r, a.raw);
  }
  return kExitOk;
}

int ListTools(const ProfileArgs& a) {
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  for (const auto& t : *tools)
    std::cout << fmt::format("{:<32} {:<56} {}\n", t->id(), ClassList(*t), t->description());
  return kExitOk;
}

// Per kernel name, the mean of each metric over its invocations.
std::vector<KernelMetrics> MergeInvocations(const std::vector<KernelMetrics>& rows) {
  std::map<std::string, std::pair<KernelMetrics, std::map<std::string, std::vector<double>>>> by_name;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    if (!by_name.count(r.kernel)) order.push_back(r.kernel);
    auto& [first, values] = by_name[r.kernel];
    if (first.kernel.empty()) first = r;
    for (const auto& [k, v] : r.metrics) values[k].push_back(v);
  }
  std::vector<KernelMetrics> out;
  for (const auto& name : order) {
    auto [km, values] = by_name[name];
    for (auto& [k, v] : values) {
      double sum = 0;
      for (double x : v) sum += x;
      km.metrics[k] = sum / static_cast<double>(v.size());
    }
    out.push_back(km);
  }
  return out;
}

void ApplyMeasured(const MetricMap& m, RooflineInput* in) {
  if (auto it = m.find("sm__throughput.avg.pct_of_peak_sustained_elapsed"); it != m.end()) in->sm_throughput_pct = it->second;
  if (auto it = m.find("dram__throughput.avg.pct_of_peak_sustained_elapsed"); it != m.end())
    in->dram_throughput_pct = it->second;
}

int ImportNcu(const ProfileArgs& a) {
  auto text = ReadFile(a.import_ncu);
  if (!text.ok()) return Fail(text.status());
  auto rows = ParseNcuRawCsv(*text);
  if (!rows.ok()) return Fail(rows.status().WithContext(a.import_ncu));
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  std::vector<KernelReport> reports;
  for (const auto& k : MergeInvocations(*rows)) {
    ProfileContext ctx;
    ctx.kernel = k.kernel;
    ctx.metrics = k.metrics;
    RooflineInput in;
    ApplyMeasured(k.metrics, &in);
    if (auto it = k.metrics.find("gpu__time_duration.sum"); it != k.metrics.end()) in.time_ms = it->second / 1e6;
    ctx.roofline = ClassifyRoofline(in);
    reports.push_back(AnalyzeKernel(ctx, *tools, a.all_tools));
  }
  return Emit(a, reports, {{"source", a.import_ncu}, {"mode", "imported ncu CSV (no task context)"}});
}

int ProfileCandidate(const ProfileArgs& a) {
  auto task = LoadTask(a.task_dir);
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
  if (!a.static_only && (!gpu || ncu.empty()))
    return Fail(Status::Unavailable(std::string(!gpu ? "no usable GPU (" + why + ")" : "ncu not found on PATH") +
                                    ": a kernel profile needs both; add --static for the profile that needs neither"));

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
  // Everything that changes the report is in the key: the binary, workload, mode, tool choice,
  // static block size and the user tool folders.
  std::string tool_dirs;
  for (const auto& d : a.tools_dirs) tool_dirs += d + ";";
  std::string archive_key = fmt::format("profile/v1/{}/{}/{}/{}/block{}/{}", compiled->key, w->name,
                                        a.static_only ? "static" : "kernel", a.all_tools ? "all" : "selected", a.block,
                                        Sha256Hex(tool_dirs).substr(0, 12));
  if (store_ptr && !a.fresh) {
    auto cached = store_ptr->GetValue(archive_key);
    if (cached.ok() && cached->has_value()) {
      if (a.json) std::cout << **cached << "\n";
      else std::cout << "(served from the store; --fresh profiles again)\n" << nlohmann::json::parse(**cached).dump(2) << "\n";
      return kExitOk;
    }
  }
  auto tools = LoadTools(a);
  if (!tools.ok()) return Fail(tools.status());
  auto limits = SmLimitsFor(copt.cuda_arch);
  auto statics = StaticProfiles(*compiled);
  Calibration cal = gpu ? LoadCalibration(store_ptr, *gpu) : Calibration{};

  RooflineInput base;
  base.flops = w->flops;
  base.min_bytes = w->min_bytes;
  base.dram_bytes_per_s = cal.dram_bytes_per_s;
  base.peak_flops_per_s = cal.fp32_flops_per_s;
  ProfileContext shared;
  FillTaskFacts(*task, &shared);
  if (gpu) shared.sm_count = gpu->sm_count;
  if (limits.ok()) shared.sm = *limits;

  std::vector<KernelMetrics> measured;
  nlohmann::json header = {{"task", task->name}, {"candidate", a.candidate}, {"workload", w->name},
                           {"arch", copt.cuda_arch}};
  if (!a.static_only) {
    // Time it first (and take its launch trace), then one ncu pass over the candidate alone.
    EvalOptions opt;
    opt.workloads = {w->name};
    opt.compile = copt;
    opt.calibration = cal;
    Evaluator evaluator(*toolchain, SystemProcessRunner(), RunnerPath());
    std::cerr << "kpilot: timing " << a.candidate << " on " << w->name << " …\n";
    auto e = evaluator.Evaluate(*task, a.candidate, opt);
    if (!e.ok()) return Fail(e.status());
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
      auto trace = LaunchTraceFromJson(e->run.details["launch_trace"][0]["trace"]);
      if (trace.ok()) {
        TraceSummary s = SummarizeTrace(*trace, trace->kernels.empty() ? 0 : trace->kernels.front().stream_id);
        shared.kernels_per_call = s.kernels;
        shared.memcpys_per_call = s.memcpys;
        shared.syncs_per_call = s.syncs;
        shared.launch_gap_share = s.span_ns > 0 ? 1.0 - s.kernel_busy_ns / s.span_ns : 0;
        base.kernels_per_call = s.kernels;
        base.launch_overhead_share = shared.launch_gap_share;
      }
    }
    RooflineVerdict stage1 = ClassifyRoofline(base);
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
    auto workdir = TempDir::Create("kpilot-profile-");
    if (!workdir.ok()) return Fail(workdir.status());
    Status ws = WriteFileAtomic(workdir->path() / "request.json", ToJson(*request).dump());
    if (!ws.ok()) return Fail(ws);
    std::string names;
    for (const auto& r : compiled->resources) names += (names.empty() ? "" : "|") + BaseName(r.name);
    NcuRequest nr;
    nr.metrics = metrics;
    nr.kernel_regex = names;
    nr.target = {RunnerPath().string(), "--request", (workdir->path() / "request.json").string()};
    ProcessSpec spec;
    spec.argv = NcuCommand(ncu, nr);
    spec.cwd = workdir->path();
    spec.env = ScrubbedEnvironment();
    spec.env->push_back("KPILOT_NO_CUPTI=1");  // ncu needs CUPTI for itself
    spec.timeout_s = 600;
    std::cerr << "kpilot: ncu, " << metrics.size() << " metrics for " << selected.size() << " tools …\n";
    auto run = SystemProcessRunner().Run(spec);
    if (!run.ok()) return Fail(run.status().WithContext("running ncu"));
    auto rows = ParseNcuRawCsv(run->out);
    if (!rows.ok())
      return Fail(Status::Internal("ncu produced no profile (" + run->Describe() + "): " + Tail(run->err + run->out, 1500)));
    measured = MergeInvocations(*rows);
    ProcessSpec vspec;
    vspec.argv = {ncu, "--version"};
    auto version = SystemProcessRunner().Run(vspec);
    header["ncu"] = version.ok() ? ParseNcuVersion(version->out) : "";
    header["time_ms"] = fmt::format("{:.4f}", base.time_ms);
  }

  std::vector<KernelReport> reports;
  for (const auto& sp : statics) {
    ProfileContext ctx = shared;
    ctx.kernel = sp.resources.name;
    ctx.static_profile = sp;
    int block = a.block;
    RooflineInput in = base;
    for (const auto& m : measured) {
      if (m.kernel.find(BaseName(sp.resources.name)) == std::string::npos) continue;
      ctx.metrics = m.metrics;
      ApplyMeasured(m.metrics, &in);
      if (auto it = m.metrics.find("launch__block_size"); it != m.metrics.end()) block = static_cast<int>(it->second);
    }
    if (limits.ok()) ctx.occupancy = ComputeOccupancy(*limits, block, sp.resources.registers, sp.resources.shared_bytes);
    ctx.roofline = ClassifyRoofline(in);
    reports.push_back(AnalyzeKernel(ctx, *tools, a.all_tools));
  }
  nlohmann::json full = header;
  full["kernels"] = nlohmann::json::array();
  for (const auto& r : reports) full["kernels"].push_back(ToJson(r, true));
  if (store_ptr) {
    Status s = store_ptr->PutValue(archive_key, full.dump());
    if (!s.ok()) std::cerr << "kpilot: warning: could not archive the profile: " << s.message() << "\n";
  }
  return Emit(a, reports, header);
}

int RunProfile(const ProfileArgs& a) {
  if (a.list_tools) return ListTools(a);
  if (!a.import_ncu.empty()) return ImportNcu(a);
  if (a.task_dir.empty() || a.candidate.empty())
    return Fail(Status::InvalidInput("kpilot profile needs TASK_DIR CANDIDATE (or --import-ncu FILE, or --list-tools)"));
  return ProfileCandidate(a);
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Classify a candidate's bottleneck and say what to change (ncu, SASS, trace)");
  cmd->add_option("task_dir", a->task_dir, "Task folder");
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
  cmd->callback([a, exit_code]() { *exit_code = RunProfile(*a); });
}

}  // namespace kpilot::cli
