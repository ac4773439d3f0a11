// Taking a candidate out of a model's reply: pure functions, text in, struct out.
#pragma once

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
  std::string source;    // the candidate file ("" when none)
  std::string problem;   // why there is none: no code, several files, ABI mismatch ("" when found)
  std::string summary;   // the reply's "Summary:" line, else its first line of prose (≤ 200 bytes)
  std::string finding;   // the reply's "Finding:" line ("" when none)
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

}  // namespace kpilot
