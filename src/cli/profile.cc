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
#include "profile/collect.h"
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
  std::vector<std::string> defines;  // -D NAME=VALUE
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

Result<std::vector<std::unique_ptr<Tool>>> ProfileTools(const ProfileArgs& a) {
  return LoadTools(RuleToolDirs(a.task_dir, UserToolDir(), a.tools_dirs));
}

std::string ClassList(const Tool& t) {
  std::string out;
  for (Bottleneck b : t.classes()) out += (out.empty() ? "" : ",") + std::string(BottleneckName(b));
  return out;
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
  if (a.json)
    std::cout << r.json.dump(2) << "\n";
  else
    std::cout << r.text;
  return kExitOk;
}

int ListTools(const ProfileArgs& a) {
  auto tools = ProfileTools(a);
  if (!tools.ok()) return Fail(tools.status());
  for (const auto& t : *tools) std::cout << fmt::format("{:<32} {:<56} {}\n", t->id(), ClassList(*t), t->description());
  return kExitOk;
}

int ImportNcu(const ProfileArgs& a) {
  auto text = ReadFile(a.import_ncu);
  if (!text.ok()) return Fail(text.status());
  auto rows = ParseNcuRawCsv(*text);
  if (!rows.ok()) return Fail(rows.status().WithContext(a.import_ncu));
  auto tools = ProfileTools(a);
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
  // -D is checked against the candidate's own kpilot-params block when the task declares none.
  if (Status s = AdoptCandidateParams(&task.value(), a.candidate); !s.ok()) return Fail(s);
  auto params = ParseDefines(*task, a.defines);
  if (!params.ok()) return Fail(params.status());
  const Workload* w = a.workload.empty() ? &task->workloads.back() : task->FindWorkload(a.workload);
  if (!w) return Fail(Status::InvalidInput("--workload " + a.workload + ": no such workload in " + task->name));

  auto found = GpuAtIndex(SystemGpuProbe(), 0);
  std::optional<GpuInfo> gpu;
  if (found.ok()) gpu = *found;
  std::string ncu = FindOnPath("ncu");
  if (a.profiler != "auto" && a.profiler != "cupti" && a.profiler != "ncu")
    return Fail(Status::InvalidInput("--profiler " + a.profiler + ": expected auto, cupti or ncu"));
  if (a.replay != "user" && a.replay != "kernel")
    return Fail(Status::InvalidInput("--replay " + a.replay + ": expected user or kernel"));
  const bool need_ncu = a.profiler == "ncu" || !a.ncu_set.empty();
  if (!a.static_only && (!gpu || (need_ncu && ncu.empty())))
    return Fail(Status::Unavailable((!gpu ? found.status().message() : std::string("ncu not found on PATH")) +
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
  auto compiled = toolchain->Compile(a.candidate, *params, copt);
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
  std::string archive_key = fmt::format("profile/v2/{}/{}/{}/{}/block{}/{}", compiled->key, w->name,
                                        a.static_only ? "static" : "kernel/" + a.profiler + "/" + a.ncu_set,
                                        a.all_tools ? "all" : "selected", a.block, Sha256Hex(tool_dirs).substr(0, 12));
  if (store_ptr && !a.fresh && a.save_raw.empty()) {
    auto cached = store_ptr->GetValue(archive_key);
    if (cached.ok() && cached->has_value()) {
      auto stored = nlohmann::json::parse(**cached, nullptr, false);
      if (!stored.is_discarded() && stored.contains("json") && stored.contains("text")) {
        if (a.json)
          std::cout << stored["json"].dump(2) << "\n";
        else
          std::cout << "(served from the store; --fresh profiles again)\n" << stored["text"].get<std::string>();
        return kExitOk;
      }
    }
  }
  auto tools = ProfileTools(a);
  if (!tools.ok()) return Fail(tools.status());
  auto statics = StaticProfiles(*compiled);
  Calibration cal = gpu ? LoadCalibration(store_ptr, *gpu) : Calibration{};
  step("static_profile");

  nlohmann::json json_extra = nlohmann::json::object();
  nlohmann::json header = {
      {"task", task->name}, {"candidate", a.candidate}, {"workload", w->name}, {"arch", copt.cuda_arch}};
  if (!params->empty()) header["params"] = ParamsText(*params);
  std::vector<KernelReport> reports;
  if (a.static_only) {
    ProfileContext shared = SharedProfileContext(*task, *w, copt.cuda_arch, gpu ? gpu->sm_count : 0);
    RooflineInput base;
    base.flops = w->flops;
    base.min_bytes = w->min_bytes;
    base.dram_bytes_per_s = cal.dram_bytes_per_s;
    base.peak_flops_per_s = cal.fp32_flops_per_s;
    reports = AnalyzeKernels(statics, shared, base, {}, {}, *tools, a.all_tools, std::nullopt, a.block);
  } else {
    // Time it first (and take its launch trace), then one counter pass over the candidate alone:
    // in-process through CUPTI by default, or under ncu.
    EvalOptions opt;
    opt.workloads = {w->name};
    opt.params = *params;
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
    if (!e->run.calibration.valid()) e->run.calibration = cal;
    CounterProfileOptions po;
    po.profiler = a.profiler;
    po.ncu_path = ncu;
    po.ncu_set = a.ncu_set;
    po.replay = a.replay;
    po.all_tools = a.all_tools;
    po.sm_count = gpu ? gpu->sm_count : 0;
    po.block = a.block;
    const char* how = need_ncu ? "under ncu" : a.profiler == "cupti" ? "through CUPTI" : "through CUPTI (else ncu)";
    std::cerr << "kpilot: counters for the tools of its class, " << how << " …\n";
    auto got = ProfileWithCounters(SystemProcessRunner(), RunnerPath(), *task, *w, opt, *e, *tools, po);
    if (!got.ok()) return Fail(got.status());
    step("counters");
    if (!got->fallback_note.empty()) std::cerr << "kpilot: " << got->fallback_note << "\n";
    if (!a.save_raw.empty()) {
      Status ws = WriteFileAtomic(a.save_raw, got->raw);
      if (!ws.ok()) return Fail(ws.WithContext("--save-raw"));
    }
    header["profiler"] = got->profiler;
    if (got->profiler == "ncu")
      header["ncu"] = got->version;
    else
      header["cupti_chip"] = got->version;
    if (!got->fallback_note.empty()) header["profiler_note"] = got->fallback_note;
    json_extra["profiler_wall_s"] = got->wall_s;
    json_extra["profiler_info"] = got->info;
    header["time_ms"] = fmt::format("{:.4f}", got->time_ms);
    reports = std::move(got->reports);
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
  auto* cmd =
      app.add_subcommand("profile", "Classify a candidate's bottleneck and say what to change (ncu, SASS, trace)");
  cmd->add_option("task", a->task_dir, "Task folder, KernelBench problem .py or flashinfer-bench definition .json");
  AddTaskSourceOptions(cmd, &a->source);
  cmd->add_option("candidate", a->candidate, "Candidate source (.cu)");
  cmd->add_option("--workload", a->workload, "Workload to profile (default: the last, usually the largest)");
  cmd->add_option("-D", a->defines, "Tunable parameter NAME=VALUE (repeatable), as for kpilot eval");
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
  cmd->add_option("--ncu-set", a->ncu_set,
                  "Have ncu collect this section set (e.g. full) instead of the tools' metrics");
  cmd->add_option("--save-raw", a->save_raw,
                  "Write the profiler's raw output here (ncu's CSV or the CUPTI counters as JSON)");
  cmd->callback([a, exit_code]() { *exit_code = RunProfile(*a); });
}

}  // namespace kpilot::cli
