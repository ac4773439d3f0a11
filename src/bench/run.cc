// Running a suite: the bench's record in the store, and one worker thread per device.
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/bench.h"
#include "core/text.h"

namespace kpilot {

using nlohmann::json;

double SecondsLeft(double elapsed_s, int done, int left) { return done > 0 && left > 0 ? elapsed_s / done * left : 0; }

Result<int64_t> CreateBench(Store& store, const Suite& suite, const json& config) {
  RunRecord r;
  r.task_name = std::string(kBenchTaskPrefix) + suite.name;
  r.task_dir = suite.root.string();
  r.config_json = json{{"bench", config}}.dump();
  r.status = "running";
  return store.CreateRun(r);
}

Result<BenchState> LoadBench(Store& store, int64_t id) {
  auto run = store.GetRun(id);
  if (!run.ok()) return run.status();
  if (!run->has_value())
    return Status::NotFound("bench " + std::to_string(id) + " is not in store " + store.dir().string());
  json config = json::parse((*run)->config_json, nullptr, false);
  if ((*run)->task_name.rfind(kBenchTaskPrefix, 0) != 0 || !config.is_object() || !config.contains("bench"))
    return Status::InvalidInput("run " + std::to_string(id) +
                                " is an optimization run, not a bench — continue it with "
                                "kpilot optimize --resume " +
                                std::to_string(id));
  BenchState s;
  s.id = id;
  s.status = (*run)->status;
  s.config = config["bench"];
  auto events = store.ListRunEvents(id);
  if (!events.ok()) return events.status();
  std::map<std::string, int64_t> runs;  // problem → its optimizer run
  std::set<std::string> started, done;
  for (const auto& e : *events) {
    json p = json::parse(e.payload_json, nullptr, false);
    if (!p.is_object()) continue;
    std::string problem = p.value("problem", "");
    if (e.kind == "slice") ++s.slices;
    if (e.kind == "problem_start") started.insert(problem);
    if (e.kind == "problem_run") runs[problem] = p.value("run", int64_t{0});
    if (e.kind == "problem") {
      auto r = ProblemResultFromJson(p.value("result", json::object()));
      if (!r.ok()) return r.status().WithContext("bench " + std::to_string(id));
      done.insert(r->id);
      s.finished.push_back(std::move(r).value());
    }
  }
  for (const auto& problem : started)
    if (!done.count(problem)) s.interrupted.push_back({problem, runs.count(problem) ? runs[problem] : 0});
  return s;
}

Result<std::vector<ProblemResult>> RunBench(Store& store, int64_t id, const std::vector<BenchProblem>& problems,
                                            ProblemRunner& runner, const std::vector<int>& devices,
                                            BenchProgress& progress, Clock& clock) {
  auto state = LoadBench(store, id);
  if (!state.ok()) return state.status();
  std::map<std::string, ProblemResult> results;
  for (auto& r : state->finished) results[r.id] = r;
  std::map<std::string, int64_t> resume_runs(state->interrupted.begin(), state->interrupted.end());
  std::vector<const BenchProblem*> todo;
  for (const auto& p : problems)
    if (!results.count(p.id)) todo.push_back(&p);

  std::mutex mu;  // guards next, done, results, first_error and the progress sink
  size_t next = 0;
  int done = static_cast<int>(problems.size() - todo.size());
  const int total = static_cast<int>(problems.size());
  Status first_error = Status::Ok();
  auto record = [&](const std::string& kind, const json& payload) {
    auto seq = store.AddRunEvent(id, kind, payload.dump());
    std::lock_guard<std::mutex> lock(mu);
    if (!seq.ok() && first_error.ok()) first_error = seq.status();
  };
  const Clock::TimePoint slice_start = clock.Now();
  const int slice = state->slices + 1;
  if (!todo.empty())
    record("slice",
           {{"slice", slice}, {"problems", todo.size()}, {"in_flight", devices.empty() ? size_t{1} : devices.size()}});
  auto seconds_since = [&](Clock::TimePoint t) { return std::chrono::duration<double>(clock.Now() - t).count(); };
  std::vector<int> slots = devices.empty() ? std::vector<int>{-1} : devices;
  std::map<int, int> sharing;  // device → problems in flight on it at once
  for (int d : slots) ++sharing[d];
  // A problem that fails while others share its GPU may have failed of the sharing (the memory the
  // others held): one that could not be run, or whose run ran out of the GPU's memory, runs again
  // alone once the rest are done, and only that result is recorded.
  struct Again {
    const BenchProblem* problem;
    int device;
    std::string why;
  };
  std::vector<Again> again;
  auto solve = [&](const BenchProblem& p, int device) {
    record("problem_start", {{"problem", p.id}, {"device", device}});
    int64_t resume = resume_runs.count(p.id) ? resume_runs.at(p.id) : 0;
    const Clock::TimePoint t0 = clock.Now();
    ProblemResult r = runner.Run(p, device, resume, [&](int64_t run) {
      if (run != resume) record("problem_run", {{"problem", p.id}, {"run", run}});
    });
    r.id = p.id;
    r.level = p.level;
    if (r.wall_s <= 0) r.wall_s = seconds_since(t0);
    return r;
  };
  auto finish = [&](const BenchProblem& p, ProblemResult r) {
    r.slice = slice;
    r.finished_at_s = seconds_since(slice_start);
    record("problem", {{"problem", p.id}, {"result", ToJson(r)}});
    std::lock_guard<std::mutex> lock(mu);
    results[p.id] = r;
    progress.Finished(r, ++done, total);
  };
  auto work = [&](int device) {
    for (;;) {
      const BenchProblem* p = nullptr;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= todo.size() || !first_error.ok()) return;
        p = todo[next++];
        progress.Started(*p, device);
      }
      ProblemResult r = solve(*p, device);
      if ((!r.error.empty() || r.out_of_memory) && sharing[device] > 1) {
        std::lock_guard<std::mutex> lock(mu);
        again.push_back({p, device, !r.error.empty() ? r.error : r.message});
        continue;
      }
      finish(*p, std::move(r));
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < slots.size(); ++i) threads.emplace_back(work, slots[i]);
  work(slots.front());
  for (auto& t : threads) t.join();
  for (const Again& a : again) {
    if (!first_error.ok()) break;
    progress.Started(*a.problem, a.device);
    ProblemResult r = solve(*a.problem, a.device);
    r.warnings.push_back(fmt::format("ran again alone on its GPU: it failed while {} problems shared the GPU ({})",
                                     sharing[a.device], Gist(a.why, 300)));
    finish(*a.problem, std::move(r));
  }
  if (!first_error.ok()) return first_error.WithContext("recording bench " + std::to_string(id));

  // This selection's results in its order, then those earlier slices finished (a bench run one
  // level at a time reports every level at the end).
  std::vector<ProblemResult> out;
  size_t selected = 0;
  for (const auto& p : problems)
    if (results.count(p.id)) {
      out.push_back(results.at(p.id));
      results.erase(p.id);
      ++selected;
    }
  for (const auto& r : state->finished)
    if (results.count(r.id)) {
      out.push_back(results.at(r.id));
      results.erase(r.id);
    }
  auto run = store.GetRun(id);
  if (run.ok() && run->has_value()) {
    RunRecord rec = **run;
    rec.status = selected == problems.size() ? "finished" : "running";
    rec.stop_reason = std::to_string(out.size()) + " problems finished";
    rec.best_speedup = GeomeanSpeedup(out, Baseline::kEager);
    KPILOT_RETURN_IF_ERROR(store.UpdateRun(rec));
  }
  return out;
}

}  // namespace kpilot
