// Events as the writers of traces build them (importers, simulator, runtime, benchmark):
// the fields every event has, then each optional field with its presence bit.
//
//   Event e = local_event(worker, ts, ActivityType::processing, EventKind::end);
//   set_operator(e, op);
//   set_records(e, 100);
#pragma once

#include <cstdint>

#include "trace/event.hpp"

namespace snailtrail {

// A start or end of `activity` on `worker`.
inline Event local_event(uint32_t worker, int64_t ts, ActivityType activity, EventKind kind) {
  Event e;
  e.ts = ts;
  e.worker = worker;
  e.activity = activity;
  e.kind = kind;
  return e;
}

// One side of a message: `worker` sends to or receives from `remote`; the two sides
// share `correlator`.
inline Event message_event(uint32_t worker, int64_t ts, ActivityType activity, EventKind kind,
                           uint32_t remote, int64_t correlator) {
  Event e = local_event(worker, ts, activity, kind);
  e.remote = remote;
  e.correlator = correlator;
  e.flags = kHasRemote | kHasCorrelator;
  return e;
}

inline void set_operator(Event& e, uint32_t op) {
  e.op = op;
  e.flags |= kHasOperator;
}

inline void set_records(Event& e, uint32_t records) {
  e.records = records;
  e.flags |= kHasRecords;
}

}  // namespace snailtrail
