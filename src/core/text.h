// Text and time formatting shared by every module: one Trim, one Gist, one UTC timestamp format.
#pragma once

#include <chrono>
#include <string>

namespace kpilot {

// `s` without leading and trailing white space (space, tab, CR, LF).
std::string Trim(const std::string& s);

// A message of many lines on one line, for a table cell or a progress line: its first non-blank
// line, then " … " and its last one when there are more (a traceback's exception); past `max`
// bytes, its first `max` at most (cut on a UTF-8 character's boundary) and "…".
std::string Gist(const std::string& message, size_t max);

// A kernel time for people: "123.4 ms", "1.234 ms", "56.78 µs".
std::string FormatMs(double ms);

// A wall time for people, to the second: "45 s", "4m07s", "1h03m" (an hour and over: to the minute).
std::string FormatSeconds(double s);

// How much of a UTC timestamp FormatUtc writes.
enum class UtcPrecision {
  kDate,     // 2026-11-30
  kSeconds,  // 2026-11-30T14:05:09Z
  kMillis,   // 2026-11-30T14:05:09.042Z
};

// `t` in ISO 8601, UTC.
std::string FormatUtc(std::chrono::system_clock::time_point t, UtcPrecision precision = UtcPrecision::kSeconds);
// The system clock's now, formatted as above.
std::string UtcNow(UtcPrecision precision = UtcPrecision::kSeconds);

}  // namespace kpilot
