// Request-trace spans (OpenTelemetry OTLP/JSON, Jaeger JSON) in one model, and their
// mapping onto snailtrail events: spans -> activities on per-service lanes, parent/child
// and follows-from references -> messages (docs/IMPORTERS.md, "Spans").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "importers/common/activity_map.hpp"
#include "importers/common/json_util.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers {

inline constexpr uint32_t kNoSpan = UINT32_MAX;

enum class SpanKind : uint8_t { unspecified, internal, server, client, producer, consumer };
std::string_view name_of(SpanKind k);

struct SpanRef {
  uint32_t trace;    // interned trace id of the referenced span
  uint32_t span_id;  // interned span id
  bool child_of;     // CHILD_OF (a parent) vs FOLLOWS_FROM or an OTLP link
};

struct Span {
  uint32_t trace = 0, id = 0;  // interned ids (SpanSet::strings)
  uint32_t service = 0, operation = 0;
  uint32_t thread = kNoSpan;   // interned thread label, kNoSpan if unknown
  int64_t start = 0, end = 0;  // ns
  SpanKind kind = SpanKind::unspecified;
  uint32_t refs_begin = 0, refs_end = 0;  // SpanSet::refs; the first CHILD_OF is the parent
  // Filled by resolve_spans():
  uint32_t parent = kNoSpan;  // CHILD_OF parent in the file
  uint32_t depth = 0;
};

struct SpanSet {
  std::string source;
  std::string format;      // "otlp" or "jaeger": prefix of the diagnostics
  json::Interner strings;  // ids, services, operations, thread labels
  std::vector<Span> spans;
  std::vector<SpanRef> refs;
  std::vector<uint32_t> ref_target;  // per ref: span index or kNoSpan (resolve_spans)
  std::vector<std::pair<std::string, uint64_t>> diagnostics;  // "otlp.orphan_spans" -> n

  void count(const std::string& key, uint64_t n);
  const std::string& str(uint32_t id) const { return strings.names[id]; }
};

// Resolves references to span indices, breaks parent cycles, computes depths and counts
// problems (duplicate ids, orphans, cycles, negative durations already clamped by parsers).
void resolve_spans(SpanSet& set);

// Spans -> events (the set must be resolved).
Trace spans_to_trace(const SpanSet& set, const ActivityMap& map);

}  // namespace snailtrail::importers
