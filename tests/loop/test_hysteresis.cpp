// The scale-in hysteresis (issue 35, docs/CLOSED-LOOP.md "Hysteresis (loop49)"): DS2 scales
// the stateful operator in only when every interval over --scale-in-after asked for fewer
// workers; a scale-out goes at once. Hand-built traces replayed into an Autoscaler as the
// runtime hands them over (every 50 ms of the trace's own clock, then a plan call at the
// newest event time): no wall time, no timing assumption.
//
// The trace: 2 workers, 250 ms intervals, the sources asked for 8 k records/s. Worker 1's
// source sends 80 records every 10 ms; on each worker the count folds 40 of them every
// 10 ms, busy `slow` (8 ms: a true rate of 5 k records/s per worker, DS2 wants 2 workers)
// or `fast` (3 ms: 13.3 k/s, DS2 wants 1) as the interval's phase says. Every interval's
// rates are the same whichever workers are active, so DS2's ask depends only on the phase.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "loop/autoscaler.hpp"
#include "trace_builder.hpp"

namespace test_hysteresis {
namespace {

namespace lp = snailtrail::loop;
using snailtrail::ActivityType;
using snailtrail::Event;

constexpr int64_t ms = 1'000'000;
constexpr int64_t interval = 250 * ms;

void counted(snailtrail::testing::TraceBuilder& b, uint32_t worker, ActivityType a, int64_t from,
             int64_t to, uint32_t op, uint32_t records) {
  b.activity(worker, a, from, to, op);
  Event& end = b.trace.events.back();
  end.records = records;
  end.flags |= snailtrail::kHasRecords;
}

// `slow(k)`: interval k ([k * 250 ms, (k + 1) * 250 ms)) has the count at 5 k records/s per
// worker (else 13.3 k/s).
std::vector<Event> phased_trace(int64_t until, const std::function<bool(int64_t)>& slow) {
  snailtrail::testing::TraceBuilder b;
  int64_t c = 0;
  for (int64_t t = 0; t < until; t += 10 * ms) {
    counted(b, 1, ActivityType::input, t, t + ms, 0, 80);
    b.message(1, t + ms, 0, t + ms, ++c);
    Event& send = b.trace.events[b.trace.events.size() - 2];
    send.records = 80;
    send.flags |= snailtrail::kHasRecords;
    const int64_t busy = slow(t / interval) ? 8 * ms : 3 * ms;
    for (uint32_t w = 0; w < 2; ++w)
      counted(b, w, ActivityType::processing, t + ms, t + ms + busy, 1, 40);
  }
  const auto events = b.build().events;
  return {events.begin(), events.end()};
}

lp::LoopOptions options(uint32_t initial, int64_t scale_in_after_ns) {
  lp::LoopOptions lo;
  lo.max_workers = 2;
  lo.initial_workers = initial;
  lo.bins = 4;
  lo.policy_interval_ns = interval;
  lo.rate_profile = {{0, 8000}};
  lo.manager.rollback = false;
  lo.manager.threshold = 0;
  lo.startup_ns = interval;  // the first interval only
  lo.scale_in_after_ns = scale_in_after_ns;
  return lo;
}

std::vector<lp::DecisionRecord> replay(const lp::LoopOptions& lo,
                                       const std::vector<Event>& events) {
  const int64_t flush = 50 * ms;
  lp::Autoscaler as(lo);
  std::vector<uint32_t> config = as.initial_config();
  const std::vector<std::string> ops = {"source", "count"};
  std::vector<std::vector<Event>> per(lo.max_workers);
  for (const Event& e : events) per[e.worker].push_back(e);
  std::vector<size_t> next(lo.max_workers, 0);
  int64_t now = 0;
  for (int64_t f = flush;; f += flush) {
    bool more = false;
    for (uint32_t w = 0; w < lo.max_workers; ++w) {
      std::vector<Event> buf;
      for (; next[w] < per[w].size() && per[w][next[w]].ts < f; ++next[w]) {
        buf.push_back(per[w][next[w]]);
        now = std::max(now, buf.back().ts);
      }
      more = more || next[w] < per[w].size();
      if (buf.empty()) continue;
      as.on_events(buf, ops);
      if (auto c = as.plan(now, config)) config = *c;
    }
    if (!more) break;
  }
  return as.decisions();
}

std::string describe(const std::vector<lp::DecisionRecord>& ds) {
  std::string s;
  for (const auto& d : ds)
    s += std::to_string(d.time_s) + " s -> " + std::to_string(d.active_workers) + " [" +
         std::to_string(d.evidence_end_s) + "]: " + d.reason + "\n";
  return s;
}

TEST(LoopHysteresis, DefaultIsTwoSecondsOrThreeIntervals) {
  EXPECT_EQ(lp::default_scale_in_after_ns(250 * ms), 2000 * ms);
  EXPECT_EQ(lp::default_scale_in_after_ns(1000 * ms), 3000 * ms);
  EXPECT_EQ(lp::scale_in_intervals(2000 * ms, 250 * ms), 8u);
  EXPECT_EQ(lp::scale_in_intervals(1000 * ms, 300 * ms), 4u);  // rounded up
  EXPECT_EQ(lp::scale_in_intervals(0, 250 * ms), 1u);          // off
}

// True rates swinging around the threshold every interval (the loaded machine's preempted
// activations): without the hysteresis DS2 scales out, in, out, ...; with 1 s (4
// intervals) it scales out once and stays.
TEST(LoopHysteresis, RatesSwingingAroundTheThresholdDoNotFlap) {
  const std::vector<Event> trace = phased_trace(6000 * ms, [](int64_t k) { return k % 2 == 1; });
  {
    SCOPED_TRACE("no hysteresis: the feed does flap");
    const auto ds = replay(options(1, 0), trace);
    SCOPED_TRACE(describe(ds));
    EXPECT_GE(ds.size(), 3u);
  }
  const auto ds = replay(options(1, 1000 * ms), trace);
  SCOPED_TRACE(describe(ds));
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].active_workers, 2u);
  EXPECT_DOUBLE_EQ(ds[0].evidence_end_s, 0.5);  // the first slow interval, [0.25, 0.5)
}

// A real drop: slow (2 workers) up to 1 s, fast (1 worker) after. The scale-out on
// [0.25, 0.5); [0.5, 0.75) holds the migration (skipped); [0.75, 1) asks for 2; the
// scale-in comes on the 4th fast interval, [1.75, 2), not before and not later.
TEST(LoopHysteresis, ARealDropStillScalesInAfterTheHysteresis) {
  const std::vector<Event> trace = phased_trace(4000 * ms, [](int64_t k) { return k < 4; });
  const auto ds = replay(options(1, 1000 * ms), trace);
  SCOPED_TRACE(describe(ds));
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].active_workers, 2u);
  EXPECT_DOUBLE_EQ(ds[0].evidence_end_s, 0.5);
  EXPECT_EQ(ds[1].active_workers, 1u);
  EXPECT_DOUBLE_EQ(ds[1].evidence_end_s, 2.0);
}

// An overload after a dip: 2 workers active, the load low (1 worker) from the start, so
// DS2 scales in on the 4th interval shown, [1, 1.25); [1.25, 1.5) holds the migration;
// from 1.5 s the load needs 2 workers again: the scale-out comes on the first overloaded
// interval, [1.5, 1.75), not after another 4 (the hysteresis holds scale-ins only), and
// however short the streak of low asks before it was.
TEST(LoopHysteresis, AnOverloadAfterADipScalesOutAtOnce) {
  const std::vector<Event> trace = phased_trace(3000 * ms, [](int64_t k) { return k >= 6; });
  const auto ds = replay(options(2, 1000 * ms), trace);
  SCOPED_TRACE(describe(ds));
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].active_workers, 1u);
  EXPECT_DOUBLE_EQ(ds[0].evidence_end_s, 1.25);
  EXPECT_EQ(ds[1].active_workers, 2u);
  EXPECT_DOUBLE_EQ(ds[1].evidence_end_s, 1.75);
  // A dip shorter than the hysteresis (3 low intervals, [0.25, 1)) then the overload: no
  // scale-in, and so no scale-out to wait for.
  const auto short_dip =
      replay(options(2, 1000 * ms), phased_trace(3000 * ms, [](int64_t k) { return k >= 4; }));
  SCOPED_TRACE(describe(short_dip));
  EXPECT_TRUE(short_dip.empty());
}

}  // namespace
}  // namespace test_hysteresis
