// A task's tunable space as the params generator walks it: the declared params in their declared
// value order, the constraints (memoized), and the seeded draws every move uses. Shared by the
// finding-driven moves (params_generator.cc) and the model-ranked exploration (param_moves.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"
#include "task/task.h"

namespace kpilot {

class ParamSpace {
 public:
  // Borrows `task`, which must outlive the space.
  explicit ParamSpace(const Task& task) : task_(task) {}

  const std::vector<TunableParam>& params() const { return task_.params; }

  // Position of cfg's value of param i in its declared list, or −1 (unset or undeclared value).
  int IndexOf(size_t i, const ParamValues& cfg) const;

  // cfg's position along every param in [0, 1] (index / (count − 1); 0 for a one-value param),
  // the coordinates the surrogate model works in. Empty when some value is not declared.
  std::vector<double> Coordinates(const ParamValues& cfg) const;

  // Whether the constraints hold (memoized). An evaluation error counts as not holding and is
  // kept in status().
  bool Valid(const ParamValues& cfg);
  const Status& status() const { return status_; }

  // Valid configurations in odometer order (last param fastest) that `keep` accepts, at most cap.
  template <typename Keep>
  std::vector<ParamValues> Enumerate(size_t cap, Keep keep) {
    std::vector<ParamValues> out;
    const auto& ps = params();
    for (const auto& p : ps)
      if (p.values.empty()) return out;
    std::vector<size_t> idx(ps.size(), 0);
    while (out.size() < cap) {
      ParamValues cfg;
      for (size_t i = 0; i < ps.size(); ++i) cfg[ps[i].name] = ps[i].values[idx[i]];
      if (Valid(cfg) && keep(cfg)) out.push_back(std::move(cfg));
      size_t i = ps.size();
      while (i > 0 && ++idx[i - 1] == ps[i - 1].values.size()) idx[--i] = 0;
      if (i == 0) break;
    }
    return out;
  }

 private:
  const Task& task_;
  std::map<ParamValues, bool> memo_;
  Status status_;
};

// A uniform integer in [0, n) from the engine's raw output (std distributions differ between
// standard libraries; this keeps a seed's drafts the same everywhere). Precondition: n > 0.
uint64_t Below(std::mt19937_64& rng, uint64_t n);
// A uniform double in [0, 1), likewise portable.
double Unit(std::mt19937_64& rng);

// "A=1, B=2" in name order; "(no params)" when empty.
std::string RenderParams(const ParamValues& cfg);

}  // namespace kpilot
