// OTLP/JSON reader: simdjson DOM -> SpanSet (otel_importer.hpp). Internal to the span
// importers: parse_otlp and the OTLP stream use it.
#pragma once

#include "importers/otel/span_readers.hpp"

namespace snailtrail::importers::otel_detail {

inline SpanKind otlp_kind(dom::element e) {
  if (e.type() == dom::element_type::INT64) {
    const int64_t k = int64_t(e);
    return k >= 1 && k <= 5 ? static_cast<SpanKind>(k) : SpanKind::unspecified;
  }
  if (e.type() != dom::element_type::STRING) return SpanKind::unspecified;
  return span_kind_named(std::string_view(e), &SpanKindName::otlp);
}

// Value of an OTLP AnyValue as text (string, int, double, bool); false otherwise.
inline bool any_value_text(dom::element v, std::string& out) {
  if (v.type() != dom::element_type::OBJECT) return false;
  dom::element x;
  for (const char* k : {"stringValue", "intValue", "doubleValue", "boolValue"})
    if (member(dom::object(v), k, x)) {
      if (x.type() == dom::element_type::BOOL) {
        out = bool(x) ? "true" : "false";
        return true;
      }
      return json::scalar_text(x, out);
    }
  return false;
}

// Looks up `keys` in an OTLP attribute list; the first key present wins.
inline bool attribute(dom::element attrs, std::initializer_list<std::string_view> keys,
                      std::string& out) {
  if (attrs.type() != dom::element_type::ARRAY) return false;
  for (std::string_view want : keys)
    for (dom::element kv : dom::array(attrs)) {
      if (kv.type() != dom::element_type::OBJECT) continue;
      dom::element k, v;
      if (!member(dom::object(kv), "key", k) || k.type() != dom::element_type::STRING ||
          std::string_view(k) != want || !member(dom::object(kv), "value", v))
        continue;
      if (any_value_text(v, out)) return true;
    }
  return false;
}

// The arrays whose elements a cut OTLP request keeps whole (json_prefix.hpp): resource
// spans, their scope spans ("instrumentationLibrarySpans" before OTLP 1.0), their spans.
inline const std::initializer_list<std::string_view> kOtlpRecordArrays = {
    "resourceSpans", "resourceSpans[].scopeSpans", "resourceSpans[].instrumentationLibrarySpans",
    "resourceSpans[].scopeSpans[].spans", "resourceSpans[].instrumentationLibrarySpans[].spans"};

class OtlpReader : public SpanReader {
 public:
  using SpanReader::SpanReader;
  // If set, spans without ids are counted here and left out instead of failing the read.
  uint64_t* rejected_ = nullptr;

  void document(dom::element root, const std::string& at) {
    dom::object top = object_at(root, at.empty() ? "top level" : at);
    const auto rss = array_of(top, "resourceSpans", at.empty() ? "top level" : at, true);
    size_t i = 0;
    for (dom::element rs_el : rss) {
      const std::string where = at + "resourceSpans[" + std::to_string(i++) + "]";
      dom::object rs = object_at(rs_el, where);
      std::string service = "unknown_service";
      dom::element resource, attrs;
      if (member(rs, "resource", resource) && resource.type() == dom::element_type::OBJECT &&
          member(dom::object(resource), "attributes", attrs))
        attribute(attrs, {"service.name"}, service);
      const uint32_t service_id = intern(service);
      // "instrumentationLibrarySpans" is the pre-1.0 name of "scopeSpans".
      dom::element scopes_el;
      const char* scopes_key =
          member(rs, "scopeSpans", scopes_el) ? "scopeSpans" : "instrumentationLibrarySpans";
      const auto scopes = array_of(rs, scopes_key, where, false);
      size_t j = 0;
      for (dom::element sc_el : scopes) {
        const std::string swhere = where + "." + scopes_key + "[" + std::to_string(j++) + "]";
        const auto spans = array_of(object_at(sc_el, swhere), "spans", swhere, false);
        size_t k = 0;
        for (dom::element sp : spans)
          span(sp, service_id, located(span_where_, swhere, ".spans", k++));
      }
    }
  }

  void span(dom::element el, uint32_t service, const std::string& where) {
    dom::object o = object_at(el, where);
    Span s;
    s.service = service;
    const std::string_view trace = string_of(o, "traceId", where, rejected_ == nullptr);
    const std::string_view id = string_of(o, "spanId", where, rejected_ == nullptr);
    if (trace.empty() || id.empty()) {
      if (rejected_ == nullptr) fail(where, "empty \"traceId\" or \"spanId\"");
      ++*rejected_;  // the OTLP receiver rejects the span alone (partial success)
      return;
    }
    s.trace = id_of(trace);
    s.id = id_of(id);
    s.operation = intern(string_of(o, "name", where, false));
    dom::element e;
    if (member(o, "kind", e)) s.kind = otlp_kind(e);
    for (auto [key, out] :
         {std::pair{"startTimeUnixNano", &s.start}, {"endTimeUnixNano", &s.end}}) {
      if (!member(o, key, e)) fail(where, std::string("missing \"") + key + "\"");
      if (!json::integer_or_string(e, *out) || *out < 0)
        fail(where, std::string("\"") + key +
                        "\" must be a non-negative integer (or a decimal string) of ns");
    }
    std::string thread;
    if (member(o, "attributes", e) && attribute(e, {"thread.name", "thread.id"}, thread))
      s.thread = intern(thread);
    const uint32_t refs_begin = static_cast<uint32_t>(set_.refs.size());
    const std::string_view parent = string_of(o, "parentSpanId", where, false);
    if (!parent.empty()) set_.refs.push_back({s.trace, id_of(parent), true});
    dom::array links;
    size_t n = 0;
    if (array_member(o, "links", where, links))
      for (dom::element l : links) {
        const std::string& lwhere = located(ref_where_, where, ".links", n++);
        dom::object lo = object_at(l, lwhere);
        const std::string_view lt = string_of(lo, "traceId", lwhere, false);
        const std::string_view ls = string_of(lo, "spanId", lwhere, true);
        set_.refs.push_back({lt.empty() ? s.trace : id_of(lt), id_of(ls), false});
      }
    add(s, refs_begin);
  }
};

}  // namespace snailtrail::importers::otel_detail
