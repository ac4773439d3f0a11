// The kpilot binary as a user runs it: exit codes, messages, JSON, and what lands in the store.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "run_kpilot.h"
#include "test_paths.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "store/store.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = testing::SourceDir();

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-cli-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  ProcessResult Kpilot(std::vector<std::string> args) { return testing::RunKpilot(dir_->path(), args); }
  std::string Example(const std::string& rel) { return (kSource / "examples" / rel).string(); }
  std::string Store() { return (dir_->path() / "store").string(); }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(Kpilot({}).exit_code, 2);
  EXPECT_EQ(Kpilot({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(Kpilot({"eval"}).exit_code, 2);
  EXPECT_EQ(Kpilot({"--help"}).exit_code, 0);
}

// Each evaluation checks inputs from seeds drawn for it and says which; --seed reproduces them.
TEST_F(Cli, EvalDrawsItsSeedsAndSeedReproducesThem) {
  const std::vector<std::string> base = {"eval",      Example("host/saxpy"), Example("host/saxpy/reference.cpp"),
                                         "--no-time", "--no-store",          "--json"};
  auto seeds_of = [&](std::vector<std::string> args) {
    ProcessResult r = Kpilot(args);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.err;
    return j.is_discarded() ? std::vector<uint64_t>{} : j.at("seeds").get<std::vector<uint64_t>>();
  };
  const auto first = seeds_of(base);
  const auto second = seeds_of(base);
  EXPECT_EQ(first.size(), 3u);
  EXPECT_NE(first, second);
  auto given = base;
  for (const char* a : {"--seed", "7", "--seed", "9"}) given.push_back(a);
  EXPECT_EQ(seeds_of(given), (std::vector<uint64_t>{7, 9}));
}

TEST_F(Cli, ReadingCommandsNeedAStoreAndMakeNone) {
  for (std::vector<std::string> args : {std::vector<std::string>{"runs"}, {"show", "1"}, {"export", "1", "out"}}) {
    args.insert(args.end(), {"--store", Store()});
    ProcessResult r = Kpilot(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("no kpilot store at " + Store()), std::string::npos) << r.err;
  }
  ProcessResult r = Kpilot({"show", "1"});  // the default store, .kpilot in this folder
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("pass --store DIR"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Store()));
  EXPECT_FALSE(fs::exists(dir_->path() / ".kpilot"));
}

TEST_F(Cli, DoctorReportsTheMachine) {
  ProcessResult text = Kpilot({"doctor"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("nvcc"), std::string::npos);
  EXPECT_NE(text.out.find("GPUs:"), std::string::npos);
  ProcessResult json = Kpilot({"doctor", "--json"});
  ASSERT_EQ(json.exit_code, 0);
  auto j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["gpus"].is_array());
  bool saw_gxx = false, saw_slurm = false;
  for (const auto& t : j["tools"]) {
    EXPECT_TRUE(t.contains("enables"));
    if (t["name"] == "g++") saw_gxx = t["found"].get<bool>();
    // Slurm's commands are reported whether or not this machine has them, with the way to get them.
    if (t["name"] == "Slurm")
      saw_slurm =
          t["found"].get<bool>() || t["how_to_get"].get<std::string>().find("slurm-client") != std::string::npos;
  }
  EXPECT_TRUE(saw_gxx);
  EXPECT_TRUE(saw_slurm);
}

TEST_F(Cli, MalformedTaskExitsTwoNamingTheLine) {
  fs::path task = dir_->path() / "bad";
  fs::create_directories(task);
  ASSERT_TRUE(WriteFileAtomic(task / "task.toml",
                              "name = \"x\"\nbackend = \"host\"\nreference = \"r.cpp\"\n"
                              "[[inputs]]\nname = \"a\"\ndtype = \"float\"\nshape = [\"n\"]\n")
                  .ok());
  ProcessResult r = Kpilot({"eval", task.string(), Example("host/saxpy/reference.cpp"), "--no-store"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("task.toml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dtype"), std::string::npos) << r.err;
}

TEST_F(Cli, MissingCandidateAndBadParamsExitTwo) {
  ProcessResult missing = Kpilot({"eval", Example("host/saxpy"), "nope.cpp", "--no-store"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.cpp"), std::string::npos);
  ProcessResult bad_d = Kpilot(
      {"eval", Example("host/saxpy"), Example("host/saxpy/candidates/omp_simd.cpp"), "-D", "CHUNK=3", "--no-store"});
  EXPECT_EQ(bad_d.exit_code, 2);
  EXPECT_NE(bad_d.err.find("CHUNK"), std::string::npos) << bad_d.err;
  ProcessResult unknown_d = Kpilot(
      {"eval", Example("host/saxpy"), Example("host/saxpy/candidates/omp_simd.cpp"), "-D", "NOPE=1", "--no-store"});
  EXPECT_EQ(unknown_d.exit_code, 2);
  ProcessResult backend =
      Kpilot({"eval", Example("host/saxpy"), Example("host/saxpy/reference.cpp"), "--backend", "cuda", "--no-store"});
  EXPECT_EQ(backend.exit_code, 2);
}

// kpilot profile takes -D as kpilot eval does: the values reach the compile and the report, and
// values that break a constraint are refused, naming it.
TEST_F(Cli, ProfileTakesParamsAsEvalDoes) {
  const std::string task = Example("cuda/transpose"), candidate = Example("cuda/transpose/candidates/smem_tiled.cu");
  ProcessResult r = Kpilot({"profile", task, candidate, "-D", "TILE=64", "-D", "BLOCK_ROWS=8", "-D", "VEC=2",
                            "--static", "--json", "--no-store"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.value("params", ""), "BLOCK_ROWS=8 TILE=64 VEC=2");
  ASSERT_EQ(j["kernels"].size(), 2u);  // a static profile has no trace: both instantiations
  for (const auto& k : j["kernels"]) EXPECT_EQ(k["static"].value("shared_bytes", 0), 64 * 65 * 4) << k.dump();
  ProcessResult bad = Kpilot(
      {"profile", task, candidate, "-D", "TILE=64", "-D", "BLOCK_ROWS=32", "-D", "VEC=1", "--static", "--no-store"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("-D BLOCK_ROWS=32 TILE=64 VEC=1 breaks the constraint \"TILE / VEC * BLOCK_ROWS <= 1024\""),
            std::string::npos)
      << bad.err;
  // A constraint naming an unset param is not checked: that param keeps the source's #ifndef
  // default (TILE 32, BLOCK_ROWS 4: 64 threads with VEC=2), not its first declared value (16, 2).
  ProcessResult partial = Kpilot({"profile", task, candidate, "-D", "VEC=2", "--static", "--json", "--no-store"});
  ASSERT_EQ(partial.exit_code, 0) << partial.err;
  for (const auto& k : nlohmann::json::parse(partial.out)["kernels"])
    EXPECT_EQ(k["static"].value("shared_bytes", 0), 32 * 33 * 4) << k.dump();
  ProcessResult unknown = Kpilot({"profile", task, candidate, "-D", "TILEX=64", "--static", "--no-store"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("TILEX"), std::string::npos) << unknown.err;
}

TEST_F(Cli, CudaTaskWithoutGpuExitsThreeButCompilesWithCompileOnly) {
  std::string why;
  if (!SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "a GPU is present";
  if (!fs::exists(Example("cuda/vector_add/task.toml"))) GTEST_SKIP() << "no cuda example";
  ProcessResult r = Kpilot({"eval", Example("cuda/vector_add"), Example("cuda/vector_add/reference.cu"), "--no-store"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--compile-only"), std::string::npos) << r.err;
  ProcessResult c = Kpilot({"eval", Example("cuda/vector_add"), Example("cuda/vector_add/reference.cu"),
                            "--compile-only", "--json", "--store", Store()});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  auto j = nlohmann::json::parse(c.out);
  EXPECT_GE(j["compile"]["resources"].size(), 1u);
}

TEST_F(Cli, EvalPassesFailsAndRecordsEveryRun) {
  ProcessResult pass = Kpilot({"eval", Example("host/saxpy"), Example("host/saxpy/candidates/omp_simd.cpp"),
                               "--workload", "12M-odd", "--json", "--store", Store()});
  EXPECT_EQ(pass.exit_code, 0) << pass.err;
  auto j = nlohmann::json::parse(pass.out);
  EXPECT_EQ(j["verdict"]["kind"], "passed");
  EXPECT_GT(j["speedup_geomean"].get<double>(), 0);
  EXPECT_EQ(j["timings"].size(), 1u);

  ProcessResult fail = Kpilot({"eval", Example("host/saxpy"), Example("host/saxpy/broken/wrong_result.cpp"),
                               "--workload", "12M-odd", "--store", Store()});
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(fail.out.find("incorrect"), std::string::npos) << fail.out;

  ProcessResult text = Kpilot({"eval", Example("host/saxpy"), Example("host/saxpy/reference.cpp"), "--workload",
                               "12M-odd", "--store", Store()});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("speedup"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stored"), std::string::npos) << text.out;

  // Reopen the store as a new process would and count.
  auto store = Store::Open(Store());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->CountRows("evaluations"), 3);
  EXPECT_EQ(*(*store)->CountRows("candidates"), 3);
  EXPECT_EQ(*(*store)->CountRows("tasks"), 1);
}

}  // namespace
}  // namespace kpilot

namespace kpilot {
namespace {

// The default store is ".kpilot" relative to where the user stands; compilers run elsewhere.
// The run listing and one run's view a user reads after optimize, as text and as JSON; options
// the task cannot measure are refused before a run is recorded.
TEST_F(Cli, RunsListsAndShowShowsAnOptimizeRun) {
  ProcessResult refused = Kpilot({"optimize", Example("host/saxpy"), "--objective", "energy", "--store", Store()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--objective energy needs each candidate's joules"), std::string::npos) << refused.err;
  ProcessResult bad = Kpilot({"optimize", Example("host/saxpy"), "--search", "widen_alpha=2", "--store", Store()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--search widen_alpha=2: widen_alpha=2: expected a number from 0 to 1"), std::string::npos)
      << bad.err;
  ProcessResult run = Kpilot({"optimize", Example("host/saxpy"), "--budget", "2", "--workload", "12M-odd", "--search",
                              "prune_window=6", "--store", Store(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ProcessResult runs = Kpilot({"runs", "--store", Store(), "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  auto list = nlohmann::json::parse(runs.out);
  ASSERT_EQ(list.size(), 1u) << "the refused runs were never recorded: " << runs.out;
  EXPECT_EQ(list[0]["id"], 1);
  EXPECT_EQ(list[0]["task"], "saxpy");
  EXPECT_EQ(list[0]["status"], "finished");
  EXPECT_GT(list[0]["best_speedup"].get<double>(), 0);
  ProcessResult show = Kpilot({"show", "1", "--store", Store(), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["options"]["prune_window"], 6) << "--search is stored with the run";
  EXPECT_EQ(j["nodes"].size(), 2u);
  ProcessResult text = Kpilot({"show", "1", "--store", Store()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("best       omp_simd.cpp:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("status     finished (budget); best "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("× at node "), std::string::npos) << text.out;
  // A run with nothing measured yet (a bench until it finishes) shows no best, not 0×.
  {
    auto store = Store::Open(Store());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    RunRecord pending;
    pending.task_name = "bench:suite";
    pending.task_dir = "suite";
    pending.config_json = "{}";
    pending.status = "interrupted";
    ASSERT_TRUE((*store)->CreateRun(pending).ok());
  }
  ProcessResult listed = Kpilot({"runs", "--store", Store()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.find("0.000×"), std::string::npos) << listed.out;
  ProcessResult pending = Kpilot({"show", "2", "--store", Store()});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  EXPECT_NE(pending.out.find("status     interrupted; best -\n"), std::string::npos) << pending.out;
}

TEST_F(Cli, DefaultRelativeStoreWorks) {
  ProcessResult r = Kpilot(
      {"eval", Example("host/saxpy"), Example("host/saxpy/reference.cpp"), "--workload", "12M-odd", "--no-time"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir_->path() / ".kpilot" / "kpilot.db"));
}

}  // namespace
}  // namespace kpilot
