// Sweep requests on the wire, and how a sweep's entries and status are assembled (runner/sweep.h).
#include <gtest/gtest.h>

#include "runner/protocol.h"
#include "runner/sweep.h"

namespace kpilot {
namespace {

TEST(SweepProtocol, SweepObjectsRoundTrip) {
  RunRequest r;
  r.sweep_objects = {"/cache/a/object.so", "/cache/b/object.so"};
  auto back = RunRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->sweep_objects, r.sweep_objects);
  // Requests from before sweeps have no such field: no sweep.
  nlohmann::json old = ToJson(RunRequest{});
  old.erase("sweep_objects");
  auto plain = RunRequestFromJson(old);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->sweep_objects.empty());
}

RunResult Object(const std::string& status, std::vector<double> cand = {}, std::vector<double> base = {}) {
  RunResult r;
  r.status = status;
  r.message = status + " message";
  if (!cand.empty()) r.timings = {{"w", cand, base, "host steady_clock"}};
  return r;
}

TEST(SweepProtocol, EveryEntryDecodesAsARunResultWithItsSamples) {
  std::vector<std::string> objects = {"/a.so", "/b.so"};
  SweepLog log(objects);
  log.Add(0, Object("passed", {1.0, 1.5, 2.0}, {3.0, 3.5, 4.0}));
  log.Add(1, Object("incorrect"));
  RunResult setup;
  setup.details["gpu"] = {{"name", "G"}};
  RunResult done = log.Finish(setup);
  EXPECT_EQ(done.status, "passed");
  EXPECT_EQ(done.details["gpu"]["name"], "G");
  // Through the wire and back, as the harness reads it.
  auto wire = RunResultFromJson(ToJson(done));
  ASSERT_TRUE(wire.ok());
  const nlohmann::json& entries = wire->details["sweep"];
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["object"], "/a.so");
  auto first = RunResultFromJson(entries[0]);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, "passed");
  ASSERT_EQ(first->timings.size(), 1u);
  EXPECT_EQ(first->timings[0].candidate_ms, (std::vector<double>{1.0, 1.5, 2.0}));
  EXPECT_EQ(first->timings[0].baseline_ms, (std::vector<double>{3.0, 3.5, 4.0}));
  EXPECT_EQ(entries[1]["status"], "incorrect");
}

TEST(SweepProtocol, AStopLeavesTheRestNotRunAndSaysWhy) {
  std::vector<std::string> objects = {"/a.so", "/b.so", "/c.so"};
  SweepLog log(objects);
  log.Add(0, Object("passed", {1.0}, {2.0}));
  log.Add(1, Object("runtime_error"));
  log.Stop(1, "it left the CUDA context unusable (cudaErrorIllegalAddress)");
  EXPECT_TRUE(log.stopped());
  RunResult done = log.Finish(RunResult{});
  EXPECT_EQ(done.status, "runtime_error");
  EXPECT_NE(done.message.find("object 2 of 3 (/b.so)"), std::string::npos) << done.message;
  EXPECT_NE(done.message.find("cudaErrorIllegalAddress"), std::string::npos) << done.message;
  const nlohmann::json& entries = done.details["sweep"];
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1]["status"], "runtime_error");
  EXPECT_EQ(entries[2]["object"], "/c.so");
  EXPECT_EQ(entries[2]["status"], "not_run");
}

TEST(SweepProtocol, AKpilotErrorOnTheFirstObjectIsTheRunsError) {
  std::vector<std::string> objects = {"/a.so", "/b.so"};
  SweepLog log(objects);
  log.Add(0, Object("error"));
  log.Stop(0, "the task's reference failed");
  RunResult done = log.Finish(RunResult{});
  EXPECT_EQ(done.status, "error");
  EXPECT_EQ(done.details["sweep"][1]["status"], "not_run");
}

}  // namespace
}  // namespace kpilot
