// Search memory: every attempt (what was tried, what it did, what failed and why) and a bounded
// summary of it for the generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpilot {

struct Attempt {
  int64_t node = 0;
  int64_t parent = -1;
  std::string summary;  // what changed and why
  std::string finding;  // the finding it targeted
  std::string verdict;  // passed | incorrect | …
  double speedup = 0;   // over the baseline (passed only)
  double delta = 0;     // speedup / parent's speedup − 1 (passed only)
  std::string failure;  // why it failed (verdict summary), "" when passed
};

class SearchMemory {
 public:
  // Appends an attempt; attempts are kept in the order recorded (the order of evaluation).
  void Record(const Attempt& a);
  const std::vector<Attempt>& attempts() const { return attempts_; }
  // At most `max_chars` bytes of plain text (UTF-8, never cut inside a character), sections in
  // this order, each left out when empty:
  //   a plateau line — the last kPlateauAttempts or more attempts did not improve the best;
  //   "Tried from #parent" — every attempt whose parent is `parent`, newest first;
  //   "Best results" — the best passed attempts by speedup;
  //   "Failures by reason" — failed attempts grouped by verdict and first line of `failure`,
  //     most frequent first, with a count and the latest example;
  //   "Regressions" — passed attempts slower than their parent, newest first.
  // Each entry is one line; summaries and reasons are cut to a fixed length, sections are capped
  // in entries, and when the text would pass `max_chars` whole lines are dropped from the end,
  // so the earlier sections survive a small budget. Same attempts, same text.
  std::string Summary(int64_t parent, size_t max_chars = 4000) const;

  static constexpr int kPlateauAttempts = 5;

 private:
  std::vector<Attempt> attempts_;
};

}  // namespace kpilot
