// Writes `perf script` text for kernel-trace tests, in the layouts real perf versions
// print (docs/KERNEL.md): the kernel's key=value format with `comm tid [cpu] s.us:`
// headers (perf 4.x, `perf sched record`), libtraceevent's compact sched plugin form with
// nanosecond times (perf 5.x/6.x `--ns`), and a `pid/tid`, flags and period column layout
// without the "sched:" system prefix.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>

namespace snailtrail::testing {

enum class PerfStyle { kv, compact, pid_tid };

class PerfText {
 public:
  explicit PerfText(PerfStyle style = PerfStyle::kv) : style_(style) {}

  void name(int tid, std::string comm) { comms_[tid] = std::move(comm); }
  std::string comm(int tid, int cpu = 0) const {
    if (tid == 0) return fmt::format("swapper/{}", cpu);
    auto it = comms_.find(tid);
    return it != comms_.end() ? it->second : fmt::format("task-{}", tid);
  }

  // Header of a sample on `cpu` at `ns` with `cur` running there.
  void header(int cpu, int64_t ns, int cur, const std::string& event) {
    const std::string c = comm(cur, cpu);
    const std::string time =
        style_ == PerfStyle::compact
            ? fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000)
            : fmt::format("{}.{:06d}", ns / 1'000'000'000, (ns % 1'000'000'000) / 1000);
    switch (style_) {
      case PerfStyle::kv:
        text_ += fmt::format("{:>16} {:>6} [{:03d}] {}: {:>26}: ", c, cur, cpu, time,
                             system_of(event) + ":" + event);
        break;
      case PerfStyle::compact:
        text_ += fmt::format("{:>16} {:>7} [{:03d}] {}: {:>24}: ", c, cur, cpu, time,
                             system_of(event) + ":" + event);
        break;
      case PerfStyle::pid_tid:
        text_ += fmt::format("{} {:>5}/{:<5} [{:03d}] d..2. {}:          1 {}: ", c, cur, cur, cpu,
                             time, event);
        break;
    }
  }

  void sched_switch(int cpu, int64_t ns, int prev, const std::string& state, int next) {
    header(cpu, ns, prev, "sched_switch");
    if (style_ == PerfStyle::compact)
      text_ += fmt::format("{}:{} [120] {} ==> {}:{} [120]\n", comm(prev, cpu), prev, state,
                           comm(next, cpu), next);
    else
      text_ += fmt::format(
          "prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} "
          "next_prio=120\n",
          comm(prev, cpu), prev, state, comm(next, cpu), next);
  }

  void wake(const std::string& event, int cpu, int64_t ns, int cur, int target, int target_cpu) {
    header(cpu, ns, cur, event);
    if (style_ == PerfStyle::compact && event == "sched_wakeup")
      text_ += fmt::format("{}:{} [120] CPU:{:03d}\n", comm(target), target, target_cpu);
    else if (style_ == PerfStyle::pid_tid)
      text_ += fmt::format("comm={} pid={} prio=120 success=1 target_cpu={:03d}\n", comm(target),
                           target, target_cpu);
    else
      text_ += fmt::format("comm={} pid={} prio=120 target_cpu={:03d}\n", comm(target), target,
                           target_cpu);
  }
  void waking(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    wake("sched_waking", cpu, ns, cur, target, target_cpu);
  }
  void wakeup(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    wake("sched_wakeup", cpu, ns, cur, target, target_cpu);
  }
  void wakeup_new(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    wake("sched_wakeup_new", cpu, ns, cur, target, target_cpu);
  }
  void fork(int cpu, int64_t ns, int parent, int child) {
    header(cpu, ns, parent, "sched_process_fork");
    text_ += fmt::format("comm={} pid={} child_comm={} child_pid={}\n", comm(parent), parent,
                         comm(child), child);
  }
  void exit(int cpu, int64_t ns, int tid) {
    header(cpu, ns, tid, "sched_process_exit");
    text_ += fmt::format("comm={} pid={} prio=120\n", comm(tid), tid);
  }
  void irq_entry(int cpu, int64_t ns, int cur, int irq) {
    header(cpu, ns, cur, "irq_handler_entry");
    text_ += fmt::format("irq={} name=nvme0q{}\n", irq, irq);
  }
  void irq_exit(int cpu, int64_t ns, int cur, int irq) {
    header(cpu, ns, cur, "irq_handler_exit");
    text_ += fmt::format("irq={} ret=handled\n", irq);
  }
  void softirq_entry(int cpu, int64_t ns, int cur, int vec) {
    header(cpu, ns, cur, "softirq_entry");
    text_ += fmt::format("vec={} [action={}]\n", vec, vec_name(vec));
  }
  void softirq_exit(int cpu, int64_t ns, int cur, int vec) {
    header(cpu, ns, cur, "softirq_exit");
    text_ += fmt::format("vec={} [action={}]\n", vec, vec_name(vec));
  }
  void hrtimer_entry(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "hrtimer_expire_entry");
    text_ += fmt::format("hrtimer=0xffff9a3c7fc1e8e0 now={} function=hrtimer_wakeup/0x0\n", ns);
  }
  void hrtimer_exit(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "hrtimer_expire_exit");
    text_ += "hrtimer=0xffff9a3c7fc1e8e0\n";
  }
  void block_issue(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "block_rq_issue");
    text_ += fmt::format("259,0 R 4096 () 1052672 + 8 [{}]\n", comm(cur));
  }
  void block_complete(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "block_rq_complete");
    text_ += "259,0 R () 1052672 + 8 [0]\n";
  }
  void net_receive(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "netif_receive_skb");
    text_ += "dev=eth0 skbaddr=0xffff9a3b4c2d1e00 len=84\n";
  }
  void net_queue(int cpu, int64_t ns, int cur) {
    header(cpu, ns, cur, "net_dev_queue");
    text_ += "dev=eth0 skbaddr=0xffff9a3b4c2d1f00 len=98\n";
  }
  void other(int cpu, int64_t ns, int cur, const std::string& event, const std::string& args) {
    header(cpu, ns, cur, event);
    text_ += args + "\n";
  }
  void raw(const std::string& line) { text_ += line + "\n"; }

  const std::string& text() const { return text_; }

 private:
  static std::string system_of(const std::string& event) {
    if (event.starts_with("sched_")) return "sched";
    if (event.starts_with("irq_") || event.starts_with("softirq_")) return "irq";
    if (event.starts_with("hrtimer_")) return "timer";
    if (event.starts_with("block_")) return "block";
    if (event.starts_with("net")) return "net";
    return "probe";
  }
  static std::string vec_name(int vec) {
    static const char* names[] = {"HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
                                  "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU"};
    return vec >= 0 && vec < 10 ? names[vec] : "?";
  }

  PerfStyle style_;
  std::map<int, std::string> comms_;
  std::string text_;
};

}  // namespace snailtrail::testing
