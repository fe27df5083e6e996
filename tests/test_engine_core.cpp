// The pieces the simulator's engines share (sim/engine_core.hpp) and the event builders
// of trace/make_event.hpp, against hand-written expectations.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sim/engine_core.hpp"
#include "sim/source_curve.hpp"
#include "trace/make_event.hpp"

namespace snailtrail::sim::test_engine_core {
namespace {

TEST(EngineCore, AgendaHandsEachKindToItsHandlerInTimeThenPushOrder) {
  EventQueue q;
  std::string log;
  q.push(30, 1, 7);
  q.push(10, 0, 1);
  q.push(10, 2, 2);  // same time as the previous: pops after it
  run_agenda(
      q,
      [&](uint32_t arg, int64_t t) {
        log += "a" + std::to_string(arg) + "@" + std::to_string(t) + " ";
        if (t == 10) q.push(20, 1, 9);  // a handler schedules what follows
      },
      [&](uint32_t arg, int64_t t) {
        log += "b" + std::to_string(arg) + "@" + std::to_string(t) + " ";
      },
      [&](uint32_t arg, int64_t t) {
        log += "c" + std::to_string(arg) + "@" + std::to_string(t) + " ";
      });
  EXPECT_EQ(log, "a1@10 c2@10 b9@20 b7@30 ");
  EXPECT_TRUE(q.empty());
}

TEST(EngineCore, AgendaBeforeLeavesLaterEventsQueued) {
  EventQueue q;
  std::vector<int64_t> seen;
  for (int64_t t : {5, 15, 10, 20}) q.push(t, 0, 0);
  auto h = [&](uint32_t, int64_t t) { seen.push_back(t); };
  run_agenda_before(q, 15, h);
  EXPECT_EQ(seen, (std::vector<int64_t>{5, 10}));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q.top().time, 15);
}

TEST(EngineCore, MessageSlotsReuseTheLastFreedSlot) {
  MessageSlots<int> slots;
  EXPECT_EQ(slots.put(10), 0u);
  EXPECT_EQ(slots.put(11), 1u);
  EXPECT_EQ(slots.put(12), 2u);
  EXPECT_EQ(slots.take(0), 10);
  slots.release(2);
  EXPECT_EQ(slots.put(20), 2u);  // last freed first
  EXPECT_EQ(slots.put(21), 0u);
  EXPECT_EQ(slots.put(22), 3u);  // no free slot: a new one
  EXPECT_EQ(slots[0], 21);
  EXPECT_EQ(slots[1], 11);
  EXPECT_EQ(slots[2], 20);
  EXPECT_EQ(slots[3], 22);
}

TEST(EngineCore, HandOverMovesInstancesOperatorByOperator) {
  std::vector<std::vector<InstanceTruth>> stats(2);
  for (uint32_t op = 0; op < 2; ++op)
    for (uint32_t k = 0; k < 2; ++k) {
      InstanceTruth x;
      x.op = "op" + std::to_string(op);
      x.instance = k;
      stats[op].push_back(x);
    }
  Truth truth;
  hand_over(stats, truth);
  ASSERT_EQ(truth.instances.size(), 4u);
  EXPECT_EQ(truth.instances[1].op, "op0");
  EXPECT_EQ(truth.instances[1].instance, 1u);
  EXPECT_EQ(truth.instances[2].op, "op1");
  EXPECT_EQ(truth.instances[2].instance, 0u);
}

TEST(EngineCore, SourceCurveIntervalsCountWholeRecords) {
  OperatorSpec op;
  op.rate = 1500;  // records/s: 1.5 per ms
  const SourceCurve c(op, 1);
  // [0,1) ms: 1.5 -> 1 whole record; [1,2) ms: floor(3) - floor(1.5) = 2.
  EXPECT_EQ(c.in_interval(0, 1'000'000), 1u);
  EXPECT_EQ(c.in_interval(1, 1'000'000), 2u);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < 1000; ++i) sum += c.in_interval(i, 1'000'000);
  EXPECT_EQ(sum, 1500u);  // a second's records, none lost or counted twice
}

}  // namespace
}  // namespace snailtrail::sim::test_engine_core

namespace snailtrail::test_engine_core {
namespace {

TEST(MakeEvent, LocalEventHasOnlyTheOptionalFieldsSet) {
  Event e = local_event(3, 100, ActivityType::processing, EventKind::end);
  EXPECT_EQ(e.ts, 100);
  EXPECT_EQ(e.worker, 3u);
  EXPECT_EQ(e.activity, ActivityType::processing);
  EXPECT_EQ(e.kind, EventKind::end);
  EXPECT_EQ(e.flags, 0);
  set_operator(e, 5);
  set_records(e, 42);
  EXPECT_EQ(e.op, 5u);
  EXPECT_EQ(e.records, 42u);
  EXPECT_EQ(e.flags, kHasOperator | kHasRecords);
  EXPECT_EQ(e.reserved, 0u);
}

TEST(MakeEvent, MessageEventEqualsTheFieldByFieldRecord) {
  Event want;
  want.ts = 7;
  want.worker = 1;
  want.activity = ActivityType::data_message;
  want.kind = EventKind::send;
  want.remote = 2;
  want.correlator = 99;
  want.flags = kHasRemote | kHasCorrelator;
  const Event got = message_event(1, 7, ActivityType::data_message, EventKind::send, 2, 99);
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(Event)), 0);
}

}  // namespace
}  // namespace snailtrail::test_engine_core
