// JSON strings from log text, which may hold any bytes: invalid UTF-8 becomes U+FFFD, so
// the output is always valid JSON.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace snailtrail::logs {

inline void append_json_text(fmt::memory_buffer& out, std::string_view s) {
  auto put = [&](std::string_view x) { out.append(x.data(), x.data() + x.size()); };
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          put("\\\"");
          break;
        case '\\':
          put("\\\\");
          break;
        case '\n':
          put("\\n");
          break;
        case '\r':
          put("\\r");
          break;
        case '\t':
          put("\\t");
          break;
        default:
          if (c < 0x20 || c == 0x7f)
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
          else
            out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    uint32_t cp = len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xC0) == 0x80;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
      ok = false;
    if (ok) {
      out.append(s.data() + i, s.data() + i + len);
      i += len;
    } else {
      put("\\ufffd");
      ++i;
    }
  }
  out.push_back('"');
}

}  // namespace snailtrail::logs
