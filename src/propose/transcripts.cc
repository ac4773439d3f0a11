#include "propose/transcripts.h"

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kpilot {

namespace {

// This thread's Scope: run 0 = none.
thread_local int64_t scope_run_id = 0;
thread_local int64_t scope_parent = -1;

}  // namespace

RunTranscripts::Scope::Scope(int64_t run_id, int64_t parent)
    : run_id_before_(scope_run_id), parent_before_(scope_parent) {
  scope_run_id = run_id;
  scope_parent = parent;
}

RunTranscripts::Scope::~Scope() {
  scope_run_id = run_id_before_;
  scope_parent = parent_before_;
}

void RunTranscripts::Record(const llm::Exchange& e) {
  const int64_t run_id = scope_run_id > 0 ? scope_run_id : run_id_.load();
  const int64_t parent = scope_run_id > 0 ? scope_parent : parent_.load();
  if (!store_ || run_id <= 0) return;
  nlohmann::json usage = {{"input_tokens", e.usage.input_tokens}, {"output_tokens", e.usage.output_tokens},
                          {"cost_usd", e.usage.cost_usd}, {"priced", e.usage.priced}};
  nlohmann::json whole = {{"endpoint", e.endpoint}, {"request", e.request_json}, {"response", e.response_json},
                          {"status", e.status},     {"attempts", e.attempts},   {"seconds", e.seconds},
                          {"usage", usage},         {"error", e.error}};
  auto blob = store_->PutBlob(whole.dump(2));
  if (!blob.ok()) return;  // archiving must not stop a run; the event below would dangle
  nlohmann::json event = {{"parent", parent}, {"endpoint", e.endpoint}, {"blob", *blob}, {"status", e.status},
                          {"attempts", e.attempts},   {"seconds", e.seconds},   {"usage", usage}, {"error", e.error}};
  if (store_->AddRunEvent(run_id, "transcript", event.dump()).ok()) ++recorded_;
}

}  // namespace kpilot
