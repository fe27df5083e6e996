// OpenTelemetry OTLP/JSON and Jaeger JSON importers (docs/IMPORTERS.md, "Spans").
#pragma once

#include <string>
#include <string_view>

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

// The resolved spans of a file in either format ("auto" detects it). Throws TraceError if
// the file is not a span trace.
SpanSet read_spans(const std::string& path, std::string_view importer = "auto");

}  // namespace snailtrail::importers
