// The "Critical flow" view of kernel traces in `snailtrail report` (docs/REPORT.md,
// "Critical flow"), as Trace Compass users know it: per-thread state lanes over time, and
// a thread's critical path (kernel/critical_path.hpp, what `kernel critical-path` prints)
// drawn across them, with an arrow where the path moves from one thread to another.
//
// Bounded: the paths of at most `paths` threads are embedded (the thread picker), at most
// `lanes` threads get a lane, a lane's intervals are merged (adjacent ones of one state)
// and capped, and a path's segments are capped; everything left out is counted.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/critical_path.hpp"
#include "kernel/model.hpp"

namespace snailtrail::report {

struct CriticalFlowOptions {
  std::string source;
  std::string format;   // the reader: "perf-sched" or "lttng"
  int32_t thread = -1;  // model index of the thread the page opens on; -1: the default
  // --from / --to: the view's range, and every path's (as `kernel critical-path` takes
  // them); without, the view is the whole trace and a path its thread's first to last event.
  bool from_given = false, to_given = false;
  int64_t from = 0, to = 0;
  size_t paths = 20;                // threads in the picker (their paths embedded)
  size_t lanes = 48;                // threads with a lane
  size_t lane_intervals = 100'000;  // intervals drawn over all lanes
  size_t path_segments = 5'000;     // segments embedded per path (the first ones in time)
};

struct FlowInterval {
  int64_t start = 0, end = 0;
  kernel::PathState state = kernel::PathState::unknown;
};

struct FlowThread {
  int32_t thread = -1;                                       // model index
  int64_t running_ns = 0, preempted_ns = 0, blocked_ns = 0;  // within the view's range
  bool lane = false;                    // has a lane (its intervals are embedded)
  std::vector<FlowInterval> intervals;  // merged, clipped to the range, the longest kept
  uint64_t intervals_merged = 0;        // after merging, before the cap
};

struct FlowHop {
  int64_t at = 0;
  uint32_t from = 0, to = 0;  // indices in CriticalFlow::threads
};

struct FlowPath {
  uint32_t thread = 0;  // index in CriticalFlow::threads
  int64_t from = 0, to = 0;
  kernel::CriticalPathResult result;  // the whole path
  size_t kept = 0;                    // segments embedded: the first `kept` of the path
  std::vector<FlowHop> hops;          // between the embedded segments
  uint64_t hops_total = 0;            // over the whole path
  // Per thread on the path (index in threads): time per PathState, largest total first.
  std::vector<std::pair<uint32_t, std::array<int64_t, kernel::kPathStateCount>>> per_thread;
};

struct CriticalFlow {
  int64_t from = 0, to = 0;         // the view's time range
  std::vector<FlowThread> threads;  // lanes first (the initial path's threads first), then
                                    // threads only named by a path
  std::vector<FlowPath> paths;      // the picker: most running time first
  size_t initial = 0;               // index in paths
  uint64_t candidates = 0;          // threads with traced time in the range
  uint64_t lanes_left_out = 0;      // threads (traced or on a path) without a lane
};

// Throws std::invalid_argument when the range holds no thread's traced time.
CriticalFlow build_critical_flow(const kernel::KernelModel& m, const CriticalFlowOptions& o);

// The page's data (schema: docs/REPORT.md, "Critical flow"); times relative to flow.from.
std::string critical_flow_json(const kernel::KernelModel& m, const CriticalFlow& flow,
                               const CriticalFlowOptions& o);
// The self-contained page of critical_flow_json().
std::string render_critical_flow_html(const std::string& json);

}  // namespace snailtrail::report
