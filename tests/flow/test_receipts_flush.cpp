// Receipts under a live trace sink (docs/RUNTIME.md "Tracing"): a receipt is recorded at
// its message's arrival even when the message waited behind a busy receiver for longer
// than the sink's flush interval. The flush holds back the receiver's events from the
// earliest arrival it has not taken yet (runtime.cpp's drive()); with no hold at all
// (trace_hold_ns = 0) receipts are clamped to the last flush, and counted.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <vector>

#include "flow/jobs/jobs.hpp"
#include "flow/open_loop.hpp"
#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace test_receipts_flush {
namespace {

using namespace snailtrail;
using namespace snailtrail::flow;

// keycount whose counting busy-waits kCostNs per record on worker 1 only: at 30 K
// records/s, worker 1 gets ~15 K/s and does 1.5 s of work a second, so in a 200 ms run
// its inputs queue for up to ~100 ms while the sink flushes every 2 ms.
constexpr int64_t kCostNs = 100'000;
constexpr int64_t kFlushNs = 2'000'000;

void busy_wait(int64_t ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

const std::string& slow_receiver_job() {
  static const std::string name = [] {
    JobSpec j;
    j.name = "test-slow-receiver";
    j.description = "keycount, counting slowly on worker 1";
    j.build = [](JobContext& ctx) {
      const RunConfig& cfg = ctx.cfg;
      const bool slow = ctx.worker.index() == 1;
      auto keys = open_loop_source<uint64_t>(
          ctx, "source", [&cfg](uint32_t w, uint64_t i) { return jobs::keycount_key(cfg, w, i); });
      auto counted = stateful_unary<char, uint64_t>(
          keys, "count", [](uint64_t k) { return k; },
          [slow](Time, uint64_t, uint64_t&, uint64_t& count, Session<char>&) {
            if (slow) busy_wait(kCostNs);
            ++count;
          },
          [&ctx](FlatMap<uint64_t>& states) {
            ctx.emit_result(KeyCounts(states.begin(), states.end()));
          });
      probe(counted, "probe", ctx.on_probe);
    };
    j.reference = [](const RunConfig& cfg, uint32_t w, uint64_t from, uint64_t to,
                     FlatMap<uint64_t>& state) {
      for (uint64_t i = from; i < to; ++i) ++state[jobs::keycount_key(cfg, w, i)];
    };
    register_job(j);
    return j.name;
  }();
  return name;
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Streamed {
  RunResult result;
  std::map<uint32_t, std::vector<Event>> per_worker;  // in the order the sink got them
  std::map<uint32_t, std::vector<int64_t>> handed;    // per event: when (steady ns) it went out
  bool ordered = true;                                // every worker's events in time order
};

Streamed run_streamed(int64_t hold_ns) {
  RunConfig cfg;
  cfg.job = slow_receiver_job();
  cfg.workers = 2;
  cfg.rate = 30'000;
  cfg.duration_ns = 200'000'000;
  cfg.keys = 1000;
  cfg.trace = true;
  cfg.trace_flush_ns = kFlushNs;
  cfg.trace_hold_ns = hold_ns;
  Streamed s;
  std::mutex mu;
  cfg.on_trace_events = [&](flow::TraceBuffer buf, const std::vector<std::string>&) {
    const std::vector<Event>& ev = *buf;
    const int64_t now = steady_ns();
    std::lock_guard<std::mutex> lock(mu);
    if (ev.empty()) return;
    auto& mine = s.per_worker[ev.front().worker];
    for (const Event& e : ev) {
      if (e.worker != ev.front().worker || (!mine.empty() && mine.back().ts > e.ts))
        s.ordered = false;
      mine.push_back(e);
      s.handed[e.worker].push_back(now);
    }
  };
  s.result = run_job(cfg);
  EXPECT_EQ(first_difference(s.result.output, reference_output(cfg, s.result.generated)), "");
  return s;
}

struct Receipts {
  size_t count = 0;
  size_t far_from_send = 0;  // received more than kNearNs after the send
  size_t held_back = 0;      // handed to the sink more than 10 flushes after their ts
  size_t unmatched = 0;
};
// In one process a message's arrival is stamped as it enters the receiver's ring, right
// after its send is recorded (Worker::trace_send): a receipt within this of its send is
// at its arrival. (Generous for a loaded machine under ASan; the queueing is ~100 ms.)
constexpr int64_t kNearNs = 20'000'000;

Receipts receipts(const Streamed& s) {
  std::map<int64_t, int64_t> sent;  // correlator -> send ts
  for (const auto& [w, ev] : s.per_worker)
    for (const Event& e : ev)
      if (e.kind == EventKind::send) sent[e.correlator] = e.ts;
  Receipts r;
  const int64_t origin = s.result.clock_origin_ns;
  for (const auto& [w, ev] : s.per_worker)
    for (size_t i = 0; i < ev.size(); ++i) {
      const Event& e = ev[i];
      if (e.kind != EventKind::recv) continue;
      ++r.count;
      auto it = sent.find(e.correlator);
      if (it == sent.end() || e.ts < it->second) {
        ++r.unmatched;
        continue;
      }
      if (e.ts - it->second > kNearNs) ++r.far_from_send;
      if (s.handed.at(w)[i] - origin - e.ts > 10 * kFlushNs) ++r.held_back;
    }
  return r;
}

// Oracle: the arrival the runtime stamped (within kNearNs of the send), never a flush.
TEST(ReceiptsUnderFlush, AReceiptQueuedPastFlushesKeepsItsArrival) {
  const Streamed s = run_streamed(2'000'000'000);
  EXPECT_TRUE(s.ordered);
  ASSERT_EQ(s.per_worker.size(), 2u);
  const Receipts r = receipts(s);
  EXPECT_GT(r.count, 100u);
  EXPECT_EQ(r.unmatched, 0u);
  EXPECT_EQ(r.far_from_send, 0u);
  EXPECT_EQ(s.result.counters.clamped_receipts, 0u);
  // The run did queue messages past many flushes (else this test could not fail): their
  // receipts went to the sink long after their arrival.
  EXPECT_GT(r.held_back, 0u);
}

// Without a hold (the flush before the watermark): receipts of queued messages are
// clamped to the last flush, and counted; the sink still gets every worker in order.
TEST(ReceiptsUnderFlush, WithoutAHoldClampedReceiptsAreCounted) {
  const Streamed s = run_streamed(0);
  EXPECT_TRUE(s.ordered);
  const Receipts r = receipts(s);
  EXPECT_EQ(r.unmatched, 0u);
  EXPECT_GT(r.far_from_send, 0u);
  EXPECT_GE(s.result.counters.clamped_receipts, r.far_from_send);
}

// The watermark's parts: a ring's head is its sender's earliest arrival; a sender's
// entering stamp bounds a message not yet in the ring.
TEST(ReceiptsUnderFlush, EarliestArrivalPeeksRingsAndEnteringSenders) {
  Fabric fabric(3);
  Recorder rec(2, true, std::chrono::steady_clock::now());
  Worker w(2, fabric, rec);
  auto in = fabric.puller<int>(7, 2);
  w.add_inbound(in.get());
  auto from0 = fabric.pushers<int>(7, 0);
  auto from1 = fabric.pushers<int>(7, 1);
  EXPECT_EQ(w.earliest_arrival(), INT64_MAX);
  auto msg = [](uint32_t from, int64_t arrived) {
    auto m = std::make_unique<Message<int>>();
    m->from = from;
    m->arrived_ns = arrived;
    return m;
  };
  from0[2]->push(msg(0, 500));
  from0[2]->push(msg(0, 900));
  from1[2]->push(msg(1, 700));
  EXPECT_EQ(w.earliest_arrival(), 500);
  fabric.entering(1).store(300);  // worker 1 stamped an arrival and has not pushed yet
  EXPECT_EQ(w.earliest_arrival(), 300);
  fabric.entering(1).store(INT64_MAX);
  fabric.entering(2).store(100);  // the worker's own stamp: never in its own inbound
  EXPECT_EQ(w.earliest_arrival(), 500);
  std::vector<int64_t> taken;
  while (auto m = in->pull()) {
    taken.push_back(m->arrived_ns);
    if (taken.size() == 1) {
      EXPECT_EQ(w.earliest_arrival(), m->arrived_ns == 500 ? 700 : 500);
    }
  }
  EXPECT_EQ(taken.size(), 3u);
  EXPECT_EQ(w.earliest_arrival(), INT64_MAX);
}

}  // namespace
}  // namespace test_receipts_flush
