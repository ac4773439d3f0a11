// The adversarial suite's bookkeeping, on any machine (no GPU): the manifest names every candidate
// exactly once with valid verdicts, every task folder loads, and every candidate and reference
// compiles for sm_90a with the real nvcc through kpilot's toolchain — so a case fails on the GPU
// for what it does, never because its source is broken.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <thread>

#include "core/fs.h"
#include "manifest.h"
#include "task/loader.h"
#include "toolchain/toolchain.h"

namespace kpilot::adversarial {
namespace {

TEST(AdversarialManifest, IsWellFormed) {
  Manifest m = LoadManifest();
  EXPECT_TRUE(m.errors.empty()) << JoinLines(m.errors);
  EXPECT_GE(m.cases.size(), 60u);
  // At least 20 exploit classes, each with the public incident or report it comes from.
  std::set<std::string> classes;
  for (const auto& c : m.cases) {
    if (c.klass != "control") classes.insert(c.klass);
    if (c.klass != "control") {
      EXPECT_FALSE(c.incident.empty()) << "manifest.toml:" << c.line << ": " << c.file << " names no incident";
    }
  }
  EXPECT_GE(classes.size(), 20u);
  for (const auto& c : m.cases) {
    EXPECT_TRUE(fs::is_regular_file(c.source())) << "manifest.toml:" << c.line << ": " << c.source() << " does not exist";
    EXPECT_TRUE(fs::is_regular_file(c.task_dir() / "task.toml"))
        << "manifest.toml:" << c.line << ": " << c.file << ": no task folder " << c.task_dir();
    if (c.expected == "timeout") {
      EXPECT_LE(c.timeout_s, 30) << c.file << ": a timeout case should set a short timeout_s";
    }
  }
}

TEST(AdversarialManifest, ListsEveryCandidateFile) {
  Manifest m = LoadManifest();
  std::set<std::string> listed;
  for (const auto& c : m.cases) listed.insert(c.file);
  int found = 0;
  for (const auto& e : fs::directory_iterator(CandidatesDir())) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    EXPECT_EQ(e.path().extension(), ".cu") << name << ": only candidate sources belong in candidates/";
    EXPECT_TRUE(listed.count(name)) << name << " is not listed in manifest.toml";
    ++found;
  }
  EXPECT_EQ(static_cast<size_t>(found), listed.size());
}

TEST(AdversarialManifest, TasksLoadAndDeclareTheirGuards) {
  std::map<std::string, Task> tasks;
  for (const auto& e : fs::directory_iterator(TasksDir())) {
    if (!e.is_directory()) continue;
    auto t = LoadTask(e.path());
    ASSERT_TRUE(t.ok()) << e.path() << ": " << t.status().ToString();
    EXPECT_EQ(t->backend, Backend::kCuda) << e.path();
    EXPECT_GE(t->workloads.size(), 2u) << e.path();
    EXPECT_FALSE(t->bytes_formula.empty()) << e.path() << ": the faster-than-physics check needs roofline bytes";
    tasks.emplace(e.path().filename().string(), *t);
  }
  ASSERT_TRUE(tasks.count("vadd") && tasks.count("tiny") && tasks.count("sgemm"));
  // The library and precision cases only mean something if the tasks forbid and declare them.
  EXPECT_FALSE(tasks["vadd"].libraries);
  EXPECT_FALSE(tasks["sgemm"].libraries);
  for (const char* name : {"vadd", "tiny", "sgemm"}) {
    ASSERT_TRUE(tasks[name].compute_precision.has_value()) << name;
    EXPECT_EQ(*tasks[name].compute_precision, DType::kF32) << name;
  }
  // tiny: all zeros must lie inside the plain tolerance (|y| = 1e-6 |x| < atol for |x| < 10).
  EXPECT_GE(tasks["tiny"].tolerance.atol, 1e-5);
  // sgemm: the loose tolerance that lets fp16 arithmetic through element by element.
  EXPECT_GE(tasks["sgemm"].tolerance.atol, 1e-2);
  // The shape-overfitting case needs the 16M workload first and an odd size after it.
  ASSERT_EQ(tasks["vadd"].workloads.size(), 2u);
  EXPECT_EQ(tasks["vadd"].workloads[0].axes.at("n"), 16777216);
  EXPECT_EQ(tasks["vadd"].workloads[1].axes.at("n") % 4, 3);

  Manifest m = LoadManifest();
  for (const auto& c : m.cases) EXPECT_TRUE(tasks.count(c.task)) << c.file << ": unknown task " << c.task;
}

TEST(AdversarialManifest, LoaderReportsMistakes) {
  auto dir = TempDir::Create("kpilot-adversarial-manifest-");
  ASSERT_TRUE(dir.ok());
  const fs::path path = dir->path() / "manifest.toml";
  ASSERT_TRUE(WriteFileAtomic(path, R"([[case]]
file = "a.cu"
task = "vadd"
expected = "pased"
also_ok = ["incorrect", "pased"]
why = "typo in a verdict"

[[case]]
file = "a.cu"
task = "vadd"
expected = "incorrect"
also_ok = ["incorrect"]
reason_contains = 3
timeout_s = -1
colour = "red"

[[case]]
file = "b.cpp"
task = "vadd"
expected = "passed"
reason_contains = ["stream", "outside"]
why = "fine but for the extension"
)")
                  .ok());
  Manifest m = LoadManifest(path);
  const std::string all = JoinLines(m.errors);
  for (const char* want : {"manifest.toml:1: a.cu: expected = \"pased\" is not a verdict",
                           "also_ok \"pased\" is not a verdict", "lacks why", "a.cu is listed twice",
                           "also_ok repeats the expected verdict", "reason_contains must be a string or a list",
                           "timeout_s must be a positive number", "unknown key \"colour\"", "candidates are .cu files"})
    EXPECT_NE(all.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << all;
  ASSERT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.cases[2].reason_contains, (std::vector<std::string>{"stream", "outside"}));
  EXPECT_TRUE(ReasonMatches(m.cases[2], "ran 1 kernel(s) OUTSIDE the given one"));
  EXPECT_FALSE(ReasonMatches(m.cases[2], "differs from the reference"));
  EXPECT_TRUE(m.cases[0].Accepts("incorrect"));
  EXPECT_FALSE(m.cases[0].Accepts("timeout"));
}

// Compiles every candidate and every reference with nvcc for sm_90a (two at a time), as the
// harness would on an H200.
TEST(AdversarialManifest, EverySourceCompilesForSm90a) {
  std::vector<fs::path> sources;
  for (const auto& e : fs::directory_iterator(CandidatesDir()))
    if (e.path().extension() == ".cu") sources.push_back(e.path());
  for (const auto& e : fs::directory_iterator(TasksDir()))
    if (e.is_directory() && fs::exists(e.path() / "reference.cu")) sources.push_back(e.path() / "reference.cu");
  std::sort(sources.begin(), sources.end());
  ASSERT_FALSE(sources.empty());

  auto cache = TempDir::Create("kpilot-adversarial-compile-");
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  CompileOptions opt;
  opt.cuda_arch = "sm_90a";
  opt.want_sass = false;
  opt.timeout_s = 300;

  // Probe once: no nvcc → skip (the cpu CI machine has one; a bare box may not).
  {
    auto tc = MakeSystemToolchain(cache->path(), kpilot::testing::SourceDir() / "include");
    auto first = tc->Compile(sources.front(), {}, opt);
    if (!first.ok() && first.status().code() == StatusCode::kUnavailable) GTEST_SKIP() << first.status().ToString();
  }

  const size_t jobs = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 4);
  std::vector<std::future<std::vector<std::pair<fs::path, Result<CompileOutput>>>>> workers;
  for (size_t j = 0; j < jobs; ++j) {
    workers.push_back(std::async(std::launch::async, [&, j] {
      auto tc = MakeSystemToolchain(cache->path(), kpilot::testing::SourceDir() / "include");
      std::vector<std::pair<fs::path, Result<CompileOutput>>> out;
      for (size_t i = j; i < sources.size(); i += jobs) out.emplace_back(sources[i], tc->Compile(sources[i], {}, opt));
      return out;
    }));
  }
  int compiled = 0;
  for (auto& w : workers) {
    for (auto& [src, r] : w.get()) {
      const std::string rel = fs::relative(src, SuiteDir()).string();
      ASSERT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
      EXPECT_TRUE(r->ok) << rel << " does not compile: " << r->first_error << "\n" << Tail(r->log, 3000);
      if (r->ok) {
        EXPECT_NE(std::find(r->command.begin(), r->command.end(), "-gencode=arch=compute_90a,code=sm_90a"),
                  r->command.end())
            << rel;
        ++compiled;
      }
    }
  }
  EXPECT_EQ(static_cast<size_t>(compiled), sources.size());
}

}  // namespace
}  // namespace kpilot::adversarial
