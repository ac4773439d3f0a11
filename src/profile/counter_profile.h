// What a counter profile of one candidate is asked for and what it gives: the types an executor
// job carries (exec/executor.h) without the collection itself (profile/collect.h), so that
// code which submits counter jobs needs only the profile module's pure half.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/profiler.h"

namespace kpilot {

struct CounterProfileOptions {
  std::string profiler = "auto";  // auto (CUPTI, else ncu) | cupti | ncu
  std::string ncu_path;           // "" = no ncu on this machine
  std::string ncu_set;            // ncu collects this section set (e.g. "full") instead of the tools' metrics
  std::string replay = "user";    // how CUPTI repeats multi-pass metrics: user (call again) | kernel
  bool all_tools = false;         // every tool, not only those for the stage-1 class
  int sm_count = 0;               // the device's; 0 = from the evaluation's runner report
  int block = 256;                // occupancy's block size for a kernel the launch trace does not show
};

// What one counter profile gave.
struct CounterProfile {
  std::vector<KernelReport> reports;         // one per kernel of the candidate, findings ranked
  Bottleneck stage1 = Bottleneck::kUnknown;  // the class the counters were chosen for
  std::string profiler;                      // "cupti" | "ncu"
  std::string version;                       // ncu version or CUPTI chip
  std::string fallback_note;                 // why ncu replaced CUPTI under "auto" ("" = it did not)
  std::string raw;                           // ncu's CSV, or the counters as JSON
  double wall_s = 0;                         // the profiler's own process
  double time_ms = 0;                        // the candidate's median (stage 1's time)
  nlohmann::json info = nlohmann::json::object();
};

}  // namespace kpilot
