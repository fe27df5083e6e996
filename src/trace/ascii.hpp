// Byte classes of the text formats the readers parse (logs, folded stacks): ASCII only,
// independent of the C locale, and inline because they run once per byte.
#pragma once

#include <string_view>

namespace snailtrail::ascii {

// Blank within a line: space, tab, carriage return, form feed, vertical tab (not '\n',
// which ends the line).
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// `s` without the blanks (is_space) at either end.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace snailtrail::ascii
