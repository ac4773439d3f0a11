// Mining as `kpilot lineage` runs it: the walk, its cards, optional admission on a held-out task,
// the skill library's validation, and the cards written where loading finds them.
#include "core/fs.h"
#include "lineage/lineage.h"
#include "skills/skills.h"
#include "task/loader.h"

namespace kpilot::lineage {

namespace fs = std::filesystem;
using nlohmann::json;

Result<HeldOutTask> LoadHeldOutTask(const Task& mined, const std::string& dir, const std::string& from) {
  auto h = LoadTask(dir);
  if (!h.ok()) return h.status().WithContext("--admit-on");
  if (h->backend != mined.backend)
    return Status::InvalidInput("--admit-on " + dir + ": task " + h->name + " is a " +
                                std::string(BackendName(h->backend)) + " task and " + mined.name + " a " +
                                std::string(BackendName(mined.backend)) +
                                " one; the mined cards can only be admitted on a task of their backend");
  if (fs::weakly_canonical(h->dir) == fs::weakly_canonical(mined.dir))
    return Status::InvalidInput("--admit-on " + dir + " is the mined task itself; admission needs a held-out task");
  fs::path start = from.empty() ? h->reference.path : fs::path(from);
  auto text = ReadFile(start);
  if (!text.ok()) return text.status().WithContext("--admit-from");
  return HeldOutTask{*h, *text, start.filename().string()};
}

Result<MiningResult> LineageWalk::Mine(const std::string& expert_source, const MiningOptions& o) {
  MiningResult m;
  auto walked = Run(expert_source, o.walk);
  if (!walked.ok()) return walked.status();
  m.walk = std::move(walked).value();
  const LineageResult& res = m.walk;

  Provenance pv;
  pv.task = task_.name;
  pv.device = measure_.Device();
  pv.platform = measure_.Platform();
  pv.kpilot_version = o.walk.kpilot_version;
  pv.run_id = res.run_id;
  pv.language = task_.backend == Backend::kCuda ? "cuda" : "cpp";
  auto cards = CardsFromSteps(res.steps, pv);
  std::string chain = CheckCardChain(cards, res.naive_features, res.expert_features);
  if (!chain.empty()) return Status::Internal("the mined cards are inconsistent with the feature states: " + chain);

  // Admission: each card applied to the held-out start by the same generator, gated by the
  // harness; the measurement goes into the card's evidence either way.
  const HeldOutTask* held = o.held_out;
  if (held && !cards.empty()) {
    AdmissionOptions ao;
    ao.prompts_dir = o.walk.prompts_dir;
    ao.prompts_override = o.walk.prompts_override;
    ao.abi_header = o.walk.abi_header;
    ao.start_name = held->start_name;
    auto admitted = AdmitCards(cards, held->task, held->start, generator_, *o.held_out_measure, ao, store_, res.run_id,
                               transcripts_, progress_);
    if (!admitted.ok()) return admitted.status();
    m.admissions = std::move(admitted).value();
    Provenance hpv = pv;
    hpv.task = held->task.name;
    for (size_t i = 0; i < cards.size(); ++i) AddAdmissionEvidence(cards[i], m.admissions[i], hpv, held->start_name);
  }
  // Each card is checked by the skill library's validation before it is written; a problem is
  // reported, not hidden (a host card's platform is one until the format names host platforms).
  for (const auto& c : cards) {
    std::vector<SkillProblem> found;
    ParseSkillCard(RenderSkillCard(c), o.out / c.id / "SKILL.md", c.id, {o.finding_ids}, &found);
    for (const auto& p : found) {
      progress_.Event({{"event", "card_problem"}, {"card", c.id}, {"problem", p.ToString()}});
      m.card_problems.push_back(p.ToString());
    }
  }
  // Without admission every card goes to `out`; with it, the admitted ones do and the others go
  // to out/rejected/, which loading skips.
  const fs::path rejected_dir = o.out / kRejectedCardsFolder;
  std::vector<SkillCard> library_cards, rejected_cards;
  for (size_t i = 0; i < cards.size(); ++i)
    (m.admissions.empty() || m.admissions[i].admitted ? library_cards : rejected_cards).push_back(cards[i]);
  if (!library_cards.empty()) {
    auto w = WriteCards(library_cards, o.out);
    if (!w.ok()) return w.status();
    m.written = *w;
  }
  if (!rejected_cards.empty()) {
    auto w = WriteCards(rejected_cards, rejected_dir);
    if (!w.ok()) return w.status();
    m.rejected = *w;
  }
  json cards_json = json::array(), rejected_json = json::array();
  for (const auto& p : m.written) cards_json.push_back(p.string());
  for (const auto& p : m.rejected) rejected_json.push_back(p.string());
  if (held) {
    json list = json::array();
    for (const auto& ad : m.admissions)
      list.push_back({{"card", ad.card_id},
                      {"admitted", ad.admitted},
                      {"stage", ad.stage},
                      {"reason", ad.reason},
                      {"speedup", ad.comparison.speedup},
                      {"ci", {ad.comparison.ci.lo, ad.comparison.ci.hi}},
                      {"path", ((ad.admitted ? o.out : rejected_dir) / ad.card_id / "SKILL.md").string()}});
    m.admission = {{"task", held->task.name}, {"start", held->start_name}, {"cards", list}};
  }
  if (store_ && res.run_id > 0)
    (void)store_->AddRunEvent(
        res.run_id, "cards",
        json{{"out", o.out.string()}, {"cards", cards_json}, {"rejected", rejected_json}, {"admission", m.admission}}
            .dump());
  return m;
}

}  // namespace kpilot::lineage
