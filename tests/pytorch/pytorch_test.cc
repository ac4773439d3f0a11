// The C++ side of PyTorch-defined tasks: the describe reply → Task, the worker's run request, the
// worker process (a fake kpilot_torch.worker run by the real ProcessRunner) and LoadAnyTask.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "core/fs.h"
#include "pytorch/pytorch.h"
#include "test_paths.h"
#include "scoped_env.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFakeWorker = testing::SourceDir() / "tests" / "pytorch" / "fake_worker";

json GoodDescribe() {
  return json::parse(R"({
    "version": 1, "status": "ok", "name": "19_ReLU", "torch": "2.11.0", "cuda": true,
    "inputs":  [{"name": "x", "dtype": "f32", "shape": ["batch_size", "dim"], "role": "input"},
                {"name": "weight", "dtype": "bf16", "shape": ["weight_d0"], "role": "param"}],
    "scalars": [{"name": "k", "dtype": "i64", "value": 3}, {"name": "flag", "dtype": "bool", "value": true}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["batch_size", "dim"]}],
    "axes": {"batch_size": 16, "dim": 16384, "weight_d0": 64},
    "tolerance": {"atol": 1e-4, "rtol": 2e-4},
    "flops": 0, "bytes": 2097152})");
}

using testing::ScopedEnv;

TEST(TaskFromDescribe, BuildsTheTaskInAbiOrder) {
  auto task = TaskFromDescribe(GoodDescribe(), "/problems/level1/19_ReLU.py");
  ASSERT_TRUE(task.ok()) << task.status().message();
  EXPECT_EQ(task->name, "19_ReLU");
  EXPECT_EQ(task->backend, Backend::kCuda);
  EXPECT_EQ(task->format, TaskFormat::kKernelBench);
  EXPECT_EQ(task->reference.kind, ReferenceKind::kPython);
  EXPECT_EQ(task->reference.path, "/problems/level1/19_ReLU.py");
  EXPECT_EQ(task->reference.entry, "Model");
  EXPECT_EQ(task->dir, "/problems/level1");
  ASSERT_EQ(task->inputs.size(), 2u);
  EXPECT_EQ(task->inputs[0].name, "x");
  EXPECT_EQ(task->inputs[0].role, "input");
  EXPECT_EQ(task->inputs[1].name, "weight");
  EXPECT_EQ(task->inputs[1].role, "param");
  EXPECT_EQ(task->inputs[1].dtype, DType::kBF16);
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(task->outputs[0].shape, (std::vector<std::string>{"batch_size", "dim"}));
  ASSERT_EQ(task->scalars.size(), 2u);
  EXPECT_EQ(task->scalars[0].dtype, DType::kI64);
  EXPECT_EQ(task->scalars[0].value, 3);
  EXPECT_EQ(task->scalars[1].value, 1);
  EXPECT_DOUBLE_EQ(task->tolerance.atol, 1e-4);
  EXPECT_DOUBLE_EQ(task->tolerance.rtol, 2e-4);
  ASSERT_EQ(task->workloads.size(), 1u);
  const Workload& w = task->workloads[0];
  EXPECT_EQ(w.name, "default");
  EXPECT_EQ(w.axes.at("dim"), 16384);
  EXPECT_EQ(w.min_bytes, 2097152);
  EXPECT_EQ(task->ShapeOf(task->inputs[1], w), (std::vector<int64_t>{64}));
  EXPECT_EQ(task->bytes_formula, "2097152.0");
  EXPECT_TRUE(task->flops_formula.empty());
}

TEST(TaskFromDescribe, AnErrorReplyIsTheWorkersMessage) {
  json reply = {{"version", 1}, {"status", "error"}, {"message", "p.py: no get_inputs() — define it"}};
  auto task = TaskFromDescribe(reply, "/x/p.py");
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(task.status().message(), "p.py: no get_inputs() — define it");
}

TEST(TaskFromDescribe, ReportsEveryMalformedFieldWithFileAndField) {
  json reply = GoodDescribe();
  reply["inputs"][0]["dtype"] = "complex64";
  reply["inputs"][1]["shape"] = {"nowhere"};
  reply["inputs"][1]["role"] = "buffer";
  reply["outputs"][0]["name"] = "2out";
  reply["tolerance"]["rtol"] = -1;
  auto task = TaskFromDescribe(reply, "/x/19_ReLU.py");
  ASSERT_FALSE(task.ok());
  const std::string& m = task.status().message();
  EXPECT_NE(m.find("19_ReLU.py: describe: inputs[0].dtype: unknown dtype \"complex64\""), std::string::npos) << m;
  EXPECT_NE(m.find("inputs[1].shape: axis \"nowhere\" is not bound in axes"), std::string::npos) << m;
  EXPECT_NE(m.find("inputs[1].role"), std::string::npos) << m;
  EXPECT_NE(m.find("outputs[0].name: \"2out\" is not an identifier"), std::string::npos) << m;
  EXPECT_NE(m.find("tolerance.rtol"), std::string::npos) << m;
}

TEST(TaskFromDescribe, RejectsNoOutputsDuplicatesAndWrongVersion) {
  json reply = GoodDescribe();
  reply["outputs"] = json::array();
  EXPECT_NE(TaskFromDescribe(reply, "p.py").status().message().find("outputs: no outputs"), std::string::npos);
  reply = GoodDescribe();
  reply["scalars"][0]["name"] = "x";
  EXPECT_NE(TaskFromDescribe(reply, "p.py").status().message().find("\"x\" is named twice"), std::string::npos);
  reply = GoodDescribe();
  reply["version"] = 2;
  EXPECT_NE(TaskFromDescribe(reply, "p.py").status().message().find("version: expected 1"), std::string::npos);
  EXPECT_FALSE(TaskFromDescribe(json::array(), "p.py").ok());
}

Task KernelBenchTask() {
  auto task = TaskFromDescribe(GoodDescribe(), "/problems/19_ReLU.py");
  EXPECT_TRUE(task.ok());
  return task.ok() ? *task : Task{};
}

TEST(BuildWorkerRequest, KernelBenchWithKpilotsProcedure) {
  ScopedEnv no_device("KPILOT_TORCH_DEVICE", "");
  ScopedEnv locks("KPILOT_LOCK_DIR", "/run/kpilot-locks");
  EvalOptions opt;
  opt.device = 2;
  opt.seeds = {7, 8};
  opt.timeout_s = 45;
  opt.timing.max_seconds = 1.5;
  auto req = BuildWorkerRequest(KernelBenchTask(), {"native", "", "/tmp/x.so"}, {"reference", "", ""}, opt);
  ASSERT_TRUE(req.ok()) << req.status().message();
  const json& r = *req;
  EXPECT_EQ(r["version"], 1);
  EXPECT_EQ(r["mode"], "run");
  EXPECT_EQ(r["format"], "kernelbench");
  EXPECT_EQ(r["problem"], "/problems/19_ReLU.py");
  EXPECT_EQ(r["workloads"], json::parse(R"([{"name": "default"}])"));
  EXPECT_EQ(r["candidate"], json::parse(R"({"kind": "native", "object": "/tmp/x.so"})"));
  EXPECT_EQ(r["baseline"], json::parse(R"({"kind": "reference"})"));
  EXPECT_EQ(r["seeds"], json::parse("[7, 8]"));
  EXPECT_EQ(r["check_trials"], 2);
  EXPECT_EQ(r["timing"]["mode"], "default");
  EXPECT_EQ(r["timing"]["max_seconds"], 1.5);
  EXPECT_TRUE(r["tolerance"].is_null());
  EXPECT_FALSE(r.contains("exploit_checks"));  // the worker runs every check under every procedure
  EXPECT_EQ(r["device"], "cuda:2");
  EXPECT_EQ(r["lock_dir"], "/run/kpilot-locks");  // the runner's lock, so the two exclude each other
  EXPECT_EQ(r["timeout_s"], 45);
  EXPECT_EQ(r["time"], true);
  EXPECT_EQ(r["libraries"], true);
  EXPECT_EQ(r["host_threads"], 0);  // torch's default
  opt.host_threads = 4;             // kpilot bench, four problems on a 16-core host
  EXPECT_EQ(
      (*BuildWorkerRequest(KernelBenchTask(), {"native", "", "/tmp/x.so"}, {"reference", "", ""}, opt))["host_threads"],
      4);
  Task forbidding = KernelBenchTask();
  forbidding.libraries = false;  // kpilot eval --no-libraries
  auto strict = BuildWorkerRequest(forbidding, {"native", "", "/tmp/x.so"}, {"reference", "", ""}, opt);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ((*strict)["libraries"], false);
}

TEST(BuildWorkerRequest, KernelBenchTimingKeepsEveryCheck) {
  EvalOptions opt;
  opt.timing.mode = TimingMode::kKernelBench;
  opt.torch_device = "cpu";
  opt.time = false;
  auto req = BuildWorkerRequest(KernelBenchTask(), {"model_new", "/c/new.py", ""}, {"compile", "", ""}, opt);
  ASSERT_TRUE(req.ok());
  EXPECT_FALSE(req->contains("exploit_checks"));  // an official procedure keeps every check
  EXPECT_EQ((*req)["check_trials"], 5);
  EXPECT_EQ((*req)["timing"]["mode"], "kernelbench");
  EXPECT_EQ((*req)["device"], "cpu");
  EXPECT_EQ((*req)["time"], false);
  EXPECT_EQ((*req)["candidate"], json::parse(R"({"kind": "model_new", "path": "/c/new.py"})"));
  EXPECT_EQ((*req)["baseline"]["kind"], "compile");
  // A baseline measurement of a candidate that has just passed asks for one trial.
  opt.check_trials = 1;
  req = BuildWorkerRequest(KernelBenchTask(), {"model_new", "/c/new.py", ""}, {"compile", "", ""}, opt);
  ASSERT_TRUE(req.ok());
  EXPECT_EQ((*req)["check_trials"], 1);
}

TEST(BuildWorkerRequest, TheHiddenDeviceVariableAppliesWhenTheOptionsNameNone) {
  ScopedEnv cpu("KPILOT_TORCH_DEVICE", "cpu");
  auto req = BuildWorkerRequest(KernelBenchTask(), {"reference", "", ""}, {"reference", "", ""}, EvalOptions{});
  ASSERT_TRUE(req.ok());
  EXPECT_EQ((*req)["device"], "cpu");
}

TEST(BuildWorkerRequest, FlashInferSendsTheSelectedWorkloadRecords) {
  Task task = KernelBenchTask();
  task.format = TaskFormat::kFlashInfer;
  task.reference.entry = "run";
  task.workloads.clear();
  for (const char* uuid : {"3f2a0011-aaaa", "77bb0022-bbbb"}) {
    Workload w;
    w.name = std::string(uuid).substr(0, 8);
    w.record = json({{"uuid", uuid}, {"axes", {{"n", 4}}}, {"inputs", {{"x", {{"type", "random"}}}}}}).dump();
    task.workloads.push_back(w);
  }
  EvalOptions opt;
  opt.workloads = {"77bb0022"};
  opt.timing.mode = TimingMode::kFlashInfer;
  auto req = BuildWorkerRequest(task, {"solution", "/s/sol.json", ""}, {"reference", "", ""}, opt);
  ASSERT_TRUE(req.ok()) << req.status().message();
  ASSERT_EQ((*req)["workloads"].size(), 1u);
  EXPECT_EQ((*req)["workloads"][0]["name"], "77bb0022");
  EXPECT_EQ((*req)["workloads"][0]["uuid"], "77bb0022-bbbb");
  EXPECT_EQ((*req)["workloads"][0]["axes"]["n"], 4);
  EXPECT_EQ((*req)["format"], "flashinfer");
  EXPECT_FALSE(req->contains("exploit_checks"));

  opt.workloads = {"nope"};
  auto bad = BuildWorkerRequest(task, {"solution", "/s/sol.json", ""}, {"reference", "", ""}, opt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("--workload nope: task 19_ReLU has no such workload (it has: 3f2a0011, 77bb0022)"),
      std::string::npos)
      << bad.status().message();
}

TEST(BuildWorkerRequest, RefusesANativeTask) {
  Task task = KernelBenchTask();
  task.reference.kind = ReferenceKind::kNative;
  EXPECT_FALSE(BuildWorkerRequest(task, {"reference", "", ""}, {"reference", "", ""}, EvalOptions{}).ok());
}

// Answers the bytecode cache's warm-up as an interpreter would: prints torch's version.py path
// (a file of the test's), or exits 3 (no torch) or 1 (a failure).
class WarmUpRunner : public ProcessRunner {
 public:
  explicit WarmUpRunner(fs::path stamp, int exit_code = 0) : stamp_(std::move(stamp)), exit_code_(exit_code) {}
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    specs.push_back(spec);
    ProcessResult r;
    r.exit_code = exit_code_;
    if (exit_code_ == 0) r.out = "some warning\n" + stamp_.string() + "\n";
    return r;
  }
  std::vector<ProcessSpec> specs;

 private:
  fs::path stamp_;
  int exit_code_;
};

bool HasEnv(const ProcessSpec& spec, const std::string& entry) {
  return spec.env && std::find(spec.env->begin(), spec.env->end(), entry) != spec.env->end();
}

TEST(BytecodeCache, FilledOnceByATrustedWarmUpAndFilledAgainWhenTorchChanges) {
  auto d = TempDir::Create("kpilot-pycache-");
  ASSERT_TRUE(d.ok());
  const fs::path stamp = d->path() / "torch" / "version.py";
  ASSERT_TRUE(WriteFileAtomic(stamp, "__version__ = '2.11.0'\n").ok());
  ScopedEnv cache("KPILOT_CACHE_DIR", (d->path() / "cache").string());
  PythonWorker w;
  w.python = "/opt/venv/bin/python";
  w.pythonpath = "/opt/kpilot/python";
  w.bytecode_cache = BytecodeCacheFor(w.python);
  EXPECT_EQ(w.bytecode_cache.parent_path(), d->path() / "cache" / "pycache");
  EXPECT_NE(BytecodeCacheFor("/other/python"), w.bytecode_cache) << "one cache per interpreter";
  EXPECT_FALSE(BytecodeCacheReady(w));

  WarmUpRunner runner(stamp);
  ASSERT_TRUE(PrepareBytecodeCache(runner, w).ok());
  ASSERT_EQ(runner.specs.size(), 1u);
  const ProcessSpec& warm = runner.specs[0];
  EXPECT_EQ(warm.argv[0], "/opt/venv/bin/python");
  EXPECT_EQ(warm.argv[1], "-c");
  EXPECT_NE(warm.argv[2].find("torch._dynamo"), std::string::npos);
  EXPECT_TRUE(HasEnv(warm, "PYTHONPYCACHEPREFIX=" + w.bytecode_cache.string()));
  EXPECT_TRUE(HasEnv(warm, "PYTHONPATH=/opt/kpilot/python"));
  EXPECT_TRUE(BytecodeCacheReady(w));
  ASSERT_TRUE(PrepareBytecodeCache(runner, w).ok());
  EXPECT_EQ(runner.specs.size(), 1u) << "filled once";

  // Another torch installed since (its version.py rewritten): the cache no longer matches.
  fs::last_write_time(stamp, fs::last_write_time(stamp) + std::chrono::seconds(5));
  EXPECT_FALSE(BytecodeCacheReady(w));
}

TEST(BytecodeCache, AnInterpreterWithoutTorchOrAFailedWarmUpLeavesNoCache) {
  auto d = TempDir::Create("kpilot-pycache-");
  ASSERT_TRUE(d.ok());
  ScopedEnv cache("KPILOT_CACHE_DIR", d->path().string());
  PythonWorker w;
  w.python = "/usr/bin/python-without-torch";
  w.bytecode_cache = BytecodeCacheFor(w.python);
  WarmUpRunner no_torch("", 3);
  EXPECT_TRUE(PrepareBytecodeCache(no_torch, w).ok()) << "the worker itself reports a missing torch";
  EXPECT_FALSE(BytecodeCacheReady(w));

  w.python = "/usr/bin/python-that-crashes";
  w.bytecode_cache = BytecodeCacheFor(w.python);
  WarmUpRunner failing("", 1);
  Status s = PrepareBytecodeCache(failing, w);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("filling the bytecode cache"), std::string::npos) << s.message();
  EXPECT_FALSE(BytecodeCacheReady(w));
  EXPECT_TRUE(PrepareBytecodeCache(failing, w).ok()) << "not tried again by this process";
  EXPECT_EQ(failing.specs.size(), 1u);
}

TEST(FindPythonWorker, FindsTheInterpreterAndThePackage) {
  auto w = FindPythonWorker("", kFakeWorker);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(w->python.is_absolute());
  EXPECT_EQ(w->pythonpath, kFakeWorker.lexically_normal());
}

TEST(FindPythonWorker, SaysWhatToDoWhenSomethingIsMissing) {
  auto no_python = FindPythonWorker("/nonexistent/python9", kFakeWorker);
  ASSERT_FALSE(no_python.ok());
  EXPECT_EQ(no_python.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_python.status().message().find("--python /nonexistent/python9: no such executable"), std::string::npos);
  auto no_package = FindPythonWorker("", "/nonexistent/share/kpilot/python");
  ASSERT_FALSE(no_package.ok());
  EXPECT_NE(no_package.status().message().find("KPILOT_PYTHONPATH"), std::string::npos);
}

class FakeWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = FindPythonWorker("", kFakeWorker);
    ASSERT_TRUE(w.ok()) << w.status().message();
    worker_ = *w;
    auto dir = TempDir::Create("kpilot-pytorch-test-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
    log_ = dir_->path() / "requests.jsonl";
  }
  // The requests the fake worker saw, in order.
  std::vector<json> Logged() {
    std::vector<json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  PythonWorker worker_;
  std::unique_ptr<TempDir> dir_;
  fs::path log_;
};

TEST_F(FakeWorker, RunWorkerReturnsTheLastJsonLineAndSetsUpTheProcess) {
  ScopedEnv behaviour("KPILOT_FAKE_WORKER", "junk_then_ok");
  ScopedEnv log("KPILOT_FAKE_WORKER_LOG", log_.string());
  ScopedEnv pythonpath("PYTHONPATH", "/somewhere/else");
  ScopedEnv secret("MY_API_KEY", "do-not-pass");
  json request = {{"version", 1}, {"mode", "describe"}, {"format", "kernelbench"}, {"problem", "/p.py"}};
  auto reply = RunWorker(SystemProcessRunner(), worker_, "describe", request, 30);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ((*reply)["name"], "19_ReLU");
  auto seen = Logged();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0]["mode"], "describe");
  EXPECT_EQ(seen[0]["request"], request);
  EXPECT_EQ(seen[0]["pythonpath"], kFakeWorker.lexically_normal().string());
  EXPECT_FALSE(fs::exists(seen[0]["cwd"].get<std::string>())) << "the fresh folder is removed afterwards";
}

TEST_F(FakeWorker, NoTorchIsUnavailableWithTheFix) {
  ScopedEnv behaviour("KPILOT_FAKE_WORKER", "no_torch");
  auto reply = RunWorker(SystemProcessRunner(), worker_, "run", json::object(), 30);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("has no torch — pass --python PATH to an interpreter with torch"),
            std::string::npos)
      << reply.status().message();
}

TEST_F(FakeWorker, AWorkerThatDiesIsTheCandidatesFaultOnlyWhenRunning) {
  ScopedEnv behaviour("KPILOT_FAKE_WORKER", "crash");
  auto run = RunWorker(SystemProcessRunner(), worker_, "run", {{"workloads", json::array()}}, 30);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ((*run)["status"], "runtime_error");
  EXPECT_NE((*run)["message"].get<std::string>().find("exit code 11"), std::string::npos) << (*run)["message"];
  EXPECT_NE((*run)["message"].get<std::string>().find("Segmentation fault"), std::string::npos);
  auto describe = RunWorker(SystemProcessRunner(), worker_, "describe", json::object(), 30);
  ASSERT_FALSE(describe.ok());
  EXPECT_EQ(describe.status().code(), StatusCode::kInvalidInput);
}

TEST_F(FakeWorker, LoadKernelBenchProblemDescribesThroughTheWorker) {
  ScopedEnv log("KPILOT_FAKE_WORKER_LOG", log_.string());
  fs::path problem = dir_->path() / "19_ReLU.py";
  ASSERT_TRUE(WriteFileAtomic(problem, "# a problem\n").ok());
  LoadTaskOptions opt;
  opt.pythonpath = kFakeWorker;
  auto task = LoadAnyTask(SystemProcessRunner(), problem, opt);
  ASSERT_TRUE(task.ok()) << task.status().message();
  EXPECT_EQ(task->format, TaskFormat::kKernelBench);
  EXPECT_EQ(task->reference.path, problem);
  auto seen = Logged();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0]["request"]["problem"], problem.string());
  EXPECT_EQ(seen[0]["request"]["format"], "kernelbench");
}

TEST_F(FakeWorker, ADescribedProblemIsNotDescribedAgainUntilItChanges) {
  ScopedEnv log("KPILOT_FAKE_WORKER_LOG", log_.string());
  ScopedEnv cache("KPILOT_CACHE_DIR", (dir_->path() / "cache").string());
  const fs::path stamp = dir_->path() / "torch-version.py";
  ASSERT_TRUE(WriteFileAtomic(stamp, "__version__ = '2.0.0+fake'\n").ok());
  PythonWorker w = worker_;
  w.bytecode_cache = BytecodeCacheFor(w.python);
  WarmUpRunner warm(stamp);
  ASSERT_TRUE(PrepareBytecodeCache(warm, w).ok());
  ASSERT_TRUE(BytecodeCacheReady(w));
  fs::path problem = dir_->path() / "19_ReLU.py";
  ASSERT_TRUE(WriteFileAtomic(problem, "# a problem\n").ok());
  for (int i = 0; i < 2; ++i) {
    auto task = LoadKernelBenchProblem(SystemProcessRunner(), w, problem);
    ASSERT_TRUE(task.ok()) << task.status().message();
    EXPECT_EQ(task->name, "19_ReLU");
  }
  EXPECT_EQ(Logged().size(), 1u) << "the second load reads the kept reply";
  ASSERT_TRUE(WriteFileAtomic(problem, "# a problem, edited\n").ok());
  ASSERT_TRUE(LoadKernelBenchProblem(SystemProcessRunner(), w, problem).ok());
  EXPECT_EQ(Logged().size(), 2u) << "an edited problem is described again";
  PythonWorker no_cache = worker_;  // no bytecode cache: nothing names the torch, nothing is kept
  no_cache.bytecode_cache.clear();
  ASSERT_TRUE(LoadKernelBenchProblem(SystemProcessRunner(), no_cache, problem).ok());
  EXPECT_EQ(Logged().size(), 3u);
}

TEST_F(FakeWorker, ADescribeErrorNamesTheProblem) {
  ScopedEnv behaviour("KPILOT_FAKE_WORKER", "error");
  fs::path problem = dir_->path() / "bad.py";
  ASSERT_TRUE(WriteFileAtomic(problem, "\n").ok());
  auto task = LoadKernelBenchProblem(SystemProcessRunner(), worker_, problem);
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("bad.py: get_inputs() is missing — define it"), std::string::npos)
      << task.status().message();
}

TEST(LoadAnyTask, DispatchesOnWhatThePathIs) {
  LoadTaskOptions opt;
  opt.pythonpath = "/nonexistent";
  auto folder = LoadAnyTask(SystemProcessRunner(), testing::SourceDir() / "examples" / "host" / "saxpy", opt);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->format, TaskFormat::kNative);
  auto toml =
      LoadAnyTask(SystemProcessRunner(), testing::SourceDir() / "examples" / "host" / "saxpy" / "task.toml", opt);
  EXPECT_TRUE(toml.ok());

  auto dir = TempDir::Create("kpilot-pytorch-test-");
  ASSERT_TRUE(dir.ok());
  fs::path py = dir->path() / "p.py", js = dir->path() / "d.json", txt = dir->path() / "notes.txt";
  for (const auto& p : {py, js, txt}) ASSERT_TRUE(WriteFileAtomic(p, "{}").ok());
  // A .py goes to the worker: here the package is missing, and the error says so.
  auto kb = LoadAnyTask(SystemProcessRunner(), py, opt);
  ASSERT_FALSE(kb.ok());
  EXPECT_NE(kb.status().message().find("kpilot_torch/worker.py"), std::string::npos) << kb.status().message();
  // A .json is a flashinfer definition: loaded by that reader, which finds this one empty.
  auto fi = LoadAnyTask(SystemProcessRunner(), js, opt);
  ASSERT_FALSE(fi.ok());
  EXPECT_EQ(fi.status().message().find("not a task"), std::string::npos) << fi.status().message();
  auto other = LoadAnyTask(SystemProcessRunner(), txt, opt);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a task — give a task folder"), std::string::npos);
  EXPECT_EQ(LoadAnyTask(SystemProcessRunner(), dir->path() / "missing.py", opt).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kpilot
