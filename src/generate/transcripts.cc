#include "generate/transcripts.h"

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
  if (!archive_ || run_id <= 0) return;
  if (archive_->Archive(run_id, parent, e)) ++recorded_;
}

}  // namespace kpilot
