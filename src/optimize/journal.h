// Inside the optimize module: the run's journal of finished evaluations. Every job the loop
// submits is journaled the moment it ends (event `result` with its record as a blob), so that a
// killed run resumes without evaluating again what had ended; and the binaries a run has seen,
// so that a draft that compiles to one is not evaluated twice.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "store/store.h"

namespace kpilot {

// The object hashes a run has evaluated. Thread-safe: admitted on the executor's compile threads.
class SeenBinaries {
 public:
  // True when `sha` was not seen before (and is now).
  bool Insert(const std::string& sha);

 private:
  std::mutex mu_;
  std::set<std::string> seen_;
};

class RunJournal {
 public:
  // Borrowed: all outlive the journal, and the journal outlives every job submitted through it.
  RunJournal(Store& store, Executor& executor, int64_t run_id, SeenBinaries& seen)
      : store_(store), executor_(executor), run_id_(run_id), seen_(seen) {}

  // The result of `job`, journaled under `key` the moment it ends (on the executor's thread); on
  // resume, the result the interrupted process journaled under `key` instead, when there is one.
  std::future<EvalJobResult> Submit(EvalJob job, const nlohmann::json& key);
  // The first failure to write a journal entry (Ok when none).
  Status status();

  // Resume: a recorded `result` event's payload ({key…, "blob": …}); each is served once.
  void Remember(const nlohmann::json& payload);
  // Resume: reads ahead the journaled drafts' results whose key `wanted` picks, before anything
  // is evaluated (each one's binary is then seen, so a draft the interrupted run had skipped as a
  // duplicate is skipped again). Returns how many were read.
  int ReadAhead(const std::function<bool(const nlohmann::json& key)>& wanted);

 private:
  void Record(nlohmann::json key, const EvalJobResult& r);
  // The journaled result under `blob`, as a ready future; nullopt when it cannot be read.
  std::optional<std::future<EvalJobResult>> Read(const std::string& blob);

  Store& store_;
  Executor& executor_;
  int64_t run_id_;
  SeenBinaries& seen_;
  std::mutex mu_;
  Status error_ = Status::Ok();
  // Resume: the blobs of the results the interrupted process journaled, by their key's JSON text
  // ({"proposal": seq}, {"gate": node, "incumbent": node} or {"final": node}).
  std::map<std::string, std::string> journaled_;
  std::map<std::string, std::future<EvalJobResult>> read_ahead_;
};

}  // namespace kpilot
