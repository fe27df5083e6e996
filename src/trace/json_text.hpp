// JSON text written by every stage: one string escaper and one number formatter, with
// the few choices their outputs differ in named here (docs/OUTPUT.md, docs/FORMATS.md).
// `Out` is std::string or fmt::memory_buffer (anything with push_back(char) and
// append(const char*, const char*)).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <fmt/compile.h>
#include <fmt/format.h>

namespace snailtrail {

// How a string is escaped. Always: '"' and '\\' get a backslash, other control
// characters below 0x20 become \u00xx (lowercase hex).
struct JsonEscape {
  bool short_controls = false;  // \n \r \t instead of \u000a \u000d \u0009
  bool escape_del = false;      // 0x7f as \u007f
  // Invalid UTF-8: nullptr copies bytes as they are; otherwise each byte that does not
  // start a valid sequence is replaced by this text (e.g. "\xEF\xBF\xBD", U+FFFD, or
  // "\\ufffd"), so the output is valid UTF-8 whatever the input.
  const char* invalid_utf8 = nullptr;
};

// The policies in use: trace files (JSONL meta names, error quotes), output documents
// (summaries, verdicts, diagnostics), log text (`logs`), simulator truth files.
inline constexpr JsonEscape kJsonTrace{false, false, "\xEF\xBF\xBD"};
inline constexpr JsonEscape kJsonOutput{true, false, nullptr};
inline constexpr JsonEscape kJsonLogText{true, true, "\\ufffd"};
inline constexpr JsonEscape kJsonPlain{false, false, nullptr};

// The length of the valid UTF-8 sequence at p[0..n) (no overlongs, surrogates or code
// points beyond U+10FFFF), or 0 if it is not one.
inline size_t utf8_sequence_length(const unsigned char* p, size_t n) {
  const unsigned c = p[0];
  auto cont = [&](size_t i) { return i < n && (p[i] & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;
  if (c < 0xE0) return cont(1) ? 2 : 0;
  if (c < 0xF0) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c < 0xF5) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

// Appends `s` as a JSON string literal, quotes included.
template <typename Out>
void append_json_string(Out& out, std::string_view s, const JsonEscape& style = kJsonOutput) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto put = [&](std::string_view x) { out.append(x.data(), x.data() + x.size()); };
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  out.push_back('"');
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (style.short_controls && (c == '\n' || c == '\r' || c == '\t')) {
      put(c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t");
    } else if (c < 0x20 || (c == 0x7f && style.escape_del)) {
      put("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else if (c < 0x80 || style.invalid_utf8 == nullptr) {
      out.push_back(static_cast<char>(c));
    } else if (const size_t len = utf8_sequence_length(p + i, n - i); len != 0) {
      out.append(s.data() + i, s.data() + i + len);
      i += len;
      continue;
    } else {
      put(style.invalid_utf8);
    }
    ++i;
  }
  out.push_back('"');
}

// Appends `v` as a JSON number: null for NaN and infinities (JSON has neither), 0 for
// -0; the shortest text that reads back as `v` when `significant` is 0, else rounded to
// that many significant digits (printf's %g).
template <typename Out>
void append_json_number(Out& out, double v, int significant = 0) {
  auto put = [&](std::string_view x) { out.append(x.data(), x.data() + x.size()); };
  if (!std::isfinite(v)) {
    put("null");
    return;
  }
  if (v == 0) v = 0;  // no "-0"
  char text[40];      // the longest shortest round-trip double is 24 characters
  const char* end = significant > 0
                        ? fmt::format_to_n(text, sizeof text, "{:.{}g}", v, significant).out
                        : fmt::format_to(text, FMT_COMPILE("{}"), v);
  const char* begin = text;
  out.append(begin, end);
}

}  // namespace snailtrail
