// Roles from param names, and the rules that map a profile finding to moves of those roles
// (docs/generate.md mirrors both tables).
#include "generate/finding_rules.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace

std::string_view ParamRoleName(ParamRole role) {
  switch (role) {
    case ParamRole::kMinBlocks:
      return "min-blocks";
    case ParamRole::kGrid:
      return "grid";
    case ParamRole::kWorkPerBlock:
      return "work-per-block";
    case ParamRole::kStages:
      return "stages";
    case ParamRole::kUnroll:
      return "unroll";
    case ParamRole::kVector:
      return "vector";
    case ParamRole::kRegisterTile:
      return "register-tile";
    case ParamRole::kTileK:
      return "tile-k";
    case ParamRole::kTile:
      return "tile";
    case ParamRole::kBlock:
      return "block";
    case ParamRole::kOther:
      return "other";
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

namespace generate {
namespace {

constexpr const char* kSmallerTilesRegs = "smaller tiles keep fewer accumulators live";
// Registers per thread follow the register tile (TM x TN accumulators), not the block tile.
const Move kFewerAccumulators = {ParamRole::kRegisterTile, -1, kSmallerTilesRegs, ParamRole::kTile};
constexpr const char* kLessUnroll = "less unrolling keeps fewer values live";

const std::vector<Rule>& RuleTable() {
  using R = ParamRole;
  static const std::vector<Rule> kRules = {
      {"scalar-global-loads",
       nullptr,
       nullptr,
       {{R::kVector, +1, "wider vectors move more bytes per load instruction"}}},
      {"uncoalesced", nullptr, nullptr, {{R::kVector, +1, "wider per-thread vectors use more of each fetched sector"}}},
      // Spills: a launch-bounds minimum caps registers, so it moves down here (up would spill more).
      {"register-spill",
       nullptr,
       nullptr,
       {kFewerAccumulators,
        {R::kUnroll, -1, kLessUnroll},
        {R::kMinBlocks, -1, "a lower launch-bounds minimum leaves ptxas more registers than spills"}}},
      {"high-register",
       nullptr,
       nullptr,
       {kFewerAccumulators,
        {R::kMinBlocks, +1, "a higher launch-bounds minimum caps registers so more blocks fit"},
        {R::kUnroll, -1, kLessUnroll}}},
      {"occupancy",
       "register",
       nullptr,
       {kFewerAccumulators,
        {R::kMinBlocks, +1, "a higher launch-bounds minimum caps registers so more blocks fit"},
        {R::kUnroll, -1, kLessUnroll}}},
      {"occupancy",
       "shared",
       nullptr,
       {{R::kStages, -1, "fewer pipeline stages need less shared memory per block"},
        {R::kTileK, -1, "a shorter K tile needs less shared memory per block"},
        {R::kTile, -1, "smaller tiles need less shared memory per block"}}},
      {"occupancy",
       "block",
       nullptr,  // "block_size" and "blocks": the resident-block limit
       {{R::kBlock, +1, "larger blocks put more warps under the resident-block limit"}}},
      {"occupancy", "warps", nullptr, {{R::kBlock, -1, "a smaller block divides the SM's warp slots better"}}},
      {"occupancy",
       "",
       nullptr,  // achieved occupancy low: too few or uneven blocks
       {{R::kGrid, +1, "more blocks keep the SMs full"}, {R::kBlock, -1, "smaller blocks give more, evener blocks"}}},
      {"tail",
       nullptr,
       nullptr,
       {{R::kBlock, -1, "smaller blocks fill the last wave"},
        {R::kGrid, +1, "more waves make the partial last one matter less"},
        {R::kTile, -1, "smaller tiles make more blocks to fill the last wave"}}},
      {"launch-overhead", nullptr, nullptr, {{R::kWorkPerBlock, +1, "more work per block amortizes each launch"}}},
      {"dram-near-peak", nullptr, nullptr, {}, "only moving fewer bytes helps (fusion, lower precision)"},
      {"warp-stall",
       nullptr,
       "long_scoreboard",
       {{R::kStages, +1, "more pipeline stages keep more loads in flight"},
        {R::kUnroll, +1, "more unrolling issues more independent loads"},
        {R::kVector, +1, "wider loads keep more bytes in flight"}}},
      {"warp-stall", nullptr, "lg_throttle", {{R::kVector, +1, "wider loads need fewer load instructions"}}},
      {"warp-stall",
       nullptr,
       "mio_throttle",
       {{R::kVector, +1, "wider accesses need fewer shared-memory instructions"},
        {R::kRegisterTile, +1, "a larger register tile reads each shared-memory value for more FMAs"}}},
      {"warp-stall", nullptr, "wait", {{R::kUnroll, +1, "more unrolling interleaves independent instructions"}}},
      {"warp-stall",
       nullptr,
       "no_instruction",
       {{R::kUnroll, -1, "less unrolling shrinks the hot loop for the instruction cache"}}},
      {"warp-stall",
       nullptr,
       "barrier",
       {{R::kBlock, -1, "smaller blocks wait on fewer warps at each barrier"},
        {R::kTileK, +1, "a longer K tile does more work between barriers"}}},
      {"barrier",
       nullptr,
       nullptr,
       {{R::kBlock, -1, "smaller blocks wait on fewer warps at each barrier"},
        {R::kTileK, +1, "a longer K tile does more work between barriers"}}},
      {"low-cache-hit", nullptr, nullptr, {{R::kTile, +1, "larger tiles reuse each loaded element more"}}},
      {"shared-bank-conflict", nullptr, nullptr, {}, "padding or a swizzle in the source helps"},
      {"tensor-cores-unused", nullptr, nullptr, {}, "mma/wgmma code in the source helps"},
      {"fp64", nullptr, nullptr, {}, "f32 literals and functions in the source help"},
      {"integer-division", nullptr, nullptr, {}, "division-free index math in the source helps"},
      {"warp-divergence", nullptr, nullptr, {}, "branch-free code in the source helps"},
      {"copies-or-syncs", nullptr, nullptr, {}, "moving copies and syncs out of the call helps"},
  };
  return kRules;
}

const std::vector<std::string_view>& KnownStalls() {
  static const std::vector<std::string_view> kStalls = {
      "long_scoreboard", "short_scoreboard",   "lg_throttle",    "mio_throttle",
      "barrier",         "math_pipe_throttle", "wait",           "not_selected",
      "membar",          "branch_resolving",   "no_instruction", "drain",
      "dispatch_stall",  "imc_miss",           "tex_throttle",   "sleeping"};
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

}  // namespace

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  return Lower(haystack).find(Lower(needle)) != std::string::npos;
}

const Rule* MatchRule(const Finding& f) {
  for (const Rule& rule : RuleTable()) {
    if (!ContainsNoCase(f.id, rule.id)) continue;
    if (rule.limiter) {
      std::string limiter = Limiter(f);
      if (*rule.limiter == '\0' ? !limiter.empty() : limiter.find(rule.limiter) == std::string::npos) continue;
    }
    if (rule.stall && DominantStall(f).find(rule.stall) == std::string::npos) continue;
    return &rule;
  }
  return nullptr;
}

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
        parts.push_back(std::string(q.before) + Num(value.get<double>() * q.scale) + std::string(q.after));
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

}  // namespace generate
}  // namespace kpilot
