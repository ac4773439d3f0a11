// The generator's spending over a run (spend.h).
#include "optimize/spend.h"

namespace kpilot {

using nlohmann::json;

GeneratorSpend SpendLedger::Total() const {
  GeneratorSpend now = generator_.Spent();
  now.requests += before_.requests;
  now.input_tokens += before_.input_tokens;
  now.output_tokens += before_.output_tokens;
  now.cost_usd += before_.cost_usd;
  now.priced = now.priced && before_.priced;
  return now;
}

std::optional<json> SpendLedger::Changed() {
  GeneratorSpend s = Total();
  if (s.requests == recorded_.requests && s.input_tokens == recorded_.input_tokens &&
      s.output_tokens == recorded_.output_tokens && s.cost_usd == recorded_.cost_usd)
    return std::nullopt;
  recorded_ = s;
  return json{{"requests", s.requests},
              {"input_tokens", s.input_tokens},
              {"output_tokens", s.output_tokens},
              {"cost_usd", s.cost_usd},
              {"priced", s.priced},
              {"max_cost_usd", opts_.max_cost_usd}};
}

void SpendLedger::Restore(const json& p) {
  before_ = {p.value("requests", int64_t{0}), p.value("input_tokens", int64_t{0}), p.value("output_tokens", int64_t{0}),
             p.value("cost_usd", 0.0), p.value("priced", true)};
  recorded_ = before_;
}

bool SpendLedger::AllowsAnotherRequest(int proposing) const {
  if (proposing == 0 || (opts_.max_cost_usd <= 0 && opts_.max_tokens <= 0)) return true;
  if (answered_ == 0) return false;
  const GeneratorSpend mine = generator_.Spent(), total = Total();
  const double expected = static_cast<double>(proposing) / answered_;
  if (opts_.max_cost_usd > 0 && total.cost_usd + expected * mine.cost_usd >= opts_.max_cost_usd) return false;
  const double tokens = static_cast<double>(total.input_tokens + total.output_tokens);
  const double per = static_cast<double>(mine.input_tokens + mine.output_tokens);
  return !(opts_.max_tokens > 0 && tokens + expected * per >= static_cast<double>(opts_.max_tokens));
}

}  // namespace kpilot
