// Typed capabilities (src/flow/worker.hpp, stream.hpp; issue 35, docs/RUNTIME.md "API"):
// an operator gives output only with a capability, a capability only moves forward, and
// dropping one releases its time downstream in the next round.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

// Giving needs a capability of the right kind: these are checked when this file compiles.
template <class T, class Cap>
concept GivesWith = requires(Output<T>& out, const Cap& cap, T rec) {
  out.give(cap, rec);
};
template <class T>
concept GivesWithoutCapability = requires(Output<T>& out, T rec) {
  out.give(rec);
};
template <class T>
concept InputMintsFromATime = requires(Input<T>& in, Time t) {
  in.retain(t);
};

static_assert(GivesWith<uint64_t, Capability>);
static_assert(GivesWith<uint64_t, InputCapability>);
static_assert(!GivesWith<uint64_t, Time>, "a bare time is no capability");
static_assert(!GivesWith<uint64_t, int>);
static_assert(!GivesWithoutCapability<uint64_t>);
static_assert(!InputMintsFromATime<uint64_t>, "capabilities come from messages, not times");
static_assert(!std::is_constructible_v<Capability, Time>);
static_assert(!std::is_constructible_v<Capability, Worker*, uint32_t, Time>);
static_assert(!std::is_constructible_v<InputCapability, Worker*, uint32_t, Time>);
static_assert(!std::is_copy_constructible_v<InputCapability>,
              "an input capability does not outlive its message");
static_assert(!std::is_copy_constructible_v<Session<uint64_t>>);

// The message of `what` that threw, or "" if it did not throw std::logic_error.
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

// A source at time 5 gives one record; the operator receiving it tries every way of
// moving a capability backwards (each throws, naming the times), a capability of
// another operator and a dropped one (each throws), and the valid ones (none throws).
TEST(FlowCapabilities, MovingACapabilityBackwardsThrows) {
  std::vector<std::string> errors;
  bool valid_ones = false;
  uint64_t received = 0;
  run_dataflow(1, [&](Worker& w) {
    auto foreign = std::make_shared<Capability>();
    auto s = source<uint64_t>(w, "at5", [foreign](Capability& cap, Output<uint64_t>& out) {
      cap.downgrade(5);
      *foreign = cap;  // a copy held outside its operator, dropped by the receiver
      out.give(cap, 42);
      cap.drop();
    });
    auto checked = s.template unary<uint64_t>(
        Pipeline{}, "checks", [&, foreign](Input<uint64_t>& in, Output<uint64_t>& out) {
          in.for_each([&](const InputCapability& cap, std::vector<uint64_t>& data) {
            received += data.size();
            errors.push_back(logic_error_of([&] { (void)cap.delayed(4); }));
            errors.push_back(logic_error_of([&] { (void)cap.retain(4); }));
            Capability held = cap.retain();
            errors.push_back(logic_error_of([&] { held.downgrade(4); }));
            errors.push_back(logic_error_of([&] { (void)held.delayed(4); }));
            errors.push_back(logic_error_of([&] { out.give(*foreign, 1); }));
            foreign->drop();
            errors.push_back(logic_error_of([&] { out.give(*foreign, 1); }));
            Capability later = cap.delayed(7);
            later.downgrade(9);
            Capability again = held.delayed(5);
            out.give(cap, 1);
            out.give(held, 2);
            out.give(later, 3);
            Session<uint64_t> session = out.session(again);
            session.give(4);
            valid_ones = session.time() == 5 && later.time() == 9;
          });
        });
    sink(checked, "sink", [](Time, uint64_t) {});
  });
  EXPECT_EQ(received, 1u);
  EXPECT_TRUE(valid_ones);
  ASSERT_EQ(errors.size(), 6u);
  EXPECT_EQ(errors[0],
            "InputCapability::delayed(4): earlier than the capability's time 5 (a capability "
            "only moves forward)");
  EXPECT_EQ(errors[1], errors[0]);
  EXPECT_EQ(errors[2],
            "Capability::downgrade(4): earlier than the capability's time 5 (a capability only "
            "moves forward)");
  EXPECT_EQ(errors[3],
            "Capability::delayed(4): earlier than the capability's time 5 (a capability only "
            "moves forward)");
  EXPECT_EQ(errors[4], "give: a capability of operator 0 used on operator 1's output");
  EXPECT_EQ(errors[5], "give: a dropped capability");
}

// One worker: a record at time 3 reaches `hold`, which retains its capability and drops
// it in its kDropAt'th activation. The probe after `hold` sees the frontier at 3 until
// then and past it (the dataflow complete) in the very next round: the drop is what
// releases the time, and it does so at once.
TEST(FlowCapabilities, ADroppedCapabilityReleasesItsTimeInTheNextRound) {
  constexpr int kDropAt = 25;
  int rounds = 0, dropped_at = -1, retained_at = -1;
  std::vector<std::pair<int, Time>> advances;  // (round, new frontier) seen by the probe
  run_dataflow(1, [&](Worker& w) {
    auto s = source<uint64_t>(w, "one", [](Capability& cap, Output<uint64_t>& out) {
      cap.downgrade(3);
      out.give(cap, 42);
      cap.drop();
    });
    auto held = s.template unary<uint64_t>(
        Pipeline{}, "hold",
        [&, cap = Capability()](Input<uint64_t>& in, Output<uint64_t>&) mutable {
          ++rounds;
          in.for_each([&](const InputCapability& c, std::vector<uint64_t>&) {
            cap = c.retain();
            retained_at = rounds;
          });
          if (cap.valid() && rounds == kDropAt) {
            cap.drop();
            dropped_at = rounds;
          }
        });
    probe(held, "probe", [&](Time, Time now) { advances.emplace_back(rounds, now); });
  });
  ASSERT_GT(retained_at, 0);
  ASSERT_LT(retained_at, kDropAt);
  ASSERT_EQ(dropped_at, kDropAt);
  ASSERT_FALSE(advances.empty());
  // Before the drop the frontier never passed 3; after it, it passed in the next round.
  for (size_t i = 0; i + 1 < advances.size(); ++i) {
    EXPECT_LE(advances[i].second, 3u) << "round " << advances[i].first;
    EXPECT_LE(advances[i].first, kDropAt);
  }
  EXPECT_EQ(advances.back().second, kTimeMax);
  EXPECT_EQ(advances.back().first, kDropAt + 1);
}

}  // namespace
}  // namespace snailtrail::flow
