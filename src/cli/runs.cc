// kpilot runs | show RUN_ID | export RUN_ID DIR: what optimization runs the store holds.
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "optimize/optimizer.h"

namespace kpilot::cli {

Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& store_dir) {
  if (!std::filesystem::exists(std::filesystem::path(store_dir) / "kpilot.db"))
    return Status::NotFound("no kpilot store at " + store_dir +
                            " (pass --store DIR: the folder kpilot optimize wrote to, "
                            ".kpilot in the folder it ran in by default)");
  return Store::Open(store_dir);
}

std::string CountersGist(const nlohmann::json& event) {
  const int64_t node = event.value("node", int64_t{-1});
  if (event.contains("error"))
    return fmt::format("node {}: no profile: {}", node, event.value("error", "").substr(0, 120));
  std::string ids;
  for (const auto& f : event.value("findings", nlohmann::json::array()))
    ids += (ids.empty() ? "" : ", ") + f.value("id", "");
  return fmt::format("node {}: {} {:.2f} s, {}; {}", node, event.value("profiler", ""), event.value("wall_s", 0.0),
                     event.value("bottleneck", ""), ids.empty() ? "no findings" : ids);
}
namespace {

// A run's best speedup, or "-" while nothing is measured (a bench until it finishes).
std::string BestShown(double speedup) { return speedup > 0 ? fmt::format("{:.3f}×", speedup) : "-"; }

int ListRuns(const std::string& store_dir, bool json) {
  auto store = OpenExistingStore(store_dir);
  if (!store.ok()) return Fail(store.status());
  auto runs = (*store)->ListRuns();
  if (!runs.ok()) return Fail(runs.status());
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : *runs)
      j.push_back({{"id", r.id},
                   {"task", r.task_name},
                   {"status", ShownRunStatus(**store, r)},
                   {"stop_reason", r.stop_reason},
                   {"best_speedup", r.best_speedup},
                   {"best_node", r.best_node},
                   {"created_at", r.created_at},
                   {"updated_at", r.updated_at}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:>4}  {:<18} {:<12} {:<10} {:>9}  {}\n", "id", "task", "status", "stopped", "best",
                           "started");
  for (const auto& r : *runs)
    std::cout << fmt::format("{:>4}  {:<18} {:<12} {:<10} {:>9}  {}\n", r.id, r.task_name, ShownRunStatus(**store, r),
                             r.stop_reason, BestShown(r.best_speedup), r.created_at);
  if (runs->empty()) std::cout << "(no runs in " << store_dir << ")\n";
  return kExitOk;
}

int ShowRun(const std::string& store_dir, int64_t id, bool json) {
  auto store = OpenExistingStore(store_dir);
  if (!store.ok()) return Fail(store.status());
  auto run = (*store)->GetRun(id);
  if (!run.ok()) return Fail(run.status());
  if (!run->has_value()) return Fail(Status::NotFound(fmt::format("run {} is not in {}", id, store_dir)));
  auto nodes = (*store)->ListRunNodes(id);
  auto events = (*store)->ListRunEvents(id);
  if (!nodes.ok()) return Fail(nodes.status());
  if (!events.ok()) return Fail(events.status());
  const RunRecord& r = **run;
  // What the generator spent: the last "spend" event holds the run's totals; transcripts are
  // counted, not listed (each is a blob in the store).
  nlohmann::json spend = {
      {"requests", 0}, {"input_tokens", 0}, {"output_tokens", 0}, {"cost_usd", 0.0}, {"priced", true}};
  int transcripts = 0;
  for (const auto& e : *events) {
    if (e.kind == "spend") spend = nlohmann::json::parse(e.payload_json, nullptr, false);
    transcripts += e.kind == "transcript";
  }
  spend["transcripts"] = transcripts;
  if (json) {
    nlohmann::json j = {{"id", r.id},
                        {"task", r.task_name},
                        {"task_dir", r.task_dir},
                        {"status", ShownRunStatus(**store, r)},
                        {"stop_reason", r.stop_reason},
                        {"best_speedup", r.best_speedup},
                        {"best_node", r.best_node},
                        {"options", nlohmann::json::parse(r.config_json, nullptr, false)},
                        {"generator_spend", spend}};
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : *nodes)
      j["nodes"].push_back({{"node", n.node},
                            {"parent", n.parent},
                            {"verdict", n.verdict},
                            {"speedup", n.speedup},
                            {"params", nlohmann::json::parse(n.params_json, nullptr, false)},
                            {"summary", n.summary},
                            {"finding", n.finding}});
    j["history"] = nlohmann::json::array();
    for (const auto& e : *events)
      if (e.kind != "proposal")
        j["history"].push_back(
            {{"seq", e.seq}, {"kind", e.kind}, {"payload", nlohmann::json::parse(e.payload_json, nullptr, false)}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  int passed = 0;
  for (const auto& n : *nodes) passed += n.verdict == "passed";
  std::cout << fmt::format("run        {} — {} ({})\n", r.id, r.task_name, r.task_dir);
  std::cout << fmt::format(
      "status     {}{}; best {}\n", ShownRunStatus(**store, r), r.stop_reason.empty() ? "" : " (" + r.stop_reason + ")",
      r.best_node < 0 ? std::string("-") : BestShown(r.best_speedup) + fmt::format(" at node {}", r.best_node));
  for (const auto& n : *nodes)
    if (n.node == r.best_node) {
      std::string params;
      auto pj = nlohmann::json::parse(n.params_json, nullptr, false);
      if (pj.is_object())
        for (auto it = pj.begin(); it != pj.end(); ++it)
          params += fmt::format(" {}={}", it.key(), it->is_string() ? it->get<std::string>() : it->dump());
      std::cout << fmt::format("best       {}{}  (kpilot export {} DIR writes it out)\n", n.source_name,
                               params.empty() ? "" : ":" + params, r.id);
    }
  std::cout << fmt::format("tree       {} nodes, {} passed, {} failed\n", nodes->size(), passed,
                           nodes->size() - passed);
  if (spend.value("requests", 0) > 0 || transcripts > 0)
    std::cout << fmt::format(
        "generator  {} requests, {} input + {} output tokens, US${:.4f}{}; {} transcripts archived\n",
        spend.value("requests", 0), spend.value("input_tokens", 0), spend.value("output_tokens", 0),
        spend.value("cost_usd", 0.0), spend.value("priced", true) ? "" : " (unpriced model counted as 0)", transcripts);
  std::cout << "\nnode parent verdict        speedup  change\n";
  for (const auto& n : *nodes)
    std::cout << fmt::format("{:>4} {:>6} {:<14} {:>7}  {}\n", n.node, n.parent, n.verdict,
                             n.verdict == "passed" ? fmt::format("{:.3f}×", n.speedup) : "-", n.summary);
  std::cout << "\nhistory\n";
  for (const auto& e : *events) {
    // Proposals and evaluations are the table above; "result" is the journal of finished
    // evaluations that --resume serves (its blob holds the whole result).
    if (e.kind == "proposal" || e.kind == "evaluated" || e.kind == "transcript" || e.kind == "spend" ||
        e.kind == "result")
      continue;
    std::string line = e.payload_json.substr(0, 160);
    auto p = nlohmann::json::parse(e.payload_json, nullptr, false);
    // A counter profile's payload is long (every kernel's counters): its gist.
    if (e.kind == "counters" && p.is_object()) line = CountersGist(p);
    std::cout << fmt::format("  {:>4} {:<10} {}\n", e.seq, e.kind, line);
  }
  return kExitOk;
}

}  // namespace

void AddRunsCommands(CLI::App& app, int* exit_code) {
  auto store_dir = std::make_shared<std::string>(".kpilot");
  auto json = std::make_shared<bool>(false);
  auto* runs = app.add_subcommand("runs", "List optimization runs (id, task, status, best speedup)");
  runs->add_option("--store", *store_dir, "Store folder")->capture_default_str();
  runs->add_flag("--json", *json, "Print JSON");
  runs->callback([=]() { *exit_code = ListRuns(*store_dir, *json); });

  auto id = std::make_shared<int64_t>(0);
  auto* show = app.add_subcommand("show", "Show one run: tree summary, best candidate, history");
  show->add_option("run_id", *id, "Run id (see kpilot runs)")->required();
  show->add_option("--store", *store_dir, "Store folder")->capture_default_str();
  show->add_flag("--json", *json, "Print JSON");
  show->callback([=]() { *exit_code = ShowRun(*store_dir, *id, *json); });

  auto dir = std::make_shared<std::string>();
  auto* exp = app.add_subcommand("export", "Write a run's best candidate with params and report to DIR");
  exp->add_option("run_id", *id, "Run id")->required();
  exp->add_option("dir", *dir, "Output folder")->required();
  exp->add_option("--store", *store_dir, "Store folder")->capture_default_str();
  exp->callback([=]() {
    auto store = OpenExistingStore(*store_dir);
    if (!store.ok()) {
      *exit_code = Fail(store.status());
      return;
    }
    Status s = ExportRun(**store, *id, *dir);
    *exit_code = s.ok() ? kExitOk : Fail(s);
    if (s.ok()) std::cout << "written " << *dir << "\n";
  });
}

}  // namespace kpilot::cli
