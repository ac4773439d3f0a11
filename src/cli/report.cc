// kpilot report RUN_ID [--out DIR] [--open]: a run, bench or lineage walk as one HTML page
// (src/report, docs/report.md).
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/subprocess.h"
#include "report/report.h"

namespace kpilot::cli {
namespace {

struct ReportArgs {
  int64_t id = 0;
  std::string store_dir = ".kpilot";
  std::string out_dir;  // "" = STORE/reports
  bool open = false;
  bool json = false;
  bool no_transcripts = false;
};

// Opens the page in the desktop's browser (xdg-open, which returns once the browser started); a
// machine without one is told where the file is.
void OpenPage(const std::filesystem::path& page) {
  const std::string opener = FindOnPath("xdg-open");
  if (opener.empty()) {
    std::cerr << "kpilot: --open: no xdg-open here; open " << page.string() << " in a browser\n";
    return;
  }
  ProcessSpec spec;
  spec.argv = {opener, page.string()};
  spec.timeout_s = 20;
  auto r = SystemProcessRunner().Run(spec);
  if (!r.ok() || r->exit_code != 0)
    std::cerr << "kpilot: --open: xdg-open did not open it; open " << page.string() << " in a browser\n";
}

int Run(const ReportArgs& a) {
  auto store = OpenExistingStore(a.store_dir);
  if (!store.ok()) return Fail(store.status());
  const std::filesystem::path out = a.out_dir.empty() ? (*store)->dir() / "reports" : std::filesystem::path(a.out_dir);
  report::CollectOptions options;
  options.transcripts = !a.no_transcripts;
  auto w = WriteReport(**store, a.id, out, options);
  if (!w.ok()) return Fail(w.status());
  if (a.json) {
    nlohmann::json pages = nlohmann::json::array();
    for (const auto& p : w->problem_pages) pages.push_back(p.string());
    std::cout << nlohmann::json{{"run", a.id},       {"page", w->page.string()}, {"bytes", w->bytes},
                                {"nodes", w->nodes}, {"status", w->status},      {"problem_pages", pages}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("report     {} ({:.0f} kB, {} nodes, run {})\n", w->page.string(), w->bytes / 1024.0,
                             w->nodes, w->status);
    if (!w->problem_pages.empty())
      std::cout << fmt::format("           and {} problem run pages beside it\n", w->problem_pages.size());
  }
  if (a.open) OpenPage(w->page);
  return kExitOk;
}

}  // namespace

void AddReportCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Write a run, bench or lineage walk as one self-contained HTML page");
  cmd->add_option("id", a->id, "RUN_ID, BENCH_ID or LINEAGE_ID (kpilot runs lists them)")->required();
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--out", a->out_dir, "Folder for the page (default: STORE/reports)");
  cmd->add_flag("--open", a->open, "Open the page in the desktop's browser");
  cmd->add_flag("--no-transcripts", a->no_transcripts, "Leave the generator's exchanges out of the page");
  cmd->add_flag("--json", a->json, "Print what was written as JSON");
  cmd->callback([=]() { *exit_code = Run(*a); });
}

}  // namespace kpilot::cli
