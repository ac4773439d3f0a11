// The gate's pure logic: reply parsing, the declaration check, the line diff and citation check,
// the 0.99 round-trip rule, and the cards (reversal, chain consistency, YAML rendering).
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "card_check.h"
#include "core/fs.h"
#include "lineage/lineage.h"
#include "test_paths.h"

namespace kpilot::lineage {
namespace {

const FeatureSet kVocab = {"smem-tile", "register-tile", "vector-global-128", "unrolled-loops", "warp-reduce"};

Proposal Declared(const std::string& feature, FeatureSet before, FeatureSet after) {
  Proposal p;
  p.feature = feature;
  p.locus = "the k loop";
  p.before_features = std::move(before);
  p.after_features = std::move(after);
  p.card.intent = "Add it.";
  p.card.description = "It.";
  p.card.expected_effect = "Faster.";
  p.card.preconditions = {{"a tile", "no reuse without it"}};
  p.card.risks = {"spills"};
  p.card.trigger_classes = {"compute-bound"};
  return p;
}

TEST(LineageDeclaration, ExactlyOneDeclaredFeatureRemovedPasses) {
  EXPECT_EQ(
      CheckDeclaration(Declared("register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}), kVocab, std::nullopt),
      "");
  EXPECT_EQ(CheckDeclaration(Declared("register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}), kVocab,
                             FeatureSet{"smem-tile", "register-tile"}),
            "");
}

TEST(LineageDeclaration, RejectsNothingRemovedTwoRemovedAndOtherMismatches) {
  EXPECT_NE(CheckDeclaration(Declared("register-tile", {"register-tile"}, {"register-tile"}), kVocab, std::nullopt)
                .find("nothing removed"),
            std::string::npos);
  EXPECT_NE(CheckDeclaration(Declared("register-tile", {"smem-tile", "register-tile"}, {}), kVocab, std::nullopt)
                .find("several mechanisms removed"),
            std::string::npos);
  EXPECT_NE(CheckDeclaration(Declared("smem-tile", {"smem-tile", "register-tile"}, {"smem-tile"}), kVocab, std::nullopt)
                .find("not the declared feature"),
            std::string::npos);
  EXPECT_NE(CheckDeclaration(Declared("register-tile", {"register-tile"}, {"warp-reduce"}), kVocab, std::nullopt)
                .find("must not add"),
            std::string::npos)
      << "register-tile gone and warp-reduce added";
  EXPECT_NE(CheckDeclaration(Declared("register-tile", {"register-tile", "warp-reduce"}, {"warp-reduce", "smem-tile"}),
                             kVocab, std::nullopt)
                .find("must not add"),
            std::string::npos);
  EXPECT_NE(CheckDeclaration(Declared("tiling", {"tiling"}, {}), kVocab, std::nullopt).find("not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(CheckDeclaration(Declared("register-tile", {"register-tile"}, {}), kVocab, FeatureSet{"smem-tile"})
                .find("differ from the current kernel's features"),
            std::string::npos);
  EXPECT_NE(
      CheckDeclaration(Declared("register-tile", {"smem-tile"}, {}), kVocab, std::nullopt).find("not among before"),
      std::string::npos);
}

TEST(LineageDeclaration, ChecksTheDraftCard) {
  Proposal p = Declared("register-tile", {"smem-tile", "register-tile"}, {"smem-tile"});
  p.card.requires_features = {"warp-reduce"};
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt).find("requires warp-reduce"), std::string::npos);
  p = Declared("register-tile", {"smem-tile", "register-tile"}, {"smem-tile"});
  p.card.conflicts = {"smem-tile"};
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt).find("conflicts with smem-tile"), std::string::npos);
  p = Declared("register-tile", {"register-tile"}, {});
  p.card.trigger_classes = {"slow"};
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt).find("not a roofline class"), std::string::npos);
  p = Declared("register-tile", {"register-tile"}, {});
  p.card.trigger_findings = {"made-up"};
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt, {"tail-effect"}).find("made-up"), std::string::npos);
  EXPECT_EQ(CheckDeclaration(p, kVocab, std::nullopt), "") << "no known ids given: findings are not checked";
  p = Declared("register-tile", {"register-tile"}, {});
  p.card.preconditions = {{"a tile", ""}};
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt).find("what and why"), std::string::npos);
  p.card.preconditions.clear();
  EXPECT_NE(CheckDeclaration(p, kVocab, std::nullopt).find("no precondition"), std::string::npos);
}

TEST(LineageReplies, ParsesAProposalWithItsKernel) {
  std::string reply =
      "Summary: drop the tile\n```json\n{\"mechanism\": \"tile\", \"feature\": \"smem-tile\", "
      "\"locus\": \"k loop\", \"before_features\": [\"smem-tile\"], \"after_features\": [], "
      "\"reference_features\": [], \"card\": {\"id\": \"smem\", \"intent\": \"Add it.\", "
      "\"preconditions\": [{\"what\": \"w\", \"why\": \"y\"}], \"triggers\": {\"classes\": "
      "[\"memory-bound\"]}}}\n```\n```cpp\n#include <kpilot/kernel.h>\nKPILOT_EXPORT int "
      "kpilot_launch(const kpilot_tensor*, int, const kpilot_tensor*, int, const kpilot_scalar*, int, "
      "void*) { return 0; }\n```\n";
  auto p = ParseProposal(reply);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE(p->naive);
  EXPECT_EQ(p->feature, "smem-tile");
  EXPECT_EQ(p->before_features, FeatureSet{"smem-tile"});
  ASSERT_TRUE(p->reference_features.has_value());
  EXPECT_TRUE(p->reference_features->empty());
  EXPECT_EQ(p->card.id, "smem");
  ASSERT_EQ(p->card.preconditions.size(), 1u);
  EXPECT_EQ(p->card.trigger_classes, std::vector<std::string>{"memory-bound"});
  EXPECT_NE(p->source.find("kpilot_launch"), std::string::npos);
  EXPECT_EQ(p->summary, "drop the tile");
}

TEST(LineageReplies, SaysWhatIsMissing) {
  EXPECT_NE(ParseProposal("no json here").status().message().find("no ```json block"), std::string::npos);
  EXPECT_NE(ParseProposal("```json\n{bad\n```").status().message().find("not valid JSON"), std::string::npos);
  auto naive = ParseProposal("Summary: nothing left\n```json\n{\"naive\": true}\n```");
  ASSERT_TRUE(naive.ok());
  EXPECT_TRUE(naive->naive);
  EXPECT_NE(
      ParseProposal("```json\n{\"feature\": \"smem-tile\", \"locus\": \"x\", \"before_features\": [\"smem-tile\"], "
                    "\"after_features\": []}\n```")
          .status()
          .message()
          .find("no simplified kernel"),
      std::string::npos);
  auto c = ParseCitations(
      "```json\n{\"removes\": [\"smem-tile\"], \"citations\": [{\"side\": \"left\", \"line\": 3}]}\n```");
  EXPECT_NE(c.status().message().find("\"before\" or \"after\""), std::string::npos);
}

const char* kBefore = "int f() {\n  int x = 0;\n  __shared__ float tile[32];\n  x += load(tile);\n  return x;\n}\n";
const char* kAfter = "int f() {\n  int x = 0;\n  x += load_global();\n  return x;\n}\n";

TEST(LineageCitations, DiffMarksRemovedAndAddedLines) {
  LineDiff d = DiffLines(kBefore, kAfter);
  EXPECT_EQ(d.removed, (std::set<int>{3, 4}));
  EXPECT_EQ(d.added, (std::set<int>{3}));
  EXPECT_EQ(LineOf(kBefore, 3).value_or(""), "  __shared__ float tile[32];");
  EXPECT_FALSE(LineOf(kBefore, 99).has_value());
}

TEST(LineageCitations, MatchingCitationsPass) {
  CitationReply c;
  c.removes = {"smem-tile"};
  c.citations = {{"before", 3, "__shared__   float tile[32];"}, {"after", 3, "x += load_global();"}};
  EXPECT_EQ(CheckCitations(c, "smem-tile", kBefore, kAfter), "") << "blanks are not significant";
}

TEST(LineageCitations, RejectsCitationsThatDoNotMatchTheCode) {
  CitationReply c;
  c.removes = {"smem-tile"};
  c.citations = {{"before", 3, "__shared__ float tile[64];"}};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("does not match the code"), std::string::npos);
  c.citations = {{"before", 40, "x"}};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("no such line"), std::string::npos);
  c.citations = {{"before", 2, "int x = 0;"}};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("did not remove"), std::string::npos)
      << "an unchanged line proves nothing";
  c.citations = {{"after", 3, "x += load_global();"}};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("no citation of the before source"),
            std::string::npos);
  c.citations = {{"before", 3, "__shared__ float tile[32];"}};
  c.removes = {"smem-tile", "register-tile"};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("not exactly"), std::string::npos);
  c.removes = {};
  EXPECT_NE(CheckCitations(c, "smem-tile", kBefore, kAfter).find("not exactly"), std::string::npos);
}

TEST(LineageRoundTrip, EveryTrialMustReachTheMinimum) {
  EXPECT_TRUE(JudgeRoundTrip({0.995, 0.995, 0.995}).passed);
  EXPECT_TRUE(JudgeRoundTrip({0.99, 1.2}).passed) << "0.99 itself is enough";
  RoundTripDecision d = JudgeRoundTrip({0.995, 0.98, 1.05});
  EXPECT_FALSE(d.passed);
  EXPECT_DOUBLE_EQ(d.worst, 0.98);
  EXPECT_NE(d.reason.find("trial 2 of 3"), std::string::npos) << d.reason;
  EXPECT_FALSE(JudgeRoundTrip({}).passed);
  EXPECT_FALSE(JudgeRoundTrip({std::nan("")}).passed);
  EXPECT_TRUE(JudgeRoundTrip({0.6}, 0.5).passed);
}

TEST(LineageVocabulary, ReadsTheSkillsReadmeTable) {
  auto v = LoadFeatureVocabulary(testing::SourceDir() / "skills" / "README.md");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->count("smem-tile"));
  EXPECT_TRUE(v->count("register-tile"));
  EXPECT_TRUE(v->count("readonly-loads"));
  EXPECT_FALSE(v->count("feature")) << "the header row is not a feature";
  auto bad = LoadFeatureVocabulary(testing::SourceDir() / "README.md");
  EXPECT_FALSE(bad.ok());
}

Step MakeStep(int index, const std::string& feature, FeatureSet before, FeatureSet after, std::string before_src,
              std::string after_src) {
  Step s;
  s.index = index;
  s.proposal = Declared(feature, std::move(before), std::move(after));
  s.proposal.card.id = feature == "smem-tile" ? "Shared Tiles!" : "";
  s.proposal.card.recipe = {"Stage the tile.", "Sync."};
  s.proposal.card.conflicts = {"warp-reduce"};
  s.proposal.source = std::move(after_src);
  s.before_source = std::move(before_src);
  s.before_name = fmt::format("state{}", index - 1);
  s.after_name = fmt::format("state{}", index);
  s.effect = 1.5;
  s.effect_ci = {1.4, 1.6};
  s.round_trip = {1.0, 0.995};
  s.date = "2025-01-02";
  return s;
}

Provenance Prov() { return {"sgemm", "NVIDIA H200 (sm_90a)", "sm_90a", "kpilot 0.1.0", 7, "cuda"}; }

TEST(LineageCards, ReversedIntoNaiveToExpertOrderWithConsistentFeatures) {
  // Expert {smem-tile, register-tile} → remove register-tile → remove smem-tile → naive {}.
  std::vector<Step> steps = {
      MakeStep(1, "register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}, kBefore, kAfter),
      MakeStep(2, "smem-tile", {"smem-tile"}, {}, kAfter, "int f() { return 0; }\n")};
  auto cards = CardsFromSteps(steps, Prov());
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[0].id, "shared-tiles") << "the last removal is the first card; ids are kebab-cased";
  EXPECT_EQ(cards[1].id, "register-tile") << "no draft id: the feature's name";
  EXPECT_EQ(cards[0].front["provides"], nlohmann::ordered_json({"smem-tile"}));
  EXPECT_EQ(cards[1].front["requires"], nlohmann::ordered_json({"smem-tile"})) << "the simpler state, nothing named";
  EXPECT_EQ(cards[1].front["conflicts"], nlohmann::ordered_json({"warp-reduce"}));
  const auto& m = cards[1].front["effect"]["measured"][0];
  EXPECT_EQ(m["provenance"]["task"], "sgemm");
  EXPECT_EQ(m["provenance"]["device"], "NVIDIA H200 (sm_90a)");
  EXPECT_EQ(m["provenance"]["date"], "2025-01-02");
  EXPECT_EQ(m["provenance"]["kpilot_version"], "kpilot 0.1.0");
  EXPECT_EQ(m["provenance"]["run"], 7);
  EXPECT_DOUBLE_EQ(m["paired_speedup"].get<double>(), 1.5);
  EXPECT_EQ(CheckCardChain(cards, {}, {"smem-tile", "register-tile"}), "");
  EXPECT_NE(CheckCardChain({cards[1], cards[0]}, {}, {"smem-tile", "register-tile"}).find("requires smem-tile"),
            std::string::npos);
  EXPECT_NE(CheckCardChain(cards, {}, {"smem-tile"}).find("instead of the expert's"), std::string::npos);
  EXPECT_NE(CheckCardChain(cards, {"smem-tile"}, {"smem-tile", "register-tile"}).find("already has"),
            std::string::npos);
  // The Before/After fragment is the changed code, simpler first.
  EXPECT_NE(cards[1].body.find("x += load_global();"), std::string::npos);
  EXPECT_NE(cards[1].body.find("__shared__ float tile[32];"), std::string::npos);
}

TEST(LineageCards, AMechanismThatWasSlowerWhereItWasMinedSaysSoFirstUnderRisks) {
  Step s = MakeStep(1, "register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}, kBefore, kAfter);
  s.proposal.card.risks = {"Spills at large tiles."};
  auto faster = CardsFromSteps({s}, Prov());
  ASSERT_EQ(faster.size(), 1u);
  EXPECT_EQ(faster[0].front["risks"], nlohmann::ordered_json({"Spills at large tiles."}));
  s.effect = 0.883;
  s.effect_ci = {0.869, 0.890};
  auto slower = CardsFromSteps({s}, Prov());
  ASSERT_EQ(slower[0].front["risks"].size(), 2u);
  const std::string first = slower[0].front["risks"][0];
  EXPECT_NE(first.find("Slower where it was mined"), std::string::npos) << first;
  EXPECT_NE(first.find("0.883× [0.869, 0.890]"), std::string::npos) << first;
  EXPECT_NE(first.find("sgemm on NVIDIA H200 (sm_90a)"), std::string::npos) << first;
  EXPECT_EQ(slower[0].front["risks"][1], "Spills at large tiles.");
  s.effect_ci = {0.95, 1.01};  // slower on average, but the CI reaches 1: no claim
  EXPECT_EQ(CardsFromSteps({s}, Prov())[0].front["risks"].size(), 1u);
}

TEST(LineageCards, DuplicateIdsGetASuffix) {
  std::vector<Step> steps = {
      MakeStep(1, "register-tile", {"register-tile", "unrolled-loops"}, {"unrolled-loops"}, kBefore, kAfter),
      MakeStep(2, "unrolled-loops", {"unrolled-loops"}, {}, kAfter, "x\n")};
  steps[0].proposal.card.id = steps[1].proposal.card.id = "same";
  auto cards = CardsFromSteps(steps, Prov());
  EXPECT_EQ(cards[0].id, "same");
  EXPECT_EQ(cards[1].id, "same-2");
}

TEST(LineageCards, YamlParsesBackToTheFrontMatterAndPassesValidation) {
  Step s = MakeStep(1, "register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}, kBefore, kAfter);
  s.proposal.card.description = "Quotes \" and colons: and\nnewlines, # hashes, - dashes, 'single', ×, \\ backslash";
  s.proposal.card.trigger_findings = {"tail-effect"};
  auto dir = TempDir::Create("kpilot-lineage-cards-");
  ASSERT_TRUE(dir.ok());
  auto cards = CardsFromSteps({s}, Prov());
  ASSERT_TRUE(WriteCards(cards, dir->path()).ok());
  auto library = testing::SkillLibraryProblems(dir->path());
  EXPECT_TRUE(library.empty()) << ::testing::PrintToString(library);
  if (!testing::HavePyYaml()) GTEST_SKIP() << "python3 with PyYAML is needed for the YAML round trip";
  std::string parsed;
  auto problems = testing::SkillsCheckProblems(dir->path(), &parsed);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  auto j = nlohmann::json::parse(parsed);
  EXPECT_EQ(j["register-tile"], nlohmann::json::parse(cards[0].front.dump())) << RenderSkillCard(cards[0]);
}

TEST(LineageAdmission, AdmittedOnlyWhenCorrectAndTheCiIsAbove1) {
  Comparison c;
  c.passed = true;
  c.verdict = "passed";
  c.speedup = 1.8;
  c.ci = {1.7, 1.9};
  AdmissionDecision d = JudgeAdmission(c, "reference.cpp");
  EXPECT_TRUE(d.admitted);
  EXPECT_NE(d.reason.find("1.800x [1.700, 1.900]"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("over reference.cpp"), std::string::npos) << d.reason;
  c.speedup = 1.02;
  c.ci = {0.99, 1.05};  // faster on average, but the CI reaches 1
  d = JudgeAdmission(c, "start.cpp");
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("not above 1"), std::string::npos) << d.reason;
  c.ci = {1.0, 1.05};  // the bound must be above 1, not at it
  EXPECT_FALSE(JudgeAdmission(c, "start.cpp").admitted);
  c.passed = false;
  c.verdict = "incorrect";
  c.summary = "y differs at 3 of 100 elements";
  c.ci = {1.5, 1.6};
  d = JudgeAdmission(c, "start.cpp");
  EXPECT_FALSE(d.admitted) << "a fast wrong kernel is not admitted";
  EXPECT_NE(d.reason.find("incorrect: y differs"), std::string::npos) << d.reason;
}

TEST(LineageAdmission, TheMeasurementGoesIntoTheCardsEvidenceAndStaysValid) {
  Step s = MakeStep(1, "register-tile", {"smem-tile", "register-tile"}, {"smem-tile"}, kBefore, kAfter);
  auto cards = CardsFromSteps({s}, Prov());
  Admission a;
  a.card_id = cards[0].id;
  a.stage = "measure";
  a.comparison.passed = true;
  a.comparison.verdict = "passed";
  a.comparison.speedup = 0.5;
  a.comparison.ci = {0.45, 0.55};
  a.reason = JudgeAdmission(a.comparison, "reference.cu").reason;
  Provenance held = Prov();
  held.task = "layernorm";
  AddAdmissionEvidence(cards[0], a, held, "reference.cu");
  const auto& measured = cards[0].front["effect"]["measured"];
  ASSERT_EQ(measured.size(), 2u) << "the lineage step's entry, then the admission's";
  EXPECT_EQ(measured[1]["provenance"]["source"], "kpilot lineage --admit-on");
  EXPECT_EQ(measured[1]["provenance"]["task"], "layernorm");
  EXPECT_EQ(measured[1]["provenance"]["from"], "reference.cu");
  EXPECT_EQ(measured[1]["admitted"], false);
  EXPECT_DOUBLE_EQ(measured[1]["paired_speedup"].get<double>(), 0.5);
  EXPECT_NE(measured[1]["reason"].get<std::string>().find("not above 1"), std::string::npos);
  auto dir = TempDir::Create("kpilot-lineage-admit-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteCards(cards, dir->path()).ok());
  auto library = testing::SkillLibraryProblems(dir->path());
  EXPECT_TRUE(library.empty()) << ::testing::PrintToString(library);
}

}  // namespace
}  // namespace kpilot::lineage
