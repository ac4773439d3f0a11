// kpilot bench SUITE (docs/bench.md): every problem of a suite folder optimized — or, with
// --eval-only, its given candidate evaluated — each recorded in the store as it finishes, and a
// report per level in the numbers the KernelBench and flashinfer-bench communities compare.
//
// Three parts, each usable alone: discovering a suite (pure: folder in, problem list out), the
// metrics and their renderings (pure: results in, report out), and the loop that runs problems
// on the visible GPUs one at a time each and records them (side effects behind ProblemRunner and
// Store, so it is tested with doubles).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace kpilot {

// ---- Suites ------------------------------------------------------------------------------------

enum class SuiteFormat {
  kKernelBench,  // ROOT/level<N>/<n>_<Name>.py; starting candidates in ROOT/candidates/<stem>/
  kFlashInfer,   // ROOT/definitions/<op_type>/<name>.json (+ workloads/, solutions/)
  kTaskFolders,  // ROOT/<level>/<task>/task.toml, or ROOT/<task>/task.toml (one level, "all")
};
const char* SuiteFormatName(SuiteFormat f);

struct BenchProblem {
  std::string id;                   // unique in the suite: "level1/19_ReLU", "rmsnorm/rmsnorm_h512", "all/saxpy"
  std::string level;                // "1" (from level1/), the op_type, the task folder's parent, or "all"
  std::string stem;                 // the file's stem or the task folder's name
  std::filesystem::path path;       // the problem .py, the definition .json or the task folder
  std::filesystem::path native;     // a starting native candidate ("" = none): KernelBench
                                    // candidates/<stem>/native.cu, flashinfer native/<name>.cu or
                                    // candidates/<name>/native.cu
  std::filesystem::path model_new;  // KernelBench candidates/<stem>/model_new.py ("" = none)
};

struct Suite {
  SuiteFormat format = SuiteFormat::kTaskFolders;
  std::filesystem::path root;          // absolute
  std::string name;                    // the root folder's name
  std::vector<BenchProblem> problems;  // by level (numerically for level<N>), then problem number, then name
};

// Reads the folder's layout (file names only; no problem is loaded). InvalidInput naming the
// folder and the three layouts when it is none of them, or when it holds no problem.
Result<Suite> DiscoverSuite(const std::filesystem::path& root);

// The problems `levels` (empty = all; "1" or "level1" both name level1/) and `glob` (fnmatch
// pattern on the stem or the id; "" = all) select, in suite order. A level the suite lacks is
// InvalidInput listing the levels it has.
Result<std::vector<BenchProblem>> SelectProblems(const Suite& suite, const std::vector<std::string>& levels,
                                                 const std::string& glob);

// --eval-only DIR: the candidate given for `p`, by its stem — DIR/<stem>.cu|.py|.json|.cpp, the same
// under DIR/<level folder>/, else a folder DIR/[<level folder>/]<stem>/ holding native.cu,
// model_new.py, or one .cu/.py/.json/.cpp file. NotFound naming the places tried.
Result<std::filesystem::path> FindEvalCandidate(const std::filesystem::path& dir, const BenchProblem& p);

// --eval-only DIR: the candidate files and folders in DIR (and its level folders) whose stem names
// no problem of `suite` — a misspelt or stale candidate the bench would silently skip.
std::vector<std::filesystem::path> UnmatchedEvalCandidates(const std::filesystem::path& dir, const Suite& suite);

// ---- Results and metrics ------------------------------------------------------------------------

// One workload of a problem's final evaluation (the flashinfer contest score is over these).
struct WorkloadScore {
  std::string name;
  bool passed = false;
  double speedup = 0;                     // against eager; 0 when it failed
  double ci_lo = 0, ci_hi = 0;            // the speedup's 95% CI (0 when it failed)
  double candidate_ms = 0, eager_ms = 0;  // the timing procedure's statistic of each side (0 when not timed)
};

// Where a problem's seconds went (PyTorch suites; the torch worker reports each step): its final
// evaluation and its torch.compile baseline's, summed.
struct ProblemSeconds {
  double load = 0;          // loading the problem (kpilot's describe of it, cached or not)
  double python_start = 0;  // the worker's interpreter start
  double import_torch = 0;
  double setup = 0;      // building the candidate, the reference and the baseline models
  double compile = 0;    // a torch.compile baseline's compile (its first call)
  double lock_wait = 0;  // waiting for the GPU's lock (other problems' runs held it)
  double checks = 0;     // correctness trials and exploit checks
  double timing = 0;
  int evaluations = 0;  // worker runs summed here
};

// What the correctness trials saw of the reference itself (the torch worker checks it on every
// run): a problem whose reference returns a constant, ignores its inputs, draws random numbers or
// differs from itself on the same inputs cannot tell a right candidate from a wrong one (or a
// right one from itself), and is reported with the evidence.
enum class ReferenceFlaw { kConstantOutput, kIgnoresInputs, kRandom, kNondeterministic };
const char* ReferenceFlawName(ReferenceFlaw f);  // "constant_output", … (the worker's names)
std::optional<ReferenceFlaw> ParseReferenceFlaw(const std::string& name);
struct ReferenceFinding {
  ReferenceFlaw flaw = ReferenceFlaw::kConstantOutput;
  std::string evidence;  // one sentence with the numbers
};

// What one problem ended with. A problem that could not be run at all (its file does not load,
// no candidate for it) has an `error` and counts as not correct.
struct ProblemResult {
  std::string id, level;
  std::string error;              // "" when it ran
  std::string verdict;            // the best candidate's: passed | incorrect | … ("" on error)
  std::string message;            // why that verdict is not passed (its summary); "" when passed
  bool out_of_memory = false;     // the run failed because the GPU's memory ran out (worth a try alone on it)
  double speedup_eager = 0;       // best over the eager reference (the task's baseline); 0 unless passed
  double speedup_compile = 0;     // best over torch.compile; 0 unless passed and measured
  bool compile_measured = false;  // a torch.compile baseline exists for this problem
  bool compile_cached = false;    // that baseline's time was read from the store's cache, not timed by this bench
  std::string candidate;          // the best (or evaluated) candidate's source file
  std::string where;              // where an evaluate-only problem ran ("slurm job 12 on n1"; "" = this machine)
  int64_t run_id = 0;             // the optimizer's run (0 with --eval-only)
  int evaluations = 0;            // candidate evaluations (promotion checks not counted)
  int64_t requests = 0, input_tokens = 0, output_tokens = 0;  // the generator's
  double cost_usd = 0;
  double gpu_s = 0;  // seconds the evaluation queue was busy (device time)
  double wall_s = 0;
  // Which slice of the bench ran it (1: the run that created the bench, 2: its first --resume, …;
  // 0: unknown, a result recorded before slices were) and when it finished, in seconds from that
  // slice's start: the bench's own wall time is made of these.
  int slice = 0;
  double finished_at_s = 0;
  std::vector<WorkloadScore> workloads;
  ProblemSeconds seconds;
  std::vector<ReferenceFinding> reference_findings;
  std::vector<std::string> warnings;  // what went wrong without failing the problem (no torch.compile figure, …)
  nlohmann::json traces = nlohmann::json::array();  // flashinfer Trace records of the final evaluation
  bool correct() const { return error.empty() && verdict == "passed"; }
};

nlohmann::json ToJson(const ProblemResult& r);
Result<ProblemResult> ProblemResultFromJson(const nlohmann::json& j);

// fast_p thresholds, as KernelBench reports them.
inline constexpr double kFastP[] = {0, 0.5, 0.8, 1, 1.5, 2};
inline constexpr size_t kFastPCount = sizeof(kFastP) / sizeof(kFastP[0]);

enum class Baseline { kEager, kCompile };

// fast_p: the share of `results` that are correct AND have a speedup strictly greater than p over
// `b` (KernelBench's definition: fast_1 counts only problems strictly faster than the baseline).
// fast_0 is the correctness rate (a correct problem always has a speedup > 0); a correct problem
// whose compile baseline was not measured is never fast against it. Empty results → 0.
double FastP(const std::vector<ProblemResult>& results, double p, Baseline b);
// The geometric mean of the speedups over `b` of the correct problems with one (0 when none).
double GeomeanSpeedup(const std::vector<ProblemResult>& results, Baseline b);

struct BaselineMetrics {
  int measured = 0;  // correct problems with a speedup over this baseline
  double fast_p[kFastPCount] = {};
  double geomean = 0;
};

struct LevelReport {
  std::string level;  // "all" for the whole suite
  int problems = 0, correct = 0, errors = 0;
  double correctness = 0;  // correct / problems
  BaselineMetrics eager, compile;
  int evaluations = 0;
  int64_t requests = 0, input_tokens = 0, output_tokens = 0;
  double cost_usd = 0, gpu_s = 0, wall_s = 0;
  ProblemSeconds seconds;  // summed over the level's problems
  int flawed = 0;          // problems with a reference finding
  int compile_cached = 0;  // problems whose torch.compile time was read from the baseline cache
};

// One slice of a bench (a run of `kpilot bench`, or of `--resume`): the problems it finished and
// its wall time, from its start to its last finished problem (a slice cut short counts up to there).
struct SliceWall {
  int slice = 0;
  int problems = 0;
  double wall_s = 0;
};

// flashinfer: the contest's score of one definition (mean per-workload speedup, 0 if any failed).
struct DefinitionScore {
  std::string id;  // op_type/name
  double score = 0;
  int workloads = 0, passed = 0;
};

struct BenchReport {
  std::string suite;
  std::string format;
  std::vector<LevelReport> levels;       // in the order the levels first appear in the results
  LevelReport total;                     // every problem
  std::vector<DefinitionScore> contest;  // flashinfer suites only
  std::vector<ProblemResult> results;
  std::vector<SliceWall> slices;  // in order; problems of no known slice are left out
  double wall_s = 0;              // the bench's wall time: its slices' summed
};

// Pure. `contest_score` is the contest's formula (ContestScore of src/pytorch), passed in so the
// metrics need no PyTorch code; null: no contest section.
using ContestScoreFn = std::function<double(const std::vector<double>&, const std::vector<bool>&)>;
BenchReport Summarize(const std::string& suite, SuiteFormat format, const std::vector<ProblemResult>& results,
                      const ContestScoreFn& contest_score = nullptr);

nlohmann::json ToJson(const BenchReport& r);
std::string ReportTable(const BenchReport& r);     // the terminal table
std::string ReportMarkdown(const BenchReport& r);  // --markdown FILE

// ---- Running a suite ----------------------------------------------------------------------------

// The side effects of one problem: loading it, optimizing or evaluating, timing the baselines.
// Called from one thread per device at once: implementations must be thread-safe.
class ProblemRunner {
 public:
  virtual ~ProblemRunner() = default;
  // `device`: the CUDA device index (−1: a host-only suite). `resume_run`: the optimizer run an
  // interrupted attempt left (0 = none): continue it rather than start over. `started(run_id)`:
  // call it as soon as the optimizer has created its run, so a crash after it can be resumed.
  // Failures of the problem are data (ProblemResult::error), not a Status.
  virtual ProblemResult Run(const BenchProblem& p, int device, int64_t resume_run,
                            const std::function<void(int64_t run_id)>& started) = 0;
};

// A slice's time left at its pace so far: `elapsed_s` for the `done` problems it has finished,
// `left` still to run (0 when it has finished none, or has none left).
double SecondsLeft(double elapsed_s, int done, int left);

// One progress line per finished problem (and per started one); the CLI prints them.
class BenchProgress {
 public:
  virtual ~BenchProgress() = default;
  virtual void Started(const BenchProblem& p, int device) = 0;
  virtual void Finished(const ProblemResult& r, int done, int total) = 0;
};

// A bench run in the store: a run row whose task is "bench:<suite>" and whose config holds
// {"bench": config}; every problem's start ("problem_start"), optimizer run ("problem_run") and
// result ("problem") are its events, written as they happen.
inline constexpr char kBenchTaskPrefix[] = "bench:";

struct BenchState {
  int64_t id = 0;
  std::string status;                                        // running | finished | failed
  nlohmann::json config;                                     // as CreateBench stored it
  std::vector<ProblemResult> finished;                       // in the order they finished
  std::vector<std::pair<std::string, int64_t>> interrupted;  // problem id → optimizer run, started and not finished
  int slices = 0;                                            // slices started so far
};

Result<int64_t> CreateBench(Store& store, const Suite& suite, const nlohmann::json& config);
// NotFound for an unknown id; InvalidInput when the id is an optimizer run, not a bench.
Result<BenchState> LoadBench(Store& store, int64_t id);

// Runs `problems` of bench `id` as its next slice (those already finished in the store are skipped; an interrupted
// one continues its optimizer run) on `devices`, one problem per entry at a time (a device listed
// twice runs two problems at once; an empty list:
// one at a time, device −1). Every result is recorded as it finishes; the bench is marked finished
// at the end. A problem that fails (ProblemResult::error) while others share its device runs once
// more alone at the end — a failure of the sharing (memory the others held) is not the problem's —
// and only that result is recorded, with a warning naming the first failure. Returns every finished result of the
// bench, old and new: those of `problems` in their order, then those of other problems (earlier slices) in the order
// they finished. `clock` times each problem and the slice. A Status error only when the store fails.
Result<std::vector<ProblemResult>> RunBench(Store& store, int64_t id, const std::vector<BenchProblem>& problems,
                                            ProblemRunner& runner, const std::vector<int>& devices,
                                            BenchProgress& progress, Clock& clock);

}  // namespace kpilot
