// How soon the closed loop decides (issue 35, docs/CLOSED-LOOP.md "Under overload"): DS2
// sees an interval as soon as its evidence is complete, not at the next policy tick. The
// trace of a real run (4 workers, 6 k then 24 k records/s from 1 s; one worker folds at
// most 20 k/s) is replayed into an Autoscaler with a plan call after every buffer, at the
// newest event time seen (the run's own logical clock, no wall time). Oracle, by brute
// force over the feed: the first call at which every worker has an event at or after the
// interval's end and no activity that carries records (matched start to end per worker
// and activity, with a stack) started before that end without ending.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "loop/autoscaler.hpp"
#include "recorded_run.hpp"
#include "trace_builder.hpp"

namespace test_decision_latency {
namespace {

namespace lp = snailtrail::loop;
using snailtrail::ActivityType;
using snailtrail::Event;
using snailtrail::EventKind;

bool carries_records(ActivityType a) {
  return a == ActivityType::processing || a == ActivityType::input ||
         a == ActivityType::serialization || a == ActivityType::deserialization ||
         a == ActivityType::io;
}

// The feed seen so far, per worker: the newest event and the starts still open.
struct Evidence {
  explicit Evidence(uint32_t workers) : newest(workers, -1), open(workers) {}
  void add(const Event& e) {
    if (e.worker >= newest.size()) return;
    newest[e.worker] = std::max(newest[e.worker], e.ts);
    if (!carries_records(e.activity)) return;
    auto& stack = open[e.worker][e.activity];
    if (e.kind == EventKind::start && e.has(snailtrail::kHasOperator)) stack.push_back(e.ts);
    if (e.kind == EventKind::end && !stack.empty()) stack.pop_back();
  }
  // Every event before `t` is in, and every activity that started before it has ended.
  bool complete(int64_t t) const {
    for (size_t w = 0; w < newest.size(); ++w) {
      if (newest[w] < t) return false;
      for (const auto& [activity, starts] : open[w])
        for (int64_t s : starts)
          if (s < t) return false;
    }
    return true;
  }
  std::vector<int64_t> newest;
  std::vector<std::map<ActivityType, std::vector<int64_t>>> open;
};

TEST(LoopDecisionLatency, DecidesAsSoonAsTheOverloadedIntervalsEvidenceIsComplete) {
  const snailtrail::testing::RecordedRun recorded = snailtrail::testing::record_closed_loop_run();
  ASSERT_FALSE(recorded.buffers.empty());
  const lp::LoopOptions lo = snailtrail::testing::replay_options();
  const int64_t step = lo.rate_profile.at(1).first, interval = lo.policy_interval_ns;
  lp::Autoscaler as(lo);
  Evidence ev(lo.max_workers);
  std::vector<int64_t> calls;       // the time of each plan call
  std::vector<Evidence> snapshots;  // per call, the evidence (copied: brute force)
  std::vector<uint32_t> config = as.initial_config();
  int64_t now = 0;
  for (const std::vector<Event>& b : recorded.buffers) {
    if (b.empty()) continue;
    for (const Event& e : b) {
      now = std::max(now, e.ts);
      ev.add(e);
    }
    as.on_events(b, recorded.operators);
    calls.push_back(now);
    snapshots.push_back(ev);
    if (auto c = as.plan(now, config)) config = *c;
  }
  const auto ds = as.decisions();
  ASSERT_FALSE(ds.empty()) << "no decision: the step to 24 k records/s needs 2 workers";
  const lp::DecisionRecord& d = ds.front();
  SCOPED_TRACE(d.reason);
  const auto decided = static_cast<int64_t>(d.time_s * 1e9 + 0.5);
  const auto end = static_cast<int64_t>(d.evidence_end_s * 1e9 + 0.5);
  // The overload's interval: one after the step, scaling out. Which one depends on the
  // recorded run's speed: usually the first or second, but under ASan with another test
  // beside it (CI, 2026-12-02) the sources of the 4 workers on 2 cores fell behind and
  // the first to show the overload was [1.5, 1.75). What this test checks is the time
  // of the decision given that interval's evidence (below), not the recording.
  EXPECT_GT(end, step);
  EXPECT_GT(d.active_workers, 1u) << "the first decision is the overload's scale-out";
  // At the first call whose evidence for that interval is complete, not later.
  size_t first = calls.size();
  for (size_t i = 0; i < calls.size() && first == calls.size(); ++i)
    if (snapshots[i].complete(end)) first = i;
  ASSERT_LT(first, calls.size());
  EXPECT_EQ(decided, calls[first]) << "the evidence was complete at " << calls[first] * 1e-9
                                   << " s, the decision came at " << d.time_s << " s";
  // Within the interval and less than another of the overload's start (waiting for the
  // next policy tick made it step + 2 intervals or later).
  EXPECT_LT(decided - (end - interval), 2 * interval);
}

// TraceBuilder's activity of `op`, its end carrying `records`.
void counted(snailtrail::testing::TraceBuilder& b, uint32_t worker, ActivityType a, int64_t from,
             int64_t to, uint32_t op, uint32_t records) {
  b.activity(worker, a, from, to, op);
  Event& end = b.trace.events.back();
  end.records = records;
  end.flags |= snailtrail::kHasRecords;
}

// Worker 0's count is busy all the time at 10 k records/s (1 000 records per 100 ms
// activation) while the sources are asked for 20 k/s; its activation [1.9 s, 2.1 s) (2 000
// records) spans the end of the interval [1 s, 2 s) and sends a message at 2.05 s, past
// that end. By hand: the interval's true rate is 10 k records/s (9 000 records in
// [1, 1.9) plus the activation's share before 2 s, 1 000, over 1 s of useful time).
// Closing it as soon as both workers' newest events pass 2 s would give it the
// activation's useful time up to 2 s without its records: 9 k/s.
TEST(LoopDecisionLatency, AnIntervalWaitsForTheActivitiesOpenAcrossItsEnd) {
  lp::LoopOptions lo;
  lo.max_workers = 2;
  lo.initial_workers = 1;
  lo.bins = 4;
  lo.rate_profile = {{0, 20000}};
  lo.manager.rollback = false;
  lo.manager.threshold = 0;
  lo.startup_ns = 1'000'000'000;  // the interval [1 s, 2 s) is shown
  lp::Autoscaler as(lo);
  const std::vector<std::string> ops = {"source", "count"};
  const int64_t ms = 1'000'000;
  // Worker 1 runs the source, worker 0 the count (one activity at a time per worker).
  snailtrail::testing::TraceBuilder b;
  for (int64_t t = 0; t < 2300 * ms; t += 100 * ms) {
    counted(b, 1, ActivityType::input, t, t + ms, 0, 2000);
    b.message(1, t + ms, 0, t + ms, t);  // the source's output: DS2's selectivity
    Event& send = b.trace.events[b.trace.events.size() - 2];
    send.records = 2000;
    send.flags |= snailtrail::kHasRecords;
  }
  for (int64_t t = 0; t < 1900 * ms; t += 100 * ms)
    counted(b, 0, ActivityType::processing, t, t + 100 * ms, 1, 1000);
  counted(b, 0, ActivityType::processing, 1900 * ms, 2100 * ms, 1, 2000);
  b.event(0, 2050 * ms, ActivityType::data_message, EventKind::send);
  counted(b, 0, ActivityType::processing, 2100 * ms, 2300 * ms, 1, 2000);
  // Worker 1's events to 2.2 s and worker 0's to 2.06 s, the activation still open; then
  // the rest of worker 0's.
  std::vector<Event> w1, w0, after;
  for (const Event& e : b.build().events)
    (e.worker == 1 ? w1 : e.ts <= 2060 * ms ? w0 : after).push_back(e);
  std::vector<uint32_t> config = as.initial_config();
  as.on_events(w1, ops);
  as.on_events(w0, ops);
  EXPECT_FALSE(as.plan(2060 * ms, config));
  EXPECT_EQ(as.intervals_observed(), 0u) << "[1 s, 2 s) closed with an activity open across it";
  as.on_events(after, ops);
  const auto to = as.plan(2300 * ms, config);
  ASSERT_TRUE(to);
  const auto ds = as.decisions();
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].active_workers, 2u);
  EXPECT_DOUBLE_EQ(ds[0].evidence_end_s, 2.0);
  EXPECT_NE(ds[0].reason.find("true processing rate 10000 records/s"), std::string::npos)
      << ds[0].reason;
}

// The start-up rule (docs/CLOSED-LOOP.md "Start-up"). A hand-built run of 2 workers with
// 250 ms intervals: worker 1's source sends 8 k records/s, from 1.5 s 24 k/s (every 10 ms
// an input of 1 ms and a message with its records); worker 0's count is cold until 0.75 s
// (busy all the time at 2 k records/s: DS2 would want 8 k / 2 k = 4 workers), then folds
// 20 k records/s (4 ms of each 10 ms at 8 k/s: 1 worker), and from 1.5 s is busy all the
// time at 20 k/s for 24 k/s (2 workers: the overload); a start-up of 1 s. `count_from`: the count's
// first activity (none before).
std::vector<Event> cold_start_trace(int64_t count_from) {
  const int64_t ms = 1'000'000;
  snailtrail::testing::TraceBuilder b;
  int64_t c = 0;
  for (int64_t t = 0; t < 2500 * ms; t += 10 * ms) {
    const uint32_t sent = t < 1500 * ms ? 80 : 240;
    counted(b, 1, ActivityType::input, t, t + ms, 0, sent);
    b.message(1, t + ms, 0, t + ms, ++c);
    Event& send = b.trace.events[b.trace.events.size() - 2];
    send.records = sent;
    send.flags |= snailtrail::kHasRecords;
    if (t < count_from) continue;
    if (t < 750 * ms)
      counted(b, 0, ActivityType::processing, t + ms, t + 10 * ms, 1, 18);
    else if (t < 1500 * ms)
      counted(b, 0, ActivityType::processing, t + ms, t + 5 * ms, 1, 80);
    else
      counted(b, 0, ActivityType::processing, t + ms, t + 11 * ms, 1, 200);
  }
  const auto events = b.build().events;
  return {events.begin(), events.end()};
}

lp::LoopOptions cold_start_options() {
  lp::LoopOptions lo;
  lo.max_workers = 2;
  lo.initial_workers = 1;
  lo.bins = 4;
  lo.policy_interval_ns = 250'000'000;
  lo.rate_profile = {{0, 8000}, {1'500'000'000, 24000}};
  lo.manager.rollback = false;
  lo.manager.threshold = 0;
  lo.startup_ns = 1'000'000'000;
  return lo;
}

// The feed as the runtime hands it over: every 50 ms each worker's events before then (an
// activity across the flush is handed over open), then a plan call at the newest event
// time. The evidence per call, for the oracle.
struct Replayed {
  std::vector<lp::DecisionRecord> decisions;
  std::vector<int64_t> calls;
  std::vector<Evidence> snapshots;
  uint64_t in_startup = 0, observed = 0;
};
Replayed replay_flushes(const lp::LoopOptions& lo, const std::vector<Event>& events) {
  const int64_t flush = 50'000'000;
  lp::Autoscaler as(lo);
  Evidence ev(lo.max_workers);
  Replayed out;
  std::vector<uint32_t> config = as.initial_config();
  const std::vector<std::string> ops = {"source", "count"};
  std::vector<size_t> next(lo.max_workers, 0);
  std::vector<std::vector<Event>> per(lo.max_workers);
  for (const Event& e : events) per[e.worker].push_back(e);
  int64_t now = 0;
  for (int64_t f = flush;; f += flush) {
    bool more = false;
    for (uint32_t w = 0; w < lo.max_workers; ++w) {
      std::vector<Event> buf;
      for (; next[w] < per[w].size() && per[w][next[w]].ts < f; ++next[w]) {
        buf.push_back(per[w][next[w]]);
        ev.add(buf.back());
        now = std::max(now, buf.back().ts);
      }
      more = more || next[w] < per[w].size();
      if (buf.empty()) continue;
      as.on_events(buf, ops);
      out.calls.push_back(now);
      out.snapshots.push_back(ev);
      if (auto c = as.plan(now, config)) config = *c;
    }
    if (!more) break;
  }
  out.decisions = as.decisions();
  out.in_startup = as.intervals_in_startup();
  out.observed = as.intervals_observed();
  return out;
}

TEST(LoopStartup, TheColdStartDoesNotScaleOutAndTheOverloadStillDecidesAtOnce) {
  const std::vector<Event> trace = cold_start_trace(0);
  const int64_t ms = 1'000'000;
  {
    SCOPED_TRACE("the rule before: only the first interval skipped");
    lp::LoopOptions lo = cold_start_options();
    lo.startup_ns = lo.policy_interval_ns;
    const Replayed r = replay_flushes(lo, trace);
    ASSERT_FALSE(r.decisions.empty());
    SCOPED_TRACE(r.decisions.front().reason);
    EXPECT_EQ(r.decisions.front().active_workers, 2u);
    EXPECT_LE(r.decisions.front().evidence_end_s, 0.75) << "a scale-out on the cold start";
  }
  const lp::LoopOptions lo = cold_start_options();
  const Replayed r = replay_flushes(lo, trace);
  ASSERT_FALSE(r.decisions.empty()) << "no decision: 24 k records/s needs 2 workers";
  const lp::DecisionRecord& d = r.decisions.front();
  SCOPED_TRACE(d.reason);
  // A start-up of 1 s (cold_start_options; the default, 2 s or 2 intervals, would skip
  // this short trace's overload too) skips the cold intervals and [0.75 s, 1 s).
  EXPECT_EQ(lp::default_startup_ns(lo.policy_interval_ns), 2000 * ms);
  EXPECT_EQ(lp::default_startup_ns(1500 * ms), 3000 * ms);
  EXPECT_EQ(r.in_startup, 4u);
  EXPECT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(d.active_workers, 2u);
  // The overload's first interval, [1.5 s, 1.75 s), at the first call whose evidence for
  // it is complete.
  EXPECT_DOUBLE_EQ(d.evidence_end_s, 1.75);
  const auto decided = static_cast<int64_t>(d.time_s * 1e9 + 0.5);
  size_t first = r.calls.size();
  for (size_t i = 0; i < r.calls.size() && first == r.calls.size(); ++i)
    if (r.snapshots[i].complete(1750 * ms)) first = i;
  ASSERT_LT(first, r.calls.size());
  EXPECT_EQ(decided, r.calls[first]) << "the evidence was complete at " << r.calls[first] * 1e-9
                                     << " s, the decision came at " << d.time_s << " s";
}

// With no start-up time, an interval still counts as start-up while it began before both
// operators produced output: the count's first activity ends at 0.605 s, so [0, 0.25),
// [0.25, 0.5) and [0.5, 0.75) are skipped, and the later ones shown to DS2.
TEST(LoopStartup, IntervalsBeforeBothOperatorsProducedOutputAreSkipped) {
  const int64_t ms = 1'000'000;
  lp::LoopOptions lo = cold_start_options();
  lo.startup_ns = 0;
  lo.rate_profile = {{0, 8000}};
  std::vector<Event> trace;
  for (const Event& e : cold_start_trace(600 * ms))
    if (e.ts < 1500 * ms) trace.push_back(e);
  const Replayed r = replay_flushes(lo, trace);
  EXPECT_EQ(r.in_startup, 3u);
  EXPECT_GE(r.observed, 2u);
  EXPECT_TRUE(r.decisions.empty()) << r.decisions.front().reason;
}

}  // namespace
}  // namespace test_decision_latency
