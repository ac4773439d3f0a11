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
  // The run and parent node the next exchanges belong to; before the first call nothing is
  // archived. Exchanges made on a thread inside a Scope belong to the Scope's instead.
  void SetContext(int64_t run_id, int64_t parent) {
    run_id_ = run_id;
    parent_ = parent;
  }
  // While it lives, the exchanges this thread makes belong to `run_id` and `parent`: the
  // optimizer keeps requests for several parents in flight at once, each on threads of its own.
  class Scope {
   public:
    Scope(int64_t run_id, int64_t parent);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    int64_t run_id_before_, parent_before_;
  };
  void Record(const llm::Exchange& exchange) override;
  int64_t recorded() const { return recorded_; }

 private:
  Store* store_;
  std::atomic<int64_t> run_id_{0}, parent_{-1}, recorded_{0};
};

}  // namespace kpilot
