// kpilot report RUN_ID (docs/report.md): everything the store recorded of an optimize run, a bench
// or a lineage walk, as one self-contained HTML page — the search tree, progress, the roofline,
// the GPU timeline, a bench's fast_p curves and per-problem table, a walk's steps and cards.
//
// Two parts, each usable alone: collecting (the store in, one JSON model out: pure reads, so a run
// still going, interrupted or failed gets a model of what is recorded, with a note saying so) and
// rendering (the model in, the page out: pure; the page's script draws the views from the model
// embedded in it, with no network access, so the file can be mailed or archived as it is).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "store/store.h"

namespace kpilot::report {

// What a run id names: the three kinds of run the store holds.
enum class ReportKind { kRun, kBench, kLineage };
const char* ReportKindName(ReportKind k);  // "run" | "bench" | "lineage"

// The model's version: bumped when a field's meaning changes (the page checks it).
inline constexpr int kReportModelVersion = 1;

struct CollectOptions {
  // A text field longer than this (a source, a transcript) is cut, saying so; 0 = no limit.
  size_t max_text_bytes = 256 * 1024;
  // The generator's exchanges of llm:/command: runs (each can be tens of kB).
  bool transcripts = true;
};

// The report model of run `id` (docs/report.md lists its fields). NotFound naming the store for an
// unknown id; a blob that cannot be read is a note on its node, not an error. The status shown is
// kpilot runs' (a "running" run no process holds is "interrupted").
Result<nlohmann::json> CollectReport(Store& store, int64_t id, const CollectOptions& options = {});

// The kind of run `run` is, from its task name and config.
ReportKind KindOf(const RunRecord& run);

// The whole page: the model embedded as JSON (safe inside <script>), the styles and the script
// inline. Pure.
std::string RenderHtml(const nlohmann::json& model);

// The page's file name for run `id` ("run-12.html"); a bench's page links its problems' runs by it.
std::string PageName(int64_t id);

// Writes the page of run `id` into `out_dir` (made if missing) and, for a bench, the page of every
// problem's optimizer run beside it; returns the run's page. Each file is written atomically.
struct WrittenReport {
  std::filesystem::path page;
  std::vector<std::filesystem::path> problem_pages;
  size_t bytes = 0;    // of `page`
  int nodes = 0;       // in the model
  std::string status;  // as shown at the top
};
Result<WrittenReport> WriteReport(Store& store, int64_t id, const std::filesystem::path& out_dir,
                                  const CollectOptions& options = {});

}  // namespace kpilot::report
