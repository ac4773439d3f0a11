// Every exchange with a model (and every agent run of the command: generator) archived in the
// run's store: the whole exchange as a blob, and a "transcript" event of the run pointing at it
// with the parent node, status, usage and error — already redacted by the client.
#pragma once

#include <atomic>
#include <cstdint>

#include "llm/llm.h"

namespace kpilot {

class Store;

class RunTranscripts : public llm::TranscriptSink {
 public:
  // `store` is borrowed (null: nothing is archived). Thread-safe (the Store serializes calls).
  explicit RunTranscripts(Store* store) : store_(store) {}
  // The run and parent node the next exchanges belong to (the optimizer proposes from one
  // parent at a time); before the first call nothing is archived.
  void SetContext(int64_t run_id, int64_t parent) {
    run_id_ = run_id;
    parent_ = parent;
  }
  void Record(const llm::Exchange& exchange) override;
  int64_t recorded() const { return recorded_; }

 private:
  Store* store_;
  std::atomic<int64_t> run_id_{0}, parent_{-1}, recorded_{0};
};

}  // namespace kpilot
