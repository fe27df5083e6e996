// The OTLP receiver's HTTP routes (otlp_receiver.hpp): `POST /v1/traces` answered as the
// OTLP/HTTP specification says, `GET /metrics` and `GET /api/critical-path`.
#include <fmt/format.h>
#include <httplib.h>

#include <cctype>

#include "importers/otel/otlp_request.hpp"
#include "serve/http_front.hpp"
#include "serve/otlp_receiver.hpp"
#include "trace/json_text.hpp"

namespace snailtrail::serve {

using importers::OtlpEncoding;

namespace {

constexpr const char* kProtobufType = "application/x-protobuf";
constexpr const char* kJsonType = "application/json";

// google.rpc.Status codes of the error bodies.
constexpr int kInvalidArgument = 3, kResourceExhausted = 8;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_varint(out, uint64_t{field} << 3 | 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}
std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s, kJsonPlain);
  return out;
}

void set_body(httplib::Response& res, OtlpEncoding e, std::string body) {
  res.set_content(std::move(body), e == OtlpEncoding::json ? kJsonType : kProtobufType);
}

// A google.rpc.Status {code, message}: the body of the OTLP error responses.
void fail(httplib::Response& res, int http_status, OtlpEncoding e, int code,
          const std::string& message) {
  res.status = http_status;
  std::string body;
  if (e == OtlpEncoding::json) {
    body = fmt::format("{{\"code\": {}, \"message\": {}}}", code, json_string(message));
  } else {
    put_varint(body, 1 << 3 | 0);
    put_varint(body, static_cast<uint64_t>(code));
    put_bytes(body, 2, message);
  }
  set_body(res, e, std::move(body));
}

// ExportTraceServiceResponse: empty, or partial_success {rejected_spans, error_message}.
void succeed(httplib::Response& res, OtlpEncoding e, uint64_t rejected, const std::string& why) {
  res.status = 200;
  std::string body;
  if (e == OtlpEncoding::json) {
    body = rejected == 0 ? "{}"
                         : fmt::format(R"({{"partialSuccess": {{"rejectedSpans": "{}", )"
                                       R"("errorMessage": {}}}}})",
                                       rejected, json_string(why));
  } else if (rejected > 0) {
    std::string partial;
    put_varint(partial, 1 << 3 | 0);
    put_varint(partial, rejected);
    put_bytes(partial, 2, why);
    put_bytes(body, 1, partial);
  }
  set_body(res, e, std::move(body));
}

// The media type of a Content-Type header, lowercase, without parameters.
std::string media_type(const std::string& header) {
  std::string t = header.substr(0, header.find(';'));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

}  // namespace

std::string OtlpReceiver::too_large_response(std::string_view head) {
  ++counters_.requests;
  ++counters_.too_large;
  std::string type;
  for (size_t at = 0; at < head.size();) {
    size_t nl = head.find('\n', at);
    if (nl == std::string_view::npos) nl = head.size();
    std::string line(head.substr(at, nl - at));
    if (media_type(line.substr(0, 13)) == "content-type:") type = media_type(line.substr(13));
    at = nl + 1;
  }
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.front()))) type.erase(0, 1);
  const OtlpEncoding e = type == kJsonType ? OtlpEncoding::json : OtlpEncoding::protobuf;
  httplib::Response res;
  fail(res, 413, e, kInvalidArgument,
       fmt::format("the request body is over {} bytes (--otlp-max-body)", opt_.max_body));
  return fmt::format(
      "HTTP/1.1 413 Payload Too Large\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      res.get_header_value("Content-Type"), res.body.size(), res.body);
}

void OtlpReceiver::add_routes() {
  // Checked before the body is read: a request without the token ingests nothing.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorize_http(opt_.auth, req, res, req.method != "GET"))
      return httplib::Server::HandlerResponse::Unhandled;
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& read) {
    ++counters_.requests;
    // The body, decompressed by httplib as it arrives; past the limit it is drained, not kept.
    std::string body;
    bool over = false;
    const bool read_ok = read([&](const char* data, size_t n) {
      if (!over && body.size() + n > opt_.max_body) {
        over = true;
        std::string().swap(body);
      }
      if (!over) body.append(data, n);
      return true;
    });
    const std::string type = media_type(req.get_header_value("Content-Type"));
    const OtlpEncoding e = type == kJsonType ? OtlpEncoding::json : OtlpEncoding::protobuf;
    if (type != kJsonType && type != kProtobufType) {
      ++counters_.unsupported_type;
      return fail(
          res, 415, OtlpEncoding::json, kInvalidArgument,
          "Content-Type must be application/x-protobuf or application/json, not \"" + type + "\"");
    }
    // httplib answers a Content-Length over the limit (set_payload_max_length) itself.
    if (over || (!read_ok && res.status == 413)) {
      ++counters_.too_large;
      return fail(
          res, 413, e, kInvalidArgument,
          fmt::format("the request body is over {} bytes (--otlp-max-body)", opt_.max_body));
    }
    if (!read_ok) {
      ++counters_.bad_requests;
      return fail(res, 400, e, kInvalidArgument, "the request body could not be read");
    }
    auto throttle = [&] {
      ++counters_.throttled;
      res.set_header("Retry-After", std::to_string(opt_.retry_after_s));
      fail(res, 429, e, kResourceExhausted,
           "the receiver's span buffer is full (--otlp-buffer); retry later");
    };
    if (likely_full()) return throttle();
    importers::OtlpRequest decoded;
    try {
      decoded = importers::decode_otlp_request(body, e, "request");
    } catch (const std::exception& err) {
      ++counters_.bad_requests;
      return fail(res, 400, e, kInvalidArgument, err.what());
    }
    const size_t n = decoded.spans.spans.size();
    if (n > 0 && !admit(decoded.spans)) return throttle();
    counters_.spans_accepted += n;
    counters_.spans_rejected += decoded.rejected;
    succeed(res, e, decoded.rejected, decoded.reject_reason);
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics() + live_->metrics(), "text/plain; version=0.0.4");
  });
  // The recent traces' critical paths, as `critical-path` gives them on a file of them.
  add_critical_path_route(*http_, *live_);
  // The slowest recent traces and their Waterfall (as on serve --http).
  add_slow_trace_routes(*http_, *slow_);
}

void add_critical_path_route(httplib::Server& http, const OtlpLivePaths& live) {
  http.Get("/api/critical-path", [&live](const httplib::Request& req, httplib::Response& res) {
    CriticalPathQuery q;
    try {
      q = parse_critical_path_query({req.params.begin(), req.params.end()});
    } catch (const std::invalid_argument& e) {
      res.status = 400;
      res.set_content(fmt::format("{{\"error\": {}}}\n", json_string(e.what())), kJsonType);
      return;
    }
    res.set_content(live.answer(q, steady_now_ns()), q.folded || q.diff ? "text/plain" : kJsonType);
  });
}

std::string OtlpReceiver::metrics() const {
  const OtlpCounters& c = counters_;
  std::string out;
  auto put = [&](const char* name, const char* type, const char* help, uint64_t v) {
    out += fmt::format(
        "# HELP snailtrail_otlp_{0} {1}\n# TYPE snailtrail_otlp_{0} {2}\n"
        "snailtrail_otlp_{0} {3}\n",
        name, help, type, v);
  };
  put("requests_total", "counter", "POST /v1/traces requests", c.requests);
  put("spans_accepted_total", "counter", "Spans accepted", c.spans_accepted);
  put("spans_rejected_total", "counter", "Spans rejected (partial success)", c.spans_rejected);
  put("bad_requests_total", "counter", "Requests answered 400", c.bad_requests);
  put("too_large_total", "counter", "Requests answered 413", c.too_large);
  put("unsupported_type_total", "counter", "Requests answered 415", c.unsupported_type);
  put("throttled_total", "counter", "Requests answered 429 (buffer full)", c.throttled);
  put("traces_written_total", "counter", "Critical paths written", c.traces_written);
  put("traces_evicted_total", "counter", "Traces completed early by the open-trace bounds",
      c.traces_evicted);
  put("open_traces", "gauge", "Traces still receiving spans", c.open_traces);
  put("open_spans", "gauge", "Spans of the open traces", c.open_spans);
  put("buffered_spans", "gauge", "Spans decoded, not yet grouped by trace", c.buffered_spans);
  put("slow_traces", "gauge", "Slow traces kept for /traces (--slow-traces)", slow_->size());
  put("slow_trace_spans", "gauge", "Spans of the slow traces kept (--slow-traces-spans)",
      slow_->spans());
  return out;
}

}  // namespace snailtrail::serve
