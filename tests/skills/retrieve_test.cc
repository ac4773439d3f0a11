// Retrieval on constructed libraries and contexts: filters, tune-only, ranking by triggers, BM25
// and hit rate, move conditions; and on the built-in library.
#include <gtest/gtest.h>

#include "skills_test_util.h"

namespace kpilot {
namespace {

SkillCard Card(const std::string& id) {
  SkillCard c;
  c.id = c.name = id;
  c.intent = "Do " + id + ".";
  c.description = "A card.";
  c.scope_languages = {"cuda"};
  c.scope_platforms = {"sm_80", "sm_90a"};
  c.provides = {"smem-tile"};
  return c;
}

ParamMove Move(const std::string& param, const std::string& trigger, std::vector<std::string> alternatives = {}) {
  ParamMove mv;
  mv.param = param;
  mv.move = MoveDirection::kUp;
  mv.trigger = trigger;
  mv.when = trigger;
  mv.trigger_is_class = trigger.ends_with("-bound") || trigger == "mixed";
  if (!alternatives.empty()) mv.condition = MoveCondition{"", "", std::move(alternatives)};
  return mv;
}

SkillLibrary Library(std::vector<SkillCard> cards) {
  std::sort(cards.begin(), cards.end(), [](const SkillCard& a, const SkillCard& b) { return a.id < b.id; });
  return SkillLibrary{std::move(cards), {}};
}

std::vector<std::string> Ids(const Retrieval& r) {
  std::vector<std::string> ids;
  for (const auto& c : r.cards) ids.push_back(c.card->id);
  return ids;
}

std::string ExclusionOf(const Retrieval& r, const std::string& id) {
  for (const auto& e : r.excluded)
    if (e.id == id) return e.reason;
  return "";
}

// A card whose scope names element types is offered only to tasks with one of them: a
// tensor-core card never to an f32 GEMM (whose tile moves it would otherwise steer).
TEST(Retrieve, FiltersByElementType) {
  SkillCard mma = Card("tensor-cores");
  mma.scope_dtypes = {"f16", "bf16"};
  SkillCard plain = Card("plain");
  SkillLibrary lib = Library({mma, plain});
  RetrievalContext ctx;
  ctx.dtypes = {"f32"};
  Retrieval r = Retrieve(lib, ctx);
  EXPECT_EQ(Ids(r), std::vector<std::string>{"plain"});
  EXPECT_EQ(ExclusionOf(r, "tensor-cores"), "element types f32 not in scope [f16, bf16]");
  ctx.dtypes = {"bf16", "f32"};  // bf16 inputs, f32 output
  EXPECT_EQ(Retrieve(lib, ctx).cards.size(), 2u);
  ctx.dtypes = {};  // unknown: not filtered
  EXPECT_EQ(Retrieve(lib, ctx).cards.size(), 2u);

  // The built-in tensor-core cards say so; an unknown element type is a validation error.
  auto builtin = LoadLibrary({{testing::SourceDir() / "skills", SkillOrigin::kBuiltin}}, testing::TreeValidation());
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  for (const char* id : {"mma-sync-tensor-cores", "wgmma-cute"}) {
    const SkillCard* c = builtin->Find(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_FALSE(std::count(c->scope_dtypes.begin(), c->scope_dtypes.end(), "f32")) << id;
    EXPECT_TRUE(std::count(c->scope_dtypes.begin(), c->scope_dtypes.end(), "bf16")) << id;
  }
}

TEST(Retrieve, FiltersByScopeRequiresAndConflicts) {
  SkillCard hopper = Card("hopper-only");
  hopper.scope_platforms = {"sm_90a"};
  SkillCard host = Card("host-only");
  host.scope_languages = {"cpp"};
  SkillCard needs = Card("needs-tiles");
  needs.requires_features = {"smem-tile", "coalesced-global"};
  needs.provides = {"smem-conflict-free"};
  SkillCard clash = Card("clashes");
  clash.conflicts = {"tma"};
  SkillCard plain = Card("plain");
  SkillLibrary lib = Library({hopper, host, needs, clash, plain});

  RetrievalContext ctx;
  ctx.platform = "sm_80";
  ctx.language = "cuda";
  ctx.features = {"coalesced-global", "tma"};
  Retrieval r = Retrieve(lib, ctx);
  EXPECT_EQ(Ids(r), std::vector<std::string>{"plain"});
  EXPECT_EQ(ExclusionOf(r, "hopper-only"), "platform sm_80 not in scope [sm_90a]");
  EXPECT_EQ(ExclusionOf(r, "host-only"), "language cuda not in scope [cpp]");
  EXPECT_EQ(ExclusionOf(r, "needs-tiles"), "requires smem-tile (absent)");
  EXPECT_EQ(ExclusionOf(r, "clashes"), "conflicts with tma (present)");

  ctx.platform = "sm_90a";
  ctx.features = {"coalesced-global", "smem-tile"};
  r = Retrieve(lib, ctx);
  // The others provide smem-tile, which is present, and have no move: nothing to offer.
  EXPECT_EQ(Ids(r), std::vector<std::string>{"needs-tiles"});
  EXPECT_EQ(ExclusionOf(r, "plain"), "provides smem-tile (present) and no params move matches");

  ctx = {};                                        // no platform, language or features: nothing is filtered
  EXPECT_EQ(Retrieve(lib, ctx).cards.size(), 4u);  // needs-tiles still requires features
}

TEST(Retrieve, CardsWhoseFeaturesArePresentAreTuneOnly) {
  SkillCard tiles = Card("tiles");
  tiles.params = {Move("tile", "low-cache-hit-rate"), Move("block", "compute-bound")};
  SkillLibrary lib = Library({tiles});
  RetrievalContext ctx;
  ctx.features = {"smem-tile"};
  ctx.findings = {{"low-cache-hit-rate", {}, ""}};
  Retrieval r = Retrieve(lib, ctx);
  ASSERT_EQ(r.cards.size(), 1u);
  EXPECT_TRUE(r.cards[0].tune_only);
  ASSERT_EQ(r.cards[0].moves.size(), 1u);
  EXPECT_EQ(r.cards[0].moves[0].index, 0u);
  EXPECT_EQ(r.cards[0].moves[0].reason, "finding low-cache-hit-rate");
  EXPECT_NE(r.cards[0].reason.find("tune-only"), std::string::npos);

  RetrieveOptions no_tuning;
  no_tuning.include_tune_only = false;
  EXPECT_TRUE(Retrieve(lib, ctx, no_tuning).cards.empty());

  ctx.features.clear();  // a new technique: offered, not tune-only
  r = Retrieve(lib, ctx);
  ASSERT_EQ(r.cards.size(), 1u);
  EXPECT_FALSE(r.cards[0].tune_only);

  ctx.features = {"smem-tile"};
  ctx.findings.clear();
  ctx.roofline_class = "compute-bound";  // the class move applies instead
  r = Retrieve(lib, ctx);
  ASSERT_EQ(r.cards.size(), 1u);
  ASSERT_EQ(r.cards[0].moves.size(), 1u);
  EXPECT_EQ(r.cards[0].moves[0].index, 1u);
}

TEST(Retrieve, EarlierFindingsWeighMoreAndClassLess) {
  SkillCard first = Card("zz-first");  // ids sort against the expected order,
  first.trigger_findings = {"dominant-warp-stall"};
  SkillCard second = Card("yy-second");  // so only the scores can order them
  second.trigger_findings = {"tail-effect"};
  SkillCard cls = Card("xx-class");
  cls.trigger_classes = {"memory-bound"};
  SkillCard both = Card("ww-both");
  both.trigger_findings = {"tail-effect", "register-spills"};
  both.trigger_classes = {"memory-bound"};
  SkillCard none = Card("aa-none");
  SkillLibrary lib = Library({first, second, cls, both, none});
  RetrievalContext ctx;
  ctx.findings = {{"dominant-warp-stall", {}, ""}, {"tail-effect", {}, ""}, {"register-spills", {}, ""}};
  ctx.roofline_class = "memory-bound";
  Retrieval r = Retrieve(lib, ctx);
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"ww-both", "zz-first", "yy-second", "xx-class", "aa-none"}));
  EXPECT_DOUBLE_EQ(r.cards[0].trigger_score, 2 + 1 + 0.5);
  EXPECT_EQ(r.cards[0].matched_findings, (std::vector<std::string>{"tail-effect", "register-spills"}));
  EXPECT_DOUBLE_EQ(r.cards[1].trigger_score, 3);
  EXPECT_DOUBLE_EQ(r.cards[3].trigger_score, 0.5);
  EXPECT_TRUE(r.cards[3].class_matched);
  EXPECT_DOUBLE_EQ(r.cards[4].trigger_score, 0);
  EXPECT_NE(r.cards[1].reason.find("trigger 3 (dominant-warp-stall)"), std::string::npos) << r.cards[1].reason;

  RetrieveOptions two;
  two.limit = 2;
  EXPECT_EQ(Ids(Retrieve(lib, ctx, two)), (std::vector<std::string>{"ww-both", "zz-first"}));
}

TEST(Retrieve, TextRelevanceOrdersEqualTriggers) {
  SkillCard softmax = Card("b-softmax");
  softmax.description = "Fuse the max and sum passes of softmax over rows with online rescaling.";
  SkillCard gemm = Card("a-gemm");
  gemm.description = "Stage GEMM operand tiles in shared memory.";
  gemm.scope_cases = {"matrix multiply"};
  SkillCard other = Card("c-other");
  other.description = "Replace a CUDA graph of launches.";
  SkillLibrary lib = Library({softmax, gemm, other});
  RetrievalContext ctx;
  ctx.task_text = "row softmax over f32 rows";
  EXPECT_EQ(Ids(Retrieve(lib, ctx)), (std::vector<std::string>{"b-softmax", "a-gemm", "c-other"}));
  ctx.task_text = "matrix multiply (GEMM), bf16";
  Retrieval r = Retrieve(lib, ctx);
  EXPECT_EQ(r.cards[0].card->id, "a-gemm");
  EXPECT_GT(r.cards[0].bm25, 0);
  EXPECT_DOUBLE_EQ(r.cards[2].bm25, 0);
  // Finding guidance is part of the query.
  ctx.task_text.clear();
  ctx.findings = {{"launch-overhead", {}, "replay the launches from a CUDA graph"}};
  EXPECT_EQ(Retrieve(lib, ctx).cards[0].card->id, "c-other");
}

TEST(Retrieve, Bm25FavoursRareTermsAndShortDocuments) {
  std::vector<double> s =
      Bm25Scores({"shared memory tiles", "shared memory tiles for a long long long GEMM kernel text",
                  "warp shuffle reduction", "the of and"},
                 "Shared tiles");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_GT(s[0], s[1]);  // same terms, shorter document
  EXPECT_GT(s[1], 0);
  EXPECT_DOUBLE_EQ(s[2], 0);
  EXPECT_DOUBLE_EQ(s[3], 0);
  s = Bm25Scores({"warp shuffle", "warp tiles", "warp block"}, "warp shuffle");
  EXPECT_GT(s[0], s[1]);  // "shuffle" is rare, "warp" is in every document
  EXPECT_DOUBLE_EQ(s[1], s[2]);
  EXPECT_TRUE(Bm25Scores({}, "x").empty());
}

TEST(Retrieve, HitRateBreaksTiesThenId) {
  SkillLibrary lib = Library({Card("a-card"), Card("b-card")});
  RetrievalContext ctx;
  EXPECT_EQ(Ids(Retrieve(lib, ctx)), (std::vector<std::string>{"a-card", "b-card"}));
  std::map<std::string, UsageStats> usage;
  usage["b-card"] = {"card", "b-card", 4, 4, 3, 4, 1.1};
  usage["a-card"] = {"card", "a-card", 4, 4, 1, 4, 1.0};
  RetrieveOptions options;
  options.usage = &usage;
  Retrieval r = Retrieve(lib, ctx, options);
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"b-card", "a-card"}));
  EXPECT_DOUBLE_EQ(r.cards[0].hit_rate, 4.0 / 6);
  EXPECT_DOUBLE_EQ(r.cards[1].hit_rate, 2.0 / 6);
  EXPECT_NE(r.cards[0].reason.find("hit rate 0.67 (3 of 4 applied improved)"), std::string::npos) << r.cards[0].reason;
  // An unmeasured card ranks above one that never helped.
  usage.erase("b-card");
  EXPECT_EQ(Ids(Retrieve(lib, ctx, options)), (std::vector<std::string>{"b-card", "a-card"}));
}

TEST(Retrieve, MoveConditionsMatchEvidence) {
  SkillCard c = Card("moves");
  c.params = {Move("stages", "dominant-warp-stall", {"long_scoreboard", "lg_throttle"}),
              Move("block", "occupancy-limiter", {"shared memory"}), Move("unroll", "register-spills")};
  SkillLibrary lib = Library({c});
  RetrievalContext ctx;
  ctx.findings = {{"dominant-warp-stall", {"lg_throttle"}, ""}, {"occupancy-limiter", {"limiter: shared_memory"}, ""}};
  Retrieval r = Retrieve(lib, ctx);
  ASSERT_EQ(r.cards.size(), 1u);
  ASSERT_EQ(r.cards[0].moves.size(), 2u);
  EXPECT_EQ(r.cards[0].moves[0].index, 0u);
  EXPECT_NE(r.cards[0].moves[0].reason.find("evidence `lg_throttle`"), std::string::npos);
  EXPECT_EQ(r.cards[0].moves[1].index, 1u);

  ctx.findings = {{"dominant-warp-stall", {"barrier"}, ""}, {"occupancy-limiter", {"limiter: registers"}, ""}};
  EXPECT_TRUE(Retrieve(lib, ctx).cards[0].moves.empty());

  ctx.findings = {{"dominant-warp-stall", {}, ""}};  // no evidence: the condition cannot be checked
  r = Retrieve(lib, ctx);
  ASSERT_EQ(r.cards[0].moves.size(), 1u);
  EXPECT_NE(r.cards[0].moves[0].reason.find("not checked"), std::string::npos);
}

TEST(Retrieve, BuiltinLibraryOnAStridedMemoryBoundKernel) {
  auto lib = LoadLibrary({{testing::SourceDir() / "skills", SkillOrigin::kBuiltin}}, testing::TreeValidation());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  RetrievalContext ctx;
  ctx.findings = {
      {"uncoalesced-global-access", {}, "sectors per request are high: make lanes touch adjacent addresses"},
      {"dominant-warp-stall", {"long_scoreboard"}, ""}};
  ctx.roofline_class = "memory-bound";
  ctx.task_text = "transpose of an f32 matrix";
  ctx.platform = "sm_80";
  ctx.language = "cuda";
  Retrieval r = Retrieve(*lib, ctx);
  ASSERT_GE(r.cards.size(), 3u);
  std::vector<std::string> top = {r.cards[0].card->id, r.cards[1].card->id, r.cards[2].card->id};
  EXPECT_NE(std::find(top.begin(), top.end(), "coalescing"), top.end()) << r.cards[0].reason;
  EXPECT_NE(ExclusionOf(r, "tma-bulk-copy").find("platform sm_80"), std::string::npos);
  EXPECT_NE(ExclusionOf(r, "wgmma-cute"), "");
  // Deterministic: the same call gives the same order.
  EXPECT_EQ(Ids(Retrieve(*lib, ctx)), Ids(r));
  nlohmann::json j = ToJson(r.cards[0]);
  EXPECT_EQ(j["id"], r.cards[0].card->id);
  EXPECT_TRUE(j.contains("bm25"));
}

// A text-only card (a plain Agent Skill) is offered by the relevance of its description alone,
// whatever the platform or language, and never when the generator applies moves only.
TEST(Retrieve, TextOnlyCardsByDescription) {
  SkillCard plain;
  plain.id = plain.name = "warp-notes";
  plain.description = "Warp shuffles for row reductions in softmax kernels.";
  plain.intent = plain.description;
  plain.text_only = true;
  SkillLibrary lib = Library({Card("tiles"), plain});
  RetrievalContext ctx;
  ctx.platform = "sm_90a";
  ctx.language = "cuda";
  ctx.task_text = "row softmax over a matrix: a reduction per row";
  auto offered = [&](const RetrieveOptions& o) {
    std::vector<std::string> ids = Ids(Retrieve(lib, ctx, o));
    return std::find(ids.begin(), ids.end(), "warp-notes") != ids.end();
  };
  EXPECT_TRUE(offered({}));
  RetrieveOptions params_only;
  params_only.text_only = false;
  EXPECT_FALSE(offered(params_only));
  ctx.task_text = "gemm with tensor cores";  // no term in common
  EXPECT_FALSE(offered({}));
}

}  // namespace
}  // namespace kpilot
