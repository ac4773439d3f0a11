// Usage statistics of cards and micro-profiling tools: rows in the store, aggregated here.
#include <algorithm>
#include <cmath>

#include "skills/skills.h"

namespace kpilot {
namespace {

class StoreLog final : public UsageLog {
 public:
  explicit StoreLog(Store& store) : store_(store) {}
  Status Append(const std::vector<SkillUsageRecord>& rows) override { return store_.AddSkillUsage(rows); }
  Result<std::vector<SkillUsageRecord>> List() override { return store_.ListSkillUsage(); }

 private:
  Store& store_;
};

// One row per name in offered ∪ applied, in first-seen order.
void AddRows(const char* kind, const std::vector<std::string>& offered, const std::vector<std::string>& applied,
             const UsageEvent& e, std::vector<SkillUsageRecord>* rows) {
  std::vector<std::string> names;
  for (const auto* list : {&offered, &applied})
    for (const auto& n : *list)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  for (const auto& n : names) {
    SkillUsageRecord r;
    r.run_id = e.run_id;
    r.node = e.node;
    r.kind = kind;
    r.name = n;
    r.fired = std::find(offered.begin(), offered.end(), n) != offered.end();
    r.applied = std::find(applied.begin(), applied.end(), n) != applied.end();
    r.speedup = e.speedup.value_or(0);
    rows->push_back(std::move(r));
  }
}

}  // namespace

std::unique_ptr<UsageLog> StoreUsageLog(Store& store) { return std::make_unique<StoreLog>(store); }

Status RecordUsage(UsageLog& log, const UsageEvent& e) {
  if (e.speedup && (!std::isfinite(*e.speedup) || *e.speedup <= 0))
    return Status::InvalidInput("skill usage: speedup must be a finite number > 0 (nullopt when not measured), got " +
                                std::to_string(*e.speedup));
  for (const auto* list : {&e.cards_offered, &e.cards_applied, &e.findings_fired, &e.findings_applied})
    for (const auto& n : *list)
      if (n.empty()) return Status::InvalidInput("skill usage: an empty card or finding id");
  std::vector<SkillUsageRecord> rows;
  AddRows("card", e.cards_offered, e.cards_applied, e, &rows);
  AddRows("tool", e.findings_fired, e.findings_applied, e, &rows);
  return log.Append(rows);
}

std::vector<UsageStats> SummarizeUsage(const std::vector<SkillUsageRecord>& rows, double improved_factor) {
  std::map<std::pair<int, std::string>, UsageStats> by_name;  // cards (0) before tools (1)
  std::map<std::pair<int, std::string>, double> log_sum;
  for (const auto& r : rows) {
    auto key = std::make_pair(r.kind == "card" ? 0 : 1, r.name);
    UsageStats& s = by_name[key];
    s.kind = r.kind;
    s.name = r.name;
    s.fired += r.fired;
    if (!r.applied) continue;
    ++s.applied;
    if (r.speedup <= 0) continue;
    ++s.measured;
    s.improved += r.speedup > improved_factor;
    log_sum[key] += std::log(r.speedup);
  }
  std::vector<UsageStats> out;
  for (auto& [key, s] : by_name) {
    if (s.measured) s.mean_gain = std::exp(log_sum[key] / static_cast<double>(s.measured));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<UsageStats>> ReadUsageStats(UsageLog& log, double improved_factor) {
  if (!(improved_factor > 0) || !std::isfinite(improved_factor))
    return Status::InvalidInput("improved factor must be a finite number > 0, got " + std::to_string(improved_factor));
  auto rows = log.List();
  if (!rows.ok()) return rows.status();
  return SummarizeUsage(*rows, improved_factor);
}

}  // namespace kpilot
