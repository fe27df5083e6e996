// Request-trace spans (OpenTelemetry OTLP/JSON, Jaeger JSON) in one model, and their
// mapping onto snailtrail events: spans -> activities on per-service lanes, parent/child
// and follows-from references -> messages (docs/IMPORTERS.md, "Spans").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "importers/common/activity_map.hpp"
#include "importers/common/json_util.hpp"
#include "trace/diagnostic_kind.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers {

inline constexpr uint32_t kNoSpan = UINT32_MAX;

enum class SpanKind : uint8_t { unspecified, internal, server, client, producer, consumer };
// The names of each kind, in SpanKind order: as Jaeger's "span.kind" tag and the outputs
// write it ("" when unspecified), and as OTLP/JSON writes its enum.
struct SpanKindName {
  std::string_view tag, otlp;
};
inline constexpr std::array<SpanKindName, 6> kSpanKindNames = {{
    {"", "SPAN_KIND_UNSPECIFIED"},
    {"internal", "SPAN_KIND_INTERNAL"},
    {"server", "SPAN_KIND_SERVER"},
    {"client", "SPAN_KIND_CLIENT"},
    {"producer", "SPAN_KIND_PRODUCER"},
    {"consumer", "SPAN_KIND_CONSUMER"},
}};
std::string_view name_of(SpanKind k);
// The kind whose name in `spelling` (&SpanKindName::tag or &SpanKindName::otlp) is
// `name`; unspecified if none is.
SpanKind span_kind_named(std::string_view name, std::string_view SpanKindName::*spelling);

struct SpanRef {
  uint32_t trace;    // trace id of the referenced span (SpanSet::ids)
  uint32_t span_id;  // span id (SpanSet::ids)
  bool child_of;     // CHILD_OF (a parent) vs FOLLOWS_FROM or an OTLP link
};

struct Span {
  uint32_t trace = 0, id = 0;           // SpanSet::ids
  uint32_t service = 0, operation = 0;  // SpanSet::strings
  uint32_t thread = kNoSpan;            // interned thread label, kNoSpan if unknown
  int64_t start = 0, end = 0;           // ns
  SpanKind kind = SpanKind::unspecified;
  uint32_t refs_begin = 0, refs_end = 0;  // SpanSet::refs; the first CHILD_OF is the parent
  // Filled by resolve_spans():
  uint32_t parent = kNoSpan;  // CHILD_OF parent in the file
  uint32_t depth = 0;
};

// Lowercase hex of `bytes`, as OTLP/JSON writes trace and span ids.
void append_hex(std::string_view bytes, std::string& out);

// Trace and span ids as dense numbers in first-seen order, without a heap string per id:
// lowercase hex of up to 32 digits (what Jaeger and OTLP write) is kept as a 128-bit
// number with its digit count, any other text in one arena. Two ids are the same iff
// their texts are.
class SpanIds {
 public:
  uint32_t id(std::string_view text);
  uint32_t find(std::string_view text) const;  // kNoSpan if never interned
  // The id of the lowercase hex text of `bytes` (an OTLP protobuf id), without writing
  // that text when it is at most 16 bytes.
  uint32_t id_of_bytes(std::string_view bytes);
  // The id here of id `id` of `from` (the same text), without writing the text of a hex id.
  uint32_t id_from(const SpanIds& from, uint32_t id);
  void append(uint32_t id, std::string& out) const;  // the id's text
  std::string text(uint32_t id) const {
    std::string s;
    append(id, s);
    return s;
  }
  size_t size() const { return keys_.size(); }

 private:
  static constexpr uint32_t kText = 0x80000000u;  // in Key::len: hi = arena offset
  struct Key {
    uint64_t hi = 0, lo = 0;
    uint32_t len = 0;  // digits, or kText | bytes
  };
  static bool hex_key(std::string_view text, Key& key);
  uint64_t hash(const Key& k) const;
  uint64_t probe_key(std::string_view text, Key& probe) const;
  bool same(const Key& k, std::string_view text, const Key& probe) const;
  uint32_t intern(const Key& probe, std::string_view text, uint64_t h);
  void grow();
  std::vector<Key> keys_;
  std::string arena_;
  std::vector<uint64_t> slots_;  // open addressing: fingerprint << 32 | id + 1, 0 empty
};

// What the span importers count, the same for both formats: each is a kind of the
// format's ("jaeger.orphan_spans", "otlp.orphan_spans"). The first kRankedSpanDiagnostics
// are listed in this order, the others as they come (span_stream.hpp).
enum class SpanDiagnostic : uint8_t {
  truncated_file,       // the document ends inside a trace or request: cut input
  truncated_last_line,  // OTLP one request per line: the last line is cut: cut input
  spans_without_process,
  negative_durations,
  duplicate_span_ids,
  orphan_spans,
  parent_cycles,
  children_starting_before_parent,
  links_before_source,
  cut_traces,          // OTLP stream: a trace's spans after it was closed (its gap)
  skipped_traces,      // stream: a trace that did not parse, skipped
  repeated_trace_ids,  // critical-path: one trace id in several units
  count,
};
inline constexpr size_t kRankedSpanDiagnostics = 7;

inline constexpr size_t kSpanDiagnosticCount = size_t(SpanDiagnostic::count);
using SpanKinds = std::array<DiagnosticKind, kSpanDiagnosticCount>;

// One format's kinds from their names, in SpanDiagnostic order.
constexpr SpanKinds span_kinds(const std::array<std::string_view, kSpanDiagnosticCount>& names) {
  SpanKinds kinds{};
  for (size_t i = 0; i < kSpanDiagnosticCount; ++i)
    kinds[i] =
        i <= size_t(SpanDiagnostic::truncated_last_line) ? cut_input(names[i]) : repaired(names[i]);
  return kinds;
}
inline constexpr SpanKinds kJaegerDiagnostics = span_kinds(
    {"jaeger.truncated_file", "jaeger.truncated_last_line", "jaeger.spans_without_process",
     "jaeger.negative_durations", "jaeger.duplicate_span_ids", "jaeger.orphan_spans",
     "jaeger.parent_cycles", "jaeger.children_starting_before_parent", "jaeger.links_before_source",
     "jaeger.cut_traces", "jaeger.skipped_traces", "jaeger.repeated_trace_ids"});
inline constexpr SpanKinds kOtlpDiagnostics = span_kinds(
    {"otlp.truncated_file", "otlp.truncated_last_line", "otlp.spans_without_process",
     "otlp.negative_durations", "otlp.duplicate_span_ids", "otlp.orphan_spans",
     "otlp.parent_cycles", "otlp.children_starting_before_parent", "otlp.links_before_source",
     "otlp.cut_traces", "otlp.skipped_traces", "otlp.repeated_trace_ids"});
// Both name the same counts, in the same order.
constexpr bool same_counts(const SpanKinds& a, const SpanKinds& b) {
  for (size_t i = 0; i < kSpanDiagnosticCount; ++i)
    if (a[i].name.substr(a[i].name.find('.')) != b[i].name.substr(b[i].name.find('.')))
      return false;
  return true;
}
static_assert(same_counts(kJaegerDiagnostics, kOtlpDiagnostics));

// The kind `d` of `format` ("jaeger", else OTLP).
inline const DiagnosticKind& span_diagnostic(std::string_view format, SpanDiagnostic d) {
  return (format == "jaeger" ? kJaegerDiagnostics : kOtlpDiagnostics)[size_t(d)];
}

struct SpanSet {
  std::string source;
  std::string format;      // "otlp" or "jaeger": prefix of the diagnostics
  json::Interner strings;  // services, operations, thread labels
  SpanIds ids;             // trace and span ids
  std::vector<Span> spans;
  std::vector<SpanRef> refs;
  std::vector<uint32_t> ref_target;  // per ref: span index or kNoSpan (resolve_spans)
  std::vector<std::pair<std::string, uint64_t>> diagnostics;  // "otlp.orphan_spans" -> n

  void count(SpanDiagnostic d, uint64_t n);
  const std::string& str(uint32_t id) const { return strings.names[id]; }
};

// Appends span `s` of `from` to `to`, its names, ids and references interned again in
// `to` (a set per trace has its own tables).
void copy_span(const SpanSet& from, const Span& s, SpanSet& to);

// Resolves references to span indices, breaks parent cycles, computes depths and counts
// problems (duplicate ids, orphans, cycles, negative durations already clamped by parsers).
void resolve_spans(SpanSet& set);

// Spans -> events (the set must be resolved).
Trace spans_to_trace(const SpanSet& set, const ActivityMap& map);

}  // namespace snailtrail::importers
