// The timestamp of a `perf script` line header, read by the kernel readers
// (perf_script.cpp) and the flame graph importer (flame/import.cpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace snailtrail::kernel {

// "12345.678901:" -> ns. The fraction has 1..9 digits (perf prints 6, or 9 with --ns);
// the seconds at most 10 digits, so that the result fits.
inline bool parse_perf_time(std::string_view tok, int64_t& ns) {
  if (tok.size() < 4 || tok.back() != ':') return false;
  tok.remove_suffix(1);
  const size_t dot = tok.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= tok.size()) return false;
  const std::string_view sec = tok.substr(0, dot), frac = tok.substr(dot + 1);
  if (frac.size() > 9 || sec.size() > 10) return false;
  int64_t s = 0, f = 0;
  for (char c : sec) {
    if (c < '0' || c > '9') return false;
    s = s * 10 + (c - '0');
  }
  if (s > INT64_MAX / 1'000'000'000 - 1) return false;  // epoch seconds fit, overflow does not
  for (char c : frac) {
    if (c < '0' || c > '9') return false;
    f = f * 10 + (c - '0');
  }
  for (size_t k = frac.size(); k < 9; ++k) f *= 10;
  ns = s * 1'000'000'000 + f;
  return true;
}

}  // namespace snailtrail::kernel
