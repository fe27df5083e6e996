// The original SnailTrail MessagePack log importer (src/importers/msgpack). Fixture bytes
// are written here with msgpack-cxx's packer (an encoder independent of our decoder), the
// way the original writers did: logformat's Rust LogRecord::write (write_uint for the first
// four fields, write_sint for the last three) and the Java LogRecordPacker (packLong/packInt).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
// msgpack's zone has its own operator new (malloc) and delete (free); at -Og (the ASan
// build) g++ 12 inlines both and takes them for a new/free mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#include <msgpack.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <random>
#include <string>
#include <vector>

#include "importers/importer.hpp"
#include "importers/msgpack/msgpack_importer.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"

namespace test_import_msgpack {

namespace {

using namespace snailtrail;
namespace fs = std::filesystem;
namespace mp = snailtrail::importers::msgpack_log;

// Original codes.
enum Code : int {
  kInput = 1,
  kBuffer,
  kScheduling,
  kProcessing,
  kBarrier,
  kSerialization,
  kDeserialization,
  kFaultTolerance,
  kControlMessage,
  kDataMessage,
  kUnknown,
  kWaiting,
  kBusyWaiting,
};
enum EventCode : int { kStart = 1, kEnd, kSent, kReceived, kBogus };

struct Record {
  uint64_t ts;
  uint32_t worker;
  int activity, event;
  int64_t correlator = -1, remote = -1, op = -1;
};

// Like logformat's LogRecord::write: unsigned ints then signed ones, smallest encodings.
void pack_rust(msgpack::sbuffer& buf, const Record& r) {
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  pk.pack_uint64(r.ts);
  pk.pack_uint64(r.worker);
  pk.pack_uint64(static_cast<uint64_t>(r.activity));
  pk.pack_uint64(static_cast<uint64_t>(r.event));
  pk.pack_int64(r.correlator);
  pk.pack_int64(r.remote);
  pk.pack_int64(r.op);
}

std::span<const uint8_t> bytes_of(const msgpack::sbuffer& b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

fs::path temp_path(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-msgpack-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void write_file(const fs::path& p, const char* data, size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

uint64_t diagnostic(const Trace& t, const std::string& name) {
  for (const auto& [k, v] : t.import_diagnostics)
    if (k == name) return v;
  return 0;
}

std::string error_of(const msgpack::sbuffer& b) {
  try {
    mp::parse_log(bytes_of(b), "log.msgpack");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(MsgpackImport, EveryOriginalCodeMapsToItsActivity) {
  msgpack::sbuffer buf;
  const std::array<ActivityType, 13> ours = {ActivityType::input,
                                             ActivityType::buffer,
                                             ActivityType::scheduling,
                                             ActivityType::processing,
                                             ActivityType::barrier_processing,
                                             ActivityType::serialization,
                                             ActivityType::deserialization,
                                             ActivityType::fault_tolerance,
                                             ActivityType::control_message,
                                             ActivityType::data_message,
                                             ActivityType::unknown,
                                             ActivityType::waiting,
                                             ActivityType::busy_waiting};
  // One record per code, at increasing times on worker 4; messages as sent, others start.
  for (int code = 1; code <= 13; ++code) {
    const bool message = code == kControlMessage || code == kDataMessage;
    pack_rust(buf,
              {1'500'000'000'000'000'000ULL + static_cast<uint64_t>(code), 4, code,
               message ? kSent : kStart, message ? 77 : -1, message ? 5 : -1, message ? -1 : 9});
  }
  const Trace t = mp::parse_log(bytes_of(buf), "codes");
  ASSERT_EQ(t.events.size(), 13u);
  for (int code = 1; code <= 13; ++code) {
    const Event& e = t.events[static_cast<size_t>(code - 1)];
    EXPECT_EQ(e.activity, ours[static_cast<size_t>(code - 1)]) << code;
    EXPECT_EQ(e.ts, 1'500'000'000'000'000'000LL + code);
    EXPECT_EQ(e.worker, 4u);
    if (is_communication(e.activity)) {
      EXPECT_EQ(e.kind, EventKind::send);
      EXPECT_EQ(e.flags, kHasCorrelator | kHasRemote);
      EXPECT_EQ(e.correlator, 77);
      EXPECT_EQ(e.remote, 5u);
    } else {
      EXPECT_EQ(e.kind, EventKind::start);
      EXPECT_EQ(e.flags, kHasOperator);
      EXPECT_EQ(e.op, 9u);
    }
  }
  EXPECT_TRUE(t.import_diagnostics.empty());
}

TEST(MsgpackImport, EveryIntegerEncodingAndTheArrayForm) {
  // The same record with each field in every MessagePack integer form that can hold it.
  msgpack::sbuffer ref, wide, array;
  pack_rust(ref, {100, 2, kProcessing, kEnd, -1, -1, 7});
  {
    msgpack::packer<msgpack::sbuffer> pk(&wide);
    pk.pack_fix_int64(100);         // d3
    pk.pack_fix_uint16(2);          // cd
    pk.pack_fix_int8(kProcessing);  // d0
    pk.pack_fix_uint32(kEnd);       // ce
    pk.pack_fix_int16(-1);          // d1
    pk.pack_fix_int32(-1);          // d2
    pk.pack_fix_uint8(7);           // cc
    pk.pack_fix_uint64(100);        // cf: a second record
    pk.pack_fix_int32(2);
    pk.pack_fix_uint64(kProcessing);
    pk.pack_fix_int64(kEnd);
    pk.pack_fix_int64(-1);
    pk.pack_fix_int8(-1);
    pk.pack_fix_int64(7);
  }
  {
    msgpack::packer<msgpack::sbuffer> pk(&array);  // Java-style packInt/packLong in an array
    pk.pack_array(7);
    pk.pack_int64(100);
    pk.pack_int32(2);
    pk.pack_int32(kProcessing);
    pk.pack_int32(kEnd);
    pk.pack_int64(-1);
    pk.pack_int32(-1);
    pk.pack_int32(7);
  }
  const std::string once = to_jsonl(mp::parse_log(bytes_of(ref), "ref"));
  const std::string twice = to_jsonl(mp::parse_log(bytes_of(wide), "wide"));
  EXPECT_EQ(twice, once + once);
  EXPECT_EQ(to_jsonl(mp::parse_log(bytes_of(array), "array")), once);
  EXPECT_EQ(once,
            "{\"ts\":100,\"worker\":2,\"activity\":\"processing\",\"event\":\"end\","
            "\"operator\":7}\n");
}

TEST(MsgpackImport, CorrelatorsKeepTheirBits) {
  // The Rust writer stores a u64 correlator as i64; u64 values above 2^63 arrive as
  // negative int64 or as uint64: both give the same bits. u64::MAX is -1: none.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  for (uint64_t c : {uint64_t{1} << 63, std::numeric_limits<uint64_t>::max(), uint64_t{5}}) {
    pk.pack_uint64(1);
    pk.pack_uint64(0);
    pk.pack_uint64(kDataMessage);
    pk.pack_uint64(kSent);
    pk.pack_uint64(c);
    pk.pack_int64(1);
    pk.pack_int64(-1);
  }
  const Trace t = mp::parse_log(bytes_of(buf), "c");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].correlator, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(t.events[1].has(kHasCorrelator));
  EXPECT_EQ(t.events[2].correlator, 5);
}

TEST(MsgpackImport, EventsAreGroupedByWorkerInTimeOrder) {
  // The original Spark converter wrote task by task: worker 1's events go back in time
  // across the file. The importer orders each worker's events (stable for equal times).
  msgpack::sbuffer buf;
  pack_rust(buf, {50, 1, kProcessing, kStart, -1, -1, -1});
  pack_rust(buf, {60, 1, kProcessing, kEnd, -1, -1, -1});
  pack_rust(buf, {10, 0, kScheduling, kStart, -1, -1, -1});
  pack_rust(buf, {20, 1, kProcessing, kStart, -1, -1, -1});
  pack_rust(buf, {30, 1, kProcessing, kEnd, -1, -1, -1});
  pack_rust(buf, {40, 0, kScheduling, kEnd, -1, -1, -1});
  const Trace t = mp::parse_log(bytes_of(buf), "unsorted");
  std::vector<std::pair<uint32_t, int64_t>> order;
  for (const Event& e : t.events) order.emplace_back(e.worker, e.ts);
  EXPECT_EQ(order, (std::vector<std::pair<uint32_t, int64_t>>{
                       {0, 10}, {0, 40}, {1, 20}, {1, 30}, {1, 50}, {1, 60}}));
  EXPECT_NO_THROW(build_pag(t));
}

TEST(MsgpackImport, CriticalParticipationOfASmallLogByHand) {
  // Worker 0: processing (operator 3) 0-10, sends data message 42 to worker 1 at 10.
  // Worker 1: scheduling 0-4, receives the message at 12, processing (operator 4) 12-20.
  // Worker 1's gap 4-12 ends with a receive: waiting (gap filling), so the only transient
  // path from t=0 to t=20 is processing 0-10 | message 10-12 | processing 12-20:
  // CP processing 18/20, data_message 2/20, scheduling 0. Operator summary: 10/20 for
  // operator 3 and 8/20 for operator 4 (one worker each).
  msgpack::sbuffer buf;
  pack_rust(buf, {0, 0, kProcessing, kStart, -1, -1, 3});
  pack_rust(buf, {10, 0, kProcessing, kEnd, -1, -1, 3});
  pack_rust(buf, {10, 0, kDataMessage, kSent, 42, 1, -1});
  pack_rust(buf, {0, 1, kScheduling, kStart, -1, -1, -1});
  pack_rust(buf, {4, 1, kScheduling, kEnd, -1, -1, -1});
  pack_rust(buf, {12, 1, kDataMessage, kReceived, 42, 0, -1});
  pack_rust(buf, {12, 1, kProcessing, kStart, -1, -1, 4});
  pack_rust(buf, {20, 1, kProcessing, kEnd, -1, -1, 4});
  const Trace t = mp::parse_log(bytes_of(buf), "small");
  Pag pag = build_pag(t, PagOptions{1});
  AnalysisOptions opt;
  opt.pag.gap_threshold_ns = 1;
  std::vector<WindowSummary> ws;
  analyze_pag(pag, opt, [&](const WindowView& v) { ws.push_back(v.summary); });
  ASSERT_EQ(ws.size(), 1u);
  const WindowSummary& w = ws[0];
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);
  using A = ActivityType;
  EXPECT_NEAR(w.cp.activity[static_cast<int>(A::processing)], 18.0 / 20, 1e-12);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(A::data_message)], 2.0 / 20, 1e-12);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(A::scheduling)], 0.0, 1e-12);
  // Conventional: edges 10 + 4 + 8 (waiting) + 8 + 2 (message) = 32 ns.
  EXPECT_NEAR(w.conventional.activity[static_cast<int>(A::waiting)], 8.0 / 32, 1e-12);
  ASSERT_EQ(w.cp.op.size(), 2u);
  EXPECT_EQ(w.cp.op[0].first, 3u);
  EXPECT_NEAR(w.cp.op[0].second, 10.0 / 20, 1e-12);
  EXPECT_EQ(w.cp.op[1].first, 4u);
  EXPECT_NEAR(w.cp.op[1].second, 8.0 / 20, 1e-12);
  for (uint64_t n : w.diagnostics.issues) EXPECT_EQ(n, 0u);
}

TEST(MsgpackImport, CountedProblems) {
  msgpack::sbuffer buf;
  pack_rust(buf, {1, 0, kProcessing, kStart, -1, -1, -1});
  pack_rust(buf, {2, 0, kProcessing, kBogus, -1, -1, -1});   // Bogus: skipped
  pack_rust(buf, {3, 0, kProcessing, kSent, 1, 1, -1});      // local type sent: skipped
  pack_rust(buf, {4, 0, kDataMessage, kStart, -1, -1, -1});  // message type started
  pack_rust(buf, {5, 0, kProcessing, kEnd, -1, -1, -1});
  const size_t complete = buf.size();
  pack_rust(buf, {6'000'000'000'000ULL, 0, kProcessing, kStart, -1, -1, -1});
  // Cut the last record inside its timestamp (a log still being written).
  const Trace t = mp::parse_log(bytes_of(buf).subspan(0, complete + 4), "cut");
  EXPECT_EQ(t.events.size(), 2u);
  EXPECT_EQ(diagnostic(t, "msgpack.bogus_events"), 1u);
  EXPECT_EQ(diagnostic(t, "msgpack.mismatched_event_types"), 2u);
  EXPECT_EQ(diagnostic(t, "msgpack.truncated_record"), 1u);
  // Cut exactly at a record boundary: nothing truncated.
  EXPECT_EQ(diagnostic(mp::parse_log(bytes_of(buf).subspan(0, complete), "x"),
                       "msgpack.truncated_record"),
            0u);
}

TEST(MsgpackImport, ErrorsNameTheByte) {
  auto one = [](auto&& pack_fields) {
    msgpack::sbuffer b;
    pack_rust(b, {1, 0, kProcessing, kStart, -1, -1, -1});  // 7 bytes, all fixints
    msgpack::packer<msgpack::sbuffer> pk(&b);
    pack_fields(pk);
    return b;
  };
  using P = msgpack::packer<msgpack::sbuffer>;
  // A nil where the second record's timestamp should be: byte 7.
  EXPECT_NE(error_of(one([](P& pk) {
              pk.pack_nil();
            })).find("log.msgpack: byte 7: expected a MessagePack integer, found marker byte 0xc0"),
            std::string::npos);
  auto record = [&](uint64_t ts, int64_t worker, int activity, int event, int64_t remote) {
    return one([=](P& pk) {
      pk.pack_uint64(ts);
      pk.pack_int64(worker);
      pk.pack_int64(activity);
      pk.pack_int64(event);
      pk.pack_int64(-1);
      pk.pack_int64(remote);
      pk.pack_int64(-1);
    });
  };
  EXPECT_NE(error_of(record(1, 0, 0, kStart, -1)).find("byte 9: activity type 0"),
            std::string::npos);
  EXPECT_NE(error_of(record(1, 0, 14, kStart, -1)).find("byte 9: activity type 14"),
            std::string::npos);
  EXPECT_NE(error_of(record(1, 0, kProcessing, 6, -1)).find("byte 10: event type 6"),
            std::string::npos);
  EXPECT_NE(error_of(record(1, -1, kProcessing, kStart, -1)).find("byte 8: local worker"),
            std::string::npos);
  EXPECT_NE(error_of(record(1, 0, kDataMessage, kSent, -2)).find("byte 12: remote worker"),
            std::string::npos);
  EXPECT_NE(error_of(record(uint64_t{1} << 63, 0, kProcessing, kStart, -1))
                .find("byte 7: timestamp out of the int64 range"),
            std::string::npos);
  EXPECT_NE(error_of(one([](P& pk) { pk.pack_array(3); })).find("byte 7: a record array"),
            std::string::npos);
}

TEST(MsgpackImport, AgreesWithMsgpackCxxOnRandomLogs) {
  // Differential check: random valid records in random integer encodings, decoded by us
  // and by msgpack-cxx's unpacker (which knows nothing of our mapping).
  std::mt19937_64 rng(11);
  for (int round = 0; round < 50; ++round) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(&buf);
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int64_t fields[7] = {
          static_cast<int64_t>(rng() >> 1),        static_cast<int64_t>(rng() % 5),
          1 + static_cast<int64_t>(rng() % 13),    1 + static_cast<int64_t>(rng() % 4),
          static_cast<int64_t>(rng() % 3) - 1,     static_cast<int64_t>(rng() % 3) - 1,
          static_cast<int64_t>(rng() % 100000) - 1};
      for (int64_t v : fields) {
        const uint64_t form = rng() % 3;
        if (form == 0)
          pk.pack_int64(v);
        else if (form == 1)
          pk.pack_fix_int64(v);
        else if (v >= 0)
          pk.pack_fix_uint64(static_cast<uint64_t>(v));
        else
          pk.pack_fix_int32(static_cast<int32_t>(v));
      }
    }
    // Reference: msgpack-cxx, then our mapping applied by hand.
    std::vector<Event> want;
    size_t off = 0;
    while (off < buf.size()) {
      int64_t f[7];
      for (int64_t& v : f) v = msgpack::unpack(buf.data(), buf.size(), off)->as<int64_t>();
      const bool message = f[2] == kControlMessage || f[2] == kDataMessage;
      if (message != (f[3] >= kSent)) continue;  // mismatched: skipped by the importer
      Event e;
      e.ts = f[0];
      e.worker = static_cast<uint32_t>(f[1]);
      e.kind = static_cast<EventKind>(f[3] - 1);
      if (f[4] != -1) e.correlator = f[4], e.flags |= kHasCorrelator;
      if (f[5] != -1) e.remote = static_cast<uint32_t>(f[5]), e.flags |= kHasRemote;
      if (f[6] != -1) e.op = static_cast<uint32_t>(f[6]), e.flags |= kHasOperator;
      want.push_back(e);
    }
    const Trace got = mp::parse_log(bytes_of(buf), "random");
    ASSERT_EQ(got.events.size(), want.size());
    // A log in global time order is kept as is; otherwise grouped by worker, stably.
    const bool in_time_order = std::is_sorted(
        want.begin(), want.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
    if (!in_time_order)
      std::stable_sort(want.begin(), want.end(), [](const Event& a, const Event& b) {
        return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
      });
    for (size_t i = 0; i < want.size(); ++i) {
      const Event& g = got.events[i];
      EXPECT_EQ(g.ts, want[i].ts);
      EXPECT_EQ(g.worker, want[i].worker);
      EXPECT_EQ(g.kind, want[i].kind);
      EXPECT_EQ(g.flags, want[i].flags);
      EXPECT_EQ(g.correlator, want[i].correlator);
      EXPECT_EQ(g.remote, want[i].remote);
      EXPECT_EQ(g.op, want[i].op);
    }
  }
}

// The stream (serve --follow): fed in random pieces, cut anywhere inside records, it
// emits the events of the file in its order; for a log in time order that is exactly the
// batch import, and a record cut at the end is counted when the stream finishes.
TEST(MsgpackStream, RandomPiecesEqualBatch) {
  std::mt19937_64 rng(5);
  msgpack::sbuffer buf;
  for (uint64_t i = 0; i < 3000; ++i) {
    const bool message = i % 3 == 0;
    pack_rust(buf, {1'000'000 + i * 97, static_cast<uint32_t>(rng() % 6),
                    message ? kDataMessage : kProcessing,
                    message ? (i % 2 ? kSent : kReceived) : (i % 2 ? kStart : kEnd),
                    message ? static_cast<int64_t>(i) : -1, message ? 1 : -1,
                    static_cast<int64_t>(rng() % 4) - 1});
  }
  const std::string text(buf.data(), buf.size());
  const Trace batch = mp::parse_log(bytes_of(buf), "x");
  ASSERT_EQ(batch.events.size(), 3000u);
  for (int round = 0; round < 20; ++round) {
    auto stream = mp::make_stream("x");
    Trace got;
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = 1 + rng() % (round % 2 ? 5 : 700);
      stream->feed(std::string_view(text).substr(pos, n), got);
      pos += n;
    }
    stream->finish(got);
    ASSERT_EQ(got.events.size(), batch.events.size());
    EXPECT_EQ(
        std::memcmp(got.events.data(), batch.events.data(), sizeof(Event) * got.events.size()), 0);
    EXPECT_TRUE(stream->diagnostics().empty());
  }
  // Cut inside the last record: 2999 events, the cut counted at the end only.
  auto stream = mp::make_stream("x");
  Trace got;
  stream->feed(std::string_view(text).substr(0, text.size() - 3), got);
  EXPECT_EQ(got.events.size(), 2999u);
  EXPECT_TRUE(stream->diagnostics().empty());
  stream->finish(got);
  EXPECT_EQ(stream->diagnostics(),
            (std::vector<std::pair<std::string, uint64_t>>{{"msgpack.truncated_record", 1}}));
  // Bad bytes name their offset in the whole stream, whatever the pieces.
  std::string bad = text.substr(0, 700);
  bad += '\xc1';  // never used in MessagePack
  auto broken = mp::make_stream("b");
  Trace ignored;
  broken->feed(std::string_view(bad).substr(0, 350), ignored);
  try {
    broken->feed(std::string_view(bad).substr(350), ignored);
    ADD_FAILURE() << "accepted 0xc1";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("b: byte "), std::string::npos) << e.what();
  }
}

TEST(MsgpackImport, Detection) {
  msgpack::sbuffer buf;
  for (int i = 0; i < 3; ++i) pack_rust(buf, {1'500'000'000'000'000'000ULL, 0, kInput, kStart});
  const std::string_view head(buf.data(), buf.size());
  EXPECT_EQ(mp::sniff("app.msgpack", head), 95);
  EXPECT_EQ(mp::sniff("trace", head), 70);
  EXPECT_EQ(mp::sniff("trace", head.substr(0, head.size() - 3)), 70);  // cut inside a record
  EXPECT_EQ(mp::sniff("x.msgpack", "{\"ts\":1}"), 30);
  EXPECT_EQ(mp::sniff("x.jsonl", "{\"ts\":1,\"worker\":0,\"activity\":\"processing\"}"), 0);
  EXPECT_EQ(mp::sniff("x", "SNAILTRC\x01"), 0);
  EXPECT_EQ(mp::sniff("x", "{\"Event\":\"SparkListenerLogStart\"}"), 0);
  EXPECT_EQ(mp::sniff("x", ""), 0);
  const fs::path path = temp_path("old-trace");  // no extension: content decides
  write_file(path, buf.data(), buf.size());
  EXPECT_EQ(importers::detect_importer(path.string()).name, "snailtrail-msgpack");
  EXPECT_EQ(importers::import_trace(path.string()).events.size(), 3u);
}

// ---------------------------------------------------------------------------------------
// End to end: the snailtrail binary recognises the format by content.

std::string run(const std::string& args) {
  const std::string cmd = std::string(SNAILTRAIL_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(MsgpackImportCli, AnalyzeDetectsTheFormat) {
  msgpack::sbuffer buf;
  pack_rust(buf, {0, 0, kProcessing, kStart, -1, -1, 3});
  pack_rust(buf, {10, 0, kProcessing, kEnd, -1, -1, 3});
  pack_rust(buf, {10, 0, kDataMessage, kSent, 42, 1, -1});
  pack_rust(buf, {12, 1, kDataMessage, kReceived, 42, 0, -1});
  pack_rust(buf, {12, 1, kProcessing, kStart, -1, -1, 4});
  pack_rust(buf, {20, 1, kProcessing, kEnd, -1, -1, 4});
  const fs::path path = temp_path("small.msgpack");
  write_file(path, buf.data(), buf.size());
  const std::string out =
      run("analyze " + path.string() + " --window whole --format jsonl --summary activity");
  // Processing 0-10 and 12-20, message 10-12: CP 0.9 and 0.1.
  EXPECT_NE(out.find("\"activity\":{\"processing\":0.9,"), std::string::npos) << out;
  EXPECT_NE(out.find("\"data_message\":0.1"), std::string::npos) << out;
  const std::string converted = temp_path("small.jsonl").string();
  run("convert " + path.string() + " " + converted);
  EXPECT_EQ(to_jsonl(read_trace(converted)), to_jsonl(mp::parse_log(bytes_of(buf), "x")));
}

}  // namespace

}  // namespace test_import_msgpack
