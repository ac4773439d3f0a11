// The search tree over evaluated candidates and the policies that choose what to expand.
//
// A node is one evaluated candidate. Its reward is log(speedup over the baseline); a failed
// candidate (any verdict but passed) gets `failure_reward`. Values are backed up to the root
// (count, sum and max of rewards in the subtree) for UCT. Pure logic: no I/O, no clocks; the caller
// supplies the random engine, so a seed reproduces a run.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kpilot {

enum class Policy { kMcts, kGreedy, kBeam, kRandom };
// "mcts", "greedy", "beam", "random"; ParsePolicy takes exactly these names (nullopt otherwise).
std::string_view PolicyName(Policy p);
std::optional<Policy> ParsePolicy(std::string_view name);

// The constants. Defaults were tuned on synthetic landscapes (tests/search/landscape_test.cc);
// the evidence for each is in docs/search.md.
struct SearchConfig {
  Policy policy = Policy::kMcts;
  double exploration = 0.1;      // UCT c on log-speedup rewards (rewards span ~[-2.3, 2]);
                                 // 0.7 made UCT near-uniform over siblings. For generators
                                 // whose drafts stay near their parent (llm:, command:, the
                                 // landscape tests' steps); the params generator uses
                                 // kGlobalDraftsExploration.
  double max_weight = 0.75;      // UCT value: (1 − w)·mean + w·max reward of the subtree; mean
                                 // alone lets failures and regressing siblings bury a subtree
  double widen_c = 1.0;          // progressive widening: a node may have ⌈widen_c · N^widen_alpha⌉ children
  double widen_alpha = 0.25;     // (N = evaluations in its subtree): ~3 children at N=60
  double asymmetry = 1.0;        // better-than-parent nodes get (1 + asymmetry·max(0, gain)) × the limit
  double failure_reward = -2.3;  // log(0.1): a failure counts like a 10× slowdown
  int prune_window = 4;          // a node whose last m children all failed or regressed is closed (0: off)
  double regress_margin = 0.0;   // a child "regressed" when its reward ≤ parent's + margin
  int beam_width = 4;            // beam: expand among the best `beam_width` open nodes
};

// Sets one constant of `c` by its field name above and a decimal value ("widen_alpha", "0.5"), as
// `kpilot optimize --search NAME=VALUE` gives it. Returns "" when set, else what is wrong: an
// unknown name (the known ones listed) or a value that is not a number in the constant's range.
std::string SetSearchConstant(std::string_view name, std::string_view value, SearchConfig* c);

// The UCT exploration constant for a generator whose drafts are ranked over the whole space by a
// model (the params generator: restarts, crossovers and jumps join each parent's own moves), so a
// child need not be near its parent and the tree's job is to spread the parents. Measured on the
// tuning spaces (synthetic s1–s6, gemm_bf16, row_softmax; docs/search.md): 0.2–0.3 beat 0.1 there.
inline constexpr double kGlobalDraftsExploration = 0.3;

struct Outcome {
  bool passed = false;
  double speedup = 0;   // over the task's baseline (passed only)
  std::string summary;  // "what changed and why"
  std::string finding;  // the finding id it targeted ("" = none)
};

struct Node {
  int64_t id = 0;
  int64_t parent = -1;  // -1 for the root
  int depth = 0;
  Outcome outcome;
  double reward = 0;      // log(speedup), never below failure_reward; failure_reward if failed
  int visits = 0;         // number of evaluations in the subtree (itself included)
  double value_sum = 0;   // sum of rewards in the subtree
  double max_reward = 0;  // the best reward in the subtree (itself included)
  std::vector<int64_t> children;
  bool closed = false;  // pruned, or its generator has nothing left to offer
  std::string closed_reason;
};

class SearchTree {
 public:
  explicit SearchTree(SearchConfig config = {});

  const SearchConfig& config() const { return config_; }
  // The starting candidate (id 0). Precondition: the tree is empty.
  int64_t AddRoot(const Outcome& root);
  // Adds an evaluated child, backs its reward up to the root, and applies dead-end pruning to
  // the parent: when its last `prune_window` children all failed or regressed (reward ≤ the
  // parent's + regress_margin) the parent is closed. The root is exempt from that rule while no
  // passed node beats it, so a long run of failures (KernelPro saw 43 before the first working
  // kernel) never ends the search. Ids are dense and increasing: a child's id > its parent's.
  // Precondition: `parent` is an id this tree returned; ChildLimit is the caller's guide (Select
  // honours it), not checked here. Returns the child's id.
  int64_t AddChild(int64_t parent, const Outcome& child);
  // Closes a node (e.g. the generator has no more distinct drafts for it). Closing twice keeps
  // the first reason. A closed node takes no children; its subtree stays reachable.
  void Close(int64_t id, const std::string& reason);

  // The node to expand next under the policy, among open nodes that have room for another child
  // (see ChildLimit); nullopt when there is none.
  //   mcts:   descend from the root by UCT — (1 − max_weight)·mean + max_weight·max reward of
  //           the child's subtree + exploration·√(ln N_parent / N_child); a child with no visits
  //           scores +∞ — stopping at the first node on the path that may still take a child
  //           (its next, not yet evaluated child is the unvisited one). Subtrees in which no node
  //           may take a child (every node closed or full) are skipped; ties go to the lowest id;
  //   greedy: the best node by reward that may take a child (ties: lowest id);
  //   beam:   uniformly among the beam_width best nodes that may take a child;
  //   random: uniformly among the nodes that may take a child.
  // Only beam and random draw from `rng` (rng() % n, the same on every platform).
  std::optional<int64_t> Select(std::mt19937_64& rng) const;

  // Progressive widening with asymmetric branching: ⌈widen_c · visits^widen_alpha ·
  // (1 + asymmetry · max(0, reward − parent reward))⌉ (the root uses its own reward as the
  // parent's); at least 1. Greedy, beam and random ignore widening (limit = INT_MAX) but respect
  // closure.
  int ChildLimit(int64_t id) const;
  // Open and fewer children than ChildLimit.
  bool MayExpand(int64_t id) const;
  // Some node in the subtree of `id` (itself included) may take a child.
  bool SubtreeOpen(int64_t id) const;

  const Node& node(int64_t id) const { return nodes_.at(static_cast<size_t>(id)); }
  size_t size() const { return nodes_.size(); }
  // The passed node with the highest reward (the root if none passed).
  int64_t Best() const;

 private:
  double Reward(const Outcome& o) const;
  void MaybePrune(int64_t id);
  std::vector<char> OpenSubtrees() const;  // SubtreeOpen for every id, in one pass
  SearchConfig config_;
  std::vector<Node> nodes_;
};

}  // namespace kpilot
