// Kernel model -> events (to_trace.hpp).
#include "kernel/to_trace.hpp"

#include <algorithm>
#include <map>
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

WaitCause wait_cause(WakeCause c) {
  switch (c) {
    case WakeCause::timer:
      return WaitCause::timer;
    case WakeCause::block_device:
      return WaitCause::block_device;
    case WakeCause::network:
      return WaitCause::network;
    case WakeCause::interrupt:
      return WaitCause::interrupt;
    case WakeCause::none:
    case WakeCause::thread:
      break;
  }
  return WaitCause::none;
}

std::string pseudo_worker_name(const PseudoKey& k, const StringTable& strings) {
  const std::string irq = irq_label(strings, k.irq);
  return "[" + std::string(name_of(wait_cause(k.cause))) + (irq.empty() ? "" : ": " + irq) + "]";
}

namespace {

// Pseudo-workers after the threads, one per (non-thread cause, interrupt context), in
// PseudoKey order.
using PseudoWorkers = std::map<PseudoKey, uint32_t>;

PseudoKey pseudo_key(const Interval& iv) {
  return {iv.cause, iv.irq};
}

bool from_pseudo_worker(const Interval& iv, uint32_t nthreads) {
  if (iv.state != ThreadState::blocked || iv.cause == WakeCause::none) return false;
  if (iv.cause == WakeCause::thread) return false;
  return !(iv.cause == WakeCause::network && iv.waker >= 0 &&
           static_cast<uint32_t>(iv.waker) < nthreads && iv.sent <= iv.end);
}

PseudoWorkers number_pseudo_workers(const KernelModel& m, uint32_t nthreads) {
  PseudoWorkers ids;
  for (const Thread& t : m.threads)
    for (const Interval& iv : t.intervals)
      if (from_pseudo_worker(iv, nthreads)) ids.emplace(pseudo_key(iv), 0);
  uint32_t next = nthreads;
  for (auto& [key, id] : ids) id = next++;
  return ids;
}

// The message that ended a wait: from its waker (a thread, the sender of a packet, or
// the pseudo-worker of its cause), sent at `sent_at`.
struct Wakeup {
  uint32_t from = 0;
  int64_t sent_at = 0;
  ActivityType message = ActivityType::control_message;
};

// nullopt for intervals that are no wait or whose end we cannot draw as a message.
std::optional<Wakeup> wakeup_of(const Interval& iv, uint32_t nthreads,
                                const PseudoWorkers& pseudo) {
  if (iv.state != ThreadState::blocked || iv.cause == WakeCause::none) return std::nullopt;
  Wakeup w;
  w.sent_at = iv.end;
  if (from_pseudo_worker(iv, nthreads)) {
    w.from = pseudo.at(pseudo_key(iv));
  } else if (iv.cause == WakeCause::network) {
    // A packet whose sender is known: a data message from the sending thread, sent
    // when the packet left, received at the wake-up (across hosts too).
    w.from = static_cast<uint32_t>(iv.waker);
    w.sent_at = iv.sent;
    w.message = ActivityType::data_message;
  } else {
    if (iv.waker < 0 || static_cast<uint32_t>(iv.waker) >= nthreads) return std::nullopt;
    w.from = static_cast<uint32_t>(iv.waker);
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

// The used pseudo-workers: named by their cause and interrupt, busy (io) over the whole
// trace.
void add_pseudo_workers(const KernelModel& m, const PseudoWorkers& pseudo, Trace& out,
                        std::vector<Event>& ev) {
  for (const auto& [key, w] : pseudo) {
    out.worker_names[w] = pseudo_worker_name(key, m.strings);
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
  const PseudoWorkers pseudo = number_pseudo_workers(m, nthreads);
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
      const std::optional<Wakeup> wake = wakeup_of(iv, nthreads, pseudo);
      if (!wake) continue;
      const auto [snd, rcv] = message_events(*wake, w, iv.end, ++correlator);
      // The receive sits between the wait's end and the next interval's start.
      ev.push_back(rcv);
      sends.push_back(snd);
    }
  }
  add_pseudo_workers(m, pseudo, out, ev);
  ev.insert(ev.end(), sends.begin(), sends.end());
  order_events(ev);
  out.events.resize(ev.size());
  std::copy(ev.begin(), ev.end(), out.events.begin());
  for (const auto& [k, v] : m.diagnostics.items()) out.import_diagnostics.emplace_back(k, v);
  return out;
}

}  // namespace snailtrail::kernel
