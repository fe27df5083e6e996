// The transport's clock under tracing (runtime.cpp trace_transport_codec): the
// communication thread of an MPI run delivers other ranks' frames from start() on, before
// this process's recorders exist. A delivery stamped then must say "no time yet" (-1: the
// receipt takes the receiver's time), not a time read off a recorder not yet built (a
// time since boot once reached a trace under mpirun). A transport of one process that
// reads the clock inside start(), as a delivery at that moment would, makes the race
// deterministic.
#include <gtest/gtest.h>

#include <algorithm>

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
  int64_t at_start = -2, at_finish = -2;
};

TEST(TransportClock, NoTimeBeforeTheRecordersExistAndTheRunsTimeAfter) {
  ClockProbe probe;
  RunConfig cfg;
  cfg.job = "keycount";
  cfg.workers = 2;
  cfg.records = 20000;
  cfg.keys = 100;
  cfg.trace = true;
  cfg.transport = &probe;
  const RunResult r = run_job(cfg);
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

}  // namespace
}  // namespace snailtrail::flow
