// The params generator: one Propose call's planning (the findings' or the cards' moves, then
// exploration) and the generator around it. The findings' rules are in finding_rules.cc.
#include "generate/params_generator.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "generate/finding_rules.h"
#include "generate/param_moves.h"
#include "generate/param_space.h"
#include "task/formula.h"

namespace kpilot {
namespace {

using generate::ContainsNoCase;
using generate::kComputeBoundMove;
using generate::MatchRule;
using generate::Measured;
using generate::Move;
using generate::Rule;

// The whole space is handed to the model when it has at most this many valid configs and the
// product of the value lists (what enumerating walks) is at most kWholeSpaceProduct.
constexpr size_t kWholeSpaceMax = 20000;
constexpr size_t kWholeSpaceProduct = size_t{1} << 18;
// Configs anticipated per node (Generator::Anticipate): every one-param change of the examples'
// nodes (row_softmax at most 14, transpose and vector_add 8, sgemm 6). A longer list would
// mostly compile after the next good node's guesses, which go first.
constexpr size_t kMaxAnticipated = 24;

// Every valid config of the task, or nullopt when the space is too large to hand to the model.
std::optional<std::vector<ParamValues>> WholeSpace(const Task& task) {
  size_t product = 1;
  for (const auto& p : task.params) {
    if (p.values.empty()) return std::nullopt;
    product *= p.values.size();
    if (product > kWholeSpaceProduct) return std::nullopt;
  }
  ParamSpace space(task);
  auto all = space.Enumerate(kWholeSpaceMax + 1, [](const ParamValues&) { return true; });
  if (all.size() > kWholeSpaceMax || !space.status().ok()) return std::nullopt;
  return all;
}

// One Propose call's state.
class Planner {
 public:
  Planner(const Task& task, const ProposalContext& ctx, const std::vector<ParamValues>* whole_space)
      : task_(task),
        ctx_(ctx),
        space_(task),
        rng_(ctx.seed),
        explore_config_(),
        whole_space_(explore_config_.rank_whole_space ? whole_space : nullptr) {
    parent_ = WithDefaults(task, ctx.parent_params);
    taken_.insert(parent_);
    for (const auto& tried : ctx.tried_params) taken_.insert(WithDefaults(task, tried));
  }

  Result<std::vector<Draft>> Run() {
    const size_t k = static_cast<size_t>(std::max(ctx_.k, 0));
    // The findings' moves take at most half the slots (k = 1: every other call, by the seed's
    // parity), so a profile whose advice keeps mapping never stops the exploration.
    const size_t targeted = (k + (ctx_.seed & 1)) / 2;
    // Where the moves come from: the skill cards offered for the parent (their matched params
    // moves); with no card offered, the built-in table below; with --skills off, nowhere.
    bool cards = false;
    for (const auto& sk : ctx_.skills) cards |= !sk.moves.empty();
    if (!ctx_.skills_enabled) {
      explore_reason_ = "skills off: no finding-steered moves";
    } else if (ctx_.profile_on_request) {
      explore_reason_ = "tools on request: the findings are not pushed to this generator";
    } else if (cards) {
      CardMoves(targeted);
    } else {
      Targeted(targeted);
      if (drafts_.empty() && ContainsNoCase(ctx_.bottleneck, "compute")) {
        ApplyMoves({kComputeBoundMove}, nullptr, targeted);
      }
    }
    if (drafts_.size() < k) Explore(k);
    if (!space_.status().ok()) return space_.status().WithContext("params generator: constraints");
    return std::move(drafts_);
  }

 private:
  void Targeted(size_t k) {
    for (const Finding& f : ctx_.findings) {
      const Rule* rule = MatchRule(f);
      if (!rule) {
        unmapped_.push_back(f.id);
        continue;
      }
      if (rule->moves.empty()) {
        if (no_fix_.empty()) no_fix_ = f.id + " says " + Measured(f) + "; params cannot fix that: " + rule->no_fix;
        continue;
      }
      mapped_ = true;
      ApplyMoves(rule->moves, &f, k);
    }
  }

  // The moves round-robin, so k slots cover different moves before a second param of one role:
  // round r steps the r-th param (declaration order) of each move's role.
  void ApplyMoves(const std::vector<Move>& moves, const Finding* f, size_t k) {
    for (size_t round = 0; drafts_.size() < k; ++round) {
      bool any = false;
      for (const Move& move : moves) {
        if (drafts_.size() >= k) return;
        any |= StepNth(move, round, f);
      }
      if (!any) return;
    }
  }

  // Steps the nth param of the move's role (its fallback's when the space has none of the role)
  // to the nearest value in the move's direction that is valid and untried, adding a draft. False
  // when the role has no nth param.
  bool StepNth(const Move& move, size_t nth, const Finding* f) {
    const auto& ps = space_.params();
    auto has = [&](ParamRole r) {
      return std::any_of(ps.begin(), ps.end(), [&](const auto& p) { return ClassifyParam(p.name) == r; });
    };
    ParamRole role = move.fallback != ParamRole::kOther && !has(move.role) ? move.fallback : move.role;
    size_t seen = 0;
    size_t i = 0;
    for (; i < ps.size(); ++i) {
      if (ClassifyParam(ps[i].name) == role && seen++ == nth) break;
    }
    if (i == ps.size()) return false;
    int at = space_.IndexOf(i, parent_);
    if (at < 0) return true;
    for (int j = at + move.dir; j >= 0 && j < static_cast<int>(ps[i].values.size()); j += move.dir) {
      ParamValues cfg = parent_;
      cfg[ps[i].name] = ps[i].values[j];
      if (taken_.count(cfg) || !space_.Valid(cfg)) continue;
      std::string because =
          f ? f->id + " says " + Measured(*f) : std::string("compute-bound and no finding maps to a param");
      Add(std::move(cfg), Step(i, at, j) + ": " + because + "; " + move.why, f ? f->id : "");
      break;
    }
    return true;
  }

  // The offered cards' matched moves, in the cards' rank order, round-robin like ApplyMoves:
  // round r steps the r-th param of a role. Each draft names its card (skills_applied).
  void CardMoves(size_t k) {
    std::vector<std::pair<const OfferedSkill*, const SkillMoveHint*>> moves;
    for (const auto& sk : ctx_.skills)
      for (const auto& h : sk.moves) moves.push_back({&sk, &h});
    mapped_ = true;
    from_cards_ = true;
    for (size_t round = 0; drafts_.size() < k; ++round) {
      bool any = false;
      for (const auto& [card, hint] : moves) {
        if (drafts_.size() >= k) return;
        any |= CardStep(*card, *hint, round);
      }
      if (!any) return;
    }
  }

  // Moves the nth param the hint names (a role, or one literal param name for nth 0) up, down or
  // to the hint's value: the nearest valid, untried value that way. False when there is no nth.
  bool CardStep(const OfferedSkill& card, const SkillMoveHint& hint, size_t nth) {
    const auto& ps = space_.params();
    size_t seen = 0, i = 0;
    for (; i < ps.size(); ++i)
      if ((ps[i].name == hint.param || ParamRoleName(ClassifyParam(ps[i].name)) == hint.param) && seen++ == nth) break;
    if (i == ps.size()) return false;
    int at = space_.IndexOf(i, parent_);
    if (at < 0) return true;
    std::vector<int> order;
    if (hint.direction == "set") {
      for (int j = 0; j < static_cast<int>(ps[i].values.size()); ++j)
        if (ps[i].values[j] == hint.value && j != at) order.push_back(j);
    } else {
      int dir = hint.direction == "down" ? -1 : +1;
      for (int j = at + dir; j >= 0 && j < static_cast<int>(ps[i].values.size()); j += dir) order.push_back(j);
    }
    for (int j : order) {
      ParamValues cfg = parent_;
      cfg[ps[i].name] = ps[i].values[j];
      if (taken_.count(cfg) || !space_.Valid(cfg)) continue;
      const Finding* f = nullptr;
      for (const Finding& x : ctx_.findings)
        if (x.id == hint.finding) f = &x;
      std::string because = f ? hint.finding + " says " + Measured(*f) : hint.reason;
      Add(std::move(cfg), Step(i, at, j) + ": card " + card.id + ", " + because + "; " + card.intent, f ? f->id : "",
          card.id);
      break;
    }
    return true;
  }

  // The slots the findings left: model-ranked moves (param_moves.h), then uniformly random
  // untried configs when those moves find nothing new.
  void Explore(size_t k) {
    std::string reason;
    if (!explore_reason_.empty()) {
      reason = explore_reason_;
    } else if (!no_fix_.empty()) {
      reason = no_fix_;
    } else if (ctx_.findings.empty()) {
      reason = "no findings to steer by";
    } else if (!mapped_) {
      reason = "no param maps to ";
      for (size_t i = 0; i < unmapped_.size(); ++i) reason += (i ? ", " : "") + unmapped_[i];
    } else {
      reason = from_cards_ ? "explore beside the cards' moves" : "explore beside the findings' moves";
    }
    std::vector<EvaluatedParams> evaluated = ctx_.evaluated;
    for (auto& e : evaluated) e.params = WithDefaults(task_, e.params);
    // Compile footprints of the parent's source, when the run has a probe (param_moves.h).
    std::optional<FootprintSource> footprints;
    if (ctx_.footprints)
      footprints = [this](const std::vector<ParamValues>& cfgs) {
        return ctx_.footprints->Probe(ctx_.parent_source, ctx_.parent_source_name, cfgs);
      };
    for (auto& d : ExploreByModel(space_, parent_, evaluated, k - drafts_.size(), rng_, taken_, explore_config_,
                                  whole_space_, footprints ? &*footprints : nullptr))
      Add(std::move(d.params), d.summary + "; " + reason, "");
    while (drafts_.size() < k) {
      auto cfg = RandomUntried(space_, taken_, rng_);
      if (!cfg) return;  // nothing untried is reachable
      std::string summary = "restart at " + RenderParams(*cfg) + ": " + reason;
      Add(std::move(*cfg), summary, "");
    }
  }

  std::string Step(size_t i, int from, int to) const {
    const TunableParam& p = space_.params()[i];
    return p.name + " " + p.values[from] + "\u2192" + p.values[to];
  }

  void Add(ParamValues cfg, std::string summary, std::string finding, std::string card = "") {
    taken_.insert(cfg);
    Draft d;
    if (!card.empty()) d.skills_applied.push_back(std::move(card));
    d.source = ctx_.parent_source;
    d.source_name = ctx_.parent_source_name;
    d.params = std::move(cfg);
    d.summary = std::move(summary);
    d.targeted_finding = std::move(finding);
    drafts_.push_back(std::move(d));
  }

  const Task& task_;
  const ProposalContext& ctx_;
  ParamSpace space_;
  std::mt19937_64 rng_;
  ExploreConfig explore_config_;
  const std::vector<ParamValues>* whole_space_;  // every valid config, or null (too many)
  ParamValues parent_;
  std::set<ParamValues> taken_;  // the parent, everything tried, every draft so far
  std::vector<Draft> drafts_;
  bool mapped_ = false;      // some finding had a rule with moves (or a card a move)
  bool from_cards_ = false;  // the moves came from the offered cards
  std::vector<std::string> unmapped_;
  std::string no_fix_;          // the first finding params cannot fix, explained
  std::string explore_reason_;  // set when no move is steered at all (--skills off)
};

class ParamsGenerator : public Generator {
 public:
  explicit ParamsGenerator(Task task) : task_(std::move(task)) {}
  std::string name() const override { return "params"; }
  std::vector<ParamValues> Anticipate(const Task& task, const ParamValues& parent) const override {
    return AnticipateParams(task, parent, kMaxAnticipated);
  }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    // The work is quick, so it is done here and the future only hands the result over: nothing
    // in `ctx` needs to outlive this call.
    const Task& task = ctx.task ? *ctx.task : task_;
    auto drafts = Planner(task, ctx, Whole(task)).Run();
    return std::async(std::launch::deferred, [r = std::move(drafts)]() mutable { return std::move(r); });
  }

 private:
  // The enumeration is done once per task (a run asks with the same task every time).
  const std::vector<ParamValues>* Whole(const Task& task) {
    if (!ExploreConfig{}.rank_whole_space) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    if (whole_for_ != &task) {
      whole_ = WholeSpace(task);
      whole_for_ = &task;
    }
    return whole_ ? &*whole_ : nullptr;
  }

  Task task_;
  std::mutex mu_;
  const Task* whole_for_ = nullptr;
  std::optional<std::vector<ParamValues>> whole_;
};

}  // namespace

ParamValues WithDefaults(const Task& task, const ParamValues& params) {
  ParamValues out;
  for (const auto& p : task.params) {
    auto it = params.find(p.name);
    if (it != params.end()) {
      out[p.name] = it->second;
    } else if (!p.values.empty()) {
      out[p.name] = p.values.front();
    }
  }
  return out;
}

std::vector<ParamValues> EnumerateSpace(const Task& task, size_t cap) {
  ParamSpace space(task);
  return space.Enumerate(cap, [](const ParamValues&) { return true; });
}

std::vector<ParamValues> AnticipateParams(const Task& task, const ParamValues& parent_params, size_t cap) {
  std::vector<ParamValues> out;
  ParamSpace space(task);
  const ParamValues parent = WithDefaults(task, parent_params);
  const auto& ps = space.params();
  std::vector<int> at(ps.size());
  size_t longest = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    at[i] = space.IndexOf(i, parent);
    longest = std::max(longest, ps[i].values.size());
  }
  for (size_t distance = 1; distance < longest && out.size() < cap; ++distance)
    for (size_t i = 0; i < ps.size() && out.size() < cap; ++i) {
      if (at[i] < 0) continue;  // a value the param does not declare: not steppable
      for (int dir : {1, -1}) {
        const int j = at[i] + dir * static_cast<int>(distance);
        if (j < 0 || j >= static_cast<int>(ps[i].values.size()) || out.size() >= cap) continue;
        ParamValues cfg = parent;
        cfg[ps[i].name] = ps[i].values[j];
        if (space.Valid(cfg)) out.push_back(std::move(cfg));
      }
    }
  return out;
}

Result<std::vector<Draft>> ProposeParams(const Task& task, const ProposalContext& ctx) {
  auto whole = ExploreConfig{}.rank_whole_space ? WholeSpace(task) : std::nullopt;
  return Planner(task, ctx, whole ? &*whole : nullptr).Run();
}

std::unique_ptr<Generator> MakeParamsGenerator(const Task& task) { return std::make_unique<ParamsGenerator>(task); }

}  // namespace kpilot
