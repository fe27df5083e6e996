// A live stream of n distinct (worker, operator) instances linked by data messages in a
// chain (worker w sends to w + 1), fed to a LiveRates. Used by the test of its content
// (tests/test_scale.cpp) and the benchmark of its shutdown time (bench/bench_scale.cpp,
// which includes it from tests/): closing it was quadratic in the operators once (issue
// 25 item 5).
#pragma once

#include <cstdint>

#include "serve/live_rates.hpp"
#include "trace/trace.hpp"

namespace snailtrail::bench {

// Worker w starts processing its own operator w at ts.
inline Event operator_start(uint32_t w, int64_t ts) {
  Event e;
  e.worker = w;
  e.op = w;
  e.flags = kHasOperator;
  e.activity = ActivityType::processing;
  e.kind = EventKind::start;
  e.ts = ts;
  return e;
}

inline void add_operator_chain(serve::LiveRates& live, uint32_t n) {
  for (uint32_t w = 0; w < n; ++w) {
    Event e = operator_start(w, 1000 + w);
    live.add(e);
    // A data message to the next worker (its operator is known when it starts).
    Event send = e;
    send.kind = EventKind::send;
    send.activity = ActivityType::data_message;
    send.flags = kHasCorrelator | kHasRemote;
    send.correlator = w;
    send.remote = w + 1;
    live.add(send);
    e.kind = EventKind::end;
    e.ts = 500'000'000 + w;
    e.records = 7;
    e.flags |= kHasRecords;
    live.add(e);
  }
  for (uint32_t w = 1; w < n; ++w) {  // receives, then the receiver's next activity
    Event recv;
    recv.worker = w;
    recv.kind = EventKind::recv;
    recv.activity = ActivityType::data_message;
    recv.flags = kHasCorrelator | kHasRemote;
    recv.correlator = w - 1;
    recv.remote = w - 1;
    recv.ts = 600'000'000 + w;
    live.add(recv);
    live.add(operator_start(w, 600'000'001 + w));
  }
}

}  // namespace snailtrail::bench
