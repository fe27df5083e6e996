// Kernel traces: the perf script reader, the thread-state model and the critical path on
// the textbook cases of seed 002 (critical paths computed by hand in the comments).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernel/critical_path.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel_perf_text.hpp"
#include "trace/trace.hpp"

namespace snailtrail::test_kernel {
namespace {

using kernel::KernelModel;
using testing::PerfStyle;
using testing::PerfText;

constexpr int64_t kBase = 4321'000'000'000;  // perf times are seconds since boot
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

// (start µs, end µs, tid, state), relative to kBase.
using Seg = std::tuple<int64_t, int64_t, int, std::string>;

KernelModel model_of(const std::string& text) {
  return kernel::build_model(kernel::parse_perf_script(text, "test.perf"));
}

int32_t index_of(const KernelModel& m, int tid) {
  auto found = m.find_tid(tid);
  EXPECT_EQ(found.size(), 1u) << "tid " << tid;
  return found.empty() ? -1 : found.front();
}

std::vector<Seg> path_of(const KernelModel& m, int tid, int64_t from_us, int64_t to_us) {
  const auto r = kernel::critical_path(m, index_of(m, tid), us(from_us), us(to_us));
  std::vector<Seg> out;
  for (const auto& s : r.path)
    out.emplace_back((s.start - kBase) / 1000, (s.end - kBase) / 1000, m.threads[s.thread].tid,
                     std::string(kernel::name_of(s.state)));
  return out;
}

// Seed 002, "basic graph nested": A waits for B, B sleeps (nanosleep: a timer).
//   cpu0: A(100) runs 0-10, blocks; idle; A preempted 40-41 then runs 41-50.
//   cpu1: B(200) runs 0-5, sleeps; timer at 30 wakes B; B runnable 30-32, runs 32-40,
//         wakes A at 40.
// CP(A, 0..50): A running 0-10 | B timer 10-30 | B preempted 30-32 | B running 32-40 |
//               A preempted 40-41 | A running 41-50.
PerfText nested_timer(PerfStyle style) {
  PerfText p(style);
  p.name(100, "client main");
  p.name(200, "worker 2");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.sched_switch(1, us(0), 0, "R", 200);
  p.sched_switch(1, us(5), 200, "S", 0);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.hrtimer_entry(1, us(30), 0);
  p.waking(1, us(30), 0, 200, 1);
  p.wakeup(1, us(30), 0, 200, 1);
  p.hrtimer_exit(1, us(30), 0);
  p.sched_switch(1, us(32), 0, "R", 200);
  p.waking(1, us(40), 200, 100, 0);
  p.wakeup(0, us(40), 0, 100, 0);  // on the target CPU (remote wake-up): header is idle
  p.sched_switch(0, us(41), 0, "R", 100);
  p.sched_switch(1, us(45), 200, "S", 0);
  p.sched_switch(0, us(50), 100, "S", 0);
  return p;
}

TEST(KernelCriticalPath, BlockedOnThreadBlockedOnTimer) {
  for (PerfStyle style : {PerfStyle::kv, PerfStyle::compact, PerfStyle::pid_tid}) {
    const KernelModel m = model_of(nested_timer(style).text());
    EXPECT_EQ(m.comm(index_of(m, 100)), "client main");
    EXPECT_EQ(m.comm(index_of(m, 200)), "worker 2");
    const std::vector<Seg> want = {{0, 10, 100, "running"},    {10, 30, 200, "timer"},
                                   {30, 32, 200, "preempted"}, {32, 40, 200, "running"},
                                   {40, 41, 100, "preempted"}, {41, 50, 100, "running"}};
    EXPECT_EQ(path_of(m, 100, 0, 50), want) << "style " << static_cast<int>(style);
    EXPECT_EQ(m.diagnostics.items().size(), 0u) << m.diagnostics.items().front().first;
  }
}

TEST(KernelCriticalPath, RangeClipsAndBlockedAtTheEnd) {
  const KernelModel m = model_of(nested_timer(PerfStyle::kv).text());
  // [20, 35]: A is blocked throughout; B's path over it: timer 20-30, preempted, running.
  const std::vector<Seg> want = {
      {20, 30, 200, "timer"}, {30, 32, 200, "preempted"}, {32, 35, 200, "running"}};
  EXPECT_EQ(path_of(m, 100, 20, 35), want);
  // B alone over [0, 45]: running, timer, preempted, running.
  const std::vector<Seg> b = {{0, 5, 200, "running"},
                              {5, 30, 200, "timer"},
                              {30, 32, 200, "preempted"},
                              {32, 45, 200, "running"}};
  EXPECT_EQ(path_of(m, 200, 0, 45), b);
}

// A chain through three threads (seed 002's `sh | ls | grep`): A waits on B, B waits on C.
//   C(300) runs 0-60 on cpu2 and wakes B at 60; B(200) runs 0-20, blocked 20-60, runs
//   60-70 and wakes A at 70; A(100) runs 0-10, blocked 10-70, runs 70-80.
// CP(A, 0..80): A 0-10 | B 10-20 | C 20-60 | B 60-70 | A 70-80 (all running).
TEST(KernelCriticalPath, ChainThroughThreeThreads) {
  PerfText p(PerfStyle::compact);
  p.name(100, "sh");
  p.name(200, "ls");
  p.name(300, "grep");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.sched_switch(1, us(0), 0, "R", 200);
  p.sched_switch(2, us(0), 0, "R", 300);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.sched_switch(1, us(20), 200, "S", 0);
  p.waking(2, us(60), 300, 200, 1);
  p.sched_switch(1, us(60), 0, "R", 200);
  p.waking(1, us(70), 200, 100, 0);
  p.sched_switch(0, us(70), 0, "R", 100);
  p.sched_switch(1, us(75), 200, "S", 0);
  p.sched_switch(0, us(80), 100, "S", 0);
  const KernelModel m = model_of(p.text());
  const std::vector<Seg> want = {{0, 10, 100, "running"},
                                 {10, 20, 200, "running"},
                                 {20, 60, 300, "running"},
                                 {60, 70, 200, "running"},
                                 {70, 80, 100, "running"}};
  EXPECT_EQ(path_of(m, 100, 0, 80), want);
}

// Preemption: B preempts A at 10 (A runnable, "R+"), A gets the CPU back at 25. A
// preempted interval stays on the path as it is (the preempting thread is not followed).
TEST(KernelCriticalPath, Preemption) {
  PerfText p(PerfStyle::kv);
  p.name(100, "A");
  p.name(200, "B");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.waking(0, us(9), 100, 200, 0);
  p.sched_switch(0, us(10), 100, "R+", 200);
  p.sched_switch(0, us(25), 200, "S", 100);
  p.sched_switch(0, us(30), 100, "S", 0);
  const KernelModel m = model_of(p.text());
  const std::vector<Seg> want = {
      {0, 10, 100, "running"}, {10, 25, 100, "preempted"}, {25, 30, 100, "running"}};
  EXPECT_EQ(path_of(m, 100, 0, 30), want);
}

// The client/server case on one host: the client waits on a socket; the reply arrives
// as a packet (NET_RX softirq, netif_receive_skb) that wakes it: `network`. A disk read
// completes in a device interrupt (block_rq_complete): `block_device`. An interrupt
// with neither: `interrupt`; a wake-up from the idle task with no irq events traced:
// `interrupt` as well.
TEST(KernelCriticalPath, NetworkDeviceInterrupt) {
  PerfText p(PerfStyle::compact);
  p.name(100, "curl");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.net_queue(0, us(5), 100);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.softirq_entry(0, us(40), 0, 3);
  p.net_receive(0, us(40), 0);
  p.waking(0, us(40), 0, 100, 0);
  p.softirq_exit(0, us(41), 0, 3);
  p.sched_switch(0, us(42), 0, "R", 100);
  p.block_issue(0, us(45), 100);
  p.sched_switch(0, us(50), 100, "D", 0);
  p.irq_entry(0, us(70), 0, 33);
  p.block_complete(0, us(70), 0);
  p.waking(0, us(70), 0, 100, 0);
  p.irq_exit(0, us(70), 0, 33);
  p.sched_switch(0, us(71), 0, "R", 100);
  p.sched_switch(0, us(80), 100, "S", 0);
  p.irq_entry(0, us(90), 0, 9);
  p.waking(0, us(90), 0, 100, 0);
  p.irq_exit(0, us(90), 0, 9);
  p.sched_switch(0, us(91), 0, "R", 100);
  p.sched_switch(0, us(95), 100, "S", 0);
  p.waking(0, us(99), 0, 100, 0);  // from idle, no irq traced
  p.sched_switch(0, us(100), 0, "R", 100);
  p.sched_switch(0, us(101), 100, "S", 0);
  const KernelModel m = model_of(p.text());
  const std::vector<Seg> want = {
      {0, 10, 100, "running"},   {10, 40, 100, "network"},      {40, 42, 100, "preempted"},
      {42, 50, 100, "running"},  {50, 70, 100, "block_device"}, {70, 71, 100, "preempted"},
      {71, 80, 100, "running"},  {80, 90, 100, "interrupt"},    {90, 91, 100, "preempted"},
      {91, 95, 100, "running"},  {95, 99, 100, "interrupt"},    {99, 100, 100, "preempted"},
      {100, 101, 100, "running"}};
  EXPECT_EQ(path_of(m, 100, 0, 101), want);
}

// fork/waitpid (seed 002): the parent forks a child and waits for it; the child's path
// before its first event continues in its parent before the fork.
//   P(100) runs 0-10, forks C(101) at 5, blocks 10-50 (waitpid), woken by C's exit at 50.
//   C runnable 5-12, runs 12-50 and exits.
// CP(P, 0..60): P running 0-10 | C preempted 10-12 | C running 12-50 | P preempted 50-51
//               | P running 51-60.   CP(C, 0..50): P running 0-5 | C preempted | C running.
TEST(KernelCriticalPath, ForkAndWaitpid) {
  PerfText p(PerfStyle::kv);
  p.name(100, "bash");
  p.name(101, "bash");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.fork(0, us(5), 100, 101);
  p.wakeup_new(0, us(5), 100, 101, 1);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.sched_switch(1, us(12), 0, "R", 101);
  p.exit(1, us(49), 101);
  p.waking(1, us(50), 101, 100, 0);
  p.sched_switch(1, us(50), 101, "X", 0);
  p.sched_switch(0, us(51), 0, "R", 100);
  p.sched_switch(0, us(60), 100, "S", 0);
  const KernelModel m = model_of(p.text());
  const std::vector<Seg> want = {{0, 10, 100, "running"},
                                 {10, 12, 101, "preempted"},
                                 {12, 50, 101, "running"},
                                 {50, 51, 100, "preempted"},
                                 {51, 60, 100, "running"}};
  EXPECT_EQ(path_of(m, 100, 0, 60), want);
  const std::vector<Seg> child = {
      {0, 5, 100, "running"}, {5, 12, 101, "preempted"}, {12, 50, 101, "running"}};
  EXPECT_EQ(path_of(m, 101, 0, 50), child);
  // After its exit the child has no state: unknown.
  const std::vector<Seg> after = {{12, 50, 101, "running"}, {50, 55, 101, "unknown"}};
  EXPECT_EQ(path_of(m, 101, 12, 55), after);
}

// Missing events reduce what is resolved, never crash: a thread switched in while we
// believed it blocked (its wake-up was lost) keeps `blocked`, counted; time before a
// thread's first event is `unknown`.
TEST(KernelCriticalPath, MissingEventsAreUnknownOrBlocked) {
  PerfText p(PerfStyle::kv);
  p.name(100, "A");
  p.sched_switch(0, us(10), 100, "S", 0);  // A's first event: it was running until 10
  p.sched_switch(0, us(30), 0, "R", 100);  // no wake-up seen
  p.sched_switch(0, us(40), 100, "S", 0);
  const KernelModel m = model_of(p.text());
  EXPECT_EQ(m.diagnostics.get("kernel.switch_in_without_wakeup"), 1u);
  const std::vector<Seg> want = {
      {0, 10, 100, "unknown"}, {10, 30, 100, "blocked"}, {30, 40, 100, "running"}};
  EXPECT_EQ(path_of(m, 100, 0, 40), want);
}

TEST(KernelPerfScript, HeaderLayoutsAndFields) {
  // Real layouts: comm with spaces and digits, pid/tid, no CPU column, flags, period.
  const std::string text =
      "# ========\n"
      "# captured on    : Tue Nov 24 04:00:00 2026\n"
      "# ========\n"
      "#\n"
      "     Web Content 12345 [003] 98765.432101: sched:sched_switch: prev_comm=Web Content "
      "prev_pid=12345 prev_prio=120 prev_state=S ==> next_comm=kworker/3:1H next_pid=77 "
      "next_prio=100\n"
      "kworker/3:1H    77/77    [003] 98765.432102:          1 sched:sched_waking: "
      "comm=DOM Worker pid=12400 prio=120 target_cpu=001\n"
      "   gmain 900 98765.432103: sched:sched_wakeup: DOM Worker:12400 [120] success=1 "
      "CPU:001\n"
      "   swapper     0 [001] d.h2. 98765.432104123: sched:sched_switch: swapper/1:0 [120] R "
      "==> DOM Worker:12400 [120]\n"
      "            perf  3046 [000] 98765.432105: cycles: ffffffff810a1234 __schedule\n"
      "\tffffffff810a1234 __schedule+0x2f4 ([kernel.kallsyms])\n"
      "            perf  3046 [000] 98765.432106: sched:sched_stat_runtime: comm=perf "
      "pid=3046 runtime=1234 [ns] vruntime=5678 [ns]\n";
  const kernel::KernelEvents ev = kernel::parse_perf_script(text, "t.txt");
  ASSERT_EQ(ev.events.size(), 4u);
  EXPECT_EQ(ev.events[0].tid, 12345);
  EXPECT_EQ(ev.strings.str(ev.events[0].comm), "Web Content");
  EXPECT_EQ(ev.events[0].cpu, 3);
  EXPECT_EQ(ev.events[0].ts, 98765'432101'000);
  EXPECT_EQ(ev.events[0].a, 77);
  EXPECT_EQ(ev.strings.str(ev.events[0].comm_a), "kworker/3:1H");
  EXPECT_EQ(ev.events[0].state, kernel::PrevState::blocked);
  EXPECT_EQ(ev.events[1].type, kernel::KType::sched_waking);
  EXPECT_EQ(ev.events[1].tid, 77);
  EXPECT_EQ(ev.events[1].a, 12400);
  EXPECT_EQ(ev.strings.str(ev.events[1].comm_a), "DOM Worker");
  EXPECT_EQ(ev.events[2].cpu, -1);
  EXPECT_EQ(ev.events[2].a, 12400);
  EXPECT_EQ(ev.events[3].ts, 98765'432104'123);
  EXPECT_EQ(ev.events[3].tid, 0);
  EXPECT_EQ(ev.events[3].a, 12400);
  EXPECT_EQ(ev.events[3].state, kernel::PrevState::runnable);
  EXPECT_EQ(ev.diagnostics.get("perf.unknown_event"), 2u);
  EXPECT_EQ(ev.diagnostics.get("perf.skipped_line"), 1u);
}

TEST(KernelPerfScript, ErrorsNameTheLine) {
  try {
    kernel::parse_perf_script(
        "a 1 [000] 1.000001: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=120 "
        "prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n"
        "a 2 [000] 1.000002: sched:sched_waking: comm=c prio=120\n"
        "a 2 [000] 1.000003: sched:sched_switch: x\n",
        "bad.txt");
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt: line 2: sched_waking"), std::string::npos)
        << e.what();
  }
  try {
    kernel::parse_perf_script("hello\nworld\n", "x.txt");
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("x.txt: line 1: not a perf script sample"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(kernel::parse_perf_script("", "empty.txt"), TraceError);
  // A time past int64 nanoseconds is not a time: the line is no sample.
  EXPECT_THROW(
      kernel::parse_perf_script(
          "a 1 [000] 9999999999.000001: sched:sched_waking: comm=c pid=3 prio=1\n", "big.txt"),
      TraceError);
  // Epoch seconds (perf record -k CLOCK_REALTIME) are fine.
  EXPECT_EQ(
      kernel::parse_perf_script(
          "a 1 [000] 1700000000.000001: sched:sched_waking: comm=c pid=3 prio=1\n", "epoch.txt")
          .events.at(0)
          .ts,
      1700000000'000001'000);
  // A cut last line is counted, not an error.
  const auto ev = kernel::parse_perf_script(
      "a 1 [000] 1.000001: sched:sched_waking: comm=c pid=3 prio=120 target_cpu=000\n"
      "a 1 [000] 1.000002: sched:sched_switch: prev_comm=a prev_pid=1 prev_",
      "cut.txt");
  EXPECT_EQ(ev.events.size(), 1u);
  EXPECT_EQ(ev.diagnostics.get("perf.truncated_last_line"), 1u);
}

TEST(KernelPerfScript, OutOfOrderEventsAreSortedAndCounted) {
  PerfText p(PerfStyle::kv);
  p.sched_switch(1, us(20), 0, "R", 200);
  p.sched_switch(0, us(10), 0, "R", 100);
  p.sched_switch(0, us(30), 100, "S", 0);
  const auto ev = kernel::parse_perf_script(p.text(), "o.txt");
  EXPECT_EQ(ev.diagnostics.get("perf.out_of_order"), 1u);
  ASSERT_EQ(ev.events.size(), 3u);
  EXPECT_EQ(ev.events[0].ts, us(10));
  EXPECT_EQ(ev.events[1].ts, us(20));
}

TEST(KernelModel, IntervalsAndWakers) {
  const KernelModel m = model_of(nested_timer(PerfStyle::kv).text());
  const auto& a = m.threads[index_of(m, 100)].intervals;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[1].state, kernel::ThreadState::blocked);
  EXPECT_EQ(a[1].cause, kernel::WakeCause::thread);
  EXPECT_EQ(a[1].waker, index_of(m, 200));
  EXPECT_EQ(a[1].start, us(10));
  EXPECT_EQ(a[1].end, us(40));
  const auto& b = m.threads[index_of(m, 200)].intervals;
  ASSERT_EQ(b.size(), 5u);  // running, timer, preempted, running, blocked until the end
  EXPECT_EQ(b[4].cause, kernel::WakeCause::none);
  EXPECT_EQ(b[1].cause, kernel::WakeCause::timer);
  EXPECT_EQ(m.wakeups, 2u);  // the sched_wakeup after a sched_waking is not a second one
}

}  // namespace
}  // namespace snailtrail::test_kernel
