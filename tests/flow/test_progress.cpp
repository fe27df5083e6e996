// Randomized checks of the runtime's progress tracking (src/flow): random dataflows and
// inputs on 1-4 workers; every record delivered exactly once (against a sequential
// oracle), frontiers monotone, no record at a time its frontier had passed, and every
// notification delivered only after all records of its time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"
#include "watchdog.hpp"

namespace snailtrail::flow {
namespace {

using Rec = std::pair<Time, uint64_t>;  // (time, value)

// Source s on worker w: nondecreasing times, unique values.
std::vector<Rec> source_records(uint64_t seed, uint32_t s, uint32_t w) {
  std::mt19937_64 rng(seed * 1000003 + s * 101 + w);
  const size_t n = 100 + rng() % 400;
  std::vector<Rec> out;
  Time t = rng() % 3;
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 10 < 3) t += rng() % 4;
    out.emplace_back(t, (uint64_t{w} << 32) | (uint64_t{s} << 28) | i);
  }
  return out;
}

enum Stage { kMap, kFilter, kExchange, kDelay, kStage_count };

uint64_t map_fn(uint64_t v) {
  return v * 3 + 1;
}
bool keep_fn(uint64_t v) {
  return mix64(v) % 5 != 0;
}
Time delay_of(uint64_t v) {
  return v % 3;
}

std::vector<Rec> oracle_apply(std::vector<Rec> in, Stage st) {
  std::vector<Rec> out;
  for (auto [t, v] : in) {
    if (st == kMap) out.emplace_back(t, map_fn(v));
    if (st == kFilter && keep_fn(v)) out.emplace_back(t, v);
    if (st == kExchange) out.emplace_back(t, v);
    if (st == kDelay) out.emplace_back(t + delay_of(v), v);
  }
  return out;
}

// A source that gives its records a random number at a time, holding its capability at
// the next record's time.
Stream<uint64_t> test_source(Worker& w, uint64_t seed, uint32_t s) {
  auto recs = std::make_shared<std::vector<Rec>>(source_records(seed, s, w.index()));
  auto rng = std::make_shared<std::mt19937_64>(seed + w.index());
  size_t pos = 0;
  return source<uint64_t>(w, "source" + std::to_string(s),
                          [recs, rng, pos](Capability& cap, Output<uint64_t>& out) mutable {
                            const size_t k = (*rng)() % 4 == 0 ? 0 : (*rng)() % 20;
                            for (size_t i = 0; i < k && pos < recs->size(); ++i, ++pos) {
                              cap.downgrade((*recs)[pos].first);
                              out.give(cap.time(), (*recs)[pos].second);
                            }
                            if (pos == recs->size())
                              cap.drop();
                            else
                              cap.downgrade((*recs)[pos].first);
                          });
}

Stream<uint64_t> apply(const Stream<uint64_t>& s, Stage st) {
  switch (st) {
    case kMap:
      return map<uint64_t>(s, "map", [](uint64_t v) { return map_fn(v); });
    case kFilter:
      return filter(s, "filter", [](uint64_t v) { return keep_fn(v); });
    case kExchange:
      return exchange_by(s, "exchange", [](uint64_t v) { return v; });
    default:
      break;
  }
  // Holds records of time t until the frontier passes t, then gives them at t + delay.
  struct Delay {
    std::map<Time, std::vector<uint64_t>> held;
    Notificator notes;
    void operator()(Input<uint64_t>& in, Output<uint64_t>& out) {
      in.for_each([&](Time t, std::vector<uint64_t>& data) {
        auto [it, fresh] = held.try_emplace(t);
        if (fresh) notes.notify_at(in.retain(t));
        it->second.insert(it->second.end(), data.begin(), data.end());
      });
      notes.for_each(in.frontier(), [&](Capability& cap) {
        for (uint64_t v : held[cap.time()]) {
          Capability later = cap.delayed(cap.time() + delay_of(v));
          out.give(later.time(), v);
        }
        held.erase(cap.time());
      });
    }
  };
  return s.unary<uint64_t>(exchange([](uint64_t v) { return mix64(v + 7); }), "delay", Delay{});
}

struct SinkLog {
  std::vector<Rec> got;
  std::map<Time, uint64_t> at_notify;  // count of time t when t was notified
  uint64_t regressions = 0;
};

void test_sink(const Stream<uint64_t>& s, SinkLog& log) {
  struct Logic {
    SinkLog* log;
    Notificator notes;
    std::map<Time, uint64_t> count;
    Time last_frontier = 0;
    void operator()(Input<uint64_t>& in, Output<char>&) {
      in.for_each([&](Time t, std::vector<uint64_t>& data) {
        if (count[t] == 0) notes.notify_at(in.retain(t));
        count[t] += data.size();
        for (uint64_t v : data) log->got.emplace_back(t, v);
      });
      const Time f = in.frontier();
      if (f < last_frontier) ++log->regressions;
      last_frontier = f;
      notes.for_each(f, [&](Capability& cap) { log->at_notify[cap.time()] = count[cap.time()]; });
      if (f == kTimeMax) {
        // Every time counted at notification must have stayed complete.
        for (auto& [t, c] : log->at_notify)
          if (count[t] != c) ++log->regressions;
      }
    }
  };
  s.unary<char>(Pipeline{}, "sink", Logic{&log, {}, {}, 0});
}

void run_random(uint64_t seed, uint32_t workers, size_t ring_capacity = kRingCapacity) {
  std::mt19937_64 rng(seed);
  const uint32_t sources = 1 + rng() % 2;
  std::vector<std::vector<Stage>> chains(sources);
  for (auto& c : chains) {
    const size_t n = 1 + rng() % 4;
    for (size_t i = 0; i < n; ++i) c.push_back(static_cast<Stage>(rng() % kStage_count));
  }
  std::vector<Stage> after;  // after the union of the chains
  for (size_t i = 0, n = rng() % 3; i < n; ++i)
    after.push_back(static_cast<Stage>(rng() % kStage_count));
  const bool union_exchanged = rng() % 2;

  std::vector<SinkLog> logs(workers);
  std::vector<WorkerCounters> counters;
  run_dataflow(
      workers,
      [&](Worker& w) {
        std::vector<Stream<uint64_t>> streams;
        for (uint32_t s = 0; s < sources; ++s) {
          Stream<uint64_t> st = test_source(w, seed, s);
          for (Stage x : chains[s]) st = apply(st, x);
          streams.push_back(st);
        }
        Stream<uint64_t> u = streams[0];
        if (sources == 2) {
          auto pass = [](Input<uint64_t>& a, Input<uint64_t>& b, Output<uint64_t>& out) {
            a.for_each([&](Time t, std::vector<uint64_t>& d) {
              for (uint64_t v : d) out.give(t, v);
            });
            b.for_each([&](Time t, std::vector<uint64_t>& d) {
              for (uint64_t v : d) out.give(t, v);
            });
          };
          if (union_exchanged)
            u = binary<uint64_t>(streams[0], exchange([](uint64_t v) { return v; }), streams[1],
                                 exchange([](uint64_t v) { return v ^ 1; }), "union", pass);
          else
            u = binary<uint64_t>(streams[0], Pipeline{}, streams[1], Pipeline{}, "union", pass);
        }
        for (Stage x : after) u = apply(u, x);
        test_sink(u, logs[w.index()]);
      },
      &counters, ring_capacity);

  std::vector<Rec> want;
  for (uint32_t s = 0; s < sources; ++s) {
    std::vector<Rec> in;
    for (uint32_t w = 0; w < workers; ++w) {
      auto r = source_records(seed, s, w);
      in.insert(in.end(), r.begin(), r.end());
    }
    for (Stage x : chains[s]) in = oracle_apply(in, x);
    want.insert(want.end(), in.begin(), in.end());
  }
  for (Stage x : after) want = oracle_apply(want, x);
  std::vector<Rec> got;
  for (auto& l : logs) {
    got.insert(got.end(), l.got.begin(), l.got.end());
    EXPECT_EQ(l.regressions, 0u) << "seed " << seed;
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  ASSERT_EQ(got.size(), want.size())
      << "seed " << seed << " workers " << workers << " ring capacity " << ring_capacity;
  EXPECT_TRUE(got == want) << "seed " << seed << " workers " << workers << " ring capacity "
                           << ring_capacity;
  for (auto& c : counters) {
    EXPECT_EQ(c.frontier_regressions, 0u) << "seed " << seed;
    EXPECT_EQ(c.early_records, 0u) << "seed " << seed;
  }
}

TEST(FlowProgress, RandomDataflowsDeliverEveryRecordOnceAndFrontiersAreExact) {
  for (uint64_t seed = 1; seed <= 150; ++seed) run_random(seed, 1 + seed % 4);
}

// The same with rings of 1 to 4 slots (issue 35): data and progress overflow at their
// senders all the time, and every run must still end with the oracle's output (a worker
// that stopped with updates still at the sender would leave its peers waiting: the
// watchdog fails the test instead of hanging).
TEST(FlowProgress, RandomDataflowsAtRingCapacities1To4) {
  for (size_t cap = 1; cap <= 4; ++cap)
    finishes_within(std::chrono::seconds(60), "ring capacity " + std::to_string(cap), [cap] {
      for (uint64_t seed = 1; seed <= 40; ++seed) run_random(seed, 2 + seed % 3, cap);
    });
}

// The tracker alone: a frontier never passes a held pointstamp, negative transients hold
// nothing, and a location reaches only what lies downstream of it.
TEST(FlowProgress, TrackerFrontierIsLeastHeldUpstreamTime) {
  // op0 -> op1 -> op2, op0 -> op2 (edges 0, 1, 2)
  ProgressTracker tr;
  tr.init(3, {{0, 1}, {1, 2}, {0, 2}});
  std::vector<ProgressUpdate> u = {{output_location(0), 5, 1}, {output_location(1), 3, 1}};
  tr.apply(u.data(), u.size());
  EXPECT_EQ(tr.recompute(), 0u);
  EXPECT_EQ(tr.frontier(0), 5u);  // into op1: only op0's capability
  EXPECT_EQ(tr.frontier(1), 3u);  // into op2 from op1: op1's capability too
  EXPECT_EQ(tr.frontier(2), 5u);  // op2's other input: op1 does not reach it
  // A receiver's -1 that overtook the sender's +1: holds nothing.
  u = {{edge_location(0), 2, -1}};
  tr.apply(u.data(), u.size());
  tr.recompute();
  EXPECT_EQ(tr.frontier(0), 5u);
  u = {{edge_location(0), 2, +1}, {output_location(1), 3, -1}};
  tr.apply(u.data(), u.size());
  tr.recompute();
  EXPECT_EQ(tr.frontier(1), 5u);
  EXPECT_FALSE(tr.all_empty());
  u = {{output_location(0), 5, -1}};
  tr.apply(u.data(), u.size());
  tr.recompute();
  EXPECT_EQ(tr.frontier(1), kTimeMax);
  EXPECT_TRUE(tr.all_empty());
}

TEST(FlowProgress, ChangeBatchMergesAndDropsZeros) {
  ChangeBatch b;
  b.add(3, 7, 1);
  b.add(1, 2, 1);
  b.add(3, 7, -1);
  b.add(1, 2, 2);
  auto u = b.drain();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].loc, 1u);
  EXPECT_EQ(u[0].delta, 3);
  EXPECT_TRUE(b.empty());
}

// A round that only applies other workers' progress is not work (issue 33): the operators
// run after it in the same round, and when none has anything to do the worker is still
// waiting. Counted as work, each such round ended the worker's wait and left a gap in its
// trace. Worker 0 advances its source's time 100 times, 300 us apart; worker 1 has no
// records at all and receives that progress about 100 times.
TEST(FlowProgress, RoundsThatOnlyApplyProgressAreIdle) {
  using Clock = std::chrono::steady_clock;
  constexpr Time kTicks = 100;
  std::vector<WorkerCounters> counters;
  run_dataflow(
      2,
      [](Worker& w) {
        const bool ticking = w.index() == 0;
        Clock::time_point next = Clock::now();
        auto ticks = source<uint64_t>(w, "ticks",
                                      [ticking, next](Capability& cap, Output<uint64_t>&) mutable {
                                        if (!ticking || cap.time() == kTicks) return cap.drop();
                                        if (Clock::now() < next) return;
                                        next = Clock::now() + std::chrono::microseconds(300);
                                        cap.downgrade(cap.time() + 1);
                                      });
        map<uint64_t>(ticks, "same", [](uint64_t v) { return v; });
      },
      &counters);
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_GE(counters[0].steps - counters[0].idle_steps, kTicks);
  // Worker 1 works once to drop its source's capability and send that, and at the end.
  EXPECT_LT(counters[1].steps - counters[1].idle_steps, 10u);
}

}  // namespace
}  // namespace snailtrail::flow
