// Streaming perf script text -> events (perf_stream.hpp).
#include "kernel/perf_stream.hpp"

#include "kernel/diagnostic_kinds.hpp"
#include "kernel/to_trace.hpp"

#include <algorithm>
#include <cstring>

namespace snailtrail::kernel {

PerfSchedStream::PerfSchedStream(std::string source) : lines_(source) {}

void PerfSchedStream::take_line(std::string_view line, bool cut) {
  lines_.line(line, ++line_no_, cut);
}

void PerfSchedStream::feed(std::string_view bytes, Trace& out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const void* nl = std::memchr(bytes.data() + pos, '\n', bytes.size() - pos);
    if (!nl) {
      partial_.append(bytes.substr(pos));
      break;
    }
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - bytes.data());
    if (partial_.empty()) {
      take_line(bytes.substr(pos, end - pos), false);
    } else {
      partial_.append(bytes.substr(pos, end - pos));
      take_line(partial_, false);
      partial_.clear();
    }
    pos = end + 1;
  }
  step_events();
  emit(out);
}

void PerfSchedStream::finish(Trace& out) {
  if (!partial_.empty()) {
    take_line(partial_, true);
    partial_.clear();
  }
  step_events();
  model_.finish();
  emit(out);
  const KernelModel& m = model_.model();
  // Sends still pending lie after their thread's last interval (a thread that woke
  // another as its very last act): place them at the end.
  for (size_t t = 0; t < pending_sends_.size(); ++t)
    for (Event& e : pending_sends_[t]) out.events.push_back(e);
  pending_sends_.clear();
  for (const auto& [cause, w] : pseudo_) {
    Event e;
    e.worker = w;
    e.ts = m.end;
    e.activity = ActivityType::io;
    e.kind = EventKind::end;
    out.events.push_back(e);
  }
}

std::vector<std::pair<std::string, uint64_t>> PerfSchedStream::diagnostics() const {
  std::vector<std::pair<std::string, uint64_t>> d;
  for (const auto& kv : lines_.events().diagnostics.items()) d.push_back(kv);
  for (const auto& kv : model_.diagnostics().items()) d.push_back(kv);
  if (out_of_order_) d.emplace_back(kPerfStreamOutOfOrder.name, out_of_order_);
  return d;
}

void PerfSchedStream::step_events() {
  auto& ev = lines_.events().events;
  for (const KEvent& e : ev) {
    if (e.ts < last_ts_) {
      ++out_of_order_;
      continue;
    }
    last_ts_ = e.ts;
    model_.feed(e);
  }
  ev.clear();
}

uint32_t PerfSchedStream::worker_of_thread(int32_t thread, Trace& out) {
  int64_t& w = worker_of_thread_[thread];
  if (w < 0) {
    const Thread& t = model_.model().threads[thread];
    w = next_worker_++;
    out.worker_names[static_cast<uint32_t>(w)] =
        lines_.events().strings.str(t.comm) + ":" + std::to_string(t.tid);
  }
  return static_cast<uint32_t>(w);
}

uint32_t PerfSchedStream::worker_of_cause(const PseudoKey& key, Trace& out) {
  for (const auto& [k, w] : pseudo_)  // a handful: one per cause and IRQ or softirq
    if (k == key) return w;
  const uint32_t w = next_worker_++;
  pseudo_.emplace_back(key, w);
  out.worker_names[w] = pseudo_worker_name(key, lines_.events().strings);
  Event s;  // busy with io over the whole trace, as in to_trace
  s.worker = w;
  s.ts = model_.model().begin;
  s.activity = ActivityType::io;
  s.kind = EventKind::start;
  out.events.push_back(s);
  return w;
}

void PerfSchedStream::emit(Trace& out) {
  const KernelModel& m = model_.model();
  const size_t n = m.threads.size();
  emitted_.resize(n, 0);
  worker_of_thread_.resize(n, -1);
  pending_sends_.resize(n);
  // Worker ids in the order threads first get an interval.
  for (size_t t = 0; t < n; ++t)
    if (emitted_[t] < m.threads[t].intervals.size()) worker_of_thread(static_cast<int32_t>(t), out);
  // Pass 1: the wake-ups among the new intervals; the waker's send waits for the
  // waker's interval that holds it (a pseudo-worker's goes out at once).
  std::vector<std::vector<Event>> recvs(n);
  std::vector<Event> pseudo_sends;
  for (size_t t = 0; t < n; ++t) {
    const auto& ivs = m.threads[t].intervals;
    for (size_t k = emitted_[t]; k < ivs.size(); ++k) {
      const Interval& iv = ivs[k];
      if (iv.state != ThreadState::blocked || iv.cause == WakeCause::none) continue;
      Event snd;
      snd.ts = iv.end;
      snd.correlator = ++correlator_;
      snd.activity = ActivityType::control_message;
      snd.kind = EventKind::send;
      snd.flags = kHasCorrelator | kHasRemote;
      snd.remote = worker_of_thread(static_cast<int32_t>(t), out);
      Event rcv = snd;
      rcv.kind = EventKind::recv;
      rcv.worker = snd.remote;
      if (iv.cause == WakeCause::thread) {
        if (iv.waker < 0 || static_cast<size_t>(iv.waker) >= n) continue;
        snd.worker = worker_of_thread(iv.waker, out);
        pending_sends_[iv.waker].push_back(snd);
      } else {
        snd.worker = worker_of_cause({iv.cause, iv.irq}, out);
        pseudo_sends.push_back(snd);
      }
      rcv.remote = snd.worker;
      recvs[t].push_back(rcv);
    }
  }
  // A pseudo-worker's sends, in time order (wake-ups of this feed are all later than
  // those of the previous ones: events are fed in time order).
  std::stable_sort(pseudo_sends.begin(), pseudo_sends.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  for (const Event& e : pseudo_sends) out.events.push_back(e);
  // Pass 2: each thread's new intervals with its receives and the sends they hold.
  std::vector<Event> evs;
  for (size_t t = 0; t < n; ++t) {
    const Thread& th = m.threads[t];
    const auto& ivs = th.intervals;
    if (emitted_[t] == ivs.size()) continue;
    const uint32_t w = worker_of_thread(static_cast<int32_t>(t), out);
    auto [op_it, fresh] = op_of_comm_.emplace(th.comm, static_cast<uint32_t>(op_of_comm_.size()));
    if (fresh) out.operator_names[op_it->second] = lines_.events().strings.str(th.comm);
    evs.clear();
    for (size_t k = emitted_[t]; k < ivs.size(); ++k) {
      const auto [s, e] = interval_events(ivs[k], w, op_it->second);
      evs.push_back(s);
      evs.push_back(e);
    }
    const int64_t horizon = ivs.back().end;
    evs.insert(evs.end(), recvs[t].begin(), recvs[t].end());
    auto& pend = pending_sends_[t];
    auto keep = std::stable_partition(pend.begin(), pend.end(),
                                      [&](const Event& e) { return e.ts > horizon; });
    evs.insert(evs.end(), keep, pend.end());
    pend.erase(keep, pend.end());
    std::stable_sort(evs.begin(), evs.end(), [](const Event& a, const Event& b) {
      return a.ts != b.ts ? a.ts < b.ts : instant_order(a.kind) < instant_order(b.kind);
    });
    for (const Event& e : evs) out.events.push_back(e);
    emitted_[t] = ivs.size();
  }
}

}  // namespace snailtrail::kernel
