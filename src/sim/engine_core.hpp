// What the three engines share around their own model (internal to src/sim): the
// discrete-event loop that hands each event to the engine's handler for its kind, the
// slots of the messages in flight, and handing the measured instances to the truth.
//
//   enum SimKind : uint32_t { kWake = 0, kArrival = 1 };  // a kind is a handler's position
//   run_agenda(q, [&](uint32_t w, int64_t t) { on_wake(w, t); },
//                 [&](uint32_t m, int64_t t) { on_arrival(m, t); });
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/truth.hpp"

namespace snailtrail::sim {

namespace detail {
// Calls the handler at position e.kind with (e.arg, e.time).
template <class... Handlers>
inline void dispatch(const SimEvent& e, Handlers&... handlers) {
  uint32_t kind = 0;
  (void)((e.kind == kind++ ? (handlers(e.arg, e.time), true) : false) || ...);
}
}  // namespace detail

// Runs the agenda to its end: pops the events in time order (equal times in the order
// they were pushed) and hands each to the handler whose position is the event's kind.
// Handlers push the events that follow.
template <class... Handlers>
void run_agenda(EventQueue& q, Handlers&&... handlers) {
  while (!q.empty()) detail::dispatch(q.pop(), handlers...);
}

// The same for the events before `t` only; the later ones stay queued.
template <class... Handlers>
void run_agenda_before(EventQueue& q, int64_t t, Handlers&&... handlers) {
  while (!q.empty() && q.top().time < t) detail::dispatch(q.pop(), handlers...);
}

// Messages in flight, each in a slot whose number travels as the arrival event's arg; a
// delivered message's slot is reused, last freed first, so the slots stay as many as
// the messages ever in flight at once.
template <class Msg>
class MessageSlots {
 public:
  uint32_t put(const Msg& msg) {
    uint32_t m;
    if (!free_.empty()) {
      m = free_.back();
      free_.pop_back();
      msgs_[m] = msg;
    } else {
      m = static_cast<uint32_t>(msgs_.size());
      msgs_.push_back(msg);
    }
    return m;
  }
  const Msg& operator[](uint32_t m) const { return msgs_[m]; }
  void release(uint32_t m) { free_.push_back(m); }
  // Reads the message in slot `m` and frees the slot.
  Msg take(uint32_t m) {
    release(m);
    return msgs_[m];
  }

 private:
  std::vector<Msg> msgs_;
  std::vector<uint32_t> free_;
};

// Moves the measured instances (per operator, then per instance) into the truth.
inline void hand_over(std::vector<std::vector<InstanceTruth>>& per_operator, Truth& truth) {
  for (auto& per_op : per_operator)
    for (InstanceTruth& x : per_op) truth.instances.push_back(std::move(x));
}

}  // namespace snailtrail::sim
