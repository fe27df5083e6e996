// One kernel scenario written twice, for the tests that compare the two readers: as
// `perf script` text (PerfText) and as the spec of LTTng kernel events that
// tests/kernel_ctf_writer.py turns into CTF (one "TS CPU EVENT key=value ..." per line,
// with LTTng's event and field names: irq_softirq_entry, timer_hrtimer_expire_entry,
// prev_tid/next_tid, parent_tid/child_tid, prev_state as the kernel's state bits), and
// a third time as the spec of what `perf data convert --to-ctf` writes (kernel_ctf_writer.py
// --perf: "sched:sched_switch", prev_pid/next_pid, pid, parent_pid/child_pid, and the
// sample's thread as `_tid`).
#pragma once

#include <string>

#include "kernel_perf_text.hpp"

namespace snailtrail::testing {

class DualText {
 public:
  PerfText perf{PerfStyle::kv};
  std::string spec;
  std::string perf_spec;  // perf's CTF

  void name(int tid, std::string comm) { perf.name(tid, std::move(comm)); }
  const std::string& text() const { return perf.text(); }
  void line(int64_t ns, int cpu, const std::string& rest) {
    spec += std::to_string(ns) + " " + std::to_string(cpu) + " " + rest + "\n";
  }
  // perf's CTF: "subsystem:event", the sample's thread, then the fields.
  void perf_line(int64_t ns, int cpu, const std::string& event, int tid, const std::string& rest) {
    perf_spec += std::to_string(ns) + " " + std::to_string(cpu) + " " + event +
                 " _tid=" + std::to_string(tid) + " " + rest + "\n";
  }

  void sched_switch(int cpu, int64_t ns, int prev, const std::string& st, int next) {
    perf.sched_switch(cpu, ns, prev, st, next);
    const int state = st == "R" ? 0 : st == "R+" ? 0x100 : st == "S" ? 1 : st == "D" ? 2 : 0x10;
    line(ns, cpu,
         "sched_switch prev_comm=" + c(prev, cpu) + " prev_tid=" + std::to_string(prev) +
             " prev_prio=20 prev_state=" + std::to_string(state) + " next_comm=" + c(next, cpu) +
             " next_tid=" + std::to_string(next) + " next_prio=20");
    perf_line(ns, cpu, "sched:sched_switch", prev,
              "prev_comm=" + c(prev, cpu) + " prev_pid=" + std::to_string(prev) +
                  " prev_prio=120 prev_state=" + std::to_string(state) + " next_comm=" +
                  c(next, cpu) + " next_pid=" + std::to_string(next) + " next_prio=120");
  }
  void waking(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    perf.waking(cpu, ns, cur, target, target_cpu);
    wake("sched_waking", cpu, ns, cur, target, target_cpu);
  }
  void wakeup(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    perf.wakeup(cpu, ns, cur, target, target_cpu);
    wake("sched_wakeup", cpu, ns, cur, target, target_cpu);
  }
  void wakeup_new(int cpu, int64_t ns, int cur, int target, int target_cpu = 0) {
    perf.wakeup_new(cpu, ns, cur, target, target_cpu);
    wake("sched_wakeup_new", cpu, ns, cur, target, target_cpu);
  }
  void fork(int cpu, int64_t ns, int parent, int child) {
    perf.fork(cpu, ns, parent, child);
    line(ns, cpu,
         "sched_process_fork parent_comm=" + c(parent) + " parent_tid=" + std::to_string(parent) +
             " parent_pid=" + std::to_string(parent) + " child_comm=" + c(child) +
             " child_tid=" + std::to_string(child) + " child_pid=" + std::to_string(child));
    perf_line(ns, cpu, "sched:sched_process_fork", parent,
              "parent_comm=" + c(parent) + " parent_pid=" + std::to_string(parent) +
                  " child_comm=" + c(child) + " child_pid=" + std::to_string(child));
  }
  void irq_entry(int cpu, int64_t ns, int cur, int irq) {
    perf.irq_entry(cpu, ns, cur, irq);
    const std::string name = " name=nvme0q" + std::to_string(irq);
    line(ns, cpu, "irq_handler_entry irq=" + std::to_string(irq) + name);
    perf_line(ns, cpu, "irq:irq_handler_entry", cur, "irq=" + std::to_string(irq) + name);
  }
  void irq_exit(int cpu, int64_t ns, int cur, int irq) {
    perf.irq_exit(cpu, ns, cur, irq);
    line(ns, cpu, "irq_handler_exit irq=" + std::to_string(irq) + " ret=1");
    perf_line(ns, cpu, "irq:irq_handler_exit", cur, "irq=" + std::to_string(irq) + " ret=1");
  }
  void softirq_entry(int cpu, int64_t ns, int cur, int vec) {
    perf.softirq_entry(cpu, ns, cur, vec);
    line(ns, cpu, "irq_softirq_entry vec=" + std::to_string(vec));
    perf_line(ns, cpu, "irq:softirq_entry", cur, "vec=" + std::to_string(vec));
  }
  void softirq_exit(int cpu, int64_t ns, int cur, int vec) {
    perf.softirq_exit(cpu, ns, cur, vec);
    line(ns, cpu, "irq_softirq_exit vec=" + std::to_string(vec));
    perf_line(ns, cpu, "irq:softirq_exit", cur, "vec=" + std::to_string(vec));
  }
  void hrtimer_entry(int cpu, int64_t ns, int cur) {
    perf.hrtimer_entry(cpu, ns, cur);
    line(ns, cpu,
         "timer_hrtimer_expire_entry hrtimer=1234 now=" + std::to_string(ns) + " function=5678");
    perf_line(ns, cpu, "timer:hrtimer_expire_entry", cur,
              "hrtimer=1234 now=" + std::to_string(ns) + " function=5678");
  }
  void hrtimer_exit(int cpu, int64_t ns, int cur) {
    perf.hrtimer_exit(cpu, ns, cur);
    line(ns, cpu, "timer_hrtimer_expire_exit hrtimer=1234");
    perf_line(ns, cpu, "timer:hrtimer_expire_exit", cur, "hrtimer=1234");
  }
  void block_complete(int cpu, int64_t ns, int cur) {
    perf.block_complete(cpu, ns, cur);
    line(ns, cpu, "block_rq_complete dev=271581184 sector=1052672 nr_sector=8 error=0");
    perf_line(ns, cpu, "block:block_rq_complete", cur,
              "dev=271581184 sector=1052672 nr_sector=8 error=0 rwbs=R");
  }
  void net_receive(int cpu, int64_t ns, int cur) {
    perf.net_receive(cpu, ns, cur);
    line(ns, cpu, "netif_receive_skb skbaddr=1 len=84 name=eth0");
    perf_line(ns, cpu, "net:netif_receive_skb", cur, "skbaddr=1 len=84 name=eth0");
  }

 private:
  std::string c(int tid, int cpu = 0) const {
    std::string s = perf.comm(tid, cpu);
    for (size_t i; (i = s.find(' ')) != std::string::npos;) s.replace(i, 1, "\\s");
    return s;
  }
  void wake(const char* event, int cpu, int64_t ns, int cur, int target, int target_cpu) {
    line(ns, cpu,
         std::string(event) + " comm=" + c(target) + " tid=" + std::to_string(target) +
             " prio=20 target_cpu=" + std::to_string(target_cpu));
    perf_line(ns, cpu, "sched:" + std::string(event), cur,
              "comm=" + c(target) + " pid=" + std::to_string(target) +
                  " prio=120 target_cpu=" + std::to_string(target_cpu));
  }
};

}  // namespace snailtrail::testing
