#include "generate/command_line.h"

namespace kpilot {

Result<std::vector<std::string>> SplitCommandLine(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has started (it may still be empty: '')
  auto fail = [&](const std::string& what, size_t at) {
    return Status::InvalidInput("command line \"" + line + "\": " + what + " at byte " + std::to_string(at) +
                                " — quote it the way a shell would, e.g. 'command: codex exec \"fix it\"'");
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string::npos) return fail("unterminated single quote", i);
      word.append(line, i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= line.size()) return fail("unterminated double quote", i);
        if (line[j] == '"') break;
        if (line[j] == '\\' && j + 1 < line.size() &&
            (line[j + 1] == '$' || line[j + 1] == '`' || line[j + 1] == '"' || line[j + 1] == '\\' ||
             line[j + 1] == '\n')) {
          if (line[j + 1] != '\n') word.push_back(line[j + 1]);
          ++j;
          continue;
        }
        word.push_back(line[j]);
      }
      in_word = true;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= line.size()) return fail("trailing backslash", i);
      if (line[i + 1] != '\n') {
        word.push_back(line[i + 1]);
        in_word = true;
      }
      ++i;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty())
    return Status::InvalidInput("command line \"" + line +
                                "\" has no words — give the program to run, e.g. command:./agent.sh");
  return words;
}

std::string JoinCommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    bool plain =
        !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string::npos;
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace kpilot
