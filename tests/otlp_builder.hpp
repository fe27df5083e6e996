// OTLP export requests for the receiver's tests, built by a small protobuf encoder of the
// tests' own (independent of the decoder in src/importers/otel/otlp_request.cpp), with the
// same spans also as OTLP/JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snailtrail::testing {

// Protobuf wire format, written by hand: tag = field << 3 | wire type.
class ProtoWriter {
 public:
  ProtoWriter& varint(uint32_t field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  ProtoWriter& fixed64(uint32_t field, uint64_t v) {
    key(field, 1);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  ProtoWriter& fixed32(uint32_t field, uint32_t v) {
    key(field, 5);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  ProtoWriter& bytes(uint32_t field, const std::string& b) {
    key(field, 2);
    raw_varint(b.size());
    out_ += b;
    return *this;
  }
  ProtoWriter& message(uint32_t field, const ProtoWriter& m) { return bytes(field, m.out_); }
  const std::string& str() const { return out_; }

 private:
  void key(uint32_t field, uint32_t type) { raw_varint(uint64_t{field} << 3 | type); }
  void raw_varint(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      if (v) b |= 0x80;
      out_.push_back(static_cast<char>(b));
    } while (v);
  }
  std::string out_;
};

// "0a1b" -> the bytes 0x0a 0x1b.
inline std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct TestLink {
  std::string trace, span;  // hex; trace empty: the span's own trace
};
struct TestSpan {
  std::string trace, id, parent;  // hex ids; parent empty: none
  std::string name;
  int64_t start = 0, end = 0;  // ns
  int kind = 0;
  std::string thread;  // "thread.name" attribute if not empty
  std::vector<TestLink> links;
};
struct TestResource {
  std::string service;  // "service.name"; empty: no resource
  std::vector<TestSpan> spans;
};

inline ProtoWriter string_attribute(const std::string& key, const std::string& value) {
  ProtoWriter any, kv;
  any.bytes(1, value);
  kv.bytes(1, key).message(2, any);
  return kv;
}

// ExportTraceServiceRequest { resource_spans = 1 { resource = 1, scope_spans = 2 { spans
// = 2 } } }, in field-number order.
inline std::string otlp_protobuf(const std::vector<TestResource>& resources) {
  ProtoWriter request;
  for (const TestResource& r : resources) {
    ProtoWriter rs, scope;
    for (const TestSpan& s : r.spans) {
      ProtoWriter span;
      span.bytes(1, unhex(s.trace)).bytes(2, unhex(s.id));
      if (!s.parent.empty()) span.bytes(4, unhex(s.parent));
      span.bytes(5, s.name);
      if (s.kind) span.varint(6, static_cast<uint64_t>(s.kind));
      span.fixed64(7, static_cast<uint64_t>(s.start)).fixed64(8, static_cast<uint64_t>(s.end));
      if (!s.thread.empty()) span.message(9, string_attribute("thread.name", s.thread));
      for (const TestLink& l : s.links) {
        ProtoWriter link;
        if (!l.trace.empty()) link.bytes(1, unhex(l.trace));
        link.bytes(2, unhex(l.span));
        span.message(13, link);
      }
      scope.message(2, span);
    }
    if (!r.service.empty()) {
      ProtoWriter resource;
      resource.message(1, string_attribute("service.name", r.service));
      rs.message(1, resource);
    }
    rs.message(2, scope);
    request.message(1, rs);
  }
  return request.str();
}

// The same request as OTLP/JSON, on one line.
inline std::string otlp_json(const std::vector<TestResource>& resources) {
  std::string out = "{\"resourceSpans\": [";
  for (size_t i = 0; i < resources.size(); ++i) {
    const TestResource& r = resources[i];
    out += i ? ", {" : "{";
    if (!r.service.empty())
      out +=
          "\"resource\": {\"attributes\": [{\"key\": \"service.name\", \"value\": "
          "{\"stringValue\": \"" +
          r.service + "\"}}]}, ";
    out += "\"scopeSpans\": [{\"spans\": [";
    for (size_t k = 0; k < r.spans.size(); ++k) {
      const TestSpan& s = r.spans[k];
      out += k ? ", " : "";
      out += "{\"traceId\": \"" + s.trace + "\", \"spanId\": \"" + s.id + "\"";
      if (!s.parent.empty()) out += ", \"parentSpanId\": \"" + s.parent + "\"";
      out += ", \"name\": \"" + s.name + "\"";
      if (s.kind) out += ", \"kind\": " + std::to_string(s.kind);
      out += ", \"startTimeUnixNano\": \"" + std::to_string(s.start) +
             "\", \"endTimeUnixNano\": " + std::to_string(s.end);
      if (!s.thread.empty())
        out += ", \"attributes\": [{\"key\": \"thread.name\", \"value\": {\"stringValue\": \"" +
               s.thread + "\"}}]";
      if (!s.links.empty()) {
        out += ", \"links\": [";
        for (size_t j = 0; j < s.links.size(); ++j) {
          out += j ? ", {" : "{";
          if (!s.links[j].trace.empty()) out += "\"traceId\": \"" + s.links[j].trace + "\", ";
          out += "\"spanId\": \"" + s.links[j].span + "\"}";
        }
        out += "]";
      }
      out += "}";
    }
    out += "]}]}";
  }
  return out + "]}";
}

}  // namespace snailtrail::testing
