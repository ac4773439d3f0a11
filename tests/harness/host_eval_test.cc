// End to end on the host backend: real task loader, real g++, real kpilot-runner.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/fs.h"
#include "test_paths.h"
#include "harness/harness.h"
#include "task/loader.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = testing::SourceDir() / "examples" / "host";

class HostEval : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::Create("kpilot-harness-test-cache-");
    ASSERT_TRUE(dir.ok());
    cache_ = new TempDir(std::move(dir).value());
    toolchain_ = MakeSystemToolchain(cache_->path(), testing::SourceDir() / "include").release();
  }
  static void TearDownTestSuite() {
    delete toolchain_;
    delete cache_;
  }
  void SetUp() override {
    // Each test's runs live under their own TMPDIR, so leftovers can be found by path.
    auto dir = TempDir::Create("kpilot-harness-test-tmp-");
    ASSERT_TRUE(dir.ok());
    tmp_ = std::make_unique<TempDir>(std::move(dir).value());
    const char* old = getenv("TMPDIR");
    old_tmpdir_ = old ? old : "";
    setenv("TMPDIR", tmp_->path().c_str(), 1);
  }
  void TearDown() override {
    if (old_tmpdir_.empty()) unsetenv("TMPDIR");
    else setenv("TMPDIR", old_tmpdir_.c_str(), 1);
  }

  Task Load(const std::string& name) {
    auto t = LoadTask(kExamples / name);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : Task{};
  }

  Evaluation Eval(const Task& task, const fs::path& candidate, EvalOptions opt = Quick()) {
    Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
    auto e = ev.Evaluate(task, candidate, opt);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : Evaluation{};
  }

  static EvalOptions Quick() {
    EvalOptions opt;
    opt.timing.max_seconds = 1.5;
    opt.timing.max_reps = 400;
    opt.timeout_s = 30;
    return opt;
  }

  // Processes whose working directory or command line lies under this test's TMPDIR.
  std::vector<std::string> Leftovers() {
    std::vector<std::string> out;
    std::string prefix = tmp_->path().string();
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

  static TempDir* cache_;
  static Toolchain* toolchain_;
  std::unique_ptr<TempDir> tmp_;
  std::string old_tmpdir_;
};

TempDir* HostEval::cache_ = nullptr;
Toolchain* HostEval::toolchain_ = nullptr;

const char* kHostTasks[] = {"saxpy", "row_softmax", "sum_reduction", "sgemm"};

TEST_F(HostEval, ReferenceAsCandidatePassesWithSpeedupNearOne) {
  for (const char* name : kHostTasks) {
    Task task = Load(name);
    Evaluation e = Eval(task, task.reference.path);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << name << ": " << e.verdict.summary;
    ASSERT_EQ(e.timings.size(), task.workloads.size()) << name;
    for (const auto& t : e.timings) {
      EXPECT_NEAR(t.speedup.ratio, 1.0, 0.10) << name << "/" << t.workload;
      EXPECT_GE(t.candidate_ms.size(), 3u);
      EXPECT_EQ(t.candidate_ms.size(), t.baseline_ms.size());
    }
    EXPECT_NEAR(e.speedup_geomean, 1.0, 0.10) << name;
  }
}

TEST_F(HostEval, EveryShippedCandidatePasses) {
  int count = 0;
  for (const char* name : kHostTasks) {
    Task task = Load(name);
    for (auto& entry : fs::directory_iterator(kExamples / name / "candidates")) {
      if (entry.path().extension() != ".cpp") continue;
      EvalOptions opt = Quick();
      opt.time = false;  // correctness of every candidate; speed is measured by bench/
      Evaluation e = Eval(task, entry.path(), opt);
      EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << entry.path() << ": " << e.verdict.summary;
      ++count;
    }
  }
  EXPECT_GE(count, 4);
}

TEST_F(HostEval, TunableParamsReachTheCandidate) {
  Task task = Load("saxpy");
  ASSERT_FALSE(task.params.empty());
  EvalOptions opt = Quick();
  opt.time = false;
  for (const auto& value : task.params.front().values) {
    opt.params = {{task.params.front().name, value}};
    Evaluation e = Eval(task, kExamples / "saxpy" / "candidates" / "omp_simd.cpp", opt);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << value;
    EXPECT_NE(std::find(e.compile.command.begin(), e.compile.command.end(),
                        "-D" + task.params.front().name + "=" + value) != e.compile.command.end() ||
                  std::find(e.compile.command.begin(), e.compile.command.end(), task.params.front().name + "=" + value) !=
                      e.compile.command.end(),
              false)
        << "the -D flag is on the compiler's command line";
  }
}

struct BrokenCase {
  const char* file;
  VerdictKind expected;
  const char* phrase;  // expected in the summary
};

TEST_F(HostEval, BrokenCandidatesGetTheirVerdictAndLeaveNothingBehind) {
  Task task = Load("saxpy");
  const BrokenCase cases[] = {
      {"compile_error.cpp", VerdictKind::kCompileError, "compile_error.cpp:"},
      {"wrong_result.cpp", VerdictKind::kIncorrect, "differs from the reference"},
      {"nan_output.cpp", VerdictKind::kIncorrect, "differs from the reference"},
      {"segfault.cpp", VerdictKind::kRuntimeError, "signal 11"},
      {"hang.cpp", VerdictKind::kTimeout, "wall-clock limit"},
      {"exit0.cpp", VerdictKind::kRuntimeError, "exit()"},
      {"returns_error.cpp", VerdictKind::kRuntimeError, "returned status 7"},
      {"missing_symbol.cpp", VerdictKind::kRuntimeError, "kpilot_launch"},
      {"wrong_abi.cpp", VerdictKind::kRuntimeError, "ABI version 999"},
      {"out_of_bounds.cpp", VerdictKind::kIncorrect, "outside output"},
      {"mutates_input.cpp", VerdictKind::kIncorrect, "modified input"},
      {"fork_child.cpp", VerdictKind::kPassed, ""},
      {"setsid_child.cpp", VerdictKind::kPassed, ""},
      {"stdout_flood.cpp", VerdictKind::kPassed, ""},
      {"prints_non_utf8.cpp", VerdictKind::kPassed, ""},
  };
  for (const auto& c : cases) {
    EvalOptions opt = Quick();
    opt.workloads = {task.workloads.front().name};
    opt.seeds = {1};
    opt.timing.max_seconds = 0.3;
    opt.timeout_s = std::string(c.file) == "hang.cpp" ? 3 : 30;
    Evaluation e = Eval(task, kExamples / "saxpy" / "broken" / c.file, opt);
    EXPECT_EQ(e.verdict.kind, c.expected) << c.file << ": " << VerdictName(e.verdict.kind) << " — " << e.verdict.summary;
    EXPECT_NE(e.verdict.summary.find(c.phrase), std::string::npos) << c.file << ": " << e.verdict.summary;
    EXPECT_EQ(Leftovers(), std::vector<std::string>{}) << c.file << " left processes behind";
  }
}

TEST_F(HostEval, SandboxFallbackWithoutNamespacesStillKillsEscapees) {
  Task task = Load("saxpy");
  for (const char* file : {"fork_child.cpp", "setsid_child.cpp"}) {
    EvalOptions opt = Quick();
    opt.workloads = {task.workloads.front().name};
    opt.seeds = {1};
    opt.time = false;
    opt.sandbox = false;  // the subreaper path alone
    Evaluation e = Eval(task, kExamples / "saxpy" / "broken" / file, opt);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << file << ": " << e.verdict.summary;
    EXPECT_GE(e.run.leftover_processes_killed, 1) << file;
    EXPECT_EQ(Leftovers(), std::vector<std::string>{}) << file;
  }
}

// `kpilot eval` killed with -9 while its candidate runs: the runner finds no one reads its result
// and stops at once with every process it started, instead of running on to its timeout (on a
// GPU, holding the GPU lock a resumed run waits for).
TEST_F(HostEval, ARunnerWhoseCallerIsKilledStopsAtOnce) {
  Task task = Load("saxpy");
  std::string kpilot = (testing::BinaryDir() / "bin" / "kpilot").string();
  std::string task_dir = (kExamples / "saxpy").string(), hang = (kExamples / "saxpy" / "broken" / "hang.cpp").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(kpilot.c_str(), kpilot.c_str(), "eval", task_dir.c_str(), hang.c_str(), "--no-store", "--timeout", "120",
          "--workload", task.workloads.front().name.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  bool running = false;  // the runner is up once a process works in a folder under our TMPDIR
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const std::string& p : Leftovers()) {
      auto cmdline = ReadFile("/proc/" + p + "/cmdline");
      running = running || (cmdline.ok() && cmdline->find("kpilot-runner") != std::string::npos);
    }
  }
  if (!running) {  // leave nothing running for the 120-s timeout
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(running) << "kpilot eval did not start its runner";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the candidate's endless call
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  auto killed = std::chrono::steady_clock::now();
  while (!Leftovers().empty() && std::chrono::steady_clock::now() - killed < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_EQ(Leftovers(), std::vector<std::string>{});
  EXPECT_LT(took, 5) << "the runner outlived its caller by " << took << " s";
}

TEST_F(HostEval, UnknownWorkloadIsAnInputError) {
  Task task = Load("saxpy");
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  EvalOptions opt = Quick();
  opt.workloads = {"nope"};
  auto e = ev.Evaluate(task, task.reference.path, opt);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(e.status().message().find("nope"), std::string::npos);
}

// A journaled evaluation (RecordJson) reads back as the same evaluation, for real results: a
// pass with timings, a wrong result, a compile error and a crash.
TEST_F(HostEval, AnEvaluationRecordReadsBackExactly) {
  Task task = Load("saxpy");
  EvalOptions opt = Quick();
  opt.workloads = {task.workloads.front().name};
  opt.timing.max_seconds = 0.3;
  for (const char* file : {"", "wrong_result.cpp", "compile_error.cpp", "segfault.cpp", "prints_non_utf8.cpp"}) {
    const fs::path candidate = *file ? kExamples / "saxpy" / "broken" / file : task.dir / "candidates" / "omp_simd.cpp";
    Evaluation e = Eval(task, candidate, opt);
    const nlohmann::json record = RecordJson(e);
    auto back = EvaluationFromRecord(nlohmann::json::parse(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    ASSERT_TRUE(back.ok()) << file << ": " << back.status().ToString();
    EXPECT_EQ(RecordJson(*back), record) << file;
    EXPECT_EQ(ToJson(*back), ToJson(e)) << file;
    if (!*file) {
      ASSERT_FALSE(back->timings.empty());
      EXPECT_EQ(back->timings[0].candidate_ms, e.timings[0].candidate_ms) << "every sample";
      EXPECT_EQ(back->speedup_geomean, e.speedup_geomean);
    }
  }
  EXPECT_FALSE(EvaluationFromRecord(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace kpilot
