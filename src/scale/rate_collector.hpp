// DS2's metrics from trace events (thesis §4.3.1): per policy interval and operator
// instance, useful time (deserialization + processing + serialization), records
// processed and pushed; plus the dataflow's edges, from the operators at both ends of
// data messages. Works on any importer's trace (the `records` field) and on a live
// event stream: `serve` feeds each event with add() and calls advance() with its
// watermark to get the intervals that closed.
//
//   RateCollector c(10'000'000'000);        // 10 s policy interval
//   for (const Event& e : trace.events) c.add(e);
//   for (IntervalMetrics& m : c.finish()) { ... m.instances ... }
//   Topology t = c.topology([&](uint32_t op) { return trace.operator_name(op); });
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scale/policy.hpp"
#include "scale/topology.hpp"
#include "trace/event.hpp"

namespace snailtrail::scale {

struct IntervalMetrics {
  int64_t start_ns = 0, end_ns = 0;
  // `op` is the trace's operator id, `instance` the worker's rank among the operator's
  // workers (in order of first appearance), `worker` the decimal worker id.
  std::vector<InstanceMetrics> instances;
};

class RateCollector {
 public:
  // Intervals are [origin + k * interval, origin + (k + 1) * interval).
  explicit RateCollector(int64_t interval_ns, int64_t origin_ns = 0);
  RateCollector(const RateCollector&) = delete;
  RateCollector& operator=(const RateCollector&) = delete;
  RateCollector(RateCollector&&) = default;
  RateCollector& operator=(RateCollector&&) = default;

  // One event. Each worker's events must come in time order; workers may interleave in
  // any way. Events before the origin or in an interval already closed are counted in
  // late_events() and otherwise ignored.
  void add(const Event& e);

  // Closes every interval that ends at or before `watermark_ns` (no event before it is
  // still to come) and returns them in time order. Intervals in which nothing was
  // recorded and no activity was running are skipped.
  std::vector<IntervalMetrics> advance(int64_t watermark_ns);
  // Closes all intervals up to the last event; the last one ends at the last event.
  std::vector<IntervalMetrics> finish();

  // The operators seen (ids: decimal operator ids; names from `name`, parallelism: the
  // workers that ran each one) and the edges data messages revealed.
  Topology topology(const std::function<std::string(uint32_t)>& name) const;

  // The earliest start of an activity still open on `worker` (its records are counted at
  // its end, split over the intervals it spans), INT64_MAX if none: an interval closed
  // before such an activity ends gets its useful time but not its records.
  int64_t open_since(uint32_t worker) const;

  uint64_t late_events() const { return late_; }
  uint64_t unmatched_ends() const { return unmatched_ends_; }  // end without its start
  // Activities spanning more than kMaxSpan intervals (corrupt timestamps): ignored.
  uint64_t overlong_activities() const { return overlong_; }
  static constexpr int64_t kMaxSpan = 100'000;

 private:
  struct Acc {
    int64_t useful_ns = 0;
    double processed = 0, input = 0, serialized = 0, sent = 0;
  };
  struct WorkerState {
    bool open = false;  // a deserialization, processing or serialization in progress
    ActivityType type = ActivityType::unknown;
    uint32_t op = 0;
    int64_t since = 0;                               // start of the part not yet credited
    ActivityType last_type = ActivityType::unknown;  // of the latest start event
    int64_t last_start = 0;
    bool last_open = false;  // the latest start has no end yet
    bool has_op = false;
    uint32_t last_op = 0;                               // operator of the latest activity with one
    std::vector<std::pair<uint32_t, int64_t>> inbound;  // received, consumer op pending
  };
  struct Link {
    int64_t src = -1, dst = -1;  // operators at both ends, -1 unknown yet
  };

  int64_t interval_of(int64_t ts) const;
  int64_t interval_start(int64_t k) const;  // saturating at the int64 range
  // Closes intervals below `limit` (skipping idle gaps); `end_cap` caps the last one's end.
  void close_until(int64_t limit, int64_t end_cap, std::vector<IntervalMetrics>& out);
  Acc& acc(int64_t k, uint32_t op, uint32_t worker);
  void credit(uint32_t op, uint32_t worker, int64_t from, int64_t to);
  // Records of an activity [from, to], split over its intervals in proportion to time
  // (parts in closed intervals go to the first open one).
  void count(double Acc::*field, uint32_t op, uint32_t worker, int64_t from, int64_t to,
             double records);
  using MessageKey = std::pair<uint32_t, int64_t>;  // (sender, correlator)
  void link(const MessageKey& m, int64_t src, int64_t dst);
  IntervalMetrics close(int64_t k, int64_t end_ns);

  int64_t interval_ns_, origin_ns_;
  int64_t closed_ = 0;  // intervals below this index are closed
  int64_t last_ts_ = INT64_MIN;
  std::map<int64_t, std::unordered_map<uint64_t, Acc>> open_;  // by interval index
  std::unordered_map<uint32_t, WorkerState> workers_;
  // workers_[last_worker_id_]: events come in runs per worker. Map nodes never move (also
  // when the collector is moved); copying is deleted so the pointer never dangles.
  uint32_t last_worker_id_ = 0;
  WorkerState* last_worker_ = nullptr;
  std::unordered_map<uint64_t, uint32_t> instance_of_;  // (op, worker) -> rank
  std::unordered_map<uint32_t, uint32_t> instances_per_op_;
  std::map<MessageKey, Link> links_;  // messages with one end known
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::unordered_set<uint64_t> edge_set_;  // edges_ as (from << 32 | to), for O(1) lookups
  uint64_t late_ = 0, unmatched_ends_ = 0, overlong_ = 0;
};

// Topology and rates of one interval for the policy: instances mapped to topology
// operators by id (the decimal operator id), parallelism = instances seen per operator.
struct IntervalRates {
  std::vector<InstanceRates> instances;
  std::vector<uint32_t> parallelism;
};
IntervalRates interval_rates(const IntervalMetrics& m, const Topology& topology);
// The same when the instances' `op` are already topology indices (out of range: skipped).
IntervalRates interval_rates_by_index(const IntervalMetrics& m, const Topology& topology);

}  // namespace snailtrail::scale
