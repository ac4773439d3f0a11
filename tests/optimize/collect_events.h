// A progress sink for the optimize loop's tests: it keeps every event the loop reports and finds
// them by kind.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimize/optimizer.h"

namespace kpilot::testing {

class CollectEvents : public ProgressSink {
 public:
  void Event(const nlohmann::json& e) override { events.push_back(e); }
  std::vector<nlohmann::json> Of(const std::string& kind) const {
    std::vector<nlohmann::json> out;
    for (const auto& e : events)
      if (e.value("event", "") == kind) out.push_back(e);
    return out;
  }
  int Count(const std::string& kind) const { return static_cast<int>(Of(kind).size()); }
  std::vector<nlohmann::json> events;
};

}  // namespace kpilot::testing
