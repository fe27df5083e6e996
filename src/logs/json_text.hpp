// JSON strings from log text, which may hold any bytes: invalid UTF-8 becomes U+FFFD, so
// the output is always valid JSON.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "trace/json_text.hpp"

namespace snailtrail::logs {

inline void append_json_text(fmt::memory_buffer& out, std::string_view s) {
  append_json_string(out, s, kJsonLogText);
}

}  // namespace snailtrail::logs
