#include "optimize/optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "core/fs.h"
#include "core/sha256.h"
#include "core/stats.h"
#include "core/subprocess.h"
#include "profile/collect.h"
#include "profile/profiler.h"
#include "profile/static_profile.h"
#include "propose/param_space.h"
#include "task/formula.h"

namespace kpilot {

// Expansions in flight at once: the next one's drafts compile on the CPU cores while the GPU
// evaluates the current one's, so the evaluation queue does not wait on nvcc. Two keep the tree
// at most one batch behind its results; the adaptive default (OptimizeOptions::pipeline_depth 0)
// starts one deeper and goes further only while the evaluation queue is measured idle.
int NextPipelineDepth(int depth, double busy_s, double elapsed_s, int devices) {
  devices = std::max(1, devices);
  depth = std::max(depth, MinPipelineDepth(devices));
  if (elapsed_s <= 0 || depth >= MaxPipelineDepth(devices)) return depth;
  return busy_s < kAutoPipelineBusyGoal * elapsed_s * devices ? depth + 1 : depth;
}

namespace {

// A passing evaluation within this fraction of the best so far has its likely children compiled
// ahead (Loop::AnticipateAfter). UCT on the log reward expands the best nodes and their near ties
// most; the many passing configs well below the best would only compete for the same compile
// threads with the guesses for those. Not tuned: any new best is covered, and ties within 3%.
constexpr double kAnticipateWithin = 0.97;

// Drafts in a row that compile to binaries already evaluated before the run stops with
// "duplicates" (at least this many, and at least the evaluation budget).
constexpr int kMinDuplicatesToStop = 16;

using nlohmann::json;

// Waits for every job of a batch when it goes out of scope (the jobs call back into the loop).
struct WaitForAll {
  std::vector<std::future<EvalJobResult>>& futures;
  ~WaitForAll() {
    for (auto& f : futures)
      if (f.valid()) f.wait();
  }
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The wall time a run's earlier processes used, for --time on resume: each from its start (the
// run's creation, then each `resume` event) to its last recorded event. A process killed while
// proposing or evaluating used a little more, up to the kill, that no record shows.
double EarlierProcessesSeconds(const std::string& run_created_at, const std::vector<RunEventRecord>& events) {
  std::optional<double> start = StoreTimeSeconds(run_created_at), last = start;
  double total = 0;
  for (const auto& e : events) {
    std::optional<double> t = StoreTimeSeconds(e.created_at);
    if (!t) continue;
    if (e.kind == "resume") {
      if (start && last) total += std::max(0.0, *last - *start);
      start = t;
    }
    if (!start) start = t;  // a run row without a readable created_at: its first event
    last = t;
  }
  if (start && last) total += std::max(0.0, *last - *start);
  return total;
}

// A node's verdict evidence and raw numbers for generators that read them (llm:, command:), from
// its evaluation JSON (fresh, or the stored result blob on resume).
void EvidenceFromJson(const json& ej, std::string* summary, std::string* evidence, std::string* metrics) {
  if (!ej.is_object()) return;
  json v = ej.value("verdict", json::object());
  *summary = v.value("summary", "");
  json ev = v.value("evidence", json::object());
  *evidence = ev.empty() ? "" : JsonText(ev);
  json m = json::object();
  json c = ej.value("compile", json::object());
  if (!c.value("resources", json::array()).empty()) m["kernels"] = c["resources"];
  json times = json::object();
  for (const auto& t : ej.value("timings", json::array()))
    times[t.value("workload", "")] = t.value("candidate", json::object()).value("median_ms", 0.0);
  if (!times.empty()) m["median_ms"] = times;
  for (const char* k : {"bottleneck", "achieved_fraction", "joules"})
    if (ej.contains(k)) m[k] = ej[k];
  *metrics = m.empty() ? "" : JsonText(m);
}

// Skill cards retrieval offers per expansion (the generators show fewer: llm: its top 3).
constexpr size_t kSkillsOffered = 8;

// Expansions in a row whose every draft the generator failed to make before the node is closed.
constexpr int kGeneratorFailuresToClose = 2;

ParamValues ParamsFromJson(const std::string& text) {
  ParamValues p;
  json j = json::parse(text, nullptr, false);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) p[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return p;
}

}  // namespace

double JoulesRatio(const Evaluation& e) {
  double log_sum = 0;
  int n = 0;
  for (const auto& t : e.timings)
    if (t.joules_per_call > 0 && t.baseline_joules_per_call > 0) {
      log_sum += std::log(t.baseline_joules_per_call / t.joules_per_call);
      ++n;
    }
  return n > 0 ? std::exp(log_sum / n) : 0;
}

double MixScore(double speedup, double joules_ratio, double weight) {
  if (speedup <= 0 || joules_ratio <= 0) return speedup;
  return std::exp(std::log(speedup) + weight * std::log(joules_ratio));
}

// What the loop keeps per node beyond the tree's numbers.
struct Optimizer::NodeData {
  std::string source;
  std::string source_name;
  std::filesystem::path path;      // the materialized source file
  ParamValues params;
  std::string verdict;
  double speedup = 0;
  double speedup_lo = 0;           // the lower end of its speedup's CI (energy objective)
  // What the tree and the promotion rule compare: the speedup, or under --objective mix the
  // speedup weighed with the energy saving (MixScore).
  double score = 0;
  double joules = 0;               // mean joules per call over workloads (energy objective)
  std::string bottleneck;
  double achieved_fraction = 0;    // of the roofline floor (cuda with a calibration; 0 = unknown)
  std::vector<Finding> findings;
  std::string verdict_summary, verdict_evidence, metrics;  // for generators (EvidenceFromJson)
};

namespace {

// An evaluation of a node that its counter profile may take (EvalJob::counters_of).
struct ProfileSource {
  std::shared_ptr<const Evaluation> evaluation;  // null: none at hand (the node is evaluated again)
  int device = -1;                               // the GPU queue that made it
};

}  // namespace

class Optimizer::Loop {
 public:
  Loop(Optimizer& o, OptimizeOptions opts, int64_t run_id)
      : o_(o), opts_(std::move(opts)), run_id_(run_id), tree_(opts_.search), rng_(opts_.seed) {
    // Retrieval ranks cards by their hit rate so far (statistics that cannot be read rank every
    // card at the prior, as for a card never applied).
    if (o_.usage_ && opts_.skills)
      if (auto stats = ReadUsageStats(*o_.usage_); stats.ok())
        for (auto& u : *stats)
          if (u.kind == "card") card_usage_[u.name] = u;
    // Only cuda compiles report registers, spills and shared memory.
    if (opts_.footprints && o_.task_.backend == Backend::kCuda)
      footprints_ = std::make_unique<ExecutorFootprints>(
          o_.executor_, o_.task_, BaseEvalOptions(),
          [this](const std::string& source, const std::string& name) { return Materialize(source, name); });
  }

  ~Loop() {
    // Jobs in flight call back into this loop (admit, on_done) and borrow the task and tools_:
    // wait for them, also when an exception unwinds the loop.
    for (auto& b : in_flight_) {
      for (auto& f : b.futures)
        if (f.valid()) f.wait();
      if (b.drafts.valid()) b.drafts.wait();  // a generator still writing borrows the context's task
    }
    for (auto& [node, f] : counters_pending_)
      if (f.valid()) f.wait();
  }

  Result<OptimizeResult> Start();
  // Resumes from what the store holds of the run (created at `run_created_at`).
  Result<OptimizeResult> Continue(const std::vector<RunNodeRecord>& nodes, const std::vector<RunEventRecord>& events,
                                  const std::string& run_created_at);

 private:
  Result<OptimizeResult> Iterate();
  Result<OptimizeResult> Finish(const std::string& reason);
  // --objective energy: among passed nodes whose speedup lies within the fastest's CI (at or
  // above its lower end), the one with the fewest joules per call; `fastest` when none of them
  // measured joules.
  int64_t EnergyBest(int64_t fastest) const;
  Result<std::filesystem::path> Materialize(const std::string& source, const std::string& name);
  EvalOptions BaseEvalOptions() const;
  // Evaluates one draft proposed from `parent` (recorded as event `proposal`); false when the
  // binary was seen before (a duplicate, not evaluated).
  Result<bool> EvaluateDraft(int64_t parent, int64_t proposal, const Draft& d, std::future<EvalJobResult> f);
  // Submits draft `d` (event `proposal` number `proposal`) through SubmitJournaled.
  std::future<EvalJobResult> SubmitDraft(const Draft& d, const std::filesystem::path& path, int64_t proposal);
  // Speculative compiles (ExecutorFootprints::Prefetch) of the configs the generator anticipates
  // for a node at `params` of `source`: for the root as it is submitted, and for each draft whose
  // evaluation passes within kAnticipateWithin of the best evaluation ended so far, the moment it
  // ends (on the executor's thread, from its on_done), so that its likely children compile while
  // the GPU runs its profile, the promotion checks and the drafts queued before them. Cuda runs
  // with footprints only, never a replay (whose results are ready at once).
  bool Anticipating() const;
  void Anticipate(const std::filesystem::path& source, const ParamValues& params);
  void AnticipateAfter(const std::filesystem::path& source, const ParamValues& params, const EvalJobResult& r);
  // The result of `job`, journaled under `key` the moment it ends; on resume, the result the
  // interrupted process journaled under `key` instead, when there is one.
  std::future<EvalJobResult> SubmitJournaled(EvalJob job, const json& key);
  // Records a finished evaluation as event `result` ({key…, "blob": its RecordJson}) on the
  // executor's thread; the first failure to write is returned by JournalStatus.
  void Journal(json key, const EvalJobResult& r);
  Status JournalStatus();
  // The run's row: the incumbent as its best so far, so `kpilot runs` shows a run in progress
  // (or interrupted) with what it has found; Finish writes the re-evaluated final.
  Status RecordBest();
  // The journaled result under `blob`, as a ready future; nullopt when it cannot be read.
  std::optional<std::future<EvalJobResult>> Journaled(const std::string& blob);
  Status RecordNode(int64_t node, int64_t parent, int64_t proposal, const NodeData& n, const Outcome& out,
                    const Evaluation* e, const std::string& object_sha);
  void Analyze(const Evaluation& e, NodeData* n) const;
  // `own`: the node's evaluation job when the caller has it (a new best's counter profile takes
  // its evaluation, or the promotion gate's, instead of evaluating the node again).
  Status MaybePromote(int64_t node, const EvalJobResult* own = nullptr);
  // Counter profiles of new bests (opts_.counters), made only for the bests the search acts on:
  // WantCounters marks a new best (with `have`, an evaluation of it that a profile may take
  // instead of evaluating the node again: ProfileSource, EvalJob::counters_of); ProfileIfWanted
  // queues a marked node's profile on the executor (RequestCounters) when the tree selects it
  // for expansion, or for the final best at the end; CollectCounters applies those finished —
  // waiting for `wait_for`'s, or for all — and records each as event `counters`; ApplyCounters
  // puts a recorded profile's findings and class on the node (also on resume).
  bool CountersWanted() const;
  void WantCounters(int64_t node, ProfileSource have);
  void ProfileIfWanted(int64_t node);
  void RequestCounters(int64_t node, ProfileSource have = {});
  Status CollectCounters(std::optional<int64_t> wait_for, bool wait_all = false);
  void ApplyCounters(int64_t node, const json& payload);
  Status Event(const std::string& kind, json payload);
  // When job `r` was submitted, compiled and held its GPU, with the executor's clock now
  // (seconds; bench/busy_timeline.py finds where a GPU idled and what it waited for); empty for
  // a replay, whose clock is modelled, and for a result served from the journal, which keeps
  // no submit time (its times were an earlier process's clock).
  json Times(const EvalJobResult& r) const;
  ProposalContext ContextFor(int64_t node);
  // The skill cards retrieval offers for node `n` (none with --skills off or no library).
  std::vector<OfferedSkill> SkillsFor(const NodeData& n);
  // One usage row set per evaluated child: cards offered for its parent and applied by its draft,
  // the parent's findings, and the child's speedup over the parent.
  Status RecordSkillUsage(int64_t parent, int64_t node, const Draft& d, const NodeData& child);
  // Generators: drafts they failed to make go to memory and the events; spending is recorded.
  Status RecordGeneratorFailure(int64_t parent, const Draft& d);
  Status RecordSpend();
  GeneratorSpend TotalSpend() const;

  // One expansion: its drafts still being written by the generator (`drafts` valid), or
  // recorded, submitted (compiling) and not yet evaluated.
  struct Batch {
    int64_t parent;
    std::vector<std::pair<int64_t, Draft>> proposed;
    std::vector<std::future<EvalJobResult>> futures;
    std::future<Result<std::vector<Draft>>> drafts;
    bool proposing() const { return drafts.valid(); }
  };
  // What became of an expansion's answer from the generator (TakeDrafts).
  enum class Taken {
    kSubmitted,        // its drafts are recorded and submitted into the batch
    kFailed,           // the generator failed to make any: tried again on a later selection
    kClosed,           // the node was closed (failures in a row, or nothing new)
    kChildrenPending,  // nothing new, but the node's other expansions are still in flight
    kNone,             // drafts, but the budget is spent: none was submitted
  };
  // Records the generator's spend and the drafts it failed to make, closes a node whose
  // expansions keep failing or that has nothing new (unless `siblings_in_flight`), and otherwise
  // records each proposal (so a crash can resume it) and submits it into `b`, counting pending_.
  Result<Taken> TakeDrafts(int64_t sel, Result<std::vector<Draft>> drafts, bool siblings_in_flight, Batch* b);
  // Expansions in flight that the generator is still writing.
  int Proposing() const;
  // Evaluations the budget still has room for: less those done, the drafts submitted and not yet
  // evaluated, and --drafts for each expansion the generator is still writing.
  int BudgetLeft() const;
  // Under a spending cap (--max-cost, --max-tokens) another request goes out beside the
  // `proposing` ones only while the spend so far plus what those are expected to cost (this
  // process's mean per answered expansion) stays under the cap; before any answer, one at a time.
  // So concurrent requests overshoot a cap no more than sequential ones would, give or take the
  // spread of a request's cost.
  bool CapAllowsAnotherRequest(int proposing) const;

  Optimizer& o_;
  OptimizeOptions opts_;
  int64_t run_id_;
  SearchTree tree_;
  SearchMemory memory_;
  std::mt19937_64 rng_;
  std::map<int64_t, NodeData> data_;
  const std::vector<std::unique_ptr<Tool>> tools_ = BuiltinTools();  // for every node's static findings
  std::mutex seen_mu_;                  // seen_binaries_ is read on the executor's compile threads
  std::set<std::string> seen_binaries_;
  std::vector<ParamValues> tried_params_;
  int64_t incumbent_ = -1;
  int evaluations_ = 0, promotion_checks_ = 0, duplicates_ = 0, since_promotion_ = 0;
  int answered_ = 0;  // expansions the generator answered in this process (CapAllowsAnotherRequest)
  int pending_ = 0;   // drafts submitted and not yet evaluated (Iterate)
  // Drafts in a row whose binary was evaluated already: they hand their budget back, so a
  // generator that only ever repeats itself (an LLM rewording the same kernel) would otherwise
  // never end the run.
  int duplicates_in_a_row_ = 0;
  GeneratorSpend spend_before_;         // what earlier sessions of this run spent (resume)
  GeneratorSpend spend_recorded_;       // the last "spend" event's totals
  std::map<int64_t, int> generator_failures_;  // failed expansions in a row, by node
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double earlier_processes_s_ = 0;      // wall time the run's interrupted processes used (resume)
  // Skill cards: usage per card id, read once (retrieval ranks by hit rate), and the cards offered
  // for each parent (recorded with its children's usage).
  std::map<std::string, UsageStats> card_usage_;
  std::map<int64_t, std::vector<std::string>> offered_;
  std::map<std::string, std::string> card_text_;  // SKILL.md text by card id, read once per run
  // Expansions kept in flight: opts_.pipeline_depth, or (0: adaptive) grown by NextPipelineDepth.
  int depth_ = opts_.pipeline_depth > 0 ? opts_.pipeline_depth
               : opts_.replay.empty()  ? MinPipelineDepth(o_.executor_.Devices())
                                       : kReplayPipelineDepth;
  std::unique_ptr<ExecutorFootprints> footprints_;  // null: none (--footprints off, not cuda)
  std::atomic<double> best_ended_ = 0;  // the best passing speedup among evaluations ended (AnticipateAfter)
  std::map<int64_t, std::future<EvalJobResult>> counters_pending_;  // by node
  std::deque<Batch> in_flight_;  // Iterate's expansions in flight (waited for by ~Loop)
  std::set<int64_t> counters_done_;     // nodes whose counter profile was recorded (or failed)
  // Bests not profiled yet, with the evaluation a profile may take. A best superseded before the
  // tree selects it is profiled only if the tree selects it later; at the end, only the final
  // best is (Finish).
  std::map<int64_t, ProfileSource> counters_wanted_;
  std::string counters_off_;            // why counter profiles stopped for this run ("" = they did not)
  std::optional<std::string> ncu_;      // ncu's path, looked up at the first profile ("" = none)
  std::mutex journal_mu_;
  Status journal_error_ = Status::Ok();  // the first journal write that failed
  // Resume: the blobs of the results the interrupted process journaled, by their key's JSON text
  // ({"proposal": seq}, {"gate": node, "incumbent": node} or {"final": node}); each is used once.
  std::map<std::string, std::string> journaled_;
  // The drafts' journaled results, read before anything is evaluated (each one's binary is then
  // seen, so a draft the interrupted run had skipped as its duplicate is skipped again).
  std::map<std::string, std::future<EvalJobResult>> journal_served_;
  int64_t root_proposal_ = -1;  // resume before the root was recorded: its proposal's number
  std::optional<std::string> root_source_;  // ...and the source it recorded (runs since session 16)
  int counter_profiles_ = 0;
  double counters_s_ = 0;
};

namespace {

std::vector<Finding> FindingsFromJson(const json& a) {
  std::vector<Finding> out;
  if (a.is_array())
    for (const auto& f : a) out.push_back(FindingFromJson(f));
  return out;
}

}  // namespace

bool Optimizer::Loop::CountersWanted() const {
  // Under --feedback none the generator sees no findings or numbers: a profile would be GPU time
  // spent for nothing.
  return opts_.counters && opts_.replay.empty() && o_.task_.backend == Backend::kCuda && counters_off_.empty() &&
         opts_.feedback != FeedbackMode::kNone;
}

void Optimizer::Loop::WantCounters(int64_t node, ProfileSource have) {
  if (!CountersWanted() || counters_done_.count(node) || counters_pending_.count(node)) return;
  // An evaluation at hand is kept over none (a resumed run wants its incumbent again with none).
  auto it = counters_wanted_.find(node);
  if (it == counters_wanted_.end()) counters_wanted_.emplace(node, std::move(have));
  else if (!it->second.evaluation) it->second = std::move(have);
}

void Optimizer::Loop::ProfileIfWanted(int64_t node) {
  auto it = counters_wanted_.find(node);
  if (it == counters_wanted_.end()) return;
  ProfileSource have = std::move(it->second);
  counters_wanted_.erase(it);
  RequestCounters(node, std::move(have));
}

void Optimizer::Loop::RequestCounters(int64_t node, ProfileSource have) {
  if (!CountersWanted() || counters_done_.count(node) || counters_pending_.count(node)) return;
  const NodeData& n = data_.at(node);
  // Only a compiled kernel is profiled (a KernelBench ModelNew .py or a flashinfer solution is not).
  if (n.path.extension() != ".cu") return;
  EvalJob job;
  job.task = &o_.task_;
  job.source = n.path;
  job.params = n.params;
  job.options = BaseEvalOptions();
  // One workload, as `kpilot profile` does by default: the run's last (usually the largest).
  job.options.workloads = {opts_.workloads.empty() ? o_.task_.workloads.back().name : opts_.workloads.back()};
  job.options.energy = false;  // the profile needs the time and trace, not joules
  job.counter_tools = &tools_;
  job.ahead = true;  // a proposal may wait for it
  job.counters_of = std::move(have.evaluation);
  job.counters_of_device = have.device;
  if (!ncu_) ncu_ = FindOnPath("ncu");
  job.counters.ncu_path = *ncu_;
  counters_pending_[node] = o_.executor_.Submit(std::move(job));
}

void Optimizer::Loop::ApplyCounters(int64_t node, const json& payload) {
  auto it = data_.find(node);
  if (it == data_.end() || payload.contains("error")) return;
  NodeData& n = it->second;
  n.findings = FindingsFromJson(payload.value("findings", json::array()));
  if (!payload.value("bottleneck", "").empty()) n.bottleneck = payload.value("bottleneck", "");
  json m = n.metrics.empty() ? json::object() : json::parse(n.metrics, nullptr, false);
  if (!m.is_object()) m = json::object();
  m["bottleneck"] = n.bottleneck;
  // By kernel; `--feedback raw` keeps "counters" for the findings' evidence.
  json counters = json::object();
  for (const auto& k : payload.value("kernels", json::array()))
    if (k.contains("metrics")) counters[k.value("kernel", "")] = k["metrics"];
  m["kernel_counters"] = counters;
  n.metrics = JsonText(m);
}

Status Optimizer::Loop::CollectCounters(std::optional<int64_t> wait_for, bool wait_all) {
  for (auto it = counters_pending_.begin(); it != counters_pending_.end();) {
    const bool ready = it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (!ready && !wait_all && wait_for != it->first) {
      ++it;
      continue;
    }
    const int64_t node = it->first;
    EvalJobResult r = it->second.get();
    it = counters_pending_.erase(it);
    counters_done_.insert(node);
    json payload = {{"node", node}};
    Status why = !r.status.ok()            ? r.status
                 : r.counters              ? Status::Ok()
                 : !r.counters_status.ok() ? r.counters_status
                                           : Status::Internal("the executor returned no counter profile");
    if (!why.ok()) {
      payload["error"] = why.message();
      payload["times"] = Times(r);
      // A profiler that cannot run here (no CUPTI counters and no ncu, no permission) will not
      // run for the next best either: the run goes on with static findings.
      if (why.code() == StatusCode::kUnavailable) {
        counters_off_ = why.message();
        payload["counters_off"] = true;
      }
      KPILOT_RETURN_IF_ERROR(Event("counters", payload));
      continue;
    }
    const CounterProfile& cp = *r.counters;
    json findings = json::array(), kernels = json::array();
    for (const auto& f : AllFindings(cp.reports)) findings.push_back(ToJson(f));
    for (const auto& k : cp.reports) kernels.push_back(ToJson(k, true));
    payload["times"] = Times(r);
    payload["profiler"] = cp.profiler;
    payload["version"] = cp.version;
    payload["wall_s"] = r.counters_s;
    payload["bottleneck"] = cp.reports.empty() ? "" : std::string(BottleneckName(cp.reports.front().roofline.result));
    payload["stage1"] = std::string(BottleneckName(cp.stage1));
    payload["findings"] = findings;
    payload["kernels"] = kernels;
    if (!cp.fallback_note.empty()) payload["note"] = cp.fallback_note;
    // Where the profile's time went (runner steps, CUPTI's set-up, passes): bench/busy_timeline.py.
    if (!cp.info.empty()) payload["profiler_info"] = cp.info;
    ApplyCounters(node, payload);
    ++counter_profiles_;
    counters_s_ += r.counters_s;
    KPILOT_RETURN_IF_ERROR(Event("counters", payload));
  }
  return Status::Ok();
}

Status Optimizer::Loop::Event(const std::string& kind, json payload) {
  auto seq = o_.store_.AddRunEvent(run_id_, kind, JsonText(payload));
  if (!seq.ok()) return seq.status();
  payload["event"] = kind;
  payload["run"] = run_id_;
  o_.progress_.Event(payload);
  return Status::Ok();
}

json Optimizer::Loop::Times(const EvalJobResult& r) const {
  if (!opts_.replay.empty() || r.submitted_s <= 0) return json::object();
  json t = {{"now_s", o_.executor_.ElapsedSeconds()}, {"submitted_s", r.submitted_s},
            {"compile_start_s", r.compile_start_s}, {"compile_end_s", r.compile_end_s},
            {"eval_start_s", r.eval_start_s},      {"eval_end_s", r.eval_end_s}};
  // A counter job that took an evaluation made before ran no runner of its own for it.
  if (r.evaluation_reused) {
    t["evaluation_reused"] = true;
    if (r.sass_end_s > 0) t["sass_end_s"] = r.sass_end_s;
    return t;
  }
  // The runner's own steps (seconds since it started: context, objects, checks, timing, end),
  // which say how much of the time on the GPU went to checks and timing.
  const json& d = r.evaluation.run.details;
  if (d.is_object() && d.contains("timeline_s")) t["runner_timeline_s"] = d["timeline_s"];
  t["runner_s"] = r.evaluation.run_s;  // the evaluation's runner process, start to exit
  if (r.sass_end_s > 0) t["sass_end_s"] = r.sass_end_s;
  return t;
}

EvalOptions Optimizer::Loop::BaseEvalOptions() const {
  EvalOptions e;
  e.workloads = opts_.workloads;
  e.compile.cuda_arch = opts_.arch;
  e.timeout_s = opts_.eval_timeout_s;
  e.timing.max_seconds = opts_.timing_max_seconds;
  e.energy = opts_.objective != "time";
  e.device = opts_.device;
  e.timing.mode = opts_.timing;
  return e;
}

Result<std::filesystem::path> Optimizer::Loop::Materialize(const std::string& source, const std::string& name) {
  std::string ext = std::filesystem::path(name).extension().string();
  std::filesystem::path p = o_.store_.dir() / "runs" / std::to_string(run_id_) / "sources" /
                            (Sha256Hex(source).substr(0, 16) + "-" + std::filesystem::path(name).stem().string() + ext);
  if (!std::filesystem::exists(p)) KPILOT_RETURN_IF_ERROR(WriteFileAtomic(p, source));
  return p;
}

void Optimizer::Loop::Journal(json key, const EvalJobResult& r) {
  Status st = Status::Ok();
  try {  // on the executor's thread: nothing may escape
    auto blob = o_.store_.PutBlob(JsonText(RecordJson(r)));
    st = blob.status();
    if (blob.ok()) {
      key["blob"] = *blob;
      auto seq = o_.store_.AddRunEvent(run_id_, "result", JsonText(key));
      st = seq.status();
    }
  } catch (const std::exception& e) {
    st = Status::Internal(e.what());
  }
  std::lock_guard<std::mutex> lock(journal_mu_);
  if (!st.ok() && journal_error_.ok()) journal_error_ = st.WithContext("journaling a finished evaluation");
}

Status Optimizer::Loop::RecordBest() {
  auto run = o_.store_.GetRun(run_id_);
  if (!run.ok()) return run.status();
  if (!run->has_value() || incumbent_ < 0) return Status::Ok();
  RunRecord rec = **run;
  rec.best_node = incumbent_;
  rec.best_speedup = data_.at(incumbent_).speedup;
  return o_.store_.UpdateRun(rec);
}

Status Optimizer::Loop::JournalStatus() {
  std::lock_guard<std::mutex> lock(journal_mu_);
  return journal_error_;
}

std::optional<std::future<EvalJobResult>> Optimizer::Loop::Journaled(const std::string& blob) {
  auto text = o_.store_.GetBlob(blob);
  if (!text.ok()) return std::nullopt;
  auto r = EvalJobResultFromRecord(json::parse(*text, nullptr, false));
  if (!r.ok()) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(seen_mu_);
    seen_binaries_.insert(r->object_sha);  // as admit did in the interrupted process
  }
  std::promise<EvalJobResult> p;
  p.set_value(std::move(r).value());
  return p.get_future();
}

std::future<EvalJobResult> Optimizer::Loop::SubmitJournaled(EvalJob job, const json& key) {
  const std::string k = JsonText(key);
  if (auto it = journal_served_.find(k); it != journal_served_.end()) {
    std::future<EvalJobResult> served = std::move(it->second);
    journal_served_.erase(it);
    return served;
  }
  if (auto it = journaled_.find(k); it != journaled_.end()) {
    auto served = Journaled(it->second);
    journaled_.erase(it);
    if (served) return std::move(*served);
  }
  job.on_done = [this, key, then = std::move(job.on_done)](const EvalJobResult& r) {
    Journal(key, r);
    if (then) then(r);
  };
  return o_.executor_.Submit(std::move(job));
}

std::future<EvalJobResult> Optimizer::Loop::SubmitDraft(const Draft& d, const std::filesystem::path& path,
                                                        int64_t proposal) {
  EvalJob job;
  job.task = &o_.task_;
  job.source = path;
  job.params = d.params;
  job.options = BaseEvalOptions();
  // A binary evaluated before is not evaluated again (the set is touched on compile threads).
  job.admit = [this](const std::string& sha) {
    std::lock_guard<std::mutex> lock(seen_mu_);
    return seen_binaries_.insert(sha).second;
  };
  if (Anticipating())
    job.on_done = [this, path, params = d.params](const EvalJobResult& r) { AnticipateAfter(path, params, r); };
  return SubmitJournaled(std::move(job), {{"proposal", proposal}});
}

bool Optimizer::Loop::Anticipating() const { return opts_.anticipate && footprints_ && opts_.replay.empty(); }

void Optimizer::Loop::Anticipate(const std::filesystem::path& source, const ParamValues& params) {
  if (!Anticipating()) return;
  try {  // maybe on the executor's thread: nothing may escape
    footprints_->Prefetch(source, o_.proposer_.Anticipate(o_.task_, params));
  } catch (const std::exception&) {
    // Only a guess: a failure to make it costs nothing but the head start.
  }
}

void Optimizer::Loop::AnticipateAfter(const std::filesystem::path& source, const ParamValues& params,
                                      const EvalJobResult& r) {
  if (!r.evaluation.verdict.passed()) return;
  const double s = r.evaluation.speedup_geomean;
  double best = best_ended_.load();
  while (s > best && !best_ended_.compare_exchange_weak(best, s)) {
  }
  if (s >= kAnticipateWithin * best) Anticipate(source, params);
}

void Optimizer::Loop::Analyze(const Evaluation& e, NodeData* n) const {
  n->verdict = std::string(VerdictName(e.verdict.kind));
  n->speedup = e.verdict.passed() ? e.speedup_geomean : 0;
  n->speedup_lo = e.verdict.passed() ? e.speedup_geomean_ci.lo : 0;
  n->score = n->speedup;
  if (opts_.objective == "mix" && e.verdict.passed()) n->score = MixScore(e.speedup_geomean, JoulesRatio(e), opts_.energy_weight);
  double joules = 0;
  for (const auto& t : e.timings) joules += t.joules_per_call;
  n->joules = e.timings.empty() ? 0 : joules / static_cast<double>(e.timings.size());
  EvidenceFromJson(ToJson(e), &n->verdict_summary, &n->verdict_evidence, &n->metrics);
  if (o_.task_.backend != Backend::kCuda || !e.verdict.passed() || e.compile.resources.empty()) return;
  // Stage-1 class from the measured time and the calibration; stage-2 tools on what needs no
  // counters (the static profile): cheap enough for every node.
  ProfileContext ctx;
  ctx.compute_precision = std::string(DTypeName(o_.task_.compute_precision.value_or(o_.task_.outputs.front().dtype)));
  RooflineInput in;
  if (!e.timings.empty()) {
    const Workload* w = o_.task_.FindWorkload(e.timings.back().workload);
    if (w) {
      in.flops = w->flops;
      in.min_bytes = w->min_bytes;
    }
    in.time_ms = e.timings.back().candidate.median;
  }
  in.dram_bytes_per_s = e.run.calibration.dram_bytes_per_s;
  in.peak_flops_per_s = e.run.calibration.fp32_flops_per_s;
  ctx.roofline = ClassifyRoofline(in);
  n->bottleneck = std::string(BottleneckName(ctx.roofline.result));
  n->achieved_fraction = ctx.roofline.achieved_fraction;
  auto limits = SmLimitsFor(e.compile.resources.front().arch.empty() ? "sm_90a" : e.compile.resources.front().arch);
  // The kernels the calls launched (all of them where some workload was not traced, or nothing
  // was, as in a replay).
  std::vector<std::string> timed;
  for (const auto& t : e.timings) timed.push_back(t.workload);
  auto profiles = LaunchedOnly(StaticProfiles(e.compile), TracedKernelNames(e.run.details, timed));
  if (e.run.details.is_object() && e.run.details.contains("static_mix"))
    AdoptStoredMixes(e.run.details["static_mix"], &profiles);  // a replay's stored SASS mix
  for (const auto& sp : profiles) {
    ProfileContext k = ctx;
    k.kernel = sp.resources.name;
    k.static_profile = sp;
    if (limits.ok()) k.occupancy = ComputeOccupancy(*limits, 256, sp.resources.registers, sp.resources.shared_bytes);
    KernelReport r = AnalyzeKernel(k, tools_, false);
    n->findings.insert(n->findings.end(), r.findings.begin(), r.findings.end());
  }
  std::sort(n->findings.begin(), n->findings.end(),
            [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  json m = n->metrics.empty() ? json::object() : json::parse(n->metrics, nullptr, false);
  m["bottleneck"] = n->bottleneck;
  m["achieved_fraction"] = n->achieved_fraction;
  n->metrics = JsonText(m);
}

Status Optimizer::Loop::RecordNode(int64_t node, int64_t parent, int64_t proposal, const NodeData& n,
                                   const Outcome& out, const Evaluation* e, const std::string& object_sha) {
  RunNodeRecord r;
  r.run_id = run_id_;
  r.node = node;
  r.parent = parent;
  r.proposal = proposal;
  r.source_name = n.source_name;
  auto blob = o_.store_.PutBlob(n.source);
  if (!blob.ok()) return blob.status();
  r.source_blob = *blob;
  r.params_json = json(n.params).dump();
  r.summary = out.summary;
  r.finding = out.finding;
  r.verdict = n.verdict;
  r.speedup = n.speedup;
  if (e) {
    json ej = ToJson(*e);
    ej["object_sha"] = object_sha;
    ej["bottleneck"] = n.bottleneck;
    ej["joules"] = n.joules;
    ej["achieved_fraction"] = n.achieved_fraction;
    ej["tree_speedup"] = out.speedup;  // what the tree was given (differs from speedup under --objective mix)
    json findings = json::array();
    for (const auto& f : n.findings) findings.push_back(ToJson(f));
    ej["findings"] = findings;
    auto rb = o_.store_.PutBlob(JsonText(ej));
    if (!rb.ok()) return rb.status();
    r.result_blob = *rb;
  }
  return o_.store_.AddRunNode(r);
}

namespace {

// A finding's evidence as the strings retrieval matches a card move's condition against: every
// string value, alone ("long_scoreboard") and with its key ("limiter: shared memory").
std::vector<std::string> EvidenceStrings(const json& evidence) {
  std::vector<std::string> out;
  if (!evidence.is_object()) return out;
  for (const auto& [key, value] : evidence.items())
    if (value.is_string()) {
      out.push_back(value.get<std::string>());
      out.push_back(key + ": " + value.get<std::string>());
    }
  return out;
}

}  // namespace

std::vector<OfferedSkill> Optimizer::Loop::SkillsFor(const NodeData& n) {
  std::vector<OfferedSkill> out;
  if (!opts_.skills || !o_.skills_) return out;
  RetrievalContext rc;
  // Cards are matched to the parent's findings only when the tools' guidance is pushed to the
  // generator: under the feedback and tools ablations a card's trigger would leak the finding.
  if (opts_.feedback == FeedbackMode::kTools && opts_.tools == ToolsMode::kProactive) {
    for (const auto& f : n.findings) rc.findings.push_back({f.id, EvidenceStrings(f.evidence), f.guidance});
    rc.roofline_class = n.bottleneck;
  }
  rc.task_text = o_.task_.name + ". " + o_.task_.description;
  // What the parent's code already has: cards that require a feature need it present, cards
  // whose provides are all present become tune-only.
  rc.features = DetectFeatures(n.source);
  rc.language = o_.task_.backend == Backend::kCuda ? "cuda" : "cpp";
  rc.platform = o_.task_.backend == Backend::kCuda ? opts_.arch : "";
  for (const auto& t : o_.task_.inputs) rc.dtypes.insert(std::string(DTypeName(t.dtype)));
  for (const auto& t : o_.task_.outputs) rc.dtypes.insert(std::string(DTypeName(t.dtype)));
  if (o_.task_.compute_precision) rc.dtypes.insert(std::string(DTypeName(*o_.task_.compute_precision)));
  RetrieveOptions ro;
  ro.limit = kSkillsOffered;
  ro.usage = &card_usage_;
  Retrieval r = Retrieve(*o_.skills_, rc, ro);
  for (const RetrievedCard& rcard : r.cards) {
    OfferedSkill s;
    s.id = rcard.card->id;
    s.intent = rcard.card->intent;
    s.tune_only = rcard.tune_only;
    s.reason = rcard.reason;
    s.folder = rcard.card->source.parent_path();
    auto [text, unread] = card_text_.try_emplace(s.id);
    if (unread) {
      auto read = ReadFile(rcard.card->source);
      text->second = read.ok() ? *read : "";
    }
    s.card_text = text->second;
    for (const MatchedMove& m : rcard.moves) {
      const ParamMove& pm = rcard.card->params.at(m.index);
      s.moves.push_back({pm.param, std::string(MoveDirectionName(pm.move)), pm.value.value_or(""), pm.trigger, m.reason});
    }
    out.push_back(std::move(s));
  }
  return out;
}

Status Optimizer::Loop::RecordSkillUsage(int64_t parent, int64_t node, const Draft& d, const NodeData& child) {
  if (!o_.usage_ || !opts_.skills) return Status::Ok();
  UsageEvent ev;
  ev.run_id = run_id_;
  ev.node = node;
  if (auto it = offered_.find(parent); it != offered_.end()) ev.cards_offered = it->second;
  ev.cards_applied = d.skills_applied;
  const NodeData& p = data_.at(parent);
  for (const auto& f : p.findings)
    if (std::find(ev.findings_fired.begin(), ev.findings_fired.end(), f.id) == ev.findings_fired.end())
      ev.findings_fired.push_back(f.id);
  if (!d.targeted_finding.empty()) ev.findings_applied.push_back(d.targeted_finding);
  if (p.speedup > 0 && child.speedup > 0) ev.speedup = child.speedup / p.speedup;
  if (ev.cards_offered.empty() && ev.cards_applied.empty() && ev.findings_fired.empty() && ev.findings_applied.empty())
    return Status::Ok();
  return RecordUsage(*o_.usage_, ev);
}

ProposalContext Optimizer::Loop::ContextFor(int64_t node) {
  const NodeData& n = data_.at(node);
  ProposalContext c;
  c.task = &o_.task_;
  c.parent_node = node;
  c.parent_source = n.source;
  c.parent_source_name = n.source_name;
  c.parent_params = n.params;
  c.parent_verdict = n.verdict;
  c.parent_verdict_summary = n.verdict_summary;
  c.parent_verdict_evidence = n.verdict_evidence;
  c.parent_metrics = n.metrics;
  c.run_id = run_id_;
  c.parent_speedup = n.speedup;
  c.bottleneck = n.bottleneck;
  c.findings = n.findings;
  c.memory_summary = memory_.Summary(node);
  c.tried_params = tried_params_;
  // The params generator ranks its drafts with a model fitted to these (docs/search.md).
  for (const auto& [id, d] : data_)
    c.evaluated.push_back({d.params, tree_.node(id).outcome.passed, tree_.node(id).outcome.speedup});
  for (int64_t child : tree_.node(node).children) c.sibling_summaries.push_back(tree_.node(child).outcome.summary);
  c.remaining_budget = BudgetLeft();
  c.k = std::max(1, std::min(opts_.drafts_per_expansion, c.remaining_budget));
  c.seed = opts_.seed * 1000003u + static_cast<uint64_t>(tree_.size());
  c.skills_enabled = opts_.skills;
  c.skills = SkillsFor(n);
  auto& offered = offered_[node];
  for (const auto& sk : c.skills)
    if (std::find(offered.begin(), offered.end(), sk.id) == offered.end()) offered.push_back(sk.id);
  c.footprints = footprints_.get();
  ApplyAblations(opts_, &c);
  return c;
}

Result<bool> Optimizer::Loop::EvaluateDraft(int64_t parent, int64_t proposal, const Draft& d,
                                            std::future<EvalJobResult> f) {
  EvalJobResult r = f.get();
  if (!r.status.ok()) return r.status;
  KPILOT_RETURN_IF_ERROR(JournalStatus());
  auto path = Materialize(d.source, d.source_name);
  if (!path.ok()) return path.status();
  if (footprints_) footprints_->Remember(*path, d.params, r);
  if (r.skipped) {
    ++duplicates_;
    ++duplicates_in_a_row_;
    KPILOT_RETURN_IF_ERROR(Event(
        "duplicate", {{"proposal", proposal}, {"params", d.params}, {"object_sha", r.object_sha}, {"times", Times(r)}}));
    return false;
  }
  duplicates_in_a_row_ = 0;
  NodeData n;
  n.source = d.source;
  n.source_name = d.source_name;
  n.params = d.params;
  Analyze(r.evaluation, &n);
  n.path = *path;
  Outcome out{r.evaluation.verdict.passed(), n.score, d.summary, d.targeted_finding};
  int64_t node = tree_.AddChild(parent, out);
  ++evaluations_;
  ++since_promotion_;
  KPILOT_RETURN_IF_ERROR(RecordNode(node, parent, proposal, n, out, &r.evaluation, r.object_sha));
  Attempt a;
  a.node = node;
  a.parent = parent;
  a.summary = d.summary;
  a.finding = d.targeted_finding;
  a.verdict = n.verdict;
  a.speedup = n.speedup;
  double parent_speedup = data_.count(parent) ? data_.at(parent).speedup : 0;
  a.delta = parent_speedup > 0 && n.speedup > 0 ? n.speedup / parent_speedup - 1 : 0;
  if (!out.passed) a.failure = r.evaluation.verdict.summary;
  memory_.Record(a);
  data_[node] = std::move(n);
  const NodeData& nd = data_.at(node);
  KPILOT_RETURN_IF_ERROR(RecordSkillUsage(parent, node, d, nd));
  KPILOT_RETURN_IF_ERROR(Event("evaluated", {{"node", node}, {"parent", parent}, {"proposal", proposal},
                                             {"object_sha", r.object_sha}, {"verdict", nd.verdict},
                                             {"speedup", nd.speedup}, {"params", ParamsText(nd.params, "(defaults)")},
                                             {"summary", d.summary}, {"bottleneck", nd.bottleneck},
                                             {"skills_applied", d.skills_applied},
                                             {"finding", nd.findings.empty() ? "" : nd.findings.front().id},
                                             {"targeted", d.targeted_finding},
                                             {"parent_bottleneck", data_.count(parent) ? data_.at(parent).bottleneck : ""},
                                             {"evaluations", evaluations_}, {"budget", opts_.budget},
                                             {"device", r.device}, {"times", Times(r)},
                                             {"best", incumbent_ >= 0 ? data_.at(incumbent_).speedup : 0.0}}));
  KPILOT_RETURN_IF_ERROR(MaybePromote(node, &r));
  return true;
}

Status Optimizer::Loop::MaybePromote(int64_t node, const EvalJobResult* own) {
  const NodeData& c = data_.at(node);
  if (c.verdict != "passed") return Status::Ok();
  if (incumbent_ < 0) {
    incumbent_ = node;
    since_promotion_ = 0;
    KPILOT_RETURN_IF_ERROR(
        Event("promote", {{"node", node}, {"speedup", c.speedup}, {"reason", "first passing candidate"}}));
    KPILOT_RETURN_IF_ERROR(RecordBest());
    WantCounters(node, own ? ProfileSource{std::make_shared<const Evaluation>(own->evaluation), own->device}
                           : ProfileSource{});
    return Status::Ok();
  }
  const NodeData& inc = data_.at(incumbent_);
  if (c.score <= inc.score) return Status::Ok();
  // The paired gate: time the challenger against the incumbent in one process; accept only when
  // the speedup's CI lies above 1 (under --objective mix: the score at the CI's lower end, with
  // the joules both used in that process).
  EvalJob job;
  job.task = &o_.task_;
  job.source = c.path;
  job.params = c.params;
  job.options = BaseEvalOptions();
  job.options.baseline_source = inc.path;
  job.options.baseline_params = inc.params;
  job.ahead = true;  // the loop waits for it: it goes before the drafts queued for the GPU
  EvalJobResult r = SubmitJournaled(std::move(job), {{"gate", node}, {"incumbent", incumbent_}}).get();
  KPILOT_RETURN_IF_ERROR(JournalStatus());
  ++promotion_checks_;
  const Evaluation& e = r.evaluation;
  // A gate that could not run (the incumbent failed as a baseline, the challenger failed this
  // time) keeps the incumbent: promotion needs evidence.
  if (!r.status.ok() || !e.verdict.passed())
    return Event("reject", {{"node", node}, {"incumbent", incumbent_}, {"paired_speedup", 0.0}, {"ci", {0.0, 0.0}},
                            {"reason", !r.status.ok() ? r.status.message() : e.verdict.summary}, {"times", Times(r)}});
  bool accept = e.speedup_geomean_ci.lo > 1.0;
  json payload = {{"node", node}, {"incumbent", incumbent_}, {"paired_speedup", e.speedup_geomean},
                  {"ci", {e.speedup_geomean_ci.lo, e.speedup_geomean_ci.hi}}, {"times", Times(r)}};
  if (opts_.objective == "mix") {
    const double ratio = JoulesRatio(e);  // the incumbent's joules over the challenger's
    const double score_lo = MixScore(e.speedup_geomean_ci.lo, ratio, opts_.energy_weight);
    accept = score_lo > 1.0;
    payload["joules_ratio"] = ratio;
    payload["score_lo"] = score_lo;
  }
  if (!accept) return Event("reject", payload);
  incumbent_ = node;
  since_promotion_ = 0;
  KPILOT_RETURN_IF_ERROR(Event("promote", payload));
  KPILOT_RETURN_IF_ERROR(RecordBest());
  // The gate has just evaluated the challenger (its checks, timing and trace): a profile takes
  // that evaluation.
  WantCounters(node, {std::make_shared<const Evaluation>(e), r.device});
  return Status::Ok();
}

Result<OptimizeResult> Optimizer::Loop::Start() {
  json start = {{"options", ToJson(opts_)}};
  // What the run is verified on besides what each evaluation records (kpilot export).
  json dtypes = {{"inputs", json::object()}, {"outputs", json::object()}};
  for (const auto& t : o_.task_.inputs) dtypes["inputs"][t.name] = std::string(DTypeName(t.dtype));
  for (const auto& t : o_.task_.outputs) dtypes["outputs"][t.name] = std::string(DTypeName(t.dtype));
  if (o_.task_.compute_precision) dtypes["compute_precision"] = std::string(DTypeName(*o_.task_.compute_precision));
  start["dtypes"] = dtypes;
  if (opts_.replay.empty()) start["times"] = {{"now_s", o_.executor_.ElapsedSeconds()}};
  KPILOT_RETURN_IF_ERROR(Event("start", start));
  // A resumed run evaluates the source its root proposal recorded, which the journaled result
  // (if any) is of, even when the file has been edited since.
  auto text = root_source_ ? Result<std::string>(*root_source_) : ReadFile(opts_.from);
  if (!text.ok()) return text.status();
  Draft root;
  root.source = *text;
  root.source_name = std::filesystem::path(opts_.from).filename().string();
  root.summary = "starting candidate " + root.source_name;
  // With tunable params the search starts from the first declared value of each (the task's
  // naive end of every range), so that every node's params are explicit and comparable; when
  // those break a constraint, from the first valid combination in declaration order (last param
  // fastest); with none valid, from the source's own defaults.
  if (!o_.task_.params.empty()) {
    for (const auto& p : o_.task_.params)
      if (!p.values.empty()) root.params[p.name] = p.values.front();
    auto holds = ConstraintsHold(o_.task_.constraints, root.params);
    if (holds.ok() && *holds) {
      root.summary += " with the first value of every param";
    } else {
      ParamSpace space(o_.task_);
      auto first = space.Enumerate(1, [](const ParamValues&) { return true; });
      root.params = first.empty() ? ParamValues{} : first.front();
      root.summary += first.empty() ? " with its own defaults (no combination of params meets the constraints)"
                                    : " with the first combination of params that meets the constraints";
    }
  }
  // A resumed run that was killed before its root was recorded keeps the root's proposal (and
  // its journaled result, if the evaluation had ended).
  auto seq = root_proposal_ >= 0 ? Result<int64_t>(root_proposal_)
                                 : o_.store_.AddRunEvent(run_id_, "proposal",
                                                         JsonText(json{{"parent", -1}, {"summary", root.summary},
                                                                   {"params", root.params}, {"source", root.source},
                                                                   {"source_name", root.source_name}}));
  if (!seq.ok()) return seq.status();
  auto path = Materialize(root.source, root.source_name);
  if (!path.ok()) return path.status();
  auto submitted = SubmitDraft(root, *path, *seq);
  Anticipate(*path, root.params);  // the root is expanded first, whatever its evaluation shows
  EvalJobResult r = submitted.get();
  KPILOT_RETURN_IF_ERROR(JournalStatus());
  if (!r.status.ok()) return r.status;
  NodeData n;
  n.source = root.source;
  n.source_name = root.source_name;
  n.path = *path;
  n.params = root.params;
  Analyze(r.evaluation, &n);
  Outcome out{r.evaluation.verdict.passed(), n.score, root.summary, ""};
  int64_t id = tree_.AddRoot(out);
  ++evaluations_;
  tried_params_.push_back(root.params);
  KPILOT_RETURN_IF_ERROR(RecordNode(id, -1, *seq, n, out, &r.evaluation, r.object_sha));
  data_[id] = std::move(n);
  KPILOT_RETURN_IF_ERROR(Event("evaluated", {{"node", id}, {"parent", -1}, {"proposal", *seq},
                                             {"object_sha", r.object_sha}, {"verdict", data_[id].verdict},
                                             {"speedup", data_[id].speedup}, {"params", ParamsText(root.params, "(defaults)")},
                                             {"summary", root.summary}, {"evaluations", evaluations_},
                                             {"budget", opts_.budget}, {"device", r.device}, {"times", Times(r)}}));
  KPILOT_RETURN_IF_ERROR(MaybePromote(id, &r));
  return Iterate();
}

Result<OptimizeResult> Optimizer::Loop::Continue(const std::vector<RunNodeRecord>& nodes,
                                                 const std::vector<RunEventRecord>& events,
                                                 const std::string& run_created_at) {
  std::set<int64_t> evaluated_proposals;
  for (const auto& r : nodes) {
    NodeData n;
    double tree_speedup = 0;
    auto src = o_.store_.GetBlob(r.source_blob);
    if (!src.ok()) return src.status();
    n.source = *src;
    n.source_name = r.source_name;
    n.params = ParamsFromJson(r.params_json);
    n.verdict = r.verdict;
    n.speedup = r.speedup;
    std::string failure = r.verdict == "passed" ? "" : r.verdict;
    if (!r.result_blob.empty()) {
      auto res = o_.store_.GetBlob(r.result_blob);
      json j = res.ok() ? json::parse(*res, nullptr, false) : json();
      if (j.is_object()) {
        n.bottleneck = j.value("bottleneck", "");
        n.joules = j.value("joules", 0.0);
        n.achieved_fraction = j.value("achieved_fraction", 0.0);
        EvidenceFromJson(j, &n.verdict_summary, &n.verdict_evidence, &n.metrics);
        tree_speedup = j.value("tree_speedup", 0.0);
        const json ci = j.value("speedup_geomean_ci", json::array());
        if (r.verdict == "passed" && ci.is_array() && !ci.empty() && ci[0].is_number()) n.speedup_lo = ci[0].get<double>();
        if (j.contains("object_sha")) seen_binaries_.insert(j["object_sha"].get<std::string>());
        n.findings = FindingsFromJson(j.value("findings", json::array()));
        if (!n.verdict_summary.empty() && r.verdict != "passed") failure = n.verdict_summary;
      }
    }
    auto path = Materialize(n.source, n.source_name);
    if (!path.ok()) return path.status();
    n.path = *path;
    n.score = tree_speedup > 0 ? tree_speedup : r.speedup;
    Outcome out{r.verdict == "passed", n.score, r.summary, r.finding};
    int64_t id = r.parent < 0 ? tree_.AddRoot(out) : tree_.AddChild(r.parent, out);
    if (id != r.node) return Status::Internal("run " + std::to_string(run_id_) + ": stored node ids are not contiguous");
    evaluated_proposals.insert(r.proposal);
    tried_params_.push_back(n.params);
    if (r.parent >= 0) {
      // As EvaluateDraft recorded it: the change over the parent, and the verdict's sentence.
      const double parent_speedup = data_.count(r.parent) ? data_.at(r.parent).speedup : 0;
      const double delta = parent_speedup > 0 && r.speedup > 0 ? r.speedup / parent_speedup - 1 : 0;
      memory_.Record({id, r.parent, r.summary, r.finding, r.verdict, r.speedup, delta, failure});
    }
    data_[id] = std::move(n);
    ++evaluations_;
  }
  // The incumbent is the last promoted node; proposals with neither a node nor a duplicate
  // record were interrupted and are evaluated now, before anything new is proposed.
  std::vector<std::pair<int64_t, json>> pending;
  std::set<int64_t> decided;
  for (const auto& e : events) {
    json p = json::parse(e.payload_json, nullptr, false);
    if ((e.kind == "promote" || e.kind == "reject") && p.is_object()) decided.insert(p.value("node", -1));
    if (e.kind == "promote" && p.is_object()) incumbent_ = p.value("node", incumbent_);
    // A decision against an incumbent followed a paired check (the first promotion has none).
    if ((e.kind == "promote" || e.kind == "reject") && p.is_object() && p.contains("incumbent")) ++promotion_checks_;
    if (e.kind == "duplicate" && p.is_object()) {
      evaluated_proposals.insert(p.value("proposal", -1));
      ++duplicates_;
      ++duplicates_in_a_row_;
    }
    if (e.kind == "evaluated") duplicates_in_a_row_ = 0;
    if (e.kind == "counters" && p.is_object()) {
      ApplyCounters(p.value("node", int64_t{-1}), p);
      counters_done_.insert(p.value("node", int64_t{-1}));
      if (p.value("counters_off", false)) counters_off_ = p.value("error", "");
    }
    if (e.kind == "proposal" && p.is_object() && p.value("parent", -1) >= 0) pending.push_back({e.seq, p});
    if (e.kind == "proposal" && p.is_object() && p.value("parent", -1) < 0) {
      root_proposal_ = e.seq;
      if (p.contains("source") && p["source"].is_string()) root_source_ = p["source"].get<std::string>();
    }
    if (e.kind == "result" && p.is_object() && p.contains("blob")) {
      json key = p;
      key.erase("blob");
      journaled_[JsonText(key)] = p.value("blob", "");
    }
    // A node closed before the kill stays closed (its generator failures are not paid again).
    if (e.kind == "close" && p.is_object()) {
      const int64_t node = p.value("node", int64_t{-1});
      if (node >= 0 && static_cast<size_t>(node) < tree_.size()) tree_.Close(node, p.value("reason", ""));
    }
    if (e.kind == "generator_failure" && p.is_object())
      memory_.Record({-1, p.value("parent", -1), p.value("summary", ""), "", "no_candidate", 0, 0, p.value("reason", "")});
    if (e.kind == "spend" && p.is_object()) {
      spend_before_ = {p.value("requests", int64_t{0}), p.value("input_tokens", int64_t{0}),
                       p.value("output_tokens", int64_t{0}), p.value("cost_usd", 0.0), p.value("priced", true)};
      spend_recorded_ = spend_before_;
    }
  }
  // Proposals whose evaluation ended before the kill: their journaled results are served, not
  // evaluated again.
  if (!nodes.empty()) root_proposal_ = -1;
  for (auto it = journaled_.begin(); it != journaled_.end();) {
    json key = json::parse(it->first);
    const int64_t seq = key.value("proposal", int64_t{-1});
    const bool wanted =
        key.contains("proposal") && (nodes.empty() ? seq == root_proposal_ : !evaluated_proposals.count(seq));
    auto served = wanted ? Journaled(it->second) : std::nullopt;
    if (!served) {
      ++it;
      continue;
    }
    journal_served_.emplace(it->first, std::move(*served));
    it = journaled_.erase(it);
  }
  const int journaled = static_cast<int>(journal_served_.size());
  earlier_processes_s_ = EarlierProcessesSeconds(run_created_at, events);
  KPILOT_RETURN_IF_ERROR(Event("resume", {{"nodes", nodes.size()},
                                          {"incumbent", incumbent_},
                                          {"journaled_results", journaled},
                                          {"earlier_processes_s", earlier_processes_s_}}));
  if (nodes.empty()) return Start();
  for (const auto& r : nodes)
    if (r.parent >= 0 && r.node > incumbent_) ++since_promotion_;  // with no incumbent: every child
  // A kill between a node's record and its promotion decision: decide now, in order.
  for (const auto& r : nodes)
    if (!decided.count(r.node)) KPILOT_RETURN_IF_ERROR(MaybePromote(r.node));
  // Bests not profiled before the kill (a kill between a promotion and its profile, or a best
  // never selected since) are profiled as in a run that was not interrupted: when next selected,
  // the final one at the end.
  for (const auto& e : events)
    if (e.kind == "promote")
      if (json p = json::parse(e.payload_json, nullptr, false); p.is_object() && p.value("node", int64_t{-1}) >= 0)
        WantCounters(p.value("node", int64_t{-1}), {});
  for (const auto& [seq, p] : pending) {
    if (evaluated_proposals.count(seq) || evaluations_ >= opts_.budget) continue;
    Draft d;
    d.source = p.value("source", "");
    d.source_name = p.value("source_name", "");
    d.params = ParamsFromJson(p.value("params", json::object()).dump());
    d.summary = p.value("summary", "");
    d.targeted_finding = p.value("finding", "");
    d.skills_applied = p.value("skills_applied", std::vector<std::string>{});
    if (p.contains("skills_offered")) offered_[p.value("parent", int64_t{-1})] = p["skills_offered"].get<std::vector<std::string>>();
    int64_t parent = p.value("parent", 0);
    auto path = Materialize(d.source, d.source_name);
    if (!path.ok()) return path.status();
    tried_params_.push_back(d.params);
    auto done = EvaluateDraft(parent, seq, d, SubmitDraft(d, *path, seq));
    if (!done.ok()) return done.status();
  }
  return Iterate();
}

Status Optimizer::Loop::RecordGeneratorFailure(int64_t parent, const Draft& d) {
  memory_.Record({-1, parent, d.summary, d.targeted_finding, "no_candidate", 0, 0, d.failure});
  return Event("generator_failure", {{"parent", parent}, {"summary", d.summary}, {"reason", d.failure}});
}

GeneratorSpend Optimizer::Loop::TotalSpend() const {
  GeneratorSpend now = o_.proposer_.Spent();
  now.requests += spend_before_.requests;
  now.input_tokens += spend_before_.input_tokens;
  now.output_tokens += spend_before_.output_tokens;
  now.cost_usd += spend_before_.cost_usd;
  now.priced = now.priced && spend_before_.priced;
  return now;
}

// One "spend" event with the run's totals whenever they changed (resume starts from the last).
Status Optimizer::Loop::RecordSpend() {
  GeneratorSpend s = TotalSpend();
  if (s.requests == spend_recorded_.requests && s.input_tokens == spend_recorded_.input_tokens &&
      s.output_tokens == spend_recorded_.output_tokens && s.cost_usd == spend_recorded_.cost_usd)
    return Status::Ok();
  spend_recorded_ = s;
  return Event("spend", {{"requests", s.requests}, {"input_tokens", s.input_tokens}, {"output_tokens", s.output_tokens},
                         {"cost_usd", s.cost_usd}, {"priced", s.priced}, {"max_cost_usd", opts_.max_cost_usd}});
}

Result<Optimizer::Loop::Taken> Optimizer::Loop::TakeDrafts(int64_t sel, Result<std::vector<Draft>> drafts,
                                                            bool siblings_in_flight, Batch* b) {
  Status spent = RecordSpend();
  if (!drafts.ok() || !spent.ok())
    return !spent.ok() ? spent : drafts.status().WithContext("the " + o_.proposer_.name() + " generator");
  ++answered_;
  // Drafts the generator failed to make are remembered, not evaluated; a node whose expansions
  // fail kGeneratorFailuresToClose times in a row is closed.
  size_t asked = drafts->size();
  std::string last_failure;
  for (const auto& d : *drafts)
    if (!d.failure.empty()) {
      KPILOT_RETURN_IF_ERROR(RecordGeneratorFailure(sel, d));
      last_failure = d.failure;
    }
  std::erase_if(*drafts, [](const Draft& d) { return !d.failure.empty(); });
  if (asked > 0 && drafts->empty()) {
    if (++generator_failures_[sel] < kGeneratorFailuresToClose) return Taken::kFailed;
    std::string reason = "the generator failed " + std::to_string(kGeneratorFailuresToClose) +
                         " times in a row: " + last_failure.substr(0, 200);
    tree_.Close(sel, reason);
    KPILOT_RETURN_IF_ERROR(Event("close", {{"node", sel}, {"reason", reason}}));
    return Taken::kClosed;
  }
  if (asked > 0) generator_failures_.erase(sel);
  if (drafts->empty()) {
    if (siblings_in_flight) return Taken::kChildrenPending;
    tree_.Close(sel, "the generator has nothing new for it");
    KPILOT_RETURN_IF_ERROR(Event("close", {{"node", sel}, {"reason", "the generator has nothing new for it"}}));
    return Taken::kClosed;
  }
  // Record every proposal first (so a crash can resume them), then compile them in parallel
  // and evaluate them one at a time.
  for (auto& d : *drafts) {
    if (evaluations_ + pending_ >= opts_.budget) break;
    if (d.source.empty()) {
      d.source = data_.at(sel).source;
      d.source_name = data_.at(sel).source_name;
    }
    tried_params_.push_back(d.params);
    json payload = {{"parent", sel},       {"source", d.source},     {"source_name", d.source_name},
                    {"params", d.params},  {"summary", d.summary},   {"finding", d.targeted_finding},
                    {"skills_applied", d.skills_applied}, {"skills_offered", offered_[sel]}};
    auto seq = o_.store_.AddRunEvent(run_id_, "proposal", JsonText(payload));
    auto path = seq.ok() ? Materialize(d.source, d.source_name) : Result<std::filesystem::path>(seq.status());
    if (!path.ok()) return path.status();
    b->futures.push_back(SubmitDraft(d, *path, *seq));
    b->proposed.push_back({*seq, d});
    ++pending_;
  }
  return b->proposed.empty() ? Taken::kNone : Taken::kSubmitted;
}

int Optimizer::Loop::Proposing() const {
  return static_cast<int>(std::count_if(in_flight_.begin(), in_flight_.end(), [](const Batch& b) { return b.proposing(); }));
}

int Optimizer::Loop::BudgetLeft() const {
  return opts_.budget - evaluations_ - pending_ - Proposing() * std::max(1, opts_.drafts_per_expansion);
}

bool Optimizer::Loop::CapAllowsAnotherRequest(int proposing) const {
  if (proposing == 0 || (opts_.max_cost_usd <= 0 && opts_.max_tokens <= 0)) return true;
  if (answered_ == 0) return false;
  const GeneratorSpend mine = o_.proposer_.Spent(), total = TotalSpend();
  const double expected = static_cast<double>(proposing) / answered_;
  if (opts_.max_cost_usd > 0 && total.cost_usd + expected * mine.cost_usd >= opts_.max_cost_usd) return false;
  const double tokens = static_cast<double>(total.input_tokens + total.output_tokens);
  const double per = static_cast<double>(mine.input_tokens + mine.output_tokens);
  return !(opts_.max_tokens > 0 && tokens + expected * per >= static_cast<double>(opts_.max_tokens));
}

Result<OptimizeResult> Optimizer::Loop::Iterate() {
  // Batches in flight are waited for by ~Loop, the one being built or evaluated by its guard:
  // an error return or an exception leaves no job calling into a dead loop.
  std::deque<Batch>& in_flight = in_flight_;
  // The executor's busy and elapsed seconds at the end of the last batch (adaptive depth).
  double busy0 = o_.executor_.BusySeconds(), elapsed0 = o_.executor_.ElapsedSeconds();
  for (;;) {
    // Spend of requests answered but not yet taken is recorded now: a kill before they are taken
    // must not hide it from a resumed run's caps.
    KPILOT_RETURN_IF_ERROR(RecordSpend());
    std::string stop;  // decided afresh each round: skipped duplicates give budget back
    // Keep the next expansions compiling while the GPU evaluates the current one (depth_
    // expansions in flight; with 2 the tree is one batch behind).
    while (stop.empty() && static_cast<int>(in_flight.size()) < depth_) {
      if (BudgetLeft() <= 0) stop = "budget";
      else if (opts_.time_limit_s > 0 && earlier_processes_s_ + Seconds(start_) > opts_.time_limit_s) stop = "time";
      else if (opts_.plateau > 0 && since_promotion_ >= opts_.plateau) stop = "plateau";
      else if (opts_.max_cost_usd > 0 && TotalSpend().cost_usd >= opts_.max_cost_usd) stop = "cost";
      else if (opts_.max_tokens > 0 && TotalSpend().input_tokens + TotalSpend().output_tokens >= opts_.max_tokens)
        stop = "tokens";
      else if (duplicates_in_a_row_ >= std::max(kMinDuplicatesToStop, opts_.budget)) stop = "duplicates";
      else if (opts_.target_fraction > 0 && incumbent_ >= 0 &&
               data_.at(incumbent_).achieved_fraction >= opts_.target_fraction)
        stop = "target";
      if (!stop.empty()) break;
      if (!CapAllowsAnotherRequest(Proposing())) break;  // the answers in flight decide
      std::optional<int64_t> sel = tree_.Select(rng_);
      if (!sel) {
        if (in_flight.empty()) stop = "exhausted";
        break;  // results in flight may open new nodes
      }
      // A node's drafts see its counter profile: a new best is profiled when it is first selected
      // (session 25: in budget-20 H200 runs, 7 of 11 bests profiled at promotion were never
      // expanded, 3 of them final bests); wait for the selected node's, apply any other that
      // finished.
      ProfileIfWanted(*sel);
      KPILOT_RETURN_IF_ERROR(CollectCounters(*sel));
      Batch b{*sel, {}, {}, o_.proposer_.Propose(ContextFor(*sel))};
      WaitForAll guard{b.futures};
      // A generator still writing (an llm: or command: request can take minutes) leaves its
      // expansion in flight and the loop selects the next: several requests run at once, each
      // counted against the budget at --drafts until it answers (TakeDrafts below).
      if (b.drafts.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) {
        in_flight.push_back(std::move(b));
        continue;
      }
      bool siblings = false;
      for (const auto& other : in_flight) siblings = siblings || other.parent == *sel;
      auto taken = TakeDrafts(*sel, b.drafts.get(), siblings, &b);
      if (!taken.ok()) return taken.status();
      if (*taken == Taken::kChildrenPending) break;
      if (*taken == Taken::kSubmitted) in_flight.push_back(std::move(b));
    }
    // Take the generators' answers in the order they were asked for, up to the first still being
    // written (so proposals are recorded in the order their batches are evaluated: a resumed run
    // evaluates what was recorded in that order); the oldest expansion is waited for, since it is
    // evaluated next. A batch just submitted is compiling, so the loop then goes back to decide
    // the stop and fill the pipeline before it waits for it.
    bool took = false;
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      if (!it->proposing()) {
        ++it;
        continue;
      }
      if (it != in_flight.begin() && it->drafts.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) break;
      bool siblings = false;
      for (auto other = in_flight.begin(); other != in_flight.end(); ++other)
        siblings = siblings || (other != it && other->parent == it->parent);
      auto taken = TakeDrafts(it->parent, it->drafts.get(), siblings, &*it);
      if (!taken.ok()) return taken.status();
      took = true;
      it = *taken == Taken::kSubmitted ? std::next(it) : in_flight.erase(it);
    }
    if (took) continue;
    if (in_flight.empty()) return Finish(stop.empty() ? "exhausted" : stop);
    // The oldest batch, even when a later one has ended first: a run's node order then follows
    // its proposals, which replay:DIR needs to reproduce a run. Taking whichever batch ended
    // first was tried in session 20 and not kept for that reason (docs/search.md).
    Batch b = std::move(in_flight.front());
    in_flight.pop_front();
    WaitForAll guard{b.futures};
    for (size_t i = 0; i < b.proposed.size(); ++i) {
      --pending_;
      auto done = EvaluateDraft(b.parent, b.proposed[i].first, b.proposed[i].second, std::move(b.futures[i]));
      if (!done.ok()) return done.status();
    }
    // Adaptive depth: measured on the real executor only (a replay's clock does not model the
    // parallel compiles that the depth is there to hide).
    // The window runs from the previous batch's end to this one's, so evaluations that finished
    // while the loop was selecting and proposing count too.
    if (opts_.pipeline_depth == 0 && opts_.replay.empty()) {
      const double busy1 = o_.executor_.BusySeconds(), elapsed1 = o_.executor_.ElapsedSeconds();
      const double busy = busy1 - busy0, elapsed = elapsed1 - elapsed0;
      busy0 = busy1;
      elapsed0 = elapsed1;
      int next = NextPipelineDepth(depth_, busy, elapsed, o_.executor_.Devices());
      if (next != depth_) {
        depth_ = next;
        KPILOT_RETURN_IF_ERROR(Event("pipeline", {{"depth", depth_},
                                                  {"busy_s", busy},
                                                  {"elapsed_s", elapsed},
                                                  {"devices", o_.executor_.Devices()},
                                                  {"reason", "the evaluation queues were idle while drafts compiled"}}));
      }
    }
  }
}

Result<OptimizeResult> Optimizer::Loop::Finish(const std::string& reason) {
  // No pick follows: the footprint compiles still queued would only delay the end.
  if (footprints_) footprints_->Cancel();
  OptimizeResult res;
  res.run_id = run_id_;
  res.stop_reason = reason;
  res.evaluations = evaluations_;
  res.promotion_checks = promotion_checks_;
  res.duplicates = duplicates_;
  res.spend = TotalSpend();
  res.busy_share = o_.executor_.ElapsedSeconds() > 0 ? o_.executor_.BusySeconds() /
                                                            (o_.executor_.ElapsedSeconds() * o_.executor_.Devices())
                                                      : 0;
  if (o_.executor_.ElapsedSeconds() > 0)
    res.checks_timing_share =
        o_.executor_.ChecksAndTimingSeconds() / (o_.executor_.ElapsedSeconds() * o_.executor_.Devices());
  res.devices = o_.executor_.Devices();
  res.pipeline_depth = depth_;
  res.anticipated = footprints_ ? static_cast<int>(footprints_->Prefetched()) : 0;
  int64_t best = incumbent_ >= 0 ? incumbent_ : 0;
  if (opts_.objective != "time" && incumbent_ >= 0) {
    bool measured = false;
    for (const auto& [id, n] : data_) measured = measured || n.joules > 0;
    if (!measured)
      KPILOT_RETURN_IF_ERROR(Event("warning", {{"message", "no evaluation measured joules (NVML energy is unavailable "
                                                           "on this GPU or to this user): the best is by time alone"}}));
  }
  if (opts_.objective == "energy" && incumbent_ >= 0) {
    const int64_t fastest = incumbent_;
    best = EnergyBest(fastest);
    if (best != fastest)
      KPILOT_RETURN_IF_ERROR(Event("energy_choice", {{"fastest", fastest},
                                                     {"fastest_speedup", data_.at(fastest).speedup},
                                                     {"fastest_joules", data_.at(fastest).joules},
                                                     {"chosen", best},
                                                     {"chosen_speedup", data_.at(best).speedup},
                                                     {"chosen_joules", data_.at(best).joules}}));
  }
  // The report's profile is the final best's: it is profiled now if it never was (with the
  // energy objective it may be a node that was never promoted). The other bests the search
  // never expanded are not.
  ProfileIfWanted(best);
  if (data_.at(best).verdict == "passed") RequestCounters(best);  // nothing if done or queued
  counters_wanted_.clear();
  KPILOT_RETURN_IF_ERROR(CollectCounters(std::nullopt, true));
  res.counter_profiles = counter_profiles_;
  res.counters_s = counters_s_;
  const NodeData& b = data_.at(best);
  res.best_node = best;
  res.best_params = b.params;
  res.best_source = b.source;
  res.best_source_name = b.source_name;
  KPILOT_RETURN_IF_ERROR(Event("stop", {{"reason", reason}, {"evaluations", evaluations_}, {"best", best}}));
  // The final best is evaluated again before it is reported.
  EvalJob job;
  job.task = &o_.task_;
  job.source = b.path;
  job.params = b.params;
  job.options = BaseEvalOptions();
  job.ahead = true;
  EvalJobResult r = SubmitJournaled(std::move(job), {{"final", best}}).get();
  if (!r.status.ok()) return r.status;
  KPILOT_RETURN_IF_ERROR(JournalStatus());
  res.final = r.evaluation;
  KPILOT_RETURN_IF_ERROR(Event("final", {{"node", best}, {"verdict", VerdictName(r.evaluation.verdict.kind)},
                                         {"speedup", r.evaluation.speedup_geomean},
                                         {"ci", {r.evaluation.speedup_geomean_ci.lo, r.evaluation.speedup_geomean_ci.hi}},
                                         {"times", Times(r)}, {"evaluation", ToJson(r.evaluation)}}));
  RunRecord run;
  run.id = run_id_;
  run.status = "finished";
  run.stop_reason = reason;
  run.best_speedup = r.evaluation.verdict.passed() ? r.evaluation.speedup_geomean : 0;
  run.best_node = best;
  KPILOT_RETURN_IF_ERROR(o_.store_.UpdateRun(run));
  return res;
}

int64_t Optimizer::Loop::EnergyBest(int64_t fastest) const {
  const NodeData& f = data_.at(fastest);
  const double floor = f.speedup_lo > 0 ? std::min(f.speedup_lo, f.speedup) : f.speedup;
  int64_t best = fastest;
  for (const auto& [id, n] : data_) {
    if (n.verdict != "passed" || n.joules <= 0 || n.speedup < floor) continue;
    const NodeData& b = data_.at(best);
    if (b.joules <= 0 || n.joules < b.joules) best = id;
  }
  return best;
}

namespace {

std::filesystem::path RunLockPath(const Store& store, int64_t run_id) {
  return store.dir() / "runs" / std::to_string(run_id) / "lock";
}

// A run that ends in an error is recorded as failed, with the reason, so `kpilot runs` never
// shows it as running forever; --resume can still continue it.
Result<OptimizeResult> MarkFailure(Store& store, int64_t run_id, Result<OptimizeResult> r) {
  if (r.ok()) return r;
  auto run = store.GetRun(run_id);
  if (run.ok() && run->has_value()) {
    RunRecord rec = **run;
    rec.status = "failed";
    rec.stop_reason = r.status().message().substr(0, 300);
    (void)store.UpdateRun(rec);
  }
  return r;
}

}  // namespace

std::string ShownRunStatus(const Store& store, const RunRecord& run) {
  if (run.status != "running") return run.status;
  auto lock = FileLock::TryLock(RunLockPath(store, run.id));  // released at once
  return lock.ok() && lock->has_value() ? "interrupted" : run.status;
}

Optimizer::Optimizer(const Task& task, Proposer& proposer, Executor& executor, Store& store, ProgressSink& progress)
    : task_(task), proposer_(proposer), executor_(executor), store_(store), progress_(progress) {}

Result<OptimizeResult> Optimizer::Run(const OptimizeOptions& options) {
  if (options.budget < 1) return Status::InvalidInput("--budget must be at least 1");
  KPILOT_RETURN_IF_ERROR(CheckOptions(task_, options));
  RunRecord r;
  r.task_name = task_.name;
  r.task_dir = task_.dir.string();
  r.config_json = ToJson(options).dump();
  r.status = "running";
  auto id = store_.CreateRun(r);
  if (!id.ok()) return id.status();
  // A `kpilot runs` probing the new run takes and drops its lock at once: wait that out.
  auto lock = FileLock::TryLock(RunLockPath(store_, *id), 2.0);
  if (lock.ok() && !lock->has_value())
    lock = Status::Unavailable("the lock of new run " + std::to_string(*id) + " (" + RunLockPath(store_, *id).string() +
                               ") is held by another process");
  if (!lock.ok()) return MarkFailure(store_, *id, lock.status());
  Loop loop(*this, options, *id);
  return MarkFailure(store_, *id, loop.Start());
}

Result<OptimizeResult> Optimizer::Resume(int64_t run_id, const ResumeOverrides& overrides) {
  auto run = store_.GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!run->has_value()) return Status::NotFound("run " + std::to_string(run_id) + " is not in store " + store_.dir().string());
  if ((*run)->status == "finished")
    return Status::InvalidInput("run " + std::to_string(run_id) + " is finished (stopped: " + (*run)->stop_reason +
                                ") — see it with kpilot show " + std::to_string(run_id) + ", or start a new run");
  auto lock = FileLock::TryLock(RunLockPath(store_, run_id), 1.0);
  if (!lock.ok()) return lock.status();
  if (!lock->has_value())
    return Status::InvalidInput("run " + std::to_string(run_id) + " is being optimized by another kpilot process now "
                                "(it holds " + RunLockPath(store_, run_id).string() + "); let it finish, or stop it "
                                "and resume again");
  auto opts = OptimizeOptionsFromJson(json::parse((*run)->config_json, nullptr, false));
  if (!opts.ok()) return opts.status();
  if (overrides.max_cost_usd) opts->max_cost_usd = *overrides.max_cost_usd;
  if (overrides.max_tokens) opts->max_tokens = *overrides.max_tokens;
  if (overrides.devices && !overrides.devices->empty()) {
    opts->devices = *overrides.devices;
    opts->device = overrides.devices->front();
  }
  RunRecord rec = **run;  // running again (a failed run's reason is in its events)
  rec.status = "running";
  rec.stop_reason = "";
  KPILOT_RETURN_IF_ERROR(store_.UpdateRun(rec));
  auto nodes = store_.ListRunNodes(run_id);
  if (!nodes.ok()) return nodes.status();
  auto events = store_.ListRunEvents(run_id);
  if (!events.ok()) return events.status();
  Loop loop(*this, *opts, run_id);
  return MarkFailure(store_, run_id, loop.Continue(*nodes, *events, (*run)->created_at));
}

}  // namespace kpilot
