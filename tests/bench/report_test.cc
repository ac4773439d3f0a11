// The bench metrics on constructed results: fast_p (strictly faster than p), geomean over
// correct problems, per level and in total, against eager and torch.compile; the renderings.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/bench.h"

namespace kpilot {
namespace {

ProblemResult Correct(const std::string& id, const std::string& level, double eager, double compile = 0) {
  ProblemResult r;
  r.id = id;
  r.level = level;
  r.verdict = "passed";
  r.speedup_eager = eager;
  r.speedup_compile = compile;
  r.compile_measured = compile > 0;
  r.evaluations = 3;
  r.gpu_s = 1.5;
  return r;
}

ProblemResult Wrong(const std::string& id, const std::string& level) {
  ProblemResult r;
  r.id = id;
  r.level = level;
  r.verdict = "incorrect";
  r.evaluations = 3;
  return r;
}

TEST(FastP, CountsCorrectAndStrictlyFaster) {
  std::vector<ProblemResult> rs = {Correct("a", "1", 1.0), Correct("b", "1", 2.0), Correct("c", "1", 0.5),
                                   Wrong("d", "1")};
  EXPECT_DOUBLE_EQ(FastP(rs, 0, Baseline::kEager), 0.75) << "fast_0 is the correctness rate";
  EXPECT_DOUBLE_EQ(FastP(rs, 0.5, Baseline::kEager), 0.5) << "0.5 is not faster than 0.5";
  EXPECT_DOUBLE_EQ(FastP(rs, 1, Baseline::kEager), 0.25) << "exactly 1.0× is not faster than eager";
  EXPECT_DOUBLE_EQ(FastP(rs, 2, Baseline::kEager), 0.0) << "exactly 2.0× is not fast_2";
  EXPECT_DOUBLE_EQ(FastP({}, 1, Baseline::kEager), 0.0);
}

TEST(FastP, AWrongProblemIsNeverFastWhateverItsSpeedup) {
  ProblemResult r = Wrong("x", "1");
  r.speedup_eager = 9;  // a stale number must not count
  EXPECT_DOUBLE_EQ(FastP({r}, 1, Baseline::kEager), 0.0);
  ProblemResult e = Correct("y", "1", 3);
  e.error = "problem did not load";
  EXPECT_FALSE(e.correct());
  EXPECT_DOUBLE_EQ(FastP({e}, 0, Baseline::kEager), 0.0);
}

TEST(FastP, CompileBaselineNeedsAMeasurement) {
  std::vector<ProblemResult> rs = {Correct("a", "1", 2.0, 1.2), Correct("b", "1", 2.0)};
  EXPECT_DOUBLE_EQ(FastP(rs, 1, Baseline::kCompile), 0.5);
  EXPECT_DOUBLE_EQ(FastP(rs, 0, Baseline::kCompile), 0.5) << "unmeasured: counted as not fast";
  EXPECT_DOUBLE_EQ(GeomeanSpeedup(rs, Baseline::kCompile), 1.2);
}

TEST(Geomean, OverCorrectProblemsOnly) {
  std::vector<ProblemResult> rs = {Correct("a", "1", 2.0), Correct("b", "1", 8.0), Wrong("c", "1")};
  EXPECT_NEAR(GeomeanSpeedup(rs, Baseline::kEager), 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(GeomeanSpeedup({Wrong("c", "1")}, Baseline::kEager), 0.0);
  EXPECT_DOUBLE_EQ(GeomeanSpeedup({}, Baseline::kEager), 0.0);
}

TEST(Summarize, PerLevelAndTotal) {
  std::vector<ProblemResult> rs = {Correct("level1/a", "1", 2.0, 1.5), Wrong("level1/b", "1"),
                                   Correct("level2/c", "2", 0.5, 0.4), Correct("level2/d", "2", 2.0, 0.9)};
  rs[1].requests = 4;
  rs[1].input_tokens = 1000;
  rs[1].output_tokens = 200;
  rs[1].cost_usd = 0.25;
  BenchReport r = Summarize("kb", SuiteFormat::kKernelBench, rs);
  ASSERT_EQ(r.levels.size(), 2u);
  const LevelReport& l1 = r.levels[0];
  EXPECT_EQ(l1.level, "1");
  EXPECT_EQ(l1.problems, 2);
  EXPECT_EQ(l1.correct, 1);
  EXPECT_DOUBLE_EQ(l1.correctness, 0.5);
  EXPECT_DOUBLE_EQ(l1.eager.fast_p[0], 0.5);
  EXPECT_DOUBLE_EQ(l1.eager.geomean, 2.0);
  EXPECT_DOUBLE_EQ(l1.compile.geomean, 1.5);
  EXPECT_EQ(l1.requests, 4);
  EXPECT_DOUBLE_EQ(l1.cost_usd, 0.25);
  const LevelReport& l2 = r.levels[1];
  EXPECT_DOUBLE_EQ(l2.eager.geomean, 1.0);
  EXPECT_DOUBLE_EQ(l2.eager.fast_p[3], 0.5) << "fast_1: 2.0 yes, 0.5 no";
  EXPECT_DOUBLE_EQ(l2.compile.fast_p[3], 0.0) << "both slower than torch.compile";
  EXPECT_EQ(r.total.problems, 4);
  EXPECT_EQ(r.total.correct, 3);
  EXPECT_EQ(r.total.evaluations, 12);
  EXPECT_DOUBLE_EQ(r.total.gpu_s, 4.5);
  EXPECT_NEAR(r.total.eager.geomean, std::cbrt(2.0 * 0.5 * 2.0), 1e-12);
  EXPECT_TRUE(r.contest.empty());
}

TEST(Summarize, FlashInferContestScorePerDefinition) {
  ProblemResult ok = Correct("rmsnorm/h512", "rmsnorm", 1.5);
  ok.workloads = {{"w1", true, 1.0}, {"w2", true, 2.0}};
  ProblemResult one_bad = Correct("gemm/n128", "gemm", 1.5);
  one_bad.workloads = {{"w1", true, 3.0}, {"w2", false, 0}};
  ProblemResult errored;
  errored.id = "softmax/v4096";
  errored.level = "softmax";
  errored.error = "definition did not load";
  // The contest's formula, as src/pytorch implements it.
  auto contest = [](const std::vector<double>& s, const std::vector<bool>& passed) {
    double sum = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (!passed[i]) return 0.0;
      sum += s[i];
    }
    return s.empty() ? 0.0 : sum / s.size();
  };
  BenchReport r = Summarize("fi", SuiteFormat::kFlashInfer, {ok, one_bad, errored}, contest);
  ASSERT_EQ(r.contest.size(), 3u);
  EXPECT_DOUBLE_EQ(r.contest[0].score, 1.5);
  EXPECT_EQ(r.contest[0].passed, 2);
  EXPECT_DOUBLE_EQ(r.contest[1].score, 0.0) << "a failed workload zeroes the definition";
  EXPECT_DOUBLE_EQ(r.contest[2].score, 0.0);
  EXPECT_TRUE(Summarize("fi", SuiteFormat::kKernelBench, {ok}, contest).contest.empty());
}

TEST(Render, JsonShape) {
  BenchReport r = Summarize("kb", SuiteFormat::kKernelBench, {Correct("level1/a", "1", 2.0), Wrong("level1/b", "1")});
  nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["suite"], "kb");
  EXPECT_EQ(j["format"], "kernelbench");
  ASSERT_EQ(j["levels"].size(), 1u);
  const auto& l = j["levels"][0];
  EXPECT_EQ(l["level"], "1");
  EXPECT_EQ(l["problems"], 2);
  EXPECT_EQ(l["correct"], 1);
  for (const char* p : {"0", "0.5", "0.8", "1", "1.5", "2"}) {
    EXPECT_TRUE(l["eager"]["fast_p"].contains(p)) << p;
    EXPECT_TRUE(l["compile"]["fast_p"].contains(p)) << p;
  }
  EXPECT_EQ(l["eager"]["fast_p"]["1"], 0.5);
  EXPECT_EQ(l["eager"]["geomean_speedup"], 2.0);
  EXPECT_EQ(l["compile"]["measured"], 0);
  EXPECT_TRUE(l["cost"].contains("gpu_s"));
  EXPECT_EQ(j["problems"].size(), 2u);
  EXPECT_EQ(j["problems"][1]["correct"], false);
  EXPECT_EQ(j["total"]["problems"], 2);
  // A result survives the store's round trip.
  auto back = ProblemResultFromJson(j["problems"][0]);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->id, "level1/a");
  EXPECT_DOUBLE_EQ(back->speedup_eager, 2.0);
  EXPECT_TRUE(back->correct());
}

TEST(Render, MarkdownAndTable) {
  BenchReport r =
      Summarize("kb", SuiteFormat::kKernelBench,
                {Correct("level1/a", "1", 2.0, 1.1), Wrong("level1/b", "1"), Correct("level2/c", "2", 1.25)});
  std::string md = ReportMarkdown(r);
  EXPECT_NE(md.find("# kpilot bench: kb (kernelbench)"), std::string::npos);
  EXPECT_NE(md.find("## Against eager"), std::string::npos);
  EXPECT_NE(md.find("## Against torch.compile"), std::string::npos);
  EXPECT_NE(md.find("| level | n | correct | fast_0 | fast_0.5 | fast_0.8 | fast_1 | fast_1.5 | fast_2 | geomean |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | 2 | 50% | 50% | 50% | 50% | 50% | 50% | 0% | 2.000× |"), std::string::npos) << md;
  EXPECT_NE(md.find("| all | 3 |"), std::string::npos) << "several levels: a total row";
  EXPECT_NE(md.find("| level1/b | incorrect |"), std::string::npos);
  EXPECT_NE(md.find("## Cost"), std::string::npos);
  std::string table = ReportTable(r);
  EXPECT_NE(table.find("against torch.compile"), std::string::npos);
  EXPECT_NE(table.find("fast_1.5"), std::string::npos);
  EXPECT_NE(table.find("1.250× eager"), std::string::npos);
  EXPECT_NE(table.find("—"), std::string::npos) << "level 2 has no torch.compile figure";
}

// The bench's own wall time: per slice, from its start to its last finished problem, summed over
// slices; and how many torch.compile times came from the baseline cache rather than a timing.
TEST(Render, WallTimeOverSlicesAndCachedCompileTimes) {
  ProblemResult a = Correct("level1/a", "1", 2.0, 1.1), b = Correct("level1/b", "1", 1.0, 0.9),
                c = Correct("level2/c", "2", 1.25, 1.0), old = Correct("level2/d", "2", 1.0);
  a.slice = b.slice = 1;
  a.finished_at_s = 171;
  b.finished_at_s = 40;
  c.slice = 2;
  c.finished_at_s = 277;
  a.compile_cached = c.compile_cached = true;
  old.compile_cached = true;  // no torch.compile figure: nothing was read
  BenchReport r = Summarize("kb", SuiteFormat::kKernelBench, {a, b, c, old});
  ASSERT_EQ(r.slices.size(), 2u) << "a result of no known slice adds none";
  EXPECT_EQ(r.slices[0].problems, 2);
  EXPECT_DOUBLE_EQ(r.slices[0].wall_s, 171);
  EXPECT_DOUBLE_EQ(r.wall_s, 448);
  EXPECT_EQ(r.total.compile_cached, 2);
  EXPECT_EQ(r.levels[1].compile_cached, 1);
  const std::string wall = "Wall time 448 s (7.5 min) over 2 slices: 2 problems in 171 s, 1 in 277 s.";
  const std::string cache = "torch.compile times: 2 of 3 read from the baseline cache, 1 timed.";
  for (const std::string& text : {ReportMarkdown(r), ReportTable(r)}) {
    EXPECT_NE(text.find(wall), std::string::npos) << text;
    EXPECT_NE(text.find(cache), std::string::npos) << text;
  }
  nlohmann::json j = ToJson(r);
  EXPECT_DOUBLE_EQ(j["wall_s"].get<double>(), 448);
  ASSERT_EQ(j["slices"].size(), 2u);
  EXPECT_EQ(j["slices"][1], nlohmann::json({{"slice", 2}, {"problems", 1}, {"wall_s", 277.0}}));
  EXPECT_EQ(j["total"]["compile_cached"], 2);
  auto back = ProblemResultFromJson(j["problems"][0]);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->slice, 1);
  EXPECT_DOUBLE_EQ(back->finished_at_s, 171);
  EXPECT_TRUE(back->compile_cached);
  // Results of one slice: no list of slices, the time alone.
  BenchReport one = Summarize("kb", SuiteFormat::kKernelBench, {a, b});
  EXPECT_NE(ReportMarkdown(one).find("\nWall time 171 s (2.9 min).\n"), std::string::npos) << ReportMarkdown(one);
  // Results that say no slice (recorded before slices were): no wall time at all.
  EXPECT_EQ(ReportMarkdown(Summarize("kb", SuiteFormat::kKernelBench, {old})).find("Wall time"), std::string::npos);
}

// Why a problem failed, as the verdict's summary said it: in the table and the Markdown on one
// line (a traceback's first and last lines), whole in the JSON.
TEST(Render, AFailedVerdictSaysWhy) {
  ProblemResult b = Wrong("level1/b", "1");
  b.verdict = "runtime_error";
  b.message =
      "the candidate failed on workload default, seed 1:\nTraceback (most recent call last):\n"
      "  File \"b.py\", line 9, in forward\nValueError: a | b shapes differ";
  b.out_of_memory = true;
  BenchReport r = Summarize("kb", SuiteFormat::kKernelBench, {Correct("level1/a", "1", 2.0), b});
  const std::string table = ReportTable(r);
  EXPECT_NE(table.find("runtime_error: the candidate failed on workload default, seed 1: … ValueError: a | b shapes "
                       "differ\n"),
            std::string::npos)
      << table;
  const std::string md = ReportMarkdown(r);
  EXPECT_NE(md.find("| level1/b | runtime_error: the candidate failed on workload default, seed 1: … ValueError: a "
                    "\\| b shapes differ | 3 |"),
            std::string::npos)
      << "one row, its pipe escaped: " << md;
  auto back = ProblemResultFromJson(ToJson(r)["problems"][1]);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->message, b.message);
  EXPECT_TRUE(back->out_of_memory);
}

TEST(Render, SecondsSplitAndReferenceFlawsPerLevelAndPerProblem) {
  ProblemResult a = Correct("level1/a", "1", 1.0);
  a.wall_s = 14;
  a.seconds = {1.0, 0.1, 2.0, 1.5, 3.0, 2.0, 2.5, 1.0, 1};
  a.workloads.push_back({"default", true, 1.0, 0.98, 1.02, 2.5, 2.5});
  ProblemResult b = Wrong("level1/b", "1");
  b.wall_s = 6;
  b.seconds = {1.0, 0.1, 2.0, 0.5, 0, 0, 0.5, 0, 1};
  b.reference_findings.push_back({ReferenceFlaw::kNondeterministic,
                                  "called twice on the same inputs with the same random seed, output out differs"});
  BenchReport r = Summarize("kb", SuiteFormat::kKernelBench, {a, b});
  EXPECT_EQ(r.total.flawed, 1);
  EXPECT_DOUBLE_EQ(r.total.seconds.import_torch, 4.0);
  EXPECT_EQ(r.total.seconds.evaluations, 2);
  const std::string table = ReportTable(r);
  // Means per problem: wall 10, load 1, python 0.1, torch 2, setup 1, compile 1.5, lock wait 1, checks 1.5,
  // timing 0.5, other 1.4.
  EXPECT_NE(
      table.find("1           10.0     1.0      0.10       2.0     1.0     1.5       1.0     1.5     0.5     1.4"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("level1/b                                 nondeterministic: called twice"), std::string::npos)
      << table;
  EXPECT_NE(table.find("incorrect [reference: nondeterministic]"), std::string::npos) << table;
  const std::string md = ReportMarkdown(r);
  EXPECT_NE(md.find("| 1 | 10.0 | 1.0 | 0.10 | 2.0 | 1.0 | 1.5 | 1.0 | 1.5 | 0.5 | 1.4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| level1/b | nondeterministic | called twice"), std::string::npos) << md;

  // Every new field survives the store's round trip.
  nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["levels"][0]["flawed_references"], 1);
  auto back_a = ProblemResultFromJson(j["problems"][0]);
  auto back_b = ProblemResultFromJson(j["problems"][1]);
  ASSERT_TRUE(back_a.ok() && back_b.ok());
  ASSERT_EQ(back_a->workloads.size(), 1u);
  EXPECT_DOUBLE_EQ(back_a->workloads[0].ci_lo, 0.98);
  EXPECT_DOUBLE_EQ(back_a->workloads[0].ci_hi, 1.02);
  EXPECT_DOUBLE_EQ(back_a->workloads[0].eager_ms, 2.5);
  EXPECT_DOUBLE_EQ(back_a->seconds.setup, 1.5);
  EXPECT_DOUBLE_EQ(back_a->seconds.compile, 3.0);
  EXPECT_DOUBLE_EQ(back_a->seconds.lock_wait, 2.0);
  ASSERT_EQ(back_b->reference_findings.size(), 1u);
  EXPECT_EQ(back_b->reference_findings[0].flaw, ReferenceFlaw::kNondeterministic);
  EXPECT_EQ(ParseReferenceFlaw("random"), ReferenceFlaw::kRandom);
  EXPECT_FALSE(ParseReferenceFlaw("sloppy").has_value());
}

}  // namespace
}  // namespace kpilot
