// Parsing of numbers, durations and instants given on the command line ("2.5", "1s",
// "250ms", "+10s").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace snailtrail {

// The whole of `text` as a finite number ("2.5", "1e6", "+3"); nullopt when it is not one
// (empty, trailing characters, out of range, inf or nan).
std::optional<double> parse_number(const std::string& text);

// "<number><unit>" with unit ns, us, ms, s, m or h; fractions allowed ("1.5s").
// Throws std::invalid_argument with a message naming the problem.
int64_t parse_duration(const std::string& text);

// An instant for --from/--to: nanoseconds since the trace clock's origin ("1700000000s",
// "12345" = ns), or relative to the first event with a leading '+' ("+10s").
struct Instant {
  int64_t ns = 0;
  bool relative = false;
};
Instant parse_instant(const std::string& text);

}  // namespace snailtrail
