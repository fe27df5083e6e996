// The transport's clock under tracing (runtime.cpp trace_transport_codec): the
// communication thread of an MPI run delivers other ranks' frames from start() on, before
// this process's recorders exist. A delivery stamped then must say "no time yet" (-1: the
// receipt takes the receiver's time), not a time read off a recorder not yet built (a
// time since boot once reached a trace under mpirun). A transport of one process that
// reads the clock inside start(), as a delivery at that moment would, makes the race
// deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "flow/channel.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

class ClockProbe : public Transport {
 public:
  uint32_t procs() const override { return 1; }
  uint32_t rank() const override { return 0; }
  void send(uint32_t, std::vector<char>&&) override {}
  void start() override {
    ASSERT_TRUE(now) << "tracing sets the transport's clock before start()";
    at_start = now();
  }
  void finish() override { at_finish = now ? now() : -2; }
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override { return mine; }
  [[noreturn]] void abort(int) override { std::abort(); }  // never called here
  int64_t at_start = -2, at_finish = -2;
};

// A traced 2-worker keycount over `transport`.
RunConfig traced_keycount(Transport& transport) {
  RunConfig cfg;
  cfg.job = "keycount";
  cfg.workers = 2;
  cfg.records = 20000;
  cfg.keys = 100;
  cfg.trace = true;
  cfg.transport = &transport;
  return cfg;
}

TEST(TransportClock, NoTimeBeforeTheRecordersExistAndTheRunsTimeAfter) {
  ClockProbe probe;
  const RunResult r = run_job(traced_keycount(probe));
  EXPECT_EQ(probe.at_start, -1);
  // After the run: the time since the run's origin, as the recorders stamp events.
  ASSERT_FALSE(r.events.empty());
  int64_t last = 0;
  for (const Event& e : r.events) {
    EXPECT_GE(e.ts, 0);
    last = std::max(last, e.ts);
  }
  EXPECT_GE(probe.at_finish, last);
  EXPECT_LT(probe.at_finish, last + int64_t{60'000'000'000});
}

// A delivery before the run's origin existed (stamped inside start()) converts to the run's
// time it happened at, not to when the receiver took it: before every later delivery, so
// that a pair's receipts keep the order of their correlators (an early delivery stamped
// at its dequeue once broke it, under mpirun on a loaded machine).
TEST(TransportClock, DeliveriesBeforeTheOriginKeepTheirTime) {
  struct Early : ClockProbe {
    void start() override {
      ClockProbe::start();
      early = steady_now_ns();  // a delivery now
    }
    void finish() override {
      ClockProbe::finish();
      late = steady_now_ns();
      ASSERT_TRUE(since_origin);
      early_run = since_origin(early);
      late_run = since_origin(late);
    }
    int64_t early = 0, late = 0, early_run = -2, late_run = -2;
  } probe;
  const RunResult r = run_job(traced_keycount(probe));
  // The origin is taken right after start(): the early delivery is at it (0) or just after.
  EXPECT_GE(probe.early_run, 0);
  EXPECT_LT(probe.early_run, 1'000'000'000);
  EXPECT_GT(probe.late_run, probe.early_run);
  if (probe.early_run > 0) {
    EXPECT_EQ(probe.late_run - probe.early_run, probe.late - probe.early);
  }
  int64_t last = 0;
  for (const Event& e : r.events) last = std::max(last, e.ts);
  EXPECT_GE(probe.late_run, last);
  EXPECT_EQ(probe.since_origin(-1), -1);  // no stamp stays no stamp
}

}  // namespace
}  // namespace snailtrail::flow
