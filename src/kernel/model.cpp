// Kernel events -> thread-state intervals (model.hpp).
#include "kernel/model.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>

namespace snailtrail::kernel {

namespace {

enum class Open : uint8_t { none, running, preempted, blocked, dead };

struct Context {
  KType kind;  // irq_entry, softirq_entry or hrtimer_entry
  int32_t num;
  bool block_done = false;  // a block request completed in this context
  bool net_rx = false;      // a packet was received in this context
  uint64_t packet = 0;      // the identity of the last one, if known
  uint32_t name = 0;        // irq_handler_entry's name (string id)
};

struct Cpu {
  int32_t current = -1;  // tid
  std::vector<Context> stack;
};

constexpr size_t kMaxContextDepth = 16;
constexpr int32_t kMaxCpus = 1 << 16;

}  // namespace

class Builder {
 public:
  explicit Builder(KernelEvents&& in) : in_(std::move(in)) {
    m_.source = in_.source;
    m_.hosts = in_.hosts;
    m_.diagnostics = std::move(in_.diagnostics);
  }

  KernelModel run() {
    const auto& ev = in_.events;
    m_.events = ev.size();
    if (!ev.empty()) {
      m_.begin = ev.front().ts;
      m_.end = ev.back().ts;
    }
    for (const KEvent& e : ev) step(e);
    close_open();
    m_.strings = std::move(in_.strings);
    return std::move(m_);
  }

  // Incremental use (ModelBuilder): one event, its time not before the previous one's.
  void feed(const KEvent& e) {
    if (m_.events++ == 0) m_.begin = e.ts;
    m_.end = e.ts;
    step(e);
  }
  KernelModel& model() { return m_; }

  // Ends the intervals still open at the trace's end.
  void close_open() {
    for (size_t i = 0; i < open_.size(); ++i) {
      const OpenState& o = open_[i];
      switch (o.state) {
        case Open::running:
          add(i, o.since, m_.end, ThreadState::running);
          break;
        case Open::preempted:
          add(i, o.since, m_.end, ThreadState::preempted);
          break;
        case Open::blocked:
          add(i, o.since, m_.end, ThreadState::blocked);
          break;
        default:
          break;
      }
      open_[i].state = Open::none;
    }
  }

 private:
  struct OpenState {
    Open state = Open::none;
    int64_t since = 0;
  };
  struct Send {
    int32_t thread;
    int64_t ts;
  };

  Cpu* cpu(uint16_t host, int32_t c) {
    if (c < 0 || c >= kMaxCpus) return nullptr;
    if (host >= cpus_.size()) cpus_.resize(host + 1);
    auto& cpus = cpus_[host];
    if (static_cast<size_t>(c) >= cpus.size()) cpus.resize(c + 1);
    return &cpus[c];
  }

  static uint64_t tid_key(uint16_t host, int32_t tid) {
    return (uint64_t{host} << 32) | static_cast<uint32_t>(tid);
  }

  // The live thread with this tid on this host, created if needed. tid <= 0 (idle) is no
  // thread.
  int32_t thread(uint16_t host, int32_t tid, uint32_t comm) {
    if (tid <= 0) return -1;
    auto it = by_tid_.find(tid_key(host, tid));
    if (it != by_tid_.end()) {
      if (comm && m_.threads[it->second].comm != comm) m_.threads[it->second].comm = comm;
      return it->second;
    }
    const auto idx = static_cast<int32_t>(m_.threads.size());
    Thread t;
    t.tid = tid;
    t.host = host;
    t.comm = comm;
    m_.threads.push_back(std::move(t));
    open_.emplace_back();
    by_tid_.emplace(tid_key(host, tid), idx);
    return idx;
  }

  void add(size_t t, int64_t start, int64_t end, ThreadState s, WakeCause c = WakeCause::none,
           int32_t waker = -1, int64_t sent = INT64_MIN, IrqContext irq = {}) {
    if (end <= start) return;
    auto& ivs = m_.threads[t].intervals;
    if (!ivs.empty() && ivs.back().end == start && ivs.back().state == s &&
        s != ThreadState::blocked) {
      ivs.back().end = end;
      return;
    }
    ivs.push_back({start, end, sent, waker, s, c, irq});
  }

  // A packet wake-up of thread `t` at `ts`: the thread that sent the packet received in
  // this interrupt context, if its sending was traced.
  void packet_sender(const Cpu* c, int32_t t, int64_t ts, int32_t& by, int64_t& sent) {
    if (!c || c->stack.empty() || c->stack.back().packet == 0) return;
    auto it = sends_.find(c->stack.back().packet);
    if (it == sends_.end() || it->second.ts > ts) {
      if (m_.multi_host()) m_.diagnostics.add("kernel.packet_sender_not_traced");
      return;
    }
    if (it->second.thread == t) return;
    by = it->second.thread;
    sent = it->second.ts;
    ++m_.packets_matched;
  }

  // `t` runs at `ts` (it is current on a CPU): repair what we believed otherwise.
  void ensure_running(int32_t t, int64_t ts) {
    if (t < 0) return;
    OpenState& o = open_[t];
    switch (o.state) {
      case Open::running:
        return;
      case Open::none:
        break;
      case Open::preempted:
        m_.diagnostics.add("kernel.running_without_switch_in");
        add(t, o.since, ts, ThreadState::preempted);
        break;
      case Open::blocked:
        m_.diagnostics.add("kernel.running_without_wakeup");
        add(t, o.since, ts, ThreadState::blocked);
        break;
      case Open::dead:
        break;
    }
    o = {Open::running, ts};
  }

  WakeCause cause_at(const Cpu* c, int32_t waker_tid) const {
    if (c && !c->stack.empty()) {
      const Context& x = c->stack.back();
      if (x.kind == KType::hrtimer_entry) return WakeCause::timer;
      if (x.kind == KType::softirq_entry) {
        if (x.num == 1 || x.num == 8) return WakeCause::timer;
        if (x.num == 2 || x.num == 3 || x.net_rx) return WakeCause::network;
        if (x.num == 4 || x.num == 5 || x.block_done) return WakeCause::block_device;
        return WakeCause::interrupt;
      }
      if (x.block_done) return WakeCause::block_device;
      if (x.net_rx) return WakeCause::network;
      return WakeCause::interrupt;
    }
    // The idle task wakes nobody on its own: the wake-up came from an interrupt whose
    // entry was not traced.
    if (waker_tid == 0) return WakeCause::interrupt;
    return WakeCause::thread;
  }

  // The IRQ or softirq a wake-up fired in (an hrtimer's is already the cause `timer`).
  static IrqContext irq_of(const Cpu* c) {
    if (!c || c->stack.empty() || c->stack.back().kind == KType::hrtimer_entry) return {};
    const Context& x = c->stack.back();
    if (x.kind == KType::irq_entry) return {IrqKind::irq, x.num, x.name};
    return {IrqKind::softirq, x.num, 0};
  }

  void wake(const KEvent& e, int32_t waker, Cpu* c) {
    const int32_t t = thread(e.host, e.a, e.comm_a);
    if (t < 0) return;
    OpenState& o = open_[t];
    if (o.state == Open::blocked) {
      WakeCause cause = cause_at(c, e.tid);
      if (cause == WakeCause::thread && (waker < 0 || waker == t)) cause = WakeCause::none;
      int32_t by = cause == WakeCause::thread ? waker : -1;
      int64_t sent = INT64_MIN;
      if (cause == WakeCause::network) packet_sender(c, t, e.ts, by, sent);
      add(t, o.since, e.ts, ThreadState::blocked, cause, by, sent,
          cause == WakeCause::thread ? IrqContext{} : irq_of(c));
      ++m_.wakeups;
      o = {Open::preempted, e.ts};
    } else if (o.state == Open::none) {
      o = {Open::preempted, e.ts};
    }
  }

  // One event: the thread it ran on is running, then what the event changes.
  void step(const KEvent& e) {
    Cpu* c = cpu(e.host, e.cpu);
    const int32_t cur = current_thread(e, c);
    switch (e.type) {
      case KType::sched_switch:
        switch_out(e, cur);
        switch_in(e);
        if (c) {
          c->current = e.a;
          if (!c->stack.empty()) {
            m_.diagnostics.add("kernel.switch_inside_interrupt");
            c->stack.clear();
          }
        }
        break;
      case KType::sched_waking:
      case KType::sched_wakeup:
      case KType::sched_wakeup_new:
        wake(e, cur, c);
        break;
      case KType::process_fork:
        record_fork(e, cur);
        break;
      case KType::process_exit:
        break;  // the thread leaves with its last sched_switch (prev_state X/Z)
      case KType::irq_entry:
      case KType::softirq_entry:
      case KType::hrtimer_entry:
        if (c) enter_interrupt(e, *c);
        break;
      case KType::irq_exit:
      case KType::softirq_exit:
      case KType::hrtimer_exit:
        if (c) exit_interrupt(e, *c);
        break;
      case KType::block_complete:
        if (c && !c->stack.empty()) c->stack.back().block_done = true;
        break;
      case KType::net_receive:
        if (c && !c->stack.empty()) {
          c->stack.back().net_rx = true;
          c->stack.back().packet = e.packet;
        }
        break;
      case KType::net_queue:
        // Sent by the running thread (not from an interrupt: an ACK sent by the softirq
        // belongs to nobody we could follow). A retransmission replaces the earlier send.
        if (e.packet && cur >= 0 && c && c->stack.empty()) sends_[e.packet] = {cur, e.ts};
        break;
      case KType::block_issue:
        break;
      case KType::statedump:
        statedump(e);
        break;
    }
  }

  // The thread the event ran on (-1 for events of no running thread): it runs, and it
  // is its CPU's current thread.
  int32_t current_thread(const KEvent& e, Cpu* c) {
    if (e.type == KType::statedump || e.type == KType::process_exit) return -1;
    const int32_t cur = thread(e.host, e.tid, e.comm);
    ensure_running(cur, e.ts);
    if (c && c->current != e.tid) {
      if (c->current > 0 && e.tid > 0 && e.type != KType::sched_switch)
        m_.diagnostics.add("kernel.current_changed_without_switch");
      c->current = e.tid;
    }
    return cur;
  }

  // sched_switch, the previous thread: its running interval ends; it waits for a CPU,
  // blocks or dies (by prev_state).
  void switch_out(const KEvent& e, int32_t cur) {
    if (cur < 0) return;
    OpenState& o = open_[cur];
    add(cur, o.since, e.ts, ThreadState::running);
    if (e.state == PrevState::runnable) {
      o = {Open::preempted, e.ts};
    } else if (e.state == PrevState::blocked) {
      o = {Open::blocked, e.ts};
    } else {
      o = {Open::dead, e.ts};
      by_tid_.erase(tid_key(e.host, e.tid));
    }
  }

  // sched_switch, the next thread: what it was doing ends; it runs.
  void switch_in(const KEvent& e) {
    const int32_t next = thread(e.host, e.a, e.comm_a);
    if (next < 0) return;
    OpenState& o = open_[next];
    if (o.state == Open::preempted) {
      add(next, o.since, e.ts, ThreadState::preempted);
    } else if (o.state == Open::blocked) {
      m_.diagnostics.add("kernel.switch_in_without_wakeup");
      add(next, o.since, e.ts, ThreadState::blocked);
    } else if (o.state == Open::running) {
      m_.diagnostics.add("kernel.switch_in_while_running");
      add(next, o.since, e.ts, ThreadState::running);
    }
    o = {Open::running, e.ts};
  }

  void record_fork(const KEvent& e, int32_t cur) {
    const int32_t child = thread(e.host, e.a, e.comm_a);
    if (child < 0) return;
    Thread& ct = m_.threads[child];
    if (ct.parent < 0 && cur != child) {
      ct.parent = cur;
      ct.birth = e.ts;
    }
    if (open_[child].state == Open::none) open_[child] = {Open::preempted, e.ts};
  }

  // The CPU's stack of interrupt contexts, for what a wake-up inside them was caused by.
  void enter_interrupt(const KEvent& e, Cpu& c) {
    if (c.stack.size() >= kMaxContextDepth) {
      m_.diagnostics.add("kernel.interrupt_nesting_too_deep");
      c.stack.erase(c.stack.begin());
    }
    c.stack.push_back({e.type, e.a, false, false, 0, e.type == KType::irq_entry ? e.comm_a : 0});
  }

  void exit_interrupt(const KEvent& e, Cpu& c) {
    const KType entry = e.type == KType::irq_exit       ? KType::irq_entry
                        : e.type == KType::softirq_exit ? KType::softirq_entry
                                                        : KType::hrtimer_entry;
    if (!c.stack.empty() && c.stack.back().kind == entry) {
      c.stack.pop_back();
      return;
    }
    m_.diagnostics.add("kernel.unbalanced_interrupt_exit");
    // Drop up to (and including) the innermost matching entry, if any.
    for (size_t k = c.stack.size(); k-- > 0;)
      if (c.stack[k].kind == entry) {
        c.stack.resize(k);
        break;
      }
  }

  // A thread's state when tracing started (LTTng's statedump).
  void statedump(const KEvent& e) {
    const int32_t t = thread(e.host, e.tid, e.comm);
    if (t >= 0 && open_[t].state == Open::none)
      open_[t] = {e.state == PrevState::blocked ? Open::blocked : Open::preempted, e.ts};
  }

  KernelEvents in_;
  KernelModel m_;
  std::vector<OpenState> open_;
  std::vector<std::vector<Cpu>> cpus_;  // per host, per CPU
  std::unordered_map<uint64_t, int32_t> by_tid_;
  std::unordered_map<uint64_t, Send> sends_;  // by packet identity
};

std::vector<int64_t> align_host_clocks(KernelEvents& in) {
  const size_t hosts = in.hosts.size();
  std::vector<int64_t> offset(hosts, 0);
  if (hosts <= 1) return offset;
  // Minimum one-way delay (receive time - send time, in the two hosts' own clocks) per
  // ordered pair of hosts.
  std::unordered_map<uint64_t, std::pair<uint16_t, int64_t>> sent;  // packet -> host, ts
  for (const KEvent& e : in.events)
    if (e.type == KType::net_queue && e.packet) sent.try_emplace(e.packet, e.host, e.ts);
  std::vector<int64_t> min_delay(hosts * hosts, INT64_MAX);
  for (const KEvent& e : in.events) {
    if (e.type != KType::net_receive || !e.packet) continue;
    auto it = sent.find(e.packet);
    if (it == sent.end() || it->second.first == e.host || it->second.first >= hosts ||
        e.host >= hosts)
      continue;
    int64_t& d = min_delay[it->second.first * hosts + e.host];
    d = std::min(d, e.ts - it->second.second);
  }
  // Breadth-first from host 0 over pairs with packets both ways. If host b's clock reads
  // theta more than a's, a->b delays read d + theta and b->a ones d - theta.
  std::vector<bool> aligned(hosts, false);
  aligned[0] = true;
  std::vector<size_t> queue{0};
  for (size_t q = 0; q < queue.size(); ++q) {
    const size_t a = queue[q];
    for (size_t b = 0; b < hosts; ++b) {
      if (aligned[b]) continue;
      const int64_t ab = min_delay[a * hosts + b], ba = min_delay[b * hosts + a];
      if (ab == INT64_MAX || ba == INT64_MAX) continue;
      const int64_t theta = (ab - ba) / 2;
      offset[b] = offset[a] - theta;
      aligned[b] = true;
      queue.push_back(b);
    }
  }
  uint64_t unaligned = 0;
  for (size_t h = 0; h < hosts; ++h) unaligned += !aligned[h];
  if (unaligned) in.diagnostics.add("kernel.host_clock_not_aligned", unaligned);
  bool shifted = false;
  for (KEvent& e : in.events)
    if (e.host < hosts && offset[e.host] != 0) {
      e.ts += offset[e.host];
      shifted = true;
    }
  if (shifted)
    std::stable_sort(in.events.begin(), in.events.end(),
                     [](const KEvent& a, const KEvent& b) { return a.ts < b.ts; });
  return offset;
}

ModelBuilder::ModelBuilder() : b_(std::make_unique<Builder>(KernelEvents{})) {}
ModelBuilder::~ModelBuilder() = default;
void ModelBuilder::feed(const KEvent& e) {
  b_->feed(e);
}
void ModelBuilder::finish() {
  b_->close_open();
}
const KernelModel& ModelBuilder::model() const {
  return b_->model();
}
Counters& ModelBuilder::diagnostics() {
  return b_->model().diagnostics;
}

const Counters& ModelBuilder::diagnostics() const {
  return b_->model().diagnostics;
}

KernelModel build_model(KernelEvents&& events) {
  std::vector<int64_t> offsets = align_host_clocks(events);
  KernelModel m = Builder(std::move(events)).run();
  m.host_offsets_ns = std::move(offsets);
  return m;
}

}  // namespace snailtrail::kernel
