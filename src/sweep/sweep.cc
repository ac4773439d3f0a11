// The sweep's driver: planning the space, the space file (opened, resumed, journaled, saved), the
// run's order and its summary. Compiling is in compile_pool.cc, evaluating in batches.cc.
#include "sweep/sweep.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/text.h"
#include "generate/params_generator.h"
#include "sweep/space_file.h"
#include "sweep/sweep_run.h"

namespace kpilot {
namespace {

using nlohmann::json;

// How often the whole space file is rewritten while a sweep runs; the journal holds what came in
// between (SweepRun::Save).
constexpr double kSaveEverySeconds = 30;

// What the space file says about the machine when there is no GPU: the CPU.
json HostDescription() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (model.empty() && std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      model = line.substr(line.find(':') + 2);
  return {{"host", model}, {"cpus", std::thread::hardware_concurrency()}};
}

}  // namespace

// ---- Sweep: the contract's face of SweepRun ----

Sweep::Sweep(std::unique_ptr<SweepRun> run) : run_(std::move(run)) {}
Sweep::~Sweep() = default;

Result<std::unique_ptr<Sweep>> Sweep::Plan(Task task, SweepOptions options, SweepObserver* observer) {
  auto run = std::make_unique<SweepRun>(std::move(task), std::move(options), observer);
  KPILOT_RETURN_IF_ERROR(run->Prepare());
  return std::unique_ptr<Sweep>(new Sweep(std::move(run)));
}

const Task& Sweep::task() const { return run_->task(); }
const std::string& Sweep::workload() const { return run_->workload(); }
size_t Sweep::size() const { return run_->size(); }
size_t Sweep::combinations() const { return run_->combinations(); }
Status Sweep::ChooseGpu(GpuProbe& probe) { return run_->ChooseGpu(probe); }
const std::optional<GpuInfo>& Sweep::gpu() const { return run_->gpu(); }
Status Sweep::Open(ProcessRunner& processes) { return run_->Open(processes); }
Result<SweepSummary> Sweep::Run(const SweepEnv& env) { return run_->Run(env); }

// ---- SweepRun ----

SweepRun::SweepRun(Task task, SweepOptions options, SweepObserver* observer)
    : options_(std::move(options)), observer_(observer ? observer : &no_observer_), task_(std::move(task)) {}

double SweepRun::SecondsSince(Clock::time_point t) const {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

size_t SweepRun::combinations() const {
  size_t combos = 1;
  for (const auto& p : task_.params) combos *= p.values.size();
  return combos;
}

Status SweepRun::Prepare() {
  const std::string candidate = options_.candidate.string();
  bool python = task_.reference.kind == ReferenceKind::kPython;
  if (task_.params.empty())
    return Status::InvalidInput(
        (python ? "neither task " + task_.name + " nor " + candidate + " declares params"
                : task_.dir.string() + "/task.toml declares no [params]") +
        ": a sweep needs a tunable space — add a [params] table to task.toml or a /* kpilot-params */ block to the "
        "candidate (see docs/task-format.md)");
  std::string want_ext =
      task_.backend == Backend::kCuda && (options_.needs_gpu || options_.runs_elsewhere) ? ".cu" : ".cpp";
  if (!std::filesystem::exists(options_.candidate)) return Status::NotFound(candidate + ": no such candidate file");
  if (options_.candidate.extension() != want_ext)
    return Status::InvalidInput(candidate + ": task " + task_.name + " uses the " +
                                std::string(BackendName(task_.backend)) + " backend, so candidates are " + want_ext +
                                " files");
  workload_ = options_.workload.empty() ? task_.workloads.front().name : options_.workload;
  if (!task_.FindWorkload(workload_)) {
    std::string known;
    for (const auto& w : task_.workloads) known += (known.empty() ? "" : ", ") + w.name;
    return Status::InvalidInput("--workload " + workload_ + ": task " + task_.name +
                                " has no such workload (it has: " + known + ")");
  }
  if (options_.batch < 1) return Status::InvalidInput("--batch must be at least 1");
  for (auto& p : EnumerateSpace(task_, options_.cap)) configs_.push_back({std::move(p), json::object(), false});
  return Status::Ok();
}

Status SweepRun::ChooseGpu(GpuProbe& probe) {
  if (!options_.needs_gpu) return Status::Ok();
  std::string why;
  auto gpus = probe.List(&why);
  if (options_.device < 0 || (!gpus.empty() && options_.device >= static_cast<int>(gpus.size())))
    return Status::InvalidInput(fmt::format("--device {}: this machine has {} GPU(s)", options_.device, gpus.size()));
  if (!gpus.empty()) gpu_ = gpus[static_cast<size_t>(options_.device)];
  if (!gpu_ && !options_.compile_only)
    return Status::Unavailable("task " + task_.name + " needs the cuda backend, but this machine has no usable GPU (" +
                               why +
                               "); run the sweep on a GPU machine, or add --compile-only to compile "
                               "every configuration here");
  return Status::Ok();
}

Status SweepRun::Open(ProcessRunner& processes) {
  out_ = options_.out.empty() ? std::filesystem::path("sweep-" + task_.name + ".json") : options_.out;
  std::map<std::string, json> previous;
  if (std::filesystem::exists(out_)) {
    auto file = ReadSpaceFileEntries(out_);
    if (!file.ok())
      return Status::InvalidInput("--out " + out_.string() +
                                  ": exists and is not a kpilot space file — pass another --out, or remove it");
    // The candidate by file name: the same sweep may resume from another checkout of the tree.
    struct Field {
      const char* name;
      std::string have, want;
    };
    const json& old = file->header;
    std::string old_candidate = std::filesystem::path(old.value("candidate", "")).filename().string();
    for (const Field& f :
         {Field{"task", old.value("task", ""), task_.name}, Field{"workload", old.value("workload", ""), workload_},
          Field{"candidate", old_candidate, options_.candidate.filename().string()}})
      if (f.have != f.want)
        return Status::InvalidInput(
            fmt::format("--out {}: holds a sweep of {} \"{}\", not \"{}\" — pass another --out "
                        "to start a new sweep",
                        out_.string(), f.name, f.have, f.want));
    header_ = std::move(file->header);
    previous = std::move(file->entries);
    if (file->journal_lines_skipped)
      observer_->JournalLinesSkipped(SpaceJournalPath(out_), file->journal_lines_skipped);
  } else {
    header_ = NewSpaceHeader({task_.name, task_.dir, options_.candidate, workload_, task_.Baseline().name}, UtcNow());
  }
  header_["toolchain"] = {{"nvcc", NvccVersion(processes)}, {"gxx", GxxVersion(processes)}};
  header_["timing"] = {
      {"max_seconds", options_.max_seconds}, {"seeds_checked", {kSweepSeed}}, {"batch", options_.batch}};
  if (options_.runs_elsewhere) header_["executor"] = "slurm";  // timed on the cluster's nodes, not here
  if (task_.backend == Backend::kHost)
    header_["gpu"] = HostDescription();
  else if (!header_.contains("gpu") && gpu_)
    header_["gpu"] = {{"name", gpu_->name}, {"driver", gpu_->driver_version}};
  size_t resumed = 0;
  std::set<std::string> enumerated;
  for (auto& c : configs_) {
    std::string key = SpaceEntryKey(json(c.params));
    enumerated.insert(key);
    auto it = previous.find(key);
    if (it == previous.end()) {
      c.entry = NotRunEntry(c.params);
      continue;
    }
    c.entry = it->second;
    c.done = FinalSpaceStatus(c.entry.value("status", ""));
    resumed += c.done;
    if (c.done && c.entry.contains("object_sha") && c.entry.value("status", "") != "compile_error")
      known_[c.entry["object_sha"].get<std::string>()] = EvaluatedPart(c.entry);
  }
  for (auto& [key, entry] : previous)  // configs a smaller cap or an edited task no longer lists
    if (!enumerated.count(key)) configs_.push_back({entry["params"].get<ParamValues>(), entry, true});
  if (Status s = Save(); !s.ok())
    return Status::InvalidInput("--out " + out_.string() + ": cannot write the space file (" + s.message() +
                                ") — pass --out with a path in a writable folder");
  observer_->Opened(out_, configs_.size(), resumed);
  return Status::Ok();
}

Result<SweepSummary> SweepRun::Run(const SweepEnv& env) {
  env_ = &env;
  CompileOptions copts;
  copts.cuda_arch = !options_.arch.empty() ? options_.arch : gpu_ ? gpu_->Arch() : "";
  copts.want_sass = task_.backend == Backend::kCuda;  // the instruction mix each config's entry stores
  copts.cutlass = task_.cutlass;
  if (gpu_) calibration_ = env.calibration;

  if (env.channels && task_.reference.kind == ReferenceKind::kPython)
    return Status::InvalidInput("task " + task_.name +
                                " is PyTorch-defined: its torch worker runs here, so its sweep cannot go to a cluster");
  if (!options_.compile_only && task_.reference.kind == ReferenceKind::kPython) {
    if (!env.python)
      return Status::Internal("task " + task_.name + " is PyTorch-defined, and the sweep has no torch worker");
  } else if (!options_.compile_only) {
    // The reference and baseline are the task's: a failure to compile them is the task's fault.
    auto compile = [&](const SourceRef& src) -> Result<std::string> {
      auto c = env.toolchain->Compile(src.path, {}, copts);
      if (!c.ok()) return c.status();
      if (!c->ok)
        return Status::InvalidInput("the task's " + src.name + " " + src.path.string() +
                                    " does not compile: " + c->first_error);
      return c->object.string();
    };
    auto reference = compile(task_.reference);
    if (!reference.ok()) return reference.status();
    auto baseline = task_.baselines.empty() ? reference : compile(task_.Baseline());
    if (!baseline.ok()) return baseline.status();
    reference_object_ = *reference;
    baseline_object_ = *baseline;
  }
  // Timing a host task while compilers load every core would measure the compilers; a cuda
  // task's timing is on the GPU's clock, so its batches run while the rest compiles (on one core
  // fewer, at a lower priority, so the runner's launches are not delayed).
  bool overlap = task_.backend == Backend::kCuda && !options_.compile_only;
  std::vector<std::thread> compilers = StartCompiling(*env.toolchain, copts, overlap);
  Status s;
  if (overlap) s = Evaluate();
  for (auto& t : compilers) t.join();
  if (s.ok()) s = compile_status_;
  if (s.ok() && !options_.compile_only && !overlap) s = Evaluate();
  Status saved = Save();
  env_ = nullptr;
  if (!s.ok()) return s;
  if (!saved.ok()) return saved.WithContext("writing " + out_.string());
  return Summary();
}

Status SweepRun::Save() {
  std::vector<json> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries.reserve(configs_.size());
    for (const auto& c : configs_) entries.push_back(c.entry);
  }
  KPILOT_RETURN_IF_ERROR(WriteSpaceFile(out_, header_, entries));
  saved_at_ = Clock::now();
  return Status::Ok();
}

Status SweepRun::Journal(const std::vector<std::string>& shas) {
  std::vector<json> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& sha : shas)
      for (size_t i : users_[sha])
        if (configs_[i].done) entries.push_back(configs_[i].entry);
  }
  return AppendSpaceJournal(out_, entries);
}

Status SweepRun::SaveIfDue() { return SecondsSince(saved_at_) >= kSaveEverySeconds ? Save() : Status::Ok(); }

void SweepRun::Record(const std::string& sha, const json& fields) {
  std::lock_guard<std::mutex> lock(mu_);
  known_[sha] = fields;
  for (size_t i : users_[sha]) {
    configs_[i].entry.update(fields);
    configs_[i].done = true;
  }
}

SweepProgress SweepRun::Progress() {
  std::lock_guard<std::mutex> lock(mu_);
  SweepProgress p;
  p.total = configs_.size();
  p.elapsed_s = SecondsSince(start_);
  const Config* best = nullptr;
  for (const auto& c : configs_) {
    p.done += c.done;
    if (c.entry.value("status", "") == "passed" &&
        (!best || c.entry.value("speedup", 0.0) > best->entry.value("speedup", 0.0)))
      best = &c;
  }
  if (best)
    p.best =
        SweepBest{best->params, best->entry.value("speedup", 0.0), best->entry.value("median_ms", 0.0), best->entry};
  return p;
}

SweepSummary SweepRun::Summary() const {
  SweepSummary summary;
  summary.out = out_;
  summary.configs = configs_.size();
  summary.stopped = stopped_;
  std::vector<const Config*> passed;
  for (const auto& c : configs_) {
    std::string s = c.entry.value("status", "not_run");
    if (options_.compile_only && s == "not_run" && c.entry.contains("object_sha")) s = "compiled";
    ++summary.by_status[s];
    if (s == "passed") passed.push_back(&c);
  }
  std::sort(passed.begin(), passed.end(), [](const Config* x, const Config* y) {
    return x->entry.value("speedup", 0.0) > y->entry.value("speedup", 0.0);
  });
  summary.complete = summary.by_status["not_run"] == 0 || options_.compile_only;
  if (summary.by_status["not_run"] == 0) summary.by_status.erase("not_run");
  for (size_t i = 0; i < passed.size() && i < 10; ++i)
    summary.best.push_back(SweepBest{passed[i]->params, passed[i]->entry.value("speedup", 0.0),
                                     passed[i]->entry.value("median_ms", 0.0), passed[i]->entry});
  return summary;
}

}  // namespace kpilot
