// The sweep's compile threads: every configuration not final in the space file, compiled with
// the task's toolchain and its cache; each new object queued once for evaluation (batches.cc).
#include <algorithm>
#include <atomic>

#include "core/fs.h"
#include "core/sha256.h"
#include "exec/executor.h"  // kCompileNice
#include "profile/profile.h"
#include "profile/static_profile.h"
#include "sweep/space_file.h"
#include "sweep/sweep_run.h"

namespace kpilot {

using nlohmann::json;

void SweepRun::CompileOne(Toolchain& toolchain, const CompileOptions& copts, size_t i) {
  Config& c = configs_[i];
  auto t0 = Clock::now();
  auto compiled = toolchain.Compile(options_.candidate, c.params, copts);
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
  for (const auto& p : StaticProfiles(*compiled))  // the mix: replays' static findings (docs/sweep.md)
    resources.push_back(ResourceEntry(p.resources, p.have_sass ? ToJson(p.mix) : json()));
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

std::vector<std::thread> SweepRun::StartCompiling(Toolchain& toolchain, const CompileOptions& copts, bool overlap) {
  auto todo = std::make_shared<std::vector<size_t>>();
  for (size_t i = 0; i < configs_.size(); ++i)
    if (!configs_[i].done) todo->push_back(i);
  to_compile_ = todo->size();
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int jobs = options_.jobs > 0 ? options_.jobs : std::max(1, overlap ? cores - 1 : cores);
  jobs = std::min<int>(jobs, std::max<int>(1, static_cast<int>(todo->size())));
  if (!todo->empty()) observer_->CompileStarted(todo->size(), jobs);
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
        observer_->Compiled(compiled_, to_compile_, compile_errors_, SecondsSince(start_));
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      --compilers_running_;
      cv_.notify_all();
    });
  return threads;
}

}  // namespace kpilot
