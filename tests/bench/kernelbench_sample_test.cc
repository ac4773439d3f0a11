// A sample of the real KernelBench's problems (read from the checkout beside the project,
// ../shared/datasets/kernelbench/KernelBench, or $KPILOT_KERNELBENCH_DIR; never copied into the
// repository) through `kpilot bench --eval-reference` on the CPU torch device: each problem's
// reference evaluated as its own candidate, across the three levels and the input kinds the suite
// has (an integer target tensor, a model's parameters, an RNN's hidden state). Skipped, saying
// why, where the checkout is absent. Dropout in training mode and the other reference flaws are
// covered on kpilot's own fixtures: KernelBench's dropout problems are too heavy for a CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path KernelBenchDir() {
  if (const char* d = std::getenv("KPILOT_KERNELBENCH_DIR"); d && *d) return d;
  return testing::SourceDir().parent_path() / "shared" / "datasets" / "kernelbench" / "KernelBench";
}

// level folder, problem stem, the reference flaw expected ("" = none). Chosen small enough for
// a 2-core CPU at KernelBench's own sizes.
struct Sampled {
  const char* level;
  const char* stem;
  const char* flaw;
};
constexpr Sampled kSample[] = {
    {"level1", "12_Matmul_with_diagonal_matrices_", ""},  // two inputs, broadcasting
    {"level1", "95_CrossEntropyLoss", ""},                // an int64 target tensor, a scalar output
    {"level2", "6_Conv3d_Softmax_MaxPool_MaxPool", ""},   // a fused level-2 model
    {"level3", "4_LeNet5", ""},                           // a model's parameters
    {"level3", "34_VanillaRNNHidden", ""},                // an RNN's hidden state
};

TEST(KernelBenchSample, EveryReferencePassesAsItsOwnCandidateOnTheCpu) {
  const fs::path kb = KernelBenchDir();
  if (!fs::is_directory(kb / "level1"))
    GTEST_SKIP() << "no KernelBench checkout at " << kb << " (set KPILOT_KERNELBENCH_DIR to its KernelBench/ folder)";
  const fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup-torch-venv.sh";
  auto d = TempDir::Create("kpilot-kb-sample-");
  ASSERT_TRUE(d.ok());
  const fs::path suite = d->path() / "KernelBench";
  for (const auto& s : kSample) {
    const fs::path from = kb / s.level / (std::string(s.stem) + ".py");
    ASSERT_TRUE(fs::exists(from)) << from << " is not in the checkout";
    fs::create_directories(suite / s.level);
    fs::create_symlink(from, suite / s.level / from.filename());
  }
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto r = testing::RunKpilot(d->path(),
                              {"bench", suite.string(), "--eval-reference", "--no-compile-baseline", "--python",
                               python.string(), "--store", (d->path() / "store").string(), "--json"},
                              1500);
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::map<std::string, json> by_stem;
  for (const auto& p : j["problems"])
    by_stem[p["id"].get<std::string>().substr(p["id"].get<std::string>().find('/') + 1)] = p;
  ASSERT_EQ(by_stem.size(), std::size(kSample)) << j.dump();
  for (const auto& s : kSample) {
    const json& p = by_stem[s.stem];
    EXPECT_EQ(p["verdict"], "passed") << s.stem << ": " << p.dump();
    EXPECT_EQ(p["error"], "") << s.stem;
    ASSERT_EQ(p["workloads"].size(), 1u) << s.stem;
    EXPECT_GT(p["workloads"][0]["eager_ms"].get<double>(), 0) << s.stem;
    std::string flaws;
    for (const auto& f : p["reference_flaws"]) flaws += f["flaw"].get<std::string>();
    EXPECT_EQ(flaws, s.flaw) << s.stem << ": " << p["reference_flaws"].dump();
  }
  EXPECT_EQ(j["levels"].size(), 3u);
  EXPECT_EQ(j["total"]["correct"], static_cast<int>(std::size(kSample)));
}

}  // namespace
}  // namespace kpilot
