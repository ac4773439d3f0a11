// Names of the bottleneck classes and the JSON form of a finding.
#include "profile/profile.h"

#include <algorithm>
#include <cctype>

namespace kpilot {

std::string_view BottleneckName(Bottleneck b) {
  switch (b) {
    case Bottleneck::kCompute:
      return "compute-bound";
    case Bottleneck::kMemory:
      return "memory-bound";
    case Bottleneck::kLatency:
      return "latency-bound";
    case Bottleneck::kLaunch:
      return "launch-bound";
    case Bottleneck::kMixed:
      return "mixed";
    case Bottleneck::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<Bottleneck> ParseBottleneck(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (!std::isspace(static_cast<unsigned char>(c)))
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::replace(s.begin(), s.end(), '_', '-');
  if (s.ends_with("-bound")) s.resize(s.size() - 6);
  if (s == "compute") return Bottleneck::kCompute;
  if (s == "memory") return Bottleneck::kMemory;
  if (s == "latency") return Bottleneck::kLatency;
  if (s == "launch") return Bottleneck::kLaunch;
  if (s == "mixed") return Bottleneck::kMixed;
  if (s == "unknown") return Bottleneck::kUnknown;
  return std::nullopt;
}

Finding FindingFromJson(const nlohmann::json& j) {
  Finding f;
  if (!j.is_object()) return f;
  f.id = j.value("id", "");
  f.tool = j.value("tool", "");
  f.severity = j.value("severity", 0.0);
  f.evidence = j.value("evidence", nlohmann::json::object());
  f.guidance = j.value("guidance", "");
  f.skills = j.value("skills", std::vector<std::string>{});
  return f;
}

nlohmann::json ToJson(const Finding& f) {
  return nlohmann::json{{"id", f.id},
                        {"tool", f.tool},
                        {"severity", f.severity},
                        {"evidence", f.evidence},
                        {"guidance", f.guidance},
                        {"skills", f.skills}};
}

}  // namespace kpilot
