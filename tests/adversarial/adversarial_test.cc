// The adversarial suite, end to end on a GPU: every candidate in manifest.toml goes through the
// real Evaluator (real nvcc, real kpilot-runner, cuda backend) and must get its expected verdict
// (or one of its also_ok verdicts), with the reason the manifest names, and leave no process
// behind. Prints a table and the score "N/M right, K harness crashes"; writes the same as JSON to
// $KPILOT_ADVERSARIAL_REPORT when that is set.
//
// Environment:
//   KPILOT_ADVERSARIAL_CASES=a,b   run only these cases (names are the files' stems)
//   KPILOT_ADVERSARIAL_REPORT=F    write the report as JSON to F
//   KPILOT_ADVERSARIAL_TIMING=M    time every case with procedure M (default | kernelbench | flashinfer)
//
// Skips when no GPU is visible.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "device/device.h"
#include "harness/harness.h"
#include "manifest.h"
#include "task/loader.h"
#include "test_paths.h"
#include "toolchain/toolchain.h"

namespace kpilot::adversarial {
namespace {

struct Outcome {
  const Case* c = nullptr;
  std::string got;            // a verdict name, or "harness_error"
  std::string summary;
  bool verdict_ok = false;    // got is expected or in also_ok
  bool reason_ok = true;      // reason_contains matched (checked when got == expected)
  bool timing_ok = true;      // passed cases: one timing per workload, none of them absurdly small
  std::vector<std::string> leftovers;
  nlohmann::json run = nlohmann::json::object();  // the runner's details, warnings and timings, for diagnosis
  bool harness_error = false;
  double seconds = 0;
  bool ok() const { return !harness_error && verdict_ok && reason_ok && timing_ok && leftovers.empty(); }
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Processes whose working directory or command line lies under `prefix` (the case's TMPDIR,
// where the Evaluator puts the runner's working directory).
std::vector<std::string> Leftovers(const std::string& prefix) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    auto cwd = fs::read_symlink(e.path() / "cwd", ec);
    auto cmdline = ReadFile(e.path() / "cmdline");
    bool hit = (!ec && cwd.string().rfind(prefix, 0) == 0) ||
               (cmdline.ok() && cmdline->find(prefix) != std::string::npos);
    if (hit && std::stoi(pid) != getpid()) out.push_back(pid);
  }
  return out;
}

class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const fs::path& dir) {
    const char* old = getenv("TMPDIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (had_) setenv("TMPDIR", old_.c_str(), 1);
    else unsetenv("TMPDIR");
  }

 private:
  bool had_ = false;
  std::string old_;
};

std::string Pad(std::string s, size_t w) {
  if (s.size() > w) s = s.substr(0, w);
  return s + std::string(w - s.size(), ' ');
}

std::string Joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

TEST(Adversarial, EveryCaseGetsItsVerdict) {
  std::string why_none;
  auto gpus = SystemGpuProbe().List(&why_none);
  if (gpus.empty()) GTEST_SKIP() << "no GPU visible (" << why_none << "); the adversarial suite needs one";

  Manifest manifest = LoadManifest();
  ASSERT_TRUE(manifest.errors.empty()) << JoinLines(manifest.errors);
  std::vector<const Case*> cases;
  const char* only = getenv("KPILOT_ADVERSARIAL_CASES");
  const std::vector<std::string> wanted = only ? Split(only, ',') : std::vector<std::string>{};
  for (const auto& c : manifest.cases)
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), c.name) != wanted.end()) cases.push_back(&c);
  ASSERT_FALSE(cases.empty()) << "KPILOT_ADVERSARIAL_CASES selects no case";

  const fs::path runner = kpilot::testing::RunnerPath();
  ASSERT_TRUE(fs::exists(runner)) << runner;
  auto cache = TempDir::Create("kpilot-adversarial-cache-");
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  const fs::path include_dir = kpilot::testing::SourceDir() / "include";
  const std::string arch = gpus.front().Arch();

  std::map<std::string, Task> tasks;
  for (const Case* c : cases) {
    if (tasks.count(c->task)) continue;
    auto t = LoadTask(c->task_dir());
    ASSERT_TRUE(t.ok()) << c->task << ": " << t.status().ToString();
    tasks.emplace(c->task, *t);
  }

  // Warm the compile cache in parallel (the Evaluator then hits it); failures here are ignored,
  // the Evaluator compiles again and reports them.
  {
    std::vector<fs::path> sources;
    for (const auto& [name, t] : tasks) sources.push_back(t.reference.path);
    for (const Case* c : cases) sources.push_back(c->source());
    const size_t jobs = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
    std::vector<std::future<void>> workers;
    for (size_t j = 0; j < jobs; ++j)
      workers.push_back(std::async(std::launch::async, [&, j] {
        auto tc = MakeSystemToolchain(cache->path(), include_dir);
        for (size_t i = j; i < sources.size(); i += jobs) {
          CompileOptions opt;
          opt.cuda_arch = arch;
          // The Evaluator compiles references without SASS; candidates with the defaults.
          opt.want_sass = i >= tasks.size();
          (void)tc->Compile(sources[i], {}, opt);
        }
      }));
    for (auto& w : workers) w.get();
  }

  auto toolchain = MakeSystemToolchain(cache->path(), include_dir);
  Evaluator evaluator(*toolchain, SystemProcessRunner(), runner);
  // KPILOT_ADVERSARIAL_RUNNER=served: every case through one served runner (kpilot-runner
  // --serve, kept across cases until a case retires it), as kpilot optimize evaluates.
  std::unique_ptr<ServedRunner> served;
  if (const char* mode = getenv("KPILOT_ADVERSARIAL_RUNNER"); mode && std::string(mode) == "served")
    served = std::make_unique<ServedRunner>(runner);
  std::vector<Outcome> outcomes;
  Calibration calibration;  // the GPU's ceilings, measured by the first run and reused
  for (const Case* c : cases) {
    Outcome o;
    o.c = c;
    auto tmp = TempDir::Create("kpilot-adversarial-" + c->name + "-");
    ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();
    const Task& task = tasks.at(c->task);
    EvalOptions opt;
    opt.compile.cuda_arch = arch;
    opt.calibration = calibration;
    opt.timing.max_seconds = 0.5;
    opt.timing.max_reps = 200;
    opt.timeout_s = c->timeout_s;
    opt.timing.mode = *ParseTimingMode(c->timing);
    if (const char* mode = getenv("KPILOT_ADVERSARIAL_TIMING"); mode && *mode) {
      auto m = ParseTimingMode(mode);
      ASSERT_TRUE(m.has_value()) << "KPILOT_ADVERSARIAL_TIMING=" << mode << ": not default, kernelbench or flashinfer";
      opt.timing.mode = *m;
    }
    auto t0 = std::chrono::steady_clock::now();
    // A case of several runs (results replayed from a file across processes): each run is an
    // evaluation of its own, the last one's verdict counts.
    Result<Evaluation> e = Status::Internal("no run");
    for (int run = 0; run < c->runs; ++run) {
      ScopedTmpdir scoped(tmp->path());
      e = evaluator.Evaluate(task, c->source(), opt, served.get());
      if (!e.ok()) break;
    }
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!e.ok()) {
      o.harness_error = true;
      o.got = "harness_error";
      o.summary = e.status().ToString();
    } else {
      if (!calibration.valid() && e->run.calibration.valid()) calibration = e->run.calibration;
      nlohmann::json details = e->run.details;
      if (details.is_object()) details.erase("launch_trace");  // large; the rest explains a verdict
      nlohmann::json medians = nlohmann::json::object();
      for (const auto& t : e->timings)
        medians[t.workload] = {{"candidate_ms", t.candidate.median}, {"baseline_ms", t.baseline.median}};
      o.run = {{"phase", e->run.phase},
               {"details", details},
               {"warnings", e->run.warnings},
               {"dram_bytes_per_s", e->run.calibration.dram_bytes_per_s},
               {"median_ms", medians},
               {"stdout_tail", Tail(e->run.candidate_stdout_tail, 300)},
               {"stderr_tail", Tail(e->run.candidate_stderr_tail, 300)}};
      o.got = std::string(VerdictName(e->verdict.kind));
      o.summary = e->verdict.summary;
      o.verdict_ok = c->Accepts(o.got);
      if (o.got == c->expected) o.reason_ok = ReasonMatches(*c, o.summary) && WarningMatches(*c, e->run.warnings);
      if (e->verdict.passed()) {
        // Honest timings: one per workload, and none at the 0.001 ms a faked timer would report.
        o.timing_ok = e->timings.size() == task.workloads.size();
        for (const auto& t : e->timings) o.timing_ok = o.timing_ok && t.candidate.median > 0.0011;
      }
    }
    o.leftovers = Leftovers(tmp->path().string());
    for (const auto& pid : o.leftovers) kill(std::stoi(pid), SIGKILL);  // so later cases start clean

    EXPECT_FALSE(o.harness_error) << c->file << ": the harness failed: " << o.summary;
    if (!o.harness_error) {
      EXPECT_TRUE(o.verdict_ok) << c->file << ": expected " << c->expected
                                << (c->also_ok.empty() ? "" : " (or " + Joined(c->also_ok, ", ") + ")") << ", got "
                                << o.got << " — " << o.summary;
      EXPECT_TRUE(o.reason_ok) << c->file << ": the summary names none of [" << Joined(c->reason_contains, ", ")
                               << "]: " << o.summary;
      EXPECT_TRUE(o.timing_ok) << c->file << ": passed without honest timings for every workload";
    }
    EXPECT_TRUE(o.leftovers.empty()) << c->file << " left processes behind: " << Joined(o.leftovers, " ");
    std::printf("[adversarial] %-22s %-14s %-5s %6.1fs  %s\n", c->name.c_str(), o.got.c_str(), o.ok() ? "ok" : "WRONG",
                o.seconds, o.summary.substr(0, 160).c_str());
    std::fflush(stdout);
    outcomes.push_back(std::move(o));
  }

  // The table and the score.
  int right = 0, crashes = 0;
  for (const auto& o : outcomes) {
    right += o.ok();
    crashes += o.harness_error;
  }
  std::ostringstream table;
  table << "\n" << Pad("case", 24) << Pad("task", 7) << Pad("expected", 30) << Pad("got", 15) << "ok\n";
  table << std::string(24 + 7 + 30 + 15 + 5, '-') << "\n";
  for (const auto& o : outcomes) {
    std::string expected = o.c->expected;
    if (!o.c->also_ok.empty()) expected += " (" + Joined(o.c->also_ok, "|") + ")";
    std::string mark = o.ok() ? "yes" : "NO";
    if (!o.harness_error && o.verdict_ok) {
      if (!o.reason_ok) mark += " (reason)";
      if (!o.timing_ok) mark += " (timing)";
    }
    if (!o.leftovers.empty()) mark += " (leftovers)";
    table << Pad(o.c->name, 24) << Pad(o.c->task, 7) << Pad(expected, 30) << Pad(o.got, 15) << mark << "\n";
  }
  table << "\n" << right << "/" << outcomes.size() << " right, " << crashes << " harness crash"
        << (crashes == 1 ? "" : "es") << "\n";
  std::printf("%s", table.str().c_str());
  if (served) std::printf("served runner: %d processes for %zu cases\n", served->servers_started(), outcomes.size());
  std::fflush(stdout);

  if (const char* report = getenv("KPILOT_ADVERSARIAL_REPORT"); report && *report) {
    nlohmann::json j;
    j["right"] = right;
    j["total"] = outcomes.size();
    j["harness_crashes"] = crashes;
    j["score"] = std::to_string(right) + "/" + std::to_string(outcomes.size()) + " right, " + std::to_string(crashes) +
                 " harness crashes";
    j["gpu"] = gpus.front().name;
    j["runner"] = served ? "served" : "per-eval";
    if (served) j["served_processes"] = served->servers_started();
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& o : outcomes)
      rows.push_back({{"case", o.c->name},
                      {"file", o.c->file},
                      {"task", o.c->task},
                      {"class", o.c->klass},
                      {"incident", o.c->incident},
                      {"expected", o.c->expected},
                      {"also_ok", o.c->also_ok},
                      {"reason_contains", o.c->reason_contains},
                      {"got", o.got},
                      {"summary", o.summary},
                      {"ok", o.ok()},
                      {"verdict_ok", o.verdict_ok},
                      {"reason_ok", o.reason_ok},
                      {"timing_ok", o.timing_ok},
                      {"harness_error", o.harness_error},
                      {"leftover_pids", o.leftovers},
                      {"seconds", o.seconds},
                      {"run", o.run},
                      {"why", o.c->why}});
    j["cases"] = rows;
    std::ofstream f(report);
    f << j.dump(2) << "\n";
    EXPECT_TRUE(f.good()) << "could not write " << report;
  }
  EXPECT_EQ(crashes, 0);
}

}  // namespace
}  // namespace kpilot::adversarial
