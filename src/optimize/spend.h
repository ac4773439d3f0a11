// Inside the optimize module: what the generator has spent over a run (tokens, US$), across the
// run's processes, and whether a spending cap lets another request go out.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "optimize/options.h"

namespace kpilot {

class SpendLedger {
 public:
  // Borrowed: both outlive the ledger.
  SpendLedger(const Generator& generator, const OptimizeOptions& opts) : generator_(generator), opts_(opts) {}

  // The run's totals: this process's generator and what earlier processes of the run spent.
  GeneratorSpend Total() const;
  // The payload of a `spend` event when the totals changed since the last one; nullopt otherwise.
  std::optional<nlohmann::json> Changed();
  // Resume: the last recorded `spend` event's payload is what earlier processes spent.
  void Restore(const nlohmann::json& payload);
  // An expansion's answer came back (the mean cost per answer predicts the ones in flight).
  void Answered() { ++answered_; }
  // Under a spending cap (--max-cost, --max-tokens) another request goes out beside the
  // `proposing` ones only while the spend so far plus what those are expected to cost (this
  // process's mean per answered expansion) stays under the cap; before any answer, one at a
  // time. So concurrent requests overshoot a cap no more than sequential ones would, give or
  // take the spread of a request's cost.
  bool AllowsAnotherRequest(int proposing) const;

 private:
  const Generator& generator_;
  const OptimizeOptions& opts_;
  GeneratorSpend before_;    // what earlier processes of this run spent
  GeneratorSpend recorded_;  // the last `spend` event's totals
  int answered_ = 0;         // expansions the generator answered in this process
};

}  // namespace kpilot
