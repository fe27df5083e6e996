// Bounded backward critical path over the thread-state model (critical_path.hpp).
#include "kernel/critical_path.hpp"

#include <algorithm>

namespace snailtrail::kernel {

std::string_view name_of(PathState s) {
  switch (s) {
    case PathState::running:
      return "running";
    case PathState::preempted:
      return "preempted";
    case PathState::timer:
      return "timer";
    case PathState::block_device:
      return "block_device";
    case PathState::network:
      return "network";
    case PathState::interrupt:
      return "interrupt";
    case PathState::blocked:
      return "blocked";
    case PathState::unknown:
      return "unknown";
  }
  return "?";
}

PathState path_state(const Interval& iv) {
  switch (iv.state) {
    case ThreadState::running:
      return PathState::running;
    case ThreadState::preempted:
      return PathState::preempted;
    case ThreadState::blocked:
      break;
  }
  switch (iv.cause) {
    case WakeCause::timer:
      return PathState::timer;
    case WakeCause::block_device:
      return PathState::block_device;
    case WakeCause::network:
      return PathState::network;
    case WakeCause::interrupt:
      return PathState::interrupt;
    case WakeCause::none:
    case WakeCause::thread:
      return PathState::blocked;
  }
  return PathState::blocked;
}

namespace {

struct Frame {
  int32_t thread;
  int64_t lo;  // the frame covers [lo, t], walking t down to lo
  int64_t t;
  bool first;  // t is a wake-up (or fork) time: the thread must be running just before it
};

// The backward walk: a stack of frames, each a thread's time range walked from its end
// down to its start. A wait woken by a thread (or by a packet a thread sent) pushes the
// waker's frame over the wait's range; before a thread's history its parent takes over
// at the fork. Segments are emitted backwards and reversed at the end.
class PathWalker {
 public:
  PathWalker(const KernelModel& model, CriticalPathResult& r) : model_(model), r_(r) {}

  void walk(int32_t target, int64_t from, int64_t to) {
    stack_.push_back({target, from, to, false});
    // Each step emits a segment, pushes or pops a frame, or hops to a parent: on a
    // consistent model far fewer than this; the bound only stops a corrupt one.
    uint64_t budget = 16;
    for (const Thread& th : model_.threads) budget += 8 * (th.intervals.size() + 1);
    while (!stack_.empty()) {
      if (budget-- == 0) {
        ++r_.inconsistent;
        const int64_t lo = stack_.front().lo, t = stack_.back().t;
        emit(target, lo, t, PathState::unknown);
        break;
      }
      Frame& f = stack_.back();
      if (f.t <= f.lo) {
        stack_.pop_back();
        continue;
      }
      const auto& ivs = model_.threads[f.thread].intervals;
      // The interval with start < t <= end, if any.
      auto it = std::lower_bound(ivs.begin(), ivs.end(), f.t,
                                 [](const Interval& iv, int64_t t) { return iv.start < t; });
      if (it == ivs.begin())
        before_history(f);
      else
        step_back(f, *(it - 1));
    }
    std::reverse(r_.path.begin(), r_.path.end());
  }

 private:
  void emit(int32_t thread, int64_t s, int64_t e, PathState st, IrqContext irq = {}) {
    std::vector<PathSegment>& out = r_.path;
    if (e <= s) return;
    if (!out.empty() && out.back().start == e && out.back().thread == thread &&
        out.back().state == st && out.back().irq == irq) {
      out.back().start = s;
      return;
    }
    out.push_back({s, e, thread, st, irq});
  }

  // Before the thread's history: follow its fork back to the parent.
  void before_history(Frame& f) {
    const Thread& th = model_.threads[f.thread];
    if (th.parent >= 0 && th.birth > INT64_MIN) {
      if (f.t > th.birth) {
        const int64_t s = std::max(f.lo, th.birth);
        emit(f.thread, s, f.t, PathState::unknown);
        f.t = s;
        f.first = false;
        return;
      }
      const Thread& parent = model_.threads[th.parent];
      if (parent.birth == INT64_MIN || parent.birth < th.birth) {
        f.first = f.t == th.birth;  // the parent runs at the fork, not necessarily before
        f.thread = th.parent;
        return;
      }
    }
    emit(f.thread, f.lo, f.t, PathState::unknown);
    f.t = f.lo;
  }

  // Through the interval `iv` ending at or after f.t. May push a frame (invalidating f).
  void step_back(Frame& f, const Interval& iv) {
    if (iv.end < f.t) {  // a gap after this interval (the thread had exited)
      const int64_t s = std::max(f.lo, iv.end);
      emit(f.thread, s, f.t, PathState::unknown);
      f.t = s;
      f.first = false;
      return;
    }
    const int64_t s = std::max(f.lo, iv.start);
    if (iv.state == ThreadState::blocked && iv.cause == WakeCause::thread && iv.waker >= 0)
      return thread_wakeup(f, iv, s);
    if (iv.state == ThreadState::blocked && iv.cause == WakeCause::network && iv.waker >= 0 &&
        iv.sent > INT64_MIN)
      return packet_wakeup(f, iv, s);
    emit(f.thread, s, f.t, path_state(iv),
         iv.state == ThreadState::blocked ? iv.irq : IrqContext{});
    f.t = s;
    f.first = false;
  }

  // A wait another thread ended: the waker's history over [s, t] is the path.
  void thread_wakeup(Frame& f, const Interval& iv, int64_t s) {
    if (f.first) {
      // The waker of a wait must run at the wake-up; this one was blocked itself.
      ++r_.inconsistent;
      emit(f.thread, s, f.t, PathState::blocked);
      f.t = s;
      f.first = false;
      return;
    }
    ++r_.waker_hops;
    const Frame child{iv.waker, s, f.t, f.t == iv.end};
    f.t = s;
    stack_.push_back(child);  // invalidates f
  }

  // A packet woke us: after it was sent, the network; before, whatever kept its sender
  // from sending it sooner (the sender runs at the send).
  void packet_wakeup(Frame& f, const Interval& iv, int64_t s) {
    const int64_t net_from = std::clamp(iv.sent, s, f.t);
    emit(f.thread, net_from, f.t, PathState::network);
    f.t = s;
    f.first = false;
    if (net_from > s) {
      ++r_.packet_hops;
      stack_.push_back({iv.waker, s, net_from, net_from == iv.sent});  // invalidates f
    }
  }

  const KernelModel& model_;
  CriticalPathResult& r_;
  std::vector<Frame> stack_;
};

}  // namespace

CriticalPathResult critical_path(const KernelModel& model, int32_t target, int64_t from,
                                 int64_t to) {
  CriticalPathResult r;
  if (to <= from || target < 0 || static_cast<size_t>(target) >= model.threads.size()) return r;
  PathWalker(model, r).walk(target, from, to);
  return r;
}

}  // namespace snailtrail::kernel
