#include "propose/transcripts.h"

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kpilot {

void RunTranscripts::Record(const llm::Exchange& e) {
  if (!store_ || run_id_ <= 0) return;
  nlohmann::json usage = {{"input_tokens", e.usage.input_tokens}, {"output_tokens", e.usage.output_tokens},
                          {"cost_usd", e.usage.cost_usd}, {"priced", e.usage.priced}};
  nlohmann::json whole = {{"endpoint", e.endpoint}, {"request", e.request_json}, {"response", e.response_json},
                          {"status", e.status},     {"attempts", e.attempts},   {"seconds", e.seconds},
                          {"usage", usage},         {"error", e.error}};
  auto blob = store_->PutBlob(whole.dump(2));
  if (!blob.ok()) return;  // archiving must not stop a run; the event below would dangle
  nlohmann::json event = {{"parent", parent_.load()}, {"endpoint", e.endpoint}, {"blob", *blob}, {"status", e.status},
                          {"attempts", e.attempts},   {"seconds", e.seconds},   {"usage", usage}, {"error", e.error}};
  if (store_->AddRunEvent(run_id_, "transcript", event.dump()).ok()) ++recorded_;
}

}  // namespace kpilot
