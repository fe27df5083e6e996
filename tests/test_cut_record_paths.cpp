// Files cut inside a record whose members bear the names of the record arrays ("spans",
// "data", "resourceSpans", "scopeSpans", "traceEvents"): the record arrays are matched by
// their path from the top (json_prefix.hpp), so a cut keeps exactly the records complete
// before it, in the whole-file import and the stream alike (found by fuzz_otel). The
// oracle: the offsets where the generator closed each span.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/json_prefix.hpp"
#include "importers/otel/otel_importer.hpp"
#include "sanitized.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_cut_record_paths {
namespace {

using importers::SpanSet;

using testing::write_temp;

// A generated file and, for each span, "trace/span" and the offset just after its '}'.
struct Fixture {
  std::string text;
  size_t records_open = 0;  // just after the '[' of the outermost record array
  std::vector<std::pair<size_t, std::string>> ends;

  // The spans complete in the first `cut` bytes.
  std::multiset<std::string> complete_in(size_t cut) const {
    std::multiset<std::string> out;
    for (const auto& [end, id] : ends)
      if (end <= cut) out.insert(id);
    return out;
  }
};

std::multiset<std::string> ids(const SpanSet& set) {
  std::multiset<std::string> out;
  for (const auto& s : set.spans) out.insert(set.ids.text(s.trace) + "/" + set.ids.text(s.id));
  return out;
}

// Members that look like record arrays, inside a span (before or after its own fields).
const char* const kDecoys[] = {
    R"("spans": [{"traceID": "x", "spanID": "inner", "startTime": 1, "duration": 1}, {"data": [1]}])",
    R"("data": [{"spans": []}, [2, 3]])",
    R"("spans": [])",
    R"("resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "inner"}]}]}])",
};

// Jaeger: two traces of four spans, every span but the first of each with a decoy.
Fixture jaeger_fixture() {
  Fixture f;
  f.text = "{\"data\": [";
  f.records_open = f.text.size();
  for (int t = 0; t < 2; ++t) {
    const std::string tid = "t" + std::to_string(t);
    f.text += std::string(t ? ", " : "") + "{\"traceID\": \"" + tid + "\", \"spans\": [";
    for (int i = 0; i < 4; ++i) {
      const std::string decoy = i == 0 ? "" : kDecoys[(i + t) % 4];
      const bool first = i % 2 == 1;
      f.text += std::string(i ? ",\n  " : "\n  ") + "{" + (first ? decoy + ", " : "") +
                "\"traceID\": \"" + tid + "\", \"spanID\": \"s" + std::to_string(i) +
                "\", \"operationName\": \"op\", \"startTime\": " + std::to_string(100 + i) +
                ", \"duration\": 10, \"processID\": \"p1\"" + (!first && i ? ", " + decoy : "") +
                "}";
      f.ends.emplace_back(f.text.size(), tid + "/s" + std::to_string(i));
    }
    f.text += "], \"processes\": {\"p1\": {\"serviceName\": \"svc\", \"spans\": [1]}}}";
  }
  f.text += "]}\n";
  return f;
}

// OTLP: one request over several lines, a resource with "scopeSpans" and one with the
// pre-1.0 "instrumentationLibrarySpans", every span but the first of each with a decoy.
Fixture otlp_fixture() {
  Fixture f;
  f.text = "{\"resourceSpans\": [";
  f.records_open = f.text.size();
  for (int r = 0; r < 2; ++r) {
    f.text += std::string(r ? ", " : "") +
              "{\"resource\": {\"attributes\": [{\"key\": \"service.name\", \"value\": "
              "{\"stringValue\": \"svc" +
              std::to_string(r) + "\"}}]}, \"" +
              (r ? "instrumentationLibrarySpans" : "scopeSpans") +
              "\": [{\"scope\": {\"name\": \"lib\"}, \"spans\": [";
    for (int i = 0; i < 4; ++i) {
      const std::string decoy = i == 0 ? "" : kDecoys[(i + r) % 4];
      const bool first = i % 2 == 0;
      const std::string id = "r" + std::to_string(r) + "s" + std::to_string(i);
      f.text += std::string(i ? ",\n  " : "\n  ") + "{" + (first && i ? decoy + ", " : "") +
                "\"traceId\": \"T\", \"spanId\": \"" + id +
                "\", \"name\": \"op\", \"startTimeUnixNano\": \"" + std::to_string(1000 + i) +
                "\", \"endTimeUnixNano\": \"2000\"" + (!first ? ", " + decoy : "") + "}";
      f.ends.emplace_back(f.text.size(), "T/" + id);
    }
    f.text += "]}]}";
  }
  f.text += "]}\n";
  return f;
}

// Every cut: the whole-file import keeps exactly the spans complete before the cut (an
// error only before the records begin), and the stream, at read chunks small enough to
// read a Jaeger trace span by span and at the default, keeps the same.
void cut_at_every_byte(const Fixture& f, const char* format,
                       SpanSet (*parse)(std::string_view, const std::string&)) {
  ASSERT_EQ(f.complete_in(f.text.size()), ids(parse(f.text, "whole.json")));
  size_t span_by_span = 0;
  for (size_t cut = 0; cut <= f.text.size(); cut = testing::next_cut(cut, f.text.size())) {
    const std::string text = f.text.substr(0, cut);
    const std::string path = write_temp(std::string("cut-paths-") + format + ".json", text);
    std::multiset<std::string> want;
    bool failed = false;
    try {
      want = ids(parse(text, path));
    } catch (const TraceError&) {
      failed = true;
    }
    if (cut < f.records_open) {
      EXPECT_TRUE(failed) << format << " cut at " << cut;
      continue;
    }
    ASSERT_FALSE(failed) << format << " cut at " << cut;
    EXPECT_EQ(want, f.complete_in(cut)) << format << " cut at " << cut;
    for (size_t chunk : {size_t(5) + cut % 13, size_t(1) << 22}) {
      importers::set_stream_chunk_bytes(chunk);
      std::multiset<std::string> got;
      const importers::SpanStream s =
          importers::stream_spans(path, format, 1, [&](size_t, const SpanSet& set) {
            const auto more = ids(set);
            got.insert(more.begin(), more.end());
          });
      importers::set_stream_chunk_bytes(size_t(1) << 22);
      EXPECT_TRUE(s.skipped.empty()) << format << " cut at " << cut << " chunk " << chunk;
      EXPECT_EQ(got, want) << format << " cut at " << cut << " chunk " << chunk;
      span_by_span += s.span_by_span;
    }
  }
  if (std::string(format) == "jaeger") {
    EXPECT_GT(span_by_span, f.text.size() / 2);  // the big-trace path was taken
  }
}

TEST(CutRecordPaths, JaegerSpansWithSpansMembersAtEveryByte) {
  cut_at_every_byte(jaeger_fixture(), "jaeger", importers::parse_jaeger);
}

TEST(CutRecordPaths, OtlpSpansWithSpansMembersAtEveryByte) {
  cut_at_every_byte(otlp_fixture(), "otlp", importers::parse_otlp);
}

// A single Jaeger trace object at the top (no "data"): its "spans" are the records.
TEST(CutRecordPaths, JaegerSingleTraceObject) {
  const std::string text =
      R"({"traceID": "1", "spans": [{"traceID": "1", "spanID": "a", "startTime": 1, "duration": 2}, {"traceID": "1", "spanID": "b", "startTime": 1, "duration": 2, "spans": [{"traceID": "1", "spanID": "c", "startTime": 1, "duration": 2}, )";
  EXPECT_EQ(ids(importers::parse_jaeger(text, "single.json")), (std::multiset<std::string>{"1/a"}));
}

// Chrome: the events of the top-level array or of the top-level "traceEvents"; an event's
// argument named "traceEvents" holds no events.
TEST(CutRecordPaths, ChromeTraceEventsInsideAnEvent) {
  const std::string event = R"({"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1})";
  const std::string text =
      R"({"traceEvents": [)" + event +
      R"(, {"ph": "X", "name": "b", "ts": 10, "dur": 2, "pid": 1, "tid": 1, )" +
      R"("args": {"traceEvents": [)" + event + ", ";
  const Trace t = importers::parse_chrome(text, "cut.json");
  EXPECT_EQ(
      t.events.size(),
      importers::parse_chrome(R"({"traceEvents": [)" + event + "]}", "whole.json").events.size());
}

TEST(CutRecordPaths, CloseCutDocumentMatchesWholePaths) {
  using importers::json::close_cut_document;
  auto closed = [](std::string_view text, std::initializer_list<std::string_view> paths) {
    auto c = close_cut_document(text, paths);
    return c ? c->closed + " @" + std::to_string(c->kept) : std::string("none");
  };
  // The nested array of the same name holds no records: the cut span is dropped.
  EXPECT_EQ(
      closed(R"({"data": [{"spans": [{"id": 1, "spans": [{"x": 2}, {"y)", {"data", "data[].spans"}),
      R"({"data": [{"spans": []}]} @21)");
  EXPECT_EQ(closed(R"({"data": [{"spans": [{"id": 1}, {"id": 2, "spans": [{"x": 2}, {"y)",
                   {"data", "data[].spans"}),
            R"({"data": [{"spans": [{"id": 1}]}]} @30)");
  // "spans" at the top is another path than "data[].spans".
  EXPECT_EQ(closed(R"({"spans": [{"id": 1}, {"i)", {"data[].spans"}), "none");
  EXPECT_EQ(closed(R"({"spans": [{"id": 1}, {"i)", {"spans"}), R"({"spans": [{"id": 1}]} @20)");
  // "" is the top-level array, not a member named "".
  EXPECT_EQ(closed(R"({"": [{"a": 1}, {)", {""}), "none");
  EXPECT_EQ(closed(R"([{"a": 1}, {)", {""}), R"([{"a": 1}] @9)");
  // A member's name is matched whole: "a.b" is the member "b" of the member "a".
  EXPECT_EQ(closed(R"({"a.b": [{"x": 1}, {)", {"a.b"}), "none");
  EXPECT_EQ(closed(R"({"a": {"b": [{"x": 1}, {)", {"a.b"}), R"({"a": {"b": [{"x": 1}]}} @21)");
  // Arrays in arrays.
  EXPECT_EQ(closed(R"([[{"a": 1}, {"b)", {"[]"}), R"([[{"a": 1}]] @10)");
  EXPECT_EQ(closed(R"([[{"a": 1}, {"b)", {""}), R"([] @1)");
}

}  // namespace
}  // namespace snailtrail::test_cut_record_paths
