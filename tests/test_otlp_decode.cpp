// OTLP/HTTP export requests decoded (src/importers/otel/otlp_request.cpp): protobuf bodies
// built by the tests' own encoder (otlp_builder.hpp), compared with the same spans as
// OTLP/JSON through the file reader; malformed bodies; the spans grouped into traces
// (src/serve/otlp_traces.cpp) and their critical paths against hand-computed ones.
#include <gtest/gtest.h>

#include <random>

#include "importers/otel/otlp_request.hpp"
#include "otlp_builder.hpp"
#include "requests/critical_path.hpp"
#include "serve/otlp_traces.hpp"

namespace snailtrail::test_otlp_decode {
namespace {

using importers::decode_otlp_request;
using importers::OtlpEncoding;
using importers::SpanSet;
using testing::ProtoWriter;
using testing::TestResource;
using testing::TestSpan;

constexpr int64_t kMs = 1'000'000;
const std::string kTrace = "0af7651916cd43dd8448eb211c80319c";
const std::string kOther = "4bf92f3577b34da6a3ce929d0e0e4736";

std::string sid(int n) {  // span id n as 16 hex digits
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016x", n);
  return buf;
}

// The tree of the hand-computed example (times in ms):
//   A [0,100] root, service front
//     B [10,40] nested child, with C [15,35] nested in it (service back)
//     D [40,70] sequential after B
//     E [45,60] overlapping D, ending before it: not on the path
//     G [92,130] async: only a link to A, no parent; clipped to [92,100]
//   H [200,230] a second root without parent
std::vector<TestResource> example() {
  auto span = [](int id, int parent, const char* name, int64_t s, int64_t e) {
    TestSpan t;
    t.trace = kTrace;
    t.id = sid(id);
    t.parent = parent ? sid(parent) : "";
    t.name = name;
    t.start = s * kMs;
    t.end = e * kMs;
    return t;
  };
  TestSpan g = span(7, 0, "G", 92, 130);
  g.links.push_back({"", sid(1)});
  TestSpan b = span(2, 1, "B", 10, 40);
  b.thread = "worker-1";
  return {
      {"front", {span(1, 0, "A", 0, 100), span(4, 1, "D", 40, 70), g, span(8, 0, "H", 200, 230)}},
      {"back", {b, span(3, 2, "C", 15, 35), span(5, 1, "E", 45, 60)}}};
}

// What a span looks like, with its names and ids as text, for comparisons across sets.
std::string describe(const SpanSet& set, const importers::Span& s) {
  std::string out = set.ids.text(s.trace) + "/" + set.ids.text(s.id) + " " + set.str(s.service) +
                    ":" + set.str(s.operation) + " " + std::to_string(s.start) + "-" +
                    std::to_string(s.end) + " kind " + std::to_string(int(s.kind)) + " thread " +
                    (s.thread == importers::kNoSpan ? "-" : set.str(s.thread)) + " refs";
  for (uint32_t r = s.refs_begin; r < s.refs_end; ++r)
    out += " " + set.ids.text(set.refs[r].trace) + "/" + set.ids.text(set.refs[r].span_id) +
           (set.refs[r].child_of ? "(parent)" : "(link)");
  return out;
}
std::vector<std::string> describe_all(const SpanSet& set) {
  std::vector<std::string> out;
  for (const auto& s : set.spans) out.push_back(describe(set, s));
  return out;
}

TEST(OtlpDecode, ProtobufGivesWhatTheJsonReaderGives) {
  std::vector<TestResource> r = example();
  r[0].spans[0].kind = 2;  // server
  r[1].spans[0].kind = 3;  // client
  r[0].spans[2].links.push_back({kOther, sid(99)});
  const auto pb = decode_otlp_request(testing::otlp_protobuf(r), OtlpEncoding::protobuf, "t");
  const auto js = decode_otlp_request(testing::otlp_json(r), OtlpEncoding::json, "t");
  EXPECT_EQ(pb.rejected, 0u);
  ASSERT_EQ(pb.spans.spans.size(), 7u);
  EXPECT_EQ(describe_all(pb.spans), describe_all(js.spans));
  // And by hand, for one span: the ids in lowercase hex, the links after the parent.
  EXPECT_EQ(describe(pb.spans, pb.spans.spans[2]),
            kTrace + "/" + sid(7) + " front:G 92000000-130000000 kind 0 thread - refs " + kTrace +
                "/" + sid(1) + "(link) " + kOther + "/" + sid(99) + "(link)");
  EXPECT_EQ(describe(pb.spans, pb.spans.spans[4]),
            kTrace + "/" + sid(2) + " back:B 10000000-40000000 kind 3 thread worker-1 refs " +
                kTrace + "/" + sid(1) + "(parent)");
}

// Unknown fields of every wire type, at every level, are skipped; the resource may come
// after the spans; a missing resource is "unknown_service".
TEST(OtlpDecode, SkipsUnknownFieldsAndTakesFieldsInAnyOrder) {
  ProtoWriter span;
  span.varint(99, 5).fixed64(8, 20).fixed32(16, 1).bytes(5, "op").bytes(2, testing::unhex(sid(1)));
  span.bytes(77, "junk").fixed64(7, 10).bytes(1, testing::unhex(kTrace)).bytes(3, "tracestate");
  ProtoWriter scope, rs, resource, request;
  scope.message(1, ProtoWriter().bytes(1, "scope-name")).message(2, span).varint(3, 1);
  resource.message(1, testing::string_attribute("service.name", "svc")).varint(2, 0);
  rs.message(2, scope).bytes(3, "schema").message(1, resource);
  request.fixed32(5, 7).message(1, rs).message(1, ProtoWriter().message(2, scope));
  const auto got = decode_otlp_request(request.str(), OtlpEncoding::protobuf, "t");
  ASSERT_EQ(got.spans.spans.size(), 2u);
  EXPECT_EQ(describe(got.spans, got.spans.spans[0]),
            kTrace + "/" + sid(1) + " svc:op 10-20 kind 0 thread - refs");
  EXPECT_EQ(got.spans.str(got.spans.spans[1].service), "unknown_service");
}

TEST(OtlpDecode, SpansWithoutIdsAreRejectedAlone) {
  std::vector<TestResource> r = example();
  ProtoWriter no_id, scope, rs, request;
  no_id.bytes(1, testing::unhex(kTrace)).bytes(5, "no span id").fixed64(7, 1).fixed64(8, 2);
  scope.message(2, no_id);
  rs.message(2, scope);
  request.message(1, rs);
  const auto got =
      decode_otlp_request(testing::otlp_protobuf(r) + request.str(), OtlpEncoding::protobuf, "t");
  EXPECT_EQ(got.spans.spans.size(), 7u);
  EXPECT_EQ(got.rejected, 1u);
  EXPECT_NE(got.reject_reason.find("without a trace or span id"), std::string::npos);
  const auto js = decode_otlp_request(
      R"({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "name": "x",
          "startTimeUnixNano": 1, "endTimeUnixNano": 2}, {"traceId": "ab", "spanId": "01",
          "startTimeUnixNano": 1, "endTimeUnixNano": 2}]}]}]})",
      OtlpEncoding::json, "t");
  EXPECT_EQ(js.spans.spans.size(), 1u);
  EXPECT_EQ(js.rejected, 1u);
}

TEST(OtlpDecode, NegativeDurationsAreClampedAndCounted) {
  std::vector<TestResource> r = {{"s", {{kTrace, sid(1), "", "x", 50, 40, 0, "", {}}}}};
  const auto got = decode_otlp_request(testing::otlp_protobuf(r), OtlpEncoding::protobuf, "t");
  ASSERT_EQ(got.spans.spans.size(), 1u);
  EXPECT_EQ(got.spans.spans[0].end, 50);
  ASSERT_EQ(got.spans.diagnostics.size(), 1u);
  EXPECT_EQ(got.spans.diagnostics[0].first, "otlp.negative_durations");
}

// Every cut of a body either decodes (a cut between top-level fields is a shorter valid
// request) or throws naming a byte offset; never crashes or reads past the end.
TEST(OtlpDecode, EveryTruncationIsAnErrorWithAnOffsetOrAShorterRequest) {
  const std::string body = testing::otlp_protobuf(example());
  const std::string first = testing::otlp_protobuf({example()[0]});
  size_t errors = 0;
  for (size_t n = 0; n < body.size(); ++n) {
    try {
      const auto got =
          decode_otlp_request(std::string_view(body).substr(0, n), OtlpEncoding::protobuf, "t");
      EXPECT_TRUE(n == 0 || n == first.size()) << n;  // the only field boundaries
    } catch (const TraceError& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(": byte "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("invalid protobuf"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(errors, body.size() - 2);
}

TEST(OtlpDecode, MalformedBodiesThrow) {
  auto error_of = [](const std::string& body) -> std::string {
    try {
      decode_otlp_request(body, OtlpEncoding::protobuf, "req");
    } catch (const TraceError& e) {
      return e.what();
    }
    return "";
  };
  // Offsets count from the start of the body, inside nested messages too.
  EXPECT_EQ(error_of(std::string("\x0a\x02\x0a\x05", 4)),
            "req: byte 3: invalid protobuf: truncated: a field of 5 bytes, 0 left");
  EXPECT_EQ(error_of(std::string("\x0b", 1)),
            "req: byte 0: invalid protobuf: field 1: unsupported "
            "wire type 3");
  EXPECT_EQ(error_of(std::string(11, '\xff')),
            "req: byte 0: invalid protobuf: varint longer than 10 bytes");
  EXPECT_EQ(error_of(std::string("\x00\x01", 2)),
            "req: byte 0: invalid protobuf: invalid field tag");
  EXPECT_EQ(error_of(std::string("\x08\x01", 2)),
            "req: byte 1: invalid protobuf: ExportTraceServiceRequest field 1 has wire type 0, "
            "not 2");
  // JSON: the syntax error with its offset; a missing required field names the span.
  try {
    decode_otlp_request("{\"resourceSpans\": [}", OtlpEncoding::json, "req");
    ADD_FAILURE();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("req: byte "), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_otlp_request(R"({"resourceSpans": [{"scopeSpans": [{"spans": [
                   {"traceId": "ab", "spanId": "01"}]}]}]})",
                                   OtlpEncoding::json, "req"),
               TraceError);
}

// Unknown fields nested ten thousand deep are skipped in one step (no recursion), and so are
// attribute values nested deep (arrays of arrays).
TEST(OtlpDecode, DeepNestingIsSkippedWithoutRecursion) {
  std::string nested = "x";
  for (int i = 0; i < 10'000; ++i) nested = ProtoWriter().bytes(9, nested).str();
  ProtoWriter any, kv, span, scope, rs, request;
  any.bytes(5, nested);  // array_value: not a name, skipped
  kv.bytes(1, "thread.name").bytes(2, any.str());
  span.bytes(1, testing::unhex(kTrace)).bytes(2, testing::unhex(sid(1))).message(9, kv);
  span.bytes(50, nested);
  scope.message(2, span);
  rs.message(2, scope);
  request.message(1, rs).bytes(42, nested);
  const auto got = decode_otlp_request(request.str(), OtlpEncoding::protobuf, "t");
  ASSERT_EQ(got.spans.spans.size(), 1u);
  EXPECT_EQ(got.spans.spans[0].thread, importers::kNoSpan);
}

TEST(OtlpDecode, RandomBytesNeverCrash) {
  std::mt19937_64 rng(38);
  const std::string valid = testing::otlp_protobuf(example());
  for (int i = 0; i < 2000; ++i) {
    std::string body = valid;
    for (int k = 0; k < 1 + i % 4; ++k) body[rng() % body.size()] = static_cast<char>(rng());
    try {
      decode_otlp_request(body, OtlpEncoding::protobuf, "t");
    } catch (const TraceError&) {
    }
  }
}

// Spans of one trace in several requests, children before their parents: grouped into
// one trace, whose critical path is the hand-computed one.
TEST(OtlpTraces, OutOfOrderRequestsGiveTheHandComputedPath) {
  const std::vector<TestResource> r = example();
  // Requests: C and E first (back), then G and H, then A, D and B.
  const std::vector<std::vector<TestResource>> requests = {
      {{"back", {r[1].spans[1], r[1].spans[2]}}},
      {{"front", {r[0].spans[2], r[0].spans[3]}}},
      {{"front", {r[0].spans[0], r[0].spans[1]}}, {"back", {r[1].spans[0]}}}};
  serve::OtlpTraceLimits limits;
  limits.idle_ns = 1000;
  serve::OpenTraces open(limits);
  std::vector<SpanSet> done;
  int64_t now = 0;
  for (const auto& q : requests) {
    const auto got = decode_otlp_request(testing::otlp_protobuf(q), OtlpEncoding::protobuf, "t");
    open.add(got.spans, now += 100, done);
    open.take_idle(now, done);
  }
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(open.open_traces(), 1u);
  EXPECT_EQ(open.open_spans(), 7u);
  open.take_idle(now + 999, done);
  EXPECT_TRUE(done.empty());
  open.take_idle(now + 1000, done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(open.open_traces(), 0u);
  const SpanSet& set = done[0];
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  const requests::CriticalPath& p = paths[0];
  EXPECT_EQ(p.spans, 7u);
  EXPECT_EQ(p.roots, 2u);
  EXPECT_EQ(p.clipped, 1u);  // G, past A's end
  EXPECT_EQ(p.duration_ns, 130 * kMs);
  std::vector<std::pair<std::string, int64_t>> steps;
  for (const auto& s : p.path)
    steps.emplace_back(set.str(set.spans[s.span].operation), s.critical_ns / kMs);
  // From A's end back: G 100->92, A 92->70, D 70->40, B 40->35, C 35->15, B 15->10,
  // A 10->0; then H. Per span, by first instant on the path.
  const std::vector<std::pair<std::string, int64_t>> want = {{"A", 32}, {"B", 10}, {"C", 20},
                                                             {"D", 30}, {"G", 8},  {"H", 30}};
  EXPECT_EQ(steps, want);
}

TEST(OtlpTraces, BoundsCompleteTheLeastRecentTracesEarly) {
  serve::OtlpTraceLimits limits;
  limits.max_open_traces = 2;
  limits.max_open_spans = 3;
  serve::OpenTraces open(limits);
  std::vector<SpanSet> done;
  auto batch = [](const std::string& trace, int spans) {
    std::vector<TestSpan> s;
    for (int i = 1; i <= spans; ++i) s.push_back({trace, sid(i), "", "x", i, i + 1, 0, "", {}});
    return decode_otlp_request(testing::otlp_protobuf({{"s", s}}), OtlpEncoding::protobuf, "t")
        .spans;
  };
  open.add(batch(kTrace, 1), 1, done);
  open.add(batch(kOther, 1), 2, done);
  open.add(batch(kTrace, 1), 3, done);  // kTrace is now the more recent
  EXPECT_TRUE(done.empty());
  open.add(batch(std::string(32, 'c'), 1), 4, done);  // a third trace: kOther goes
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].ids.text(done[0].spans[0].trace), kOther);
  EXPECT_EQ(open.evicted_traces(), 1u);
  open.add(batch(std::string(32, 'c'), 1), 5, done);  // 4 spans > 3: kTrace (2 spans) goes
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].ids.text(done[1].spans[0].trace), kTrace);
  EXPECT_EQ(done[1].spans.size(), 2u);
  EXPECT_EQ(open.evicted_traces(), 2u);
  EXPECT_EQ(open.open_spans(), 2u);
  open.take_all(done);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_EQ(open.open_traces(), 0u);
}

}  // namespace
}  // namespace snailtrail::test_otlp_decode
