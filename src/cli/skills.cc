// kpilot skills list | show ID | validate DIR... | stats | retrieve: the skill-card library.
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "profile/profile.h"
#include "skills/skills.h"

namespace kpilot::cli {
namespace {

namespace fs = std::filesystem;

struct SkillsArgs {
  std::vector<std::string> skills_dirs;  // --skills DIR
  std::vector<std::string> tools_dirs;   // --tools DIR (rule files whose ids triggers may name)
  bool json = false;
  // show
  std::string id;
  // validate
  std::vector<std::string> validate_dirs;
  // stats
  std::string store_dir = ".kpilot";
  double improved_factor = kDefaultImprovedFactor;
  // retrieve
  std::vector<std::string> findings;  // ID or ID=EVIDENCE
  std::string roofline_class;
  std::vector<std::string> features;
  std::string platform;
  std::string language;
  std::string text;
  size_t limit = 0;
  bool show_excluded = false;
};

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

Result<ValidationOptions> Validation(const SkillsArgs& a) { return SkillValidation(Layout(), a.tools_dirs); }

Result<SkillLibrary> Library(const SkillsArgs& a) {
  return LoadSkillLibrary(Layout(), a.skills_dirs, a.tools_dirs, &std::cerr);
}

int List(const SkillsArgs& a) {
  auto lib = Library(a);
  if (!lib.ok()) return Fail(lib.status());
  if (a.json) {
    nlohmann::json j = {{"cards", nlohmann::json::array()}, {"overrides", nlohmann::json::array()}};
    for (const auto& c : lib->cards) j["cards"].push_back(ToJson(c));
    for (const auto& o : lib->overrides)
      j["overrides"].push_back({{"id", o.id},
                                {"replaced", o.replaced.string()},
                                {"by", o.by.string()},
                                {"by_origin", SkillOriginName(o.by_origin)}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<30} {:<9} {:<14} {}\n", "id", "origin", "platforms", "intent");
  for (const auto& c : lib->cards)
    std::cout << fmt::format("{:<30} {:<9} {:<14} {}\n", c.id, SkillOriginName(c.origin),
                             c.text_only ? "(text only)" : Join(c.scope_platforms, ","), c.intent);
  std::cout << fmt::format("{} cards\n", lib->cards.size());
  return kExitOk;
}

int Show(const SkillsArgs& a) {
  auto lib = Library(a);
  if (!lib.ok()) return Fail(lib.status());
  const SkillCard* c = lib->Find(a.id);
  if (!c) return Fail(Status::NotFound("no skill card `" + a.id + "` — kpilot skills list shows the ids"));
  if (a.json) {
    std::cout << ToJson(*c).dump(2) << "\n";
    return kExitOk;
  }
  auto row = [](const char* k, const std::string& v) { std::cout << fmt::format("{:<13} {}\n", k, v); };
  row("id", c->id);
  row("source", c->source.string() + " (" + std::string(SkillOriginName(c->origin)) + ")");
  row("intent", c->intent);
  row("description", c->description);
  row("anchor", c->anchor);
  row("scope", Join(c->scope_cases) + " | " + Join(c->scope_languages) + " | " + Join(c->scope_platforms));
  row("requires", Join(c->requires_features));
  row("provides", Join(c->provides));
  row("conflicts", Join(c->conflicts));
  row("triggers", Join(c->trigger_findings) + " | " + Join(c->trigger_classes));
  for (const auto& mv : c->params)
    row("param move", mv.param + " " + std::string(MoveDirectionName(mv.move)) + (mv.value ? " to " + *mv.value : "") +
                          " when " + mv.when);
  for (const auto& p : c->preconditions) row("precondition", p.what + " — " + p.why);
  for (const auto& r : c->risks) row("risk", r);
  row("effect", c->effect_expected);
  row("measured", std::to_string(c->effect_measured.size()) + " entr" + (c->effect_measured.size() == 1 ? "y" : "ies"));
  std::cout << "\n" << c->body;
  return kExitOk;
}

int Validate(const SkillsArgs& a) {
  auto options = Validation(a);
  if (!options.ok()) return Fail(options.status());
  std::vector<SkillProblem> problems;
  size_t valid = 0;
  for (const auto& d : a.validate_dirs) {
    auto cards = LoadSkillDir({d, SkillOrigin::kCommandLine}, *options, &problems);
    if (!cards.ok()) return Fail(cards.status());
    valid += cards->size();
  }
  if (a.json) {
    nlohmann::json j = {{"valid", problems.empty()}, {"valid_cards", valid}, {"problems", nlohmann::json::array()}};
    for (const auto& p : problems) j["problems"].push_back(ToJson(p));
    std::cout << j.dump(2) << "\n";
    return problems.empty() ? kExitOk : kExitUsage;
  }
  if (!problems.empty()) {
    std::cerr << FormatProblems(problems) << "\n";
    return Fail(
        Status::InvalidInput(fmt::format("{} problem(s) in skill cards ({} card(s) valid)", problems.size(), valid)));
  }
  std::cout << fmt::format("{} card(s) valid in {}\n", valid, Join(a.validate_dirs));
  return kExitOk;
}

int Stats(const SkillsArgs& a) {
  std::vector<UsageStats> stats;
  std::error_code ec;
  if (fs::exists(fs::path(a.store_dir) / "kpilot.db", ec)) {  // reading never creates a store
    auto store = Store::Open(a.store_dir);
    if (!store.ok()) return Fail(store.status());
    auto log = StoreUsageLog(**store);
    auto s = ReadUsageStats(*log, a.improved_factor);
    if (!s.ok()) return Fail(s.status());
    stats = std::move(*s);
  }
  if (a.json) {
    nlohmann::json j = {{"improved_factor", a.improved_factor}, {"rows", nlohmann::json::array()}};
    for (const auto& s : stats)
      j["rows"].push_back({{"kind", s.kind},
                           {"name", s.name},
                           {"fired", s.fired},
                           {"applied", s.applied},
                           {"improved", s.improved},
                           {"measured", s.measured},
                           {"hit_rate", s.HitRate()},
                           {"mean_gain", s.mean_gain}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<5} {:<30} {:>6} {:>8} {:>9} {:>9} {:>10}\n", "kind", "card / tool", "fired", "applied",
                           "improved", "hit rate", "mean gain");
  for (const auto& s : stats)
    std::cout << fmt::format("{:<5} {:<30} {:>6} {:>8} {:>9} {:>9} {:>10}\n", s.kind, s.name, s.fired, s.applied,
                             s.improved, s.applied ? fmt::format("{:.1f}%", 100 * s.HitRate()) : "-",
                             s.measured ? fmt::format("{:.3f}×", s.mean_gain) : "-");
  if (stats.empty()) std::cout << "(no skill usage recorded in " << a.store_dir << ")\n";
  std::cout << fmt::format("improved: applied with a speedup over the parent above {:g}\n", a.improved_factor);
  return kExitOk;
}

int RetrieveCards(const SkillsArgs& a) {
  RetrievalContext ctx;
  for (const auto& f : a.findings) {
    size_t eq = f.find('=');
    ContextFinding cf{f.substr(0, eq), {}, ""};
    if (eq != std::string::npos) cf.evidence.push_back(f.substr(eq + 1));
    ctx.findings.push_back(std::move(cf));
  }
  if (!a.roofline_class.empty()) {
    auto b = ParseBottleneck(a.roofline_class);
    if (!b || *b == Bottleneck::kUnknown)
      return Fail(Status::InvalidInput("--class " + a.roofline_class + ": use one of " + Join(RooflineClasses())));
    ctx.roofline_class = std::string(BottleneckName(*b));
  }
  ctx.features.insert(a.features.begin(), a.features.end());
  for (const auto& f : ctx.features)
    if (!IsFeature(f))
      return Fail(Status::InvalidInput("--feature " + f + ": not in the feature vocabulary of skills/README.md"));
  ctx.platform = a.platform;
  ctx.language = a.language;
  ctx.task_text = a.text;
  auto lib = Library(a);
  if (!lib.ok()) return Fail(lib.status());
  std::map<std::string, UsageStats> usage;
  std::error_code ec;
  if (fs::exists(fs::path(a.store_dir) / "kpilot.db", ec)) {
    auto store = Store::Open(a.store_dir);
    if (!store.ok()) return Fail(store.status());
    auto stats = ReadUsageStats(*StoreUsageLog(**store));
    if (!stats.ok()) return Fail(stats.status());
    for (auto& s : *stats)
      if (s.kind == "card") usage[s.name] = s;
  }
  RetrieveOptions options;
  options.limit = a.limit;
  options.usage = &usage;
  Retrieval r = Retrieve(*lib, ctx, options);
  if (a.json) {
    nlohmann::json j = {{"cards", nlohmann::json::array()}, {"excluded", nlohmann::json::array()}};
    for (const auto& c : r.cards) j["cards"].push_back(ToJson(c));
    for (const auto& e : r.excluded) j["excluded"].push_back({{"id", e.id}, {"reason", e.reason}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (size_t i = 0; i < r.cards.size(); ++i) {
    const RetrievedCard& c = r.cards[i];
    std::cout << fmt::format("{:>2}. {:<30} {}\n", i + 1, c.card->id, c.reason);
    for (const auto& m : c.moves) {
      const ParamMove& mv = c.card->params[m.index];
      std::cout << fmt::format("      move {} {}{} — {}\n", mv.param, MoveDirectionName(mv.move),
                               mv.value ? " to " + *mv.value : "", m.reason);
    }
  }
  if (r.cards.empty()) std::cout << "(no card fits this context)\n";
  if (a.show_excluded)
    for (const auto& e : r.excluded) std::cout << fmt::format("    excluded {:<30} {}\n", e.id, e.reason);
  else if (!r.excluded.empty())
    std::cout << fmt::format("{} card(s) excluded (--show-excluded lists why)\n", r.excluded.size());
  return kExitOk;
}

void AddLibraryFlags(CLI::App* cmd, SkillsArgs* a) {
  cmd->add_option("--skills", a->skills_dirs, "Also load the cards of DIR (repeatable; later folders override)");
  cmd->add_option("--tools", a->tools_dirs, "Rule files whose ids cards may name as triggers (repeatable)");
  cmd->add_flag("--json", a->json, "Print JSON");
}

}  // namespace

void AddSkillsCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<SkillsArgs>();
  auto* cmd = app.add_subcommand("skills", "Skill cards: list, show, validate, usage statistics, retrieval");
  cmd->require_subcommand(1);

  auto* list = cmd->add_subcommand("list", "List the cards kpilot loads (built-in, user folders, --skills)");
  AddLibraryFlags(list, a.get());
  list->callback([a, exit_code]() { *exit_code = List(*a); });

  auto* show = cmd->add_subcommand("show", "Show one card");
  show->add_option("id", a->id, "Card id (see kpilot skills list)")->required();
  AddLibraryFlags(show, a.get());
  show->callback([a, exit_code]() { *exit_code = Show(*a); });

  auto* validate = cmd->add_subcommand("validate", "Check the cards of each DIR (exit 2 listing every problem)");
  validate->add_option("dirs", a->validate_dirs, "Folders of <id>/SKILL.md cards, or one card folder")->required();
  validate->add_option("--tools", a->tools_dirs, "Rule files whose ids cards may name as triggers (repeatable)");
  validate->add_flag("--json", a->json, "Print JSON");
  validate->callback([a, exit_code]() { *exit_code = Validate(*a); });

  auto* stats = cmd->add_subcommand("stats", "Per card and per tool: fired, applied, improved, hit rate, mean gain");
  stats->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  stats->add_option("--improved-factor", a->improved_factor, "Speedup over the parent that counts as improved")
      ->capture_default_str();
  stats->add_flag("--json", a->json, "Print JSON");
  stats->callback([a, exit_code]() { *exit_code = Stats(*a); });

  auto* retrieve = cmd->add_subcommand("retrieve", "Rank the cards for a context, with the reasons");
  retrieve->add_option("--finding", a->findings,
                       "Finding id, most severe first; ID=EVIDENCE adds evidence (repeatable)");
  retrieve->add_option("--class", a->roofline_class, "Roofline class (memory-bound, compute-bound, …)");
  retrieve->add_option("--feature", a->features, "A feature the code already has (repeatable)");
  retrieve->add_option("--platform", a->platform, "sm_80, sm_90a, …");
  retrieve->add_option("--language", a->language, "cuda or cpp");
  retrieve->add_option("--text", a->text, "Task text: description, op kind, dtypes, shapes");
  retrieve->add_option("--limit", a->limit, "At most N cards (0 = all)");
  retrieve->add_option("--store", a->store_dir, "Store folder with usage statistics")->capture_default_str();
  retrieve->add_flag("--show-excluded", a->show_excluded, "List the cards filtered out, with why");
  AddLibraryFlags(retrieve, a.get());
  retrieve->callback([a, exit_code]() { *exit_code = RetrieveCards(*a); });
}

}  // namespace kpilot::cli
