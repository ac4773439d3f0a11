// Small text functions of the skills module (private to src/skills/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/text.h"

namespace kpilot::skills_text {

// The candidate closest to `word` by edit distance, when it is close enough to be a likely typo
// (distance at most max(2, size / 3)); nullopt otherwise.
std::optional<std::string> ClosestWord(const std::string& word, const std::vector<std::string>& candidates);

// "lg_throttle or mio_throttle" → {"lg_throttle", "mio_throttle"}; each part trimmed.
std::vector<std::string> SplitAlternatives(const std::string& s);

// Lower-case, with '_' and '-' as spaces and runs of white space folded: "shared_memory" and
// "Shared Memory" compare equal.
std::string NormalizePhrase(const std::string& s);

// Lower-case alphanumeric terms; everything else separates them; a few English stop words dropped.
std::vector<std::string> Terms(const std::string& text);

}  // namespace kpilot::skills_text

namespace kpilot {
using skills_text::ClosestWord;
using skills_text::SplitAlternatives;
}  // namespace kpilot
