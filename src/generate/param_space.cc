#include "generate/param_space.h"

#include <algorithm>

#include "task/formula.h"

namespace kpilot {

int ParamSpace::IndexOf(size_t i, const ParamValues& cfg) const {
  const TunableParam& p = task_.params[i];
  auto it = cfg.find(p.name);
  if (it == cfg.end()) return -1;
  auto at = std::find(p.values.begin(), p.values.end(), it->second);
  return at == p.values.end() ? -1 : static_cast<int>(at - p.values.begin());
}

std::vector<double> ParamSpace::Coordinates(const ParamValues& cfg) const {
  std::vector<double> x;
  x.reserve(task_.params.size());
  for (size_t i = 0; i < task_.params.size(); ++i) {
    const int at = IndexOf(i, cfg);
    if (at < 0) return {};
    const size_t n = task_.params[i].values.size();
    x.push_back(n > 1 ? static_cast<double>(at) / static_cast<double>(n - 1) : 0.0);
  }
  return x;
}

bool ParamSpace::Valid(const ParamValues& cfg) {
  if (task_.constraints.empty()) return true;
  auto it = memo_.find(cfg);
  if (it != memo_.end()) return it->second;
  auto holds = ConstraintsHold(task_.constraints, cfg);
  if (!holds.ok() && status_.ok()) status_ = holds.status();
  bool valid = holds.ok() && *holds;
  memo_.emplace(cfg, valid);
  return valid;
}

uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

double Unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string RenderParams(const ParamValues& cfg) {
  std::string out;
  for (const auto& [name, value] : cfg) out += (out.empty() ? "" : ", ") + name + "=" + value;
  return out.empty() ? "(no params)" : out;
}

}  // namespace kpilot
