// kpilot lineage: KLineage's backward walk. Starting from an expert kernel that passes the
// harness, a generator removes one optimization mechanism per step; each simplification passes a
// gate (it compiles and is correct, its declared feature sets differ by exactly the declared
// feature, a second generator call cites the source lines that prove it, and a third, fresh call
// rebuilds the optimization from the simpler kernel and the draft card to ≥ 0.99 of the
// pre-removal speed in every paired trial). Accepted steps are reversed (naive → expert) into
// skill cards (skills/README.md's format) with their measured effect and provenance.
//
// The pieces:
//   - pure gate functions (CheckDeclaration, CheckCitations, JudgeRoundTrip, the reply parsers,
//     the line diff) — text and numbers in, a decision out;
//   - LineageGenerator: text in, text out (over the LLM client or an agent command);
//   - LineageMeasure: compile, check and time a candidate paired against another source (over
//     the harness Evaluator; tests use a double with controlled verdicts and timings);
//   - LineageWalk: the loop, recording every attempt, verdict and transcript in the store as it
//     happens, with progress events;
//   - the cards: reversal, consistency of requires/provides with the feature states, rendering
//     to SKILL.md (YAML front matter + Markdown body) and writing them to a folder.
//   - admission of the cards on a held-out task, and LineageWalk::Mine, which runs the walk, the
//     cards, admission, the skill library's validation and the writing as `kpilot lineage` does
//     (the CLI parses flags, opens a LineageSession (session/session.h) and prints).
// What the walk asks a model or agent goes through generate's drafting contract
// (generate/drafting.h): prompt templates, reply parsing, agent command lines, transcripts.
// docs/lineage.md describes the walk for users.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "harness/harness.h"
#include "llm/llm.h"
#include "generate/drafting.h"
#include "store/store.h"
#include "task/task.h"

namespace kpilot::lineage {

using FeatureSet = std::set<std::string>;

// The feature vocabulary: the names in the `| `name` | meaning |` rows of the table under the
// "## Feature vocabulary" heading of a skills README (skills/README.md). InvalidInput naming the
// file when it has no such table.
Result<FeatureSet> LoadFeatureVocabulary(const std::filesystem::path& readme);

// ---- what the generator declares -----------------------------------------------------------------

// The draft card a proposal carries (what the generator knows about the mechanism it removed).
struct DraftCard {
  std::string id;  // kebab-case; "" → the feature's name
  std::string description;
  std::string intent;  // one line, imperative, in the forward direction ("Add …")
  std::vector<std::pair<std::string, std::string>> preconditions;  // {what, why}
  std::string expected_effect;
  std::vector<std::string> risks;
  std::vector<std::string> cases;              // operator cases it fits
  std::vector<std::string> requires_features;  // ⊆ the simpler state; empty → the whole simpler state
  std::vector<std::string> conflicts;
  std::vector<std::string> trigger_findings;
  std::vector<std::string> trigger_classes;
  std::vector<std::string> recipe;  // numbered edits, forward direction
};

// One proposal: "this code is the current kernel without `feature`".
struct Proposal {
  bool naive = false;     // the generator says the kernel is the naive form already
  std::string mechanism;  // in words
  std::string feature;    // the vocabulary feature removed
  std::string locus;      // where in the code
  FeatureSet before_features, after_features;
  std::optional<FeatureSet> reference_features;  // the task reference's, when declared
  DraftCard card;
  std::string source;   // the simplified kernel ("" when naive)
  std::string summary;  // the reply's Summary: line
};

// Parses a proposal reply: one ```json block with the declaration and (unless "naive": true) one
// code block with the whole simplified kernel. InvalidInput saying what is missing or malformed,
// worded for the generator (it is fed back to it).
Result<Proposal> ParseProposal(const std::string& reply);

// "" when the declaration is admissible, else the reason:
//   - every feature named is in `vocabulary`;
//   - `before_features` equals `current` when the state is known (after the first accepted step);
//   - after = before − {feature} exactly: nothing removed, a different feature, or two
//     mechanisms removed are each named;
//   - the card's requires ⊆ after, its conflicts ∩ (after ∪ {feature}) = ∅;
//   - the draft card is complete: intent, description, at least one precondition with what and
//     why, the expected effect, at least one risk and one trigger;
//   - trigger classes are roofline class names; trigger findings are in `known_findings` (when
//     that set is not empty).
std::string CheckDeclaration(const Proposal& p, const FeatureSet& vocabulary, const std::optional<FeatureSet>& current,
                             const FeatureSet& known_findings = {});

// ---- the citation check -----------------------------------------------------------------------------

struct Citation {
  std::string side;  // "before" | "after"
  int line = 0;      // 1-based
  std::string text;  // the line as the generator quotes it
};

struct CitationReply {
  FeatureSet removes;  // the features the confirmer says the change removes
  std::vector<Citation> citations;
  std::string explanation;
};

// The reply of the confirming call: one ```json block {"removes": [...], "citations":
// [{"side", "line", "text"}...], "explanation"}. InvalidInput when malformed.
Result<CitationReply> ParseCitations(const std::string& reply);

// Line diff of two texts (longest common subsequence): the 1-based numbers of the lines of
// `before` that are not in the common subsequence (removed or changed) and of `after` likewise
// (added or changed).
struct LineDiff {
  std::set<int> removed;
  std::set<int> added;
};
LineDiff DiffLines(const std::string& before, const std::string& after);

// The text of line `n` (1-based) of `text`; nullopt past the end.
std::optional<std::string> LineOf(const std::string& text, int n);

// "" when the confirmation holds, else the reason: the confirmer's `removes` is exactly
// {feature}; at least one citation is on the before side; every cited line exists and its text
// equals the cited text (leading/trailing blanks and runs of blanks ignored); every before
// citation is a line the change removed or changed and every after citation a line it added or
// changed (DiffLines).
std::string CheckCitations(const CitationReply& c, const std::string& feature, const std::string& before,
                           const std::string& after);

// ---- the round-trip rule -------------------------------------------------------------------------------

inline constexpr double kRoundTripMinRatio = 0.99;

struct RoundTripDecision {
  bool passed = false;
  double worst = 0;    // the smallest trial ratio (0 with no trials)
  std::string reason;  // "" when passed
};

// `ratios[t]` is trial t's paired speedup of the rebuilt kernel over the pre-removal kernel
// (pre-removal time / rebuilt time). Passes when there is at least one trial and every ratio is
// ≥ min_ratio: 0.995 in all trials passes, one trial at 0.98 fails.
RoundTripDecision JudgeRoundTrip(const std::vector<double>& ratios, double min_ratio = kRoundTripMinRatio);

// ---- the side effects ---------------------------------------------------------------------------

// One independent request to the generator: a fresh conversation each time (the round trip must
// not see the expert).
struct GeneratorRequest {
  std::string purpose;  // "propose" | "cite" | "rebuild" (transcripts, progress)
  std::string system;
  std::string prompt;
};

class LineageGenerator {
 public:
  virtual ~LineageGenerator() = default;
  // The reply's text. A non-ok Status is kpilot's or the endpoint's failure (unreachable, out of
  // retries, spending cap), which ends the walk; an unusable reply is text the gate rejects.
  virtual Result<std::string> Ask(const GeneratorRequest& request) = 0;
  // What the run states before the first request (endpoint, what it receives).
  virtual std::string Describe() const = 0;
  // Dollars and tokens spent so far (zero for agents).
  virtual llm::Usage Spent() const { return {}; }
};

// Over the LLM client (llm:PROVIDER:MODEL[@BASE_URL]): one chat call per request, no tools.
std::unique_ptr<LineageGenerator> MakeLlmLineageGenerator(std::shared_ptr<llm::ChatClient> client);

// Over an agent command (command:CMDLINE): per request a fresh workspace holding
// INSTRUCTIONS.md (the system text and the prompt; also on stdin); the reply is the file
// REPLY.md the agent writes there, else its stdout. Runs through RunAgentCommand
// (src/generate/command_generator.h): the same environment scrubbing, timeout and archiving.
std::unique_ptr<LineageGenerator> MakeCommandLineageGenerator(ProcessRunner& processes,
                                                              CommandGeneratorOptions options);

// The walk's generator for `spec` (llm:PROVIDER:MODEL[@BASE_URL] or command:CMDLINE), configured
// the way an optimize run's generator is (`setup`: the LLM config, its cap for llm:, the sandbox
// runner, the store folder hidden from a command: agent); its exchanges and agent runs go to
// `transcripts` (may be null). *prompts_override receives the LLM config's prompts_dir.
// InvalidInput naming --generator for any other spec (the walk needs a generator that writes
// code) or a command: with no command; NotFound when the agent is not on PATH.
Result<std::unique_ptr<LineageGenerator>> MakeLineageGenerator(const std::string& spec, const GeneratorSetup& setup,
                                                               std::shared_ptr<RunTranscripts> transcripts,
                                                               std::filesystem::path* prompts_override);

// A paired comparison of two kernel sources on the task.
struct Comparison {
  bool passed = false;        // the candidate compiled and every output was correct
  std::string verdict;        // VerdictName
  std::string summary;        // the verdict's sentence
  double speedup = 0;         // baseline time / candidate time, geometric mean over workloads
  Interval ci;                // its 95% CI
  nlohmann::json evaluation;  // the whole evaluation (ToJson), stored with the attempt; may be null
};

class LineageMeasure {
 public:
  virtual ~LineageMeasure() = default;
  // Compiles and checks `candidate` (a whole source file) on the task and times it paired against
  // `baseline` (a source; "" = the task's baseline). `label` names the files ("step2_after").
  // A candidate failure is a Comparison with passed = false; a non-ok Status is the machine's or
  // the task's fault (the baseline does not compile, no compiler).
  virtual Result<Comparison> Compare(const std::string& candidate, const std::string& baseline,
                                     const std::string& label) = 0;
  // "NVIDIA H200 (sm_90a)" / "host x86-64": the device of the card's provenance.
  virtual std::string Device() const = 0;
  // The card's platform ("sm_90a", "x86-64").
  virtual std::string Platform() const = 0;
};

// Over the harness: each Compare is one Evaluator::Evaluate with options.baseline_source set to
// the baseline written to a scratch folder (the optimizer's promotion gate times a challenger
// against its incumbent the same way). `evaluator` and `task` are borrowed.
std::unique_ptr<LineageMeasure> MakeHarnessMeasure(Evaluator& evaluator, const Task& task, EvalOptions options,
                                                   std::string device, std::string platform);

// ---- the walk ----------------------------------------------------------------------------------------

struct LineageOptions {
  int max_steps = 10;      // accepted steps before stopping ("max-steps")
  int max_rejections = 6;  // rejected attempts in a row before stopping ("max-rejections")
  int trials = 3;          // round-trip trials, each a paired evaluation
  double round_trip_min = kRoundTripMinRatio;
  std::filesystem::path prompts_dir;       // shipped templates (their lineage/ subfolder is used)
  std::filesystem::path prompts_override;  // the LLM config's prompts_dir ("" = none)
  std::string abi_header;                  // text of include/kpilot/kernel.h
  std::string kpilot_version = "kpilot";   // for provenance
  std::string expert_name;                 // file name of the expert
  std::string generator_spec;              // for the run record
  FeatureSet known_findings;               // finding ids triggers may name (empty: not checked)
};

// One attempt at a step, whatever became of it.
struct Attempt {
  int step = 0;     // 1-based: the step this attempt tried to make
  int attempt = 0;  // 1-based over the run
  // Where it ended: parse | declaration | code | measure | cite | round-trip (rejected), accepted,
  // or naive (the generator said the kernel is the naive form; the walk stopped).
  std::string stage;
  bool accepted = false;
  std::string reason;  // why it was rejected ("" when accepted)
  Proposal proposal;
  Comparison simplified;               // the simplified kernel timed against the pre-removal one
  std::vector<Comparison> round_trip;  // the rebuilt kernel against the pre-removal one, per trial
  std::string rebuilt_source;
};

// An accepted step: the transition evidence.
struct Step {
  int index = 0;              // 1 = the first removal from the expert
  Proposal proposal;          // declaration, card draft, the simplified source
  std::string before_source;  // the kernel the mechanism was removed from
  std::string before_name;
  std::string after_name;
  double effect = 0;  // the mechanism's paired speedup: after time / before time
  Interval effect_ci;
  std::vector<double> round_trip;  // per trial: before time / rebuilt time
  std::string date;                // ISO 8601 UTC date of acceptance
};

struct LineageResult {
  int64_t run_id = 0;       // 0 without a store
  std::string stop_reason;  // naive | max-steps | max-rejections
  std::string stop_detail;  // in words ("the generator says the kernel is naive", …)
  Comparison expert;        // the expert against the task's baseline
  std::vector<Step> steps;  // expert → naive order
  std::vector<Attempt> attempts;
  FeatureSet expert_features;  // the first accepted step's before set (empty when none)
  FeatureSet naive_features;   // the final state
  llm::Usage spent;
};

// Live progress, one JSON event at a time (the CLI prints one line each on stderr).
class LineageProgress {
 public:
  virtual ~LineageProgress() = default;
  virtual void Event(const nlohmann::json& event) = 0;
};

struct MiningOptions;
struct MiningResult;

class LineageWalk {
 public:
  // Everything is borrowed. `store` may be null (nothing recorded); `transcripts` may be null.
  LineageWalk(const Task& task, const FeatureSet& vocabulary, LineageGenerator& generator, LineageMeasure& measure,
              Store* store, RunTranscripts* transcripts, LineageProgress& progress);

  // Runs the walk from `expert_source`. An expert that does not pass is FailedPrecondition-like:
  // InvalidInput naming its verdict. Generator and machine failures end the walk with their Status
  // (what was recorded stays in the store, the run marked failed).
  Result<LineageResult> Run(const std::string& expert_source, const LineageOptions& options);

  // What `kpilot lineage` does: Run, then the accepted steps reversed into cards (CardsFromSteps,
  // the provenance from the task and the measure; Internal when CheckCardChain finds them
  // inconsistent), admission on the held-out task when options.held_out is set (AdmitCards, and
  // each card's AddAdmissionEvidence), each card checked by the skill library's validation (a
  // problem is reported as a `card_problem` progress event and kept, not fatal), the cards written
  // (WriteCards: admitted ones, or all without admission, to options.out; rejected ones to
  // out/rejected/, which loading skips), and a `cards` event recorded in the run.
  Result<MiningResult> Mine(const std::string& expert_source, const MiningOptions& options);

 private:
  const Task& task_;
  const FeatureSet& vocabulary_;
  LineageGenerator& generator_;
  LineageMeasure& measure_;
  Store* store_;
  RunTranscripts* transcripts_;
  LineageProgress& progress_;
};

// ---- the cards ------------------------------------------------------------------------------------

struct Provenance {
  std::string task;
  std::string device;
  std::string platform;
  std::string kpilot_version;
  int64_t run_id = 0;
  std::string language;  // "cuda" | "cpp"
};

// A finished card: the front matter as JSON (rendered to YAML) and the Markdown body.
struct SkillCard {
  std::string id;
  nlohmann::ordered_json front;  // every field of skills/README.md, in its order
  std::string body;
};

// The accepted steps reversed into cards, naive → expert: the card for step k (the last removal)
// comes first. Each card provides its step's feature, requires what the draft named (⊆ the
// simpler state; the whole simpler state when it named nothing), and conflicts with what the
// draft named minus the states' features. Ids are made unique by a numeric suffix.
std::vector<SkillCard> CardsFromSteps(const std::vector<Step>& steps, const Provenance& provenance);

// "" when the cards, applied in order from `naive`, are consistent with the feature states: each
// card's requires ⊆ the state before it, its provides are not yet in that state, its conflicts
// ∩ state = ∅, and the final state equals `expert`; else the first inconsistency.
std::string CheckCardChain(const std::vector<SkillCard>& cards, const FeatureSet& naive, const FeatureSet& expert);

// SKILL.md text: "---\n<YAML front matter>---\n\n<body>". The YAML is block style with every
// string double-quoted (JSON escapes are valid YAML), so it parses back to `front` exactly.
std::string RenderSkillCard(const SkillCard& card);
// YAML text of a JSON value (block style; strings double-quoted), `indent` spaces deep.
std::string ToYaml(const nlohmann::ordered_json& value, int indent = 0);

// ---- admission on a held-out task ---------------------------------------------------------------

// Whether a card carries over: the held-out start with the card applied, timed paired against the
// start itself. Admitted when it passed (compiled, correct on every workload) and the lower bound
// of its paired speedup's 95% CI is above 1; the reason says what was measured either way.
struct AdmissionDecision {
  bool admitted = false;
  std::string reason;
};
AdmissionDecision JudgeAdmission(const Comparison& applied, const std::string& start_name);

struct Admission {
  std::string card_id;
  bool admitted = false;
  std::string stage;      // "admitted", or where it was rejected: "generate" (no kernel) | "measure"
  std::string reason;     // JudgeAdmission's reason, or why the reply had no kernel
  Comparison comparison;  // the applied kernel against the start (empty at "generate")
  std::string source;     // the kernel the generator wrote ("" when none)
};

struct AdmissionOptions {
  std::filesystem::path prompts_dir;       // shipped templates (lineage/admit*.md)
  std::filesystem::path prompts_override;  // the LLM config's prompts_dir ("" = none)
  std::string abi_header;
  std::string start_name;  // file name of the held-out start
};

// Applies each card to the held-out task's start by the walk's generator
// (prompts/lineage/admit_system.md and admit.md: the held-out task, its reference, the ABI, the
// start and the card as SKILL.md) and gates the reply's kernel with `measure` (over the held-out
// task) paired against `start`. Records one `admission` event per card in the store (run
// `run_id`; nothing when `store` is null) and reports progress. A card whose language is not the
// held-out task's is InvalidInput before any request; generator and machine failures end it with
// their Status.
Result<std::vector<Admission>> AdmitCards(const std::vector<SkillCard>& cards, const Task& held_out,
                                          const std::string& start, LineageGenerator& generator,
                                          LineageMeasure& measure, const AdmissionOptions& options, Store* store,
                                          int64_t run_id, RunTranscripts* transcripts, LineageProgress& progress);

// Adds the admission's measurement to the card's `effect.measured`: provenance {source "kpilot
// lineage --admit-on", task, device, platform, date, kpilot_version, run, from: `start_name`}, the
// verdict, admitted, reason, and for a passing kernel its paired speedup and CI.
void AddAdmissionEvidence(SkillCard& card, const Admission& admission, const Provenance& held_out,
                          const std::string& start_name);

// Writes each card to `dir`/<id>/SKILL.md (creating folders; an existing card of the same id is
// replaced); returns the paths written.
Result<std::vector<std::filesystem::path>> WriteCards(const std::vector<SkillCard>& cards,
                                                      const std::filesystem::path& dir);

// ---- mining: the walk, its cards, admission and writing them ------------------------------------

// The held-out task admission applies each card to, and the kernel it starts from.
struct HeldOutTask {
  Task task;
  std::string start;       // the start kernel's source
  std::string start_name;  // its file name
};

// The held-out task in `dir` (--admit-on) and its start: the file `from` (--admit-from), else the
// task's reference. Checked before the walk spends anything: InvalidInput when its backend is not
// `mined`'s (cards are admitted only on a task of their backend) or it is `mined` itself; the
// loader's and reader's errors name the flag.
Result<HeldOutTask> LoadHeldOutTask(const Task& mined, const std::string& dir, const std::string& from);

struct MiningOptions {
  LineageOptions walk;
  std::filesystem::path out;          // the skills folder the cards are written to (<id>/SKILL.md)
  std::set<std::string> finding_ids;  // the ids a card's triggers may name (skills' ValidationOptions)
  // Admission, optional: the held-out task and a measure over it (both borrowed). Null: none, and
  // every card goes to `out`.
  const HeldOutTask* held_out = nullptr;
  LineageMeasure* held_out_measure = nullptr;
};

struct MiningResult {
  LineageResult walk;
  std::vector<Admission> admissions;            // one per card, in the cards' order; empty without admission
  std::vector<std::filesystem::path> written;   // the cards written to `out`
  std::vector<std::filesystem::path> rejected;  // the cards admission rejected, in out/rejected/
  std::vector<std::string> card_problems;       // the skill library's validation, one line each
  // As recorded in the run's `cards` event: {task, start, cards: [{card, admitted, stage, reason,
  // speedup, ci, path}]}; null without admission.
  nlohmann::json admission;
};

}  // namespace kpilot::lineage
