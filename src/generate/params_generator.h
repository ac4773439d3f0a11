// The `params` generator: new candidates that keep the parent's source and move one tunable
// parameter one step in its declared value order, steered by the parent's profile findings.
//
// How a draft is chosen (docs/generate.md has the tables):
//   1. Every declared param gets a role from its NAME (ClassifyParam: case-insensitive substrings,
//      first matching row wins), e.g. VEC → vector, BM/TILE_N → tile, MIN_BLOCKS → min-blocks.
//   2. Each finding, in the given (ranked) order, is matched to a rule by its id (and, for
//      occupancy-limiter and dominant-warp-stall, by the limiter or stall its evidence names);
//      the rule lists moves "role up/down". A move steps a param of that role to the nearest value
//      in that direction that satisfies the constraints and has not been tried. Rules with no
//      moves (dram-near-peak, tensor-cores-unused, …) say that params cannot fix the finding.
//      A compute-bound parent (ctx.bottleneck) with no mapped finding moves tiles up.
//      When skill cards are offered (ctx.skills) with matched params moves, those moves replace
//      this table (in the cards' rank order; each draft names its card in skills_applied, and a
//      `set` move goes straight to its value); with ctx.skills_enabled false (--skills off) no
//      finding-steered move is made at all.
//   3. Slots left over are exploration: the parent's untried one-step neighbours (every param ±1
//      step) in an order shuffled by ctx.seed, and with probability 0.15 per slot, or once every
//      neighbour is tried, a random restart (a uniformly random valid untried configuration).
//
// Configurations are complete: every declared param has a value, and a param the parent leaves
// unset takes its first declared value (what a candidate's `#ifndef NAME / #define NAME first`
// default does). Params the task does not declare are dropped. A parent value that is not among
// the declared values cannot be stepped; restarts still move it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "generate/generator.h"
#include "task/task.h"

namespace kpilot {

// What a parameter controls, guessed from its name.
enum class ParamRole {
  kMinBlocks,     // __launch_bounds__ minimum blocks per SM: MIN_BLOCKS, LAUNCH_BOUNDS, …
  kGrid,          // grid size / waves: WAVES, GRID, NUM_BLOCKS, …
  kWorkPerBlock,  // work per block or thread: CHUNK, ROWS_PER_BLOCK, ITEMS, …
  kStages,        // software pipeline depth: STAGES
  kUnroll,        // UNROLL
  kVector,        // vector width: VEC, VECTOR, WIDTH, PACK
  kRegisterTile,  // per-thread register tile (accumulators): TM, TN, REG_TILE, THREAD_TILE
  kTileK,         // reduction-dimension tile: TILE_K, BK, BLOCK_K
  kTile,          // block (shared-memory) output tiles: TILE, TILE_M, BM, BN, BLOCK_M
  kBlock,         // threads per block: BLOCK, BLOCK_SIZE, THREADS, WARPS, BLOCK_ROWS
  kOther,         // nothing matched: moved only by exploration (stays last: tests iterate up to it)
};
std::string_view ParamRoleName(ParamRole role);  // "min-blocks", "grid", …, "other"

// The role of a param named `name` (case-insensitive).
ParamRole ClassifyParam(std::string_view name);

// `params` restricted to the task's declared params, each unset one at its first declared value.
ParamValues WithDefaults(const Task& task, const ParamValues& params);

// The task's valid configurations (constraints hold), complete, in declaration order with the
// last-declared param varying fastest; at most `cap`. A task without params has one
// configuration, the empty one. A constraint that cannot be evaluated counts as not holding.
std::vector<ParamValues> EnumerateSpace(const Task& task, size_t cap);

// The `params` generator's drafts for `ctx` (pure; ctx.task is ignored in favour of `task`).
// Up to ctx.k distinct drafts whose params satisfy the constraints and are neither the parent's
// nor in ctx.tried_params; empty when nothing untried is reachable. InvalidInput when a
// constraint cannot be evaluated.
Result<std::vector<Draft>> ProposeParams(const Task& task, const ProposalContext& ctx);

// What the params generator anticipates for a node at `parent` (Generator::Anticipate): the valid
// configs that change one param of `parent` (after WithDefaults), nearest first: every param one
// step along its declared values, then two steps, and so on, each round in declaration order;
// the parent excluded, at most `cap`. The findings' moves and the one-param exploration steps of
// a later Propose are among them (a move steps one param to its nearest valid untried value);
// pair moves, model picks that change several params, and restarts are not. Pure; a constraint that cannot be evaluated
// counts as not holding.
std::vector<ParamValues> AnticipateParams(const Task& task, const ParamValues& parent, size_t cap);

// The generator "params" around ProposeParams, holding a copy of `task` (used when ctx.task is
// null). Its futures are ready: the work is done inside Propose().
std::unique_ptr<Generator> MakeParamsGenerator(const Task& task);

}  // namespace kpilot
