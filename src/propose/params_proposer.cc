#include "propose/params_proposer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "propose/param_moves.h"
#include "propose/param_space.h"
#include "task/formula.h"

namespace kpilot {
namespace {

// ---------------------------------------------------------------------------------------------
// Roles from names. Ordered: the first row with a pattern that is a substring of the upper-cased
// name wins, so specific names come before general ones (MIN_BLOCKS, NUM_BLOCKS and
// ROWS_PER_BLOCK before BLOCK; TILE_K before TILE; TILE_WIDTH is a tile, WIDTH a vector).

struct RoleRow {
  ParamRole role;
  std::vector<std::string_view> patterns;
};

const std::vector<RoleRow>& RoleTable() {
  static const std::vector<RoleRow> kTable = {
      {ParamRole::kMinBlocks, {"MIN_BLOCKS", "MINBLOCKS", "LAUNCH_BOUND", "BLOCKS_PER_SM", "MIN_CTAS"}},
      {ParamRole::kBlock,
       {"THREADS_PER_BLOCK", "BLOCK_SIZE", "BLOCKSIZE", "BLOCK_THREADS", "NUM_THREADS", "BLOCK_DIM"}},
      {ParamRole::kGrid, {"WAVES", "GRID", "NUM_BLOCKS", "NUM_CTAS"}},
      {ParamRole::kWorkPerBlock,
       {"CHUNK", "ROWS_PER", "COLS_PER", "ITEMS", "PER_THREAD", "PER_BLOCK", "ELEMS", "WORK"}},
      {ParamRole::kStages, {"STAGE", "PIPELINE"}},
      {ParamRole::kUnroll, {"UNROLL"}},
      {ParamRole::kRegisterTile, {"REG_TILE", "REGTILE", "THREAD_TILE", "TM", "TN"}},
      {ParamRole::kTileK, {"TILE_K", "TILEK", "K_TILE", "BLOCK_K", "BK"}},
      {ParamRole::kTile, {"TILE", "BLOCK_M", "BLOCK_N", "BM", "BN"}},
      {ParamRole::kVector, {"VEC", "WIDTH", "PACK"}},
      {ParamRole::kBlock, {"BLOCK", "THREADS", "WARPS"}},
  };
  return kTable;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  return Lower(haystack).find(Lower(needle)) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// Findings to moves. A finding takes the first row whose `id` is a substring of its id and whose
// conditions hold. A row without moves says params cannot fix the finding (`no_fix` says what
// would). docs/propose.md mirrors this table.

struct Move {
  ParamRole role;
  int dir;          // +1: later in the declared order ("up"), −1: earlier
  const char* why;  // the expected effect, completing "…; <why>"
  // The role moved instead when the space has no param of `role` (a kernel without a register
  // tile keeps its accumulators per block tile, so the block tile stands in for it).
  ParamRole fallback = ParamRole::kOther;
};

struct Rule {
  const char* id;
  const char* limiter = nullptr;  // substring of evidence["limiter"]; "" = evidence names none
  const char* stall = nullptr;    // substring of the dominant stall reason (DominantStall)
  std::vector<Move> moves;
  const char* no_fix = "";
};

constexpr const char* kSmallerTilesRegs = "smaller tiles keep fewer accumulators live";
// Registers per thread follow the register tile (TM x TN accumulators), not the block tile.
const Move kFewerAccumulators = {ParamRole::kRegisterTile, -1, kSmallerTilesRegs, ParamRole::kTile};
constexpr const char* kLessUnroll = "less unrolling keeps fewer values live";

const std::vector<Rule>& RuleTable() {
  using R = ParamRole;
  static const std::vector<Rule> kRules = {
      {"scalar-global-loads", nullptr, nullptr,
       {{R::kVector, +1, "wider vectors move more bytes per load instruction"}}},
      {"uncoalesced", nullptr, nullptr,
       {{R::kVector, +1, "wider per-thread vectors use more of each fetched sector"}}},
      // Spills: a launch-bounds minimum caps registers, so it moves down here (up would spill more).
      {"register-spill", nullptr, nullptr,
       {kFewerAccumulators,
        {R::kUnroll, -1, kLessUnroll},
        {R::kMinBlocks, -1, "a lower launch-bounds minimum leaves ptxas more registers than spills"}}},
      {"high-register", nullptr, nullptr,
       {kFewerAccumulators,
        {R::kMinBlocks, +1, "a higher launch-bounds minimum caps registers so more blocks fit"},
        {R::kUnroll, -1, kLessUnroll}}},
      {"occupancy", "register", nullptr,
       {kFewerAccumulators,
        {R::kMinBlocks, +1, "a higher launch-bounds minimum caps registers so more blocks fit"},
        {R::kUnroll, -1, kLessUnroll}}},
      {"occupancy", "shared", nullptr,
       {{R::kStages, -1, "fewer pipeline stages need less shared memory per block"},
        {R::kTileK, -1, "a shorter K tile needs less shared memory per block"},
        {R::kTile, -1, "smaller tiles need less shared memory per block"}}},
      {"occupancy", "block", nullptr,  // "block_size" and "blocks": the resident-block limit
       {{R::kBlock, +1, "larger blocks put more warps under the resident-block limit"}}},
      {"occupancy", "warps", nullptr,
       {{R::kBlock, -1, "a smaller block divides the SM's warp slots better"}}},
      {"occupancy", "", nullptr,  // achieved occupancy low: too few or uneven blocks
       {{R::kGrid, +1, "more blocks keep the SMs full"},
        {R::kBlock, -1, "smaller blocks give more, evener blocks"}}},
      {"tail", nullptr, nullptr,
       {{R::kBlock, -1, "smaller blocks fill the last wave"},
        {R::kGrid, +1, "more waves make the partial last one matter less"},
        {R::kTile, -1, "smaller tiles make more blocks to fill the last wave"}}},
      {"launch-overhead", nullptr, nullptr,
       {{R::kWorkPerBlock, +1, "more work per block amortizes each launch"}}},
      {"dram-near-peak", nullptr, nullptr, {},
       "only moving fewer bytes helps (fusion, lower precision)"},
      {"warp-stall", nullptr, "long_scoreboard",
       {{R::kStages, +1, "more pipeline stages keep more loads in flight"},
        {R::kUnroll, +1, "more unrolling issues more independent loads"},
        {R::kVector, +1, "wider loads keep more bytes in flight"}}},
      {"warp-stall", nullptr, "lg_throttle",
       {{R::kVector, +1, "wider loads need fewer load instructions"}}},
      {"warp-stall", nullptr, "mio_throttle",
       {{R::kVector, +1, "wider accesses need fewer shared-memory instructions"},
        {R::kRegisterTile, +1, "a larger register tile reads each shared-memory value for more FMAs"}}},
      {"warp-stall", nullptr, "wait",
       {{R::kUnroll, +1, "more unrolling interleaves independent instructions"}}},
      {"warp-stall", nullptr, "no_instruction",
       {{R::kUnroll, -1, "less unrolling shrinks the hot loop for the instruction cache"}}},
      {"warp-stall", nullptr, "barrier",
       {{R::kBlock, -1, "smaller blocks wait on fewer warps at each barrier"},
        {R::kTileK, +1, "a longer K tile does more work between barriers"}}},
      {"barrier", nullptr, nullptr,
       {{R::kBlock, -1, "smaller blocks wait on fewer warps at each barrier"},
        {R::kTileK, +1, "a longer K tile does more work between barriers"}}},
      {"low-cache-hit", nullptr, nullptr,
       {{R::kTile, +1, "larger tiles reuse each loaded element more"}}},
      {"shared-bank-conflict", nullptr, nullptr, {}, "padding or a swizzle in the source helps"},
      {"tensor-cores-unused", nullptr, nullptr, {}, "mma/wgmma code in the source helps"},
      {"fp64", nullptr, nullptr, {}, "f32 literals and functions in the source help"},
      {"integer-division", nullptr, nullptr, {}, "division-free index math in the source helps"},
      {"warp-divergence", nullptr, nullptr, {}, "branch-free code in the source helps"},
      {"copies-or-syncs", nullptr, nullptr, {}, "moving copies and syncs out of the call helps"},
  };
  return kRules;
}

const Move kComputeBoundMove = {ParamRole::kRegisterTile, +1,
                                "larger tiles do more arithmetic per loaded element", ParamRole::kTile};

const std::vector<std::string_view>& KnownStalls() {
  static const std::vector<std::string_view> kStalls = {
      "long_scoreboard", "short_scoreboard", "lg_throttle", "mio_throttle", "barrier",
      "math_pipe_throttle", "wait", "not_selected", "membar", "branch_resolving",
      "no_instruction", "drain", "dispatch_stall", "imc_miss", "tex_throttle", "sleeping"};
  return kStalls;
}

// The dominant warp stall a finding names: a string in its evidence under a key that mentions
// "reason", "stall" or "dominant"; else the known stall named first in its guidance; else "".
std::string DominantStall(const Finding& f) {
  if (f.evidence.is_object()) {
    for (const auto& [key, value] : f.evidence.items()) {
      std::string k = Lower(key);
      bool named = k.find("reason") != std::string::npos || k.find("stall") != std::string::npos ||
                   k.find("dominant") != std::string::npos;
      if (named && value.is_string()) return Lower(value.get<std::string>());
    }
  }
  std::string text = Lower(f.guidance);
  size_t best = std::string::npos;
  std::string found;
  for (std::string_view stall : KnownStalls()) {
    size_t at = text.find(stall);
    if (at < best) best = at, found = std::string(stall);
  }
  return found;
}

std::string Limiter(const Finding& f) {
  if (!f.evidence.is_object()) return "";
  auto it = f.evidence.find("limiter");
  return it != f.evidence.end() && it->is_string() ? Lower(it->get<std::string>()) : "";
}

const Rule* MatchRule(const Finding& f) {
  for (const Rule& rule : RuleTable()) {
    if (!ContainsNoCase(f.id, rule.id)) continue;
    if (rule.limiter) {
      std::string limiter = Limiter(f);
      if (*rule.limiter == '\0' ? !limiter.empty() : limiter.find(rule.limiter) == std::string::npos)
        continue;
    }
    if (rule.stall && DominantStall(f).find(rule.stall) == std::string::npos) continue;
    return &rule;
  }
  return nullptr;
}

// 3 significant digits, integers from 100 up.
std::string Num(double v) {
  char buf[32];
  if (std::fabs(v) >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

// What the finding measured, in a few words from its evidence ("theoretical occupancy is 25%,
// limited by registers"); its severity when no known number is there.
std::string Measured(const Finding& f) {
  struct Quote {
    std::string_view key;  // substring of an evidence key
    std::string_view before, after;
    double scale;
  };
  static const Quote kQuotes[] = {
      {"scalar_load_share", "", "% of global loads are 32-bit", 100},
      {"ratio_to_ideal", "accesses fetch ", "x the ideal sectors", 1},
      {"spill_store_bytes", "", " bytes of spill stores", 1},
      {"registers_per_thread", "", " registers per thread", 1},
      {"theoretical_occupancy_pct", "theoretical occupancy is ", "%", 1},
      {"warps_active", "achieved occupancy is ", "%", 1},
      {"dram__throughput", "DRAM at ", "% of peak", 1},
      {"conflict_share", "", "% of shared accesses conflict", 100},
      {"partial_wave", "the last wave is ", "% full", 100},
      {"idle_sm_share", "", "% of the SMs get no block", 100},
      {"waves", "", " waves per SM", 1},
      {"launch_gap_share", "", "% of the call runs no kernel", 100},
      {"kernels_per_call", "", " kernels per call", 1},
      {"dominant_share", "", "% of stall cycles", 100},
      {"barrier_stall_share", "", "% of stall cycles wait at barriers", 100},
      {"hit_rate", "cache hit rate ", "%", 1},
  };
  std::vector<std::string> parts;
  if (f.evidence.is_object()) {
    for (const Quote& q : kQuotes) {
      for (const auto& [key, value] : f.evidence.items()) {
        if (!value.is_number() || key.find(q.key) == std::string::npos) continue;
        parts.push_back(std::string(q.before) + Num(value.get<double>() * q.scale) +
                        std::string(q.after));
        break;
      }
      if (parts.size() == 2) break;
    }
  }
  if (std::string limiter = Limiter(f); !limiter.empty()) parts.push_back("limited by " + limiter);
  if (f.id.find("warp-stall") != std::string::npos) {
    if (std::string stall = DominantStall(f); !stall.empty())
      parts.insert(parts.begin(), "warps mostly stall on " + stall);
  }
  if (parts.empty()) return "severity " + Num(f.severity);
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += ", " + parts[i];
  return out;
}

// The whole space is handed to the model when it has at most this many valid configs and the
// product of the value lists (what enumerating walks) is at most kWholeSpaceProduct.
constexpr size_t kWholeSpaceMax = 20000;
constexpr size_t kWholeSpaceProduct = size_t{1} << 18;
// Configs anticipated per node (Proposer::Anticipate): every one-param change of the examples'
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
      : task_(task), ctx_(ctx), space_(task), rng_(ctx.seed), explore_config_(),
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
    if (!space_.status().ok()) return space_.status().WithContext("params proposer: constraints");
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
        if (no_fix_.empty())
          no_fix_ = f.id + " says " + Measured(f) + "; params cannot fix that: " + rule->no_fix;
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
      std::string because = f ? f->id + " says " + Measured(*f)
                              : std::string("compute-bound and no finding maps to a param");
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
      Add(std::move(cfg), Step(i, at, j) + ": card " + card.id + ", " + because + "; " + card.intent,
          f ? f->id : "", card.id);
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
  bool mapped_ = false;             // some finding had a rule with moves (or a card a move)
  bool from_cards_ = false;         // the moves came from the offered cards
  std::vector<std::string> unmapped_;
  std::string no_fix_;              // the first finding params cannot fix, explained
  std::string explore_reason_;      // set when no move is steered at all (--skills off)
};

class ParamsProposer : public Proposer {
 public:
  explicit ParamsProposer(Task task) : task_(std::move(task)) {}
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

std::string_view ParamRoleName(ParamRole role) {
  switch (role) {
    case ParamRole::kMinBlocks: return "min-blocks";
    case ParamRole::kGrid: return "grid";
    case ParamRole::kWorkPerBlock: return "work-per-block";
    case ParamRole::kStages: return "stages";
    case ParamRole::kUnroll: return "unroll";
    case ParamRole::kVector: return "vector";
    case ParamRole::kRegisterTile: return "register-tile";
    case ParamRole::kTileK: return "tile-k";
    case ParamRole::kTile: return "tile";
    case ParamRole::kBlock: return "block";
    case ParamRole::kOther: return "other";
  }
  return "other";
}

ParamRole ClassifyParam(std::string_view name) {
  std::string upper = Upper(name);
  for (const RoleRow& row : RoleTable()) {
    for (std::string_view pattern : row.patterns)
      if (upper.find(pattern) != std::string::npos) return row.role;
  }
  return ParamRole::kOther;
}

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

std::unique_ptr<Proposer> MakeParamsProposer(const Task& task) {
  return std::make_unique<ParamsProposer>(task);
}

}  // namespace kpilot
