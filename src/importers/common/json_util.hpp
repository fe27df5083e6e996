// simdjson helpers shared by the JSON-based importers (chrome, otlp, jaeger).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace snailtrail::importers::json {

// Byte offset of the first syntax error in `text` (best effort, by an On-Demand walk).
size_t error_offset(std::string_view text);

// "byte N: invalid JSON (simdjson message)" parts for a failed DOM parse.
[[noreturn]] void throw_syntax_error(const std::string& source, std::string_view text,
                                     simdjson::error_code error);

// A JSON number of `unit` nanoseconds (1000 for microseconds) as int64 ns. Fractions are
// rounded to the nearest ns. False if not a number or out of range.
bool number_to_ns(simdjson::dom::element e, int64_t unit, int64_t& out);
// An integer given as JSON number or decimal string (OTLP writes uint64 as strings).
bool integer_or_string(simdjson::dom::element e, int64_t& out);
// A string or integer as text (ids, pids); false for other types.
bool scalar_text(simdjson::dom::element e, std::string& out);

// Heterogeneous-lookup hash so maps keyed by std::string accept string_view probes.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
// Dense ids for strings in first-seen order.
struct Interner {
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> ids;
  std::vector<std::string> names;
  uint32_t id(std::string_view s) {
    auto it = ids.find(s);
    if (it != ids.end()) return it->second;
    const uint32_t n = static_cast<uint32_t>(names.size());
    names.emplace_back(s);
    ids.emplace(names.back(), n);
    return n;
  }
  // UINT32_MAX if never interned.
  uint32_t find(std::string_view s) const {
    auto it = ids.find(s);
    return it == ids.end() ? UINT32_MAX : it->second;
  }
};

}  // namespace snailtrail::importers::json
