// Jaeger JSON reader: simdjson DOM -> SpanSet (otel_importer.hpp). Internal to the span
// importers: parse_jaeger and the Jaeger stream use it.
#pragma once

#include <array>
#include <unordered_map>

#include "importers/otel/span_readers.hpp"

namespace snailtrail::importers::otel_detail {

// The arrays whose elements a cut Jaeger file keeps whole (json_prefix.hpp): the traces
// of "data", and the spans of such a trace or of a single trace object at the top.
inline const std::initializer_list<std::string_view> kJaegerRecordArrays = {"data", "data[].spans",
                                                                            "spans"};

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
    const Fields f = fields_of(object_at(el, where));
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
    s.service = span_service(f, where);
    span_tags(f, s);
    const uint32_t refs_begin = static_cast<uint32_t>(set_.refs.size());
    span_references(f, s.trace, trace, where);
    // Old exports carry the parent as "parentSpanID" instead of a reference.
    const std::string_view parent = string_field(f, kParent, "parentSpanID", where, false);
    if (refs_begin == set_.refs.size() && !parent.empty() && parent != "0")
      set_.refs.push_back({s.trace, id_of(parent), true});
    add(s, refs_begin);
  }

  static Fields fields_of(dom::object o) {
    Fields f;
    for (dom::key_value_pair kv : o) {
      const int field = field_of(kv.key);
      if (field >= 0 && !(f.seen >> field & 1)) {
        f.seen |= 1u << field;
        f.value[static_cast<size_t>(field)] = kv.value;
      }
    }
    return f;
  }

  // Service: processID in the trace's processes, or an embedded "process". Read span by
  // span, the trace's "processes" come later: kNoSpan, and resolve_deferred() decides.
  uint32_t span_service(const Fields& f, const std::string& where) {
    const std::string_view pid = string_field(f, kProcessID, "processID", where, false);
    dom::element proc;
    const bool has_proc = f.get(kProcess, proc);
    if (!defer_) return service_of(pid, has_proc ? &proc : nullptr, where);
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
    return kNoSpan;
  }

  // The tags a span's kind and thread come from.
  void span_tags(const Fields& f, Span& s) {
    dom::element tags;
    if (!f.get(kTags, tags) || tags.type() != dom::element_type::ARRAY) return;
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
      if (key == "span.kind") s.kind = span_kind_named(text, &SpanKindName::tag);
      if (key == "thread.name") thread_name = text;
      if (key == "thread.id") thread_id = text;
    }
    if (!thread_name.empty() || !thread_id.empty())
      s.thread = intern(thread_name.empty() ? thread_id : thread_name);
  }

  // The span's "references" to set_.refs (trace: its trace, trace_text: that trace's id).
  void span_references(const Fields& f, uint32_t trace, std::string_view trace_text,
                       const std::string& where) {
    dom::element refs;
    size_t n = 0;
    if (!f.get(kReferences, refs)) return;
    if (refs.type() != dom::element_type::ARRAY) fail(where, "\"references\" must be an array");
    for (dom::element r : dom::array(refs)) {
      const std::string& rwhere = located(ref_where_, where, ".references", n++);
      dom::object ro = object_at(r, rwhere);
      const std::string_view type = string_of(ro, "refType", rwhere, false);
      const std::string_view rt = string_of(ro, "traceID", rwhere, false);
      const std::string_view rs = string_of(ro, "spanID", rwhere, true);
      set_.refs.push_back({rt.empty()         ? trace
                           : rt == trace_text ? last_trace_
                                              : id_of(rt),
                           id_of(rs), type != "FOLLOWS_FROM"});
    }
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
    set_.count(SpanDiagnostic::spans_without_process, unknown_process_);
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
