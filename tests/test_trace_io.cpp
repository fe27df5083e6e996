// Trace I/O: JSONL and .snail parsing, writing, round trips, error reporting and robustness.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail::test_trace_io {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Helpers

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Trace snail(const std::string& image, const std::string& source = "t.snail") {
  return parse_snail(bytes_of(image), source);
}

// The message of the TraceError thrown by f; fails the test if none (or another type) is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a TraceError";
  return {};
}

std::string jsonl_error(const std::string& text) {
  return error_of([&] { parse_jsonl(text, "in.jsonl"); });
}
std::string snail_error(const std::string& image) {
  return error_of([&] { snail(image); });
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string snail_header(uint32_t version = 1, uint32_t reserved = 0) {
  std::string s = "SNAILTRC";
  put_u32(s, version);
  put_u32(s, reserved);
  return s;
}

std::string block(uint32_t kind, uint32_t codec, uint32_t count, const std::string& payload,
                  int64_t stored_size = -1) {
  std::string s;
  put_u32(s, kind);
  put_u32(s, codec);
  put_u32(s, count);
  put_u32(s, stored_size < 0 ? static_cast<uint32_t>(payload.size())
                             : static_cast<uint32_t>(stored_size));
  return s + payload;
}

// A 40-byte record written field by field (independent of the in-memory struct).
std::string record(int64_t ts, uint32_t worker, uint8_t activity, uint8_t kind, uint16_t flags = 0,
                   uint32_t op = 0, int64_t correlator = 0, uint32_t remote = 0,
                   uint32_t records = 0, uint32_t reserved = 0) {
  std::string s;
  put_u64(s, static_cast<uint64_t>(ts));
  put_u64(s, static_cast<uint64_t>(correlator));
  put_u32(s, worker);
  put_u32(s, remote);
  put_u32(s, op);
  put_u32(s, records);
  s.push_back(static_cast<char>(activity));
  s.push_back(static_cast<char>(kind));
  s.push_back(static_cast<char>(flags & 0xFF));
  s.push_back(static_cast<char>(flags >> 8));
  put_u32(s, reserved);
  return s;
}

std::string meta_entry(uint8_t kind, uint32_t id, const std::string& name) {
  std::string s;
  s.push_back(static_cast<char>(kind));
  s.append(3, '\0');
  put_u32(s, id);
  put_u32(s, static_cast<uint32_t>(name.size()));
  return s + name;
}

std::string zstd_frame(const std::string& raw, bool with_size = true) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n;
  if (with_size) {
    n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  } else {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    n = ZSTD_compress2(cctx, out.data(), out.size(), raw.data(), raw.size());
    ZSTD_freeCCtx(cctx);
  }
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

constexpr uint8_t kProcessing = 0;
constexpr uint8_t kDataMessage = 12;
constexpr uint8_t kStart = 0, kEnd = 1, kSend = 2;

// A small trace touching every feature: all activities, all kinds, every optional field,
// extreme values, names needing escapes.
Trace sample_trace() {
  Trace t;
  t.worker_names = {{0, "driver"}, {1, "exec \"1\"\\"}, {4294967295u, "last\n\x01tab\t"}};
  t.operator_names = {{3, "map"}, {7, "reduce → sink"}};
  int64_t ts = -5;
  for (int a = 0; a < kActivityTypeCount; ++a) {
    Event e;
    e.ts = ts++;
    e.worker = static_cast<uint32_t>(a % 3);
    e.activity = static_cast<ActivityType>(a);
    if (is_communication(e.activity)) {
      e.kind = EventKind::send;
      e.flags = kHasCorrelator | kHasRemote;
      e.correlator = a == 12 ? INT64_MIN : INT64_MAX;
      e.remote = 4294967295u;
      t.events.push_back(e);
      e.kind = EventKind::recv;
      e.ts = ts++;
      t.events.push_back(e);
    } else {
      e.kind = EventKind::start;
      e.flags = static_cast<uint16_t>(a % 2 ? kHasOperator | kHasRecords : 0);
      if (e.has(kHasOperator)) e.op = static_cast<uint32_t>(a);
      if (e.has(kHasRecords)) e.records = 4294967295u;
      t.events.push_back(e);
      e.kind = EventKind::end;
      e.ts = ts++;
      t.events.push_back(e);
    }
  }
  t.events.back().ts = INT64_MAX;
  t.events.front().ts = INT64_MIN;
  return t;
}

void expect_same_events(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    EXPECT_EQ(x.ts, y.ts) << i;
    EXPECT_EQ(x.worker, y.worker) << i;
    EXPECT_EQ(x.activity, y.activity) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.flags, y.flags) << i;
    EXPECT_EQ(x.op, y.op) << i;
    EXPECT_EQ(x.correlator, y.correlator) << i;
    EXPECT_EQ(x.remote, y.remote) << i;
    EXPECT_EQ(x.records, y.records) << i;
  }
  EXPECT_EQ(a.worker_names, b.worker_names);
  EXPECT_EQ(a.operator_names, b.operator_names);
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("snailtrail_trace_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// ---------------------------------------------------------------------------------------------
// JSONL parsing

TEST(TraceIoJsonl, ParsesEventsMetadataAndLines) {
  const std::string text =
      "{\"meta\": \"worker\", \"id\": 0, \"name\": \"w0\"}\n"
      "\n"
      "{\"ts\": 10, \"worker\": 0, \"activity\": \"processing\", \"event\": \"start\", "
      "\"operator\": 3, \"records\": 100}\n"
      "   \t \n"
      "{\"event\": \"end\", \"activity\": \"processing\", \"worker\": 0, \"ts\": 20}\n"
      "{\"ts\": 25, \"worker\": 0, \"activity\": \"data_message\", \"event\": \"send\", "
      "\"correlator\": -7, \"remote\": 1}\n"
      "{\"meta\": \"operator\", \"id\": 3, \"name\": \"map\"}\n"
      "{\"meta\": \"worker\", \"id\": 0, \"name\": \"driver\"}\n";
  Trace t = parse_jsonl(text, "x.jsonl");
  EXPECT_EQ(t.source, "x.jsonl");
  EXPECT_EQ(t.format, TraceFormat::jsonl);
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.lines, (std::vector<uint32_t>{3, 5, 6}));
  EXPECT_EQ(t.location(1), "x.jsonl:5");

  const Event& a = t.events[0];
  EXPECT_EQ(a.ts, 10);
  EXPECT_EQ(a.worker, 0u);
  EXPECT_EQ(a.activity, ActivityType::processing);
  EXPECT_EQ(a.kind, EventKind::start);
  EXPECT_EQ(a.flags, kHasOperator | kHasRecords);
  EXPECT_EQ(a.op, 3u);
  EXPECT_EQ(a.records, 100u);

  EXPECT_EQ(t.events[1].flags, 0);
  EXPECT_EQ(t.events[1].kind, EventKind::end);

  const Event& m = t.events[2];
  EXPECT_EQ(m.kind, EventKind::send);
  EXPECT_EQ(m.flags, kHasCorrelator | kHasRemote);
  EXPECT_EQ(m.correlator, -7);
  EXPECT_EQ(m.remote, 1u);

  EXPECT_EQ(t.worker_names.at(0), "driver");  // the later line wins
  EXPECT_EQ(t.operator_names.at(3), "map");
}

// docs/FORMATS.md: an unknown key's value may nest 128 arrays or objects, empty or not;
// 129 is an error (issue 25 item 8: an empty innermost array used to allow 129).
TEST(TraceIoJsonl, NestingLimitOfIgnoredValuesIs128) {
  auto line = [](int depth, const std::string& inner, bool objects) {
    std::string v = inner;
    for (int i = 0; i < depth; ++i)
      v = objects ? "{\"k\":" + (v.empty() ? "0" : v) + "}" : "[" + v + "]";
    return "{\"ts\":1,\"worker\":0,\"activity\":\"processing\",\"event\":\"start\",\"x\":" + v +
           "}\n";
  };
  for (bool objects : {false, true})
    for (const std::string inner : {"", "1"}) {
      SCOPED_TRACE(std::string(objects ? "objects" : "arrays") + " around '" + inner + "'");
      EXPECT_EQ(parse_jsonl(line(128, inner, objects), "t.jsonl").events.size(), 1u);
      EXPECT_EQ(parse_jsonl(line(1, inner, objects), "t.jsonl").events.size(), 1u);
      try {
        parse_jsonl(line(129, inner, objects), "t.jsonl");
        ADD_FAILURE() << "129 levels were accepted";
      } catch (const TraceError& e) {
        EXPECT_THAT(e.what(), HasSubstr("nested too deeply"));
      }
    }
}

TEST(TraceIoJsonl, EmptyAndBlankInputs) {
  for (const char* text : {"", "\n", "\n\n  \n", "\r\n", " \t\r\n\r\n"}) {
    Trace t = parse_jsonl(text, "e");
    EXPECT_TRUE(t.events.empty()) << text;
    EXPECT_TRUE(t.worker_names.empty());
  }
}

TEST(TraceIoJsonl, CrlfAndMissingTrailingNewline) {
  const std::string line = R"({"ts":1,"worker":2,"activity":"io","event":"start"})";
  Trace t = parse_jsonl(line + "\r\n\r\n" + line + "\r\n" + line, "crlf");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.lines, (std::vector<uint32_t>{1, 3, 4}));
  EXPECT_EQ(t.events[2].activity, ActivityType::io);
  // A complete last line without a newline, then a truncated one.
  EXPECT_EQ(parse_jsonl(line, "x").events.size(), 1u);
  EXPECT_THAT(jsonl_error(line + "\n" + line.substr(0, 20)), HasSubstr("in.jsonl: line 2: "));
}

TEST(TraceIoJsonl, NullOptionalsUnknownKeysAndEscapes) {
  const std::string text =
      R"({"ts":5,"worker":1,"activity":"waiting","event":"end","operator":null,)"
      R"("correlator":null,"remote":null,"records":null,"extra":{"a":[1,2,{"b":null}],"c":1e300},)"
      R"("more":"text","flag":true,"big":123456789012345678901234567890})"
      "\n"
      R"({"t\u0073":6,"worker":1,"activity":"w\u0061iting","event":"start","id":"not a number"})"
      "\n";
  Trace t = parse_jsonl(text, "x");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].flags, 0);
  EXPECT_EQ(t.events[0].ts, 5);
  EXPECT_EQ(t.events[1].ts, 6);
  EXPECT_EQ(t.events[1].activity, ActivityType::waiting);
}

TEST(TraceIoJsonl, EveryActivityAndKindName) {
  std::string text;
  for (int a = 0; a < kActivityTypeCount; ++a) {
    const auto type = static_cast<ActivityType>(a);
    for (int k = 0; k < kEventKindCount; ++k) {
      const auto kind = static_cast<EventKind>(k);
      const bool message = kind == EventKind::send || kind == EventKind::recv;
      if (message != is_communication(type)) continue;
      text += R"({"ts":1,"worker":0,"activity":")" + std::string(name_of(type)) + R"(","event":")" +
              std::string(name_of(kind)) + "\"}\n";
    }
  }
  Trace t = parse_jsonl(text, "x");
  ASSERT_EQ(t.events.size(), 12u * 2 + 2u * 2);
  size_t i = 0;
  for (int a = 0; a < kActivityTypeCount; ++a) {
    for (int k = 0; k < 2; ++k, ++i) EXPECT_EQ(t.events[i].activity, static_cast<ActivityType>(a));
  }
}

TEST(TraceIoJsonl, IntegerRanges) {
  auto line = [](const std::string& ts, const std::string& worker) {
    return R"({"ts":)" + ts + R"(,"worker":)" + worker + R"(,"activity":"input","event":"start"})";
  };
  Trace t = parse_jsonl(
      line("-9223372036854775808", "4294967295") + "\n" + line("9223372036854775807", "0"), "x");
  EXPECT_EQ(t.events[0].ts, INT64_MIN);
  EXPECT_EQ(t.events[0].worker, 4294967295u);
  EXPECT_EQ(t.events[1].ts, INT64_MAX);

  const std::string worker_range = "field \"worker\" must be an integer in 0..4294967295";
  for (const char* bad : {"4294967296", "-1", "1.5", "\"3\"", "null", "true", "1e3", "[]"}) {
    EXPECT_THAT(jsonl_error(line("1", bad)), HasSubstr("line 1: " + worker_range)) << bad;
  }
  for (const char* bad : {"9223372036854775808", "-9223372036854775809", "1.0", "\"1\"",
                          "99999999999999999999999999"}) {
    EXPECT_THAT(jsonl_error(line(bad, "0")), HasSubstr("line 1: field \"ts\" must be an integer"))
        << bad;
  }
  for (const char* key : {"operator", "remote", "records"}) {
    EXPECT_THAT(
        jsonl_error(R"({"ts":1,"worker":0,"activity":"io","event":"end",")" + std::string(key) +
                    R"(":-3})"),
        HasSubstr("field \"" + std::string(key) + "\" must be an integer in 0..4294967295"));
  }
  EXPECT_THAT(jsonl_error(R"({"ts":1,"worker":0,"activity":"io","event":"end","correlator":0.5})"),
              HasSubstr("field \"correlator\" must be an integer"));
}

TEST(TraceIoJsonl, ErrorsNameTheLine) {
  const std::string ok = R"({"ts":1,"worker":0,"activity":"processing","event":"start"})";
  auto at_line3 = [&](const std::string& bad) { return ok + "\n\n" + bad + "\n" + ok + "\n"; };

  EXPECT_THAT(
      jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":"procesing","event":"start"})")),
      HasSubstr("in.jsonl: line 3: unknown activity \"procesing\""));
  EXPECT_THAT(jsonl_error(at_line3(R"({"worker":0,"activity":"processing","event":"start"})")),
              HasSubstr("line 3: missing field \"ts\""));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":0,"activity":"processing","event":"start"})")),
              HasSubstr("line 3: missing field \"worker\""));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":0,"worker":0,"event":"start"})")),
              HasSubstr("line 3: missing field \"activity\""));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":0,"worker":0,"activity":"io"})")),
              HasSubstr("line 3: missing field \"event\""));
  EXPECT_THAT(jsonl_error(at_line3("{}")), HasSubstr("line 3: missing field \"ts\""));
  EXPECT_THAT(
      jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":"processing","event":"begin"})")),
      HasSubstr("line 3: unknown event \"begin\" (expected start, end, send or recv)"));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":7,"event":"start"})")),
              HasSubstr("line 3: field \"activity\" must be a string"));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":"io","event":"start")")),
              HasSubstr("line 3: invalid JSON ("));
  EXPECT_THAT(jsonl_error(at_line3("not json")), HasSubstr("line 3: expected a JSON object"));
  EXPECT_THAT(jsonl_error(at_line3("{not json}")), HasSubstr("line 3: invalid JSON"));
  EXPECT_THAT(jsonl_error(at_line3("[1,2]")), HasSubstr("line 3: expected a JSON object"));
  EXPECT_THAT(jsonl_error(at_line3("42")), HasSubstr("line 3: "));
  EXPECT_THAT(jsonl_error(at_line3(ok + " {}")), HasSubstr("line 3: invalid JSON"));
  EXPECT_THAT(jsonl_error(at_line3(ok + ok)), HasSubstr("line 3: invalid JSON"));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":1,"ts":2,"worker":0,"activity":"io","event":"end"})")),
              HasSubstr("line 3: duplicate field \"ts\""));
  EXPECT_THAT(
      jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":"io","event":"end","x":[1,}})")),
      HasSubstr("line 3: invalid JSON"));
  EXPECT_THAT(jsonl_error(at_line3(R"({"ts":1,"worker":0,"activity":"io","event":"end","x":tru})")),
              HasSubstr("line 3: invalid JSON"));
}

TEST(TraceIoJsonl, MessageKindRule) {
  EXPECT_THAT(jsonl_error(R"({"ts":1,"worker":0,"activity":"processing","event":"send"})"),
              HasSubstr("line 1: event \"send\" needs activity data_message or control_message"));
  EXPECT_THAT(jsonl_error("\n"
                          R"({"ts":1,"worker":0,"activity":"data_message","event":"end"})"),
              HasSubstr("line 2: activity \"data_message\" is a message type"));
  EXPECT_NO_THROW(
      parse_jsonl(R"({"ts":1,"worker":0,"activity":"control_message","event":"recv"})", "x"));
}

TEST(TraceIoJsonl, MetadataErrors) {
  EXPECT_THAT(jsonl_error(R"({"meta":"thread","id":1,"name":"x"})"),
              HasSubstr("line 1: unknown meta kind \"thread\" (expected worker or operator)"));
  EXPECT_THAT(jsonl_error(R"({"meta":1,"id":1,"name":"x"})"), HasSubstr("unknown meta kind"));
  EXPECT_THAT(jsonl_error(R"({"meta":"worker","name":"x"})"), HasSubstr("missing field \"id\""));
  EXPECT_THAT(jsonl_error(R"({"meta":"worker","id":1})"), HasSubstr("missing field \"name\""));
  EXPECT_THAT(jsonl_error(R"({"meta":"worker","id":-1,"name":"x"})"),
              HasSubstr("field \"id\" must be an integer in 0..4294967295"));
  EXPECT_THAT(jsonl_error(R"({"meta":"operator","id":1,"name":5})"),
              HasSubstr("field \"name\" must be a string"));
  // Event keys on a metadata line are ignored, whatever their type.
  Trace t = parse_jsonl(R"({"meta":"worker","id":2,"name":"a\u0000b","ts":"x","worker":-1})", "x");
  EXPECT_EQ(t.worker_names.at(2), std::string("a\0b", 3));
  EXPECT_TRUE(t.events.empty());
}

TEST(TraceIoJsonl, HostileBytesNeverCrash) {
  const std::string ok = R"({"ts":1,"worker":0,"activity":"processing","event":"start"})";
  const std::vector<std::string> hostile = {
      std::string("\0\0\0", 3),
      std::string("{\"ts\":1\0,\"worker\":0}", 20),
      "{\"ts\":1,\"worker\":0,\"activity\":\"\xff\xfe\",\"event\":\"start\"}",
      "{\"meta\":\"worker\",\"id\":1,\"name\":\"\xc3\x28\"}",
      std::string(100000, '['),
      "{\"ts\":1,\"worker\":0,\"activity\":\"io\",\"event\":\"start\",\"x\":" +
          std::string(5000, '[') + std::string(5000, ']') + "}",
      "{\"ts\":1,\"worker\":0,\"activity\":\"io\",\"event\":\"start\",\"x\":" +
          std::string(5000, '[') + "}",
      "{\"ts\":" + std::string(5000, '9') + "}",
      "{\"" + std::string(100000, 'k') + "\":1}",
      "\"unterminated",
      "{\"ts\":1,\"worker\":0,\"activity\":\"io\",\"event\":\"start\",\"x\":\"\\u12\"}",
      "}",
      "{,}",
      "{\"a\"}",
      "{\"a\":}",
      "nul",
      "{\"ts\":-}",
  };
  for (const std::string& h : hostile) {
    for (const std::string& text : {h, ok + "\n" + h, h + "\n" + ok}) {
      try {
        parse_jsonl(text, "h");
      } catch (const TraceError&) {
      }
    }
  }
  EXPECT_THAT(jsonl_error(ok + "\n" + hostile[2]), HasSubstr("line 2: invalid JSON"));
  EXPECT_THAT(jsonl_error(hostile[6]), HasSubstr("line 1: invalid JSON"));
}

// ---------------------------------------------------------------------------------------------
// JSONL writing

TEST(TraceIoJsonl, CanonicalOutput) {
  Trace t;
  Event e;
  e.ts = 1;
  e.worker = 0;
  e.activity = ActivityType::processing;
  e.kind = EventKind::start;
  e.flags = kAllEventFlags;
  e.op = 3;
  e.correlator = 5;
  e.remote = 1;
  e.records = 10;
  t.events.push_back(e);
  Event m;
  m.ts = -2;
  m.worker = 7;
  m.activity = ActivityType::control_message;
  m.kind = EventKind::recv;
  m.op = 99;  // flag absent: not written
  t.events.push_back(m);
  t.operator_names[3] = "map";
  t.worker_names[9] = "b";
  t.worker_names[2] = "a\"\\\n\x1f\x7f";
  EXPECT_EQ(to_jsonl(t),
            "{\"meta\":\"worker\",\"id\":2,\"name\":\"a\\\"\\\\\\u000a\\u001f\x7f\"}\n"
            "{\"meta\":\"worker\",\"id\":9,\"name\":\"b\"}\n"
            "{\"meta\":\"operator\",\"id\":3,\"name\":\"map\"}\n"
            "{\"ts\":1,\"worker\":0,\"activity\":\"processing\",\"event\":\"start\",\"operator\":3,"
            "\"correlator\":5,\"remote\":1,\"records\":10}\n"
            "{\"ts\":-2,\"worker\":7,\"activity\":\"control_message\",\"event\":\"recv\"}\n");
  EXPECT_EQ(to_jsonl(Trace{}), "");
}

TEST(TraceIoJsonl, InvalidUtf8NamesBecomeReplacementCharacters) {
  Trace t;
  t.worker_names[1] = "ok\xff\xc3(\xe2\x82\xac";
  EXPECT_EQ(
      to_jsonl(t),
      "{\"meta\":\"worker\",\"id\":1,\"name\":\"ok\xEF\xBF\xBD\xEF\xBF\xBD(\xe2\x82\xac\"}\n");
  EXPECT_NO_THROW(parse_jsonl(to_jsonl(t), "x"));
}

TEST(TraceIoJsonl, WritingAnInvalidEventThrows) {
  Trace t;
  Event e;
  e.activity = ActivityType::processing;
  e.kind = EventKind::send;
  t.events.push_back(e);
  EXPECT_THAT(error_of([&] { to_jsonl(t); }), HasSubstr("record 0"));
  EXPECT_THAT(error_of([&] { to_snail(t); }), HasSubstr("record 0"));
  t.events[0].kind = EventKind::start;
  t.events[0].activity = static_cast<ActivityType>(200);
  EXPECT_THAT(error_of([&] { to_jsonl(t); }), HasSubstr("activity out of range"));
}

TEST(TraceIoJsonl, RoundTrip) {
  const Trace t = sample_trace();
  const std::string text = to_jsonl(t);
  const Trace back = parse_jsonl(text, "rt");
  expect_same_events(t, back);
  EXPECT_EQ(to_jsonl(back), text);
}

// ---------------------------------------------------------------------------------------------
// .snail round trips

TEST(TraceIoSnail, RoundTripRawAndZstd) {
  const Trace original = sample_trace();
  const std::string text = to_jsonl(original);
  const Trace from_jsonl = parse_jsonl(text, "a.jsonl");
  for (bool compress : {false, true}) {
    for (uint32_t per_block : {1u, 3u, 7u, 1000u, 0u}) {
      SnailWriteOptions opt;
      opt.compress = compress;
      opt.events_per_block = per_block;
      const std::string image = to_snail(from_jsonl, opt);
      const Trace back = snail(image);
      EXPECT_EQ(back.format, TraceFormat::snail);
      EXPECT_TRUE(back.lines.empty());
      expect_same_events(from_jsonl, back);
      EXPECT_EQ(to_jsonl(back), text) << compress << " " << per_block;
    }
  }
}

TEST(TraceIoSnail, LayoutOfWrittenFile) {
  Trace t;
  t.worker_names[5] = "w";
  Event e;
  e.ts = 0x0102030405060708;
  e.worker = 9;
  e.activity = ActivityType::io;
  e.kind = EventKind::end;
  e.flags = kHasRecords;
  e.records = 77;
  e.op = 1234;  // flag absent: written as 0
  t.events = {e, e};
  SnailWriteOptions opt;
  opt.events_per_block = 1;
  opt.version = 1;  // the layout without the block index (test_streamed.cpp has the index)
  const std::string image = to_snail(t, opt);
  // Version 2: the same blocks, then the index block (kind 3) ending with its offset.
  opt.version = 2;
  const std::string indexed = to_snail(t, opt);
  EXPECT_EQ(indexed.substr(8, 1), std::string(1, '\2'));
  EXPECT_EQ(indexed.substr(12, image.size() - 12), image.substr(12));
  uint64_t at = 0;
  std::memcpy(&at, indexed.data() + indexed.size() - 8, 8);
  EXPECT_EQ(at, image.size());
  EXPECT_EQ(indexed.substr(at, 4), std::string("\3\0\0\0", 4));
  EXPECT_EQ(snail(indexed).events.size(), 2u);
  const std::string expected =
      snail_header() + block(2, 0, 1, meta_entry(0, 5, "w")) +
      block(1, 0, 1, record(0x0102030405060708, 9, 7, kEnd, kHasRecords, 0, 0, 0, 77)) +
      block(1, 0, 1, record(0x0102030405060708, 9, 7, kEnd, kHasRecords, 0, 0, 0, 77));
  EXPECT_EQ(image, expected);
  EXPECT_EQ(snail(image).events[0].op, 0u);
}

TEST(TraceIoSnail, HeaderOnlyIsAnEmptyTrace) {
  SnailWriteOptions v1;
  v1.version = 1;
  EXPECT_EQ(to_snail(Trace{}, v1), snail_header());
  EXPECT_TRUE(snail(to_snail(Trace{})).events.empty());  // version 2: header and index
  Trace t = snail(snail_header(), "empty.snail");
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.source, "empty.snail");
  EXPECT_EQ(t.location(3), "empty.snail: record 3");
  // Empty blocks are fine too.
  t = snail(snail_header() + block(1, 0, 0, "") + block(2, 0, 0, "") +
            block(1, 1, 0, zstd_frame("")));
  EXPECT_TRUE(t.events.empty());
}

// Random valid events: messages with correlators (random, or each message's index), activities
// with operators.
Trace random_events(size_t n, uint64_t seed, bool correlator_is_index = false) {
  Trace t;
  std::mt19937_64 rng(seed);
  t.events.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.ts = static_cast<int64_t>(i) * 1000 + static_cast<int64_t>(rng() % 1000);
    e.worker = static_cast<uint32_t>(rng() % 16);
    if (rng() % 4 == 0) {
      e.activity = ActivityType::data_message;
      e.kind = rng() % 2 ? EventKind::send : EventKind::recv;
      e.flags = kHasCorrelator | kHasRemote;
      e.correlator = correlator_is_index ? static_cast<int64_t>(i) : static_cast<int64_t>(rng());
      e.remote = static_cast<uint32_t>(rng() % 16);
    } else {
      e.activity = static_cast<ActivityType>(rng() % 12);
      e.kind = rng() % 2 ? EventKind::start : EventKind::end;
      e.flags = kHasOperator;
      e.op = static_cast<uint32_t>(rng() % 50);
    }
    t.events.push_back(e);
  }
  return t;
}

TEST(TraceIoSnail, LargeTraceRoundTrip) {
  const Trace t = random_events(200000, 7, /*correlator_is_index=*/true);
  for (bool compress : {false, true}) {
    SnailWriteOptions opt;
    opt.compress = compress;
    opt.events_per_block = 50000;
    expect_same_events(t, snail(to_snail(t, opt)));
  }
  expect_same_events(t, parse_jsonl(to_jsonl(t), "big"));
}

// A file mapped as read_trace maps it (private, read-only, populated).
struct MappedFile {
  void* p = MAP_FAILED;
  size_t n = 0;
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    n = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
    p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    EXPECT_NE(p, MAP_FAILED);
    ::close(fd);
  }
  ~MappedFile() {
    if (p != MAP_FAILED) ::munmap(p, n);
  }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(p), n}; }
  // This process's resident bytes of the mapping (its entry in /proc/self/smaps).
  size_t resident() const {
    std::ifstream smaps("/proc/self/smaps");
    char want[32];
    std::snprintf(want, sizeof want, "%lx-", reinterpret_cast<unsigned long>(p));
    bool in = false;
    for (std::string line; std::getline(smaps, line);) {
      if (line.find('-') != std::string::npos && line.find(' ') > line.find('-') &&
          std::isxdigit(static_cast<unsigned char>(line[0])))
        in = line.rfind(want, 0) == 0;
      if (in && line.rfind("Rss:", 0) == 0) return std::stoul(line.substr(4)) * 1024;
    }
    ADD_FAILURE() << "no mapping at " << want;
    return 0;
  }
};

// The reader of a mapped file (read_trace) gives back the pages of each event block once
// decoded, so the file and its events are not resident at once; it reads the same events
// as the reader of the bytes in ordinary memory: the parallel path of large raw files, the
// block-by-block one (zstd, small files), blocks not aligned to pages (names first), and
// the same error for a file cut inside a block.
TEST(TraceIoSnail, MappedFileGivesBackItsEventPagesAndReadsTheSame) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Just over the parallel reader's 2^20 events.
  const Trace big = random_events((size_t{1} << 20) + 12345, 45);
  Trace small = random_events(70000, 46);
  small.worker_names = {{1, "w1"}, {2, std::string(1001, 'x')}};  // shifts every block
  struct Case {
    const Trace* t;
    bool compress;
    uint32_t per_block;
  };
  for (const Case& c : {Case{&big, false, 1u << 16}, Case{&small, false, 3001},
                        Case{&small, true, 5000}, Case{&big, false, 1u << 18}}) {
    SCOPED_TRACE(::testing::Message() << c.t->events.size() << " events, compress " << c.compress
                                      << ", " << c.per_block << " a block");
    SnailWriteOptions opt;
    opt.compress = c.compress;
    opt.events_per_block = c.per_block;
    const std::string image = to_snail(*c.t, opt);
    const std::string path = (temp_dir() / "mapped.snail").string();
    { std::ofstream(path, std::ios::binary) << image; }
    const Trace want = snail(image, path);  // the copying reader, ordinary memory
    MappedFile map(path);
    ASSERT_EQ(map.n, image.size());
    EXPECT_GE(map.resident(), image.size() / page * page);  // populated
    const Trace got = detail::parse_snail_file_mapping(map.bytes(), path);
    expect_same_events(want, got);
    // Most of a large file is given back: a reader that gives nothing back leaves all of
    // it resident. Not exactly all: beside the partial pages at the ends of each block, the
    // header, the names and the index, the kernel (6.18, ext4) keeps whole large folios of
    // 2 MiB mapped (one seen idle, two under load in release, three under ASan in CI:
    // 6.3 MB of a 42 MB file). Small files read through the same give-back code; their
    // few folios would be the whole file, so only large ones are measured.
    const size_t blocks = (c.t->events.size() + c.per_block - 1) / c.per_block;
    if (image.size() >= (size_t{16} << 20)) {
      EXPECT_LE(map.resident(), (2 * blocks + 4) * page + image.size() / 4) << image.size();
    }
    // Given back, the pages still read as the file.
    EXPECT_EQ(std::memcmp(map.p, image.data(), image.size()), 0);
    EXPECT_EQ(read_trace(path).events.size(), c.t->events.size());
    // Cut inside the last block: the error of the copying reader.
    const size_t cut = image.size() - 100;
    { std::ofstream(path, std::ios::binary) << image.substr(0, cut); }
    const std::string want_error = error_of([&] { snail(image.substr(0, cut), path); });
    MappedFile cut_map(path);
    EXPECT_EQ(error_of([&] { detail::parse_snail_file_mapping(cut_map.bytes(), path); }),
              want_error);
    EXPECT_THAT(want_error, HasSubstr("extends beyond the end of the file"));
  }
}

// Bytes in ordinary memory are never given back: they read the same after parsing (a
// reader that released them would leave zeros), on both the parallel and the sequential path.
TEST(TraceIoSnail, ParsingOrdinaryMemoryLeavesItIntact) {
  const Trace big = random_events((size_t{1} << 20) + 1, 47);
  for (bool compress : {false, true}) {
    SnailWriteOptions opt;
    opt.compress = compress;
    const std::string image = to_snail(big, opt);
    const std::vector<uint8_t> bytes(image.begin(), image.end());
    const Trace got = parse_snail(bytes, "heap.snail");
    EXPECT_EQ(got.events.size(), big.events.size());
    ASSERT_EQ(bytes.size(), image.size());
    EXPECT_EQ(std::memcmp(bytes.data(), image.data(), image.size()), 0) << compress;
  }
}

TEST(TraceIoSnail, ZstdFramesWithoutContentSizeOrHighlyCompressible) {
  std::string raw;
  for (int i = 0; i < 10000; ++i) raw += record(5, 1, kProcessing, kStart);  // ratio >> 64
  for (bool with_size : {true, false}) {
    const Trace t = snail(snail_header() + block(1, 1, 10000, zstd_frame(raw, with_size)));
    ASSERT_EQ(t.events.size(), 10000u);
    EXPECT_EQ(t.events[9999].ts, 5);
    // The count must still match exactly.
    EXPECT_THAT(snail_error(snail_header() + block(1, 1, 9999, zstd_frame(raw, with_size))),
                HasSubstr("byte 16: zstd frame "));
    EXPECT_THAT(snail_error(snail_header() + block(1, 1, 10001, zstd_frame(raw, with_size))),
                HasSubstr("byte 16: zstd frame decompresses to"));
  }
}

// ---------------------------------------------------------------------------------------------
// .snail errors

TEST(TraceIoSnail, HeaderErrors) {
  EXPECT_THAT(snail_error(""), HasSubstr("t.snail: byte 0: empty file (no .snail header)"));
  EXPECT_THAT(snail_error("SNAIL"), HasSubstr("byte 0: truncated header (5 of 16 bytes)"));
  EXPECT_THAT(snail_error("SNAILTRX" + snail_header().substr(8)), HasSubstr("byte 0: bad magic"));
  // Version 2 (with an index or profile blocks, docs/FORMATS.md) is read; 3 is not.
  EXPECT_THAT(snail_error(snail_header(3)), HasSubstr("byte 8: unsupported version 3"));
  EXPECT_THAT(snail_error(snail_header(1, 5)), HasSubstr("byte 12: reserved header field"));
}

TEST(TraceIoSnail, BlockErrors) {
  const std::string h = snail_header();
  const std::string r = record(1, 0, kProcessing, kStart);
  const std::string good = block(1, 0, 1, r);  // 56 bytes: the second block starts at 72
  EXPECT_THAT(snail_error(h + good + "abc"), HasSubstr("byte 72: truncated block header (3 of 16"));
  EXPECT_THAT(snail_error(h + good + block(5, 0, 0, "")),
              HasSubstr("byte 72: unknown block kind 5"));
  EXPECT_THAT(snail_error(h + good + block(3, 0, 0, "")),
              HasSubstr("byte 72: index block (kind 3) in a version 1 file"));
  EXPECT_THAT(snail_error(h + good + block(4, 0, 0, "")),
              HasSubstr("byte 72: profile block (kind 4) in a version 1 file"));
  EXPECT_THAT(snail_error(h + good + block(1, 2, 1, r)), HasSubstr("byte 72: unknown codec 2"));
  EXPECT_THAT(snail_error(h + good + block(1, 0, 2, r)),
              HasSubstr("byte 72: raw event block of 2 records must hold 80 bytes, not 40"));
  EXPECT_THAT(snail_error(h + good + block(1, 0, 1, r, 41)),
              HasSubstr("byte 72: block payload of 41 bytes extends beyond the end of the file "
                        "(40 bytes left)"));
  EXPECT_THAT(snail_error(h + good + block(1, 0, 1, r).substr(0, 30)),
              HasSubstr("byte 72: block payload of 40 bytes extends beyond"));
  EXPECT_THAT(snail_error(h + block(1, 0, 0xFFFFFFFFu, "", 0xFFFFFFF0u)),
              HasSubstr("byte 16: block payload"));
  EXPECT_THAT(snail_error(h + block(1, 1, (1u << 18) + 1, "xx")),
              HasSubstr("byte 16: event block claims 262145 records (at most 262144"));
}

TEST(TraceIoSnail, RecordErrors) {
  const std::string h = snail_header();
  const std::string ok = record(1, 0, kProcessing, kStart);
  auto bad_third = [&](const std::string& bad) {
    // Records at 32, 72, 112: the bad one is event record 2 at byte 112.
    return snail_error(h + block(1, 0, 3, ok + ok + bad));
  };
  EXPECT_THAT(bad_third(record(1, 0, 14, kStart)),
              HasSubstr("byte 112: event record 2: activity out of range"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, 4)),
              HasSubstr("byte 112: event record 2: event kind"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 16)),
              HasSubstr("byte 112: event record 2: unknown flag bits"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kSend)),
              HasSubstr("byte 112: event record 2: send/recv events need"));
  EXPECT_THAT(bad_third(record(1, 0, kDataMessage, kEnd)),
              HasSubstr("byte 112: event record 2: start/end events need"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 0, 5)),
              HasSubstr("byte 112: event record 2: operator is set but its flag is absent"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 0, 0, 5)),
              HasSubstr("byte 112: event record 2: correlator is set"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 0, 0, 0, 5)),
              HasSubstr("byte 112: event record 2: remote is set"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 0, 0, 0, 0, 5)),
              HasSubstr("byte 112: event record 2: records is set"));
  EXPECT_THAT(bad_third(record(1, 0, kProcessing, kStart, 0, 0, 0, 0, 0, 1)),
              HasSubstr("byte 112: event record 2: reserved field must be 0"));
  EXPECT_NO_THROW(
      snail(h + block(1, 0, 3, ok + ok + record(1, 0, kProcessing, kStart, 15, 5, 6, 7, 8))));

  // In a zstd block: the block's offset and the index inside it. Record numbers count on
  // from earlier blocks.
  const std::string raw_block = block(1, 0, 1, ok);  // bytes 16..71
  const std::string z = zstd_frame(ok + record(1, 0, kProcessing, kStart, 0, 9));
  EXPECT_THAT(snail_error(h + raw_block + block(1, 1, 2, z)),
              HasSubstr("byte 72: event record 2: operator is set but its flag is absent "
                        "(activity=0, kind=0, flags=0) (index 1 in zstd block)"));
}

TEST(TraceIoSnail, ZstdErrors) {
  const std::string h = snail_header();
  const std::string ok = record(1, 0, kProcessing, kStart);
  const std::string z = zstd_frame(ok + ok);
  EXPECT_THAT(snail_error(h + block(1, 1, 2, "garbage garbage")),
              HasSubstr("byte 16: invalid zstd frame header"));
  EXPECT_THAT(snail_error(h + block(1, 1, 2, z + "xyz")),
              HasSubstr("byte 16: 3 bytes of trailing"));
  EXPECT_THAT(snail_error(h + block(1, 1, 2, z + z)), HasSubstr("byte 16: "));
  EXPECT_THAT(snail_error(h + block(1, 1, 3, z)),
              HasSubstr("byte 16: zstd frame decompresses to 80"));
  std::string corrupt = z;
  corrupt[corrupt.size() - 3] ^= 0x55;
  EXPECT_THAT(snail_error(h + block(1, 1, 2, corrupt)), HasSubstr("byte 16: "));
  EXPECT_THAT(snail_error(h + block(1, 1, 2, z.substr(0, z.size() - 2))), HasSubstr("byte 16: "));
  const std::string unsized = zstd_frame(ok + ok, false);
  EXPECT_THAT(snail_error(h + block(1, 1, 2, unsized.substr(0, unsized.size() - 2))),
              HasSubstr("byte 16: "));
  EXPECT_THAT(snail_error(h + block(1, 1, 2, unsized + "x")),
              HasSubstr("byte 16: 1 bytes of trailing data"));
}

TEST(TraceIoSnail, MetadataErrors) {
  const std::string h = snail_header();
  Trace t = snail(
      h + block(2, 0, 3, meta_entry(0, 1, "a") + meta_entry(1, 2, "") + meta_entry(0, 1, "b")));
  EXPECT_EQ(t.worker_names, (std::unordered_map<uint32_t, std::string>{{1, "b"}}));
  EXPECT_EQ(t.operator_names.at(2), "");

  const std::string e1 = meta_entry(0, 1, "abc");  // 15 bytes at 32; the next one at 47
  EXPECT_THAT(snail_error(h + block(2, 1, 1, e1)),
              HasSubstr("byte 16: metadata block must use codec 0"));
  EXPECT_THAT(snail_error(h + block(2, 0, 2, e1 + meta_entry(2, 1, "x"))),
              HasSubstr("byte 47: unknown metadata entry kind 2"));
  std::string padded = meta_entry(1, 1, "x");
  padded[2] = 1;
  EXPECT_THAT(snail_error(h + block(2, 0, 2, e1 + padded)),
              HasSubstr("byte 48: metadata entry padding"));
  EXPECT_THAT(snail_error(h + block(2, 0, 2, e1 + meta_entry(0, 1, "xyz").substr(0, 14))),
              HasSubstr("byte 47: metadata name of 3 bytes extends beyond the end of the block"));
  EXPECT_THAT(snail_error(h + block(2, 0, 2, e1 + "1234")),
              HasSubstr("byte 47: metadata entry 1 is truncated"));
  EXPECT_THAT(snail_error(h + block(2, 0, 1, e1 + "1234")),
              HasSubstr("byte 47: 4 unused bytes at the end of the metadata block"));
  EXPECT_THAT(snail_error(h + block(2, 0, 1, meta_entry(0, 1, "\xff"))),
              HasSubstr("byte 32: metadata name is not valid UTF-8"));
}

// Every prefix of a valid file parses only where it ends on a block boundary.
TEST(TraceIoSnail, EveryTruncationParsesOnlyAtBlockBoundaries) {
  Trace t = parse_jsonl(to_jsonl(sample_trace()), "s");
  for (bool compress : {false, true}) {
    SnailWriteOptions opt;
    opt.compress = compress;
    opt.events_per_block = 10;
    const std::string image = to_snail(t, opt);
    // Block boundaries, from the headers.
    std::vector<size_t> boundaries = {16};
    for (size_t off = 16; off < image.size();) {
      uint32_t stored;
      std::memcpy(&stored, image.data() + off + 12, 4);
      off += 16 + stored;
      boundaries.push_back(off);
    }
    ASSERT_EQ(boundaries.back(), image.size());
    ASSERT_GE(boundaries.size(), 4u);
    for (size_t n = 0; n <= image.size(); ++n) {
      const bool boundary = std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
      try {
        const Trace p = snail(image.substr(0, n));
        EXPECT_TRUE(boundary) << "prefix " << n << " parsed";
      } catch (const TraceError& e) {
        EXPECT_FALSE(boundary) << "prefix " << n << ": " << e.what();
        EXPECT_THAT(std::string(e.what()), HasSubstr("t.snail: byte "));
      }
    }
  }
}

template <typename Parse>
void corrupt_randomly(const std::string& image, int rounds, uint64_t seed, Parse&& parse) {
  std::mt19937_64 rng(seed);
  int parsed = 0, rejected = 0;
  for (int i = 0; i < rounds; ++i) {
    std::string copy = image;
    const size_t pos = rng() % copy.size();
    const auto value = static_cast<char>(rng() % 3 == 0 ? copy[pos] ^ (1 << (rng() % 8)) : rng());
    copy[pos] = value;
    try {
      parse(copy);
      ++parsed;
    } catch (const TraceError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(parsed + rejected, rounds);
  EXPECT_GT(rejected, 0);
}

TEST(TraceIoSnail, RandomSingleByteCorruptions) {
  const Trace t = parse_jsonl(to_jsonl(sample_trace()), "s");
  for (bool compress : {false, true}) {
    SnailWriteOptions opt;
    opt.compress = compress;
    opt.events_per_block = 9;
    corrupt_randomly(to_snail(t, opt), 3000, compress ? 2 : 1,
                     [](const std::string& image) { snail(image); });
  }
}

TEST(TraceIoJsonl, RandomSingleByteCorruptions) {
  const std::string text = to_jsonl(sample_trace()) +
                           "\n  \r\n{\"ts\": 1, \"worker\": 2, \"activity\": \"io\", \"event\": "
                           "\"end\", \"x\": [1, {\"y\": null}, \"\\u00e9\"], \"records\": null}\n";
  corrupt_randomly(text, 3000, 3, [](const std::string& s) { parse_jsonl(s, "c"); });
}

// ---------------------------------------------------------------------------------------------
// Files

TEST(TraceIoFiles, FormatFromPath) {
  EXPECT_EQ(format_from_path("a.jsonl"), TraceFormat::jsonl);
  EXPECT_EQ(format_from_path("dir.x/a.json"), TraceFormat::jsonl);
  EXPECT_EQ(format_from_path("a.NDJSON"), TraceFormat::jsonl);
  EXPECT_EQ(format_from_path("/tmp/t.snail"), TraceFormat::snail);
  EXPECT_THAT(
      error_of([] { format_from_path("trace.txt"); }),
      HasSubstr("trace.txt: file name: unknown extension \".txt\" (expected .jsonl or .snail)"));
  EXPECT_THAT(error_of([] { format_from_path("dir.jsonl/trace"); }),
              HasSubstr("(expected .jsonl or .snail)"));
  EXPECT_THAT(error_of([] { format_from_path(".snail"); }), HasSubstr("file name"));
}

TEST(TraceIoFiles, WriteAndReadBack) {
  const auto dir = temp_dir();
  const Trace t = parse_jsonl(to_jsonl(sample_trace()), "s");
  SnailWriteOptions z;
  z.compress = true;
  for (const char* name : {"t.jsonl", "t.snail", "tz.snail"}) {
    const std::string path = (dir / name).string();
    write_trace(t, path, std::string(name) == "tz.snail" ? z : SnailWriteOptions{});
    const Trace back = read_trace(path);
    EXPECT_EQ(back.source, path);
    EXPECT_EQ(back.format, format_from_path(path));
    expect_same_events(t, back);
  }
  EXPECT_EQ(read_trace((dir / "t.jsonl").string()).lines.size(), t.events.size());

  // Files whose sizes put the end of the data at or near a page boundary (padding for JSONL).
  const std::string line = R"({"ts":1,"worker":0,"activity":"io","event":"start"})";
  for (size_t size : {4096u, 4095u, 4097u, 8192u - 30u, 8192u - 64u, 8192u - 65u}) {
    std::string text;
    while (text.size() + line.size() + 1 <= size) text += line + "\n";
    text.resize(size, ' ');
    const std::string path = (dir / "page.jsonl").string();
    std::ofstream(path, std::ios::binary) << text;
    EXPECT_EQ(read_trace(path).events.size(), size / (line.size() + 1)) << size;
  }
  std::filesystem::remove_all(dir);
}

TEST(TraceIoFiles, ReadErrorsNameThePath) {
  const auto dir = temp_dir();
  const std::string missing = (dir / "missing.jsonl").string();
  EXPECT_THAT(error_of([&] { read_trace(missing); }),
              HasSubstr(missing + ": cannot open: " + std::strerror(ENOENT)));
  const std::string subdir = (dir / "d.snail").string();
  std::filesystem::create_directories(subdir);
  EXPECT_THAT(error_of([&] { read_trace(subdir); }), HasSubstr(subdir + ": "));
  EXPECT_THAT(error_of([&] { read_trace((dir / "x.csv").string()); }),
              HasSubstr("unknown extension \".csv\""));
  EXPECT_THAT(error_of([&] { write_trace(Trace{}, (dir / "no/such/dir/t.snail").string()); }),
              HasSubstr("no/such/dir/t.snail: cannot create: "));
  const std::string empty = (dir / "empty.snail").string();
  std::ofstream(empty).close();
  EXPECT_THAT(error_of([&] { read_trace(empty); }),
              HasSubstr(empty + ": byte 0: empty file (no .snail header)"));
  const std::string bad = (dir / "bad.jsonl").string();
  std::ofstream(bad) << "\n{\"ts\":1}\n";
  EXPECT_THAT(error_of([&] { read_trace(bad); }), HasSubstr(bad + ": line 2: missing field"));
  std::filesystem::remove_all(dir);
}

TEST(TraceIoFiles, ExplicitFormatOverridesExtension) {
  const auto dir = temp_dir();
  const Trace t = parse_jsonl(to_jsonl(sample_trace()), "s");
  const std::string odd = (dir / "trace.log").string();
  std::ofstream(odd, std::ios::binary) << to_jsonl(t);
  expect_same_events(t, read_trace(odd, TraceFormat::jsonl));
  EXPECT_THAT(error_of([&] { read_trace(odd, TraceFormat::snail); }),
              HasSubstr(odd + ": byte 0: bad magic"));
  EXPECT_THAT(error_of([&] { read_trace(odd); }), HasSubstr("unknown extension \".log\""));
  const std::string bin = (dir / "binary.jsonl").string();
  std::ofstream(bin, std::ios::binary) << to_snail(t);
  expect_same_events(t, read_trace(bin, TraceFormat::snail));
  EXPECT_THAT(error_of([&] { read_trace(bin); }), HasSubstr(bin + ": line 1: invalid JSON"));
  std::filesystem::remove_all(dir);
}

// "-" reads stdin: JSONL, or a .snail image recognised by its magic.
TEST(TraceIoFiles, StdinDash) {
  const auto dir = temp_dir();
  const Trace t = parse_jsonl(to_jsonl(sample_trace()), "s");
  const int saved = ::dup(STDIN_FILENO);
  ASSERT_GE(saved, 0);
  for (const char* name : {"in.jsonl", "in.snail"}) {
    const std::string path = (dir / name).string();
    write_trace(t, path);
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::dup2(fd, STDIN_FILENO), STDIN_FILENO);
    ::close(fd);
    const Trace back = read_trace("-");
    EXPECT_EQ(back.source, "<stdin>");
    expect_same_events(t, back);
  }
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace snailtrail::test_trace_io
