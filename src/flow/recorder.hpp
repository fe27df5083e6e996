// Native instrumentation: each worker appends SnailTrail events (trace/event.hpp) to its
// own buffer, no locks; the runtime merges the buffers into a Trace at the end.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "trace/make_event.hpp"

namespace snailtrail::flow {

class Recorder {
 public:
  Recorder(uint32_t worker, bool on, std::chrono::steady_clock::time_point origin)
      : worker_(worker), on_(on), origin_(origin) {
    if (on_) events_.reserve(1 << 16);
  }
  bool on() const { return on_; }
  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                origin_)
        .count();
  }
  void activity(int64_t ts, ActivityType a, EventKind k, uint32_t op, bool has_op,
                int64_t records = -1) {
    Event e = local_event(worker_, ts, a, k);
    if (has_op) set_operator(e, op);
    if (records >= 0) set_records(e, static_cast<uint32_t>(records));
    events_.push_back(e);
  }
  void message(int64_t ts, ActivityType a, EventKind k, uint32_t remote, int64_t correlator,
               int64_t records = -1) {
    Event e = message_event(worker_, ts, a, k, remote, correlator);
    if (records >= 0) set_records(e, static_cast<uint32_t>(records));
    events_.push_back(e);
  }
  // Part [t0, t1) of the running operator activation was activity `a` (e.g. a state's
  // serialization inside an operator): the operator's processing span is split around it
  // when it is traced (stream.hpp), so that activities never overlap.
  struct Carved {
    int64_t t0, t1;
    ActivityType a;
    int64_t records;
  };
  void carve(int64_t t0, int64_t t1, ActivityType a, int64_t records = -1) {
    if (on_) carved_.push_back({t0, t1, a, records});
  }
  std::vector<Carved>& carved() { return carved_; }
  // Correlators unique over all workers: worker in the high bits. Taken when a message
  // enters the receiver's ring, so that each (sender, receiver) pair sees them increase in
  // the order of its receipts too (TraceFacts::correlators_increasing).
  int64_t next_correlator() { return static_cast<int64_t>((uint64_t{worker_} + 1) << 40 | ++seq_); }
  // The moment a message of this (sending) worker enters a receiver's ring: its receipt's
  // time. Strictly increasing per sender, so receipts of one pair keep their order.
  int64_t next_arrival() {
    int64_t t = now();
    if (t <= last_arrival_) t = last_arrival_ + 1;
    return last_arrival_ = t;
  }
  // The receiver's side: records a receipt at the message's arrival (a message queued
  // behind a busy receiver waited in the receiver's processing, not in communication).
  // A live sink's flush holds back the events from the earliest arrival not yet taken
  // (runtime.cpp's drive()), so a receipt is before what was handed out (floor) only when
  // the flush's hold was capped: then it is stamped at the floor and counted (clamped()).
  void receipt(int64_t arrived, ActivityType a, uint32_t from, int64_t correlator,
               int64_t records = -1) {
    if (arrived >= 0 && arrived < floor_) ++clamped_;
    const int64_t ts = arrived >= 0 ? std::max(arrived, floor_) : now();
    first_receipt_ = std::min(first_receipt_, ts);
    message(ts, a, EventKind::recv, from, correlator, records);
  }
  // Earliest receipt recorded since the last call (INT64_MAX: none); a wait ends there.
  int64_t take_first_receipt() {
    const int64_t t = first_receipt_;
    first_receipt_ = INT64_MAX;
    return t;
  }
  // Events before `ts` were handed to a live sink: later receipts are not stamped before.
  void set_floor(int64_t ts) { floor_ = std::max(floor_, ts); }
  int64_t floor() const { return floor_; }
  // Receipts stamped at the floor instead of their (earlier) arrival.
  uint64_t clamped() const { return clamped_; }
  std::vector<Event>& events() { return events_; }

 private:
  uint32_t worker_;
  bool on_;
  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> events_;
  std::vector<Carved> carved_;
  uint64_t seq_ = 0;
  int64_t last_arrival_ = INT64_MIN;
  int64_t first_receipt_ = INT64_MAX;
  int64_t floor_ = INT64_MIN;
  uint64_t clamped_ = 0;
};

}  // namespace snailtrail::flow
