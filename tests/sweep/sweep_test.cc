// The sweep library without the CLI and without compilers or a GPU: a fake toolchain whose
// objects say what they do, and a fake kpilot-runner that answers a batch from them — or dies,
// as a crashing object makes the real one.
#include "sweep/sweep.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "core/fs.h"
#include "sweep/space_file.h"
#include "task/loader.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTaskDir = fs::path(KPILOT_FIXTURES_DIR) / "tasks" / "sweep_host";
const fs::path kCandidate = kTaskDir / "candidates" / "scale.cpp";

// sweep_host's candidate as objects: PAD is never read (two configurations, one object); BUG = 1
// is wrong, BUG = 2 crashes; STEP = 2 with BUG = 1 does not compile here.
class FakeToolchain : public Toolchain {
 public:
  explicit FakeToolchain(fs::path dir) : dir_(std::move(dir)) {}
  Result<CompileOutput> Compile(const fs::path& source, const ParamValues& params, const CompileOptions&) override {
    ++compiles_;
    CompileOutput out;
    if (params.empty()) {  // the task's reference
      out.ok = true;
      out.object = dir_ / "reference.so";
      KPILOT_RETURN_IF_ERROR(WriteFileAtomic(out.object, "reference " + source.filename().string()));
      return out;
    }
    const std::string step = params.at("STEP"), bug = params.at("BUG");
    if (step == "2" && bug == "1") {
      out.first_error = "scale.cpp:20: error: fake";
      return out;
    }
    out.ok = true;
    out.object = dir_ / ("step" + step + "-bug" + bug) / "object.so";
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(out.object, bug == "2" ? "crash" : "bug" + bug + " step" + step));
    return out;
  }
  std::atomic<int> compiles_{0};  // the sweep compiles on several threads

 private:
  fs::path dir_;
};

// kpilot-runner --request FILE: one sweep entry per object, from what the object says; a batch
// holding a crashing object dies without a result. --version (nvcc, g++) is not found.
class FakeRunner : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    ProcessResult r;
    if (spec.argv.size() != 3 || spec.argv[1] != "--request") {
      r.exit_code = 1;
      return r;
    }
    auto request = ReadFile(spec.argv[2]);
    if (!request.ok()) return request.status();
    std::vector<std::string> objects = json::parse(*request)["sweep_objects"];
    batches_.push_back(objects.size());
    RunResult result;
    result.status = "passed";
    result.details["sweep"] = json::array();
    for (const auto& o : objects) {
      auto what = ReadFile(o);
      if (!what.ok()) return what.status();
      if (*what == "crash") {
        r.term_signal = 11;
        return r;
      }
      RunResult entry;
      entry.status = what->rfind("bug0", 0) == 0 ? "passed" : "incorrect";
      entry.message = entry.status == "passed" ? "matched the reference" : "differs from the reference";
      if (entry.status == "passed") {
        TimingRecord t;
        t.workload = "4K";
        double ms = what->find("step2") != std::string::npos ? 0.5 : 1.0;  // STEP = 2 is twice as fast
        t.candidate_ms = {ms, ms, ms};
        t.baseline_ms = {2.0, 2.0, 2.0};
        entry.timings.push_back(t);
      }
      result.details["sweep"].push_back(ToJson(entry));
    }
    r.exit_code = 0;
    r.out = ToJson(result).dump();
    return r;
  }
  std::vector<size_t> batches_;
};

// What the sweep told, in order.
class Recorder : public SweepObserver {
 public:
  void Opened(const fs::path&, size_t configs, size_t resumed) override {
    events.push_back("opened " + std::to_string(configs) + " resumed " + std::to_string(resumed));
  }
  void CompileStarted(size_t configs, int threads) override {
    events.push_back("compile " + std::to_string(configs) + " on " + std::to_string(threads));
  }
  void BatchEvaluated(size_t objects, double, const SweepProgress& p) override {
    events.push_back("batch " + std::to_string(objects));
    last = p;
  }
  std::vector<std::string> events;
  SweepProgress last;
};

class SweepLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-sweep-lib-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    auto task = LoadTask(kTaskDir);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    task_ = std::move(task).value();
    toolchain_ = std::make_unique<FakeToolchain>(dir_->path() / "objects");
    options_.candidate = kCandidate;
    options_.out = dir_->path() / "space.json";
    options_.jobs = 2;
  }

  Result<SweepSummary> RunSweep(Recorder* recorder) {
    auto sweep = Sweep::Plan(task_, options_, recorder);
    if (!sweep.ok()) return sweep.status();
    KPILOT_RETURN_IF_ERROR((*sweep)->Open(runner_));
    SweepEnv env;
    env.toolchain = toolchain_.get();
    env.processes = &runner_;
    env.runner = "kpilot-runner";
    return (*sweep)->Run(env);
  }

  json Entries() {
    auto text = ReadFile(options_.out);
    EXPECT_TRUE(text.ok());
    json by_params = json::object();
    for (const auto& e : json::parse(text.ok() ? *text : "{}").value("configs", json::array()))
      by_params[e["params"]["STEP"].get<std::string>() + e["params"]["BUG"].get<std::string>() +
                e["params"]["PAD"].get<std::string>()] = e;
    return by_params;
  }

  std::unique_ptr<TempDir> dir_;
  Task task_;
  std::unique_ptr<FakeToolchain> toolchain_;
  FakeRunner runner_;
  SweepOptions options_;
};

TEST_F(SweepLibrary, PlansTheValidConfigurationsAndRefusesBadInput) {
  auto sweep = Sweep::Plan(task_, options_);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ((*sweep)->size(), 10u);
  EXPECT_EQ((*sweep)->combinations(), 12u);
  EXPECT_EQ((*sweep)->workload(), "4K");

  SweepOptions workload = options_;
  workload.workload = "16K";
  auto bad = Sweep::Plan(task_, workload);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--workload 16K"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("4K, 8K"), std::string::npos) << bad.status().message();

  SweepOptions cu = options_;
  cu.candidate = kTaskDir / "reference.cpp";
  cu.candidate.replace_extension(".cu");
  EXPECT_EQ(Sweep::Plan(task_, cu).status().code(), StatusCode::kNotFound);
}

TEST_F(SweepLibrary, EvaluatesEachObjectOnceRetriesACrashedBatchAloneAndResumes) {
  Recorder first;
  auto summary = RunSweep(&first);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->complete);
  EXPECT_FALSE(summary->stopped);
  EXPECT_EQ(summary->configs, 10u);
  EXPECT_EQ(summary->by_status,
            (std::map<std::string, int>{{"passed", 4}, {"incorrect", 2}, {"compile_error", 2}, {"runtime_error", 2}}));
  // Four objects in one batch; the crash kills it, so each runs again in a process of its own.
  EXPECT_EQ(runner_.batches_, (std::vector<size_t>{4, 1, 1, 1, 1}));
  EXPECT_EQ(toolchain_->compiles_, 11);  // ten configurations and the reference
  ASSERT_EQ(summary->best.size(), 4u);
  EXPECT_DOUBLE_EQ(summary->best[0].speedup, 4.0);
  EXPECT_EQ(summary->best[0].params.at("STEP"), "2");
  EXPECT_DOUBLE_EQ(summary->best[3].speedup, 2.0);
  ASSERT_FALSE(first.events.empty());
  EXPECT_EQ(first.events.front(), "opened 10 resumed 0");
  EXPECT_EQ(first.events[1], "compile 10 on 2");
  EXPECT_EQ(first.last.done, 10u);
  ASSERT_TRUE(first.last.best.has_value());
  EXPECT_DOUBLE_EQ(first.last.best->speedup, 4.0);

  json e = Entries();
  ASSERT_EQ(e.size(), 10u);
  EXPECT_EQ(e["100"]["status"], "passed");
  EXPECT_EQ(e["100"]["candidate_ms"], json({1.0, 1.0, 1.0}));
  EXPECT_EQ(e["100"]["object_sha"], e["101"]["object_sha"]);  // PAD: one object, copied
  EXPECT_EQ(e["101"]["candidate_ms"], e["100"]["candidate_ms"]);
  EXPECT_NE(e["100"]["object_sha"], e["200"]["object_sha"]);
  EXPECT_EQ(e["110"]["status"], "incorrect");
  EXPECT_EQ(e["210"]["status"], "compile_error");
  EXPECT_EQ(e["210"]["message"], "scale.cpp:20: error: fake");
  EXPECT_FALSE(e["210"].contains("object_sha"));
  EXPECT_EQ(e["120"]["status"], "runtime_error");
  EXPECT_NE(e["120"]["message"].get<std::string>().find("signal 11"), std::string::npos) << e["120"].dump();
  EXPECT_FALSE(fs::exists(SpaceJournalPath(options_.out))) << "a finished sweep folds its journal in";

  // The space file reads back as a replay reads it.
  auto space = LoadSpace(options_.out);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_EQ(space->task, "sweep_host");
  EXPECT_EQ(space->configs.size(), 10u);

  // Again: every configuration is final in the file, so nothing compiles or runs.
  Recorder second;
  auto again = RunSweep(&second);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(second.events, (std::vector<std::string>{"opened 10 resumed 10"}));
  EXPECT_EQ(runner_.batches_.size(), 5u);
  EXPECT_EQ(toolchain_->compiles_, 12);  // the reference only
  EXPECT_EQ(Entries(), e);
}

TEST_F(SweepLibrary, ResumesAnInterruptedFileAndRefusesAnotherSweeps) {
  options_.workload = "8K";
  ASSERT_TRUE(RunSweep(nullptr).ok());
  json done = Entries();
  // As a killed sweep leaves it: two entries not run in the file, one of them in the journal.
  auto text = ReadFile(options_.out);
  ASSERT_TRUE(text.ok());
  json cut = json::parse(*text);
  json header = cut;
  header.erase("configs");
  std::vector<json> entries;
  for (const auto& c : cut["configs"]) {
    const json& p = c["params"];
    bool lose = p["BUG"] == "0" && p["PAD"] == "0";  // 100 and 200
    entries.push_back(lose ? NotRunEntry(c["params"].get<ParamValues>()) : c);
  }
  ASSERT_TRUE(WriteSpaceFile(options_.out, header, entries).ok());
  ASSERT_TRUE(AppendSpaceJournal(options_.out, {done["100"]}).ok());
  runner_.batches_.clear();

  Recorder recorder;
  auto resumed = RunSweep(&recorder);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ASSERT_FALSE(recorder.events.empty());
  EXPECT_EQ(recorder.events.front(), "opened 10 resumed 9");
  // 200's object is 201's, whose result the file holds: copied, not run again (only its compile
  // time is new).
  EXPECT_TRUE(runner_.batches_.empty());
  EXPECT_EQ(toolchain_->compiles_, 11 + 2);  // the first sweep's, then the reference and 200
  json after = Entries();
  EXPECT_EQ(after["100"], done["100"]) << "the journaled entry, samples and all";
  after["200"].erase("compile_s"), done["200"].erase("compile_s");
  EXPECT_EQ(after, done);

  // A file of another workload is not mixed into this one.
  options_.workload = "4K";
  auto other = RunSweep(nullptr);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(other.status().message().find("holds a sweep of workload \"8K\", not \"4K\""), std::string::npos)
      << other.status().message();
}

TEST_F(SweepLibrary, CompileOnlyCompilesEveryConfigurationAndRunsNothing) {
  options_.compile_only = true;
  auto summary = RunSweep(nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->complete);
  EXPECT_EQ(summary->by_status, (std::map<std::string, int>{{"compiled", 8}, {"compile_error", 2}}));
  EXPECT_TRUE(runner_.batches_.empty());
  EXPECT_EQ(toolchain_->compiles_, 10);  // no reference either
  json e = Entries();
  EXPECT_EQ(e["100"]["status"], "not_run");
  EXPECT_TRUE(e["100"].contains("object_sha"));
}

}  // namespace
}  // namespace kpilot
