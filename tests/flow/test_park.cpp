// Parking an idle worker (src/flow/park.hpp, docs/RUNTIME.md "Scaling and idle workers"):
// a push after the round's read of the slot is never lost — it either keeps park() from
// sleeping or wakes it. The timeouts here are far longer than any test: a park that
// returns false (timed out) means a wake-up was lost. No assertion depends on timing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "flow/channel.hpp"
#include "flow/park.hpp"

namespace test_park {
namespace {

using namespace snailtrail::flow;

constexpr int64_t kLongNs = 30'000'000'000;  // 30 s: only a lost wake-up reaches it

TEST(FlowPark, APushSinceTheReadKeepsParkFromSleeping) {
  ParkSlot slot;
  const uint32_t seen = slot.read();
  slot.wake();
  EXPECT_TRUE(slot.park(seen, kLongNs));
  EXPECT_EQ(slot.sleeping.load(), 0u);
}

TEST(FlowPark, NothingPushedTimesOut) {
  ParkSlot slot;
  EXPECT_FALSE(slot.park(slot.read(), 1'000'000));  // 1 ms, nobody wakes it
}

TEST(FlowPark, AWakeEndsASleepingPark) {
  ParkSlot slot;
  const uint32_t seen = slot.read();
  std::thread waker([&] {
    while (slot.sleeping.load() == 0) std::this_thread::yield();
    slot.wake();
  });
  EXPECT_TRUE(slot.park(seen, kLongNs));
  waker.join();
}

// The runtime's pattern on a ring (RingPusher wakes after each push; drive() reads the
// slot, drains, parks if it found nothing), against the plain oracle of every value
// arriving once and in order, and no park timing out.
TEST(FlowPark, NoLostWakeUpsOnARing) {
  constexpr int kValues = 100'000;
  SpscRing<int> ring(8);  // small: the producer also waits on a full ring
  ParkSlot slot;
  std::vector<int> values(kValues);
  for (int i = 0; i < kValues; ++i) values[i] = i;
  std::thread producer([&] {
    for (int i = 0; i < kValues; ++i) {
      while (!ring.push(&values[i])) std::this_thread::yield();
      slot.wake();
    }
  });
  std::vector<int> got;
  got.reserve(kValues);
  int timed_out = 0, parks = 0;
  while (got.size() < static_cast<size_t>(kValues)) {
    const uint32_t seen = slot.read();
    bool any = false;
    while (int* p = ring.pop()) {
      got.push_back(*p);
      any = true;
    }
    if (any) continue;
    if (timed_out > 0) {  // a wake-up was lost: finish without parking (the test fails)
      std::this_thread::yield();
      continue;
    }
    ++parks;
    if (!slot.park(seen, kLongNs)) ++timed_out;
  }
  producer.join();
  EXPECT_EQ(timed_out, 0) << "of " << parks << " parks";
  ASSERT_EQ(got.size(), values.size());
  EXPECT_EQ(got, values);
}

}  // namespace
}  // namespace test_park
