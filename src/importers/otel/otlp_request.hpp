// One OTLP/HTTP trace export request (`POST /v1/traces`: an ExportTraceServiceRequest) ->
// spans in the model the OTLP/JSON file reader produces (spans.hpp), so that the live
// receiver (serve --otlp, docs/SERVE.md) computes what `critical-path` computes on files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "importers/otel/spans.hpp"

namespace snailtrail::importers {

enum class OtlpEncoding : uint8_t { protobuf, json };

struct OtlpRequest {
  SpanSet spans;              // not resolved: its traces may continue in other requests
  uint64_t rejected = 0;      // spans left out: without a trace or span id, or a bad time
  std::string reject_reason;  // why the first one was (empty if none was)
};

// Decodes a (decompressed) request body. Protobuf: our own reader of the wire format;
// unknown fields are skipped, nothing is decoded recursively. JSON: the OTLP/JSON file
// reader on one document (hex ids, nanoseconds as numbers or strings). Throws TraceError
// naming the byte offset (protobuf, JSON syntax) or the span for a malformed body.
OtlpRequest decode_otlp_request(std::string_view body, OtlpEncoding encoding,
                                const std::string& source);

}  // namespace snailtrail::importers
