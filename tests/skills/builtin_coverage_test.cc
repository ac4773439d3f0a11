// Every built-in card (skills/) is exercised: it validates; a retrieval context built from its own
// triggers, scope and cases (what a profile of a kernel it fits would give) ranks it in the top 3
// of the whole library; each of its params moves, matched by retrieval in the context its `when`
// describes, is the move the params generator makes on a parameter space that has such a param
// (an example task's, else a one-param space); and docs/skills.md's table "What exercises each
// built-in card" names, for every card, example files that exist and contain the technique's
// marker: every card is exercised by at least one test or example.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "core/fs.h"
#include "generate/params_generator.h"
#include "skills_test_util.h"
#include "task/loader.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const SkillLibrary& Builtin() {
  static const SkillLibrary lib = [] {
    auto l = LoadLibrary({{testing::SourceDir() / "skills", SkillOrigin::kBuiltin}}, testing::TreeValidation());
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? *l : SkillLibrary{};
  }();
  return lib;
}

std::string Upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The context a profile of a kernel the card fits gives: the card's trigger findings, most
// severe first, its first class, its cases as the task text, the features it requires present,
// and its platform and language.
RetrievalContext OwnContext(const SkillCard& c) {
  RetrievalContext ctx;
  for (const auto& f : c.trigger_findings) ctx.findings.push_back({f, {}, ""});
  if (!c.trigger_classes.empty()) ctx.roofline_class = c.trigger_classes.front();
  ctx.task_text = Join(c.scope_cases, ". ");
  ctx.features.insert(c.requires_features.begin(), c.requires_features.end());
  ctx.platform = c.scope_platforms.back();
  ctx.language = c.scope_languages.front();
  return ctx;
}

std::vector<std::string> Ids(const Retrieval& r) {
  std::vector<std::string> ids;
  for (const auto& c : r.cards) ids.push_back(c.card->id);
  return ids;
}

TEST(BuiltinCards, AllValidateAndThereAreAtLeast25) {
  std::vector<SkillProblem> problems;
  auto cards =
      LoadSkillDir({testing::SourceDir() / "skills", SkillOrigin::kBuiltin}, testing::TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok()) << cards.status().ToString();
  EXPECT_TRUE(problems.empty()) << FormatProblems(problems);
  EXPECT_GE(cards->size(), 25u);
  EXPECT_EQ(cards->size(), Builtin().cards.size());
}

// skills/ cannot link propose/, so the card validator keeps its own list of param role names
// (ParamRoles); it must name exactly the roles ClassifyParam gives.
TEST(BuiltinCards, TheValidatorsParamRolesAreTheParamsGeneratorsRoles) {
  std::vector<std::string> generator;
  for (int r = 0; r < static_cast<int>(ParamRole::kOther); ++r)
    generator.emplace_back(ParamRoleName(static_cast<ParamRole>(r)));
  std::vector<std::string> validator = ParamRoles();
  std::sort(generator.begin(), generator.end());
  std::sort(validator.begin(), validator.end());
  EXPECT_EQ(validator, generator);
}

TEST(BuiltinCards, EachIsInTheTop3ForItsOwnTriggers) {
  ASSERT_FALSE(Builtin().cards.empty());
  for (const auto& c : Builtin().cards) {
    Retrieval r = Retrieve(Builtin(), OwnContext(c), {.limit = 3});
    std::vector<std::string> top = Ids(r);
    EXPECT_NE(std::find(top.begin(), top.end(), c.id), top.end())
        << c.id << " is not in the top 3 for its own triggers; got " << Join(top);
  }
}

// ---- the params moves ---------------------------------------------------------------------------

// The context a move's `when` describes: its class, or its finding with the condition's first
// alternative as evidence (as the profile's evidence strings carry it: "limiter: shared memory").
RetrievalContext MoveContext(const SkillCard& c, const ParamMove& mv) {
  RetrievalContext ctx;
  ctx.task_text = Join(c.scope_cases, ". ");
  ctx.features.insert(c.requires_features.begin(), c.requires_features.end());
  ctx.platform = c.scope_platforms.back();
  ctx.language = c.scope_languages.front();
  if (mv.trigger_is_class) {
    ctx.roofline_class = mv.trigger;
    return ctx;
  }
  ContextFinding f{mv.trigger, {}, ""};
  if (mv.condition && !mv.condition->alternatives.empty()) {
    const std::string& alt = mv.condition->alternatives.front();
    f.evidence.push_back(mv.condition->key.empty() ? alt : mv.condition->key + ": " + alt);
  }
  ctx.findings.push_back(f);
  return ctx;
}

bool NameMatches(const std::string& name, const std::string& param) {
  return name == param || ParamRoleName(ClassifyParam(name)) == param;
}

struct Space {
  Task task;
  std::string param;  // the task's param the move names
  std::string where;  // "examples/cuda/sgemm" or "a one-param space"
};

std::vector<Task> ExampleTasks() {
  std::vector<Task> out;
  for (const char* kind : {"cuda", "host"})
    for (const auto& e : fs::directory_iterator(testing::SourceDir() / "examples" / kind)) {
      if (!fs::exists(e.path() / "task.toml")) continue;
      auto t = LoadTask(e.path());
      EXPECT_TRUE(t.ok()) << e.path() << ": " << t.status().ToString();
      if (t.ok()) out.push_back(*t);
    }
  std::sort(out.begin(), out.end(), [](const Task& a, const Task& b) { return a.dir < b.dir; });
  return out;
}

// An example task with a param the move names (the first, in folder order, of the right
// language) whose values allow the move; else a space of that one param.
Space SpaceFor(const SkillCard& c, const ParamMove& mv) {
  static const std::vector<Task> tasks = ExampleTasks();
  Backend want = c.scope_languages.front() == "cuda" ? Backend::kCuda : Backend::kHost;
  for (const auto& t : tasks) {
    if (t.backend != want) continue;
    for (const auto& p : t.params) {
      if (!NameMatches(p.name, mv.param) || p.values.size() < 2) continue;
      if (mv.move == MoveDirection::kSet && std::find(p.values.begin(), p.values.end(), *mv.value) == p.values.end())
        continue;
      return {t, p.name, fs::relative(t.dir, testing::SourceDir()).string()};
    }
  }
  Space s;
  s.task.name = "one_param";
  s.task.backend = want;
  s.param = mv.param == Upper(mv.param) ? mv.param : "";
  if (s.param.empty()) {
    ADD_FAILURE() << c.id << ": no example task has a `" << mv.param << "` param";
    return s;
  }
  std::vector<std::string> values = {"1", "2", "4", "8"};
  if (mv.move == MoveDirection::kSet && std::find(values.begin(), values.end(), *mv.value) == values.end())
    values.push_back(*mv.value);
  s.task.params = {{s.param, values, 0}};
  s.where = "a one-param space " + s.param;
  return s;
}

// A valid parent from which the move can go somewhere valid: the param at its first value (up),
// its last (down), or away from the target (set), every other param as in the first valid config
// that allows it.
std::optional<ParamValues> ParentFor(const Space& s, const ParamMove& mv) {
  std::vector<ParamValues> all = EnumerateSpace(s.task, 100000);
  std::set<ParamValues> valid(all.begin(), all.end());
  const auto& values = std::find_if(s.task.params.begin(), s.task.params.end(), [&](const TunableParam& p) {
                         return p.name == s.param;
                       })->values;
  for (const auto& cfg : all) {
    const std::string& at = cfg.at(s.param);
    size_t i = static_cast<size_t>(std::find(values.begin(), values.end(), at) - values.begin());
    std::vector<std::string> targets;
    if (mv.move == MoveDirection::kUp) {
      if (i != 0) continue;
      targets.assign(values.begin() + 1, values.end());
    } else if (mv.move == MoveDirection::kDown) {
      if (i + 1 != values.size()) continue;
      targets.assign(values.begin(), values.end() - 1);
    } else {
      if (at == *mv.value) continue;
      targets = {*mv.value};
    }
    for (const auto& v : targets) {
      ParamValues next = cfg;
      next[s.param] = v;
      if (valid.count(next)) return cfg;
    }
  }
  return std::nullopt;
}

TEST(BuiltinCards, EachParamsMoveIsWhatTheParamsGeneratorDoes) {
  int checked = 0;
  for (const auto& c : Builtin().cards) {
    for (size_t i = 0; i < c.params.size(); ++i) {
      const ParamMove& mv = c.params[i];
      SCOPED_TRACE(c.id + " params[" + std::to_string(i) + "]: " + mv.param + " " +
                   std::string(MoveDirectionName(mv.move)) + " when " + mv.when);
      // Retrieval, in the context the move's `when` describes, offers the card with this move.
      Retrieval r = Retrieve(Builtin(), MoveContext(c, mv));
      const RetrievedCard* got = nullptr;
      for (const auto& rc : r.cards)
        if (rc.card->id == c.id) got = &rc;
      ASSERT_NE(got, nullptr) << "not retrieved";
      auto m = std::find_if(got->moves.begin(), got->moves.end(), [&](const MatchedMove& x) { return x.index == i; });
      ASSERT_NE(m, got->moves.end()) << "retrieval does not match the move";

      // The params generator, offered the card with that move, moves the param that way.
      Space s = SpaceFor(c, mv);
      if (s.param.empty()) continue;
      auto parent = ParentFor(s, mv);
      ASSERT_TRUE(parent.has_value()) << "no parent in " << s.where << " from which " << s.param << " can move";
      OfferedSkill offered;
      offered.id = c.id;
      offered.intent = c.intent;
      offered.moves.push_back(
          {mv.param, std::string(MoveDirectionName(mv.move)), mv.value.value_or(""), mv.trigger, m->reason});
      ProposalContext ctx;
      ctx.parent_source = "// kernel";
      ctx.parent_source_name = "kernel.cu";
      ctx.parent_params = *parent;
      if (!mv.trigger_is_class) {
        Finding f;
        f.id = mv.trigger;
        ctx.findings = {f};
      } else {
        ctx.bottleneck = mv.trigger;
      }
      ctx.skills = {offered};
      ctx.k = 1;
      ctx.seed = 1;  // k = 1 with an odd seed: the one slot is the steered move
      auto drafts = ProposeParams(s.task, ctx);
      ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
      ASSERT_EQ(drafts->size(), 1u);
      const Draft& d = drafts->front();
      EXPECT_EQ(d.skills_applied, std::vector<std::string>{c.id}) << d.summary;
      const auto& values = std::find_if(s.task.params.begin(), s.task.params.end(), [&](const TunableParam& p) {
                             return p.name == s.param;
                           })->values;
      auto index = [&](const std::string& v) { return std::find(values.begin(), values.end(), v) - values.begin(); };
      for (const auto& [name, value] : d.params)
        if (name != s.param) {
          EXPECT_EQ(value, parent->at(name)) << "only " << s.param << " moves: " << d.summary;
        }
      const std::string& from = parent->at(s.param);
      const std::string& to = d.params.at(s.param);
      if (mv.move == MoveDirection::kUp) {
        EXPECT_GT(index(to), index(from)) << s.where << ": " << d.summary;
      }
      if (mv.move == MoveDirection::kDown) {
        EXPECT_LT(index(to), index(from)) << s.where << ": " << d.summary;
      }
      if (mv.move == MoveDirection::kSet) {
        EXPECT_EQ(to, *mv.value) << s.where << ": " << d.summary;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

// ---- what exercises each card -------------------------------------------------------------------

struct Exerciser {
  std::string card, path, marker;
};

// The rows of docs/skills.md's table "## What exercises each built-in card":
// | `card` | `path` | what | `marker` |
std::vector<Exerciser> ExerciseTable() {
  auto text = ReadFile(testing::SourceDir() / "docs" / "skills.md");
  EXPECT_TRUE(text.ok());
  if (!text.ok()) return {};
  size_t at = text->find("\n## What exercises each built-in card");
  EXPECT_NE(at, std::string::npos) << "docs/skills.md has no table of what exercises each card";
  if (at == std::string::npos) return {};
  size_t end = text->find("\n## ", at + 5);
  std::string section = text->substr(at, end == std::string::npos ? std::string::npos : end - at);
  static const std::regex kRow(R"(^\|\s*`([a-z0-9-]+)`\s*\|\s*`([^`]+)`\s*\|.*\|\s*`([^`]+)`\s*\|\s*$)");
  std::vector<Exerciser> rows;
  size_t pos = 0;
  while (pos < section.size()) {
    size_t nl = section.find('\n', pos);
    std::string line = section.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? section.size() : nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, kRow)) rows.push_back({m[1], m[2], m[3]});
  }
  return rows;
}

TEST(BuiltinCards, EachNamesAnExampleThatExistsAndAppliesIt) {
  std::vector<Exerciser> rows = ExerciseTable();
  ASSERT_FALSE(rows.empty());
  std::set<std::string> covered;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.card + " -> " + row.path);
    EXPECT_NE(Builtin().Find(row.card), nullptr) << "no built-in card " << row.card;
    fs::path file = testing::SourceDir() / row.path;
    auto text = ReadFile(file);
    ASSERT_TRUE(text.ok()) << row.path << " does not exist";
    EXPECT_NE(text->find(row.marker), std::string::npos) << row.path << " does not contain `" << row.marker << "`";
    // A candidate belongs to a task folder (examples/<kind>/<task>/candidates/…).
    if (file.parent_path().filename() == "candidates") {
      EXPECT_TRUE(fs::exists(file.parent_path().parent_path() / "task.toml")) << row.path;
    }
    covered.insert(row.card);
  }
  for (const auto& c : Builtin().cards)
    EXPECT_TRUE(covered.count(c.id)) << c.id << " is exercised by nothing in the table";
}

// README.md's "Writing a card" example is a complete, valid card, and its count of built-in cards
// is the library's.
TEST(BuiltinCards, TheReadmeExampleCardIsValid) {
  auto readme = ReadFile(testing::SourceDir() / "README.md");
  ASSERT_TRUE(readme.ok());
  const std::string open = "````markdown\n";
  size_t at = readme->find(open, readme->find("**Writing a card.**"));
  ASSERT_NE(at, std::string::npos) << "README.md has no ````markdown example card after **Writing a card.**";
  at += open.size();
  size_t end = readme->find("\n````\n", at);
  ASSERT_NE(end, std::string::npos);
  std::string text = readme->substr(at, end - at + 1);
  std::vector<SkillProblem> problems;
  auto card = ParseSkillCard(text, "README.md", "vector-stores-128bit", testing::TreeValidation(), &problems);
  EXPECT_TRUE(card.has_value()) << FormatProblems(problems);
  EXPECT_NE(readme->find("`skills/` holds " + std::to_string(Builtin().cards.size()) + " built-in cards"),
            std::string::npos)
      << "README.md's count of built-in cards is not " << Builtin().cards.size();
}

// The candidates written for cards no other example exercised are evaluated by the `cards` step
// of bench/gpu_session.sh.
TEST(BuiltinCards, TheGpuSessionEvaluatesEveryCandidateOfTheTable) {
  auto script = ReadFile(testing::SourceDir() / "bench" / "gpu_session.sh");
  ASSERT_TRUE(script.ok());
  size_t at = script->find("\n    cards)");
  ASSERT_NE(at, std::string::npos) << "bench/gpu_session.sh has no `cards` step";
  std::string step = script->substr(at, script->find(";;", at) - at);
  for (const auto& row : ExerciseTable()) {
    if (row.path.rfind("examples/cuda/", 0) != 0 || row.path.find("/candidates/") == std::string::npos) continue;
    std::string name = fs::path(row.path).filename().string();
    std::string task = fs::path(row.path).parent_path().parent_path().filename().string();
    EXPECT_NE(step.find(task + ":" + fs::path(name).stem().string()), std::string::npos)
        << "the cards step does not evaluate " << row.path;
  }
}

}  // namespace
}  // namespace kpilot
