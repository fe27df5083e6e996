// The critical path of one thread over a time range (docs/KERNEL.md "Critical path"):
// the bounded backward algorithm of Giraldeau et al. (seed 002; Trace Compass's
// CriticalPathAlgorithmBounded), over the thread-state model.
//
// From the end of the range backwards, each interval of the thread is appended as it is
// (running, preempted, or blocked on a timer / device / network / interrupt), except a
// blocked interval that another thread woke: it is replaced by the waker's own critical
// path over that interval (recursively, bounded by the interval). A wait that a packet
// ended, when the packet's sending thread is known (model.hpp), is `network` from the
// send on and the sender's own critical path before it. Walking back past a
// thread's first interval follows its fork to the parent; time with no information is
// `unknown`. The result partitions [from, to] into segments in time order:
//   Σ (end - start) = to - from, segments contiguous, adjacent ones never equal.
// Pointwise, the segment covering instant x names the thread reached from the target by
// following, at x, wakers of blocked intervals (and forks back to parents).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernel/model.hpp"

namespace snailtrail::kernel {

enum class PathState : uint8_t {
  running,
  preempted,
  timer,
  block_device,
  network,
  interrupt,
  blocked,  // a wait whose waker is not known (no wake-up seen)
  unknown,  // no information (before a thread's first event, after its exit)
};
inline constexpr int kPathStateCount = 8;
std::string_view name_of(PathState s);
// The state an interval of the model shows as (a wait by what ended it; a wait another
// thread ended, or whose end was not seen, is `blocked`).
PathState path_state(const Interval& iv);

struct PathSegment {
  int64_t start = 0;
  int64_t end = 0;
  int32_t thread = -1;  // thread index in the model
  PathState state = PathState::unknown;
  IrqContext irq;  // a wait ended from an interrupt: which one (model.hpp)
};

struct CriticalPathResult {
  std::vector<PathSegment> path;
  uint64_t waker_hops = 0;    // blocked intervals replaced by a waker's path
  uint64_t packet_hops = 0;   // packet waits followed to the sending thread
  uint64_t inconsistent = 0;  // wakers found not running at the wake-up (kept as blocked)
};

// The critical path of `thread` over [from, to] (clamped to nothing if to <= from).
// Iterative (an explicit stack): deep wake-up chains cannot overflow the call stack.
CriticalPathResult critical_path(const KernelModel& model, int32_t thread, int64_t from,
                                 int64_t to);

}  // namespace snailtrail::kernel
