// The report models of a bench (its problems, with fast_p figures from src/bench) and of a lineage
// walk (its steps, rejected attempts, cards and their admission), and the dispatch of report.h.
#include <fmt/format.h>

#include "bench/bench.h"
#include "core/fs.h"
#include "report/collect_internal.h"

namespace kpilot::report {

using nlohmann::json;

const char* ReportKindName(ReportKind k) {
  switch (k) {
    case ReportKind::kRun:
      return "run";
    case ReportKind::kBench:
      return "bench";
    case ReportKind::kLineage:
      return "lineage";
  }
  return "run";
}

ReportKind KindOf(const RunRecord& run) {
  if (run.task_name.rfind(kBenchTaskPrefix, 0) == 0) return ReportKind::kBench;
  if (internal::ParseObject(run.config_json).value("command", "") == "lineage") return ReportKind::kLineage;
  return ReportKind::kRun;
}

std::string PageName(int64_t id) { return fmt::format("run-{}.html", id); }

namespace internal {

Result<json> CollectBench(Store& store, const RunRecord& run) {
  auto state = LoadBench(store, run.id);
  if (!state.ok()) return state.status();
  json model = {{"kind", "bench"}, {"run", RunHeader(store, run)}};
  // The metrics as `kpilot bench` prints them; the page draws the fast_p curves from the problems.
  const std::string suite = state->config.value("suite", run.task_name.substr(sizeof(kBenchTaskPrefix) - 1));
  auto discovered = DiscoverSuite(suite);
  const SuiteFormat format = discovered.ok() ? discovered->format : SuiteFormat::kTaskFolders;
  model["bench"] = ToJson(Summarize(suite, format, state->finished));
  model["bench"]["config"] = state->config;
  json unfinished = json::array();
  for (const auto& [problem, optimizer_run] : state->interrupted)
    unfinished.push_back({{"problem", problem}, {"run", optimizer_run}});
  model["bench"]["unfinished"] = unfinished;
  return model;
}

Result<json> CollectLineage(Store& store, const RunRecord& run, const CollectOptions& options) {
  json model = {{"kind", "lineage"}, {"run", RunHeader(store, run)}};
  auto events = store.ListRunEvents(run.id);
  if (!events.ok()) return events.status();
  auto text = [&](const std::string& sha) -> std::string {
    if (sha.empty()) return "";
    auto t = store.GetBlob(sha);
    return t.ok() ? Cut(*t, options.max_text_bytes) : "(not readable: " + t.status().message() + ")";
  };
  json attempts = json::array(), admissions = json::array(), cards = json::object(), expert = json::object(),
       stop = json::object(), errors = json::array(), sources = json::object();
  int transcripts = 0;
  for (const auto& e : *events) {
    json p = ParseObject(e.payload_json);
    if (e.kind == "expert") expert = p.value("comparison", json::object());
    if (e.kind == "stop") stop = p;
    if (e.kind == "error") errors.push_back(p.value("message", ""));
    if (e.kind == "transcript") ++transcripts;
    if (e.kind == "cards") cards = p;
    if (e.kind == "admission") {
      p["source"] = text(p.value("source", ""));
      p.erase("evaluation");
      admissions.push_back(p);
    }
    if (e.kind == "accept" || e.kind == "reject" || e.kind == "naive") {
      json a = {{"outcome", e.kind},
                {"step", p.value("step", 0)},
                {"attempt", p.value("attempt", 0)},
                {"stage", p.value("stage", "")},
                {"accepted", p.value("accepted", false)},
                {"reason", p.value("reason", "")},
                {"declaration", p.value("declaration", json::object())},
                {"simplified", p.value("simplified", json::object()).value("comparison", json::object())}};
      json round_trip = json::array();
      for (const auto& rt : p.value("round_trip", json::array()))
        round_trip.push_back(rt.value("comparison", json::object()));
      a["round_trip"] = round_trip;
      // Sources by blob, once each: a walk's attempts share many.
      for (const char* key : {"source", "rebuilt_source"}) {
        const std::string sha = p.value(key, "");
        a[key] = sha;
        if (!sha.empty() && !sources.contains(sha)) sources[sha] = text(sha);
      }
      attempts.push_back(a);
    }
  }
  model["lineage"] = {{"expert", expert},          {"attempts", attempts}, {"cards", cards},
                      {"admissions", admissions},  {"stop", stop},         {"errors", errors},
                      {"transcripts", transcripts}};
  model["sources"] = sources;
  return model;
}

}  // namespace internal

Result<json> CollectReport(Store& store, int64_t id, const CollectOptions& options) {
  auto run = store.GetRun(id);
  if (!run.ok()) return run.status();
  if (!run->has_value())
    return Status::NotFound(
        fmt::format("run {} is not in the store {} (kpilot runs lists the ids it holds; "
                    "pass --store DIR for another store)",
                    id, store.dir().string()));
  Result<json> model = Status::Internal("unreachable");
  switch (KindOf(**run)) {
    case ReportKind::kRun:
      model = internal::CollectRun(store, **run, options);
      break;
    case ReportKind::kBench:
      model = internal::CollectBench(store, **run);
      break;
    case ReportKind::kLineage:
      model = internal::CollectLineage(store, **run, options);
      break;
  }
  if (!model.ok()) return model.status().WithContext(fmt::format("report of run {}", id));
  (*model)["kpilot_report_version"] = kReportModelVersion;
  return model;
}

Result<WrittenReport> WriteReport(Store& store, int64_t id, const std::filesystem::path& out_dir,
                                  const CollectOptions& options) {
  auto model = CollectReport(store, id, options);
  if (!model.ok()) return model.status();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::InvalidInput("cannot create the report folder " + out_dir.string() + ": " + ec.message());
  WrittenReport w;
  w.page = out_dir / PageName(id);
  w.status = (*model)["run"].value("status", "");
  w.nodes = static_cast<int>(model->value("nodes", json::array()).size());
  // A bench links each problem's optimizer run to its own page, written beside it first.
  if ((*model)["kind"] == "bench") {
    for (auto& p : (*model)["bench"]["problems"]) {
      const int64_t run_id = p.value("run", int64_t{0});
      if (run_id <= 0) continue;
      auto sub = CollectReport(store, run_id, options);
      if (!sub.ok()) {
        p["page_error"] = sub.status().message();
        continue;
      }
      const auto page = out_dir / PageName(run_id);
      KPILOT_RETURN_IF_ERROR(WriteFileAtomic(page, RenderHtml(*sub)));
      p["page"] = PageName(run_id);
      w.problem_pages.push_back(page);
    }
  }
  const std::string html = RenderHtml(*model);
  w.bytes = html.size();
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(w.page, html));
  return w;
}

}  // namespace kpilot::report
