// Collects the events a simulation emits and turns them into a Trace in global time
// order. Each worker writes its own activities and sends in time order; receives are
// kept apart because a message may arrive while the worker's current step, already
// written up to its end, is in progress. finish() merges everything.
//
//   Recorder rec;
//   uint32_t w = rec.add_worker("count-0");
//   rec.activity(w, ActivityType::processing, 0, 500, /*op=*/2, /*records=*/100);
//   int64_t c = rec.send(w, ActivityType::data_message, 500, /*to=*/3);
//   rec.recv(3, ActivityType::data_message, 600, /*from=*/w, c);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail::sim {

inline constexpr uint32_t kNoOp = UINT32_MAX;

class Recorder {
 public:
  uint32_t add_worker(std::string name);
  // The worker with this name; added if there is none (a redeployed instance keeps its
  // worker).
  uint32_t worker(const std::string& name);
  void name_operator(uint32_t op, std::string name);

  // A worker-local activity [start, end]; nothing is written when end <= start.
  // `records` >= 0 is attached to the end event.
  void activity(uint32_t worker, ActivityType type, int64_t start, int64_t end, uint32_t op = kNoOp,
                int64_t records = -1);
  // An activity whose end is not known yet (e.g. waiting): open() writes its start,
  // close() its end. One open activity per worker; one still open when the trace is
  // finished is dropped (it never ended within the run).
  void open(uint32_t worker, ActivityType type, int64_t start, uint32_t op = kNoOp);
  void close(uint32_t worker, int64_t end);

  // Writes a send and returns its correlator (unique in the trace).
  int64_t send(uint32_t worker, ActivityType type, int64_t ts, uint32_t to, int64_t records = -1);
  void recv(uint32_t worker, ActivityType type, int64_t ts, uint32_t from, int64_t correlator,
            int64_t records = -1);

  // A job halted at `t` for a redeployment (the simulator's reconfiguration): messages
  // whose correlators are in `in_flight` are dropped (their sends), waiting still open is
  // dropped, and activities are cut at `t` (those that start at or after it dropped).
  // Only events written since the previous halt are touched.
  void halt(int64_t t, const std::vector<int64_t>& in_flight);

  // Forgets what lies entirely before `t`, for runs that need only the end of their trace
  // (bounded memory): per worker the longest prefix of activities and sends before `t`
  // with no activity open across its end, and the receives before `t`. Messages whose
  // send is forgotten are unmatched receives in what is kept.
  void discard_before(int64_t t);

  // Off: nothing is kept (the simulator runs only for its counters; send() still returns
  // fresh correlators). On by default.
  void set_recording(bool on) { recording_ = on; }

  size_t worker_count() const { return workers_.size(); }
  uint64_t event_count() const { return events_; }

  // All events up to `cutoff` in (ts, worker) order, with worker and operator names.
  // The trace ends cleanly at the cutoff: messages received after it are dropped (send
  // and receive), activities still running are cut at it, except waiting, which is
  // dropped (it did not end with a receive within the trace). Leaves the recorder empty.
  Trace finish(int64_t cutoff = INT64_MAX);

 private:
  void cut(int64_t cutoff);

  struct Worker {
    std::string name;
    std::vector<Event> local;  // activities and sends, in time order
    std::vector<Event> recvs;  // receives, in time order
    size_t open = SIZE_MAX;    // index in `local` of an open activity's start
    size_t halted = 0;         // `local` before this index precedes the last halt
  };
  std::vector<Worker> workers_;
  std::unordered_map<uint32_t, std::string> operator_names_;
  std::unordered_map<std::string, uint32_t> by_name_;
  bool recording_ = true;
  int64_t next_correlator_ = 1;
  uint64_t events_ = 0;
};

}  // namespace snailtrail::sim
