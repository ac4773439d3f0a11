// The cuda backend's profile-only requests (ProfileCandidate): the candidate alone, once per
// workload, under CUPTI's in-process counters when the request names any (in as many passes as
// CUPTI schedules), else once for an outside profiler (ncu).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runner/worker_cuda.h"

namespace kpilot {

void CudaWorker::ProfileCandidate() {
  // Inputs first: the runner's own generator kernels must not be profiled.
  struct Prepared {
    const RunWorkload* w;
    DeviceTensors in, out;
  };
  std::vector<Prepared> calls;
  for (const auto& w : req_.workloads) {
    auto in = MakeInputs(w, req_.seeds.empty() ? 1 : req_.seeds.front());
    auto out = MakeOutputs(w, false);
    if (!in.ok() || !out.ok()) {
      Finish("error", "allocating profiling buffers failed");
      return;
    }
    calls.push_back({&w, std::move(in).value(), std::move(out).value()});
  }
  cudaDeviceSynchronize();
  Stamp("inputs");
  // In-process counters: one session over every call (one range per kernel launch, in order).
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::unique_ptr<CuptiCounterSession> counters;
  nlohmann::json info = nlohmann::json::object();
  size_t max_ranges = 0;
  if (!req_.counters.empty()) {
    auto t0 = Clock::now();
    max_ranges = req_.counters_max_ranges > 0
                     ? std::min(kMaxCounterRanges, static_cast<size_t>(req_.counters_max_ranges))
                     : kMaxCounterRanges;
    CounterReplay replay = req_.counters_replay == "kernel" ? CounterReplay::kKernel : CounterReplay::kUser;
    auto session = CuptiCounterSession::Create(dev_.ordinal, req_.counters, max_ranges, replay);
    info["setup_s"] = seconds(t0);
    info["max_ranges"] = max_ranges;
    info["replay"] = req_.counters_replay;
    Stamp("counters_setup");
    if (!session.ok()) {
      result_.details["counters_error"] = session.status().message();
      result_.details["counters_setup_failed"] = true;  // the machine's CUPTI, not this candidate
    } else {
      counters = std::move(session).value();
      info.update(
          {{"chip", counters->chip()}, {"passes", counters->passes()}, {"unsupported", counters->unsupported()}});
      nlohmann::json steps = nlohmann::json::object();
      for (const auto& [step, s] : counters->setup_steps()) steps[step] = s;
      info["setup_steps_s"] = steps;
    }
  }
  // One pass: every workload's call once. Without counters it runs once, for an outside profiler.
  auto call_all = [&]() -> bool {
    for (auto& c : calls) {
      report_.Phase("profile", "workload " + c.w->name);
      std::string error;
      Call(candidate_->launch(), c.in, c.out, Scalars(*c.w), &error);
      if (!error.empty()) return Finish("runtime_error", "the candidate failed under the profiler: " + error);
    }
    return true;
  };
  auto t_calls = Clock::now();
  if (!counters) {
    if (!call_all()) return;
  } else {
    // User replay needs as many passes as CUPTI scheduled; a few more are allowed before giving up
    // (a call whose launches change between passes never completes the schedule).
    const size_t max_passes = counters->passes() + 2;
    size_t pass = 0;
    bool done = false;
    std::string error;
    while (!done && error.empty()) {
      const std::string which = " (pass " + std::to_string(pass + 1) + " of " + std::to_string(counters->passes()) +
                                " scheduled, " + std::to_string(calls.size()) + " call(s) of " +
                                std::to_string(max_ranges) + " range(s) at most)";
      if (Status s = counters->Start(); !s.ok()) {
        error = s.message() + which;
        break;
      }
      if (!call_all()) return;
      auto end = counters->EndPass();
      if (!end.ok())
        error = end.status().message() + which;
      else
        done = *end;
      if (++pass >= max_passes && !done && error.empty())
        error = "CUPTI wanted more than " + std::to_string(max_passes) +
                " passes: the candidate's calls do not launch the same kernels each time";
    }
    info["passes_run"] = pass;
    info["calls_s"] = seconds(t_calls);
    Stamp("calls");
    if (!error.empty()) {
      result_.details["counters_error"] = error;
    } else {
      auto t0 = Clock::now();
      auto ranges = counters->Results();
      info["decode_s"] = seconds(t0);
      Stamp("decode");
      if (!ranges.ok()) {
        result_.details["counters_error"] = ranges.status().message();
      } else {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : *ranges) {
          nlohmann::json m = nlohmann::json::object();
          for (const auto& [k, v] : r.metrics) m[k] = JsonNumber(v);
          list.push_back({{"range", r.range}, {"metrics", m}});
        }
        result_.details["counters"] = list;
        info["dropped_ranges"] = counters->dropped_ranges();
      }
    }
  }
  if (!req_.counters.empty()) result_.details["counters_info"] = info;
  Finish("passed", "profiled (the candidate was called once per workload; nothing was checked)");
}

}  // namespace kpilot
