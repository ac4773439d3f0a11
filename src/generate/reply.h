// Taking a candidate out of a model's reply: pure functions, text in, struct out.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kpilot {

struct CodeBlock {
  std::string language;  // the fence's info string, first word, lower-cased ("" when none)
  std::string code;      // the text between the fences, without them
};

// Every fenced block (``` or ~~~, three or more, an optional info string) in order. A block left
// open at the end of the text is not a block (a truncated reply must not compile half a file).
std::vector<CodeBlock> FencedBlocks(const std::string& text);

// "" when `source` looks like a whole candidate for the ABI, else what is wrong, worded for the
// model: it must define kpilot_launch with C linkage (KPILOT_EXPORT from <kpilot/kernel.h>, or
// extern "C").
std::string AbiProblem(const std::string& source);

struct ExtractedCandidate {
  std::string source;   // the candidate file ("" when none)
  std::string problem;  // why there is none: no code, several files, ABI mismatch ("" when found)
  std::string summary;  // the reply's "Summary:" line, else its first line of prose (≤ 200 bytes)
  std::string finding;  // the reply's "Finding:" line ("" when none)
};

// The candidate in a reply. Blocks tagged with another language (bash, json, text …) are not
// code for this; of the C, C++ and CUDA blocks (or untagged ones) the candidate is the one that
// defines kpilot_launch. None at all → "no code"; several defining it → "several files"; blocks
// but none defining it → the ABI problem of the longest.
ExtractedCandidate ExtractCandidate(const std::string& reply);

// The code with comments and all whitespace removed: two files with the same fingerprint differ
// only in comments or layout (a generator that repeats itself is told so and re-asked).
std::string CodeFingerprint(const std::string& source);

// The "Summary:" / "Finding:" lines of a text (used for tool-call submissions too).
std::string SummaryLine(const std::string& text);
std::string FindingLine(const std::string& text);

// The skill card ids on the text's last "Applied skills:" line outside fenced blocks (markdown
// decoration around the label is allowed): split at commas and white space, backticks, quotes,
// brackets and a final period stripped, lower-cased, each once. "none" gives {}; nullopt when the
// text has no such line.
std::optional<std::vector<std::string>> AppliedSkillsLine(const std::string& text);

// The ids of an APPLIED_SKILLS file (command: workspaces): one per line (commas also separate),
// `#` starts a comment, "none" and blank lines are ignored; cleaned like AppliedSkillsLine's.
std::vector<std::string> SkillIdList(const std::string& text);

struct AppliedSkills {
  std::vector<std::string> kept;     // named and offered, in the order named
  std::vector<std::string> dropped;  // named but not offered (a typo, an invented or unoffered card)
};
// Splits the ids a draft names into those that were offered and the rest.
AppliedSkills FilterAppliedSkills(const std::vector<std::string>& named, const std::vector<std::string>& offered);

// " [skill ids not offered, ignored: a, b]" for a draft's summary; "" when none were dropped.
std::string DroppedSkillsNote(const std::vector<std::string>& dropped);

}  // namespace kpilot
