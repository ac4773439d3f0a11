// Sweeps (kpilot sweep): one runner process evaluates many candidate objects, each like a
// candidate of its own (checked on the request's seeds — kpilot sweep sends the first seed only —
// and timed against the baseline), and reports them in details["sweep"]. Shared by both backends.
//
// Each entry is the protocol's RunResult JSON of that object alone (status, message, phase,
// checks, timings with every sample, details) plus "object": its path. An object the sweep did
// not reach is {"object", "status": "not_run", "message"}. The run's own status:
//   passed        every object has an entry of its own (whatever its status)
//   runtime_error the sweep stopped early (a poisoned CUDA context, a vendor library loaded,
//                 an object whose run hit a kpilot-side error); the rest are "not_run"
//   error         as on any run: setup failed, or the first object hit a kpilot-side error
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/protocol.h"

namespace kpilot {

class SweepLog {
 public:
  explicit SweepLog(const std::vector<std::string>& objects) : objects_(objects) {}

  bool stopped() const { return !stop_status_.empty(); }

  // Object `i`'s own result.
  void Add(size_t i, const RunResult& r) {
    nlohmann::json e = ToJson(r);
    e["object"] = objects_[i];
    entries_.push_back(std::move(e));
  }
  // Ends the sweep after object `i` (its entry already added): the rest are "not_run".
  void Stop(size_t i, const std::string& why) {
    stop_status_ = i == 0 && entries_.back().value("status", "") == "error" ? "error" : "runtime_error";
    stop_message_ = "the sweep stopped after object " + std::to_string(i + 1) + " of " +
                    std::to_string(objects_.size()) + " (" + objects_[i] + "): " + why;
    for (size_t k = i + 1; k < objects_.size(); ++k)
      entries_.push_back({{"object", objects_[k]}, {"status", "not_run"}, {"message", "not run: " + stop_message_}});
  }
  // The run's result: `setup` (what Setup left: GPU, calibration, warnings) with the entries.
  RunResult Finish(RunResult setup) const {
    setup.details["sweep"] = entries_;
    setup.phase = "done";
    setup.status = stopped() ? stop_status_ : "passed";
    setup.message = stopped() ? stop_message_
                              : "swept " + std::to_string(objects_.size()) + " objects; each entry has its own status";
    return setup;
  }

 private:
  const std::vector<std::string>& objects_;
  nlohmann::json entries_ = nlohmann::json::array();
  std::string stop_status_, stop_message_;
};

}  // namespace kpilot
