// The kernel events the thread-state model uses (docs/KERNEL.md), normalised from any
// reader (perf script text, LTTng CTF): scheduler switches and wake-ups, forks and exits,
// and the interrupt contexts that tell what woke a thread (timer, device, network).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace snailtrail::kernel {

enum class KType : uint8_t {
  sched_switch,      // tid = prev (running), a = next tid, state = prev_state
  sched_waking,      // tid = waker context, a = woken tid
  sched_wakeup,      // same; ignored for a thread a sched_waking already woke
  sched_wakeup_new,  // same, for a new thread
  process_fork,      // tid = parent, a = child
  process_exit,      // tid = exiting thread
  irq_entry,         // a = irq number, comm_a = the handler's name (irq_handler_entry)
  irq_exit,
  softirq_entry,  // a = vector (0 HI, 1 TIMER, 2 NET_TX, 3 NET_RX, 4 BLOCK, ... 8 HRTIMER)
  softirq_exit,
  hrtimer_entry,
  hrtimer_exit,
  block_issue,
  block_complete,
  net_queue,
  net_receive,
  statedump,  // LTTng statedump: tid = a thread, state = its state at the dump
};

// The tracepoints read, by the name each tracer gives them: perf script (the name after
// "subsystem:") and LTTng (the event class name); nullptr where that tracer has none.
struct Tracepoint {
  KType type;
  const char* perf;
  const char* lttng;
};
inline constexpr Tracepoint kTracepoints[] = {
    {KType::sched_switch, "sched_switch", "sched_switch"},
    {KType::sched_waking, "sched_waking", "sched_waking"},
    {KType::sched_wakeup, "sched_wakeup", "sched_wakeup"},
    {KType::sched_wakeup_new, "sched_wakeup_new", "sched_wakeup_new"},
    {KType::process_fork, "sched_process_fork", "sched_process_fork"},
    {KType::process_exit, "sched_process_exit", "sched_process_exit"},
    {KType::irq_entry, "irq_handler_entry", "irq_handler_entry"},
    {KType::irq_exit, "irq_handler_exit", "irq_handler_exit"},
    {KType::softirq_entry, "softirq_entry", "irq_softirq_entry"},
    {KType::softirq_exit, "softirq_exit", "irq_softirq_exit"},
    {KType::hrtimer_entry, "hrtimer_expire_entry", "timer_hrtimer_expire_entry"},
    {KType::hrtimer_exit, "hrtimer_expire_exit", "timer_hrtimer_expire_exit"},
    {KType::block_issue, "block_rq_issue", "block_rq_issue"},
    {KType::block_complete, "block_rq_complete", "block_rq_complete"},
    {KType::net_queue, "net_dev_queue", "net_dev_queue"},
    {KType::net_receive, "netif_receive_skb", "netif_receive_skb"},
    {KType::net_receive, nullptr, "net_if_receive_skb"},
    {KType::statedump, nullptr, "lttng_statedump_process_state"},
};

// The type of the tracepoint `name` as perf script (lttng false) or a CTF trace (LTTng's
// names, or perf's "sched:sched_switch") names it; nullptr if it is not one we read.
inline const KType* tracepoint_type(std::string_view name, bool lttng) {
  // perf's CTF (`perf data convert --to-ctf`) names them "subsystem:name", as perf does.
  if (lttng && name.find(':') != std::string_view::npos)
    return tracepoint_type(name.substr(name.find(':') + 1), false);
  for (const Tracepoint& t : kTracepoints) {
    const char* n = lttng ? t.lttng : t.perf;
    if (n != nullptr && name == n) return &t.type;
  }
  return nullptr;
}

// prev_state of a sched_switch, reduced to what the model distinguishes.
enum class PrevState : uint8_t { runnable, blocked, dead };

struct KEvent {
  int64_t ts = 0;       // nanoseconds
  int32_t cpu = -1;     // -1 = unknown
  int32_t tid = -1;     // the thread running on `cpu` when the event fired (header tid)
  int32_t a = -1;       // see KType
  uint32_t comm = 0;    // string id: comm of `tid`
  uint32_t comm_a = 0;  // string id: comm of `a` (next_comm, child_comm, woken comm)
  KType type = KType::sched_switch;
  PrevState state = PrevState::runnable;
  uint16_t host = 0;  // index in KernelEvents::hosts (traces of several machines)
  uint32_t line = 0;  // 1-based input line (0 = not from a text file)
  // net_queue / net_receive: the packet's identity across hosts (a hash of the IP
  // addresses, TCP ports, sequence and acknowledgement numbers and flags), 0 = unknown.
  uint64_t packet = 0;
};

// Interned strings: ids stay valid and stable; 0 is the empty string.
class StringTable {
 public:
  StringTable() { intern(""); }
  uint32_t intern(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    strings_.emplace_back(s);
    const auto id = static_cast<uint32_t>(strings_.size() - 1);
    ids_.emplace(std::string_view(strings_.back()), id);
    return id;
  }
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// Recoverable problems by kind ("perf.unknown_event" -> 12), in first-seen order.
class Counters {
 public:
  void add(std::string_view kind, uint64_t n = 1) {
    for (auto& [k, v] : items_)
      if (k == kind) {
        v += n;
        return;
      }
    items_.emplace_back(std::string(kind), n);
  }
  uint64_t get(std::string_view kind) const {
    for (const auto& [k, v] : items_)
      if (k == kind) return v;
    return 0;
  }
  const std::vector<std::pair<std::string, uint64_t>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, uint64_t>> items_;
};

// What a reader hands to the model: events in timestamp order (readers sort them and
// count the ones that arrived out of order), the comm strings and the counters.
struct KernelEvents {
  std::vector<KEvent> events;
  // The machines the events come from (a trace's `hostname`), by KEvent::host; empty or
  // one entry for a single machine.
  std::vector<std::string> hosts;
  StringTable strings;
  Counters diagnostics;
  // What the user must not miss, one sentence each (a stream file that is empty, so a
  // CPU's events are missing): load_kernel_model prints them on stderr.
  std::vector<std::string> warnings;
  std::string source = "<memory>";
};

}  // namespace snailtrail::kernel
