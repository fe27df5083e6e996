// Bounded-memory analysis (summary/streamed.hpp) and the .snail block index
// (trace/snail_index.hpp): `analyze` reading a .snail file block by block prints exactly
// what it prints with the whole trace in memory (--in-memory), for every format, window,
// --from/--to; old (version 1) files and files with a cut or corrupt index are read
// right.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "bench/synthetic.hpp"
#include "pag/timeline.hpp"
#include "process_util.hpp"
#include "sanitized.hpp"
#include "sim/simulator.hpp"
#include "summary/streamed.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"
#include "trace/trace_writer.hpp"

namespace snailtrail::test_streamed {
namespace {

namespace fs = std::filesystem;
using testing::Process;

Event local(uint32_t w, int64_t ts, ActivityType a, EventKind k, uint32_t op = kNone) {
  Event e;
  e.ts = ts;
  e.worker = w;
  e.activity = a;
  e.kind = k;
  if (op != kNone) {
    e.op = op;
    e.flags |= kHasOperator;
  }
  return e;
}

Event half(uint32_t w, uint32_t remote, int64_t ts, EventKind k, int64_t corr, bool with_corr) {
  Event e;
  e.ts = ts;
  e.worker = w;
  e.remote = remote;
  e.activity = ActivityType::data_message;
  e.kind = k;
  e.flags = kHasRemote;
  if (with_corr) {
    e.correlator = corr;
    e.flags |= kHasCorrelator;
  }
  return e;
}

// A messy random trace whose facts allow streaming: activities with gaps shorter and
// longer than the threshold, missing starts and ends, overlaps, idle stretches of every
// worker (windows without events, runs of them), workers that start late and stop early,
// messages (FIFO per worker pair, correlators increasing) that are unmatched, without
// correlator, received "before" they were sent or with zero duration. Events in time
// order, as a collector writes them.
Trace random_trace(std::mt19937_64& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const uint32_t workers = static_cast<uint32_t>(uni(2, 5));
  const int64_t horizon = uni(5'000'000, 60'000'000);
  // Quiet stretches for everyone (windows without events).
  std::vector<std::pair<int64_t, int64_t>> quiet;
  for (int q = static_cast<int>(uni(0, 2)); q > 0; --q) {
    const int64_t a = uni(0, horizon);
    quiet.emplace_back(a, a + uni(1'000'000, 25'000'000));
  }
  auto is_quiet = [&](int64_t t) {
    for (auto [a, b] : quiet)
      if (t >= a && t < b) return true;
    return false;
  };
  std::vector<Event> events;
  const ActivityType types[] = {ActivityType::processing, ActivityType::serialization,
                                ActivityType::deserialization, ActivityType::scheduling};
  for (uint32_t w = 0; w < workers; ++w) {
    int64_t t = uni(0, 50'000);
    int64_t end = horizon;
    if (uni(0, 2) == 0) {
      t = uni(0, horizon / 2);
      end = uni(t, horizon);
    }
    while (t < end) {
      if (is_quiet(t)) {
        t += uni(100'000, 2'000'000);
        continue;
      }
      const ActivityType a = types[uni(0, 3)];
      const uint32_t op = uni(0, 3) == 0 ? kNone : static_cast<uint32_t>(uni(1, 3));
      const int64_t len = uni(0, 3) == 0 ? uni(1, 200) : uni(1'000, 150'000);
      if (uni(0, 12) != 0) events.push_back(local(w * 7, t, a, EventKind::start, op));
      if (uni(0, 12) != 0) events.push_back(local(w * 7, t + len, a, EventKind::end, op));
      if (uni(0, 25) == 0)
        events.push_back(local(w * 7, t + len / 2, types[uni(0, 3)], EventKind::start));
      t += len + (uni(0, 2) == 0 ? uni(0, 90'000) : uni(100'000, 400'000));
      if (uni(0, 40) == 0) t += uni(1'000'000, 5'000'000);  // a worker idles a while
    }
  }
  // Messages per directed pair, FIFO, so correlators increase in file order.
  int64_t corr = 0;
  for (uint32_t s = 0; s < workers; ++s) {
    for (uint32_t r = 0; r < workers; ++r) {
      if (uni(0, 2) == 0) continue;
      std::vector<int64_t> sends;
      for (int64_t m = uni(0, 30); m > 0; --m) sends.push_back(uni(0, horizon));
      std::sort(sends.begin(), sends.end());
      int64_t last_recv = INT64_MIN;
      for (int64_t ts : sends) {
        int64_t tr = ts + uni(0, 300'000);
        if (uni(0, 15) == 0) tr = ts - uni(1, 50'000);  // skew
        if (uni(0, 10) == 0) tr = ts;                   // zero duration
        tr = std::max(tr, last_recv + 1);
        last_recv = tr;
        const int64_t c = ++corr;
        const bool with_corr = uni(0, 30) != 0;
        if (uni(0, 15) != 0)
          events.push_back(half(s * 7, r * 7, ts, EventKind::send, c, with_corr));
        if (uni(0, 15) != 0)
          events.push_back(half(r * 7, s * 7, tr, EventKind::recv, c, with_corr));
      }
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  Trace trace;
  trace.events.resize(events.size());
  std::copy(events.begin(), events.end(), trace.events.begin());
  trace.worker_names[0] = "first \"worker\"";
  trace.operator_names[1] = "map";
  return trace;
}

class StreamedTest : public testing::TempDirTest {
 protected:
  StreamedTest() : TempDirTest("streamed") {}

  struct Out {
    int code;
    std::string out, err;
  };
  Out run(std::vector<std::string> args) {
    if (args[0] != "convert") args.push_back("--no-progress");
    Process p(args, path("out"), path("err"));
    const int code = p.wait();
    return {code, p.out(), p.err()};
  }

  // A synthetic trace of 4 workers and `duration_ns`, in blocks of 2000 events.
  void write_synthetic(const std::string& name, int64_t duration_ns) {
    bench::SyntheticOptions so;
    so.duration_ns = duration_ns;
    so.workers = 4;
    SnailWriteOptions o;
    o.events_per_block = 2000;
    write_trace(bench::make_synthetic_trace(so), path(name).string(), o);
  }

  // `analyze` streamed and in memory print the same bytes; returns the output.
  std::string expect_same(const fs::path& trace, std::vector<std::string> args) {
    std::vector<std::string> a = {"analyze", trace.string()};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<std::string> b = a;
    b.push_back("--in-memory");
    a.push_back("--timings");
    a.push_back("--streamed");  // also when a window holds a quarter of the events
    const Out streamed = run(a);
    const Out memory = run(b);
    std::string what = trace.string();
    for (const auto& s : args) what += " " + s;
    EXPECT_EQ(streamed.code, memory.code) << what << "\n" << streamed.err << memory.err;
    EXPECT_EQ(streamed.out, memory.out) << what;
    // It really was streamed (the fallback would not say so).
    if (memory.code == 0) {
      EXPECT_NE(streamed.err.find("streamed:"), std::string::npos) << what << streamed.err;
    }
    return streamed.out;
  }
};

TEST_F(StreamedTest, RandomTracesEveryFormatAndRange) {
  std::mt19937_64 rng(20);
  for (int i = 0; i < testing::random_inputs(10, 4); ++i) {
    const Trace t = random_trace(rng);
    SnailWriteOptions o;
    o.events_per_block = static_cast<uint32_t>(1 + rng() % 300);  // many blocks
    const fs::path file = path("r" + std::to_string(i) + ".snail");
    write_trace(t, file.string(), o);
    const std::string window = std::vector<std::string>{"1ms", "2ms", "500us", "3ms"}[i % 4];
    const std::string out = expect_same(file, {"--window", window, "--format", "jsonl"});
    EXPECT_FALSE(out.empty());
    expect_same(file, {"--window", window, "--format", "csv", "--threads", "1"});
    expect_same(file, {"--window", window, "--per-window", "--top", "3"});
    // Ranges: from/to inside, across quiet stretches, beyond the ends.
    for (int r = 0; r < 3; ++r) {
      const int64_t from = static_cast<int64_t>(rng() % 40'000'000);
      const int64_t to = from + 1 + static_cast<int64_t>(rng() % 20'000'000);
      expect_same(file,
                  {"--window", window, "--format", "jsonl", "--from",
                   "+" + std::to_string(from) + "ns", "--to", "+" + std::to_string(to) + "ns"});
    }
    expect_same(file, {"--window", window, "--format", "jsonl", "--from", "+7ms"});
  }
}

// A few large windows, one of them covering the whole trace, read block by block (cut
// once, at the end, by StreamingPag::take) print what the whole trace in memory prints:
// random messy traces, one thread and two (the next block read while one is added).
TEST_F(StreamedTest, LargeWindowsStreamedEqualTheWholeTraceInMemory) {
  std::mt19937_64 rng(39);
  for (int i = 0; i < testing::random_inputs(8, 3); ++i) {
    const Trace t = random_trace(rng);
    SnailWriteOptions o;
    o.events_per_block = static_cast<uint32_t>(1 + rng() % 300);
    const fs::path file = path("big" + std::to_string(i) + ".snail");
    write_trace(t, file.string(), o);
    for (const char* w : {"1s", "40ms", "25ms", "15ms"})
      for (const char* threads : {"1", "2"})
        expect_same(file, {"--window", w, "--format", "jsonl", "--threads", threads});
    expect_same(file, {"--window", "1s", "--format", "jsonl", "--from", "+3ms", "--to", "+30ms"});
  }
}

TEST_F(StreamedTest, ExamplesAndSimulatedTraces) {
  // examples/pipeline.jsonl, converted.
  const Trace pipeline =
      read_trace(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl");
  write_trace(pipeline, path("pipeline.snail").string());
  for (const char* w : {"1ms", "5ms", "100us"})
    expect_same(path("pipeline.snail"), {"--window", w, "--format", "jsonl"});
  expect_same(path("pipeline.snail"), {"--window", "1ms"});
  // Simulated scenarios (short), and the benchmark's synthetic trace with small blocks.
  for (const char* name :
       {"wordcount-skew-30.toml", "spark-microbatch.toml", "timely-iterative.toml"}) {
    sim::Scenario s = sim::load_scenario(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" + name);
    s.duration_ns = std::min<int64_t>(s.duration_ns, 3'000'000'000);
    const sim::SimResult r = sim::simulate(s);
    SnailWriteOptions o;
    o.events_per_block = 4096;
    o.compress = std::string(name).find("spark") != std::string::npos;
    const fs::path file = path(std::string(name) + ".snail");
    write_trace(r.trace, file.string(), o);
    expect_same(file, {"--window", "100ms", "--format", "jsonl"});
    expect_same(file, {"--window", "250ms", "--format", "csv", "--from", "+1s", "--to", "+2s"});
  }
  bench::SyntheticOptions so;
  so.duration_ns = 3'000'000'000;
  so.workers = 8;
  SnailWriteOptions o;
  o.events_per_block = 5000;
  write_trace(bench::make_synthetic_trace(so), path("synthetic.snail").string(), o);
  expect_same(path("synthetic.snail"), {"--window", "1s", "--format", "jsonl"});
  expect_same(path("synthetic.snail"), {"--window", "200ms", "--from", "+1100ms", "--to", "+2s"});
}

TEST_F(StreamedTest, UnsortedInput) {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 3; ++i) {
    // Worker after worker (each in time order): allowed; streaming holds more, same output.
    Trace t = random_trace(rng);
    std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
      return a.worker != b.worker ? a.worker > b.worker : a.ts < b.ts;
    });
    SnailWriteOptions o;
    o.events_per_block = 40;
    write_trace(t, path("bywork.snail").string(), o);
    expect_same(path("bywork.snail"), {"--window", "1ms", "--format", "jsonl"});
    expect_same(path("bywork.snail"),
                {"--window", "2ms", "--format", "csv", "--from", "+3ms", "--to", "+9ms"});
  }
  // A worker going back in time: an error either way (read whole, as before).
  Trace t;
  t.events.resize(2);
  t.events[0] = local(1, 50, ActivityType::processing, EventKind::start);
  t.events[1] = local(1, 40, ActivityType::processing, EventKind::end);
  write_trace(t, path("back.snail").string());
  const Out s = run({"analyze", path("back.snail").string(), "--format", "jsonl"});
  const Out m = run({"analyze", path("back.snail").string(), "--format", "jsonl", "--in-memory"});
  EXPECT_NE(s.code, 0);
  EXPECT_EQ(s.code, m.code);
  EXPECT_EQ(s.out, m.out);
  EXPECT_NE(s.err.find("not in time order"), std::string::npos) << s.err;
}

// The lookback before --from grows until every worker's gap-filling state is provably
// that of a read from the start: worker 1 runs one activity from 0 to 9.5 ms (nothing in
// any short lookback), worker 2 works back to back without gaps of the threshold (no
// reset node), worker 3 has reset nodes everywhere.
TEST_F(StreamedTest, LookbackGrowsUntilTheStateIsKnown) {
  Trace t;
  std::vector<Event> ev;
  ev.push_back(local(1, 0, ActivityType::processing, EventKind::start, 4));
  ev.push_back(local(1, 9'500'000, ActivityType::processing, EventKind::end, 4));
  for (int64_t x = 0; x < 10'000'000; x += 50'000) {  // 50 us activities, no gaps
    ev.push_back(local(2, x, ActivityType::serialization, EventKind::start, 5));
    ev.push_back(local(2, x + 50'000, ActivityType::serialization, EventKind::end, 5));
  }
  for (int64_t x = 0; x < 10'000'000; x += 400'000) {  // 100 us of work, 300 us gaps
    ev.push_back(local(3, x, ActivityType::deserialization, EventKind::start, 6));
    ev.push_back(local(3, x + 100'000, ActivityType::deserialization, EventKind::end, 6));
  }
  std::stable_sort(ev.begin(), ev.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  t.events.resize(ev.size());
  std::copy(ev.begin(), ev.end(), t.events.begin());
  SnailWriteOptions o;
  o.events_per_block = 16;
  write_trace(t, path("long.snail").string(), o);
  for (const char* from : {"+6ms", "+8200us"}) {
    expect_same(path("long.snail"), {"--window", "1ms", "--format", "jsonl", "--from", from});
    const Out s = run({"analyze", path("long.snail").string(), "--window", "1ms", "--format",
                       "jsonl", "--from", from, "--timings"});
    const size_t p = s.err.find("lookback ");
    ASSERT_NE(p, std::string::npos) << s.err;
    // Back to the first event: 6 ms or 8.2 ms, not the first try of one window.
    EXPECT_GE(std::stoll(s.err.substr(p + 9)), 6'000'000) << s.err;
  }
  // Without worker 1 and 2's troubles a window of lookback is enough.
  Trace easy;
  std::vector<Event> e3;
  for (const Event& e : ev)
    if (e.worker == 3) e3.push_back(e);
  easy.events.resize(e3.size());
  std::copy(e3.begin(), e3.end(), easy.events.begin());
  write_trace(easy, path("easy.snail").string(), o);
  expect_same(path("easy.snail"), {"--window", "1ms", "--format", "jsonl", "--from", "+6ms"});
  const Out s = run({"analyze", path("easy.snail").string(), "--window", "1ms", "--format", "jsonl",
                     "--from", "+6ms", "--timings"});
  EXPECT_NE(s.err.find("lookback 1000000 ns"), std::string::npos) << s.err;
}

TEST_F(StreamedTest, FallsBackWhenTheFactsForbidStreaming) {
  // A correlator used twice: read whole (same output, a note says why).
  Trace t;
  t.events.resize(4);
  t.events[0] = half(1, 2, 100, EventKind::send, 5, true);
  t.events[1] = half(2, 1, 200, EventKind::recv, 5, true);
  t.events[2] = half(1, 2, 300, EventKind::send, 5, true);
  t.events[3] = half(2, 1, 400, EventKind::recv, 5, true);
  write_trace(t, path("dup.snail").string());
  const Out s =
      run({"analyze", path("dup.snail").string(), "--window", "100ns", "--format", "jsonl"});
  const Out m = run({"analyze", path("dup.snail").string(), "--window", "100ns", "--format",
                     "jsonl", "--in-memory"});
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.out, m.out);
  EXPECT_NE(s.err.find("correlators"), std::string::npos) << s.err;
}

// --- the index --------------------------------------------------------------------------

TraceFacts facts_of(const Trace& t) {
  FactsBuilder b;
  b.add(t.events.data(), t.events.size());
  return b.finish();
}

// Correlators renumbered by a permutation that shuffles blocks of `spread` consecutive
// values (a message keeps one correlator for both halves): the same messages, their
// correlators out of order per worker pair by less than `spread` places, as a network or a
// merge of files reorders them.
void shuffle_correlators(Trace& t, size_t spread, std::mt19937_64& rng) {
  std::vector<int64_t> values;
  for (const Event& e : t.events)
    if (e.has(kHasCorrelator)) values.push_back(e.correlator);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<int64_t> to = values;
  for (size_t b = 0; b < to.size(); b += spread)
    std::shuffle(to.begin() + static_cast<std::ptrdiff_t>(b),
                 to.begin() + static_cast<std::ptrdiff_t>(std::min(b + spread, to.size())), rng);
  for (Event& e : t.events)
    if (e.has(kHasCorrelator)) {
      const size_t rank = static_cast<size_t>(
          std::lower_bound(values.begin(), values.end(), e.correlator) - values.begin());
      e.correlator = to[rank];
    }
}

// The number after `label` in `text` (-1 if absent).
long long number_after(const std::string& text, const std::string& label) {
  const size_t p = text.find(label);
  return p == std::string::npos ? -1 : std::stoll(text.substr(p + label.size()));
}

// Correlators out of order per worker pair (but each used once) are streamed, with the
// windows of the whole trace in memory (the oracle), and the same windows as the trace
// with its correlators in order: matching goes by key, so reordering changes nothing.
TEST_F(StreamedTest, ReorderedCorrelatorsAreStreamedWithTheWholeTracesWindows) {
  std::mt19937_64 rng(39);
  for (int i = 0; i < testing::random_inputs(6, 3); ++i) {
    const Trace in_order = random_trace(rng);
    Trace t = in_order;
    shuffle_correlators(t, 2 + rng() % 40, rng);
    const TraceFacts f = facts_of(t);
    ASSERT_TRUE(f.correlators_unique);
    SnailWriteOptions o;
    o.events_per_block = static_cast<uint32_t>(1 + rng() % 300);
    write_trace(t, path("shuffled.snail").string(), o);
    write_trace(in_order, path("ordered.snail").string(), o);
    EXPECT_EQ(SnailFile(path("shuffled.snail").string()).index().facts.correlators_unique, true);
    const std::string window = std::vector<std::string>{"1ms", "2ms", "500us"}[i % 3];
    const std::string out =
        expect_same(path("shuffled.snail"), {"--window", window, "-f", "jsonl"});
    EXPECT_EQ(out, expect_same(path("ordered.snail"), {"--window", window, "-f", "jsonl"}));
    expect_same(path("shuffled.snail"),
                {"--window", window, "-f", "csv", "--from", "+3ms", "--to", "+20ms"});
  }
}

// A long trace (the benchmark's synthetic one, many windows) with correlators shuffled in
// blocks of 200: streamed in bounded memory. The analyzer's own high-water marks (PAG
// nodes held, half messages waiting for their partner) are those of the same trace with
// its correlators in order, and the waiting halves stay below the messages in flight at
// any block boundary (brute force over the file) plus the trace's unmatched halves.
TEST_F(StreamedTest, ReorderedCorrelatorsStreamInBoundedMemory) {
  bench::SyntheticOptions so;
  so.duration_ns = 4'000'000'000;
  so.workers = 6;
  const Trace in_order = bench::make_synthetic_trace(so);
  Trace t = in_order;
  std::mt19937_64 rng(7);
  shuffle_correlators(t, 200, rng);
  const TraceFacts f = facts_of(t);
  EXPECT_TRUE(f.correlators_unique);
  EXPECT_FALSE(f.correlators_increasing);
  EXPECT_GT(f.reordered_halves, t.events.size() / 100);
  SnailWriteOptions o;
  o.events_per_block = 1000;
  write_trace(t, path("shuffled.snail").string(), o);
  write_trace(in_order, path("ordered.snail").string(), o);
  const std::vector<std::string> args = {"--window", "100ms", "-f", "jsonl"};
  EXPECT_EQ(expect_same(path("shuffled.snail"), args), expect_same(path("ordered.snail"), args));
  auto timings = [&](const char* name) {
    return run({"analyze", path(name).string(), "--window", "100ms", "-f", "jsonl", "--timings"})
        .err;
  };
  const std::string shuffled = timings("shuffled.snail"), ordered = timings("ordered.snail");
  const long long nodes = number_after(shuffled, "at most ");
  const long long halves = number_after(shuffled, "nodes held, at most ");
  ASSERT_GT(nodes, 0) << shuffled;
  ASSERT_GE(halves, 0) << shuffled;
  EXPECT_EQ(nodes, number_after(ordered, "at most ")) << ordered;
  EXPECT_EQ(halves, number_after(ordered, "nodes held, at most ")) << ordered;
  EXPECT_EQ(number_after(shuffled, "waiting ("), static_cast<long long>(f.reordered_halves));
  // Brute force: halves read by the end of a block whose partner comes in a later block.
  struct Side {
    size_t first = SIZE_MAX, count = 0;
  };
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, Side> keys;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!e.is_message() || !e.has(kHasCorrelator)) continue;
    const bool send = e.kind == EventKind::send;
    Side& k = keys[{send ? e.worker : e.remote, send ? e.remote : e.worker, e.correlator}];
    k.first = std::min(k.first, i);
    ++k.count;
  }
  std::vector<long long> delta(t.events.size() + 1, 0);  // +1 at the first half, -1 at the second
  long long unmatched = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!e.is_message() || !e.has(kHasCorrelator)) continue;
    const bool send = e.kind == EventKind::send;
    const Side& k = keys[{send ? e.worker : e.remote, send ? e.remote : e.worker, e.correlator}];
    if (k.count == 1)
      ++unmatched;
    else
      delta[i] += k.first == i ? 1 : -1;
  }
  long long in_flight = 0, peak = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    in_flight += delta[i];
    if ((i + 1) % o.events_per_block == 0) peak = std::max(peak, in_flight);
  }
  EXPECT_LE(halves, peak + unmatched);
  // Bounded: far below the trace's message halves (a whole-trace join holds them all).
  EXPECT_LT(halves * 20, static_cast<long long>(keys.size()));
}

// Beyond the bound (a correlator back more than kReorderWindow places late on its pair)
// or a correlator used twice: the index cannot promise unique correlators, so the trace is
// read whole, with a note that says why.
TEST_F(StreamedTest, CorrelatorsReorderedBeyondTheBoundAreReadWhole) {
  auto message = [](std::vector<Event>& ev, int64_t ts, int64_t c) {
    ev.push_back(half(1, 2, ts, EventKind::send, c, true));
    ev.push_back(half(2, 1, ts + 50, EventKind::recv, c, true));
  };
  const int64_t n = TraceFacts::kReorderWindow + 50;
  for (const int64_t late : {int64_t{TraceFacts::kReorderWindow} - 1, n - 1}) {
    // Correlator 0 is sent after `late` others of the same pair.
    std::vector<Event> ev;
    for (int64_t k = 1; k <= n; ++k) {
      message(ev, k * 1000, k);
      if (k == late) message(ev, k * 1000 + 500, 0);
    }
    Trace t;
    t.events.resize(ev.size());
    std::copy(ev.begin(), ev.end(), t.events.begin());
    const TraceFacts f = facts_of(t);
    EXPECT_FALSE(f.correlators_increasing);
    EXPECT_EQ(f.reordered_halves, 2u);
    const bool within = late < static_cast<int64_t>(TraceFacts::kReorderWindow);
    EXPECT_EQ(f.correlators_unique, within) << late;
    write_trace(t, path("late.snail").string());
    const Out s = run({"analyze", path("late.snail").string(), "-w", "10us", "-f", "jsonl"});
    const Out m =
        run({"analyze", path("late.snail").string(), "-w", "10us", "-f", "jsonl", "--in-memory"});
    EXPECT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.out, m.out);
    EXPECT_EQ(s.err.find("comes back more than 256 correlators late (2 message halves out of "
                         "correlator order)") != std::string::npos,
              !within)
        << s.err;
    if (within) expect_same(path("late.snail"), {"-w", "10us", "-f", "jsonl"});
  }
}

void expect_same_index(const SnailIndex& a, const SnailIndex& b) {
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    EXPECT_EQ(a.blocks[i].offset, b.blocks[i].offset) << i;
    EXPECT_EQ(a.blocks[i].kind, b.blocks[i].kind) << i;
    EXPECT_EQ(a.blocks[i].count, b.blocks[i].count) << i;
    EXPECT_EQ(a.blocks[i].min_ts, b.blocks[i].min_ts) << i;
    EXPECT_EQ(a.blocks[i].max_ts, b.blocks[i].max_ts) << i;
  }
  EXPECT_EQ(encode_snail_index(a), encode_snail_index(b));
}

TEST_F(StreamedTest, IndexIsWrittenAndMatchesTheBlocks) {
  std::mt19937_64 rng(3);
  const Trace t = random_trace(rng);
  SnailWriteOptions o;
  o.events_per_block = 97;
  write_trace(t, path("t.snail").string(), o);
  SnailFile f(path("t.snail").string());
  EXPECT_EQ(f.version(), 2u);
  EXPECT_TRUE(f.index_from_file());
  const SnailIndex& idx = f.index();
  // Brute force: the blocks hold the events in order, 97 at a time, with these ranges.
  size_t next = 0;
  BigVector<Event> buf;
  for (size_t i = 0; i < idx.blocks.size(); ++i) {
    if (idx.blocks[i].kind != 1) continue;
    f.read_block(i, buf);
    ASSERT_EQ(buf.size(), std::min<size_t>(97, t.events.size() - next));
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t k = 0; k < buf.size(); ++k) {
      EXPECT_EQ(buf[k].ts, t.events[next + k].ts);
      lo = std::min(lo, buf[k].ts);
      hi = std::max(hi, buf[k].ts);
    }
    EXPECT_EQ(idx.blocks[i].min_ts, lo);
    EXPECT_EQ(idx.blocks[i].max_ts, hi);
    next += buf.size();
  }
  EXPECT_EQ(next, t.events.size());
  const TraceFacts expect = facts_of(t);
  EXPECT_EQ(idx.facts.events, t.events.size());
  EXPECT_EQ(idx.facts.first_ts, expect.first_ts);
  EXPECT_EQ(idx.facts.max_delay, expect.max_delay);
  EXPECT_TRUE(idx.facts.worker_sorted);
  EXPECT_TRUE(idx.facts.correlators_increasing);
  EXPECT_EQ(f.names().worker_name(0), "first \"worker\"");
  // The whole-file reader ignores the index: same trace as written.
  const Trace back = read_trace(path("t.snail").string());
  ASSERT_EQ(back.events.size(), t.events.size());
  EXPECT_EQ(std::memcmp(back.events.data(), t.events.data(), t.events.size() * sizeof(Event)), 0);
}

TEST_F(StreamedTest, FactsByBruteForce) {
  // max_delay and the order checks against a direct computation on small traces.
  std::mt19937_64 rng(9);
  for (int i = 0; i < 20; ++i) {
    const Trace t = random_trace(rng);
    int64_t delay = 0;
    for (size_t a = 0; a < t.events.size(); ++a) {
      const Event& s = t.events[a];
      if (s.kind != EventKind::send || !s.has(kHasCorrelator)) continue;
      for (size_t b = 0; b < t.events.size(); ++b) {
        const Event& r = t.events[b];
        if (r.kind == EventKind::recv && r.has(kHasCorrelator) && r.correlator == s.correlator &&
            r.worker == s.remote && r.remote == s.worker)
          delay = std::max(delay, std::abs(r.ts - s.ts));
      }
    }
    const TraceFacts f = facts_of(t);
    EXPECT_EQ(f.max_delay, delay);
    EXPECT_TRUE(f.worker_sorted);
    EXPECT_TRUE(f.correlators_increasing);
    EXPECT_TRUE(f.correlators_unique);
    EXPECT_EQ(f.reordered_halves, 0u);
    // Shuffled within the bound, with now and then one correlator made a repeat of an
    // earlier one of its pair and side: unique exactly when a set of all keys says so.
    Trace r = t;
    shuffle_correlators(r, 1 + rng() % 100, rng);
    if (i % 2 == 1) {
      for (size_t a = 0; a < r.events.size(); ++a) {
        const Event& x = r.events[a];
        if (!x.is_message() || !x.has(kHasCorrelator)) continue;
        for (size_t b = a + 1; b < r.events.size(); ++b) {
          Event& y = r.events[b];
          if (y.kind == x.kind && y.worker == x.worker && y.remote == x.remote &&
              y.has(kHasCorrelator) && rng() % 4 == 0) {
            y.correlator = x.correlator;
            a = r.events.size();
            break;
          }
        }
      }
    }
    std::set<std::tuple<uint32_t, uint32_t, int, int64_t>> seen;
    bool unique = true;
    for (const Event& e : r.events)
      if (e.is_message() && e.has(kHasCorrelator) && e.has(kHasRemote))
        unique &= seen.insert({e.worker, e.remote, static_cast<int>(e.kind), e.correlator}).second;
    EXPECT_EQ(facts_of(r).correlators_unique, unique) << i;
  }
  Trace u;
  u.events.resize(2);
  u.events[0] = local(1, 50, ActivityType::processing, EventKind::start);
  u.events[1] = local(1, 40, ActivityType::processing, EventKind::end);
  EXPECT_FALSE(facts_of(u).worker_sorted);
}

TEST_F(StreamedTest, OldFilesWithoutIndexAreRead) {
  std::mt19937_64 rng(5);
  const Trace t = random_trace(rng);
  SnailWriteOptions v1;
  v1.version = 1;  // the writer before the index
  v1.events_per_block = 50;
  SnailWriteOptions v2 = v1;
  v2.version = 2;
  write_trace(t, path("old.snail").string(), v1);
  write_trace(t, path("new.snail").string(), v2);
  const std::string old_bytes = testing::slurp(path("old.snail"));
  ASSERT_EQ(old_bytes.substr(8, 4), std::string("\1\0\0\0", 4));
  // The old file is a prefix of the new one except for the version field.
  const std::string new_bytes = testing::slurp(path("new.snail"));
  EXPECT_EQ(new_bytes.substr(12, old_bytes.size() - 12), old_bytes.substr(12));
  SnailFile old_file(path("old.snail").string());
  SnailFile new_file(path("new.snail").string());
  EXPECT_FALSE(old_file.index_from_file());
  EXPECT_TRUE(old_file.index_problem().empty());
  expect_same_index(old_file.index(), new_file.index());
  const std::string a = expect_same(path("old.snail"), {"--window", "1ms", "--format", "jsonl"});
  const std::string b = expect_same(path("new.snail"), {"--window", "1ms", "--format", "jsonl"});
  EXPECT_EQ(a, b);
  // A version 1 file may not hold an index block.
  std::string forged = new_bytes;
  forged[8] = 1;
  std::ofstream(path("forged.snail"), std::ios::binary) << forged;
  EXPECT_THROW(read_trace(path("forged.snail").string()), TraceError);
}

TEST_F(StreamedTest, CutOrCorruptIndexIsRebuiltWithAWarning) {
  std::mt19937_64 rng(11);
  const Trace t = random_trace(rng);
  SnailWriteOptions o;
  o.events_per_block = 64;
  write_trace(t, path("good.snail").string(), o);
  const std::string good = testing::slurp(path("good.snail"));
  SnailFile reference(path("good.snail").string());
  const std::string expected =
      expect_same(path("good.snail"), {"--window", "2ms", "--format", "jsonl", "--from", "+5ms"});
  uint64_t at = 0;
  std::memcpy(&at, good.data() + good.size() - 8, 8);
  ASSERT_LT(at, good.size());
  auto check = [&](const std::string& name, const std::string& bytes, bool readable) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    if (!readable) {
      EXPECT_THROW(SnailFile(path(name).string()), TraceError) << name;
      return;
    }
    SnailFile f(path(name).string());
    EXPECT_FALSE(f.index_from_file()) << name;
    EXPECT_FALSE(f.index_problem().empty()) << name;
    expect_same_index(f.index(), reference.index());
    const Out s = run(
        {"analyze", path(name).string(), "--window", "2ms", "--format", "jsonl", "--from", "+5ms"});
    EXPECT_EQ(s.code, 0) << name << s.err;
    EXPECT_EQ(s.out, expected) << name;
    EXPECT_NE(s.err.find("block index unusable"), std::string::npos) << name << s.err;
  };
  // A flipped byte in an entry's time range: the checksum catches it.
  std::string flipped = good;
  flipped[at + detail::snail::kBlockHeaderSize + 56 + 16] ^= 0x40;
  check("flipped.snail", flipped, true);
  // A wrong trailing offset.
  std::string moved = good;
  moved[moved.size() - 8] ^= 0x10;
  check("moved.snail", moved, true);
  // Cut inside the index block: rebuilt; the cut index block is ignored.
  check("cut.snail", good.substr(0, good.size() - 20), true);
  // Without the index at all (cut right before it): a plain version 2 file.
  check("noindex.snail", good.substr(0, at), true);
  // An index with a valid checksum that lies about a block's range: the block reader
  // refuses the block instead of answering wrong.
  {
    SnailIndex lying = reference.index();
    for (SnailBlock& b : lying.blocks)
      if (b.kind == 1 && b.count > 1) {
        b.max_ts = b.min_ts;  // claims its events all at the first time
        break;
      }
    std::string bytes = good.substr(0, at + detail::snail::kBlockHeaderSize);
    bytes += encode_snail_index(lying);
    bytes += good.substr(good.size() - 8);
    std::ofstream(path("lying.snail"), std::ios::binary) << bytes;
    SnailFile f(path("lying.snail").string());
    EXPECT_TRUE(f.index_from_file());
    const Out s =
        run({"analyze", path("lying.snail").string(), "--window", "2ms", "--format", "jsonl"});
    EXPECT_NE(s.code, 0);
    EXPECT_NE(s.err.find("outside the block's time range"), std::string::npos) << s.err;
  }
}

// streaming_pays against hand-counted shares: 8 blocks of 100 events, block i over
// [100 i, 100 i + 99]; a window's share is the events of the blocks it covers.
TEST(StreamingPays, AWindowWithAQuarterOfTheEventsIsReadWhole) {
  SnailIndex index;
  for (int i = 0; i < 8; ++i) index.blocks.push_back({0, 1, 100, 100 * i, 100 * i + 99});
  index.blocks.push_back({0, 2, 3, 0, 0});  // metadata: not events
  auto plan = [](int64_t width, int64_t k0, int64_t k1) {
    return StreamedPlan{.origin = 0, .width = width, .k0 = k0, .k1 = k1, .to = {}};
  };
  EXPECT_FALSE(streaming_pays(index, plan(800, 0, 0)));  // one window: all 800
  EXPECT_FALSE(streaming_pays(index, plan(200, 0, 3)));  // 200 of 800 each: a quarter
  EXPECT_TRUE(streaming_pays(index, plan(100, 0, 7)));   // an eighth each
  EXPECT_TRUE(streaming_pays(index, plan(400, 1, 0)));   // no window
  // --to cuts the last window: [600, 650) holds 50 events, the others 200 each.
  StreamedPlan cut = plan(200, 3, 3);
  cut.to = 650;
  EXPECT_TRUE(streaming_pays(index, cut));
  cut.k0 = 2;  // [400, 600) holds 200 events
  EXPECT_FALSE(streaming_pays(index, cut));
}

// By default a trace whose window holds a quarter or more of the events is read whole
// (--timings says nothing of streaming); --streamed reads it block by block; same output.
TEST_F(StreamedTest, FewLargeWindowsAreReadWholeUnlessStreamed) {
  write_synthetic("few.snail", 8'000'000'000);
  for (const char* w : {"2s", "8s"}) {
    const std::vector<std::string> base = {
        "analyze", path("few.snail").string(), "--window", w, "--format", "jsonl", "--timings"};
    std::vector<std::string> forced = base;
    forced.push_back("--streamed");
    const Out d = run(base), s = run(forced);
    ASSERT_EQ(d.code, 0) << d.err;
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(d.err.find("streamed:"), std::string::npos) << w << d.err;
    EXPECT_NE(s.err.find("streamed:"), std::string::npos) << w << s.err;
    EXPECT_EQ(d.out, s.out) << w;
  }

  // A JSONL trace is parsed once, into its spool, and streamed whatever its windows.
  ASSERT_EQ(run({"convert", path("few.snail").string(), path("few.jsonl").string()}).code, 0);
  const Out j = run(
      {"analyze", path("few.jsonl").string(), "--window", "8s", "--format", "jsonl", "--timings"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.err.find("streamed:"), std::string::npos) << j.err;
  EXPECT_EQ(
      j.out,
      run({"analyze", path("few.snail").string(), "--window", "8s", "--format", "jsonl"}).out);
  // Many small windows are still streamed.
  const Out many = run({"analyze", path("few.snail").string(), "--window", "100ms", "--format",
                        "jsonl", "--timings"});
  EXPECT_NE(many.err.find("streamed:"), std::string::npos) << many.err;
}

TEST_F(StreamedTest, SeekReadsOnlyTheBlocksItNeeds) {
  write_synthetic("long.snail", 60'000'000'000);
  const Out s = run({"analyze", path("long.snail").string(), "--window", "1s", "--format", "jsonl",
                     "--from", "+20s", "--to", "+22s", "--timings"});
  ASSERT_EQ(s.code, 0) << s.err;
  // "streamed: X of Y bytes read ..."
  const size_t p = s.err.find("streamed: ");
  ASSERT_NE(p, std::string::npos) << s.err;
  const uint64_t read = std::stoull(s.err.substr(p + 10));
  const uint64_t size = fs::file_size(path("long.snail"));
  EXPECT_LT(read * 5, size) << s.err;  // 2 s + lookback of 30 s: well under a fifth
  expect_same(path("long.snail"),
              {"--window", "1s", "--format", "jsonl", "--from", "+20s", "--to", "+22s"});
}

// --- report -----------------------------------------------------------------------------

class StreamedReportTest : public StreamedTest {
 protected:
  // `report` streamed and in memory write the same bytes (JSON data and HTML page).
  void expect_same_report(const fs::path& trace, std::vector<std::string> args) {
    std::vector<std::string> a = {"report", trace.string(), "-o", "-"};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<std::string> b = a;
    b.push_back("--in-memory");
    a.push_back("--timings");
    a.push_back("--streamed");  // also when a window holds a quarter of the events
    const Out streamed = run(a);
    const Out memory = run(b);
    std::string what = trace.string();
    for (const auto& s : args) what += " " + s;
    EXPECT_EQ(streamed.code, memory.code) << what << "\n" << streamed.err << memory.err;
    EXPECT_EQ(streamed.out, memory.out) << what;
    if (memory.code == 0) {
      EXPECT_FALSE(memory.out.empty()) << what;
      EXPECT_NE(streamed.err.find("streamed:"), std::string::npos) << what << streamed.err;
    } else {
      EXPECT_EQ(streamed.err, memory.err) << what;
    }
  }
};

TEST_F(StreamedReportTest, RandomTracesSeveralWindowsAndRanges) {
  std::mt19937_64 rng(2020);
  for (int i = 0; i < testing::random_inputs(6, 3); ++i) {
    const Trace t = random_trace(rng);
    SnailWriteOptions o;
    o.events_per_block = static_cast<uint32_t>(1 + rng() % 300);
    const fs::path file = path("r" + std::to_string(i) + ".snail");
    write_trace(t, file.string(), o);
    for (const char* window : {"1ms", "500us", "3ms", "10ms"})
      expect_same_report(file, {"--window", window, "-f", "json"});
    // Few points (merging), few timelines, one thread, the what-if view, ranges.
    expect_same_report(file, {"--window", "200us", "-f", "json", "--max-points", "4", "--timelines",
                              "3", "--threads", "1", "--what-if"});
    const int64_t from = static_cast<int64_t>(rng() % 20'000'000);
    const int64_t to = from + 1 + static_cast<int64_t>(rng() % 20'000'000);
    expect_same_report(
        file, {"--window", "1ms", "-f", "json", "--from", "+" + std::to_string(from) + "ns", "--to",
               "+" + std::to_string(to) + "ns"});
    expect_same_report(file, {"--window", "2ms"});  // the HTML page
  }
  // A range without windows fails the same way.
  expect_same_report(path("r0.snail"), {"--window", "1ms", "--from", "+10h"});
}

TEST_F(StreamedReportTest, SimulatedAndSyntheticTraces) {
  sim::Scenario s =
      sim::load_scenario(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/wordcount-skew-30.toml");
  s.duration_ns = std::min<int64_t>(s.duration_ns, 3'000'000'000);
  SnailWriteOptions o;
  o.events_per_block = 4096;
  write_trace(sim::simulate(s).trace, path("sim.snail").string(), o);
  for (const char* w : {"100ms", "250ms", "1s"}) expect_same_report(path("sim.snail"), {"-w", w});
  bench::SyntheticOptions so;
  so.duration_ns = 3'000'000'000;
  so.workers = 8;
  o.events_per_block = 5000;
  write_trace(bench::make_synthetic_trace(so), path("synthetic.snail").string(), o);
  for (const char* w : {"1s", "200ms"})
    expect_same_report(path("synthetic.snail"), {"-w", w, "-f", "json"});
  expect_same_report(path("synthetic.snail"), {"-w", "300ms", "--from", "+1100ms", "--to", "+2s"});
}

// --- convert ----------------------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class StreamedConvertTest : public StreamedTest {
 protected:
  // `convert IN OUT` streamed and with --in-memory write the same bytes.
  void expect_same_convert(const fs::path& in, const std::string& ext,
                           std::vector<std::string> args = {}) {
    const fs::path a = path("streamed" + ext), b = path("memory" + ext);
    std::vector<std::string> sa = {"convert", in.string(), a.string()};
    sa.insert(sa.end(), args.begin(), args.end());
    std::vector<std::string> sb = {"convert", in.string(), b.string(), "--in-memory"};
    sb.insert(sb.end(), args.begin(), args.end());
    const Out x = run(sa), y = run(sb);
    ASSERT_EQ(x.code, 0) << x.err;
    ASSERT_EQ(y.code, 0) << y.err;
    // "converted N events from IN to OUT"
    std::string xe = x.err;
    const size_t at = xe.find(a.string());
    ASSERT_NE(at, std::string::npos) << xe;
    xe.replace(at, a.string().size(), b.string());
    EXPECT_EQ(xe, y.err);
    const std::string da = slurp(a), db = slurp(b);
    EXPECT_FALSE(da.empty());
    EXPECT_TRUE(da == db) << in << " -> " << ext << ": " << da.size() << " vs " << db.size();
  }
};

TEST_F(StreamedConvertTest, SnailAndJsonlEveryDirection) {
  std::mt19937_64 rng(2021);
  for (int i = 0; i < testing::random_inputs(5, 3); ++i) {
    Trace t = random_trace(rng);
    t.operator_names[2] = "reduce \"x\"";
    SnailWriteOptions o;
    o.events_per_block = static_cast<uint32_t>(1 + rng() % 300);
    o.compress = i % 2 == 1;
    const fs::path snail = path("r" + std::to_string(i) + ".snail");
    const fs::path jsonl = path("r" + std::to_string(i) + ".jsonl");
    write_trace(t, snail.string(), o);
    write_trace(t, jsonl.string());
    for (const fs::path& in : {snail, jsonl}) {
      expect_same_convert(in, ".jsonl");
      expect_same_convert(in, ".snail");
      expect_same_convert(in, ".snail", {"--compress", "--level", "5"});
    }
  }
  // A version 1 file (no index: rebuilt by a scan) and an empty trace.
  std::mt19937_64 rng2(5);
  SnailWriteOptions v1;
  v1.version = 1;
  v1.events_per_block = 100;
  write_trace(random_trace(rng2), path("v1.snail").string(), v1);
  expect_same_convert(path("v1.snail"), ".snail");
  expect_same_convert(path("v1.snail"), ".jsonl");
  Trace empty;
  empty.worker_names[3] = "w";
  write_trace(empty, path("empty.snail").string());
  write_trace(empty, path("empty.jsonl").string());
  expect_same_convert(path("empty.snail"), ".jsonl");
  expect_same_convert(path("empty.jsonl"), ".snail");
}

TEST_F(StreamedConvertTest, WriterInPiecesEqualsWholeAndIndexMatchesAScan) {
  std::mt19937_64 rng(9);
  const Trace t = random_trace(rng);
  for (uint32_t per_block : {1u, 7u, 1000u, 1u << 16}) {
    SnailWriteOptions o;
    o.events_per_block = per_block;
    const std::string whole = to_snail(t, o);
    TraceWriter w(TraceFormat::snail, o, -1, "mem");
    w.begin(t);
    for (size_t i = 0; i < t.events.size();) {
      const size_t n = std::min<size_t>(t.events.size() - i, rng() % 50);
      w.add(t.events.data() + i, n);
      i += n;
    }
    w.finish();
    const std::string pieces = w.take();
    EXPECT_TRUE(pieces == whole) << per_block;
    // The index written equals the one a scan of the blocks rebuilds (an independent
    // computation: SnailFile::scan), and the events read back are the trace's.
    const fs::path f = path("p.snail");
    std::ofstream(f, std::ios::binary) << pieces;
    SnailFile file(f.string());
    EXPECT_TRUE(file.index_from_file());
    SnailWriteOptions v1 = o;
    v1.version = 1;
    std::ofstream(path("p1.snail"), std::ios::binary) << to_snail(t, v1);
    SnailFile scanned(path("p1.snail").string());
    EXPECT_FALSE(scanned.index_from_file());
    EXPECT_EQ(encode_snail_index(file.index()), encode_snail_index(scanned.index()));
    const Trace back = read_trace(f.string());
    ASSERT_EQ(back.events.size(), t.events.size());
    EXPECT_EQ(std::memcmp(back.events.data(), t.events.data(), t.events.size() * sizeof(Event)), 0);
  }
  // JSONL in pieces.
  TraceWriter j(TraceFormat::jsonl, {}, -1, "mem");
  j.begin(t);
  j.add(t.events.data(), 3);
  j.add(t.events.data() + 3, t.events.size() - 3);
  j.finish();
  EXPECT_EQ(j.take(), to_jsonl(t));
}

// --- JSONL input ------------------------------------------------------------------------

TEST_F(StreamedTest, JsonlInputIsStreamedWithTheSameOutput) {
  std::mt19937_64 rng(2022);
  for (int i = 0; i < testing::random_inputs(6, 3); ++i) {
    const Trace t = random_trace(rng);
    const fs::path file = path("r" + std::to_string(i) + ".jsonl");
    write_trace(t, file.string());
    const std::string window = std::vector<std::string>{"1ms", "2ms", "500us"}[i % 3];
    expect_same(file, {"--window", window, "--format", "jsonl"});
    expect_same(file, {"--window", window, "--format", "csv", "--from", "+3ms", "--to", "+9ms"});
    expect_same(file, {"--window", window});
  }
  // Several 4 MiB chunks: the synthetic trace as JSONL, no newline after the last line.
  bench::SyntheticOptions so;
  so.duration_ns = 4'000'000'000;
  so.workers = 48;
  std::string text = to_jsonl(bench::make_synthetic_trace(so));
  ASSERT_GT(text.size(), size_t{9} << 20);
  text.pop_back();
  std::ofstream(path("big.jsonl"), std::ios::binary) << text;
  expect_same(path("big.jsonl"), {"--window", "200ms", "--format", "jsonl"});
  const Out r = run(
      {"report", path("big.jsonl").string(), "-o", "-", "-f", "json", "--timings", "--streamed"});
  const Out m = run({"report", path("big.jsonl").string(), "-o", "-", "-f", "json", "--in-memory"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, m.out);
  EXPECT_NE(r.err.find("streamed:"), std::string::npos) << r.err;
}

TEST_F(StreamedTest, JsonlErrorsNameTheLine) {
  // A bad line early, and one past the first chunks: the same message as the whole-file
  // reader, naming the line.
  bench::SyntheticOptions so;
  so.duration_ns = 3'000'000'000;
  so.workers = 48;
  const std::string text = to_jsonl(bench::make_synthetic_trace(so));
  const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  ASSERT_GT(text.size(), size_t{5} << 20);
  for (size_t bad_line : {size_t{3}, lines - 10}) {
    std::string t;
    size_t line = 0, pos = 0;
    while (pos < text.size()) {
      const size_t nl = text.find('\n', pos);
      ++line;
      t += line == bad_line ? std::string("{\"ts\": 5, \"worker\": 1, \"activity\": \"nap\"}")
                            : text.substr(pos, nl - pos);
      t += '\n';
      pos = nl + 1;
    }
    std::ofstream(path("bad.jsonl"), std::ios::binary) << t;
    const Out s = run({"analyze", path("bad.jsonl").string(), "--window", "100ms"});
    const Out m = run({"analyze", path("bad.jsonl").string(), "--window", "100ms", "--in-memory"});
    EXPECT_NE(s.code, 0);
    EXPECT_EQ(s.err, m.err);
    EXPECT_NE(s.err.find("bad.jsonl: line " + std::to_string(bad_line) + ":"), std::string::npos)
        << s.err;
    const Out c = run({"convert", path("bad.jsonl").string(), path("bad.snail").string()});
    EXPECT_NE(c.code, 0);
    EXPECT_EQ(c.err, m.err);
    EXPECT_FALSE(fs::exists(path("bad.snail")));
  }
  // Unsorted JSONL: streaming refused by the facts, read whole (the same output).
  std::mt19937_64 rng(4);
  Trace t = random_trace(rng);
  std::swap(t.events[3], t.events[t.events.size() - 2]);
  write_trace(t, path("unsorted.jsonl").string());
  const Out s = run({"analyze", path("unsorted.jsonl").string(), "-w", "1ms", "-f", "jsonl"});
  const Out m =
      run({"analyze", path("unsorted.jsonl").string(), "-w", "1ms", "-f", "jsonl", "--in-memory"});
  EXPECT_EQ(s.code, m.code);
  EXPECT_EQ(s.out, m.out);
  EXPECT_NE(s.err.find("read whole into memory"), std::string::npos) << s.err;
}

// --- scale --trace ----------------------------------------------------------------------

TEST_F(StreamedTest, ScaleTraceFoldsBlocksAsTheWholeTraceDoes) {
  // A file is read block by block; the same trace on stdin is read whole (import_stdin):
  // the decisions are the same (the trace's name aside).
  sim::Scenario sc =
      sim::load_scenario(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/wordcount-skew-30.toml");
  sc.duration_ns = std::min<int64_t>(sc.duration_ns, 6'000'000'000);
  const Trace t = sim::simulate(sc).trace;
  SnailWriteOptions o;
  o.events_per_block = 3000;
  write_trace(t, path("s.snail").string(), o);
  write_trace(t, path("s.jsonl").string());
  auto run_stdin = [&](std::vector<std::string> args, const fs::path& in) {
    Process p(args, path("out"), path("err"), in);
    const int code = p.wait();
    return Out{code, p.out(), p.err()};
  };
  for (const fs::path& f : {path("s.snail"), path("s.jsonl")}) {
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"scale", "policy", "--interval", "500ms"},
          std::vector<std::string>{"scale", "policy", "--interval", "1s", "-f", "json"},
          std::vector<std::string>{"scale", "manage"}}) {
      std::vector<std::string> a = cmd, b = cmd;
      a.insert(a.end(), {"--trace", f.string()});
      b.insert(b.end(), {"--trace", "-"});
      Process pa(a, path("out"), path("err"));
      const int ca = pa.wait();
      Out streamed{ca, pa.out(), pa.err()};
      const Out whole = run_stdin(b, f);
      ASSERT_EQ(streamed.code, 0) << streamed.err;
      ASSERT_EQ(whole.code, 0) << whole.err;
      std::string s_out = streamed.out;
      for (size_t at; (at = s_out.find(f.string())) != std::string::npos;)
        s_out.replace(at, f.string().size(), "-");
      EXPECT_FALSE(s_out.empty());
      EXPECT_EQ(s_out, whole.out) << f << " " << cmd[1];
    }
  }
}

// How ranks share the windows (split_windows_by_events): blocks holding one event per ns
// of their time range, so that the index's even-spread estimate is the exact count, and
// the borders against a brute force over the events themselves.
TEST(SplitWindowsByEvents, BordersMatchABruteForceOverTheEvents) {
  std::mt19937_64 rng(20);
  for (int round = 0; round < 200; ++round) {
    SnailIndex index;
    std::vector<int64_t> ts;  // every event's time
    int64_t t = static_cast<int64_t>(rng() % 50);
    const int nblocks = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < nblocks; ++i) {
      t += static_cast<int64_t>(rng() % 3 == 0 ? rng() % 200 : 0);  // sometimes a gap
      const int64_t len = 1 + static_cast<int64_t>(rng() % 60);
      SnailBlock b;
      b.kind = 1;
      b.min_ts = t;
      b.max_ts = t + len - 1;
      b.count = static_cast<uint32_t>(len);
      for (int64_t x = b.min_ts; x <= b.max_ts; ++x) ts.push_back(x);
      index.blocks.push_back(b);
      if (rng() % 4 == 0) index.blocks.push_back(SnailBlock{0, 2, 3, 0, 0});  // metadata
      t += len;
    }
    index.facts.events = ts.size();
    index.facts.first_ts = ts.front();
    index.facts.last_ts = ts.back();
    WindowSpec spec;
    spec.width_ns = 1 + static_cast<int64_t>(rng() % 40);
    if (rng() % 3 == 0) spec.from_ns = ts.front() + static_cast<int64_t>(rng() % 100);
    if (rng() % 3 == 0) spec.to_ns = ts.back() - static_cast<int64_t>(rng() % 100);
    const StreamedPlan plan = plan_streamed(index.facts, spec);
    if (plan.empty()) continue;
    std::vector<double> weights(1 + rng() % 5);
    for (double& w : weights) w = rng() % 4 == 0 ? 0.0 : 0.1 + static_cast<double>(rng() % 10);
    if (weights[0] == 0) weights[0] = 1;
    const std::vector<int64_t> b = split_windows_by_events(index, plan, weights);

    // Brute force: events before t, counted; the plan's range; each border the first
    // window (not before the previous border) with its share of events before it.
    auto before = [&](int64_t x) {
      return static_cast<double>(std::lower_bound(ts.begin(), ts.end(), x) - ts.begin());
    };
    int64_t end = plan.start_of(plan.k1 + 1);
    if (plan.to) end = std::min(end, *plan.to);
    const double lo = before(plan.start_of(plan.k0)), total = before(end) - lo;
    double sum = 0, cum = 0;
    for (double w : weights) sum += w;
    std::vector<int64_t> want{plan.k0};
    for (size_t r = 1; r < weights.size(); ++r) {
      cum += weights[r - 1];
      int64_t k = want.back();
      while (k <= plan.k1 && before(plan.start_of(k)) < lo + total * (cum / sum) - 1e-9) ++k;
      want.push_back(k);
    }
    want.push_back(plan.k1 + 1);
    ASSERT_EQ(b, want) << "round " << round;
  }
}

TEST(SplitWindowsByEvents, EqualWeightsOnEvenDensityAreEqualShares) {
  SnailIndex index;  // 1000 events per 1000 ns, 10 blocks
  for (int i = 0; i < 10; ++i)
    index.blocks.push_back(SnailBlock{0, 1, 1000, i * 1000, i * 1000 + 999});
  index.facts.events = 10000;
  index.facts.first_ts = 0;
  index.facts.last_ts = 9999;
  WindowSpec spec;
  spec.width_ns = 100;
  const StreamedPlan plan = plan_streamed(index.facts, spec);
  ASSERT_EQ(plan.count(), 100u);
  EXPECT_EQ(split_windows_by_events(index, plan, {1, 1}), (std::vector<int64_t>{0, 50, 100}));
  EXPECT_EQ(split_windows_by_events(index, plan, {1, 1, 1, 1}),
            (std::vector<int64_t>{0, 25, 50, 75, 100}));
  // Rank 0 with 0.85 of a share at two ranks: 46 of the 100 windows.
  EXPECT_EQ(split_windows_by_events(index, plan, {0.85, 1}), (std::vector<int64_t>{0, 46, 100}));
  EXPECT_THROW(split_windows_by_events(index, plan, {}), std::invalid_argument);
  EXPECT_THROW(split_windows_by_events(index, plan, {0, 0}), std::invalid_argument);
}

// With 2 or more threads the streamed analysis cuts batches of windows on the reading
// thread and analyzes them on another while reading goes on (summary/streamed.cpp,
// BatchPipeline). What the callers see is the serial run's: the same windows, in order,
// `consume` and `on_progress` on the calling thread (MPI ranks' `claim` and `consume`
// share state), however many batches are in flight.
class StreamedPipelineTest : public StreamedTest {
 protected:
  struct Seen {
    std::vector<std::string> windows;  // consume's, in order
    std::vector<std::pair<size_t, size_t>> progress;
    bool off_thread = false;  // consume or on_progress ran on another thread
  };

  void SetUp() override {
    StreamedTest::SetUp();
    write_synthetic("t.snail", 4'000'000'000);  // 5 blocks, 80 windows of 50 ms
    options_.windows.width_ns = 50'000'000;
  }

  static std::string render_text(const WindowView& v) {
    const WindowSummary& s = v.summary;
    return fmt::format("{} [{}, {}) run {} events {} nodes {} edges {} cp {} paths {:.6f}\n",
                       s.index, s.window.start, s.window.end, s.window.empty_run, s.events, s.nodes,
                       s.edges, s.cp_ns, s.paths_log10);
  }

  // Runs the analysis; `cb` gets the consume and progress recorders added.
  Seen analyze(unsigned threads, StreamedCallbacks cb = {}) {
    SnailFile file(path("t.snail").string());
    const StreamedPlan plan = plan_streamed(file.index().facts, options_.windows);
    Seen seen;
    const auto caller = std::this_thread::get_id();
    if (!cb.render)
      cb.render = [](const WindowView& v, RenderedWindow& r) { r.text = render_text(v); };
    cb.consume = [&, inner = cb.consume](RenderedWindow& r) {
      if (std::this_thread::get_id() != caller) seen.off_thread = true;
      seen.windows.push_back(r.text);
      if (inner) inner(r);
    };
    cb.on_progress = [&](size_t done, size_t total) {
      if (std::this_thread::get_id() != caller) seen.off_thread = true;
      seen.progress.emplace_back(done, total);
    };
    analyze_snail_streamed(file, options_, plan, plan.k0, plan.k1, threads, cb);
    return seen;
  }

  AnalysisOptions options_;
};

TEST_F(StreamedPipelineTest, SeveralBatchesInFlightGiveTheSerialRunsWindowsInOrder) {
  const Seen serial = analyze(1);
  ASSERT_GE(serial.windows.size(), 64u);
  EXPECT_FALSE(serial.off_thread);
  ASSERT_FALSE(serial.progress.empty());
  EXPECT_EQ(serial.progress.back().first, serial.progress.back().second);

  for (unsigned threads : {2u, 3u}) {
    const Seen plain = analyze(threads);
    EXPECT_EQ(plain.windows, serial.windows) << threads << " threads";
    EXPECT_EQ(plain.progress, serial.progress) << threads << " threads";
    EXPECT_FALSE(plain.off_thread) << threads << " threads";

    // With a claim, windows go in batches of 8 (12 at 3 threads), each claimed just before
    // it is cut. The first window's analysis waits until the reading thread has claimed
    // the third batch: so two batches were cut while the first was being analyzed. (A
    // generous timeout: if it is never claimed, the run goes on and the check fails.)
    SnailFile file(path("t.snail").string());
    const StreamedPlan plan = plan_streamed(file.index().facts, options_.windows);
    const int64_t third = plan.k0 + 2 * (threads == 2 ? 8 : 12);
    std::mutex mu;
    std::condition_variable cv;
    int64_t claimed = INT64_MIN;
    bool waited = false, third_claimed_in_time = false;
    std::thread::id claim_thread;
    StreamedCallbacks cb;
    cb.claim = [&](int64_t last) {
      {
        std::lock_guard lock(mu);
        claimed = std::max(claimed, last);
        claim_thread = std::this_thread::get_id();
      }
      cv.notify_all();
      return plan.k1;  // takes every window
    };
    cb.render = [&](const WindowView& v, RenderedWindow& r) {
      r.text = render_text(v);
      std::unique_lock lock(mu);
      if (waited) return;
      waited = true;
      third_claimed_in_time =
          cv.wait_for(lock, std::chrono::seconds(120), [&] { return claimed >= third; });
    };
    const Seen claiming = analyze(threads, cb);
    EXPECT_TRUE(third_claimed_in_time) << threads << " threads";
    EXPECT_EQ(claim_thread, std::this_thread::get_id());
    EXPECT_EQ(claiming.windows, serial.windows) << threads << " threads";
    EXPECT_FALSE(claiming.off_thread) << threads << " threads";
    ASSERT_FALSE(claiming.progress.empty());
    EXPECT_EQ(claiming.progress.back(), serial.progress.back());
  }
}

TEST_F(StreamedPipelineTest, AnErrorInTheAnalysisOrTheConsumerIsRethrownWithoutHanging) {
  for (unsigned threads : {1u, 2u, 3u}) {
    for (size_t at : {0u, 5u, 20u, 70u}) {
      StreamedCallbacks cb;
      std::atomic<size_t> rendered{0};
      cb.render = [&](const WindowView& v, RenderedWindow& r) {
        if (rendered++ == at) throw std::runtime_error(fmt::format("render fails at {}", at));
        r.text = render_text(v);
      };
      try {
        analyze(threads, cb);
        ADD_FAILURE() << threads << " threads, render failing at " << at << ": no exception";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), fmt::format("render fails at {}", at));
      }

      StreamedCallbacks cc;
      size_t consumed = 0;
      cc.consume = [&](RenderedWindow&) {
        if (consumed++ == at) throw std::runtime_error(fmt::format("consume fails at {}", at));
      };
      try {
        analyze(threads, cc);
        ADD_FAILURE() << threads << " threads, consume failing at " << at << ": no exception";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), fmt::format("consume fails at {}", at));
      }
      EXPECT_EQ(consumed, at + 1);
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_streamed
