#include "skills/text.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kpilot::skills_text {

namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::optional<std::string> ClosestWord(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = EditDistance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::vector<std::string> SplitAlternatives(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(" or ", start);
    out.push_back(Trim(s.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return out;
    start = at + 4;
  }
}

std::string NormalizePhrase(const std::string& s) {
  std::string out;
  for (char c : s) {
    char x = (c == '_' || c == '-' || std::isspace(static_cast<unsigned char>(c)))
                 ? ' '
                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (x == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += x;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> Terms(const std::string& text) {
  static const std::set<std::string> kStop = {"a",    "an",   "and", "are",  "as",   "at",   "be",  "by",  "for",
                                              "from", "in",   "is",  "it",   "of",   "on",   "or",  "the", "to",
                                              "when", "with", "its", "that", "this", "than", "into"};
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && !kStop.count(cur)) out.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      flush();
  }
  flush();
  return out;
}

}  // namespace kpilot::skills_text
