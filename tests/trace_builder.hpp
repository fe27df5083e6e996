// Small helpers to write traces in tests.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail::testing {

struct TraceBuilder {
  Trace trace;

  TraceBuilder& activity(uint32_t worker, ActivityType type, int64_t start, int64_t end,
                         uint32_t op = UINT32_MAX) {
    Event s;
    s.ts = start;
    s.worker = worker;
    s.activity = type;
    s.kind = EventKind::start;
    if (op != UINT32_MAX) {
      s.op = op;
      s.flags |= kHasOperator;
    }
    Event e = s;
    e.ts = end;
    e.kind = EventKind::end;
    trace.events.push_back(s);
    trace.events.push_back(e);
    return *this;
  }
  TraceBuilder& message(uint32_t from, int64_t send_ts, uint32_t to, int64_t recv_ts,
                        int64_t correlator, ActivityType type = ActivityType::data_message) {
    Event s;
    s.ts = send_ts;
    s.worker = from;
    s.remote = to;
    s.correlator = correlator;
    s.activity = type;
    s.kind = EventKind::send;
    s.flags = kHasCorrelator | kHasRemote;
    Event r = s;
    r.ts = recv_ts;
    r.worker = to;
    r.remote = from;
    r.kind = EventKind::recv;
    trace.events.push_back(s);
    trace.events.push_back(r);
    return *this;
  }
  TraceBuilder& event(uint32_t worker, int64_t ts, ActivityType type, EventKind kind) {
    Event e;
    e.ts = ts;
    e.worker = worker;
    e.activity = type;
    e.kind = kind;
    trace.events.push_back(e);
    return *this;
  }
  // Per-worker order is required; tests build events in any order, so sort stably.
  Trace build() {
    Trace t = trace;
    std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
      return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
    });
    return t;
  }
};

}  // namespace snailtrail::testing
