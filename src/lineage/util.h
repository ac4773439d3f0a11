// Small text helpers shared by the lineage walk and admission (not part of the contract).
#pragma once

#include <string>

#include "core/text.h"

namespace kpilot::lineage::internal {

// Today's date in UTC, ISO 8601 ("2026-11-30").
inline std::string Today() { return UtcNow(UtcPrecision::kDate); }

// `code` in a fenced block of language `lang`, ending with a newline.
inline std::string Fenced(const std::string& lang, const std::string& code) {
  return "```" + lang + "\n" + code + (code.empty() || code.back() == '\n' ? "" : "\n") + "```\n";
}

}  // namespace kpilot::lineage::internal
