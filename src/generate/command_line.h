// Splitting a command line into argv the way a POSIX shell splits words, and nothing more: no
// variable, tilde, glob or command expansion, and no shell is ever run (the command: generator
// starts argv[0] directly).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

// Words are separated by unquoted blanks (space, tab, newline). Inside single quotes every
// character is literal; inside double quotes a backslash escapes only $ ` " \ and newline (and
// stays literal before anything else); outside quotes a backslash makes the next character
// literal, and backslash-newline joins lines. `''` and `""` are empty words. `$HOME`, `~`, `*`
// stay as written. An unterminated quote, a trailing backslash or a line with no words is
// InvalidInput naming the problem and its byte offset.
Result<std::vector<std::string>> SplitCommandLine(const std::string& line);

// The inverse for messages: each word quoted only when it needs it ('…' with ' escaped).
std::string JoinCommandLine(const std::vector<std::string>& argv);

}  // namespace kpilot
