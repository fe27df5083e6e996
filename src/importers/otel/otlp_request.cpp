// OTLP/HTTP trace export requests (otlp_request.hpp): protobuf by our own wire-format
// reader, JSON by the OTLP/JSON file reader.
#include "importers/otel/otlp_request.hpp"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "importers/otel/otlp_reader.hpp"

namespace snailtrail::importers {

namespace {

// Protobuf wire types.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

// A protobuf message read field by field; nested messages are readers of their own bytes,
// so nothing recurses beyond the fixed depth of the OTLP schema. Every read is bounds
// checked: a truncated or malformed body throws TraceError at its byte offset.
class Wire {
 public:
  Wire(std::string_view bytes, size_t base, const std::string& source)
      : p_(bytes), base_(base), source_(source) {}

  bool more() const { return pos_ < p_.size(); }

  // The next field's tag. Field numbers start at 1; groups (wire types 3, 4) are not OTLP.
  void tag(uint32_t& field, uint32_t& type) {
    const size_t at = pos_;
    const uint64_t t = varint();
    field = static_cast<uint32_t>(t >> 3);
    type = static_cast<uint32_t>(t & 7);
    if (field == 0 || t >> 32 != 0) fail(at, "invalid field tag");
    if (type != kVarint && type != kFixed64 && type != kLen && type != kFixed32)
      fail(at, fmt::format("field {}: unsupported wire type {}", field, type));
  }

  uint64_t varint() {
    uint64_t v = 0;
    const size_t at = pos_;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == p_.size()) fail(at, "truncated varint");
      const auto b = static_cast<unsigned char>(p_[pos_++]);
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail(at, "varint longer than 10 bytes");
  }
  uint64_t fixed(size_t n) {
    if (p_.size() - pos_ < n)
      fail(pos_,
           fmt::format("truncated: a {}-byte fixed field, {} bytes left", n, p_.size() - pos_));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= uint64_t(static_cast<unsigned char>(p_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view bytes() {
    const size_t at = pos_;
    const uint64_t n = varint();
    if (n > p_.size() - pos_)
      fail(at, fmt::format("truncated: a field of {} bytes, {} left", n, p_.size() - pos_));
    const std::string_view b = p_.substr(pos_, n);
    pos_ += n;
    return b;
  }
  Wire message() {
    const std::string_view b = bytes();
    return Wire(b, base_ + pos_ - b.size(), source_);
  }
  void skip(uint32_t type) {
    if (type == kVarint)
      varint();
    else if (type == kFixed64)
      fixed(8);
    else if (type == kFixed32)
      fixed(4);
    else
      bytes();
  }
  // A field of the schema sent with another wire type.
  void expect(uint32_t field, uint32_t type, uint32_t want, const char* message) {
    if (type != want)
      fail(pos_, fmt::format("{} field {} has wire type {}, not {}", message, field, type, want));
  }

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw TraceError(source_, "byte " + std::to_string(base_ + at), "invalid protobuf: " + what);
  }

 private:
  std::string_view p_;
  size_t pos_ = 0;
  size_t base_;  // offset of p_ in the body
  const std::string& source_;
};

// ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1) -> SpanSet.
class ProtoDecoder {
 public:
  explicit ProtoDecoder(OtlpRequest& out) : out_(out) {}

  void request(Wire w) {
    uint32_t field, type;
    while (w.more()) {
      w.tag(field, type);
      if (field == 1) {
        w.expect(field, type, kLen, "ExportTraceServiceRequest");
        resource_spans(w.message());
      } else {
        w.skip(type);
      }
    }
    out_.spans.count(SpanDiagnostic::negative_durations, negative_);
  }

 private:
  // ResourceSpans: resource (1), scope_spans (2; 1000: instrumentation_library_spans of
  // OTLP before 1.0, the same layout). The resource may follow its spans on the wire.
  void resource_spans(Wire w) {
    std::string service = "unknown_service";
    scopes_.clear();
    uint32_t field, type;
    while (w.more()) {
      w.tag(field, type);
      if (field == 1) {
        w.expect(field, type, kLen, "ResourceSpans");
        resource(w.message(), service);
      } else if (field == 2 || field == 1000) {
        w.expect(field, type, kLen, "ResourceSpans");
        scopes_.push_back(w.message());
      } else {
        w.skip(type);
      }
    }
    const uint32_t service_id = out_.spans.strings.id(service);
    for (Wire& scope : scopes_) {
      while (scope.more()) {
        scope.tag(field, type);
        if (field == 2) {
          scope.expect(field, type, kLen, "ScopeSpans");
          span(scope.message(), service_id);
        } else {
          scope.skip(type);
        }
      }
    }
  }

  void resource(Wire w, std::string& service) {
    uint32_t field, type;
    while (w.more()) {
      w.tag(field, type);
      if (field == 1 && type == kLen) {
        std::string_view key;
        if (key_value(w.message(), key, value_) && key == "service.name") service = value_;
      } else {
        w.skip(type);
      }
    }
  }

  // KeyValue: key (1), AnyValue value (2) as text if a string, bool, int or double.
  bool key_value(Wire w, std::string_view& key, std::string& text) {
    bool has_value = false;
    uint32_t field, type;
    while (w.more()) {
      w.tag(field, type);
      if (field == 1 && type == kLen)
        key = w.bytes();
      else if (field == 2 && type == kLen)
        has_value = any_value(w.message(), text);
      else
        w.skip(type);
    }
    return has_value;
  }
  bool any_value(Wire w, std::string& text) {
    bool has = false;
    uint32_t field, type;
    while (w.more()) {
      w.tag(field, type);
      if (field == 1 && type == kLen) {
        text.assign(w.bytes());
      } else if (field == 2 && type == kVarint) {
        text = w.varint() ? "true" : "false";
      } else if (field == 3 && type == kVarint) {
        text = std::to_string(static_cast<int64_t>(w.varint()));
      } else if (field == 4 && type == kFixed64) {
        const uint64_t bits = w.fixed(8);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        text = fmt::format("{}", d);
      } else {
        w.skip(type);  // arrays, key-value lists, bytes: not a name
        continue;
      }
      has = true;
    }
    return has;
  }

  void span(Wire w, uint32_t service);
  void attributes(Wire w, uint32_t& thread, bool& by_name);
  void link(Wire w);
  void reject(const std::string& why) {
    if (out_.rejected++ == 0) out_.reject_reason = why;
  }

  OtlpRequest& out_;
  std::vector<Wire> scopes_;
  std::string value_;
  std::vector<std::pair<std::string_view, std::string_view>> links_;  // (trace, span) bytes
  uint64_t negative_ = 0;
};

// Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8,
// attributes 9, links 13.
void ProtoDecoder::span(Wire w, uint32_t service) {
  std::string_view trace, id, parent, name;
  uint64_t kind = 0, start = 0, end = 0;
  uint32_t thread = kNoSpan;
  bool thread_by_name = false;
  links_.clear();
  uint32_t field, type;
  while (w.more()) {
    w.tag(field, type);
    switch (field) {
      case 1:
      case 2:
      case 4:
      case 5:
        w.expect(field, type, kLen, "Span");
        (field == 1 ? trace : field == 2 ? id : field == 4 ? parent : name) = w.bytes();
        break;
      case 6:
        w.expect(field, type, kVarint, "Span");
        kind = w.varint();
        break;
      case 7:
      case 8:
        w.expect(field, type, kFixed64, "Span");
        (field == 7 ? start : end) = w.fixed(8);
        break;
      case 9:
        w.expect(field, type, kLen, "Span");
        attributes(w.message(), thread, thread_by_name);
        break;
      case 13:
        w.expect(field, type, kLen, "Span");
        link(w.message());
        break;
      default:
        w.skip(type);
    }
  }
  if (trace.empty() || id.empty()) return reject("a span without a trace or span id");
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  if (start > kMax || end > kMax) return reject("a span time beyond 2^63 - 1 ns");
  SpanSet& set = out_.spans;
  auto id_of = [&](std::string_view bytes) { return set.ids.id_of_bytes(bytes); };
  Span s;
  s.trace = id_of(trace);
  s.id = id_of(id);
  s.service = service;
  s.operation = set.strings.id(name);
  s.thread = thread;
  s.kind = kind >= 1 && kind <= 5 ? static_cast<SpanKind>(kind) : SpanKind::unspecified;
  s.start = static_cast<int64_t>(start);
  s.end = static_cast<int64_t>(end);
  if (s.end < s.start) {
    s.end = s.start;
    ++negative_;
  }
  // As the JSON reader: the parent first, then the links.
  s.refs_begin = static_cast<uint32_t>(set.refs.size());
  if (!parent.empty()) set.refs.push_back({s.trace, id_of(parent), true});
  for (auto [lt, ls] : links_)
    set.refs.push_back({lt.empty() ? s.trace : id_of(lt), id_of(ls), false});
  s.refs_end = static_cast<uint32_t>(set.refs.size());
  set.spans.push_back(s);
}

// The thread label: the first "thread.name", else the first "thread.id" (as the JSON
// reader).
void ProtoDecoder::attributes(Wire w, uint32_t& thread, bool& by_name) {
  std::string_view key;
  if (by_name || !key_value(w, key, value_)) return;
  if (key == "thread.name" || (key == "thread.id" && thread == kNoSpan)) {
    thread = out_.spans.strings.id(value_);
    by_name = key == "thread.name";
  }
}

// Link: trace_id 1, span_id 2; a link without a span id names nothing and is left out.
void ProtoDecoder::link(Wire w) {
  std::string_view trace, id;
  uint32_t field, type;
  while (w.more()) {
    w.tag(field, type);
    if (field == 1 || field == 2) {
      w.expect(field, type, kLen, "Link");
      (field == 1 ? trace : id) = w.bytes();
    } else {
      w.skip(type);
    }
  }
  if (!id.empty()) links_.emplace_back(trace, id);
}

OtlpRequest decode_json(std::string_view body, const std::string& source) {
  OtlpRequest out;
  simdjson::padded_string padded(body);
  otel_detail::dom::parser parser;
  otel_detail::dom::element root;
  if (auto err = parser.parse(padded).get(root))
    throw TraceError(source, "byte " + std::to_string(json::error_offset(body)),
                     std::string("invalid JSON: ") + simdjson::error_message(err));
  otel_detail::OtlpReader reader(source, "otlp");
  reader.rejected_ = &out.rejected;
  reader.document(root, "");
  if (out.rejected > 0) out.reject_reason = "a span without a \"traceId\" or \"spanId\"";
  reader.set_.count(SpanDiagnostic::negative_durations, reader.negative_);
  out.spans = std::move(reader.set_);
  return out;
}

}  // namespace

OtlpRequest decode_otlp_request(std::string_view body, OtlpEncoding encoding,
                                const std::string& source) {
  if (encoding == OtlpEncoding::json) return decode_json(body, source);
  OtlpRequest out;
  out.spans.source = source;
  out.spans.format = "otlp";
  ProtoDecoder(out).request(Wire(body, 0, source));
  return out;
}

}  // namespace snailtrail::importers
