// kpilot bench end to end on the CPU: a suite of two host task folders in two levels (saxpy and
// row_softmax from examples/host, with smaller workloads), the params generator, budget 3; then
// --resume of the finished bench re-runs nothing; then --eval-only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "device/device.h"
#include "scoped_env.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Copies an example task into `to`, replacing `from_text` by `to_text` in its task.toml.
void CopyTask(const std::string& name, const fs::path& to, const std::string& from_text = "",
              const std::string& to_text = "") {
  fs::path src = testing::SourceDir() / "examples" / "host" / name;
  fs::create_directories(to);
  fs::copy(src, to, fs::copy_options::recursive);
  if (from_text.empty()) return;
  auto toml = ReadFile(to / "task.toml");
  ASSERT_TRUE(toml.ok());
  std::string t = *toml;
  size_t at = t.find(from_text);
  ASSERT_NE(at, std::string::npos) << from_text;
  t.replace(at, from_text.size(), to_text);
  ASSERT_TRUE(WriteFileAtomic(to / "task.toml", t).ok());
}

// The last JSON object printed on stdout (the report).
json Report(const ProcessResult& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

TEST(BenchCli, HostSuiteWithTheParamsGeneratorThenResumeThenEvalOnly) {
  auto d = TempDir::Create("kpilot-bench-cli-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path();
  CopyTask("saxpy", root / "suite" / "easy" / "saxpy", "n = 33554432", "n = 262144");
  CopyTask("row_softmax", root / "suite" / "hard" / "row_softmax", "rows = 4096, cols = 1024",
           "rows = 256, cols = 1024");
  fs::path store = root / "store";
  auto r =
      testing::RunKpilot(root,
                         {"bench", (root / "suite").string(), "--generator", "params", "--budget", "3", "--max-seconds",
                          "0.3", "--store", store.string(), "--json", "--markdown", (root / "report.md").string()},
                         900);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = Report(r);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["format"], "tasks");
  ASSERT_EQ(j["levels"].size(), 2u);
  EXPECT_EQ(j["levels"][0]["level"], "easy");
  EXPECT_EQ(j["levels"][1]["level"], "hard");
  EXPECT_EQ(j["total"]["problems"], 2);
  EXPECT_EQ(j["total"]["correct"], 2) << r.err;
  EXPECT_DOUBLE_EQ(j["total"]["correctness"].get<double>(), 1.0);
  EXPECT_EQ(j["total"]["eager"]["fast_p"]["0"], 1.0) << "fast_0 = correctness";
  EXPECT_GT(j["total"]["eager"]["geomean_speedup"].get<double>(), 0);
  EXPECT_EQ(j["total"]["compile"]["measured"], 0) << "host tasks have no torch.compile baseline";
  for (const auto& p : j["problems"]) {
    EXPECT_LE(p["evaluations"].get<int>(), 3) << p.dump();
    EXPECT_GT(p["run"].get<int>(), 0);
    EXPECT_TRUE(fs::exists(p["candidate"].get<std::string>())) << p.dump();
  }
  EXPECT_GT(j["total"]["cost"]["gpu_s"].get<double>(), 0) << "evaluation time is counted";
  // Progress: one JSON line per finished problem on stderr, with the time the slice has left at
  // its pace so far.
  std::vector<json> finished;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);)
    if (json e = json::parse(line, nullptr, false); e.is_object() && e.value("event", "") == "problem")
      finished.push_back(e);
  ASSERT_EQ(finished.size(), 2u) << r.err;
  EXPECT_GT(finished[0]["seconds_left"].get<double>(), 0) << "one of two done: about as long again";
  EXPECT_EQ(finished[1]["seconds_left"], 0) << "none left";
  EXPECT_EQ(finished[1]["slice"], 1);
  auto md = ReadFile(root / "report.md");
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("## Against eager"), std::string::npos);
  EXPECT_NE(md->find("| easy | 1 | 100% |"), std::string::npos) << *md;
  EXPECT_FALSE(j.contains("partial")) << "the final report is whole";
  int64_t bench = j["bench"].get<int64_t>();
  EXPECT_TRUE(fs::exists(store / "bench" / std::to_string(bench) / "report.json"));

  // The finished bench resumes to the same report without running anything.
  auto again =
      testing::RunKpilot(root, {"bench", "--resume", std::to_string(bench), "--store", store.string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json k = Report(again);
  EXPECT_EQ(k["problems"], j["problems"]);
  EXPECT_EQ(again.err.find("\"event\":\"problem\""), std::string::npos) << "nothing re-run: " << again.err;

  // --eval-only: the examples' own candidates, one evaluation each.
  fs::path cands = root / "cands";
  fs::create_directories(cands);
  fs::copy_file(testing::SourceDir() / "examples/host/saxpy/candidates/omp_simd.cpp", cands / "saxpy.cpp");
  fs::copy_file(testing::SourceDir() / "examples/host/row_softmax/candidates/omp_simd_exp.cpp",
                cands / "row_softmax.cpp");
  auto eval = testing::RunKpilot(root, {"bench", (root / "suite").string(), "--eval-only", cands.string(), "--store",
                                        store.string(), "--max-seconds", "0.3", "--json"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  json e = Report(eval);
  EXPECT_EQ(e["total"]["correct"], 2) << eval.err;
  for (const auto& p : e["problems"]) {
    EXPECT_EQ(p["evaluations"], 1);
    EXPECT_EQ(p["run"], 0) << "no optimizer run";
  }
}

// The params generator with a start that declares no params (a task without [params], like a
// flashinfer definition's hand-written kernel): the start is evaluated once, with a warning saying
// why, instead of the problem failing.
TEST(BenchCli, AnUntunableStartIsEvaluatedAsItIs) {
  auto d = TempDir::Create("kpilot-bench-cli-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path();
  fs::path task = root / "suite" / "saxpy";
  CopyTask("saxpy", task, "n = 33554432", "n = 262144");
  auto toml = ReadFile(task / "task.toml");
  ASSERT_TRUE(toml.ok());
  std::string t = toml->substr(0, toml->find("[params]"));
  t.replace(t.find("constraints = [\"CHUNK >= 64 * VEC\"]"), 35, "");
  ASSERT_TRUE(WriteFileAtomic(task / "task.toml", t).ok());
  auto r = testing::RunKpilot(root,
                              {"bench", (root / "suite").string(), "--budget", "3", "--max-seconds", "0.3", "--store",
                               (root / "store").string(), "--json"},
                              600);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = Report(r);
  ASSERT_EQ(j["problems"].size(), 1u);
  const json& p = j["problems"][0];
  EXPECT_EQ(p["evaluations"], 1) << p.dump();
  EXPECT_EQ(p["verdict"], "passed") << p.dump();
  EXPECT_NE(p["warnings"].dump().find("declares no tunable params"), std::string::npos) << p.dump();
}

// A bench killed mid-problem (SIGKILL from the test's timeout) resumes: finished problems are kept,
// the interrupted one continues its own optimizer run instead of starting another.
TEST(BenchCli, AKilledBenchResumesWithoutStartingAProblemAgain) {
  auto d = TempDir::Create("kpilot-bench-kill-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path();
  CopyTask("row_softmax", root / "suite" / "row_softmax", "rows = 4096, cols = 1024", "rows = 256, cols = 1024");
  CopyTask("saxpy", root / "suite" / "saxpy", "n = 33554432", "n = 262144");
  std::string store = (root / "store").string();
  // About 17 s uninterrupted on the 2-core CI machine: killed at 9 s, inside one of the problems.
  (void)testing::RunKpilot(
      root, {"bench", (root / "suite").string(), "--budget", "3", "--max-seconds", "0.3", "--store", store}, 9);
  auto resumed = testing::RunKpilot(root, {"bench", "--resume", "1", "--store", store, "--json"}, 600);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  json j = Report(resumed);
  EXPECT_EQ(j["total"]["correct"], 2) << resumed.err;
  auto runs = testing::RunKpilot(root, {"runs", "--store", store, "--json"});
  json list = Report(runs);
  ASSERT_TRUE(list.is_array());
  EXPECT_EQ(list.size(), 3u) << "the bench and one optimizer run per problem, none started twice: " << list.dump();
  for (const auto& r : list) EXPECT_EQ(r["status"], "finished") << r.dump();
}

// The report is rewritten after every finished problem, marked partial: a bench killed in its
// second problem (a candidate that never returns) leaves the first one's figures behind.
TEST(BenchCli, AKilledBenchLeavesAPartialReport) {
  auto d = TempDir::Create("kpilot-bench-partial-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path();
  CopyTask("saxpy", root / "suite" / "a_saxpy", "n = 33554432", "n = 262144");
  CopyTask("saxpy", root / "suite" / "b_saxpy", "n = 33554432", "n = 262144");
  fs::path cands = root / "cands";
  fs::create_directories(cands);
  fs::copy_file(testing::SourceDir() / "examples/host/saxpy/candidates/omp_simd.cpp", cands / "a_saxpy.cpp");
  fs::copy_file(testing::SourceDir() / "examples/host/saxpy/broken/hang.cpp", cands / "b_saxpy.cpp");
  // a_saxpy takes a few seconds; b_saxpy hangs until its 120 s limit: killed at 30 s, inside it.
  (void)testing::RunKpilot(
      root,
      {"bench", (root / "suite").string(), "--eval-only", cands.string(), "--max-seconds", "0.3", "--store",
       (root / "store").string(), "--out", (root / "out").string(), "--markdown", (root / "report.md").string()},
      30);
  auto text = ReadFile(root / "out" / "report.json");
  ASSERT_TRUE(text.ok()) << "no report after the first problem finished";
  json j = json::parse(*text, nullptr, false);
  ASSERT_TRUE(j.is_object()) << *text;
  EXPECT_EQ(j["partial"], json::parse(R"({"done": 1, "total": 2})"));
  ASSERT_EQ(j["problems"].size(), 1u);
  EXPECT_EQ(j["problems"][0]["id"], "all/a_saxpy");
  EXPECT_EQ(j["total"]["correct"], 1);
  auto md = ReadFile(root / "report.md");
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(md->rfind("> Partial: 1 of 2 problems finished", 0), 0u) << *md;
  EXPECT_NE(md->find("kpilot bench --resume 1"), std::string::npos) << *md;
}

// A KernelBench-layout suite on the CPU torch device (the project's CPU-torch venv): the problem is
// loaded through the torch worker and the given ModelNew evaluated against eager; a torch without
// torch.compile leaves the eager figure standing with a warning.
TEST(BenchCli, KernelBenchLayoutEvalOnlyOnTheCpuTorchDevice) {
  fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup-torch-venv.sh";
  auto d = TempDir::Create("kpilot-bench-kb-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path(), fixtures = testing::SourceDir() / "tests" / "python" / "fixtures";
  fs::create_directories(root / "suite" / "level1");
  fs::create_directories(root / "cands");
  fs::copy_file(fixtures / "linear_problem.py", root / "suite" / "level1" / "1_Linear.py");
  fs::copy_file(fixtures / "linear_new_ok.py", root / "cands" / "1_Linear.py");
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto r = testing::RunKpilot(root,
                              {"bench", (root / "suite").string(), "--eval-only", (root / "cands").string(), "--python",
                               python.string(), "--store", (root / "store").string(), "--json"},
                              600);
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = Report(r);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["format"], "kernelbench");
  ASSERT_EQ(j["problems"].size(), 1u);
  const json& p = j["problems"][0];
  EXPECT_EQ(p["id"], "level1/1_Linear");
  EXPECT_EQ(p["verdict"], "passed") << p.dump();
  EXPECT_GT(p["speedup_eager"].get<double>(), 0);
  EXPECT_EQ(j["levels"][0]["level"], "1");
  if (!p["compile_measured"].get<bool>()) {
    bool said = false;
    for (const auto& w : p["warnings"]) said |= w.get<std::string>().find("compile") != std::string::npos;
    EXPECT_TRUE(said) << "why there is no torch.compile figure: " << p["warnings"].dump();
    EXPECT_EQ(j["total"]["compile"]["fast_p"]["0"], 0.0);
  }
}

// --eval-reference over a suite run in two slices: level 1, then --resume with --levels 2; the
// second report covers both, with each problem's time split and the reference flaws found.
TEST(BenchCli, EachReferenceAsItsCandidateInSlicesThatCombine) {
  fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup-torch-venv.sh";
  auto d = TempDir::Create("kpilot-bench-ref-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path(), fixtures = testing::SourceDir() / "tests" / "python" / "fixtures";
  fs::create_directories(root / "suite" / "level1");
  fs::create_directories(root / "suite" / "level2");
  fs::copy_file(fixtures / "relu_problem.py", root / "suite" / "level1" / "1_ReLU.py");
  fs::copy_file(fixtures / "dropout_problem.py", root / "suite" / "level1" / "2_Dropout.py");
  fs::copy_file(fixtures / "counter_problem.py", root / "suite" / "level2" / "1_Counter.py");
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto first =
      testing::RunKpilot(root,
                         {"bench", (root / "suite").string(), "--eval-reference", "--no-compile-baseline", "--levels",
                          "1", "--python", python.string(), "--store", (root / "store").string(), "--json"},
                         600);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json j = Report(first);
  ASSERT_EQ(j["problems"].size(), 2u) << j.dump();
  const int64_t bench = j["bench"].get<int64_t>();
  auto second = testing::RunKpilot(root,
                                   {"bench", "--resume", std::to_string(bench), "--levels", "2", "--python",
                                    python.string(), "--store", (root / "store").string(), "--json"},
                                   600);
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  j = Report(second);
  ASSERT_EQ(j["problems"].size(), 3u) << j.dump();
  std::map<std::string, json> by_id;
  for (const auto& p : j["problems"]) by_id[p["id"].get<std::string>()] = p;
  const json& relu = by_id["level1/1_ReLU"];
  EXPECT_EQ(relu["verdict"], "passed") << relu.dump();
  EXPECT_FALSE(relu["compile_measured"].get<bool>()) << "--no-compile-baseline";
  EXPECT_TRUE(relu["reference_flaws"].empty());
  ASSERT_EQ(relu["workloads"].size(), 1u);
  const json& w = relu["workloads"][0];
  EXPECT_LE(w["ci"][0].get<double>(), w["ci"][1].get<double>());
  EXPECT_GT(w["eager_ms"].get<double>(), 0);
  EXPECT_GT(relu["seconds"]["import_torch"].get<double>(), 0);
  EXPECT_GT(relu["seconds"]["load"].get<double>(), 0);
  EXPECT_EQ(relu["seconds"]["evaluations"], 1);
  const json& dropout = by_id["level1/2_Dropout"];
  EXPECT_EQ(dropout["verdict"], "passed") << "one random seed for the reference's call and the candidate's";
  ASSERT_EQ(dropout["reference_flaws"].size(), 1u);
  EXPECT_EQ(dropout["reference_flaws"][0]["flaw"], "random");
  const json& counter = by_id["level2/1_Counter"];
  EXPECT_EQ(counter["verdict"], "incorrect");
  ASSERT_EQ(counter["reference_flaws"].size(), 1u);
  EXPECT_EQ(counter["reference_flaws"][0]["flaw"], "nondeterministic");
  EXPECT_EQ(j["total"]["flawed_references"], 2);
  ASSERT_EQ(j["levels"].size(), 2u);

  // Both ways of saying what to evaluate at once is an error naming both.
  auto both = testing::RunKpilot(root, {"bench", (root / "suite").string(), "--eval-reference", "--eval-only",
                                        (root / "suite").string(), "--store", (root / "store").string()});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--eval-reference and --eval-only"), std::string::npos) << both.err;
}

// A KernelBench layout whose problem the fake torch worker (tests/pytorch/fake_worker) answers for,
// in a folder of its own: suite()/level1/19_ReLU.py, the name its canned description gives.
class FakeWorkerBench : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(python_)) << python_ << " is missing: run scripts/setup-torch-venv.sh";
    auto d = TempDir::Create("kpilot-bench-fake-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    fs::create_directories(suite() / "level1");
    fs::copy_file(testing::SourceDir() / "tests" / "python" / "fixtures" / "relu_problem.py",
                  suite() / "level1" / "19_ReLU.py");
  }
  fs::path root() const { return dir_->path(); }
  fs::path suite() const { return root() / "suite"; }
  fs::path store() const { return root() / "store"; }
  // `kpilot bench` of the suite into store(), each problem's reference as its candidate, then `flags`.
  ProcessResult Bench(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"bench",          suite().string(), "--eval-reference", "--python",
                                     python_.string(), "--store",        store().string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return testing::RunKpilot(root(), args);
  }

  const fs::path python_ = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  testing::ScopedEnv worker_{"KPILOT_PYTHONPATH",
                             (testing::SourceDir() / "tests" / "pytorch" / "fake_worker").string()};
  std::optional<TempDir> dir_;
};

// A problem whose run crashed says why in every rendering, in the words of the worker's own
// stderr and without the sandbox's report line. The worker describes the problem (a description
// cached by an earlier run would skip that) and dies running it.
TEST_F(FakeWorkerBench, AFailedProblemSaysWhy) {
  testing::ScopedEnv device("KPILOT_TORCH_DEVICE", "cpu");
  testing::ScopedEnv crash("KPILOT_FAKE_WORKER", "crash_running");
  auto r = Bench({"--markdown", "kb.md"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("level1/19_ReLU: runtime_error: the torch worker"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Segmentation fault"), std::string::npos) << r.err;
  auto md = ReadFile(root() / "kb.md");
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("| level1/19_ReLU | runtime_error: the torch worker"), std::string::npos) << *md;
  auto again = Bench({"--json"});
  json j = Report(again);
  ASSERT_EQ(j["problems"].size(), 1u) << again.err;
  const std::string message = j["problems"][0]["message"];
  EXPECT_NE(message.find("Fatal Python error: Segmentation fault"), std::string::npos) << message;
  EXPECT_EQ(message.find("kpilot-sandbox-report"), std::string::npos) << "the sandbox's report is not the why";
  EXPECT_FALSE(j["problems"][0]["out_of_memory"].get<bool>());
}

// Both baselines cached: a second bench over the same store times each problem against eager
// (the candidate's paired baseline) and reads torch.compile's time from the cache, starting no
// torch.compile run. The fake worker logs each request (outside the sandbox, which would keep it
// from writing the log).
TEST_F(FakeWorkerBench, ASecondBenchReadsTorchCompilesTimeFromTheCache) {
  const fs::path log = root() / "requests.jsonl";
  testing::ScopedEnv device("KPILOT_TORCH_DEVICE", "cpu");
  testing::ScopedEnv sandbox("KPILOT_SANDBOX", "none");
  testing::ScopedEnv requests("KPILOT_FAKE_WORKER_LOG", log.string());
  auto compile_runs = [&] {
    int n = 0;
    auto text = ReadFile(log);
    std::istringstream lines(text.ok() ? *text : "");
    for (std::string line; std::getline(lines, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("mode", "") == "run" && e["request"]["baseline"].value("kind", "") == "compile") ++n;
    }
    return n;
  };
  for (int bench = 1; bench <= 2; ++bench) {
    auto r = Bench({"--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = Report(r);
    ASSERT_EQ(j["problems"].size(), 1u) << r.err;
    const json& p = j["problems"][0];
    EXPECT_EQ(p["verdict"], "passed") << p.dump();
    EXPECT_TRUE(p["compile_measured"].get<bool>()) << "bench " << bench << ": " << p.dump();
    EXPECT_DOUBLE_EQ(p["speedup_compile"].get<double>(), 2.0) << "the fake's baseline takes 2 ms, its candidate 1 ms";
    EXPECT_EQ(compile_runs(), 1) << "bench " << bench << ": torch.compile is timed once, by the first bench";
    EXPECT_EQ(p["compile_cached"].get<bool>(), bench == 2) << p.dump();
    EXPECT_EQ(j["total"]["compile_cached"], bench == 2 ? 1 : 0);
    ASSERT_EQ(j["slices"].size(), 1u) << "each bench is a slice of its own";
    EXPECT_GT(j["wall_s"].get<double>(), 0);
  }
}

// A finished bench resumed on a machine without a GPU prints its report: nothing is left to run.
TEST_F(FakeWorkerBench, AFinishedBenchResumedWithoutAGpuPrintsItsReport) {
  {
    testing::ScopedEnv device("KPILOT_TORCH_DEVICE", "cpu");
    auto r = Bench({"--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto again = testing::RunKpilot(root(), {"bench", "--resume", "1", "--store", store().string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json j = Report(again);
  ASSERT_EQ(j["problems"].size(), 1u) << again.err;
  EXPECT_EQ(j["problems"][0]["verdict"], "passed");
}

// The team's flashinfer-bench dataset on the CPU torch device: a Solution evaluated per definition,
// the contest score, and Trace JSONL that flashinfer-bench's own classes read (when installed).
TEST(BenchCli, FlashInferDatasetTracesAndContestScore) {
  fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup-torch-venv.sh";
  fs::path dataset = testing::SourceDir() / "examples" / "flashinfer";
  auto d = TempDir::Create("kpilot-bench-fi-");
  ASSERT_TRUE(d.ok());
  fs::path root = d->path();
  fs::create_directories(root / "cands");
  fs::copy_file(dataset / "solutions/rmsnorm/rmsnorm_h512/rmsnorm_h512_torch.json",
                root / "cands" / "rmsnorm_h512.json");
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto r = testing::RunKpilot(
      root,
      {"bench", dataset.string(), "--problems", "rmsnorm_h512", "--eval-only", (root / "cands").string(), "--python",
       python.string(), "--store", (root / "store").string(), "--out", (root / "out").string(), "--json"},
      600);
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = Report(r);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["format"], "flashinfer");
  ASSERT_EQ(j["contest"].size(), 1u) << j.dump();
  EXPECT_EQ(j["contest"][0]["definition"], "rmsnorm/rmsnorm_h512");
  int workloads = j["contest"][0]["workloads"].get<int>();
  EXPECT_GT(workloads, 0);
  EXPECT_EQ(j["contest"][0]["passed"], workloads);
  EXPECT_GT(j["contest"][0]["score"].get<double>(), 0);
  fs::path traces = root / "out" / "traces" / "rmsnorm" / "rmsnorm_h512.jsonl";
  auto text = ReadFile(traces);
  ASSERT_TRUE(text.ok()) << traces;
  int lines = 0;
  for (char c : *text) lines += c == '\n';
  EXPECT_EQ(lines, workloads);
  json first = json::parse(text->substr(0, text->find('\n')));
  EXPECT_EQ(first["definition"], "rmsnorm_h512");
  EXPECT_EQ(first["evaluation"]["status"], "PASSED");
  EXPECT_FALSE(first["solution"].get<std::string>().empty());
  auto importable = SystemProcessRunner().Run({{python.string(), "-c", "import flashinfer_bench.data"}});
  if (!importable.ok() || !importable->Succeeded()) return;  // flashinfer-bench not installed: shape checked above
  auto v = SystemProcessRunner().Run(
      {{python.string(), "-c",
        "import sys\nfrom flashinfer_bench.data import Trace\n"
        "print(sum(Trace.model_validate_json(l).is_successful() for l in open(sys.argv[1])))\n",
        traces.string()}});
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->Succeeded()) << v->err;
  EXPECT_EQ(std::stoi(v->out), workloads);
}

// kpilot optimize takes the ablation switches and stores them with the run (a resume keeps them).
TEST(BenchCli, OptimizeStoresTheAblationSwitches) {
  auto d = TempDir::Create("kpilot-bench-ablation-");
  ASSERT_TRUE(d.ok());
  std::string store = (d->path() / "store").string();
  std::string task = (testing::SourceDir() / "examples" / "host" / "sgemm").string();
  auto bad = testing::RunKpilot(d->path(), {"optimize", task, "--feedback", "counters", "--store", store});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  auto r = testing::RunKpilot(d->path(), {"optimize", task, "--budget", "1", "--feedback", "none", "--guidance",
                                          "on-request", "--memory", "off", "--store", store, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json run = Report(r);
  auto show =
      testing::RunKpilot(d->path(), {"show", std::to_string(run["run"].get<int>()), "--store", store, "--json"});
  json options = Report(show)["options"];
  EXPECT_EQ(options["feedback"], "none");
  EXPECT_EQ(options["guidance"], "on-request");
  EXPECT_EQ(options["memory"], false);
}

TEST(BenchCli, UsageErrors) {
  auto d = TempDir::Create("kpilot-bench-cli-");
  ASSERT_TRUE(d.ok());
  auto r =
      testing::RunKpilot(d->path(), {"bench", (d->path() / "nothing").string(), "--store", (d->path() / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a folder"), std::string::npos) << r.err;
  auto levels = testing::RunKpilot(d->path(), {"bench", (testing::SourceDir() / "examples" / "host").string(),
                                               "--levels", "9", "--store", (d->path() / "s").string()});
  EXPECT_EQ(levels.exit_code, 2);
  EXPECT_NE(levels.err.find("has levels all"), std::string::npos) << levels.err;
  for (const char* bad : {"many", "-1", ""}) {
    auto threads = testing::RunKpilot(d->path(), {"bench", (testing::SourceDir() / "examples" / "host").string(),
                                                  "--torch-threads", bad, "--store", (d->path() / "s").string()});
    EXPECT_EQ(threads.exit_code, 2) << bad;
    EXPECT_NE(threads.err.find("--torch-threads"), std::string::npos) << threads.err;
  }
}

// Suites of GPU problems on a machine without a GPU stop before anything runs (exit 3), saying so.
TEST(BenchCli, GpuSuitesNeedAGpu) {
  std::string why;
  if (!SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "this machine has a GPU";
  auto d = TempDir::Create("kpilot-bench-cli-");
  ASSERT_TRUE(d.ok());
  for (const char* suite : {"cuda", "kernelbench"}) {
    auto r = testing::RunKpilot(d->path(), {"bench", (testing::SourceDir() / "examples" / suite).string(), "--store",
                                            (d->path() / "s").string()});
    EXPECT_EQ(r.exit_code, 3) << suite << ": " << r.err;
    EXPECT_NE(r.err.find("needs a GPU"), std::string::npos) << r.err;
  }
}

// `kpilot bench examples/SUITE ... --executor slurm` with a config whose sbatch does not exist:
// what is refused is refused before Slurm is asked for anything.
ProcessResult BenchOnSlurm(const std::string& suite, std::vector<std::string> extra) {
  auto d = TempDir::Create("kpilot-bench-cli-");
  EXPECT_TRUE(d.ok());
  const auto config = d->path() / "slurm.toml";
  EXPECT_TRUE(WriteFileAtomic(config, "[slurm]\nsbatch = \"/no/such/sbatch\"\n").ok());
  std::vector<std::string> args = {"bench",          (testing::SourceDir() / "examples" / suite).string(),
                                   "--store",        (d->path() / "s").string(),
                                   "--executor",     "slurm",
                                   "--slurm-config", config.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::RunKpilot(d->path(), args);
}

// Through Slurm the nodes' GPU is the target: a suite that compiles CUDA candidates needs --arch,
// said before any allocation is asked for.
TEST(BenchCli, ACudaSuiteOnSlurmNeedsTheNodesArch) {
  auto r = BenchOnSlurm("cuda", {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--arch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sbatch"), std::string::npos) << "refused before asking Slurm: " << r.err;
}

// --devices chooses this machine's GPUs; through Slurm the allocations are the GPUs, so the two
// together are refused.
TEST(BenchCli, DevicesWithSlurmIsRefused) {
  auto r = BenchOnSlurm("host", {"--devices", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("workers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kpilot
