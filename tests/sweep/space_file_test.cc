// The space file's one definition: what a sweep writes, LoadSpace (the space executor's reader)
// reads back; the journal a killed sweep leaves is folded in on resume.
#include "sweep/space_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/fs.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class SpaceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-space-file-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    file_ = dir_->path() / "space.json";
  }

  // An entry as the sweep builds it: compiled, then evaluated.
  static json Evaluated(const ParamValues& params, const std::vector<double>& cand, const std::vector<double>& base) {
    json e = NotRunEntry(params);
    e["object_sha"] = "sha-" + params.at("V");
    e["compile_s"] = 1.5;
    KernelResources r;
    r.name = "Kernel(float*)";
    r.registers = 40;
    r.shared_bytes = 4096;
    r.spill_stores = 8;
    e["resources"] = json::array({ResourceEntry(r, json{{"total", 100}, {"ffma", 64}})});
    RunResult run;
    run.status = "passed";
    run.message = "matched the reference";
    TimingRecord t;
    t.workload = "4K";
    t.candidate_ms = cand;
    t.baseline_ms = base;
    run.timings.push_back(t);
    e.update(EvaluatedFields(run));
    return e;
  }

  std::unique_ptr<TempDir> dir_;
  fs::path file_;
};

TEST_F(SpaceFile, WhatTheSweepWritesLoadSpaceReadsBack) {
  json header =
      NewSpaceHeader({"tiny", "tasks/tiny", "tasks/tiny/candidates/c.cu", "4K", "reference"}, "2026-01-02T03:04:05Z");
  header["gpu"] = {{"name", "NVIDIA H200"}, {"driver", "13.0"}};
  header["calibration"] = ToJson(Calibration{"NVIDIA H200 / driver 13.0 / 132 SMs", 4.2e12, 6.4e13});
  json compile_error = NotRunEntry({{"V", "3"}});
  compile_error.update({{"status", "compile_error"}, {"message", "c.cu:3: error: nope"}, {"compile_s", 0.5}});
  std::vector<json> entries = {Evaluated({{"V", "1"}}, {1.0, 1.2, 0.8}, {2.0, 2.4, 1.6}), compile_error,
                               NotRunEntry({{"V", "4"}})};
  ASSERT_TRUE(WriteSpaceFile(file_, header, entries).ok());

  // One configuration per line, after the header.
  auto text = ReadFile(file_);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, SpaceFileText(header, entries));
  EXPECT_NE(text->find("\n \"configs\": [\n  {"), std::string::npos) << *text;
  EXPECT_NE(text->find("\n  " + entries[2].dump() + "\n ]\n}\n"), std::string::npos) << *text;
  EXPECT_EQ(json::parse(*text)["configs"], json(entries));
  EXPECT_EQ(json::parse(*text)["version"], kSpaceFileVersion);
  EXPECT_TRUE(fs::path(json::parse(*text)["task_dir"].get<std::string>()).is_absolute());

  auto space = LoadSpace(file_);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_EQ(space->task, "tiny");
  EXPECT_EQ(space->workload, "4K");
  EXPECT_EQ(space->baseline, "reference");
  EXPECT_EQ(space->gpu, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(space->calibration.dram_bytes_per_s, 4.2e12);
  ASSERT_EQ(space->configs.size(), 3u);
  const SpaceConfig& c = space->configs[0];
  EXPECT_EQ(c.params, (ParamValues{{"V", "1"}}));
  EXPECT_EQ(c.status, "passed");
  EXPECT_EQ(c.message, "matched the reference");
  EXPECT_EQ(c.object_sha, "sha-1");
  EXPECT_DOUBLE_EQ(c.compile_s, 1.5);
  EXPECT_EQ(c.candidate_ms, (std::vector<double>{1.0, 1.2, 0.8}));
  EXPECT_EQ(c.baseline_ms, (std::vector<double>{2.0, 2.4, 1.6}));
  ASSERT_EQ(c.resources.size(), 1u);
  EXPECT_EQ(c.resources[0].name, "Kernel(float*)");
  EXPECT_EQ(c.resources[0].registers, 40);
  EXPECT_EQ(c.resources[0].shared_bytes, 4096);
  EXPECT_EQ(c.resources[0].spill_stores, 8);
  EXPECT_EQ(c.mixes, json::parse(R"j([{"kernel": "Kernel(float*)", "mix": {"total": 100, "ffma": 64}}])j"));
  EXPECT_EQ(space->configs[1].status, "compile_error");
  EXPECT_EQ(space->configs[1].message, "c.cu:3: error: nope");
  EXPECT_EQ(space->configs[2].status, "not_run");
  EXPECT_EQ(*SpaceVerdict("not_run"), VerdictKind::kRuntimeError);
}

TEST_F(SpaceFile, EvaluatedFieldsCarryEverySampleAndTheSpeedups) {
  json e = Evaluated({{"V", "1"}}, {1.0, 1.0, 1.0, 1.0}, {3.0, 3.0, 3.0, 3.0});
  EXPECT_EQ(e["candidate_ms"].size(), 4u);
  EXPECT_DOUBLE_EQ(e["median_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e["baseline_median_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(e["speedup"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(e["paired_speedup"]["ratio"].get<double>(), 3.0);
  EXPECT_EQ(e["paired_speedup"]["n"].get<size_t>(), 4u);
  // What is copied to another configuration of the same object: the evaluation, not the compile.
  json part = EvaluatedPart(e);
  EXPECT_EQ(part["speedup"], e["speedup"]);
  EXPECT_EQ(part["candidate_ms"], e["candidate_ms"]);
  EXPECT_FALSE(part.contains("params"));
  EXPECT_FALSE(part.contains("object_sha"));
  EXPECT_FALSE(part.contains("compile_s"));
  EXPECT_FALSE(part.contains("resources"));
  EXPECT_TRUE(FinalSpaceStatus("passed"));
  EXPECT_TRUE(FinalSpaceStatus("compile_error"));
  EXPECT_FALSE(FinalSpaceStatus("not_run"));
  EXPECT_FALSE(FinalSpaceStatus(""));
}

TEST_F(SpaceFile, TheJournalIsFoldedInOverTheFileAndACutLineIsSkipped) {
  json header = NewSpaceHeader({"tiny", "t", "c.cu", "4K", "reference"}, "2026-01-02T03:04:05Z");
  std::vector<json> entries = {NotRunEntry({{"V", "1"}}), NotRunEntry({{"V", "2"}}), NotRunEntry({{"V", "3"}})};
  ASSERT_TRUE(WriteSpaceFile(file_, header, entries).ok());
  json one = Evaluated({{"V", "1"}}, {1.0}, {2.0});
  json two = Evaluated({{"V", "2"}}, {1.0}, {4.0});
  ASSERT_TRUE(AppendSpaceJournal(file_, {one}).ok());
  ASSERT_TRUE(AppendSpaceJournal(file_, {two}).ok());
  // A kill in the middle of a write leaves half a line.
  std::string partial = Evaluated({{"V", "3"}}, {1.0}, {2.0}).dump();
  auto journal = ReadFile(SpaceJournalPath(file_));
  ASSERT_TRUE(journal.ok());
  ASSERT_TRUE(WriteFileAtomic(SpaceJournalPath(file_), *journal + partial.substr(0, partial.size() / 2)).ok());

  auto read = ReadSpaceFileEntries(file_);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->journal_lines_skipped, 1u);
  EXPECT_FALSE(read->header.contains("configs"));
  EXPECT_EQ(read->header["task"], "tiny");
  ASSERT_EQ(read->entries.size(), 3u);
  EXPECT_EQ(read->entries.at(SpaceEntryKey(json(ParamValues{{"V", "1"}}))), one);
  EXPECT_EQ(read->entries.at(SpaceEntryKey(json(ParamValues{{"V", "2"}}))), two);
  EXPECT_EQ(read->entries.at(SpaceEntryKey(json(ParamValues{{"V", "3"}})))["status"], "not_run");

  // A whole-file write takes the journal's place.
  ASSERT_TRUE(WriteSpaceFile(file_, read->header, {one, two, entries[2]}).ok());
  EXPECT_FALSE(fs::exists(SpaceJournalPath(file_)));
  auto again = ReadSpaceFileEntries(file_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->journal_lines_skipped, 0u);
  EXPECT_EQ(again->entries, read->entries);
}

TEST_F(SpaceFile, OnlySpaceFilesOfThisVersionAreResumed) {
  ASSERT_TRUE(WriteFileAtomic(file_, "[1, 2]").ok());
  EXPECT_FALSE(ReadSpaceFileEntries(file_).ok());
  ASSERT_TRUE(WriteFileAtomic(file_, json{{"version", kSpaceFileVersion + 1}, {"configs", json::array()}}.dump()).ok());
  auto other = ReadSpaceFileEntries(file_);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(file_.string()), std::string::npos) << other.status().message();
  EXPECT_FALSE(ReadSpaceFileEntries(dir_->path() / "missing.json").ok());
}

}  // namespace
}  // namespace kpilot
