// The base of the OTLP/JSON and Jaeger JSON readers (otlp_reader.hpp, jaeger_reader.hpp):
// simdjson DOM -> SpanSet (otel_importer.hpp), with the checks and lookups both use.
// Internal to the span importers: the whole-file parsers and the streams use them.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

#include "importers/common/json_prefix.hpp"
#include "importers/common/json_util.hpp"
#include "importers/common/path.hpp"
#include "importers/otel/otel_importer.hpp"

namespace snailtrail::importers::otel_detail {

namespace dom = simdjson::dom;

// Optional member of the given type; absent and null are "not there", another type is
// an error reported by the caller.
inline bool member(dom::object o, std::string_view key, dom::element& out) {
  if (o.at_key(key).get(out)) return false;
  return out.type() != dom::element_type::NULL_VALUE;
}

class SpanReader {
 public:
  SpanReader(const std::string& source, const char* format) {
    set_.source = source;
    set_.format = format;
  }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw TraceError(set_.source, where, what);
  }

  // The member `key` of `o`, of type `type` (`what` names it): false if absent or null
  // (then an error if `required`), an error if of another type.
  bool typed_member(dom::object o, std::string_view key, dom::element_type type, const char* what,
                    const std::string& where, bool required, dom::element& out) {
    if (!member(o, key, out)) {
      if (required) fail(where, "missing \"" + std::string(key) + "\"");
      return false;
    }
    if (out.type() != type) fail(where, "\"" + std::string(key) + "\" must be " + what);
    return true;
  }
  // An absent optional array is empty (a default dom::array is not iterable: no tape).
  std::vector<dom::element> array_of(dom::object o, std::string_view key, const std::string& where,
                                     bool required) {
    dom::element e;
    if (!typed_member(o, key, dom::element_type::ARRAY, "an array", where, required, e)) return {};
    std::vector<dom::element> items;
    for (dom::element x : dom::array(e)) items.push_back(x);
    return items;
  }
  // Per-span arrays without a copy: false if absent.
  bool array_member(dom::object o, std::string_view key, const std::string& where,
                    dom::array& out) {
    dom::element e;
    if (!typed_member(o, key, dom::element_type::ARRAY, "an array", where, false, e)) return false;
    out = dom::array(e);
    return true;
  }
  // Where a span or reference is, built in reused buffers (no allocation per span).
  const std::string& located(std::string& buf, const std::string& outer, const char* key,
                             size_t i) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, i).ptr;
    buf.assign(outer).append(key).append("[").append(digits, end).append("]");
    return buf;
  }
  std::string span_where_, ref_where_;

  dom::object object_at(dom::element e, const std::string& where) {
    if (e.type() != dom::element_type::OBJECT) fail(where, "must be an object");
    return dom::object(e);
  }
  std::string_view string_of(dom::object o, std::string_view key, const std::string& where,
                             bool required) {
    dom::element e;
    if (!typed_member(o, key, dom::element_type::STRING, "a string", where, required, e)) return {};
    return std::string_view(e);
  }
  uint32_t intern(std::string_view s) { return set_.strings.id(s); }
  uint32_t id_of(std::string_view s) { return set_.ids.id(s); }

  // Adds a span whose refs were appended since refs_begin; negative durations are clamped.
  void add(Span s, uint32_t refs_begin) {
    s.refs_begin = refs_begin;
    s.refs_end = static_cast<uint32_t>(set_.refs.size());
    if (s.end < s.start) {
      s.end = s.start;
      ++negative_;
    }
    set_.spans.push_back(s);
  }

  SpanSet finish() {
    set_.count(SpanDiagnostic::negative_durations, negative_);
    resolve_spans(set_);
    return std::move(set_);
  }

  SpanSet set_;
  uint64_t negative_ = 0;
};
}  // namespace snailtrail::importers::otel_detail
