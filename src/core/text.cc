#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

namespace kpilot {

std::string FormatMs(double ms) {
  if (ms >= 100) return fmt::format("{:.1f} ms", ms);
  if (ms >= 1) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.2f} µs", ms * 1000);
}

std::string FormatSeconds(double s) {
  const double t = std::max(0.0, s);
  const long total = std::lround(t);
  if (total < 60) return fmt::format("{} s", total);
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  const long minutes = std::lround(t / 60);
  return fmt::format("{}h{:02}m", minutes / 60, minutes % 60);
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Gist(const std::string& message, size_t max) {
  std::string first, last;
  size_t at = 0;
  while (at <= message.size()) {
    size_t end = message.find('\n', at);
    if (end == std::string::npos) end = message.size();
    std::string line = Trim(message.substr(at, end - at));
    if (!line.empty()) (first.empty() ? first : last) = line;
    at = end + 1;
  }
  std::string s = last.empty() ? first : first + " … " + last;
  if (s.size() <= max) return s;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  return s.substr(0, cut) + "…";
}

std::string FormatUtc(std::chrono::system_clock::time_point t, UtcPrecision precision) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  if (precision == UtcPrecision::kDate) {
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
  }
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (precision == UtcPrecision::kSeconds) {
    std::snprintf(buf + n, sizeof buf - n, "Z");
  } else {
    // to_time_t truncates toward zero for times after the epoch; the remainder is the millis.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  }
  return buf;
}

std::string UtcNow(UtcPrecision precision) { return FormatUtc(std::chrono::system_clock::now(), precision); }

}  // namespace kpilot
