// Every exchange with a model (and every agent run of the command: generator) archived for the
// run that made it: RunTranscripts knows which run and parent node an exchange belongs to, and
// hands it to a TranscriptArchive, which keeps it. The generate module owns both; the archive over
// the store (the whole exchange as a blob, and a "transcript" event of the run pointing at it) is
// the session's (session/session.h, StoreTranscriptArchive), so generators never see the store.
// Exchanges arrive already redacted by the client.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "llm/llm.h"

namespace kpilot {

class TranscriptArchive {
 public:
  virtual ~TranscriptArchive() = default;
  // Keeps `exchange`, made for run `run_id` (> 0) and its node `parent` (-1: none). Returns
  // whether it was kept; a failure must not stop the run, so it is not an error. Thread-safe.
  virtual bool Archive(int64_t run_id, int64_t parent, const llm::Exchange& exchange) = 0;
};

class RunTranscripts : public llm::TranscriptSink {
 public:
  // Null `archive`: nothing is archived. Thread-safe when the archive is.
  explicit RunTranscripts(std::shared_ptr<TranscriptArchive> archive) : archive_(std::move(archive)) {}
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
  std::shared_ptr<TranscriptArchive> archive_;
  std::atomic<int64_t> run_id_{0}, parent_{-1}, recorded_{0};
};

}  // namespace kpilot
