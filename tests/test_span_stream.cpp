// Streaming span import (otel_importer.hpp, stream_spans) against the whole-file import
// it replaces for `critical-path` (the oracle: read_spans + critical_paths on the file at
// once), on generated Jaeger exports, cut everywhere, with broken traces inside; and the
// aggregated folded stacks (folded.hpp) on hand-computed traces.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "importers/otel/otel_importer.hpp"
#include "requests/critical_path.hpp"
#include "requests/folded.hpp"
#include "sanitized.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_span_stream {
namespace {

using importers::SpanSet;
using requests::PathCollection;

const std::string kData = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/";

using testing::write_temp;

// Everything the outputs show, as text.
std::string dump(const PathCollection& all,
                 const std::vector<std::pair<std::string, uint64_t>>& diagnostics) {
  std::string s;
  for (const auto& t : all.traces()) {
    s += "trace " + std::string(t.trace_id()) + " " + std::to_string(t.duration_ns) + " " +
         std::to_string(t.start_ns) + " " + std::to_string(t.spans) + " " +
         std::to_string(t.clipped) + " " + std::to_string(t.dropped) + " " +
         std::to_string(t.roots) + " " + std::to_string(t.nonblocking) + "\n";
    for (const auto& st : t.path)
      s += "  " + std::string(t.span_id(st)) + " " + all.name(st.service) + " " +
           all.name(st.operation) + " " + std::to_string(st.start_ns) + " " +
           std::to_string(st.end_ns) + " " + std::to_string(st.self_ns) + " [" +
           (st.context == importers::kNoSpan ? "" : requests::context_stack(all, st.context)) +
           "]\n";
  }
  for (const auto& sv : all.by_service())
    s += "service " + all.name(sv.service) + " " + std::to_string(sv.critical_ns) + " " +
         std::to_string(sv.spans_on_path) + "\n";
  for (const auto& [k, n] : diagnostics) s += "diag " + k + " " + std::to_string(n) + "\n";
  return s;
}

// The oracle: the whole file at once, as critical-path did before streaming.
std::string whole(const std::string& path) {
  const SpanSet set = importers::read_spans(path);
  std::vector<uint32_t> tree_parent;
  const auto paths = requests::critical_paths(set, &tree_parent);
  PathCollection all;
  all.add(requests::summarize_paths(set, paths, tree_parent, true));
  return dump(all, set.diagnostics);
}

struct Streamed {
  std::string text;
  importers::SpanStream stream;
};
Streamed streamed(const std::string& path, unsigned threads) {
  std::mutex mutex;
  std::map<size_t, requests::UnitPaths> units;
  Streamed r;
  r.stream = importers::stream_spans(path, "auto", threads, [&](size_t unit, const SpanSet& set) {
    std::vector<uint32_t> tp;
    const auto paths = requests::critical_paths(set, &tp);
    auto u = requests::summarize_paths(set, paths, tp, true);
    std::lock_guard lock(mutex);
    EXPECT_TRUE(units.emplace(unit, std::move(u)).second);
  });
  PathCollection all;
  for (const auto& [i, u] : units) all.add(u);
  r.text = dump(all, r.stream.diagnostics);
  return r;
}

// A Jaeger export of `traces` random traces: random trees with several roots, orphans,
// follows-from children, producer/consumer pairs, negative durations, duplicate span ids,
// unknown processes, strings with escapes.
std::string random_jaeger(std::mt19937& rng, int traces) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* kinds[] = {"server", "client", "producer", "consumer", ""};
  std::string s = "{\"data\": [";
  for (int t = 0; t < traces; ++t) {
    const std::string tid = "t" + std::to_string(t);
    const int n = 1 + pick(10);
    s += t ? ",\n" : "\n";
    s += "{\"traceID\": \"" + tid + "\", \"spans\": [";
    for (int i = 0; i < n; ++i) {
      const int64_t start = 1000 + pick(200);
      const int64_t duration = pick(12) == 0 ? -5 : pick(150);
      std::string refs;
      if (i > 0 && pick(5) != 0) {
        const int parent = pick(i);
        refs = "{\"refType\": \"" + std::string(pick(5) == 0 ? "FOLLOWS_FROM" : "CHILD_OF") +
               "\", \"traceID\": \"" + tid + "\", \"spanID\": \"s" + std::to_string(parent) + "\"}";
      } else if (pick(4) == 0) {
        refs = "{\"refType\": \"CHILD_OF\", \"traceID\": \"" + tid +
               "\", \"spanID\": \"missing\"}";  // an orphan
      }
      const int id = pick(15) == 0 && i > 0 ? i - 1 : i;  // sometimes a duplicate id
      const char* kind = kinds[pick(5)];
      s += std::string(i ? ",\n" : "\n") + " {\"traceID\": \"" + tid + "\", \"spanID\": \"s" +
           std::to_string(id) + "\", \"operationName\": \"op \\\"" + std::to_string(pick(4)) +
           "\\\" [x]\", \"references\": [" + refs + "], \"startTime\": " + std::to_string(start) +
           ", \"duration\": " + std::to_string(duration) + ", \"processID\": \"p" +
           std::to_string(1 + pick(4)) + "\", \"tags\": [" +
           (*kind ? "{\"key\": \"span.kind\", \"type\": \"string\", \"value\": \"" +
                        std::string(kind) + "\"}"
                  : std::string()) +
           "], \"logs\": []}";
    }
    s += "], \"processes\": {\"p1\": {\"serviceName\": \"front{end}\", \"tags\": []}, "
         "\"p2\": {\"serviceName\": \"db]\", \"tags\": []}, "
         "\"p3\": {\"serviceName\": \"cache\\\\\", \"tags\": []}}, \"warnings\": null}";
  }
  s += "\n], \"total\": 0, \"limit\": 0, \"offset\": 0, \"errors\": null}\n";
  return s;
}

TEST(SpanStream, SameAsTheWholeFileOnFixtures) {
  for (const char* name : {"jaeger-request.json", "otlp-request.json"}) {
    const std::string path = kData + name;
    const std::string want = whole(path);
    for (unsigned threads : {1u, 2u, 3u}) {
      const Streamed got = streamed(path, threads);
      EXPECT_EQ(got.text, want) << name << " threads " << threads;
      EXPECT_TRUE(got.stream.skipped.empty());
    }
  }
}

TEST(SpanStream, SameAsTheWholeFileOnRandomExports) {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    // Tiny read chunks: strings, escapes and traces across chunk ends; traces larger
    // than 4 chunks handed over with the buffer.
    importers::set_stream_chunk_bytes(round % 2 ? 7 + round : size_t(1) << 22);
    const std::string path = write_temp("stream-random.json", random_jaeger(rng, 1 + round % 13));
    const std::string want = whole(path);
    ASSERT_NE(want.find("trace t0"), std::string::npos) << want;
    for (unsigned threads : {1u, 2u}) {
      const Streamed got = streamed(path, threads);
      EXPECT_EQ(got.text, want) << "round " << round << " threads " << threads;
      EXPECT_EQ(got.stream.units, static_cast<size_t>(1 + round % 13));
    }
  }
  importers::set_stream_chunk_bytes(size_t(1) << 22);
}

// The scan 64 bytes at a time takes blocks without a backslash as bit masks: strings with
// brackets inside, strings longer than a block, both across chunk ends, and the same file
// with escapes (byte by byte) give what the whole file gives.
TEST(SpanStream, BlocksWithoutEscapesSameAsTheWholeFile) {
  std::mt19937 rng(23);
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
    return s;
  };
  for (int round = 0; round < 24; ++round) {
    std::string text = random_jaeger(rng, 1 + round % 7);
    // No backslash left: escaped backslashes and quotes become brackets inside strings.
    text = replace_all(replace_all(text, "\\\\", "}]"), "\\\"", "{[");
    const std::string long_name = std::string(70 + round * 9, '[') + "]}{" + std::string(40, '}');
    text = replace_all(text, "[x]", round % 3 ? long_name : "\\\"" + long_name);
    if (round % 3) {
      ASSERT_EQ(text.find('\\'), std::string::npos) << round;
    }
    // Span by span (traces of 4 chunks or more) at small chunks, whole traces at 4 MiB.
    importers::set_stream_chunk_bytes(round % 2 ? 13 + 17 * round : size_t(1) << 22);
    const std::string path = write_temp("stream-blocks.json", text);
    const std::string want = whole(path);
    ASSERT_NE(want.find("trace t0"), std::string::npos) << want;
    for (unsigned threads : {1u, 2u}) {
      const Streamed got = streamed(path, threads);
      EXPECT_EQ(got.text, want) << "round " << round << " threads " << threads;
      EXPECT_EQ(got.stream.units, static_cast<size_t>(1 + round % 7));
      EXPECT_TRUE(got.stream.skipped.empty()) << "round " << round;
      if (round % 2) {
        EXPECT_GT(got.stream.span_by_span, 0u) << "round " << round;
      }
    }
  }
  importers::set_stream_chunk_bytes(size_t(1) << 22);
}

TEST(SpanStream, FilesCutAnywhereGiveWhatTheWholeFileGives) {
  std::mt19937 rng(11);
  const std::string text = random_jaeger(rng, 4);
  size_t compared = 0;
  // Every byte near both ends (the head before "data", the trailer after it), every 7th
  // in between (every 19th under a sanitizer).
  const size_t step = static_cast<size_t>(testing::random_inputs(7, 19));
  for (size_t cut = 1; cut < text.size(); cut += cut < 400 || cut + 400 > text.size() ? 1 : step) {
    importers::set_stream_chunk_bytes(cut % 3 ? size_t(1) << 22 : 5 + cut % 61);
    const std::string path = write_temp("stream-cut.json", text.substr(0, cut));
    std::string want, got;
    bool whole_failed = false, stream_failed = false;
    try {
      want = whole(path);
    } catch (const TraceError&) {
      whole_failed = true;
    }
    try {
      const Streamed s = streamed(path, 2);
      got = s.text;
      stream_failed = !s.stream.skipped.empty();
    } catch (const TraceError&) {
      stream_failed = true;
    }
    EXPECT_EQ(whole_failed, stream_failed) << "cut at " << cut;
    if (!whole_failed) {
      EXPECT_EQ(got, want) << "cut at " << cut;
      ++compared;
    }
  }
  importers::set_stream_chunk_bytes(size_t(1) << 22);
  EXPECT_GT(compared, text.size() / 10);
}

TEST(SpanStream, BrokenTracesAreSkippedAndNamedTheOthersComputed) {
  std::mt19937 rng(3);
  const std::string good = random_jaeger(rng, 3);
  // data[1] becomes invalid JSON, and a number is inserted as data[3].
  std::string text = good;
  const size_t t1 = text.find("{\"traceID\": \"t1\"");
  const size_t bad = text.find("\"duration\": ", t1) + 12;
  text.insert(bad, ",");
  const size_t t2_end = text.rfind("\n]");
  text.insert(t2_end, ",\n42");
  const std::string path = write_temp("stream-broken.json", text);
  const Streamed got = streamed(path, 2);
  ASSERT_EQ(got.stream.skipped.size(), 2u) << got.text;
  EXPECT_EQ(got.stream.skipped[0].where, "data[1]");
  EXPECT_EQ(got.stream.skipped[0].byte, t1);
  EXPECT_NE(got.stream.skipped[0].error.find("invalid JSON"), std::string::npos);
  EXPECT_NE(got.stream.skipped[0].error.find("byte " + std::to_string(bad)), std::string::npos)
      << got.stream.skipped[0].error;
  EXPECT_EQ(got.stream.skipped[1].where, "data[3]");
  EXPECT_NE(got.stream.skipped[1].error.find("must be an object"), std::string::npos);
  EXPECT_NE(got.text.find("trace t0 "), std::string::npos);
  EXPECT_EQ(got.text.find("trace t1 "), std::string::npos);
  EXPECT_NE(got.text.find("trace t2 "), std::string::npos);
  EXPECT_NE(got.text.find("diag jaeger.skipped_traces 2"), std::string::npos) << got.text;
  // A trace that parses but is invalid (no span id) is skipped too, named by its path.
  std::string missing = good;
  const size_t id = missing.find("\"spanID\"", missing.find("{\"traceID\": \"t2\""));
  missing.replace(id, 8, "\"spanXX\"");
  const Streamed m = streamed(write_temp("stream-missing.json", missing), 1);
  ASSERT_EQ(m.stream.skipped.size(), 1u);
  EXPECT_NE(m.stream.skipped[0].error.find("data[2].spans[0]: missing \"spanID\""),
            std::string::npos)
      << m.stream.skipped[0].error;
  // Damage between traces is the file's: an error.
  std::string unbalanced = good;
  unbalanced.insert(unbalanced.find(",\n{\"traceID\": \"t1\""), "}");
  EXPECT_THROW(streamed(write_temp("stream-unbalanced.json", unbalanced), 2), TraceError);
}

TEST(SpanStream, OtherShapesAreReadWhole) {
  // One trace object without "data", and "data" not being an array: as parse_jaeger.
  const std::string one =
      "{\"traceID\": \"a\", \"spans\": [{\"traceID\": \"a\", \"spanID\": \"x\", "
      "\"operationName\": \"op\", \"startTime\": 1, \"duration\": 5, \"processID\": \"p\"}], "
      "\"processes\": {\"p\": {\"serviceName\": \"s\"}}}";
  const std::string path = write_temp("stream-one.json", one);
  EXPECT_EQ(streamed(path, 2).text, whole(path));
  const std::string notarray = write_temp("stream-notarray.json", "{\"traceID\": 1, \"data\": 5}");
  EXPECT_THROW(streamed(notarray, 2), TraceError);
}

TEST(SpanStream, RepeatedTraceIdsAreCounted) {
  std::mt19937 rng(5);
  std::string text = random_jaeger(rng, 3);
  // t2 becomes a second t0: its spans form a trace of their own.
  for (size_t at; (at = text.find("\"t2\"")) != std::string::npos;) text.replace(at, 4, "\"t0\"");
  PathCollection all;
  importers::stream_spans(write_temp("stream-repeat.json", text), "jaeger", 1,
                          [&](size_t, const SpanSet& set) {
                            std::vector<uint32_t> tp;
                            const auto paths = requests::critical_paths(set, &tp);
                            all.add(requests::summarize_paths(set, paths, tp, false));
                          });
  ASSERT_EQ(all.traces().size(), 3u);
  EXPECT_EQ(all.traces()[2].trace_id(), "t0");
  EXPECT_EQ(all.repeated_trace_ids(), 1u);
}

// One large trace among small ones: with 1 KiB read chunks, the large one (about 100
// KiB) is read span by span, the others whole; the paths are the whole file's, with the
// processes after the spans (as Jaeger writes them) or before, an embedded process, a
// span with an unknown process; a damaged span skips that trace only, named with the
// byte of the damage.
std::string large_trace_export(int spans, bool processes_first, const std::string& damage = "") {
  std::string procs =
      "\"processes\": {\"p1\": {\"serviceName\": \"front\", \"tags\": []}, "
      "\"p2\": {\"serviceName\": \"db\", \"tags\": []}}";
  std::string s =
      "{\"data\": [{\"traceID\": \"small\", \"spans\": [{\"traceID\": \"small\", "
      "\"spanID\": \"a\", \"operationName\": \"op\", \"startTime\": 5, "
      "\"duration\": 9, \"processID\": \"p1\"}], " +
      procs + "},\n{\"traceID\": \"big\", ";
  if (processes_first) s += procs + ", ";
  s += "\"spans\": [";
  for (int i = 0; i < spans; ++i) {
    const int parent = (i - 1) / 3;  // a ternary tree, children overlapping
    s += std::string(i ? ",\n  " : "\n  ") + "{\"traceID\": \"big\", \"spanID\": \"s" +
         std::to_string(i) + "\", \"operationName\": \"op" + std::to_string(i % 7) +
         "\", \"references\": [" +
         (i ? "{\"refType\": \"CHILD_OF\", \"traceID\": \"big\", \"spanID\": \"s" +
                  std::to_string(parent) + "\"}"
            : std::string()) +
         "], \"startTime\": " + std::to_string(1000 + 3 * i) +
         ", \"duration\": " + std::to_string(5000 - 4 * i) + ", " +
         (i % 50 == 7 ? "\"process\": {\"serviceName\": \"embedded\"}"
                      : "\"processID\": \"p" + std::to_string(i % 97 == 5 ? 9 : 1 + i % 2) + "\"") +
         (i == spans / 2 ? damage : std::string()) + "}";
  }
  s += "]";
  if (!processes_first) s += ", " + procs;
  s += ", \"warnings\": null},\n{\"traceID\": \"after\", \"spans\": [{\"traceID\": \"after\", "
       "\"spanID\": \"z\", \"operationName\": \"op\", \"startTime\": 5, \"duration\": 9, "
       "\"processID\": \"p2\"}], " +
       procs + "}\n]}\n";
  return s;
}

TEST(SpanStream, LargeTraceIsReadSpanBySpan) {
  for (bool first : {false, true}) {
    const std::string path = write_temp("stream-large.json", large_trace_export(600, first));
    const std::string want = whole(path);
    ASSERT_NE(want.find("trace big "), std::string::npos);
    ASSERT_NE(want.find("diag jaeger.spans_without_process"), std::string::npos) << want;
    // Every span's service, as the whole file resolves them (most are not on the path).
    auto services = [](const SpanSet& set) {
      std::string out;
      for (const auto& sp : set.spans)
        if (set.ids.text(sp.trace) == "big")
          out += set.ids.text(sp.id) + "=" + set.str(sp.service) + " " +
                 (sp.parent == importers::kNoSpan ? "-" : set.ids.text(set.spans[sp.parent].id)) +
                 "\n";
      return out;
    };
    const std::string want_services = services(importers::read_spans(path));
    ASSERT_NE(want_services.find("s7=embedded"), std::string::npos);
    ASSERT_NE(want_services.find("s5=unknown_service"), std::string::npos);
    ASSERT_NE(want_services.find("s6=front"), std::string::npos);
    ASSERT_NE(want_services.find("s9=db"), std::string::npos);
    for (size_t chunk : {size_t(1024), size_t(4096), size_t(1) << 22})
      for (unsigned threads : {1u, 2u}) {
        importers::set_stream_chunk_bytes(chunk);
        const Streamed got = streamed(path, threads);
        EXPECT_EQ(got.text, want) << "processes first " << first << " chunk " << chunk;
        EXPECT_EQ(got.stream.units, 3u);
        EXPECT_EQ(got.stream.span_by_span, chunk < 8192 ? 1u : 0u) << chunk;
        std::string got_services;
        importers::stream_spans(path, "jaeger", threads, [&](size_t, const SpanSet& set) {
          const std::string s = services(set);
          if (!s.empty()) got_services = s;
        });
        EXPECT_EQ(got_services, want_services) << "processes first " << first << " chunk " << chunk;
      }
  }
  // Damage inside a span of the large trace: that trace is skipped, named with the byte
  // of the damage, the others are computed.
  importers::set_stream_chunk_bytes(1024);
  const std::string text = large_trace_export(600, false, ", \"x\": tru");
  const size_t big = text.find("{\"traceID\": \"big\"");
  const size_t damage = text.find("tru}");
  const Streamed got = streamed(write_temp("stream-large-bad.json", text), 2);
  EXPECT_EQ(got.stream.span_by_span, 1u);
  ASSERT_EQ(got.stream.skipped.size(), 1u);
  EXPECT_EQ(got.stream.skipped[0].where, "data[1]");
  EXPECT_EQ(got.stream.skipped[0].byte, big);
  const std::string& error = got.stream.skipped[0].error;
  EXPECT_NE(error.find("invalid JSON"), std::string::npos) << error;
  // The byte named lies within the damaged span.
  const size_t at = std::stoul(error.substr(error.find("byte ") + 5));
  EXPECT_GE(at, text.rfind("{\"traceID\"", damage));
  EXPECT_LE(at, damage + 4);
  EXPECT_NE(got.text.find("trace small "), std::string::npos);
  EXPECT_NE(got.text.find("trace after "), std::string::npos);
  EXPECT_EQ(got.text.find("trace big "), std::string::npos);
  // A span that parses but is invalid: named by its path, as a whole trace names it.
  std::string invalid = large_trace_export(600, false);
  invalid.replace(invalid.find("\"spanID\": \"s300\""), 16, "\"spanID\": 300");
  const Streamed m = streamed(write_temp("stream-large-missing.json", invalid), 1);
  ASSERT_EQ(m.stream.skipped.size(), 1u);
  EXPECT_NE(m.stream.skipped[0].error.find("data[1].spans[300]: \"spanID\" must be a string"),
            std::string::npos)
      << m.stream.skipped[0].error;
  // Damage outside the spans (in the trace's other members) is found too.
  std::string outside = large_trace_export(600, false);
  outside.insert(outside.find("\"warnings\": null") + 16, " null");
  const Streamed o = streamed(write_temp("stream-large-outside.json", outside), 2);
  ASSERT_EQ(o.stream.skipped.size(), 1u);
  EXPECT_EQ(o.stream.skipped[0].where, "data[1]");
  importers::set_stream_chunk_bytes(size_t(1) << 22);
}

// Found by fuzz_otel: a cut trace read span by span whose text before "spans" is damaged
// (a member without its colon). The whole-file import finds no "spans" member there and
// keeps none of its spans; the stream kept them. Now it skips the trace as invalid.
TEST(SpanStream, CutLargeTraceDamagedBeforeItsSpansKeepsNoSpans) {
  const std::string damaged =
      R"({"data":[{"""spans"[{"traceID":"7","spanID":"0","startTime":1,"duration":0})";
  const std::string intact =
      R"({"data":[{"traceID":"7","spans":[{"traceID":"7","spanID":"0","startTime":1,"duration":0},{"tr)";
  importers::set_stream_chunk_bytes(8);
  for (const bool bad : {true, false}) {
    const std::string& text = bad ? damaged : intact;
    const std::string path = write_temp("stream-cut-damaged.json", text);
    const size_t want = importers::parse_jaeger(text, path).spans.size();
    size_t spans = 0;
    const importers::SpanStream s = importers::stream_spans(
        path, "jaeger", 1, [&](size_t, const SpanSet& set) { spans += set.spans.size(); });
    EXPECT_EQ(s.span_by_span, 1u);
    if (bad) {
      EXPECT_EQ(want, 0u);
      EXPECT_EQ(spans, 0u);
      ASSERT_EQ(s.skipped.size(), 1u);
      EXPECT_NE(s.skipped[0].error.find("invalid JSON before its spans"), std::string::npos)
          << s.skipped[0].error;
    } else {
      EXPECT_EQ(want, 1u);
      EXPECT_EQ(spans, 1u);
      EXPECT_TRUE(s.skipped.empty());
      ASSERT_FALSE(s.diagnostics.empty());
      EXPECT_EQ(s.diagnostics[0], (std::pair<std::string, uint64_t>{"jaeger.truncated_file", 1}));
    }
  }
  importers::set_stream_chunk_bytes(size_t(1) << 22);
}

// Found by fuzz_otel: a file cut inside a span that has a member named "spans" itself.
// The whole-file import's cut point (json_prefix.cpp) took any array named "spans" for a
// record array, so it closed the inner one and kept the cut span; the stream, reading
// span by span, keeps only complete spans. Record arrays are now matched by their path
// (more in test_cut_record_paths.cpp).
TEST(SpanStream, CutInsideASpanWithASpansMember) {
  const std::string text =
      R"({"data":[{"spans":[{"traceID":"1","spanID":"0","startTime":0,"duration":6,"spans":[)";
  const std::string path = write_temp("stream-cut-inner-spans.json", text);
  importers::set_stream_chunk_bytes(8);
  size_t spans = 0;
  const importers::SpanStream s = importers::stream_spans(
      path, "jaeger", 1, [&](size_t, const SpanSet& set) { spans += set.spans.size(); });
  importers::set_stream_chunk_bytes(size_t(1) << 22);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(s.span_by_span, 1u);
  EXPECT_EQ(spans, 0u);  // the only span is cut
  EXPECT_EQ(spans, importers::parse_jaeger(text, path).spans.size());
}

// OTLP requests one per line (the collector's file exporter): `traces` random traces whose
// spans are spread over `lines` lines (each line a request, spans grouped by service).
std::string random_otlp(std::mt19937& rng, int traces, int lines) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<std::map<int, std::string>> grouped(lines);  // line -> service -> spans
  for (int t = 0; t < traces; ++t) {
    const int n = 1 + pick(8);
    const int first = pick(lines);
    for (int i = 0; i < n; ++i) {
      const int line = std::min(lines - 1, first + pick(3));  // a trace spans a few lines
      const int64_t start = 1'000'000 + 1000 * pick(200);
      const int64_t end = start + (pick(10) == 0 ? -5000 : 1000 * pick(150));
      const std::string parent =
          i > 0 && pick(5) != 0 ? "s" + std::to_string(pick(i)) : (pick(4) == 0 ? "gone" : "");
      std::string& out = grouped[line][pick(3)];
      if (!out.empty()) out += ",";
      out += "{\"traceId\":\"" + std::to_string(1000 + t) + "\",\"spanId\":\"s" +
             std::to_string(i) + "\",\"parentSpanId\":\"" + parent + "\",\"name\":\"op" +
             std::to_string(pick(4)) + "\",\"kind\":" + std::to_string(1 + pick(5)) +
             ",\"startTimeUnixNano\":\"" + std::to_string(start) + "\",\"endTimeUnixNano\":\"" +
             std::to_string(std::max<int64_t>(end, 0)) + "\"}";
    }
  }
  std::string s;
  for (int l = 0; l < lines; ++l) {
    s += "{\"resourceSpans\":[";
    bool first = true;
    for (const auto& [service, spans] : grouped[l]) {
      s += std::string(first ? "" : ",") +
           "{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":"
           "\"svc" +
           std::to_string(service) + "\"}}]},\"scopeSpans\":[{\"spans\":[" + spans + "]}]}";
      first = false;
    }
    s += "]}\n";
  }
  return s;
}

TEST(SpanStream, OtlpLinesTraceByTrace) {
  std::mt19937 rng(23);
  for (int round = 0; round < 20; ++round) {
    importers::set_stream_chunk_bytes(round % 2 ? 11 + round : size_t(1) << 22);
    const std::string path = write_temp("stream-otlp.jsonl", random_otlp(rng, 2 + round, 6));
    const std::string want = whole(path);
    for (unsigned threads : {1u, 2u}) {
      const Streamed got = streamed(path, threads);
      EXPECT_EQ(got.text, want) << "round " << round;
      EXPECT_EQ(got.stream.units, static_cast<size_t>(2 + round));
    }
  }
  importers::set_stream_chunk_bytes(size_t(1) << 22);
}

TEST(SpanStream, OtlpTraceGapCutsTracesAndCountsThem) {
  // Trace 7's spans on lines 1 and 4: with a gap of 2 lines it is complete after line 3
  // and its later span is a piece of its own; with a gap of 3 it stays whole.
  auto line = [](const std::string& spans) {
    return "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
           "\"value\":{\"stringValue\":\"svc\"}}]},\"scopeSpans\":[{\"spans\":[" +
           spans + "]}]}]}\n";
  };
  auto span = [](const std::string& trace, const std::string& id, const std::string& parent,
                 int start, int end) {
    return "{\"traceId\":\"" + trace + "\",\"spanId\":\"" + id + "\",\"parentSpanId\":\"" + parent +
           "\",\"name\":\"" + id + "\",\"startTimeUnixNano\":\"" + std::to_string(start) +
           "\",\"endTimeUnixNano\":\"" + std::to_string(end) + "\"}";
  };
  const std::string path =
      write_temp("stream-gap.jsonl",
                 line(span("7", "root", "", 0, 100)) + line(span("8", "a", "", 0, 10)) +
                     line(span("9", "b", "", 0, 10)) + line(span("7", "child", "root", 10, 90)));
  std::vector<std::pair<std::string, int64_t>> got;  // trace id, duration
  auto run_gap = [&](size_t gap) {
    got.clear();
    PathCollection all;
    std::map<size_t, requests::UnitPaths> units;
    const auto s = importers::stream_spans(
        path, "otlp", 1,
        [&](size_t unit, const SpanSet& set) {
          std::vector<uint32_t> tp;
          const auto paths = requests::critical_paths(set, &tp);
          units.emplace(unit, requests::summarize_paths(set, paths, tp, false));
        },
        gap);
    for (const auto& [i, u] : units) all.add(u);
    for (const auto& t : all.traces()) got.emplace_back(t.trace_id(), t.duration_ns);
    return s;
  };
  const auto cut = run_gap(2);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int64_t>>{
                     {"7", 100}, {"8", 10}, {"9", 10}, {"7", 80}}));
  EXPECT_EQ(cut.diagnostics, (std::vector<std::pair<std::string, uint64_t>>{
                                 {"otlp.orphan_spans", 1}, {"otlp.cut_traces", 1}}));
  const auto whole3 = run_gap(3);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int64_t>>{{"7", 100}, {"8", 10}, {"9", 10}}));
  EXPECT_TRUE(whole3.diagnostics.empty());
}

TEST(SpanStream, OtlpCutAndBrokenLines) {
  std::mt19937 rng(29);
  const std::string text = random_otlp(rng, 5, 4);
  // Cut anywhere: as the whole-file import (the cut last line dropped and counted).
  for (size_t cut = 1; cut < text.size(); cut += 13) {
    const std::string path = write_temp("stream-otlp-cut.jsonl", text.substr(0, cut));
    std::string want, got;
    bool whole_failed = false, stream_failed = false;
    try {
      want = whole(path);
    } catch (const TraceError&) {
      whole_failed = true;
    }
    try {
      const Streamed s = streamed(path, 2);
      got = s.text;
      stream_failed = !s.stream.skipped.empty();
    } catch (const TraceError&) {
      stream_failed = true;
    }
    EXPECT_EQ(whole_failed, stream_failed) << "cut at " << cut;
    if (!whole_failed) {
      EXPECT_EQ(got, want) << "cut at " << cut;
    }
  }
  // A broken line in the middle: the others still computed, the bad one named.
  std::string broken = text;
  const size_t second = broken.find('\n') + 1;
  broken.insert(second + 1, "@");
  const Streamed s = streamed(write_temp("stream-otlp-broken.jsonl", broken), 2);
  ASSERT_EQ(s.stream.skipped.size(), 1u);
  EXPECT_EQ(s.stream.skipped[0].where, "document 2");
  EXPECT_EQ(s.stream.skipped[0].byte, second);
  EXPECT_NE(s.stream.skipped[0].error.find("invalid JSON"), std::string::npos);
  EXPECT_NE(s.text.find("diag otlp.skipped_traces 1"), std::string::npos) << s.text;
}

// ---------------------------------------------------------------------------------------
// Folded stacks

struct CliRun {
  int code = -1;
  std::string out;
};
CliRun run(const std::string& args) {
  const std::string cmd = std::string(SNAILTRAIL_BINARY) + " " + args + " 2>&1";
  CliRun r;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Nine fast checkouts (100 us: frontend 60, db 40) and one slow one (1000 us: the slow
// one also reserves stock for 850 us, nested under inventory's own Reserve span).
std::string checkouts() {
  auto span = [](int t, const std::string& id, const std::string& parent, int64_t start,
                 int64_t duration, const std::string& pid, const std::string& op) {
    return "{\"traceID\": \"c" + std::to_string(t) + "\", \"spanID\": \"" + id +
           "\", \"operationName\": \"" + op + "\", \"references\": [" +
           (parent.empty() ? ""
                           : "{\"refType\": \"CHILD_OF\", \"traceID\": \"c" + std::to_string(t) +
                                 "\", \"spanID\": \"" + parent + "\"}") +
           "], \"startTime\": " + std::to_string(start) +
           ", \"duration\": " + std::to_string(duration) + ", \"processID\": \"" + pid + "\"}";
  };
  std::string s = "{\"data\": [";
  for (int t = 0; t < 10; ++t) {
    const bool slow = t == 6;
    const int64_t t0 = 1'000'000 + 10'000 * t;
    s += t ? ", " : "";
    s += "{\"traceID\": \"c" + std::to_string(t) + "\", \"spans\": [";
    s += span(t, "r", "", t0, slow ? 1000 : 100, "p1", "GET /checkout");
    s += ", " + span(t, "q", "r", t0 + 20, 40, "p2", "query");
    if (slow) {
      s += ", " + span(t, "i", "r", t0 + 100, 850, "p3", "Reserve");
      s += ", " + span(t, "j", "i", t0 + 100, 850, "p4", "SELECT stock");
    }
    s += "], \"processes\": {\"p1\": {\"serviceName\": \"frontend\"}, \"p2\": {\"serviceName\": "
         "\"db\"}, \"p3\": {\"serviceName\": \"inventory\"}, \"p4\": {\"serviceName\": "
         "\"inventory-db\"}}}";
  }
  return s + "]}\n";
}

TEST(FoldedStacks, HandComputedPercentilesAndDiff) {
  // Slow trace, back from 1000: frontend 950..1000 (50), Reserve's child SELECT stock
  // 850 (it covers Reserve), frontend 60..100 (40), query 40, frontend 0..20 (20).
  const std::string path = write_temp("checkouts.json", checkouts());
  const CliRun all = run("critical-path " + path + " --format folded");
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_EQ(all.out,
            "frontend:GET /checkout 650\n"  // 9 x 60 + 110
            "frontend:GET /checkout;db:query 400\n"
            "frontend:GET /checkout;inventory:Reserve;inventory-db:SELECT stock 850\n");
  // 10 traces: p50 = the 5th duration (100), p99 the 10th (1000); bucket 1 point: the
  // 49th..51st percentile are 100 too (5th, 6th), the 98th..100th 1000.
  const CliRun p50 = run("critical-path " + path + " --format folded --percentile 50");
  EXPECT_EQ(p50.out, "frontend:GET /checkout 540\nfrontend:GET /checkout;db:query 360\n");
  const CliRun p99 = run("critical-path " + path + " --format folded --percentile 99");
  EXPECT_EQ(p99.out,
            "frontend:GET /checkout 110\n"
            "frontend:GET /checkout;db:query 40\n"
            "frontend:GET /checkout;inventory:Reserve;inventory-db:SELECT stock 850\n");
  // The difference, per trace: the slow trace's extra work is where p99 differs.
  const CliRun diff = run("critical-path " + path + " --diff 50 99");
  ASSERT_EQ(diff.code, 0) << diff.out;
  EXPECT_EQ(diff.out,
            "frontend:GET /checkout 60 110\n"
            "frontend:GET /checkout;db:query 40 40\n"
            "frontend:GET /checkout;inventory:Reserve;inventory-db:SELECT stock 0 850\n");
  EXPECT_EQ(run("critical-path " + path + " --diff p50 p99").out, diff.out);
  EXPECT_EQ(run("critical-path " + path + " --format folded --percentile p99").out, p99.out);
  EXPECT_EQ(run("critical-path " + path + " --diff 50 101").code, 2);
  // A bucket of 50 points around p50 takes in all ten.
  const CliRun wide = run("critical-path " + path + " --format folded --percentile 50 --bucket 50");
  EXPECT_EQ(wide.out, all.out);
}

TEST(FoldedStacks, TotalWeightIsTheSummedCriticalTime) {
  std::mt19937 rng(17);
  for (int round = 0; round < 10; ++round) {
    const std::string path = write_temp("folded-random.json", random_jaeger(rng, 20));
    const CliRun r = run("critical-path " + path + " --format folded");
    ASSERT_EQ(r.code, 0) << r.out;
    int64_t total = 0;
    size_t lines = 0;
    for (size_t at = 0; at < r.out.size();) {
      const size_t nl = r.out.find('\n', at);
      const std::string line = r.out.substr(at, nl - at);
      total += std::stoll(line.substr(line.rfind(' ') + 1));
      ++lines;
      at = nl + 1;
    }
    const SpanSet set = importers::read_spans(path);
    int64_t want = 0;
    for (const auto& p : requests::critical_paths(set)) want += p.duration_ns;
    EXPECT_EQ(total * 1000, want) << r.out;
    EXPECT_GT(lines, 0u);
  }
}

TEST(FoldedStacks, PercentileBuckets) {
  // Durations 10..100 (us) in steps of 10 over ten traces: nearest rank.
  PathCollection all;
  requests::UnitPaths u;
  for (int t = 0; t < 10; ++t) {
    requests::UnitPaths::TracePaths tp{};
    tp.id_begin = static_cast<uint32_t>(u.ids.size());
    u.ids += "t" + std::to_string(t);
    tp.id_len = static_cast<uint32_t>(u.ids.size()) - tp.id_begin;
    tp.duration_ns = (10 - t) * 10'000;  // file order: slowest first
    u.traces.push_back(tp);
  }
  all.add(u);
  auto durations = [&](double p, double w) {
    std::vector<int64_t> d;
    for (size_t i : requests::traces_around(all, p, w))
      d.push_back(all.traces()[i].duration_ns / 1000);
    return d;
  };
  EXPECT_EQ(durations(50, 0), (std::vector<int64_t>{50}));
  EXPECT_EQ(durations(50, 10), (std::vector<int64_t>{60, 50, 40}));  // 40th..60th
  EXPECT_EQ(durations(95, 1), (std::vector<int64_t>{100}));
  EXPECT_EQ(durations(1, 0), (std::vector<int64_t>{10}));
  EXPECT_EQ(durations(0, 0).size(), 10u);                    // 0: all
  EXPECT_EQ(durations(99, 5), (std::vector<int64_t>{100}));  // 94th..100th: 10th rank
}

}  // namespace
}  // namespace snailtrail::test_span_stream
