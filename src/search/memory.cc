#include "search/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace kpilot {

namespace {

// Caps that keep each section useful to a generator without crowding out the others.
constexpr size_t kTriedEntries = 12;
constexpr size_t kBestEntries = 5;
constexpr size_t kFailureGroups = 6;
constexpr size_t kRegressionEntries = 5;
constexpr size_t kSummaryBytes = 160;
constexpr size_t kReasonBytes = 120;

// One line of text, at most `max_bytes` bytes, never cut inside a UTF-8 character.
std::string Clip(const std::string& s, size_t max_bytes) {
  std::string flat;
  flat.reserve(s.size());
  for (char c : s) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space) {
      if (!flat.empty() && flat.back() != ' ') flat.push_back(' ');
    } else {
      flat.push_back(c);
    }
  }
  while (!flat.empty() && flat.back() == ' ') flat.pop_back();
  if (flat.size() <= max_bytes) return flat;
  static const std::string kEllipsis = "…";
  if (max_bytes < kEllipsis.size()) return "";
  size_t cut = max_bytes - kEllipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(flat[cut]) & 0xC0) == 0x80) --cut;
  return flat.substr(0, cut) + kEllipsis;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string Percent(double delta) { return fmt::format("{:+.0f}%", delta * 100); }

std::string Tag(const Attempt& a) { return a.finding.empty() ? "" : " [" + a.finding + "]"; }

bool Passed(const Attempt& a) { return a.verdict == "passed"; }

std::string Describe(const Attempt& a) {
  if (Passed(a)) {
    std::string s = fmt::format("#{} passed {:.2f}x", a.node, a.speedup);
    if (a.parent >= 0) s += fmt::format(" ({} vs #{})", Percent(a.delta), a.parent);
    return s + Tag(a) + ": " + Clip(a.summary, kSummaryBytes);
  }
  std::string s = fmt::format("#{} {}", a.node, a.verdict) + Tag(a) + ": " + Clip(a.summary, kSummaryBytes);
  if (!a.failure.empty()) s += " — " + Clip(FirstLine(a.failure), kReasonBytes);
  return s;
}

struct Line {
  std::string text;
  bool header = false;
};

}  // namespace

void SearchMemory::Record(const Attempt& a) { attempts_.push_back(a); }

std::string SearchMemory::Summary(int64_t parent, size_t max_chars) const {
  std::vector<Line> lines;
  auto header = [&](std::string text) { lines.push_back({std::move(text), true}); };
  auto note = [&](std::string text) { lines.push_back({std::move(text), false}); };
  auto entry = [&](std::string text) { lines.push_back({"- " + std::move(text), false}); };

  // Plateau: how many attempts since the best last improved.
  int64_t last_gain = -1;
  int64_t best_at = -1;
  for (size_t i = 0; i < attempts_.size(); ++i) {
    const Attempt& a = attempts_[i];
    if (Passed(a) && (best_at < 0 || a.speedup > attempts_[best_at].speedup)) {
      best_at = static_cast<int64_t>(i);
      last_gain = best_at;
    }
  }
  const int64_t stale = static_cast<int64_t>(attempts_.size()) - 1 - last_gain;
  if (stale >= kPlateauAttempts) {
    if (best_at < 0) {
      note(fmt::format("Plateau: none of the {} attempts so far passed; fix correctness first.", stale));
    } else {
      const Attempt& b = attempts_[best_at];
      note(
          fmt::format("Plateau: the last {} attempts did not beat the best ({:.2f}x, #{}); try a different "
                      "direction.",
                      stale, b.speedup, b.node));
    }
  }

  std::vector<const Attempt*> tried;
  for (auto it = attempts_.rbegin(); it != attempts_.rend(); ++it)
    if (it->parent == parent) tried.push_back(&*it);
  if (!tried.empty()) {
    header(fmt::format("Tried from #{} ({} attempts):", parent, tried.size()));
    for (size_t i = 0; i < tried.size() && i < kTriedEntries; ++i) entry(Describe(*tried[i]));
  }

  std::vector<const Attempt*> passed;
  for (const Attempt& a : attempts_)
    if (Passed(a)) passed.push_back(&a);
  std::stable_sort(passed.begin(), passed.end(),
                   [](const Attempt* a, const Attempt* b) { return a->speedup > b->speedup; });
  if (!passed.empty()) {
    header("Best results:");
    for (size_t i = 0; i < passed.size() && i < kBestEntries; ++i) entry(Describe(*passed[i]));
  }

  struct Group {
    size_t first = 0;
    int count = 0;
    const Attempt* latest = nullptr;
  };
  std::map<std::string, Group> groups;  // ordered: the text never depends on hashing
  for (size_t i = 0; i < attempts_.size(); ++i) {
    const Attempt& a = attempts_[i];
    if (Passed(a)) continue;
    const std::string reason = Clip(FirstLine(a.failure), kReasonBytes);
    auto [it, fresh] = groups.try_emplace(a.verdict + (reason.empty() ? "" : ": " + reason));
    if (fresh) it->second.first = i;
    it->second.count += 1;
    it->second.latest = &a;
  }
  if (!groups.empty()) {
    std::vector<std::pair<const std::string*, const Group*>> order;
    for (const auto& [key, g] : groups) order.emplace_back(&key, &g);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      if (a.second->count != b.second->count) return a.second->count > b.second->count;
      return a.second->first < b.second->first;
    });
    header("Failures by reason:");
    for (size_t i = 0; i < order.size() && i < kFailureGroups; ++i) {
      const Group& g = *order[i].second;
      entry(fmt::format("{} (x{}, latest #{}: {})", *order[i].first, g.count, g.latest->node,
                        Clip(g.latest->summary, kSummaryBytes)));
    }
  }

  std::vector<const Attempt*> regressed;
  for (auto it = attempts_.rbegin(); it != attempts_.rend(); ++it)
    if (Passed(*it) && it->parent >= 0 && it->delta < 0) regressed.push_back(&*it);
  if (!regressed.empty()) {
    header("Regressions:");
    for (size_t i = 0; i < regressed.size() && i < kRegressionEntries; ++i) entry(Describe(*regressed[i]));
  }

  // Whole lines until the budget runs out; a header whose entries did not fit goes too.
  std::string out;
  size_t kept = 0;
  for (; kept < lines.size(); ++kept) {
    const size_t need = lines[kept].text.size() + (out.empty() ? 0 : 1);
    if (out.size() + need > max_chars) break;
    if (!out.empty()) out += '\n';
    out += lines[kept].text;
  }
  if (kept == 0 && !lines.empty()) return Clip(lines[0].text, max_chars);
  if (kept > 0 && kept < lines.size() && lines[kept - 1].header) {
    const size_t drop = lines[kept - 1].text.size() + (kept > 1 ? 1 : 0);
    out.resize(out.size() - drop);
  }
  return out;
}

}  // namespace kpilot
