// OTLP/JSON and Jaeger JSON parsers (otel_importer.hpp).
#include "importers/otel/otel_importer.hpp"
#include "importers/common/path.hpp"

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

namespace snailtrail::importers {
namespace {

namespace dom = simdjson::dom;

std::string_view skip_space(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n' ||
          s.front() == '\xEF' || s.front() == '\xBB' || s.front() == '\xBF'))
    s.remove_prefix(1);
  return s;
}

// Optional member of the given type; absent and null are "not there", another type is
// an error reported by the caller.
bool member(dom::object o, std::string_view key, dom::element& out) {
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

SpanKind otlp_kind(dom::element e) {
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
bool any_value_text(dom::element v, std::string& out) {
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
bool attribute(dom::element attrs, std::initializer_list<std::string_view> keys, std::string& out) {
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

SpanKind jaeger_kind(std::string_view s) {
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

}  // namespace

SpanSet parse_otlp(std::string_view text, const std::string& source) {
  OtlpReader reader(source, "otlp");
  simdjson::padded_string padded(text);
  dom::parser parser;
  dom::document_stream docs;
  // One batch must hold the largest document: a single request can be the whole file.
  if (auto err =
          parser.parse_many(padded, std::max<size_t>(text.size() + 1, size_t(1) << 20)).get(docs))
    json::throw_syntax_error(source, text, err);
  size_t n = 0;
  size_t tail = text.size();  // start of a document that does not parse
  simdjson::error_code tail_error = simdjson::SUCCESS;
  for (auto it = docs.begin(); it != docs.end(); ++it) {
    dom::element root;
    if (auto err = (*it).get(root)) {
      tail = n == 0 ? 0 : it.current_index();
      tail_error = err;
      break;
    }
    reader.document(root, n == 0 ? "" : "document " + std::to_string(n + 1) + ": ");
    ++n;
  }
  if (!tail_error && docs.truncated_bytes() > 0) {
    // simdjson sets aside what it cannot close as "truncated".
    tail = text.size() - docs.truncated_bytes();
    tail_error = simdjson::INCOMPLETE_ARRAY_OR_OBJECT;
  }
  if (tail_error && text.find_first_not_of(" \t\r\n", tail) == std::string_view::npos)
    tail_error = simdjson::SUCCESS;  // only white space left
  if (tail_error) {
    // Only a document cut at the end of the file is forgiven: requests one per line (the
    // collector appending to its file) lose the cut last line; a single request keeps
    // its complete spans. Anything else is located and reported.
    const std::string_view rest = text.substr(tail);
    auto fail = [&] {
      const size_t at = n == 0 ? json::error_offset(text) : tail + json::error_offset(rest);
      throw TraceError(source, "byte " + std::to_string(at),
                       std::string("invalid JSON: ") + simdjson::error_message(tail_error));
    };
    if (n > 0) {
      // One line, cut: nothing but white space after its last newline-free stretch.
      const size_t last = rest.find_last_not_of(" \t\r\n");
      if (rest.substr(0, last).find('\n') != std::string_view::npos ||
          !json::ends_inside_value(rest))
        fail();
      reader.set_.count("truncated_last_line", 1);
    } else {
      dom::element root;
      json::parse_cut_document(
          parser, text, source,
          {"resourceSpans", "scopeSpans", "instrumentationLibrarySpans", "spans"}, tail_error,
          root);
      reader.document(root, "");
      reader.set_.count("truncated_file", 1);
      ++n;
    }
  }
  if (n == 0) throw TraceError(source, "byte 0", "no JSON document");
  return reader.finish();
}

SpanSet parse_jaeger(std::string_view text, const std::string& source) {
  JaegerReader reader(source, "jaeger");
  simdjson::padded_string padded(text);
  dom::parser parser;
  dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    // Cut short: the complete traces, and the complete spans of the cut one.
    json::parse_cut_document(parser, text, source, {"data", "spans"}, err, root);
    reader.set_.count("truncated_file", 1);
    reader.cut_ = true;
  }
  if (root.type() != dom::element_type::OBJECT)
    throw TraceError(source, "top level", "expected an object with \"data\"");
  dom::element data;
  if (member(dom::object(root), "data", data)) {
    if (data.type() != dom::element_type::ARRAY)
      throw TraceError(source, "top level", "\"data\" must be an array of traces");
    size_t i = 0;
    for (dom::element t : dom::array(data)) reader.trace(t, "data[" + std::to_string(i++) + "]");
  } else {
    reader.trace(root, "top level");  // a single trace object
  }
  return reader.done();
}

int sniff_otlp(std::string_view path, std::string_view head) {
  const std::string_view s = skip_space(head);
  if (s.starts_with("{") && s.find("\"resourceSpans\"") != std::string_view::npos) return 90;
  (void)path;
  return 0;
}

int sniff_jaeger(std::string_view path, std::string_view head) {
  const std::string_view s = skip_space(head);
  if (!s.starts_with("{")) return 0;
  if (s.find("\"traceID\"") != std::string_view::npos &&
      (s.find("\"spans\"") != std::string_view::npos ||
       s.find("\"data\"") != std::string_view::npos))
    return 85;
  (void)has_extension(path, ".json");
  return 0;
}

Trace read_otlp(const std::string& path, const ImportOptions& options) {
  const ActivityMap map = load_activity_map(options.map_file);
  return spans_to_trace(parse_otlp(read_file_bytes(path), path == "-" ? "<stdin>" : path), map);
}

Trace read_jaeger(const std::string& path, const ImportOptions& options) {
  const ActivityMap map = load_activity_map(options.map_file);
  return spans_to_trace(parse_jaeger(read_file_bytes(path), path == "-" ? "<stdin>" : path), map);
}

namespace {
constexpr ImportOption kSpanOptions[] = {kMapOption};
}  // namespace

const Importer& otlp_descriptor() {
  static const Importer d{
      .name = "otlp",
      .description = "OpenTelemetry OTLP/JSON spans (resourceSpans)",
      .sniff = sniff_otlp,
      .read = read_otlp,
      .not_streamed =
          "a span's parent, children and links may come in any later line, so no "
          "part of an OTLP file is final before its end",
      .options = kSpanOptions,
      .whole_window = true,
      .window_reason = "a span trace is a set of requests",
  };
  return d;
}

const Importer& jaeger_descriptor() {
  static const Importer d{
      .name = "jaeger",
      .description = "Jaeger JSON spans (query API /api/traces)",
      .sniff = sniff_jaeger,
      .read = read_jaeger,
      .not_streamed =
          "a jaeger trace is one JSON document, complete only at its end, so there "
          "is nothing to analyze while it grows",
      .options = kSpanOptions,
      .whole_window = true,
      .window_reason = "a span trace is a set of requests",
  };
  return d;
}

SpanSet read_spans(const std::string& path, std::string_view importer) {
  std::string_view name = importer;
  if (name == "auto") name = detect_importer(path).name;
  const std::string source = path == "-" ? "<stdin>" : path;
  if (name == "otlp") return parse_otlp(read_file_bytes(path), source);
  if (name == "jaeger") return parse_jaeger(read_file_bytes(path), source);
  if (!find_importer(name))
    throw std::invalid_argument("unknown importer \"" + std::string(name) + "\"");
  throw TraceError(source, "format",
                   "critical paths need a request trace (otlp or jaeger), but this is read by "
                   "the " +
                       std::string(name) + " importer");
}

}  // namespace snailtrail::importers

// ---------------------------------------------------------------------------------------
// Streaming

namespace snailtrail::importers {
namespace {

// Diagnostics summed over units come out in the order one whole-file import counts them.
size_t diagnostic_rank(std::string_view key) {
  static constexpr std::array<std::string_view, 7> kOrder = {
      "truncated_file",     "truncated_last_line", "spans_without_process", "negative_durations",
      "duplicate_span_ids", "orphan_spans",        "parent_cycles"};
  const std::string_view k = key.substr(key.find('.') + 1);
  for (size_t i = 0; i < kOrder.size(); ++i)
    if (k == kOrder[i]) return i;
  return kOrder.size();
}

// Units of work handed to worker threads through a bounded queue (at most two units per
// thread wait), so memory holds the units in flight, not the file.
class UnitWorkers {
 public:
  struct Job {
    size_t index = 0;
    uint64_t byte = 0;
    std::string where;
    // The unit is bytes[off, off + len), followed by simdjson::SIMDJSON_PADDING readable bytes.
    std::string bytes;
    size_t off = 0, len = 0;
    std::string_view text() const { return std::string_view(bytes).substr(off, len); }
    bool cut = false;    // the file ends inside this unit
    bool ready = false;  // Jaeger: `set` is the trace, already read span by span
    SpanSet set;         // OTLP: the trace, already read
  };
  using Work = std::function<void(Job&, dom::parser&)>;

  UnitWorkers(unsigned threads, Work work) : work_(std::move(work)) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    capacity_ = 2 * threads;
    if (threads > 1)
      for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { loop(); });
  }
  ~UnitWorkers() { finish(); }

  void push(Job&& job) {
    if (threads_.empty()) {
      run(job, inline_parser_);
      rethrow();
      return;
    }
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return queue_.size() < capacity_ || failed_; });
    if (failed_) {
      lock.unlock();
      finish();
      rethrow();
    }
    queue_.push_back(std::move(job));
    ready_.notify_one();
  }

  void finish() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  void rethrow() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void run(Job& job, dom::parser& parser) {
    try {
      work_(job, parser);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
      room_.notify_all();
    }
  }
  void loop() {
    dom::parser parser;
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      if (!failed_) run(job, parser);
    }
  }

  Work work_;
  size_t capacity_ = 2;
  std::vector<std::thread> threads_;
  dom::parser inline_parser_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Job> queue_;
  bool done_ = false;
  std::atomic<bool> failed_ = false;
  std::exception_ptr error_;
};

// Reads a file or stdin in chunks, appending to a buffer.
class ChunkReader {
 public:
  explicit ChunkReader(const std::string& path) : stdin_(path == "-") {
    fd_ = stdin_ ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw TraceError(path, "cannot open", std::strerror(errno));
    source_ = stdin_ ? "<stdin>" : path;
  }
  ~ChunkReader() {
    if (!stdin_ && fd_ >= 0) ::close(fd_);
  }
  ChunkReader(const ChunkReader&) = delete;
  // Bytes left to read in a regular file (0 if unknown).
  size_t remaining() const {
    struct stat st {};
    if (stdin_ || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    return at >= 0 && st.st_size > at ? static_cast<size_t>(st.st_size - at) : 0;
  }
  ChunkReader& operator=(const ChunkReader&) = delete;
  // Appends up to `chunk` bytes; 0 at the end.
  size_t append(std::string& buf, size_t chunk) {
    const size_t at = buf.size();
    buf.resize(at + chunk);
    for (;;) {
      const ssize_t n = ::read(fd_, buf.data() + at, chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        buf.resize(at);
        throw TraceError(source_, "cannot read", std::strerror(errno));
      }
      buf.resize(at + static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
  }
  const std::string& source() const { return source_; }

 private:
  bool stdin_;
  int fd_ = -1;
  std::string source_;
};

size_t kChunk = size_t(1) << 22;  // stream_chunk_bytes

// The scans below look at every byte, eight at a time: the first byte of a word that
// is a quote or backslash (in strings), or a quote or bracket (inside a unit).
constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
inline uint64_t zero_bytes(uint64_t v) {
  return (v - kOnes) & ~v & kHighs;
}  // first is exact
inline uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
// Bytes that are '"' or '\\'.
inline uint64_t string_stops(uint64_t v) {
  return zero_bytes(v ^ (kOnes * '"')) | zero_bytes(v ^ (kOnes * '\\'));
}
// Bytes that are '"', '{', '}', '[' or ']' ('[' and ']' are '{' and '}' without 0x20).
inline uint64_t structural_stops(uint64_t v) {
  const uint64_t lower = v | (kOnes * 0x20);
  return zero_bytes(v ^ (kOnes * '"')) | zero_bytes(lower ^ (kOnes * '{')) |
         zero_bytes(lower ^ (kOnes * '}'));
}
template <typename Stops, typename IsStop>
inline const char* find_stop(const char* p, const char* end, Stops stops, IsStop is_stop) {
  for (; end - p >= 8; p += 8)
    if (const uint64_t m = stops(load8(p))) return p + (__builtin_ctzll(m) >> 3);
  while (p < end && !is_stop(*p)) ++p;
  return p;
}
// The closing quote of a string whose content starts at p, or end if it is not in
// [p, end); `escaped`: the previous chunk ended with a backslash (kept across calls).
const char* string_end(const char* p, const char* end, bool& escaped) {
  if (escaped) {
    if (p == end) return end;
    ++p;
    escaped = false;
  }
  for (;;) {
    p = find_stop(p, end, string_stops, [](char c) { return c == '"' || c == '\\'; });
    if (p == end || *p == '"') return p;
    if (p + 1 == end) {  // a backslash ends the chunk
      escaped = true;
      return end;
    }
    p += 2;
  }
}
const char* skip_plain(const char* p, const char* end) {
  return find_stop(p, end, structural_stops,
                   [](char c) { return c == '"' || c == '{' || c == '}' || c == '[' || c == ']'; });
}

// Inside a unit, from p (not in a string): brackets and strings only, up to the closing
// bracket met at depth `floor` (returned, not consumed) or the end (end returned;
// `in_string`, `escaped` say where it stopped). 64 bytes at a time as bit masks (SSE2):
// quotes, then strings as the prefix XOR of the quotes, then the brackets outside them;
// a block with a backslash, and the last bytes, go byte by byte as before.
#if defined(__SSE2__)
struct BlockMasks {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};
inline BlockMasks block_masks(const char* p) {
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), lower = _mm_set1_epi8(0x20);
  BlockMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i l = _mm_or_si128(v, lower);  // '[' -> '{', ']' -> '}'
    auto bits = [&](__m128i eq) {
      return uint64_t(static_cast<uint16_t>(_mm_movemask_epi8(eq))) << (16 * k);
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_cmpeq_epi8(l, open));
    m.close |= bits(_mm_cmpeq_epi8(l, close));
  }
  return m;
}
inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#endif
const char* scan_inside(const char* p, const char* end, int& depth, int floor, bool& in_string,
                        bool& escaped) {
  for (;;) {
#if defined(__SSE2__)
    if (end - p >= 64) {
      const BlockMasks m = block_masks(p);
      if (m.backslash == 0) {
        const uint64_t inside = prefix_xor(m.quote);  // from an opening quote to its close
        for (uint64_t st = (m.open | m.close) & ~inside; st; st &= st - 1) {
          const int i = __builtin_ctzll(st);
          if (m.open >> i & 1) {
            ++depth;
          } else {
            if (depth <= floor) return p + i;
            --depth;
          }
        }
        if (inside >> 63) {  // a string goes on past the block
          p = string_end(p + 64, end, escaped);
          if (p == end) {
            in_string = true;
            return end;
          }
          ++p;
        } else {
          p += 64;
        }
        continue;
      }
    }
#endif
    const char* const lim = std::min(end, p + 64);
    while (p < lim) {
      p = skip_plain(p, lim);
      if (p == lim) break;
      const char x = *p;
      if (x == '"') {
        p = string_end(p + 1, end, escaped);
        if (p == end) {
          in_string = true;
          return end;
        }
        ++p;
      } else if (x == '{' || x == '[') {
        ++depth;
        ++p;
      } else if (depth > floor) {
        --depth;
        ++p;
      } else {
        return p;
      }
    }
    if (p >= end) return end;
  }
}

// Collects what the units report: summed diagnostics, skipped units.
struct StreamSink {
  std::mutex mutex;
  std::vector<std::pair<std::string, uint64_t>> diagnostics;
  std::vector<SpanStream::Skipped> skipped;
  std::vector<size_t> skipped_index;
  void add(const std::vector<std::pair<std::string, uint64_t>>& d) {
    std::lock_guard lock(mutex);
    for (const auto& [key_, n] : d) {
      const std::string& key = key_;  // clang 14 cannot capture a structured binding
      auto it = std::find_if(diagnostics.begin(), diagnostics.end(),
                             [&](const auto& e) { return e.first == key; });
      if (it == diagnostics.end())
        diagnostics.emplace_back(key, n);
      else
        it->second += n;
    }
  }
  void skip(size_t index, std::string where, uint64_t byte, std::string error) {
    std::lock_guard lock(mutex);
    skipped.push_back({std::move(where), byte, std::move(error)});
    skipped_index.push_back(index);
  }
  void finish(SpanStream& out) {
    std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
      return diagnostic_rank(a.first) < diagnostic_rank(b.first);
    });
    std::vector<size_t> order(skipped.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return skipped_index[a] < skipped_index[b]; });
    for (size_t i : order) out.skipped.push_back(std::move(skipped[i]));
    if (!out.skipped.empty())
      diagnostics.emplace_back(out.format + ".skipped_traces", out.skipped.size());
    out.diagnostics = std::move(diagnostics);
  }
};

// Jaeger: the elements of the top-level "data" array, found by a scan that follows
// strings and brackets only; each is parsed on its own. A file of another shape (one
// trace object, "data" not an array, not an object at the top) is read whole, as
// parse_jaeger does.
void stream_jaeger(const std::string& path, unsigned threads, const SpanUnitFn& fn,
                   SpanStream& out) {
  ChunkReader reader(path);
  const std::string& source = reader.source();
  out.source = source;
  out.format = "jaeger";
  StreamSink sink;
  UnitWorkers workers(threads, [&](UnitWorkers::Job& job, dom::parser& parser) {
    if (job.ready) {
      fn(job.index, job.set);
      sink.add(job.set.diagnostics);
      return;
    }
    SpanSet set;
    try {
      if (job.cut) {
        // The file ends inside this trace: its complete spans, as parse_jaeger keeps them.
        std::string text = "{\"data\": [";
        text.append(job.text());
        set = parse_jaeger(text, source);
      } else {
        dom::element root;
        if (auto err = parser.parse(job.bytes.data() + job.off, job.len, false).get(root)) {
          const std::string_view text = job.text();
          sink.skip(job.index, job.where, job.byte,
                    source + ": byte " + std::to_string(job.byte + json::error_offset(text)) +
                        ": invalid JSON: " + simdjson::error_message(err));
          return;
        }
        JaegerReader r(source, "jaeger");
        r.trace(root, job.where);
        set = r.done();
      }
    } catch (const TraceError& e) {
      sink.skip(job.index, job.where, job.byte, e.what());
      return;
    }
    fn(job.index, set);
    sink.add(set.diagnostics);
  });

  std::string buf;
  size_t pos = 0;     // scan position in buf
  uint64_t base = 0;  // file offset of buf[0]
  enum class Mode { prefix, data, after, whole } mode = Mode::prefix;
  std::array<char, 3> open{};  // bracket kinds at depths 0..2
  int depth = 0;
  bool in_string = false, escaped = false, eof = false, bad_element = false;
  size_t string_start = 0;
  std::string last_string;  // prefix mode: the last string at depth 1 (a key)
  size_t unit_start = std::string::npos, index = 0;
  auto fail = [&](size_t at, const char* what) {
    throw TraceError(source, "byte " + std::to_string(base + at),
                     std::string("invalid JSON: ") + what);
  };
  // A trace of 4 chunks or more is read span by span: its spans in batches as they
  // arrive (the bytes of a batch are released once read), the rest of it (its skeleton:
  // the trace object with an empty "spans" array, "processes" included) kept and read
  // when the trace ends. Memory: a chunk, the skeleton and the trace's SpanSet.
  constexpr size_t npos = std::string::npos;
  enum class In { other, spans, processes };
  struct BigTrace {
    bool on = false;
    std::unique_ptr<JaegerReader> reader;
    size_t index = 0;
    uint64_t byte = 0;
    std::string where, key;  // key: the last string at depth 3 (a member's name)
    In in = In::other;
    bool had_spans = false;
    size_t batch = npos;     // spans: start of the bytes not read yet
    size_t last_end = npos;  // spans: end of the last complete element
    size_t elem = npos;      // processes: its '{'
    size_t copied = npos;    // skeleton: buf[copied, ...) not appended yet (npos in spans)
    std::string skeleton, processes;
    size_t spans = 0;   // spans read
    std::string error;  // the first error: the trace is skipped
  } big;
  dom::parser big_parser;
  std::string batch_text;
  auto big_fail = [&](std::string error) {
    if (big.error.empty()) big.error = std::move(error);
  };
  // Reads the spans in buf[big.batch, upto) (complete elements after an optional comma).
  auto big_flush = [&](size_t upto) {
    if (big.batch == npos || upto == npos || upto <= big.batch) return;
    if (big.error.empty()) {
      std::string_view t(buf.data() + big.batch, upto - big.batch);
      size_t lead = 0;
      while (lead < t.size() &&
             (t[lead] == ' ' || t[lead] == '\t' || t[lead] == '\r' || t[lead] == '\n'))
        ++lead;
      if (lead < t.size() && t[lead] == ',') ++lead;
      batch_text.assign("[");
      batch_text.append(t.substr(lead));
      batch_text.append("]");
      const size_t len = batch_text.size();
      batch_text.append(simdjson::SIMDJSON_PADDING, ' ');
      dom::element batch;
      if (auto err = big_parser.parse(batch_text.data(), len, false).get(batch)) {
        const size_t off = json::error_offset(std::string_view(batch_text).substr(0, len));
        big_fail(source + ": byte " +
                 std::to_string(base + big.batch + lead + (off > 0 ? off - 1 : 0)) +
                 ": invalid JSON: " + simdjson::error_message(err));
      } else {
        try {
          big.reader->spans(batch, big.where, big.spans);
        } catch (const TraceError& e) {
          big_fail(e.what());
        }
      }
    }
    big.batch = upto;
  };
  // The trace ends (cut: the file ends inside it): its SpanSet to a worker, or skipped.
  auto big_finish = [&](bool cut) {
    SpanSet set;
    if (big.error.empty()) {
      try {
        JaegerReader& r = *big.reader;
        if (cut) {
          r.cut_ = true;
          r.set_.count("truncated_file", 1);
          dom::element procs;
          if (!big.processes.empty()) {
            if (auto err = big_parser.parse(big.processes).get(procs))
              big_fail(source + ": " + big.where +
                       ": invalid JSON in \"processes\": " + simdjson::error_message(err));
            else
              r.cut_processes(procs, big.where);
          }
        } else {
          dom::element root;
          if (auto err = big_parser.parse(big.skeleton).get(root))
            big_fail(source + ": byte " + std::to_string(big.byte) + ": " + big.where +
                     ": invalid JSON outside its spans: " + simdjson::error_message(err));
          else
            r.trace(root, big.where);
        }
        if (big.error.empty()) {
          r.resolve_deferred();
          set = r.done();
        }
      } catch (const TraceError& e) {
        big_fail(e.what());
      }
    }
    if (!big.error.empty()) {
      sink.skip(big.index, big.where, big.byte, big.error);
    } else {
      UnitWorkers::Job job;
      job.index = big.index;
      job.ready = true;
      job.set = std::move(set);
      workers.push(std::move(job));
    }
    big = BigTrace{};
  };
  for (;;) {
    if (pos == buf.size()) {
      if (eof) break;
      if (mode == Mode::data && !big.on && unit_start != npos &&
          buf.size() - unit_start >= 4 * kChunk) {
        // A large trace: read again from its start, span by span.
        ++out.span_by_span;
        big.on = true;
        big.reader = std::make_unique<JaegerReader>(source, "jaeger");
        big.index = index;
        big.byte = base + unit_start;
        big.where = "data[" + std::to_string(index) + "]";
        big.copied = unit_start;
        pos = unit_start;
        depth = 2;
        in_string = escaped = false;
        continue;
      }
      if (big.on) {
        if (big.in == In::spans) big_flush(big.last_end);
        size_t keep = pos;
        if (big.in == In::spans) keep = std::min(keep, big.batch);
        if (big.in == In::processes) keep = std::min(keep, big.elem);
        if (in_string && depth == 3) keep = std::min(keep, string_start);
        if (big.copied != npos) {
          big.skeleton.append(buf, big.copied, pos - big.copied);
          big.copied = pos;
        }
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        for (size_t* x : {&big.batch, &big.last_end, &big.elem, &big.copied, &string_start})
          if (*x != npos) *x = *x >= keep ? *x - keep : 0;
        unit_start = 0;
      } else if (mode == Mode::data || mode == Mode::after) {
        const size_t keep = unit_start != std::string::npos ? unit_start : pos;
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        if (unit_start != std::string::npos) unit_start = 0;
      }
      // A trace larger than a few chunks: room for the rest of the file at once, so that
      // growing the buffer never holds two copies (pages not read into cost nothing).
      if (buf.size() >= 16 * kChunk && buf.size() + kChunk > buf.capacity())
        buf.reserve(buf.size() + reader.remaining() + kChunk + simdjson::SIMDJSON_PADDING);
      if (reader.append(buf, kChunk) == 0) eof = true;
      continue;
    }
    const char* p = buf.data() + pos;
    const char* const end = buf.data() + buf.size();
    if (in_string) {
      p = string_end(p, end, escaped);
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
      in_string = false;
      if (mode == Mode::prefix && depth == 1)
        last_string.assign(buf, string_start, pos - string_start);
      if (big.on && depth == 3) big.key.assign(buf, string_start, pos - string_start);
      ++pos;
      continue;
    }
    if (big.on && depth >= 3) {
      // Inside a trace read span by span: as the loop below, and it notes the members
      // "spans" (batches of spans) and "processes", and keeps the rest as the skeleton.
      while (p < end) {
        if (depth >= 5) {
          // Inside a span (or deeper in the skeleton): up to the bracket back to depth 4.
          p = scan_inside(p, end, depth, 5, in_string, escaped);
          if (p == end) break;
        }
        p = skip_plain(p, end);
        if (p == end) break;
        const char x = *p;
        const size_t at = static_cast<size_t>(p - buf.data());
        if (x == '"') {
          p = string_end(p + 1, end, escaped);
          if (p == end) {
            in_string = true;
            string_start = at + 1;
            break;
          }
          if (depth == 3) big.key.assign(buf, at + 1, static_cast<size_t>(p - buf.data()) - at - 1);
          ++p;
        } else if (x == '{' || x == '[') {
          if (depth == 3) {
            big.in = In::other;
            if (x == '[' && big.key == "spans" && !big.had_spans) {
              big.in = In::spans;
              big.had_spans = true;
              big.skeleton.append(buf, big.copied, at + 1 - big.copied);
              big.copied = npos;
              big.batch = at + 1;
              big.last_end = npos;
            } else if (x == '{' && big.key == "processes") {
              big.in = In::processes;
              big.elem = at;
            }
          }
          ++depth;
          ++p;
        } else if (depth > 3) {
          --depth;
          if (depth == 4 && big.in == In::spans) {
            big.last_end = at + 1;
          } else if (depth == 3 && big.in == In::spans) {  // the end of "spans"
            big_flush(at);
            big.batch = big.last_end = npos;
            big.copied = at;
            big.in = In::other;
          } else if (depth == 3 && big.in == In::processes) {
            // A cut trace keeps what precedes its last complete span (as parse_jaeger
            // does): "processes" only when they come before "spans".
            if (!big.had_spans) big.processes.assign(buf, big.elem, at + 1 - big.elem);
            big.elem = npos;
            big.in = In::other;
          }
          ++p;
        } else {
          break;  // the end of the trace (handled below)
        }
      }
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
    }
    if (depth >= 3) {
      // Inside a trace, its brackets and strings only, up to the bracket that closes the
      // trace itself (handled below).
      p = scan_inside(p, end, depth, 3, in_string, escaped);
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
    }
    const char c = *p;
    switch (c) {
      case ' ':
      case '\t':
      case '\r':
      case '\n':
        break;
      case '"':
        in_string = true;
        string_start = pos + 1;
        if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) bad_element = true;
        break;
      case '{':
      case '[':
        if (depth == 0 && mode == Mode::prefix && c != '{') mode = Mode::whole;
        if (mode == Mode::prefix && depth == 1 && c == '[' && last_string == "data") {
          mode = Mode::data;
          last_string.clear();
        } else if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) {
          if (c == '{')
            unit_start = pos;
          else
            bad_element = true;
        }
        if (depth < 3) open[static_cast<size_t>(depth)] = c;
        ++depth;
        break;
      case '}':
      case ']':
        if (depth == 0) fail(pos, "unbalanced closing bracket");
        --depth;
        if (depth < 3 && open[static_cast<size_t>(depth)] != (c == '}' ? '{' : '['))
          fail(pos, "mismatched closing bracket");
        if (mode == Mode::data && depth == 2 && big.on) {
          big.skeleton.append(buf, big.copied, pos + 1 - big.copied);
          big_finish(false);
          ++index;
          unit_start = npos;
        } else if (mode == Mode::data && depth == 2 && unit_start != std::string::npos) {
          UnitWorkers::Job job;
          job.index = index++;
          job.byte = base + unit_start;
          job.where = "data[" + std::to_string(job.index) + "]";
          job.len = pos + 1 - unit_start;
          if (job.len < 4 * kChunk) {
            job.bytes.reserve(job.len + simdjson::SIMDJSON_PADDING);
            job.bytes.assign(buf, unit_start, job.len);
          } else {
            // A large trace is not copied: the buffer goes with it, the rest stays.
            std::string rest(buf, pos + 1);
            job.bytes = std::move(buf);
            job.bytes.resize(pos + 1);
            job.off = unit_start;
            buf = std::move(rest);
            base += pos + 1;
            pos = static_cast<size_t>(-1);  // ++pos below: 0
          }
          job.bytes.append(simdjson::SIMDJSON_PADDING, ' ');
          unit_start = std::string::npos;
          workers.push(std::move(job));
        } else if (mode == Mode::data && depth == 1) {
          if (bad_element) {
            sink.skip(index, "data[" + std::to_string(index) + "]", base + pos,
                      source + ": data[" + std::to_string(index) + "]: must be an object");
            ++index;
            bad_element = false;
          }
          mode = Mode::after;
        }
        break;
      case ',':
        if (mode == Mode::data && depth == 2 && bad_element) {
          sink.skip(index, "data[" + std::to_string(index) + "]", base + pos,
                    source + ": data[" + std::to_string(index) + "]: must be an object");
          ++index;
          bad_element = false;
        }
        break;
      default:
        if (depth == 0) {
          if (mode == Mode::prefix && (c == '\xEF' || c == '\xBB' || c == '\xBF')) break;  // BOM
          if (mode == Mode::prefix) mode = Mode::whole;
          if (mode == Mode::after) fail(pos, "text after the document");
        }
        if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) bad_element = true;
        break;
    }
    if (mode == Mode::whole) break;
    if (depth == 0 && mode == Mode::prefix && (c == '}' || c == ']')) {
      mode = Mode::whole;  // a document without a "data" array
      break;
    }
    ++pos;
  }
  if (mode == Mode::prefix || mode == Mode::whole) {
    // Not a stream of traces: the whole file at once (an error is the file's).
    workers.finish();
    while (reader.append(buf, kChunk) > 0) {
    }
    SpanSet set = parse_jaeger(buf, source);
    fn(0, set);
    out.units = 1;
    out.diagnostics = set.diagnostics;
    return;
  }
  if (depth > 0) {
    if (big.on) {
      if (big.in == In::spans) big_flush(big.last_end);
      big_finish(true);
      ++index;
    } else if (unit_start != std::string::npos) {
      UnitWorkers::Job job;
      job.index = index++;
      job.byte = base + unit_start;
      job.where = "data[" + std::to_string(job.index) + "]";
      job.len = buf.size() - unit_start;
      job.bytes.assign(buf, unit_start, job.len);
      job.cut = true;
      workers.push(std::move(job));
    } else {
      sink.add({{"jaeger.truncated_file", 1}});
    }
  }
  workers.finish();
  workers.rethrow();
  out.units = index;
  sink.finish(out);
}

// OTLP: top-level documents (one request per line, or one request over the whole file),
// each parsed on its own; their spans are gathered per trace id, and a trace is complete
// once `gap` documents have followed its last span (or at the end of the file).
void stream_otlp(const std::string& path, unsigned threads, size_t gap, const SpanUnitFn& fn,
                 SpanStream& out) {
  ChunkReader reader(path);
  const std::string& source = reader.source();
  out.source = source;
  out.format = "otlp";
  StreamSink sink;
  UnitWorkers workers(threads, [&](UnitWorkers::Job& job, dom::parser&) {
    fn(job.index, job.set);
    sink.add(job.set.diagnostics);
  });
  struct Pending {
    SpanSet set;
    size_t index = 0, last_doc = 0;
  };
  std::unordered_map<std::string, Pending> pending;
  std::unordered_set<std::string> closed;
  size_t next_index = 0, docs = 0;
  uint64_t negative = 0, cut_traces = 0;
  auto close = [&](Pending& p) {
    resolve_spans(p.set);
    UnitWorkers::Job job;
    job.index = p.index;
    job.set = std::move(p.set);
    workers.push(std::move(job));
  };
  auto take = [&](const SpanSet& from) {
    std::string trace, text;
    for (const Span& s : from.spans) {
      trace.clear();
      from.ids.append(s.trace, trace);
      auto it = pending.find(trace);
      if (it == pending.end()) {
        if (closed.count(trace)) ++cut_traces;  // a later piece of a trace already computed
        it = pending.emplace(trace, Pending{}).first;
        it->second.index = next_index++;
        it->second.set.source = source;
        it->second.set.format = "otlp";
      }
      Pending& p = it->second;
      p.last_doc = docs;
      SpanSet& to = p.set;
      auto name = [&](uint32_t x) { return to.strings.id(from.str(x)); };
      auto id = [&](uint32_t x) {
        text.clear();
        from.ids.append(x, text);
        return to.ids.id(text);
      };
      Span t = s;
      t.trace = id(s.trace);
      t.id = id(s.id);
      t.service = name(s.service);
      t.operation = name(s.operation);
      if (s.thread != kNoSpan) t.thread = name(s.thread);
      t.refs_begin = static_cast<uint32_t>(to.refs.size());
      for (uint32_t r = s.refs_begin; r < s.refs_end; ++r)
        to.refs.push_back(
            {id(from.refs[r].trace), id(from.refs[r].span_id), from.refs[r].child_of});
      t.refs_end = static_cast<uint32_t>(to.refs.size());
      to.spans.push_back(t);
    }
  };
  auto close_quiet = [&] {
    for (auto it = pending.begin(); it != pending.end();) {
      if (docs - it->second.last_doc > gap) {
        close(it->second);
        closed.insert(it->first);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  };
  dom::parser parser;
  auto document = [&](std::string_view text, uint64_t byte) {
    const std::string where = docs == 0 ? "" : "document " + std::to_string(docs + 1) + ": ";
    const std::string name = "document " + std::to_string(docs + 1);
    simdjson::padded_string padded(text);
    dom::element root;
    if (auto err = parser.parse(padded).get(root)) {
      sink.skip(docs, name, byte,
                source + ": byte " + std::to_string(byte + json::error_offset(text)) +
                    ": invalid JSON: " + simdjson::error_message(err));
    } else {
      try {
        OtlpReader r(source, "otlp");
        r.document(root, where);
        negative += r.negative_;
        take(r.set_);
      } catch (const TraceError& e) {
        sink.skip(docs, name, byte, e.what());
      }
    }
    ++docs;
    close_quiet();
  };

  std::string buf;
  size_t pos = 0, doc_start = std::string::npos;
  uint64_t base = 0;
  int depth = 0;
  bool in_string = false, escaped = false, eof = false, scalar = false;
  for (;;) {
    if (pos == buf.size()) {
      if (eof) break;
      if (docs > 0) {  // before the first document ends, all is kept (see the end)
        const size_t keep = doc_start != std::string::npos ? doc_start : pos;
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        if (doc_start != std::string::npos) doc_start = 0;
      }
      if (reader.append(buf, kChunk) == 0) eof = true;
      continue;
    }
    if (in_string) {
      const char* q = string_end(buf.data() + pos, buf.data() + buf.size(), escaped);
      pos = static_cast<size_t>(q - buf.data());
      if (pos < buf.size()) {
        in_string = false;
        ++pos;
      }
      continue;
    }
    if (depth > 0 && !scalar) {
      pos = static_cast<size_t>(skip_plain(buf.data() + pos, buf.data() + buf.size()) - buf.data());
      if (pos == buf.size()) continue;
    }
    const char c = buf[pos];
    if (doc_start == std::string::npos) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
          (docs == 0 && (c == '\xEF' || c == '\xBB' || c == '\xBF'))) {
        ++pos;
        continue;
      }
      doc_start = pos;
      scalar = c != '{' && c != '[';
    }
    if (scalar) {  // not a request: up to the end of its line, reported as it fails to parse
      if (c == '\n') {
        document(std::string_view(buf).substr(doc_start, pos - doc_start), base + doc_start);
        doc_start = std::string::npos;
      }
      ++pos;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        document(std::string_view(buf).substr(doc_start, pos + 1 - doc_start), base + doc_start);
        doc_start = std::string::npos;
      }
    }
    ++pos;
  }
  if (docs == 0) {
    // No complete document: the whole file as parse_otlp reads it (a single request cut
    // short, or the error of a file that is not OTLP).
    workers.finish();
    SpanSet set = parse_otlp(buf, source);
    fn(0, set);
    out.units = 1;
    out.diagnostics = set.diagnostics;
    return;
  }
  if (doc_start != std::string::npos) {
    // The last request cut short: dropped if it is one line (the collector appending),
    // else reported.
    const std::string_view rest = std::string_view(buf).substr(doc_start);
    const size_t last = rest.find_last_not_of(" \t\r\n");
    if (rest.substr(0, last).find('\n') == std::string_view::npos && json::ends_inside_value(rest))
      sink.add({{"otlp.truncated_last_line", 1}});
    else
      document(rest, base + doc_start);
  }
  std::vector<Pending*> left;
  for (auto& [trace, p] : pending) left.push_back(&p);
  std::sort(left.begin(), left.end(),
            [](const Pending* a, const Pending* b) { return a->index < b->index; });
  for (Pending* p : left) close(*p);
  pending.clear();
  workers.finish();
  workers.rethrow();
  if (negative) sink.add({{"otlp.negative_durations", negative}});
  if (cut_traces) sink.add({{"otlp.cut_traces", cut_traces}});
  out.units = next_index;
  sink.finish(out);
}
}  // namespace

void set_stream_chunk_bytes(size_t bytes) {
  kChunk = std::max<size_t>(bytes, 1);
}

SpanStream stream_spans(const std::string& path, std::string_view importer, unsigned threads,
                        const SpanUnitFn& fn, size_t trace_gap) {
  std::string_view name = importer;
  if (name == "auto") name = detect_importer(path).name;
  SpanStream out;
  if (name == "jaeger") {
    stream_jaeger(path, threads, fn, out);
    return out;
  }
  if (name == "otlp") {
    stream_otlp(path, threads, std::max<size_t>(trace_gap, 1), fn, out);
    return out;
  }
  // The errors of other formats, as read_spans gives them.
  SpanSet set = read_spans(path, name);
  out.source = set.source;
  out.format = set.format;
  fn(0, set);
  out.units = 1;
  out.diagnostics = set.diagnostics;
  return out;
}

}  // namespace snailtrail::importers
