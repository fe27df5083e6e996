// Kernel model -> events (to_trace.hpp).
#include "kernel/to_trace.hpp"

#include <algorithm>
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

Trace to_trace(const KernelModel& m) {
  Trace out;
  out.source = m.source;
  out.format = TraceFormat::snail;  // locations as "record N": there is no line per event
  const auto nthreads = static_cast<uint32_t>(m.threads.size());
  // Pseudo-workers after the threads, one per non-thread wake-up cause.
  constexpr WakeCause kPseudo[] = {WakeCause::timer, WakeCause::block_device, WakeCause::network,
                                   WakeCause::interrupt};
  auto pseudo_id = [&](WakeCause c) -> uint32_t {
    for (uint32_t k = 0; k < 4; ++k)
      if (kPseudo[k] == c) return nthreads + k;
    return nthreads;
  };
  bool pseudo_used[4] = {false, false, false, false};
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
      if (iv.state != ThreadState::blocked || iv.cause == WakeCause::none) continue;
      uint32_t from = 0;
      int64_t sent_at = iv.end;
      ActivityType message = ActivityType::control_message;
      if (iv.cause == WakeCause::network && iv.waker >= 0 &&
          static_cast<uint32_t>(iv.waker) < nthreads && iv.sent <= iv.end) {
        // A packet whose sender is known: a data message from the sending thread, sent
        // when the packet left, received at the wake-up (across hosts too).
        from = static_cast<uint32_t>(iv.waker);
        sent_at = iv.sent;
        message = ActivityType::data_message;
      } else if (iv.cause == WakeCause::thread) {
        if (iv.waker < 0 || static_cast<uint32_t>(iv.waker) >= nthreads) continue;
        from = static_cast<uint32_t>(iv.waker);
      } else {
        from = pseudo_id(iv.cause);
        pseudo_used[from - nthreads] = true;
      }
      Event snd;
      snd.ts = sent_at;
      snd.worker = from;
      snd.remote = w;
      snd.correlator = ++correlator;
      snd.activity = message;
      snd.kind = EventKind::send;
      snd.flags = kHasCorrelator | kHasRemote;
      Event rcv = snd;
      rcv.ts = iv.end;
      rcv.worker = w;
      rcv.remote = from;
      rcv.kind = EventKind::recv;
      // The receive sits between the wait's end and the next interval's start.
      ev.push_back(rcv);
      sends.push_back(snd);
    }
  }
  for (uint32_t k = 0; k < 4; ++k) {
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
  // A waker's send belongs inside its running interval: order every worker's events by
  // time, a send after the events of its instant that end an interval and before those
  // that start one (so a wake-up at the very end of a running slice stays inside it).
  ev.insert(ev.end(), sends.begin(), sends.end());
  auto rank = [](const Event& e) {
    switch (e.kind) {
      case EventKind::end:
        return 1;
      case EventKind::recv:
        return 2;
      case EventKind::send:
        return 0;
      case EventKind::start:
        return 3;
    }
    return 3;
  };
  std::stable_sort(ev.begin(), ev.end(), [&](const Event& a, const Event& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.worker != b.worker) return a.worker < b.worker;
    return rank(a) < rank(b);
  });
  out.events.resize(ev.size());
  std::copy(ev.begin(), ev.end(), out.events.begin());
  for (const auto& [k, v] : m.diagnostics.items()) out.import_diagnostics.emplace_back(k, v);
  return out;
}

}  // namespace snailtrail::kernel
