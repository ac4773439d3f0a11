// Skill cards: techniques for GPU kernels written as folders `<id>/SKILL.md` (YAML front matter
// plus a Markdown body; the format is specified in skills/README.md). This module loads them from
// the built-in folder, user folders and --skills folders, validates every rule of the format,
// retrieves the cards that fit a kernel's profile, and keeps per-card and per-tool usage
// statistics in the store.
//
// Nothing here throws: yaml-cpp's exceptions are caught inside and become problems with the
// file and line they concern.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "store/store.h"

namespace kpilot {

// --- the card ---------------------------------------------------------------------------------

struct Precondition {
  std::string what;  // a condition on data types, layout, storage, pipeline or hardware
  std::string why;   // how the technique fails without it
};

// One entry of `effect.measured`, added from a kpilot run. `provenance` is as written (a mapping
// such as {task, device, run, speedup, ci} or a line of text); `fields` is the whole entry.
struct MeasuredEffect {
  nlohmann::json provenance;
  nlohmann::json fields = nlohmann::json::object();
};

enum class MoveDirection { kUp, kDown, kSet };
std::string_view MoveDirectionName(MoveDirection d);  // "up", "down", "set"

// The parenthesized part of a move's `when`, e.g. "(limiter: shared memory)" or
// "(lg_throttle or mio_throttle)": an optional key before ':' and the alternatives joined by " or ".
struct MoveCondition {
  std::string text;                       // inside the parentheses, as written
  std::string key;                        // "limiter"; "" when there is no ':'
  std::vector<std::string> alternatives;  // {"shared memory"}; {"lg_throttle", "mio_throttle"}
};

// A move for the parametric generator: change `param` when `trigger` (a finding id or a roofline
// class) is present and, if given, the condition holds for that finding's evidence.
struct ParamMove {
  std::string param;  // a param role (docs/generate.md) or an UPPER_CASE param name
  MoveDirection move = MoveDirection::kUp;
  std::optional<std::string> value;  // only for kSet
  std::string when;                  // as written
  std::string trigger;               // the leading finding id or class name
  bool trigger_is_class = false;
  std::optional<MoveCondition> condition;
};

enum class SkillOrigin { kBuiltin, kUser, kCommandLine };
std::string_view SkillOriginName(SkillOrigin o);  // "built-in", "user", "--skills"

struct SkillCard {
  // Agent Skills fields.
  std::string name;         // == id
  std::string description;  // at most 1024 characters
  // kpilot's fields (KLineage's card schema).
  std::string id;      // kebab-case, == the folder name
  std::string intent;  // one line, imperative
  std::string anchor;  // where in the code it applies
  std::vector<Precondition> preconditions;
  std::string effect_expected;
  std::vector<MeasuredEffect> effect_measured;
  std::vector<std::string> risks;
  std::vector<std::string> scope_cases;
  std::vector<std::string> scope_languages;  // "cuda", "cpp"
  std::vector<std::string> scope_platforms;  // "sm_80", "sm_90a", …
  std::vector<std::string> scope_dtypes;     // element types it needs one of ("f16", "bf16", …); empty = any
  std::vector<std::string> requires_features;
  std::vector<std::string> provides;
  std::vector<std::string> conflicts;
  std::vector<std::string> trigger_findings;
  std::vector<std::string> trigger_classes;
  std::vector<ParamMove> params;
  std::string body;  // the Markdown after the front matter
  // A plain Agent Skill (front matter with only `name` and `description`, as Claude Code and
  // Codex read them): no kpilot fields, so no triggers, scope or moves. Its intent is the first
  // line of its description. Retrieval offers it by the relevance of its description, to the
  // llm: and command: generators only (RetrieveOptions::text_only).
  bool text_only = false;
  // Where it came from.
  std::filesystem::path source;  // the SKILL.md file
  SkillOrigin origin = SkillOrigin::kBuiltin;
};

nlohmann::json ToJson(const SkillCard& card);

// --- the format's vocabularies ------------------------------------------------------------------

struct Feature {
  std::string_view name;     // "smem-tile"
  std::string_view meaning;  // one line, as in skills/README.md
};
// The feature vocabulary of skills/README.md ("## Feature vocabulary"), in the README's order. A
// test checks that the two agree; add a row to both for a new feature.
const std::vector<Feature>& FeatureVocabulary();
bool IsFeature(std::string_view name);
// "memory-bound", "compute-bound", "latency-bound", "launch-bound", "mixed".
const std::vector<std::string>& RooflineClasses();
// "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", and for host (cpp) cards "x86-64",
// "aarch64".
const std::vector<std::string>& SkillPlatforms();
// "cuda", "cpp".
const std::vector<std::string>& SkillLanguages();
// The task.toml element types, DTypeName's spellings: "f64", "f32", "f16", "bf16", …
const std::vector<std::string>& SkillDTypes();
// The param roles of docs/generate.md: "vector", "block", "grid", …
const std::vector<std::string>& ParamRoles();

// --- validation ---------------------------------------------------------------------------------

// One problem with a card: printed as "FILE:LINE: field `FIELD`: MESSAGE; FIX".
struct SkillProblem {
  std::filesystem::path file;
  int line = 0;       // 1-based line of the file; 0 when no line applies (a missing file)
  std::string field;  // "triggers.findings", "params[2].move", "body", "front matter"
  std::string message;
  std::string fix;  // what to do; may be empty
  std::string ToString() const;
};
nlohmann::json ToJson(const SkillProblem& p);
// The problems one per line.
std::string FormatProblems(const std::vector<SkillProblem>& problems);

struct ValidationOptions {
  // The finding ids a trigger or a move's `when` may name. KnownFindingIds() gives the built-in
  // tools' ids plus the rule ids of rule files.
  std::set<std::string> finding_ids;
};

// The built-in tools' ids (kpilot profile --list-tools) and the rule ids of every rule file in
// `rule_dirs` (as LoadRuleToolsFromDirs reads them: missing folders are skipped). A rule file
// that does not parse is an error.
Result<std::set<std::string>> KnownFindingIds(const std::vector<std::filesystem::path>& rule_dirs);

// Parses and validates the text of one SKILL.md. `file` names it in problems; `folder` is the name
// of the folder holding it (the card's id must equal it). Every problem of the card is reported,
// not only the first. Returns the card when there is no problem; otherwise nullopt and the
// problems appended to *problems. Pure.
std::optional<SkillCard> ParseSkillCard(const std::string& text, const std::filesystem::path& file,
                                        const std::string& folder, const ValidationOptions& options,
                                        std::vector<SkillProblem>* problems);

// --- the library --------------------------------------------------------------------------------

struct SkillDir {
  std::filesystem::path path;
  SkillOrigin origin = SkillOrigin::kBuiltin;
};

// A card of a later folder that replaced one of the same id from an earlier folder.
struct SkillOverride {
  std::string id;
  std::filesystem::path replaced;  // the earlier SKILL.md
  SkillOrigin replaced_origin = SkillOrigin::kBuiltin;
  std::filesystem::path by;  // the later SKILL.md
  SkillOrigin by_origin = SkillOrigin::kBuiltin;
};

struct SkillLibrary {
  std::vector<SkillCard> cards;                      // sorted by id, one per id
  std::vector<SkillOverride> overrides;              // in loading order
  const SkillCard* Find(std::string_view id) const;  // nullptr when absent
};

// The subfolder of a skills folder where `kpilot lineage --admit-on` puts the cards it did not
// admit (<skills>/rejected/<id>/SKILL.md); loading skips it.
inline constexpr const char* kRejectedCardsFolder = "rejected";

// Reads the cards of one folder: each subfolder holding a SKILL.md is a card (folders whose name
// starts with '.', and kRejectedCardsFolder, are skipped; a subfolder without SKILL.md is a
// problem); a folder that itself
// holds a SKILL.md is one card. Every card is validated; problems of all cards are appended to
// *problems and the valid cards returned. A folder that does not exist or cannot be read is an
// error (InvalidInput naming it).
Result<std::vector<SkillCard>> LoadSkillDir(const SkillDir& dir, const ValidationOptions& options,
                                            std::vector<SkillProblem>* problems);

// Loads the folders in order; a card of a later folder replaces an earlier card of the same id
// (recorded in `overrides`). A user folder (kUser) that does not exist is skipped; any other
// missing folder is an error. Any invalid card makes the whole load fail with InvalidInput
// listing every problem (FormatProblems), so a broken card is fixed rather than silently ignored.
Result<SkillLibrary> LoadLibrary(const std::vector<SkillDir>& dirs, const ValidationOptions& options);

// The folders kpilot loads, in order: `builtin` (kBuiltin), then the user folders — each entry of
// $KPILOT_SKILLS_PATH (colon-separated) if set, else ~/.config/kpilot/skills — (kUser), then
// `command_line` (kCommandLine, from --skills DIR, in the order given).
std::vector<SkillDir> DefaultSkillDirs(const std::filesystem::path& builtin,
                                       const std::vector<std::filesystem::path>& command_line);

// --- usage statistics ---------------------------------------------------------------------------

// What happened to one proposal of a run, as the optimizer sees it. Intended call: after a child
// node is evaluated, the optimizer calls
//   RecordUsage(log, {.run_id = run, .node = child,
//                     .cards_offered = <ids Retrieve returned for the parent>,
//                     .cards_applied = <ids the proposal says it applied>,
//                     .findings_fired = <finding ids of the parent's profile>,
//                     .findings_applied = <finding ids whose moves or cards the proposal used>,
//                     .speedup = <child's paired speedup over the parent, when it passed>});
struct UsageEvent {
  int64_t run_id = 0;  // 0 outside a run
  int64_t node = -1;   // the child node (-1 when none)
  std::vector<std::string> cards_offered;
  std::vector<std::string> cards_applied;
  std::vector<std::string> findings_fired;
  std::vector<std::string> findings_applied;
  std::optional<double> speedup;  // over the parent; nullopt when not measured (failed, incorrect)
};

// Where usage rows live: the store's skill_usage table (StoreUsageLog) or a test double.
class UsageLog {
 public:
  virtual ~UsageLog() = default;
  virtual Status Append(const std::vector<SkillUsageRecord>& rows) = 0;  // all or nothing
  virtual Result<std::vector<SkillUsageRecord>> List() = 0;
};
// Borrows `store`, which must outlive the log.
std::unique_ptr<UsageLog> StoreUsageLog(Store& store);

// Appends one row per card in cards_offered ∪ cards_applied (kind "card") and one per finding in
// findings_fired ∪ findings_applied (kind "tool"): fired = offered/fired, applied = applied,
// speedup = the event's speedup (0 when nullopt). A speedup that is not finite or <= 0, or an
// empty id, is InvalidInput and nothing is written.
Status RecordUsage(UsageLog& log, const UsageEvent& event);

inline constexpr double kDefaultImprovedFactor = 1.02;

// Per card or tool: counts over all recorded rows.
struct UsageStats {
  std::string kind;   // "card" | "tool"
  std::string name;   // card id or finding id
  int64_t fired = 0;  // offered (cards) / reported (tools)
  int64_t applied = 0;
  int64_t improved = 0;  // applied with speedup > improved_factor
  int64_t measured = 0;  // applied with a speedup
  double mean_gain = 0;  // geometric mean of the measured speedups; 0 when none
  // improved / applied; 0 when never applied.
  double HitRate() const { return applied ? static_cast<double>(improved) / applied : 0; }
  // (improved + 1) / (applied + 2): the hit rate retrieval ranks by, 0.5 for a card never applied.
  double SmoothedHitRate() const { return (improved + 1.0) / (applied + 2.0); }
};

// Aggregates the rows: cards first, then tools, each sorted by name. improved_factor must be > 0.
std::vector<UsageStats> SummarizeUsage(const std::vector<SkillUsageRecord>& rows,
                                       double improved_factor = kDefaultImprovedFactor);
Result<std::vector<UsageStats>> ReadUsageStats(UsageLog& log, double improved_factor = kDefaultImprovedFactor);

// --- retrieval ----------------------------------------------------------------------------------

struct ContextFinding {
  std::string id;                     // "dominant-warp-stall"
  std::vector<std::string> evidence;  // e.g. the stall name "long_scoreboard", "limiter: shared_memory"
  std::string guidance;               // the tool's text; adds to the text query
};

struct RetrievalContext {
  std::vector<ContextFinding> findings;  // ranked, most severe first
  std::string roofline_class;            // "memory-bound", …; "" when unknown
  std::string task_text;                 // description, op kind, dtypes, shapes
  std::set<std::string> features;        // features the current code has
  std::string platform;                  // "sm_90a"; "" matches every card
  std::string language;                  // "cuda"; "" matches every card
  std::set<std::string> dtypes;          // the task's element types ("f32", …); empty matches every card
};

struct RetrieveOptions {
  size_t limit = 0;               // at most this many cards; 0 = all
  bool include_tune_only = true;  // keep cards whose provides are all present (for their moves)
  // Text-only cards (SkillCard::text_only): offered when their description shares terms with the
  // query (bm25 > 0); false leaves them out (the params generator, which only applies moves).
  bool text_only = true;
  // Usage per card id (kind "card"); nullptr or absent: hit rate 0.5 (SmoothedHitRate).
  const std::map<std::string, UsageStats>* usage = nullptr;
};

// A params move whose `when` holds in the context.
struct MatchedMove {
  size_t index = 0;    // into card->params
  std::string reason;  // "dominant-warp-stall (long_scoreboard) matches evidence long_scoreboard"
};

struct RetrievedCard {
  const SkillCard* card = nullptr;  // borrowed from the library
  bool tune_only = false;           // provides all present: only its moves apply
  double trigger_score = 0;         // sum over matched findings of (N - rank), + 0.5 for the class
  std::vector<std::string> matched_findings;
  bool class_matched = false;
  double bm25 = 0;
  double hit_rate = 0.5;  // SmoothedHitRate of its usage
  std::vector<MatchedMove> moves;
  std::string reason;  // the above in words
};

struct RetrievalExclusion {
  std::string id;
  std::string reason;  // "platform sm_80 not in scope [sm_90a]", "requires smem-tile (absent)", …
};

struct Retrieval {
  std::vector<RetrievedCard> cards;          // ranked, best first
  std::vector<RetrievalExclusion> excluded;  // by id
};

// Filters the library's cards by scope (platform, language), requires ⊆ features,
// conflicts ∩ features = ∅ (cards whose provides are all present become tune-only, and are
// dropped when they have no matching move or include_tune_only is false), then ranks by trigger
// score, then BM25 of intent + description + cases against the task text, finding ids and
// guidance, then smoothed hit rate, then id. Deterministic. Borrows `library`.
Retrieval Retrieve(const SkillLibrary& library, const RetrievalContext& context, const RetrieveOptions& options = {});

// The features a kernel's source visibly has (comments ignored), in the cards' vocabulary:
// smem-tile (a 2-D __shared__ array), warp-reduce, block-reduce, vector-global-128, tensor-core-mma,
// wgmma, tma, async-copy-pipeline, launch-bounds, fast-math, cuda-graph, l2-persistence,
// grid-stride, readonly-loads, unrolled-loops, coalesced-global (threads striding by the block).
// Markers, not analysis: a feature it cannot see is absent, so a card requiring it is not offered.
std::set<std::string> DetectFeatures(std::string_view source);
nlohmann::json ToJson(const RetrievedCard& r);

// BM25 (k1 = 1.2, b = 0.75) of each document against the query, over lower-cased alphanumeric
// terms (anything else separates terms; a few English stop words are dropped).
std::vector<double> Bm25Scores(const std::vector<std::string>& documents, const std::string& query);

}  // namespace kpilot
