// Redact: keys out of everything kpilot writes. A hand-written scan rather than std::regex:
// transcripts run to hundreds of kilobytes, and libstdc++'s regex recurses per character.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "llm/llm.h"

namespace kpilot::llm {

namespace {

constexpr std::string_view kRedacted = "[redacted]";
// Shorter "secrets" would redact ordinary words (an empty or test variable, say).
constexpr size_t kMinSecretLength = 6;
// sk-… keys: OpenAI's (sk-, sk-proj-…) and Anthropic's (sk-ant-…) are far longer than this.
constexpr size_t kMinKeyBodyLength = 16;

bool IsKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

void ReplaceAll(std::string* text, std::string_view what) {
  for (size_t pos = text->find(what); pos != std::string::npos; pos = text->find(what, pos + kRedacted.size())) {
    text->replace(pos, what.size(), kRedacted);
  }
}

// "sk-" at a word start followed by a long run of key characters.
void RedactKeyShapes(std::string* text) {
  for (size_t pos = text->find("sk-"); pos != std::string::npos; pos = text->find("sk-", pos + 1)) {
    if (pos > 0 && IsKeyChar((*text)[pos - 1])) continue;
    size_t end = pos + 3;
    while (end < text->size() && IsKeyChar((*text)[end])) ++end;
    if (end - (pos + 3) < kMinKeyBodyLength) continue;
    text->replace(pos, end - pos, kRedacted);
  }
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The value after a header or field name ("Authorization: Bearer X", "x-api-key": "X",
// api_key=X): the name, optional quote, ':' or '=', optional quote and "Bearer ", then the value
// up to white space, a quote, ',' ';' or '}'.
void RedactNamedValues(std::string* text) {
  static constexpr std::array<std::string_view, 3> kNames = {"authorization", "api-key", "api_key"};
  for (std::string_view name : kNames) {
    for (size_t pos = 0; pos + name.size() <= text->size(); ++pos) {
      if (!EqualsIgnoreCase(std::string_view(*text).substr(pos, name.size()), name)) continue;
      size_t i = pos + name.size();
      auto skip = [&](auto pred) {
        while (i < text->size() && pred((*text)[i])) ++i;
      };
      skip([](char c) { return c == '"' || c == '\''; });
      skip([](char c) { return c == ' ' || c == '\t'; });
      if (i >= text->size() || ((*text)[i] != ':' && (*text)[i] != '=')) continue;
      ++i;
      skip([](char c) { return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '\\'; });
      if (EqualsIgnoreCase(std::string_view(*text).substr(i, 7), "bearer ")) i += 7;
      size_t end = i;
      while (end < text->size() && !std::isspace(static_cast<unsigned char>((*text)[end])) &&
             std::string_view("\"',;}\\").find((*text)[end]) == std::string_view::npos) {
        ++end;
      }
      if (end == i || std::string_view(*text).substr(i, end - i) == kRedacted) continue;
      text->replace(i, end - i, kRedacted);
      pos = i;
    }
  }
}

}  // namespace

std::string Redact(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    if (secret.size() >= kMinSecretLength) ReplaceAll(&text, secret);
  }
  RedactKeyShapes(&text);
  RedactNamedValues(&text);
  return text;
}

}  // namespace kpilot::llm
