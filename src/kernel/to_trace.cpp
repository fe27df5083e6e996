// Kernel model -> events (to_trace.hpp).
#include "kernel/to_trace.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace snailtrail::kernel {

std::pair<Event, Event> interval_events(const Interval& iv, uint32_t w, uint32_t op) {
  Event s;
  s.worker = w;
  s.ts = iv.start;
  s.kind = EventKind::start;
  switch (iv.state) {
    case ThreadState::running:
      s.activity = ActivityType::processing;
      s.op = op;
      s.flags = kHasOperator;
      break;
    case ThreadState::preempted:
      s.activity = ActivityType::scheduling;
      break;
    case ThreadState::blocked:
      s.activity = ActivityType::waiting;
      break;
  }
  Event e = s;
  e.ts = iv.end;
  e.kind = EventKind::end;
  return {s, e};
}

namespace {

// Pseudo-workers after the threads, one per non-thread wake-up cause.
constexpr WakeCause kPseudo[] = {WakeCause::timer, WakeCause::block_device, WakeCause::network,
                                 WakeCause::interrupt};
constexpr uint32_t kPseudoCount = 4;

uint32_t pseudo_index(WakeCause c) {
  for (uint32_t k = 0; k < kPseudoCount; ++k)
    if (kPseudo[k] == c) return k;
  return 0;
}

// The message that ended a wait: from its waker (a thread, the sender of a packet, or
// the pseudo-worker of its cause), sent at `sent_at`.
struct Wakeup {
  uint32_t from = 0;
  int64_t sent_at = 0;
  ActivityType message = ActivityType::control_message;
};

// nullopt for intervals that are no wait or whose end we cannot draw as a message.
std::optional<Wakeup> wakeup_of(const Interval& iv, uint32_t nthreads, bool* pseudo_used) {
  if (iv.state != ThreadState::blocked || iv.cause == WakeCause::none) return std::nullopt;
  Wakeup w;
  w.sent_at = iv.end;
  if (iv.cause == WakeCause::network && iv.waker >= 0 &&
      static_cast<uint32_t>(iv.waker) < nthreads && iv.sent <= iv.end) {
    // A packet whose sender is known: a data message from the sending thread, sent
    // when the packet left, received at the wake-up (across hosts too).
    w.from = static_cast<uint32_t>(iv.waker);
    w.sent_at = iv.sent;
    w.message = ActivityType::data_message;
  } else if (iv.cause == WakeCause::thread) {
    if (iv.waker < 0 || static_cast<uint32_t>(iv.waker) >= nthreads) return std::nullopt;
    w.from = static_cast<uint32_t>(iv.waker);
  } else {
    const uint32_t k = pseudo_index(iv.cause);
    w.from = nthreads + k;
    pseudo_used[k] = true;
  }
  return w;
}

// The send and receive events of a wake-up of worker `to` at `at`.
std::pair<Event, Event> message_events(const Wakeup& w, uint32_t to, int64_t at,
                                       int64_t correlator) {
  Event snd;
  snd.ts = w.sent_at;
  snd.worker = w.from;
  snd.remote = to;
  snd.correlator = correlator;
  snd.activity = w.message;
  snd.kind = EventKind::send;
  snd.flags = kHasCorrelator | kHasRemote;
  Event rcv = snd;
  rcv.ts = at;
  rcv.worker = to;
  rcv.remote = w.from;
  rcv.kind = EventKind::recv;
  return {snd, rcv};
}

// The used pseudo-workers: named by their cause, busy (io) over the whole trace.
void add_pseudo_workers(const KernelModel& m, uint32_t nthreads, const bool* pseudo_used,
                        Trace& out, std::vector<Event>& ev) {
  for (uint32_t k = 0; k < kPseudoCount; ++k) {
    if (!pseudo_used[k]) continue;
    const uint32_t w = nthreads + k;
    out.worker_names[w] = "[" + std::string(name_of(kPseudo[k])) + "]";
    Event s;
    s.worker = w;
    s.ts = m.begin;
    s.activity = ActivityType::io;
    s.kind = EventKind::start;
    Event e = s;
    e.ts = m.end;
    e.kind = EventKind::end;
    ev.push_back(s);
    ev.push_back(e);
  }
}

// Every worker's events by time, those of one instant in instant_order().
void order_events(std::vector<Event>& ev) {
  std::stable_sort(ev.begin(), ev.end(), [&](const Event& a, const Event& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.worker != b.worker) return a.worker < b.worker;
    return instant_order(a.kind) < instant_order(b.kind);
  });
}

}  // namespace

Trace to_trace(const KernelModel& m) {
  Trace out;
  out.source = m.source;
  out.format = TraceFormat::snail;  // locations as "record N": there is no line per event
  const auto nthreads = static_cast<uint32_t>(m.threads.size());
  bool pseudo_used[kPseudoCount] = {false, false, false, false};
  std::unordered_map<uint32_t, uint32_t> op_of_comm;  // comm string id -> operator id

  std::vector<Event> ev;
  size_t n = 0;
  for (const Thread& t : m.threads) n += 2 * t.intervals.size() + 2;
  ev.reserve(n);
  int64_t correlator = 0;
  std::vector<Event> sends;  // the waker sides, placed on their workers below
  for (uint32_t w = 0; w < nthreads; ++w) {
    const Thread& t = m.threads[w];
    out.worker_names[w] = m.thread_label(static_cast<int32_t>(w));
    auto [it, fresh] = op_of_comm.emplace(t.comm, static_cast<uint32_t>(op_of_comm.size()));
    if (fresh) out.operator_names[it->second] = m.strings.str(t.comm);
    const uint32_t op = it->second;
    for (const Interval& iv : t.intervals) {
      const auto [s, e] = interval_events(iv, w, op);
      ev.push_back(s);
      ev.push_back(e);
      const std::optional<Wakeup> wake = wakeup_of(iv, nthreads, pseudo_used);
      if (!wake) continue;
      const auto [snd, rcv] = message_events(*wake, w, iv.end, ++correlator);
      // The receive sits between the wait's end and the next interval's start.
      ev.push_back(rcv);
      sends.push_back(snd);
    }
  }
  add_pseudo_workers(m, nthreads, pseudo_used, out, ev);
  ev.insert(ev.end(), sends.begin(), sends.end());
  order_events(ev);
  out.events.resize(ev.size());
  std::copy(ev.begin(), ev.end(), out.events.begin());
  for (const auto& [k, v] : m.diagnostics.items()) out.import_diagnostics.emplace_back(k, v);
  return out;
}

}  // namespace snailtrail::kernel
