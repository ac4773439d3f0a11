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
#include "scoped_env.h"
#include "support/sync.h"
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
    if (old_tmpdir_.empty())
      unsetenv("TMPDIR");
    else
      setenv("TMPDIR", old_tmpdir_.c_str(), 1);
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
  // Quicker still, on the first workload: the served-runner tests make many evaluations.
  static EvalOptions QuickOnFirstWorkload(const Task& task) {
    EvalOptions opt = Quick();
    opt.workloads = {task.workloads.front().name};
    opt.timing.max_seconds = 0.2;
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
      bool hit =
          (!ec && cwd.string().rfind(prefix, 0) == 0) || (cmdline.ok() && cmdline->find(prefix) != std::string::npos);
      if (hit && std::stoi(pid) != getpid()) out.push_back(pid);
    }
    return out;
  }

  // Waits until a process under our TMPDIR has spun `seconds` of CPU: the candidate is in its
  // endless call (hang.cpp), which nothing outside the runner can see otherwise.
  bool AwaitSpinning(double seconds = 0.2) {
    return testing::WaitUntil([&] {
      for (const std::string& p : Leftovers())
        if (testing::ProcessCpuSeconds(std::stoi(p)) >= seconds) return true;
      return false;
    });
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
                  std::find(e.compile.command.begin(), e.compile.command.end(),
                            task.params.front().name + "=" + value) != e.compile.command.end(),
              false)
        << "the -D flag is on the compiler's command line";
  }
}

struct BrokenCase {
  const char* file;
  VerdictKind expected;
  const char* phrase;  // expected in the summary
};

const BrokenCase kBrokenCases[] = {
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
    {"forges_result.cpp", VerdictKind::kSuspicious, "forged"},
    {"forges_result_and_exits.cpp", VerdictKind::kSuspicious, "forged"},
    {"leaves_alarm.cpp", VerdictKind::kPassed, ""},
};

// One seed on the first workload, short timing; hang.cpp gets a 3-s limit.
EvalOptions BrokenOptions(const Task& task, const BrokenCase& c) {
  EvalOptions opt;
  opt.timing.max_reps = 400;
  opt.workloads = {task.workloads.front().name};
  opt.seeds = {1};
  opt.timing.max_seconds = 0.3;
  opt.timeout_s = std::string(c.file) == "hang.cpp" ? 3 : 30;
  return opt;
}

TEST_F(HostEval, BrokenCandidatesGetTheirVerdictAndLeaveNothingBehind) {
  Task task = Load("saxpy");
  for (const auto& c : kBrokenCases) {
    Evaluation e = Eval(task, kExamples / "saxpy" / "broken" / c.file, BrokenOptions(task, c));
    EXPECT_EQ(e.verdict.kind, c.expected)
        << c.file << ": " << VerdictName(e.verdict.kind) << " — " << e.verdict.summary;
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
  // The runner is up once a process works in a folder under our TMPDIR.
  const bool running = testing::WaitUntil(
      [&] {
        for (const std::string& p : Leftovers()) {
          auto cmdline = ReadFile("/proc/" + p + "/cmdline");
          if (cmdline.ok() && cmdline->find("kpilot-runner") != std::string::npos) return true;
        }
        return false;
      },
      std::chrono::seconds(60));
  if (!running) {  // leave nothing running for the 120-s timeout
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(running) << "kpilot eval did not start its runner";
  EXPECT_TRUE(AwaitSpinning()) << "the candidate's endless call never ran";
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  auto killed = std::chrono::steady_clock::now();
  testing::WaitUntil([&] { return Leftovers().empty(); }, std::chrono::seconds(20));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_EQ(Leftovers(), std::vector<std::string>{});
  EXPECT_LT(took, 5) << "the runner outlived its caller by " << took << " s";
}

// A served runner: evaluations that pass run one after another in one process; one that leaves
// a thread behind (OpenMP's pool) retires it, and the next evaluation starts a fresh one.
TEST_F(HostEval, AServedRunnerKeepsItsProcessWhileEvaluationsLeaveNothingBehind) {
  Task task = Load("saxpy");
  const EvalOptions opt = QuickOnFirstWorkload(task);
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  ServedRunner served(testing::RunnerPath());
  auto eval = [&](const fs::path& candidate) {
    auto e = ev.Evaluate(task, candidate, opt, &served);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : Evaluation{};
  };
  int pid = 0;
  for (int i = 1; i <= 3; ++i) {
    Evaluation e = eval(task.reference.path);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << e.verdict.summary;
    EXPECT_EQ(e.timings.size(), 1u);
    const nlohmann::json& s = e.run.details["served"];
    ASSERT_TRUE(s.is_object()) << e.run.details.dump();
    EXPECT_EQ(s.value("request", 0), i);
    EXPECT_EQ(s.value("next", ""), "ready") << s.dump();
    if (i == 1) pid = s.value("pid", 0);
    EXPECT_EQ(s.value("pid", 0), pid) << "the same process served every request";
  }
  Evaluation omp = eval(kExamples / "saxpy" / "candidates" / "omp_simd.cpp");
  EXPECT_EQ(omp.verdict.kind, VerdictKind::kPassed) << omp.verdict.summary;
  const nlohmann::json& s = omp.run.details["served"];
  EXPECT_EQ(s.value("next", ""), "retire");
  const std::string why = s.value("why", "");
  EXPECT_TRUE(why.find("thread") != std::string::npos || why.find("libgomp") != std::string::npos) << why;
  EXPECT_EQ(Leftovers(), std::vector<std::string>{}) << "a retired runner is gone with its worker";
  Evaluation again = eval(task.reference.path);
  EXPECT_EQ(again.verdict.kind, VerdictKind::kPassed);
  EXPECT_EQ(again.run.details["served"].value("request", 0), 1);
  EXPECT_NE(again.run.details["served"].value("pid", 0), pid);
  EXPECT_EQ(served.servers_started(), 2);
}

// A worker that ended while idle (here killed from outside, as the OOM killer would) is not
// blamed on the next request: that one runs in a fresh worker, passes, and says why.
TEST_F(HostEval, AServedRunnerWhoseWorkerDiedIdleStartsAFreshOne) {
  Task task = Load("saxpy");
  const EvalOptions opt = QuickOnFirstWorkload(task);
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  ServedRunner served(testing::RunnerPath());
  auto first = ev.Evaluate(task, task.reference.path, opt, &served);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->run.details["served"].value("next", ""), "ready");
  const int supervisor = first->run.details["served"].value("pid", 0);
  auto children = ReadFile("/proc/" + std::to_string(supervisor) + "/task/" + std::to_string(supervisor) + "/children");
  ASSERT_TRUE(children.ok() && !children->empty()) << "the served runner's worker";
  const int worker = std::stoi(*children);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  // Dead once it is a zombie, or reaped already.
  EXPECT_TRUE(testing::WaitUntil([&] {
    const char state = testing::ProcessState(worker);
    return state == 'Z' || state == '\0';
  }));
  auto second = ev.Evaluate(task, task.reference.path, opt, &served);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->verdict.kind, VerdictKind::kPassed) << second->verdict.summary;
  EXPECT_EQ(second->run.details["served"].value("pid", 0), supervisor) << "the same runner, a fresh worker";
  EXPECT_TRUE(std::any_of(second->run.warnings.begin(), second->run.warnings.end(), [](const std::string& w) {
    return w.find("had ended since its last request (signal 9)") != std::string::npos;
  })) << nlohmann::json(second->run.warnings).dump();
  EXPECT_EQ(served.servers_started(), 1);
}

// The requests folder lives under the caller's TMPDIR; when it went away (the caller's temporary
// folder removed, as the adversarial suite does after each case) the next request goes to a new
// folder and a fresh server, whose view of the file system has that folder, and passes.
TEST_F(HostEval, AServedRunnerWhoseRequestsFolderWentAwayTakesTheNextRequestInAFreshServer) {
  Task task = Load("saxpy");
  const EvalOptions opt = QuickOnFirstWorkload(task);
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  ServedRunner served(testing::RunnerPath());
  const fs::path first_tmp = tmp_->path() / "first", second_tmp = tmp_->path() / "second";
  fs::create_directories(first_tmp);
  fs::create_directories(second_tmp);
  Result<Evaluation> first = Status::Internal("not run"), second = Status::Internal("not run");
  {
    testing::ScopedEnv tmpdir("TMPDIR", first_tmp.c_str());
    first = ev.Evaluate(task, task.reference.path, opt, &served);
  }
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->verdict.kind, VerdictKind::kPassed) << first->verdict.summary;
  fs::remove_all(first_tmp);
  {
    testing::ScopedEnv tmpdir("TMPDIR", second_tmp.c_str());
    second = ev.Evaluate(task, task.reference.path, opt, &served);
  }
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->verdict.kind, VerdictKind::kPassed) << second->verdict.summary;
  EXPECT_EQ(second->run.details["served"].value("request", 0), 1) << second->run.details["served"].dump();
  EXPECT_EQ(served.servers_started(), 2);
  EXPECT_EQ(Leftovers(), std::vector<std::string>{});
}

// A "runner" that exits at once: the evaluation ends with an error or a runtime_error that says
// which program did not answer, at once and with no process left.
TEST_F(HostEval, AServedRunnerThatExitsAtOnceIsAnErrorNamingIt) {
  Task task = Load("saxpy");
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  ServedRunner served("/bin/false");
  const auto t0 = std::chrono::steady_clock::now();
  auto e = ev.Evaluate(task, task.reference.path, QuickOnFirstWorkload(task), &served);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  std::cout << "served /bin/false: " << (e.ok() ? e->run.message : e.status().ToString()) << "\n";
  if (e.ok()) {
    EXPECT_EQ(e->verdict.kind, VerdictKind::kRuntimeError) << e->verdict.summary;
    EXPECT_NE(e->run.message.find("/bin/false --serve ended without a result"), std::string::npos) << e->run.message;
  } else {
    EXPECT_NE(e.status().message().find("/bin/false --serve ended before it read a request"), std::string::npos)
        << e.status().ToString();
  }
  EXPECT_EQ(Leftovers(), std::vector<std::string>{});
}

// Every broken candidate gets the verdict a runner of its own gives it; a failed run retires
// the served runner, and nothing it started outlives it.
TEST_F(HostEval, AServedRunnerGivesBrokenCandidatesTheirVerdicts) {
  Task task = Load("saxpy");
  Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
  {
    ServedRunner served(testing::RunnerPath());
    for (const auto& c : kBrokenCases) {
      auto got = ev.Evaluate(task, kExamples / "saxpy" / "broken" / c.file, BrokenOptions(task, c), &served);
      ASSERT_TRUE(got.ok()) << c.file << ": " << got.status().ToString();
      const Evaluation& e = *got;
      EXPECT_EQ(e.verdict.kind, c.expected)
          << c.file << ": " << VerdictName(e.verdict.kind) << " — " << e.verdict.summary;
      EXPECT_NE(e.verdict.summary.find(c.phrase), std::string::npos) << c.file << ": " << e.verdict.summary;
      if (e.verdict.kind == VerdictKind::kCompileError) continue;  // no runner ran
      const nlohmann::json& s = e.run.details["served"];
      const bool kept = s.value("next", "") == "ready";
      const std::string file = c.file;
      const bool leaves =
          file.find("child") != std::string::npos || file == "forges_result.cpp" || file == "leaves_alarm.cpp";
      EXPECT_EQ(kept, c.expected == VerdictKind::kPassed && !leaves) << c.file << ": " << s.dump();
      if (file == "forges_result.cpp") {
        // Its lines were not taken for a result, and the runner it wrote to does not serve again.
        EXPECT_NE(s.value("why", "").find("result pipe"), std::string::npos) << s.dump();
      }
      if (file == "leaves_alarm.cpp") {
        EXPECT_NE(s.value("why", "").find("timer"), std::string::npos) << s.dump();
      }
      if (std::string(c.file).find("child") != std::string::npos) {
        EXPECT_GE(e.run.leftover_processes_killed, 1) << c.file;
      }
      if (!kept) {
        EXPECT_EQ(Leftovers(), std::vector<std::string>{}) << c.file << " left processes behind";
      }
    }
  }
  EXPECT_EQ(Leftovers(), std::vector<std::string>{});
}

// The process that reads a served runner's results goes away (killed with -9) while a candidate
// hangs: the runner stops at once with its worker, as a runner of its own does.
TEST_F(HostEval, AServedRunnerWhoseCallerIsGoneStopsAtOnce) {
  Task task = Load("saxpy");
  EvalOptions opt = Quick();
  opt.workloads = {task.workloads.front().name};
  opt.timeout_s = 120;
  auto request = BuildRunRequest(task, opt);
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  auto reference = toolchain_->Compile(task.reference.path, {}, {});
  auto hang = toolchain_->Compile(kExamples / "saxpy" / "broken" / "hang.cpp", {}, {});
  ASSERT_TRUE(reference.ok() && reference->ok && hang.ok() && hang->ok);
  request->reference_object = request->baseline_object = reference->object.string();
  request->candidate_object = hang->object.string();
  ASSERT_TRUE(StageObjects(*request, tmp_->path()).ok());  // the sandbox shows the worker this folder only
  const fs::path request_path = tmp_->path() / "request.json";
  ASSERT_TRUE(WriteFileAtomic(request_path, ToJson(*request).dump()).ok());

  for (bool busy : {true, false}) {
    int to_runner[2], from_runner[2];
    ASSERT_EQ(pipe(to_runner), 0);
    ASSERT_EQ(pipe(from_runner), 0);
    std::string runner = testing::RunnerPath().string();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      dup2(to_runner[0], 0);
      dup2(from_runner[1], 1);
      for (int fd : {to_runner[0], to_runner[1], from_runner[0], from_runner[1]}) close(fd);
      execl(runner.c_str(), runner.c_str(), "--serve", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_runner[0]);
    close(from_runner[1]);
    if (busy) {
      std::string line = request_path.string() + "\n";
      ASSERT_EQ(write(to_runner[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
      EXPECT_TRUE(AwaitSpinning()) << "the candidate's endless call never ran";
    } else {
      // Idle, waiting for a request: the runner itself (exec'd) blocks in its wait for a line.
      const fs::path exe = fs::canonical(runner);
      EXPECT_TRUE(testing::WaitUntil([&] {
        std::error_code ec;
        return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec) == exe &&
               testing::ProcessState(pid) == 'S';
      }));
    }
    close(from_runner[0]);  // the caller is gone: no one reads the results
    if (!busy) close(to_runner[1]);
    auto gone = std::chrono::steady_clock::now();
    int st = 0;
    pid_t got = 0;
    testing::WaitUntil([&] { return (got = waitpid(pid, &st, WNOHANG)) != 0; }, std::chrono::seconds(20));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - gone).count();
    if (got == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
    }
    if (busy) close(to_runner[1]);
    EXPECT_EQ(got, pid) << (busy ? "busy" : "idle") << ": the served runner outlived its caller";
    EXPECT_LT(took, 5) << (busy ? "busy" : "idle");
    if (busy) {
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << "kExitCallerGone";
    }
    testing::WaitUntil([&] { return Leftovers().empty(); }, std::chrono::seconds(5));
    EXPECT_EQ(Leftovers(), std::vector<std::string>{}) << (busy ? "busy" : "idle");
  }
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
    auto back = EvaluationFromRecord(
        nlohmann::json::parse(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
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
