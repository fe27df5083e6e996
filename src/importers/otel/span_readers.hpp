// OTLP/JSON and Jaeger JSON readers: simdjson DOM -> SpanSet (otel_importer.hpp). Internal to
// the span importers: the whole-file parsers and the streams use them.
#pragma once

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "importers/common/json_prefix.hpp"
#include "importers/common/json_util.hpp"
#include "importers/common/path.hpp"
#include "importers/otel/otel_importer.hpp"

namespace snailtrail::importers::otel_detail {

namespace dom = simdjson::dom;

inline std::string_view skip_space(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n' ||
          s.front() == '\xEF' || s.front() == '\xBB' || s.front() == '\xBF'))
    s.remove_prefix(1);
  return s;
}

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

  // An absent optional array is empty (a default dom::array is not iterable: no tape).
  std::vector<dom::element> array_of(dom::object o, std::string_view key, const std::string& where,
                                     bool required) {
    dom::element e;
    if (!member(o, key, e)) {
      if (required) fail(where, "missing \"" + std::string(key) + "\"");
      return {};
    }
    if (e.type() != dom::element_type::ARRAY)
      fail(where, "\"" + std::string(key) + "\" must be an array");
    std::vector<dom::element> items;
    for (dom::element x : dom::array(e)) items.push_back(x);
    return items;
  }
  // Per-span arrays without a copy: false if absent.
  bool array_member(dom::object o, std::string_view key, const std::string& where,
                    dom::array& out) {
    dom::element e;
    if (!member(o, key, e)) return false;
    if (e.type() != dom::element_type::ARRAY)
      fail(where, "\"" + std::string(key) + "\" must be an array");
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
    if (!member(o, key, e)) {
      if (required) fail(where, "missing \"" + std::string(key) + "\"");
      return {};
    }
    if (e.type() != dom::element_type::STRING)
      fail(where, "\"" + std::string(key) + "\" must be a string");
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
    set_.count("negative_durations", negative_);
    resolve_spans(set_);
    return std::move(set_);
  }

  SpanSet set_;
  uint64_t negative_ = 0;
};

// ---------------------------------------------------------------------------------------
// OTLP

inline SpanKind otlp_kind(dom::element e) {
  if (e.type() == dom::element_type::INT64) {
    const int64_t k = int64_t(e);
    return k >= 1 && k <= 5 ? static_cast<SpanKind>(k) : SpanKind::unspecified;
  }
  if (e.type() != dom::element_type::STRING) return SpanKind::unspecified;
  const std::string_view s = std::string_view(e);
  if (s == "SPAN_KIND_INTERNAL") return SpanKind::internal;
  if (s == "SPAN_KIND_SERVER") return SpanKind::server;
  if (s == "SPAN_KIND_CLIENT") return SpanKind::client;
  if (s == "SPAN_KIND_PRODUCER") return SpanKind::producer;
  if (s == "SPAN_KIND_CONSUMER") return SpanKind::consumer;
  return SpanKind::unspecified;
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

class OtlpReader : public SpanReader {
 public:
  using SpanReader::SpanReader;

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
    const std::string_view trace = string_of(o, "traceId", where, true);
    const std::string_view id = string_of(o, "spanId", where, true);
    if (trace.empty() || id.empty()) fail(where, "empty \"traceId\" or \"spanId\"");
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

// ---------------------------------------------------------------------------------------
// Jaeger

inline SpanKind jaeger_kind(std::string_view s) {
  if (s == "server") return SpanKind::server;
  if (s == "client") return SpanKind::client;
  if (s == "producer") return SpanKind::producer;
  if (s == "consumer") return SpanKind::consumer;
  if (s == "internal") return SpanKind::internal;
  return SpanKind::unspecified;
}

class JaegerReader : public SpanReader {
 public:
  using SpanReader::SpanReader;

  void trace(dom::element el, const std::string& where) {
    dom::object t = object_at(el, where);
    // processID -> service name, from this trace's "processes" map.
    processes_.clear();
    dom::element procs;
    has_processes_ = member(t, "processes", procs);
    if (has_processes_) {
      if (procs.type() != dom::element_type::OBJECT) fail(where, "\"processes\" must be an object");
      read_processes(procs, where);
    }
    const auto spans = array_of(t, "spans", where, true);
    size_t k = 0;
    for (dom::element sp : spans) span(sp, located(span_where_, where, ".spans", k++));
  }

  // The members of a span, read in one pass over its object: the first of each name,
  // as dom::object::at_key finds it (a span has some ten members; a lookup per field would
  // compare every name again).
  enum Field {
    kTraceID,
    kSpanID,
    kOperation,
    kStart,
    kDuration,
    kProcessID,
    kProcess,
    kTags,
    kReferences,
    kParent,
    kFields
  };
  struct Fields {
    std::array<dom::element, kFields> value;
    uint32_t seen = 0;
    // As member(): absent and null are "not there".
    bool get(Field f, dom::element& out) const {
      if (!(seen >> f & 1)) return false;
      out = value[f];
      return out.type() != dom::element_type::NULL_VALUE;
    }
  };
  static int field_of(std::string_view k) {
    switch (k.size()) {
      case 7:
        if (k == "traceID") return kTraceID;
        break;
      case 6:
        if (k == "spanID") return kSpanID;
        break;
      case 13:
        if (k == "operationName") return kOperation;
        break;
      case 9:
        if (k == "startTime") return kStart;
        if (k == "processID") return kProcessID;
        break;
      case 8:
        if (k == "duration") return kDuration;
        break;
      case 4:
        if (k == "tags") return kTags;
        break;
      case 10:
        if (k == "references") return kReferences;
        break;
      case 12:
        if (k == "parentSpanID") return kParent;
        break;
      default:
        break;
    }
    if (k == "process") return kProcess;
    return -1;
  }
  std::string_view string_field(const Fields& f, Field field, const char* key,
                                const std::string& where, bool required) {
    dom::element e;
    if (!f.get(field, e)) {
      if (required) fail(where, std::string("missing \"") + key + "\"");
      return {};
    }
    if (e.type() != dom::element_type::STRING)
      fail(where, std::string("\"") + key + "\" must be a string");
    return std::string_view(e);
  }

  void span(dom::element el, const std::string& where) {
    dom::object o = object_at(el, where);
    Fields f;
    for (dom::key_value_pair kv : o) {
      const int field = field_of(kv.key);
      if (field >= 0 && !(f.seen >> field & 1)) {
        f.seen |= 1u << field;
        f.value[static_cast<size_t>(field)] = kv.value;
      }
    }
    Span s;
    const std::string_view trace = string_field(f, kTraceID, "traceID", where, true);
    const std::string_view id = string_field(f, kSpanID, "spanID", where, true);
    if (trace.empty() || id.empty()) fail(where, "empty \"traceID\" or \"spanID\"");
    if (trace != last_trace_text_ || last_trace_ == kNoSpan) {
      last_trace_text_.assign(trace);
      last_trace_ = id_of(trace);
    }
    s.trace = last_trace_;
    s.id = id_of(id);
    s.operation = intern(string_field(f, kOperation, "operationName", where, false));
    dom::element e;
    int64_t duration = 0;
    if (!f.get(kStart, e) || !json::number_to_ns(e, 1000, s.start))
      fail(where, "\"startTime\" must be a number of microseconds in range");
    if (!f.get(kDuration, e) || !json::number_to_ns(e, 1000, duration))
      fail(where, "\"duration\" must be a number of microseconds in range");
    if (__builtin_add_overflow(s.start, duration, &s.end))
      fail(where, "\"startTime\" + \"duration\" is out of range");
    // Service: processID in the trace's processes, or an embedded "process".
    s.service = kNoSpan;
    const std::string_view pid = string_field(f, kProcessID, "processID", where, false);
    dom::element proc;
    const bool has_proc = f.get(kProcess, proc);
    if (defer_) {
      // Read span by span: the trace's "processes" come later; resolve_deferred() decides.
      uint32_t embedded = kNoSpan;
      if (has_proc && proc.type() == dom::element_type::OBJECT) {
        const std::string_view name = string_of(dom::object(proc), "serviceName", where, false);
        if (!name.empty()) embedded = intern(name);
      }
      auto it = pid_index_.find(pid);
      if (it == pid_index_.end()) {
        it = pid_index_.emplace(std::string(pid), uint32_t(pids_.size())).first;
        pids_.emplace_back(pid);
      }
      deferred_.push_back({static_cast<uint32_t>(set_.spans.size()), it->second, embedded});
    } else {
      s.service = service_of(pid, has_proc ? &proc : nullptr, where);
    }
    dom::element tags;
    if (f.get(kTags, tags) && tags.type() == dom::element_type::ARRAY) {
      std::string thread_name, thread_id;
      for (dom::element tag : dom::array(tags)) {
        if (tag.type() != dom::element_type::OBJECT) continue;
        dom::element k, v;
        if (!member(dom::object(tag), "key", k) || k.type() != dom::element_type::STRING) continue;
        const std::string_view key = std::string_view(k);
        if (key != "span.kind" && key != "thread.name" && key != "thread.id") continue;
        if (!member(dom::object(tag), "value", v)) continue;
        std::string text;
        if (!json::scalar_text(v, text)) continue;
        if (key == "span.kind") s.kind = jaeger_kind(text);
        if (key == "thread.name") thread_name = text;
        if (key == "thread.id") thread_id = text;
      }
      if (!thread_name.empty() || !thread_id.empty())
        s.thread = intern(thread_name.empty() ? thread_id : thread_name);
    }
    const uint32_t refs_begin = static_cast<uint32_t>(set_.refs.size());
    dom::element refs;
    size_t n = 0;
    if (f.get(kReferences, refs)) {
      if (refs.type() != dom::element_type::ARRAY) fail(where, "\"references\" must be an array");
      for (dom::element r : dom::array(refs)) {
        const std::string& rwhere = located(ref_where_, where, ".references", n++);
        dom::object ro = object_at(r, rwhere);
        const std::string_view type = string_of(ro, "refType", rwhere, false);
        const std::string_view rt = string_of(ro, "traceID", rwhere, false);
        const std::string_view rs = string_of(ro, "spanID", rwhere, true);
        set_.refs.push_back({rt.empty()    ? s.trace
                             : rt == trace ? last_trace_
                                           : id_of(rt),
                             id_of(rs), type != "FOLLOWS_FROM"});
      }
    }
    // Old exports carry the parent as "parentSpanID" instead of a reference.
    const std::string_view parent = string_field(f, kParent, "parentSpanID", where, false);
    if (refs_begin == set_.refs.size() && !parent.empty() && parent != "0")
      set_.refs.push_back({s.trace, id_of(parent), true});
    add(s, refs_begin);
  }

  // The service of a span with process id `pid` (o: the span, for an embedded "process").
  uint32_t service_of(std::string_view pid, const dom::element* proc, const std::string& where) {
    uint32_t service = kNoSpan;
    for (const auto& [p, sv] : processes_)
      if (p == pid) service = sv;
    if (service == kNoSpan && proc && proc->type() == dom::element_type::OBJECT) {
      const std::string_view name = string_of(dom::object(*proc), "serviceName", where, false);
      if (!name.empty()) service = intern(name);
    }
    return fallback_service(service, pid);
  }
  uint32_t fallback_service(uint32_t service, std::string_view pid) {
    if (service == kNoSpan && cut_ && !has_processes_ && !pid.empty()) {
      // The file was cut before this trace's "processes": the process id stands in.
      service = intern(pid);
    }
    if (service == kNoSpan) {
      ++unknown_process_;
      service = intern("unknown_service");
    }
    return service;
  }

  // Span by span (a trace too large to hold as one document): spans() reads a batch of
  // spans ("[span, span, ...]") as they arrive, their services wait for the trace's
  // "processes", which trace() then reads from the trace's skeleton (the trace object
  // with an empty "spans" array), and resolve_deferred() applies the rules of span().
  void spans(dom::element batch, const std::string& trace_where, size_t& k) {
    defer_ = true;
    for (dom::element sp : dom::array(batch))
      span(sp, located(span_where_, trace_where, ".spans", k++));
  }
  void resolve_deferred() {
    for (const Deferred& d : deferred_) {
      const std::string& pid = pids_[d.pid];
      uint32_t service = kNoSpan;
      for (const auto& [p, sv] : processes_)
        if (p == pid) service = sv;
      if (service == kNoSpan) service = d.embedded;
      set_.spans[d.span].service = fallback_service(service, pid);
    }
    deferred_.clear();
    defer_ = false;
  }
  // The processes of a trace read span by span that was cut short: its "processes"
  // object when it was complete, else none.
  void cut_processes(dom::element procs, const std::string& where) {
    processes_.clear();
    has_processes_ = true;
    if (procs.type() != dom::element_type::OBJECT) fail(where, "\"processes\" must be an object");
    read_processes(procs, where);
  }

  SpanSet done() {
    set_.count("spans_without_process", unknown_process_);
    return finish();
  }

  bool cut_ = false;  // the file was cut short: a trace may have lost its "processes"

 private:
  void read_processes(dom::element procs, const std::string& where) {
    for (auto [pid, proc] : dom::object(procs)) {
      if (proc.type() != dom::element_type::OBJECT) continue;
      const std::string_view name = string_of(dom::object(proc), "serviceName",
                                              where + ".processes." + std::string(pid), false);
      processes_.emplace_back(std::string(pid), intern(name.empty() ? "unknown_service" : name));
    }
  }

  bool has_processes_ = false;
  std::vector<std::pair<std::string, uint32_t>> processes_;
  uint64_t unknown_process_ = 0;
  // Span by span: per span, its process id (an index into pids_) and embedded service.
  struct Deferred {
    uint32_t span, pid, embedded;
  };
  bool defer_ = false;
  std::vector<Deferred> deferred_;
  std::vector<std::string> pids_;
  std::unordered_map<std::string, uint32_t, json::StringHash, std::equal_to<>> pid_index_;
  std::string last_trace_text_;  // the last span's trace id, and its number
  uint32_t last_trace_ = kNoSpan;
};

}  // namespace snailtrail::importers::otel_detail
