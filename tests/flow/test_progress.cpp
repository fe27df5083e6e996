// Randomized checks of the runtime's progress tracking (src/flow): random dataflows and
// inputs on 1-4 workers (random_dataflows.hpp); every record delivered exactly once
// (against a sequential oracle), frontiers monotone, no record at a time its frontier had
// passed, and every notification delivered only after all records of its time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"
#include "random_dataflows.hpp"
#include "watchdog.hpp"

namespace snailtrail::flow {
namespace {

// The random dataflows and their oracle are shared with the runs across processes
// (tests/across/random_across_processes.cpp).
void run_random(uint64_t seed, uint32_t workers, size_t ring_capacity = kRingCapacity) {
  const random_dataflows::Plan plan = random_dataflows::random_plan(seed);
  const random_dataflows::Observed got =
      random_dataflows::run_plan(plan, seed, workers, ring_capacity);
  EXPECT_EQ(random_dataflows::mismatch(got, random_dataflows::expected(plan, seed, workers)), "")
      << "seed " << seed << " workers " << workers << " ring capacity " << ring_capacity;
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
