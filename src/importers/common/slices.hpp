// Intervals on threads (Chrome slices, OpenTelemetry/Jaeger spans) -> worker timelines.
//
// A worker's activities never overlap, but slices nest (a function calling another) and
// sometimes overlap (async work on one thread, concurrent requests in one service). So:
// - slices of one group (thread, service) are packed into lanes: a slice goes on top of a
//   lane whose innermost open slice contains it (and, for spans, is its parent); otherwise
//   on the lowest free lane. Every lane is one worker;
// - a lane's timeline is its innermost open slice at every instant (self time), except
//   during the slice's wait intervals (a child running on another worker), which are
//   `waiting`;
// - between a lane's top-level slices the lane is either idle (`waiting`: a thread of a
//   profiler capture runs nothing) or unrecorded (nothing emitted, the PAG's gap filling
//   decides: a service between two spans may run code nobody traced).
// Shared by the chrome and otel importers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail::importers {

inline constexpr uint32_t kNoSlice = UINT32_MAX;
inline constexpr uint32_t kNoOperator = UINT32_MAX;

struct Slice {
  int64_t start = 0, end = 0;  // ns, end >= start
  uint32_t group = 0;          // slices of one group share its lanes
  uint32_t parent = kNoSlice;  // with require_parent: may nest only directly on this slice
  uint32_t depth = 0;          // tie-break: at equal (start, end) parents go first
  ActivityType type = ActivityType::processing;
  uint32_t op = kNoOperator;
};

struct Lanes {
  std::vector<uint32_t> lane_of;              // per slice: global lane (= worker) index
  std::vector<uint32_t> group_of;             // per lane
  std::vector<uint32_t> index_in_group;       // per lane: 0 for a group's first lane
  std::vector<std::vector<uint32_t>> slices;  // per lane: its slices by (start, -end)
  uint64_t moved = 0;  // slices that overlapped their group's lanes 0..k and went higher
  // The group's first lane, created (empty) if the group has none yet.
  uint32_t first_lane(uint32_t group);
  std::vector<uint32_t> group_first;  // per group, kNoSlice if none yet
};

// require_parent = false: a slice nests on any lane whose open slice contains it (Chrome);
// true: only on the lane where its parent is the innermost open slice (spans).
Lanes assign_lanes(const std::vector<Slice>& slices, uint32_t group_count, bool require_parent);

// What a lane does between its top-level slices.
enum class GapsBetweenSlices { unrecorded, idle };

// Collects events and turns them into a Trace (events sorted by time, then worker).
class EventSink {
 public:
  // Appends the lane timelines. `waits` (optional, per slice, sorted, disjoint, inside the
  // slice) are intervals emitted as `waiting`; so are the gaps between a lane's top-level
  // slices when `gaps` is idle.
  void add_timelines(const std::vector<Slice>& slices, const Lanes& lanes,
                     const std::vector<std::vector<std::pair<int64_t, int64_t>>>* waits,
                     GapsBetweenSlices gaps);
  void add_message(uint32_t from, int64_t send_ts, uint32_t to, int64_t recv_ts,
                   ActivityType type = ActivityType::data_message);
  size_t message_count() const { return next_correlator_; }
  // Moves the events into `trace`, sorted stably by (ts, worker).
  void finish(Trace& trace);

 private:
  void segment(uint32_t worker, int64_t a, int64_t b, ActivityType type, uint32_t op);
  std::vector<Event> events_;
  int64_t next_correlator_ = 0;
};

}  // namespace snailtrail::importers
