// Liveness of the runtime (src/flow, issue 35): a worker whose last progress updates wait
// at the sender (a full ring) is not done, and the bounded rings hold exactly their
// capacity.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <random>
#include <thread>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"
#include "watchdog.hpp"

namespace snailtrail::flow {
namespace {

using namespace std::chrono_literals;

// The ring against a deque (the oracle) under random pushes and pops, at every capacity
// from 1 to 5 (3 and 5 are not powers of two: the slots are, the bound is not).
TEST(FlowLiveness, RingHoldsExactlyItsCapacity) {
  for (size_t cap = 1; cap <= 5; ++cap) {
    SpscRing<int> ring(cap);
    std::deque<int> oracle;
    std::mt19937_64 rng(cap);
    int next = 0;
    for (int i = 0; i < 5000; ++i) {
      if (rng() % 2) {
        auto p = std::make_unique<int>(next);
        const bool pushed = ring.push(p.get());
        ASSERT_EQ(pushed, oracle.size() < cap) << "capacity " << cap << " step " << i;
        if (pushed) {
          p.release();
          oracle.push_back(next);
        }
        ++next;
      } else {
        std::unique_ptr<int> p(ring.pop());
        ASSERT_EQ(p != nullptr, !oracle.empty()) << "capacity " << cap << " step " << i;
        if (p) {
          EXPECT_EQ(*p, oracle.front());
          oracle.pop_front();
        }
      }
      ASSERT_EQ(ring.full(), oracle.size() == cap);
    }
  }
}

TEST(FlowLiveness, FabricRefusesARingWithoutSlots) {
  EXPECT_THROW(Fabric(2, nullptr, 0), std::invalid_argument);
}

// Worker 1 drops its source and then stalls (until worker 0's source has ended, and 200
// ms more) before its drop goes out; meanwhile worker 0 runs thousands of progress rounds
// whose updates to worker 1 overflow the small ring and wait at worker 0. Once worker 1's
// drop arrives, worker 0's tracker is empty: if it stopped stepping then, its last
// updates would never reach worker 1, which would wait forever.
void stalled_worker_case(size_t ring_capacity) {
  constexpr Time kRounds = 3000;
  auto source_ended = std::make_shared<std::atomic<bool>>(false);
  std::vector<WorkerCounters> counters;
  finishes_within(20s, "two workers, ring capacity " + std::to_string(ring_capacity), [&] {
    run_dataflow(
        2,
        [source_ended](Worker& w) {
          const bool busy = w.index() == 0;
          auto ticks = source<uint64_t>(
              w, "ticks", [busy, source_ended](Capability& cap, Output<uint64_t>&) {
                if (busy) {  // one progress round per step
                  if (cap.time() + 1 < kRounds) return cap.downgrade(cap.time() + 1);
                  cap.drop();
                  source_ended->store(true);
                  return;
                }
                cap.drop();  // goes out at the end of this step, after the stall
                const auto until = std::chrono::steady_clock::now() + 10s;
                while (!source_ended->load() && std::chrono::steady_clock::now() < until)
                  std::this_thread::sleep_for(1ms);
                std::this_thread::sleep_for(200ms);
              });
          map<uint64_t>(ticks, "same", [](uint64_t v) { return v; });
        },
        &counters, ring_capacity);
  });
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_GE(counters[0].steps, kRounds);
  EXPECT_EQ(counters[0].frontier_regressions + counters[1].frontier_regressions, 0u);
}

TEST(FlowLiveness, StalledWorkerGetsTheLastProgressOfAFullRing) {
  for (size_t cap : {1, 2, 4}) stalled_worker_case(cap);
}

}  // namespace
}  // namespace snailtrail::flow
