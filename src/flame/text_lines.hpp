// Line-oriented text helpers of the flame graph readers (import.cpp, perf_script.cpp):
// lines of a string or of a file read in chunks, tokens, integers, printable excerpts.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "trace/ascii.hpp"
#include "trace/trace.hpp"

namespace snailtrail::flame::text {

using ascii::is_digit;
using ascii::is_hex;
using ascii::is_space;
using ascii::trim;

// Splits text into lines (without '\n' and a trailing '\r'), numbered from line + 1;
// returns the last line's number.
template <typename F>
uint64_t for_each_line(std::string_view text, F&& f, uint64_t line = 0) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view l = text.substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    f(l, ++line);
    pos = end + 1;
  }
  return line;
}

// The lines of a file read in chunks of 4 MB: memory holds one chunk, not the file.
template <typename F>
void for_each_file_line(const std::string& path, F&& f) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "open", std::strerror(errno));
  std::string buf;
  uint64_t line = 0;
  constexpr size_t kChunk = 4u << 20;
  while (in) {
    const size_t kept = buf.size();
    buf.resize(kept + kChunk);
    in.read(buf.data() + kept, static_cast<std::streamsize>(kChunk));
    buf.resize(kept + static_cast<size_t>(in.gcount()));
    if (in.bad()) throw TraceError(path, "read", std::strerror(errno));
    const size_t last_nl = buf.rfind('\n');
    if (!in || last_nl == std::string::npos) continue;  // at the end, or a line > 4 MB
    line = for_each_line(std::string_view(buf).substr(0, last_nl + 1), f, line);
    buf.erase(0, last_nl + 1);
  }
  for_each_line(buf, f, line);
}

// At most `max` bytes of `s` for a message: printable ASCII as is, other bytes as \xNN,
// so binary input is never echoed raw.
inline std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max) out += "...";
  return out;
}

inline bool parse_u64(std::string_view s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  return true;
}

inline bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

struct Token {
  std::string_view text;
  size_t pos;
};

inline std::vector<Token> tokens_of(std::string_view line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t b = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > b) out.push_back({line.substr(b, i - b), b});
  }
  return out;
}

}  // namespace snailtrail::flame::text
