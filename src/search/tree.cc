#include "search/tree.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace kpilot {

namespace {

constexpr struct {
  Policy policy;
  std::string_view name;
} kPolicyNames[] = {
    {Policy::kMcts, "mcts"},
    {Policy::kGreedy, "greedy"},
    {Policy::kBeam, "beam"},
    {Policy::kRandom, "random"},
};

// rng() % n rather than std::uniform_int_distribution, whose output differs between standard
// libraries: a seed must reproduce a run everywhere. The modulo bias over 2^64 is negligible.
size_t Draw(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

// 0.01 → "0.01", 1000 → "1000" (for messages).
std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string_view PolicyName(Policy p) {
  for (const auto& e : kPolicyNames)
    if (e.policy == p) return e.name;
  return "unknown";
}

std::optional<Policy> ParsePolicy(std::string_view name) {
  for (const auto& e : kPolicyNames)
    if (e.name == name) return e.policy;
  return std::nullopt;
}

std::string SetSearchConstant(std::string_view name, std::string_view value, SearchConfig* c) {
  struct Constant {
    std::string_view name;
    double lo, hi;  // the allowed range, both ends included
    bool integer;
    double SearchConfig::*real;
    int SearchConfig::*whole;
  };
  static const Constant kConstants[] = {
      {"exploration", 0, 100, false, &SearchConfig::exploration, nullptr},
      {"max_weight", 0, 1, false, &SearchConfig::max_weight, nullptr},
      {"widen_c", 0.01, 1000, false, &SearchConfig::widen_c, nullptr},
      {"widen_alpha", 0, 1, false, &SearchConfig::widen_alpha, nullptr},
      {"asymmetry", 0, 100, false, &SearchConfig::asymmetry, nullptr},
      {"failure_reward", -100, -0.01, false, &SearchConfig::failure_reward, nullptr},
      {"prune_window", 0, 1000, true, nullptr, &SearchConfig::prune_window},
      {"regress_margin", -1, 1, false, &SearchConfig::regress_margin, nullptr},
      {"beam_width", 1, 1000, true, nullptr, &SearchConfig::beam_width},
  };
  std::string names;
  for (const auto& k : kConstants) {
    names += (names.empty() ? "" : ", ") + std::string(k.name);
    if (k.name != name) continue;
    std::string text(value);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v);
    if (!number || v < k.lo || v > k.hi || (k.integer && v != std::floor(v)))
      return std::string(name) + "=" + text + ": expected " + (k.integer ? "a whole number" : "a number") + " from " +
             FormatNumber(k.lo) + " to " + FormatNumber(k.hi);
    if (k.integer)
      c->*k.whole = static_cast<int>(v);
    else
      c->*k.real = v;
    return "";
  }
  return "unknown search constant \"" + std::string(name) + "\" (known: " + names + ")";
}

SearchTree::SearchTree(SearchConfig config) : config_(config) {}

double SearchTree::Reward(const Outcome& o) const {
  if (!o.passed || !(o.speedup > 0)) return config_.failure_reward;
  // A candidate that passed, however slow, ranks above one that did not.
  return std::max(std::log(o.speedup), config_.failure_reward);
}

int64_t SearchTree::AddRoot(const Outcome& root) {
  assert(nodes_.empty() && "AddRoot on a tree that already has a root");
  Node n;
  n.id = 0;
  n.outcome = root;
  n.reward = Reward(root);
  n.visits = 1;
  n.value_sum = n.reward;
  n.max_reward = n.reward;
  nodes_.push_back(std::move(n));
  return 0;
}

int64_t SearchTree::AddChild(int64_t parent, const Outcome& child) {
  assert(parent >= 0 && static_cast<size_t>(parent) < nodes_.size());
  Node n;
  n.id = static_cast<int64_t>(nodes_.size());
  n.parent = parent;
  n.depth = nodes_[parent].depth + 1;
  n.outcome = child;
  n.reward = Reward(child);
  n.visits = 1;
  n.value_sum = n.reward;
  n.max_reward = n.reward;
  const int64_t id = n.id;
  const double reward = n.reward;
  nodes_.push_back(std::move(n));
  nodes_[parent].children.push_back(id);
  for (int64_t a = parent; a >= 0; a = nodes_[a].parent) {
    nodes_[a].visits += 1;
    nodes_[a].value_sum += reward;
    nodes_[a].max_reward = std::max(nodes_[a].max_reward, reward);
  }
  MaybePrune(parent);
  return id;
}

void SearchTree::Close(int64_t id, const std::string& reason) {
  Node& n = nodes_.at(static_cast<size_t>(id));
  if (n.closed) return;
  n.closed = true;
  n.closed_reason = reason;
}

void SearchTree::MaybePrune(int64_t id) {
  Node& n = nodes_[id];
  const int m = config_.prune_window;
  if (n.closed || m <= 0 || n.children.size() < static_cast<size_t>(m)) return;
  int failed = 0;
  for (size_t i = n.children.size() - m; i < n.children.size(); ++i) {
    const Node& c = nodes_[n.children[i]];
    if (!c.outcome.passed) {
      ++failed;
    } else if (c.reward > n.reward + config_.regress_margin) {
      return;  // an improvement inside the window: keep going
    }
  }
  if (id == 0) {
    // The root stays open until something beats it: the search must outlive long failure
    // streaks while it looks for its first working (or first faster) candidate.
    bool better = false;
    for (size_t i = 1; i < nodes_.size() && !better; ++i)
      better = nodes_[i].outcome.passed && nodes_[i].reward > n.reward;
    if (!better) return;
  }
  n.closed = true;
  n.closed_reason = "dead end: last " + std::to_string(m) + " children " +
                    (failed == m ? std::string("failed")
                                 : std::to_string(failed) + " failed, " + std::to_string(m - failed) + " regressed");
}

int SearchTree::ChildLimit(int64_t id) const {
  if (config_.policy != Policy::kMcts) return INT_MAX;
  const Node& n = node(id);
  const double parent_reward = n.parent >= 0 ? nodes_[n.parent].reward : n.reward;
  const double gain = std::max(0.0, n.reward - parent_reward);
  const double limit = std::ceil(config_.widen_c * std::pow(static_cast<double>(n.visits), config_.widen_alpha) *
                                 (1 + config_.asymmetry * gain));
  if (!(limit >= 1)) return 1;  // also catches NaN from odd configs
  if (limit >= static_cast<double>(INT_MAX)) return INT_MAX;
  return static_cast<int>(limit);
}

bool SearchTree::MayExpand(int64_t id) const {
  const Node& n = node(id);
  return !n.closed && n.children.size() < static_cast<size_t>(ChildLimit(id));
}

std::vector<char> SearchTree::OpenSubtrees() const {
  // Children have larger ids than their parents, so one pass from the back sees every child
  // before its parent.
  std::vector<char> open(nodes_.size(), 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (MayExpand(static_cast<int64_t>(i))) {
      open[i] = 1;
      continue;
    }
    for (int64_t c : nodes_[i].children)
      if (open[c]) {
        open[i] = 1;
        break;
      }
  }
  return open;
}

bool SearchTree::SubtreeOpen(int64_t id) const {
  assert(id >= 0 && static_cast<size_t>(id) < nodes_.size());
  return OpenSubtrees()[id] != 0;
}

std::optional<int64_t> SearchTree::Select(std::mt19937_64& rng) const {
  if (nodes_.empty()) return std::nullopt;
  if (config_.policy == Policy::kMcts) {
    const std::vector<char> open = OpenSubtrees();
    if (!open[0]) return std::nullopt;
    int64_t cur = 0;
    while (!MayExpand(cur)) {
      const Node& n = nodes_[cur];
      const double log_n = std::log(static_cast<double>(n.visits));
      int64_t best = -1;
      double best_score = -std::numeric_limits<double>::infinity();
      for (int64_t c : n.children) {  // in increasing id order: strict > keeps the lowest id
        if (!open[c]) continue;
        const Node& child = nodes_[c];
        const double score = child.visits == 0 ? std::numeric_limits<double>::infinity()
                                               : (1 - config_.max_weight) * child.value_sum / child.visits +
                                                     config_.max_weight * child.max_reward +
                                                     config_.exploration * std::sqrt(log_n / child.visits);
        if (best < 0 || score > best_score) {
          best = c;
          best_score = score;
        }
      }
      assert(best >= 0 && "an open subtree has an open child or room itself");
      cur = best;
    }
    return cur;
  }

  std::vector<int64_t> candidates;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (MayExpand(static_cast<int64_t>(i))) candidates.push_back(static_cast<int64_t>(i));
  if (candidates.empty()) return std::nullopt;
  auto better = [this](int64_t a, int64_t b) {
    if (nodes_[a].reward != nodes_[b].reward) return nodes_[a].reward > nodes_[b].reward;
    return a < b;
  };
  switch (config_.policy) {
    case Policy::kGreedy:
      return *std::min_element(candidates.begin(), candidates.end(), better);
    case Policy::kBeam: {
      const size_t width = std::min(candidates.size(), static_cast<size_t>(std::max(1, config_.beam_width)));
      std::partial_sort(candidates.begin(), candidates.begin() + width, candidates.end(), better);
      return candidates[Draw(rng, width)];
    }
    case Policy::kRandom:
      return candidates[Draw(rng, candidates.size())];
    case Policy::kMcts:
      break;
  }
  return std::nullopt;
}

int64_t SearchTree::Best() const {
  int64_t best = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.outcome.passed) continue;
    if (!nodes_[best].outcome.passed || n.reward > nodes_[best].reward) best = static_cast<int64_t>(i);
  }
  return best;
}

}  // namespace kpilot
