// kpilot sweep TASK CANDIDATE: evaluate a task's whole tunable space and store every
// configuration with every timing sample (docs/sweep.md). TASK may be PyTorch-defined
// (docs/pytorch.md): its space is then the candidate's kpilot-params block, and each
// configuration is checked and timed by the torch worker. Configurations compile in parallel; a
// runner process checks and times a batch of them; the space file is rewritten after every batch,
// so an interrupted sweep resumes where it stopped.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "exec/executor.h"
#include "harness/harness.h"
#include "profile/static_profile.h"
#include "propose/params_proposer.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kSpaceFileVersion = 1;
// A sweep measures kpilot's parameter space of one candidate, not a generator's drafts: one fixed
// seed keeps its space files comparable from sweep to sweep.
constexpr uint64_t kSweepSeed = 1;
// How often the whole space file is rewritten while a sweep runs; the journal holds what came in
// between (Sweep::Save).
constexpr double kSaveEverySeconds = 30;

struct SweepArgs {
  std::string task_dir;
  std::string candidate;
  std::string workload;
  int jobs = 0;
  int batch = 32;
  std::string out;
  size_t cap = 100000;
  double max_seconds = 0.5;
  double timeout_s = 0;   // per configuration; 0 = derived from max_seconds
  double stop_after_s = 0;
  std::string store_dir = ".kpilot";
  std::string arch;
  int device = 0;
  bool dry_run = false;
  bool compile_only = false;
  bool json = false;
  TaskSourceArgs source;  // --python, --workloads FILE.jsonl
};

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string IsoTimeNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What the space file says about the machine when there is no GPU: the CPU.
json HostDescription() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (model.empty() && std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) model = line.substr(line.find(':') + 2);
  return {{"host", model}, {"cpus", std::thread::hardware_concurrency()}};
}

// One configuration of the space and what the space file holds for it.
struct Config {
  ParamValues params;
  json entry;                 // the space file's entry; "status" is "not_run" until evaluated
  bool done = false;          // has a final status (evaluated, or did not compile)
};

bool FinalStatus(const std::string& status) { return !status.empty() && status != "not_run"; }

// The space file's fields that come from evaluating an object (the rest describe the
// configuration and its compile): copied to every configuration that compiled to that object.
constexpr const char* kEvaluatedKeys[] = {"status", "message", "candidate_ms", "baseline_ms", "median_ms",
                                          "baseline_median_ms", "speedup", "paired_speedup"};

json EvaluatedPart(const json& entry) {
  json f = json::object();
  for (const char* k : kEvaluatedKeys)
    if (entry.contains(k)) f[k] = entry[k];
  return f;
}

// The evaluated fields from the runner's result for one object: its status, message and timing.
json EvaluatedFields(const RunResult& r) {
  json f;
  f["status"] = r.status;
  f["message"] = VerdictFromRun(r).summary;
  if (r.timings.empty()) return f;
  const TimingRecord& t = r.timings.front();
  SampleSummary cand = Summarize(t.candidate_ms), base = Summarize(t.baseline_ms);
  PairedRatio paired = PairedSpeedup(t.baseline_ms, t.candidate_ms);
  f["candidate_ms"] = t.candidate_ms;
  f["baseline_ms"] = t.baseline_ms;
  f["median_ms"] = cand.median;
  f["baseline_median_ms"] = base.median;
  f["speedup"] = cand.median > 0 ? base.median / cand.median : 0.0;
  f["paired_speedup"] = {{"ratio", paired.ratio}, {"ci", {paired.ci.lo, paired.ci.hi}}, {"n", paired.n}};
  return f;
}

// The runner's process as a result: what it printed, or what became of it.
RunResult RunRunner(const RunRequest& request) {
  auto outcome = RunRunnerProcess(SystemProcessRunner(), RunnerPath(), request);
  if (outcome.ok()) return std::move(outcome->result);
  RunResult run;
  run.status = "error";
  run.message = outcome.status().message();
  return run;
}

class Sweep {
 public:
  Sweep(const SweepArgs& a, Task task) : a_(a), task_(std::move(task)) {}
  int Run();

 private:
  Status Prepare();              // the task's space and the workload
  Status OpenSpaceFile();        // resumed when it holds this sweep; written at once
  // The space file, atomically, with the journal folded in (and removed). Between saves, each
  // batch's results are appended to the journal (OUT.journal, one entry per line), so a killed
  // sweep loses nothing and the whole file is rewritten only every kSaveEverySeconds, not after
  // every batch (which made a sweep's writing quadratic in its size).
  Status Save();
  Status Journal(const std::vector<std::string>& shas);  // the entries of these objects' configs
  Status SaveIfDue();
  std::filesystem::path JournalPath() const { return out_.string() + ".journal"; }
  // Compile threads over every configuration not done; Evaluate() takes their objects.
  std::vector<std::thread> StartCompiling(Toolchain& toolchain, const CompileOptions& copts, bool overlap);
  void CompileOne(Toolchain& toolchain, const CompileOptions& copts, size_t i);
  Status Evaluate();             // every compiled, not yet evaluated object, in batches
  // Results for `objects` (paths), one runner process for all; nullopt = not run yet.
  Result<std::vector<std::optional<json>>> EvaluateBatch(const std::vector<std::string>& objects);
  // PyTorch-defined tasks: one worker process per object.
  Result<std::vector<std::optional<json>>> EvaluateWithWorker(const std::vector<std::string>& objects);
  EvalOptions Options() const;
  RunRequest Request(const std::vector<std::string>& objects);
  void Record(const std::string& sha, const json& fields);
  std::string Progress();
  int Report();

  const SweepArgs& a_;
  Task task_;
  std::string workload_;
  std::filesystem::path out_;
  json header_;
  std::vector<Config> configs_;
  std::optional<GpuInfo> gpu_;
  std::optional<Workspace> workspace_;
  std::string reference_object_, baseline_object_;
  Calibration calibration_;
  std::unique_ptr<PythonTaskRunner> python_;  // PyTorch-defined tasks: the torch worker

  // Shared with the compile threads; objects are named by the sha256 of their bytes, so
  // configurations that compile to the same binary are evaluated once.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;                     // compiled, not evaluated yet, first seen first
  std::map<std::string, std::string> object_of_;      // object_sha → the object's path
  std::map<std::string, std::vector<size_t>> users_;  // object_sha → configs compiled to it
  std::map<std::string, json> known_;                 // object_sha → evaluated fields (this run or the file)
  size_t compiled_ = 0, to_compile_ = 0, compile_errors_ = 0;
  int compilers_running_ = 0;
  Status compile_status_;                             // kpilot's own failure (no compiler, …)
  bool stopped_ = false;                              // --stop-after, or evaluation failed
  Clock::time_point start_ = Clock::now();
  Clock::time_point saved_at_ = Clock::now();
};

Status Sweep::Prepare() {
  bool python = task_.reference.kind == ReferenceKind::kPython;
  if (task_.params.empty())
    return Status::InvalidInput(
        (python ? "neither task " + task_.name + " nor " + a_.candidate + " declares params"
                : task_.dir.string() + "/task.toml declares no [params]") +
        ": a sweep needs a tunable space — add a [params] table to task.toml or a /* kpilot-params */ block to the "
        "candidate (see docs/task-format.md)");
  std::string want_ext = task_.backend == Backend::kCuda && NeedsGpu(task_) ? ".cu" : ".cpp";
  if (!std::filesystem::exists(a_.candidate)) return Status::NotFound(a_.candidate + ": no such candidate file");
  if (std::filesystem::path(a_.candidate).extension() != want_ext)
    return Status::InvalidInput(a_.candidate + ": task " + task_.name + " uses the " +
                                std::string(BackendName(task_.backend)) + " backend, so candidates are " + want_ext +
                                " files");
  workload_ = a_.workload.empty() ? task_.workloads.front().name : a_.workload;
  if (!task_.FindWorkload(workload_)) {
    std::string known;
    for (const auto& w : task_.workloads) known += (known.empty() ? "" : ", ") + w.name;
    return Status::InvalidInput("--workload " + workload_ + ": task " + task_.name +
                                " has no such workload (it has: " + known + ")");
  }
  if (a_.batch < 1) return Status::InvalidInput("--batch must be at least 1");
  for (auto& p : EnumerateSpace(task_, a_.cap)) configs_.push_back({std::move(p), json::object(), false});
  return Status::Ok();
}

int Sweep::Run() {
  if (Status s = Prepare(); !s.ok()) return Fail(s);
  if (a_.dry_run) {
    size_t combos = 1;
    for (const auto& p : task_.params) combos *= p.values.size();
    if (a_.json)
      std::cout << json{{"task", task_.name}, {"valid", configs_.size()}, {"combinations", combos}, {"cap", a_.cap}}.dump(2)
                << "\n";
    else
      std::cout << fmt::format("{}: {} valid configurations of {} combinations{}\n", task_.name, configs_.size(), combos,
                               configs_.size() >= a_.cap ? fmt::format(" (capped at --cap {})", a_.cap) : "");
    return kExitOk;
  }

  if (NeedsGpu(task_)) {
    std::string why;
    auto gpus = SystemGpuProbe().List(&why);
    if (a_.device < 0 || (!gpus.empty() && a_.device >= static_cast<int>(gpus.size())))
      return Fail(Status::InvalidInput(fmt::format("--device {}: this machine has {} GPU(s)", a_.device, gpus.size())));
    if (!gpus.empty()) gpu_ = gpus[static_cast<size_t>(a_.device)];
    if (!gpu_ && !a_.compile_only)
      return Fail(Status::Unavailable("task " + task_.name + " needs the cuda backend, but this machine has no usable GPU (" +
                                      why + "); run the sweep on a GPU machine, or add --compile-only to compile "
                                      "every configuration here"));
  }

  if (Status s = OpenSpaceFile(); !s.ok()) return Fail(s);

  auto workspace = OpenWorkspace(a_.store_dir, false);
  if (!workspace.ok()) return Fail(workspace.status());
  workspace_ = std::move(workspace).value();
  auto toolchain = MakeSystemToolchain(workspace_->cache_dir, IncludeDir());
  CompileOptions copts;
  copts.cuda_arch = !a_.arch.empty() ? a_.arch : gpu_ ? gpu_->Arch() : "";
  copts.want_sass = task_.backend == Backend::kCuda;  // the instruction mix each config's entry stores
  if (gpu_) calibration_ = LoadCalibration(workspace_->store.get(), *gpu_);

  if (!a_.compile_only && task_.reference.kind == ReferenceKind::kPython) {
    auto python = MakePythonTaskRunner(task_, a_.source.python);
    if (!python.ok()) return Fail(python.status());
    python_ = std::move(python).value();
  } else if (!a_.compile_only) {
    // The reference and baseline are the task's: a failure to compile them is the task's fault.
    auto compile = [&](const SourceRef& src) -> Result<std::string> {
      auto c = toolchain->Compile(src.path, {}, copts);
      if (!c.ok()) return c.status();
      if (!c->ok)
        return Status::InvalidInput("the task's " + src.name + " " + src.path.string() + " does not compile: " +
                                    c->first_error);
      return c->object.string();
    };
    auto reference = compile(task_.reference);
    if (!reference.ok()) return Fail(reference.status());
    auto baseline = task_.baselines.empty() ? reference : compile(task_.Baseline());
    if (!baseline.ok()) return Fail(baseline.status());
    reference_object_ = *reference;
    baseline_object_ = *baseline;
  }
  // Timing a host task while compilers load every core would measure the compilers; a cuda
  // task's timing is on the GPU's clock, so its batches run while the rest compiles (on one core
  // fewer, at a lower priority, so the runner's launches are not delayed).
  bool overlap = task_.backend == Backend::kCuda && !a_.compile_only;
  std::vector<std::thread> compilers = StartCompiling(*toolchain, copts, overlap);
  Status s;
  if (overlap) s = Evaluate();
  for (auto& t : compilers) t.join();
  if (s.ok()) s = compile_status_;
  if (s.ok() && !a_.compile_only && !overlap) s = Evaluate();
  Status saved = Save();
  if (!s.ok()) return Fail(s);
  if (!saved.ok()) return Fail(saved.WithContext("writing " + out_.string()));
  return Report();
}

Status Sweep::OpenSpaceFile() {
  out_ = a_.out.empty() ? std::filesystem::path("sweep-" + task_.name + ".json") : std::filesystem::path(a_.out);
  std::map<std::string, json> previous;
  if (std::filesystem::exists(out_)) {
    auto text = ReadFile(out_);
    json old = text.ok() ? json::parse(*text, nullptr, false) : json();
    if (!old.is_object() || old.value("version", 0) != kSpaceFileVersion || !old["configs"].is_array())
      return Status::InvalidInput("--out " + out_.string() +
                                  ": exists and is not a kpilot space file — pass another --out, or remove it");
    // The candidate by file name: the same sweep may resume from another checkout of the tree.
    struct Field {
      const char* name;
      std::string have, want;
    };
    std::string old_candidate = std::filesystem::path(old.value("candidate", "")).filename().string();
    for (const Field& f : {Field{"task", old.value("task", ""), task_.name},
                           Field{"workload", old.value("workload", ""), workload_},
                           Field{"candidate", old_candidate, std::filesystem::path(a_.candidate).filename().string()}})
      if (f.have != f.want)
        return Status::InvalidInput(fmt::format("--out {}: holds a sweep of {} \"{}\", not \"{}\" — pass another --out "
                                                "to start a new sweep",
                                                out_.string(), f.name, f.have, f.want));
    header_ = old;
    header_.erase("configs");
    for (const auto& c : old["configs"]) previous[c.value("params", json::object()).dump()] = c;
    // Results a killed sweep journaled after its last save; a line cut short by the kill is skipped.
    if (auto journal = ReadFile(JournalPath()); journal.ok()) {
      std::istringstream lines(*journal);
      size_t skipped = 0;
      for (std::string line; std::getline(lines, line);) {
        json e = json::parse(line, nullptr, false);
        if (e.is_object() && e.contains("params")) previous[e["params"].dump()] = e;
        else skipped += !line.empty();
      }
      if (skipped)
        std::cerr << fmt::format("kpilot: {} unreadable line(s) in {} skipped (a write cut short); those "
                                 "configurations run again\n", skipped, JournalPath().string());
    }
  } else {
    header_ = {{"version", kSpaceFileVersion},
               {"task", task_.name},
               {"task_dir", std::filesystem::absolute(task_.dir).string()},
               {"candidate", std::filesystem::absolute(a_.candidate).string()},
               {"workload", workload_},
               {"baseline", task_.Baseline().name},
               {"created", IsoTimeNow()}};
  }
  header_["toolchain"] = {{"nvcc", NvccVersion()}, {"gxx", GxxVersion()}};
  header_["timing"] = {{"max_seconds", a_.max_seconds}, {"seeds_checked", {kSweepSeed}},
                       {"batch", a_.batch}};
  if (task_.backend == Backend::kHost) header_["gpu"] = HostDescription();
  else if (!header_.contains("gpu") && gpu_) header_["gpu"] = {{"name", gpu_->name}, {"driver", gpu_->driver_version}};
  // The GPU's ceilings, so replays classify nodes against the roofline as live runs do.
  if (task_.backend == Backend::kCuda && calibration_.valid()) header_["calibration"] = ToJson(calibration_);
  size_t resumed = 0;
  std::set<std::string> enumerated;
  for (auto& c : configs_) {
    std::string key = json(c.params).dump();
    enumerated.insert(key);
    auto it = previous.find(key);
    if (it == previous.end()) {
      c.entry = {{"params", c.params}, {"status", "not_run"}};
      continue;
    }
    c.entry = it->second;
    c.done = FinalStatus(c.entry.value("status", ""));
    resumed += c.done;
    if (c.done && c.entry.contains("object_sha") && c.entry.value("status", "") != "compile_error")
      known_[c.entry["object_sha"].get<std::string>()] = EvaluatedPart(c.entry);
  }
  for (auto& [key, entry] : previous)  // configs a smaller --cap or an edited task no longer lists
    if (!enumerated.count(key)) configs_.push_back({entry["params"].get<ParamValues>(), entry, true});
  if (Status s = Save(); !s.ok())
    return Status::InvalidInput("--out " + out_.string() + ": cannot write the space file (" + s.message() +
                                ") — pass --out with a path in a writable folder");
  if (!a_.json)
    std::cerr << fmt::format("kpilot: {} configurations of {} in {}{}\n", configs_.size(), task_.name, out_.string(),
                             resumed ? fmt::format(" ({} already evaluated there, resuming)", resumed) : "");
  return Status::Ok();
}

Status Sweep::Save() {
  // One configuration per line: the file stays readable, and diffs between runs stay small.
  std::string text = header_.dump(1);
  text.erase(text.rfind('}'));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  text += ",\n \"configs\": [";
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < configs_.size(); ++i) text += (i ? ",\n  " : "\n  ") + configs_[i].entry.dump();
  text += "\n ]\n}\n";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(out_, text));
  saved_at_ = Clock::now();
  std::error_code ec;
  std::filesystem::remove(JournalPath(), ec);  // folded in: a stale journal only repeats entries
  return Status::Ok();
}

Status Sweep::Journal(const std::vector<std::string>& shas) {
  std::string lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& sha : shas)
      for (size_t i : users_[sha])
        if (configs_[i].done) lines += configs_[i].entry.dump() + "\n";
  }
  if (lines.empty()) return Status::Ok();
  std::ofstream f(JournalPath(), std::ios::app | std::ios::binary);
  f << lines;
  f.flush();
  if (!f) return Status::Internal("cannot append to " + JournalPath().string());
  return Status::Ok();
}

Status Sweep::SaveIfDue() {
  return SecondsSince(saved_at_) >= kSaveEverySeconds ? Save() : Status::Ok();
}

void Sweep::CompileOne(Toolchain& toolchain, const CompileOptions& copts, size_t i) {
  Config& c = configs_[i];
  auto t0 = Clock::now();
  auto compiled = toolchain.Compile(a_.candidate, c.params, copts);
  double seconds = SecondsSince(t0);
  std::string sha;
  if (compiled.ok() && compiled->ok) {
    auto bytes = ReadFile(compiled->object);
    sha = bytes.ok() ? Sha256Hex(*bytes) : "";
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++compiled_;
  if (!compiled.ok()) {
    if (compile_status_.ok()) compile_status_ = compiled.status();
    return;
  }
  c.entry["compile_s"] = seconds;
  json resources = json::array();
  for (const auto& p : StaticProfiles(*compiled)) {
    const KernelResources& r = p.resources;
    json entry = {{"kernel", r.name}, {"registers", r.registers}, {"shared_bytes", r.shared_bytes},
                  {"stack_bytes", r.stack_bytes}, {"spill_store_bytes", r.spill_stores}, {"spill_load_bytes", r.spill_loads}};
    if (p.have_sass) entry["mix"] = ToJson(p.mix);  // replays' static findings (docs/sweep.md)
    resources.push_back(std::move(entry));
  }
  if (!resources.empty()) c.entry["resources"] = resources;
  if (!compiled->ok || sha.empty()) {
    ++compile_errors_;
    c.entry["status"] = "compile_error";
    c.entry["message"] = compiled->timed_out ? "the compiler timed out"
                         : compiled->ok      ? "the compiled object cannot be read"
                                             : compiled->first_error;
    c.done = true;
    return;
  }
  c.entry["object_sha"] = sha;
  if (auto it = known_.find(sha); it != known_.end()) {  // the same binary was evaluated already
    c.entry.update(it->second);
    c.done = true;
    return;
  }
  auto& users = users_[sha];
  if (users.empty()) {
    object_of_[sha] = compiled->object.string();
    ready_.push_back(sha);
  }
  users.push_back(i);
}

std::vector<std::thread> Sweep::StartCompiling(Toolchain& toolchain, const CompileOptions& copts, bool overlap) {
  auto todo = std::make_shared<std::vector<size_t>>();
  for (size_t i = 0; i < configs_.size(); ++i)
    if (!configs_[i].done) todo->push_back(i);
  to_compile_ = todo->size();
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int jobs = a_.jobs > 0 ? a_.jobs : std::max(1, overlap ? cores - 1 : cores);
  jobs = std::min<int>(jobs, std::max<int>(1, static_cast<int>(todo->size())));
  if (!a_.json && !todo->empty())
    std::cerr << fmt::format("kpilot: compiling {} configurations on {} threads\n", todo->size(), jobs);
  auto next = std::make_shared<std::atomic<size_t>>(0);
  compilers_running_ = jobs;
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t)
    threads.emplace_back([this, &toolchain, copts = CompileOptions(copts), todo, next, overlap]() mutable {
      // Compilers that overlap the runner's timing yield it the cores, as the optimize loop's do.
      if (overlap) copts.nice = std::max(copts.nice, kCompileNice);
      for (size_t k; (k = (*next)++) < todo->size();) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (!compile_status_.ok() || stopped_) break;
        }
        CompileOne(toolchain, copts, (*todo)[k]);
        std::lock_guard<std::mutex> lock(mu_);
        size_t step = std::max<size_t>(1, to_compile_ / 20);
        if (!a_.json && (compiled_ % step == 0 || compiled_ == to_compile_))
          std::cerr << fmt::format("kpilot: compiled {}/{} ({} compile errors, {:.0f} s)\n", compiled_, to_compile_,
                                   compile_errors_, SecondsSince(start_));
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      --compilers_running_;
      cv_.notify_all();
    });
  return threads;
}

EvalOptions Sweep::Options() const {
  EvalOptions opt;
  opt.workloads = {workload_};
  opt.seeds = {kSweepSeed};
  opt.draw = false;  // a space's verdicts stay the same from one sweep to the next
  opt.timing.max_seconds = a_.max_seconds;
  opt.device = a_.device;
  opt.calibration = calibration_;
  return opt;
}

Result<std::vector<std::optional<json>>> Sweep::EvaluateWithWorker(const std::vector<std::string>& objects) {
  EvalOptions opt = Options();
  opt.timeout_s = 60 + (a_.timeout_s > 0 ? a_.timeout_s : 5 + 3 * a_.max_seconds);
  std::vector<std::optional<json>> out;
  for (const auto& object : objects) {
    auto run = python_->Run(task_, {"native", "", object}, {"reference", "", ""}, opt);
    if (!run.ok()) return run.status();
    if (run->status == "error") return Status::InvalidInput(run->message);  // the task's or the machine's fault
    if (run->details.contains("gpu")) header_["gpu"] = run->details["gpu"];
    out.push_back(EvaluatedFields(*run));
  }
  return out;
}

RunRequest Sweep::Request(const std::vector<std::string>& objects) {
  RunRequest req = *BuildRunRequest(task_, Options());  // the workload was checked in Prepare
  req.reference_object = reference_object_;
  req.baseline_object = baseline_object_;
  req.candidate_object = reference_object_;  // loaded by the runner's setup; the sweep swaps its objects in
  req.sweep_objects = objects;
  // Per object: the check (reference and candidate once) and the timing loop, with room for
  // input generation, warmup and the trace; the runner's setup (context, calibration) once.
  double per_object = a_.timeout_s > 0 ? a_.timeout_s : 5 + 3 * a_.max_seconds;
  req.timeout_s = 60 + per_object * static_cast<double>(objects.size());
  return req;
}

Result<std::vector<std::optional<json>>> Sweep::EvaluateBatch(const std::vector<std::string>& objects) {
  if (python_) return EvaluateWithWorker(objects);
  std::vector<std::optional<json>> out(objects.size());
  std::vector<size_t> alone;  // objects to retry in a process of their own
  auto run_one = [&](const std::vector<std::string>& batch) -> RunResult {
    RunResult run = RunRunner(Request(batch));
    if (run.calibration_measured && run.calibration.valid() && gpu_) {
      calibration_ = run.calibration;
      header_["calibration"] = ToJson(calibration_);  // Prepare wrote the store's, when it had one
      if (workspace_->store) (void)SaveCalibration(*workspace_->store, *gpu_, calibration_, json::object());
    }
    if (task_.backend == Backend::kCuda && run.details.contains("gpu")) header_["gpu"] = run.details["gpu"];
    return run;
  };
  RunResult run = run_one(objects);
  const json* entries = run.details.contains("sweep") ? &run.details["sweep"] : nullptr;
  if (!entries || entries->size() != objects.size()) {
    // Setup failed (the task's reference or baseline, the GPU): the task's or the machine's fault.
    if (run.status == "error") return Status::InvalidInput(run.message);
    // The process died (a crash, a timeout): alone, that is the object's result; in a batch,
    // every object gets a process of its own.
    if (objects.size() == 1) {
      out[0] = json{{"status", run.status}, {"message", run.message}};
      return out;
    }
    for (size_t i = 0; i < objects.size(); ++i) alone.push_back(i);
  } else {
    for (size_t i = 0; i < objects.size(); ++i) {
      const json& e = (*entries)[i];
      std::string status = e.value("status", "");
      if (status == "not_run") continue;  // after a poisoned context: the next batch
      if (status == "error" && objects.size() > 1) {
        alone.push_back(i);
        continue;
      }
      auto r = RunResultFromJson(e);
      if (!r.ok()) return r.status();
      if (status == "error") return Status::InvalidInput(r->message);  // alone in its process: not the object's doing
      out[i] = EvaluatedFields(*r);
    }
    // A batch that decided nothing is treated like a crash, so the sweep always progresses (the
    // runner stops a batch only after an object's own entry, so this does not happen).
    if (alone.empty() && std::none_of(out.begin(), out.end(), [](const auto& o) { return o.has_value(); })) {
      if (objects.size() == 1) out[0] = json{{"status", "runtime_error"}, {"message", run.message}};
      else for (size_t i = 0; i < objects.size(); ++i) alone.push_back(i);
    }
  }
  for (size_t i : alone) {
    auto single = EvaluateBatch({objects[i]});
    if (!single.ok()) return single.status();
    out[i] = (*single)[0];
  }
  return out;
}

void Sweep::Record(const std::string& sha, const json& fields) {
  std::lock_guard<std::mutex> lock(mu_);
  known_[sha] = fields;
  for (size_t i : users_[sha]) {
    configs_[i].entry.update(fields);
    configs_[i].done = true;
  }
}

std::string Sweep::Progress() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t done = 0;
  const Config* best = nullptr;
  for (const auto& c : configs_) {
    done += c.done;
    if (c.entry.value("status", "") == "passed" &&
        (!best || c.entry.value("speedup", 0.0) > best->entry.value("speedup", 0.0)))
      best = &c;
  }
  return fmt::format("{}/{} configurations done, {:.0f} s{}", done, configs_.size(), SecondsSince(start_),
                     best ? fmt::format("; best {:.3f}× ({})", best->entry.value("speedup", 0.0), ParamsText(best->params))
                          : "");
}

Status Sweep::Evaluate() {
  for (;;) {
    std::vector<std::string> batch, shas;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return !compile_status_.ok() || compilers_running_ == 0 || ready_.size() >= static_cast<size_t>(a_.batch);
      });
      if (!compile_status_.ok()) return compile_status_;
      if (ready_.empty()) return Status::Ok();  // compiling is done too
      if (a_.stop_after_s > 0 && SecondsSince(start_) > a_.stop_after_s) {
        stopped_ = true;  // the compile threads stop too
        return Status::Ok();
      }
      while (!ready_.empty() && batch.size() < static_cast<size_t>(a_.batch)) {
        batch.push_back(object_of_[ready_.front()]);
        shas.push_back(ready_.front());
        ready_.pop_front();
      }
    }
    auto t0 = Clock::now();
    auto results = EvaluateBatch(batch);
    if (!results.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      return results.status();
    }
    std::vector<std::string> again;
    for (size_t i = 0; i < batch.size(); ++i) {
      if ((*results)[i]) Record(shas[i], *(*results)[i]);
      else again.push_back(shas[i]);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.insert(ready_.begin(), again.begin(), again.end());
    }
    if (Status s = Journal(shas); !s.ok()) return s.WithContext("journaling the results");
    if (Status s = SaveIfDue(); !s.ok()) return s.WithContext("writing " + out_.string());
    if (!a_.json)
      std::cerr << fmt::format("kpilot: evaluated {} objects in {:.1f} s; {}\n", batch.size() - again.size(),
                               SecondsSince(t0), Progress());
  }
}

int Sweep::Report() {
  std::map<std::string, int> by_status;
  std::vector<const Config*> passed;
  for (const auto& c : configs_) {
    std::string s = c.entry.value("status", "not_run");
    if (a_.compile_only && s == "not_run" && c.entry.contains("object_sha")) s = "compiled";
    ++by_status[s];
    if (s == "passed") passed.push_back(&c);
  }
  std::sort(passed.begin(), passed.end(), [](const Config* x, const Config* y) {
    return x->entry.value("speedup", 0.0) > y->entry.value("speedup", 0.0);
  });
  bool complete = by_status["not_run"] == 0 || a_.compile_only;
  if (by_status["not_run"] == 0) by_status.erase("not_run");
  if (a_.json) {
    json best = json::array();
    for (size_t i = 0; i < passed.size() && i < 10; ++i) best.push_back(passed[i]->entry);
    for (auto& b : best) b.erase("candidate_ms"), b.erase("baseline_ms");
    std::cout << json{{"out", out_.string()}, {"configs", configs_.size()}, {"by_status", by_status},
                      {"complete", complete}, {"best", best}}.dump(2)
              << "\n";
  } else {
    std::string counts;
    for (const auto& [s, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, s);
    std::cout << fmt::format("space      {} configurations of {} ({}) in {}\n", configs_.size(), task_.name, counts,
                             out_.string());
    for (size_t i = 0; i < passed.size() && i < 10; ++i)
      std::cout << fmt::format("{:>9.3f}×  {:.4f} ms  {}\n", passed[i]->entry.value("speedup", 0.0),
                               passed[i]->entry.value("median_ms", 0.0), ParamsText(passed[i]->params));
    if (stopped_ || !complete)
      std::cout << "incomplete: run the same command again to evaluate the rest (the file is resumed)\n";
  }
  return complete ? kExitOk : kExitNotPassed;
}

}  // namespace

void AddSweepCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "Evaluate every configuration of a task's [params] space into a space file");
  cmd->add_option("task", a->task_dir, "Task folder (holding task.toml), KernelBench problem .py or flashinfer definition .json")->required();
  cmd->add_option("candidate", a->candidate, "Candidate source whose -D params span the space")->required();
  cmd->add_option("--workload", a->workload, "The workload to time (default: the task's first)");
  cmd->add_option("--jobs", a->jobs, "Compile threads (default: every core; one fewer while a cuda sweep evaluates)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", a->batch, "Objects per runner process")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--out", a->out, "Space file (default: sweep-<task>.json); an existing one is resumed");
  cmd->add_option("--cap", a->cap, "At most this many configurations")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-seconds", a->max_seconds, "Timing-loop cap per configuration, in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s,
                  "Wall-clock allowance per configuration inside a batch, in seconds (default: 5 + 3 × --max-seconds)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--stop-after", a->stop_after_s,
                  "Start no new batch after this many seconds (the file is saved; rerun to resume)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--store", a->store_dir, "Store folder (compile cache, GPU calibration)")->capture_default_str();
  cmd->add_option("--arch", a->arch, "CUDA target, e.g. sm_90a (default: the visible GPU's, else sm_90a)");
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--dry-run", a->dry_run, "Only count the valid configurations");
  cmd->add_flag("--compile-only", a->compile_only, "Only compile every configuration (works without a GPU)");
  cmd->add_flag("--json", a->json, "Print the summary as JSON (progress lines are not printed)");
  AddTaskSourceOptions(cmd, &a->source);
  cmd->callback([a, exit_code]() {
    auto task = LoadTaskArg(a->task_dir, a->source);
    if (task.ok() && std::filesystem::exists(a->candidate)) {
      // A task without [params] sweeps the space the candidate declares (docs/task-format.md).
      if (Status s = AdoptCandidateParams(&task.value(), a->candidate); !s.ok()) task = s;
    }
    if (!task.ok()) {
      *exit_code = Fail(task.status());
      return;
    }
    Sweep sweep(*a, std::move(task).value());
    *exit_code = sweep.Run();
  });
}

}  // namespace kpilot::cli
