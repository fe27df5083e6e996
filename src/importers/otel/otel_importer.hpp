// OpenTelemetry OTLP/JSON and Jaeger JSON importers (docs/IMPORTERS.md, "Spans").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "importers/importer.hpp"
#include "importers/otel/spans.hpp"

namespace snailtrail::importers {

// OTLP/JSON: one ExportTraceServiceRequest ({"resourceSpans": [...]}) or several, one per
// line (the collector's file exporter). Throws TraceError naming the byte or span.
SpanSet parse_otlp(std::string_view text, const std::string& source);
// Jaeger query API JSON ({"data": [{"traceID", "spans", "processes"}]}).
SpanSet parse_jaeger(std::string_view text, const std::string& source);

int sniff_otlp(std::string_view path, std::string_view head);
int sniff_jaeger(std::string_view path, std::string_view head);
Trace read_otlp(const std::string& path, const ImportOptions& options);
Trace read_jaeger(const std::string& path, const ImportOptions& options);
// The importers' descriptors (importer.hpp).
const Importer& otlp_descriptor();
const Importer& jaeger_descriptor();

// The resolved spans of a file in either format ("auto" detects it). Throws TraceError if
// the file is not a span trace.
SpanSet read_spans(const std::string& path, std::string_view importer = "auto");

// Streaming import (docs/IMPORTERS.md, "Streaming"): the file is read in chunks and cut
// into units, each a SpanSet of its own: a Jaeger export's `data` entries one by one (a
// file of another shape is one unit); OTLP's traces, gathered over the requests. `fn(unit, set)` is
// called for every unit, from `threads` worker threads (0: one per core; 1: the calling thread),
// units in any order; `unit` numbers them in file order. Memory: the units being worked on, not the
// file. A unit that does not parse or is invalid is skipped and listed in `skipped` (the
// others are still computed); an error outside any unit throws TraceError.
struct SpanStream {
  std::string source, format;
  std::vector<std::pair<std::string, uint64_t>> diagnostics;  // summed over the units
  struct Skipped {
    std::string where;  // "data[12]"
    uint64_t byte;      // offset of the unit in the file
    std::string error;
  };
  std::vector<Skipped> skipped;  // in file order
  size_t units = 0;
  size_t span_by_span = 0;  // Jaeger: traces of 4 read chunks or more, read span by span
};
using SpanUnitFn = std::function<void(size_t unit, const SpanSet& set)>;
// OTLP: a trace is complete once `trace_gap` documents (requests, lines of the
// collector's file) have followed its last span; a span of it arriving later starts a
// new piece, computed as a trace of its own and counted (`otlp.cut_traces`).
SpanStream stream_spans(const std::string& path, std::string_view importer, unsigned threads,
                        const SpanUnitFn& fn, size_t trace_gap = 64);
// The read chunk (default 4 MiB); a Jaeger trace of 4 chunks or more is read span by span
// (its spans in batches as they arrive, released once read; memory: a chunk, the trace's
// spans and the rest of its object), an OTLP document of 4 chunks or more is handed over
// with the read buffer instead of being copied. For tests: not thread-safe.
void set_stream_chunk_bytes(size_t bytes);

}  // namespace snailtrail::importers
