// The verdict on kernel traces (issue 33): a thread sleeping on a timer, waiting for a
// disk, for a packet or for an interrupt is woken by a pseudo-worker busy with `io`
// (kernel/to_trace.hpp); the verdict names the wait's real cause and advises on it, never
// "faster storage" for a sleep, and never calls a pseudo-worker a straggler.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <string>

#include "kernel_perf_text.hpp"
#include "output/names.hpp"
#include "output/verdict_text.hpp"
#include "process_util.hpp"
#include "summary/summary.hpp"
#include "summary/verdict.hpp"
#include "trace/wait_cause.hpp"

namespace snailtrail::test_verdict_kernel {
namespace {

using testing::PerfStyle;
using testing::PerfText;
using testing::run_binary;
using testing::slurp;
using testing::TempDirTest;

constexpr int64_t kBase = 5555'000'000'000;  // perf times are seconds since boot
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

enum class Wait { timer, disk, network, interrupt };

// One wait of thread `tid` on `cpu` from `from` µs, ended at `to` µs by `how`; the thread
// runs again from to + 1.
void wait_on(PerfText& p, Wait how, int cpu, int tid, int64_t from, int64_t to) {
  switch (how) {
    case Wait::timer:
      p.sched_switch(cpu, us(from), tid, "S", 0);
      p.hrtimer_entry(cpu, us(to), 0);
      p.waking(cpu, us(to), 0, tid, cpu);
      p.hrtimer_exit(cpu, us(to), 0);
      break;
    case Wait::disk:
      p.block_issue(cpu, us(from - 1), tid);
      p.sched_switch(cpu, us(from), tid, "D", 0);
      p.irq_entry(cpu, us(to), 0, 33);
      p.block_complete(cpu, us(to), 0);
      p.waking(cpu, us(to), 0, tid, cpu);
      p.irq_exit(cpu, us(to), 0, 33);
      break;
    case Wait::network:
      p.net_queue(cpu, us(from - 1), tid);
      p.sched_switch(cpu, us(from), tid, "S", 0);
      p.softirq_entry(cpu, us(to), 0, 3);
      p.net_receive(cpu, us(to), 0);
      p.waking(cpu, us(to), 0, tid, cpu);
      p.softirq_exit(cpu, us(to), 0, 3);
      break;
    case Wait::interrupt:
      p.sched_switch(cpu, us(from), tid, "S", 0);
      p.irq_entry(cpu, us(to), 0, 16);
      p.waking(cpu, us(to), 0, tid, cpu);
      p.irq_exit(cpu, us(to), 0, 16);
      break;
  }
  p.sched_switch(cpu, us(to + 1), 0, "R", tid);
}

// Two threads on two CPUs, each looping: run 100 µs, wait 900 µs on `how`; five rounds.
// The waits are 90 % of the time; no thread wakes another.
std::string waiting_threads(Wait how) {
  PerfText p(PerfStyle::kv);
  p.name(100, "poller");
  p.name(200, "reader");
  for (int cpu = 0; cpu < 2; ++cpu) {
    const int tid = cpu == 0 ? 100 : 200;
    const int64_t shift = cpu * 37;  // not in lockstep
    p.sched_switch(cpu, us(shift), 0, "R", tid);
    for (int round = 0; round < 5; ++round) {
      const int64_t start = shift + round * 1000;
      wait_on(p, how, cpu, tid, start + 100, start + 999);
    }
    p.sched_switch(cpu, us(shift + 5100), tid, "S", 0);
  }
  // perf script prints in time order.
  std::vector<std::string> lines;
  std::string line;
  for (char c : p.text()) {
    line += c;
    if (c == '\n') lines.push_back(std::move(line)), line.clear();
  }
  auto time_of = [](const std::string& l) {
    const size_t colon = l.find(": ");
    const size_t sp = l.rfind(' ', colon);
    return std::stod(l.substr(sp + 1, colon - sp - 1));
  };
  std::stable_sort(lines.begin(), lines.end(), [&](const std::string& a, const std::string& b) {
    return time_of(a) < time_of(b);
  });
  std::string text;
  for (const std::string& l : lines) text += l;
  return text;
}

class KernelVerdict : public TempDirTest {
 protected:
  KernelVerdict() : TempDirTest("kverdict") {}
  struct Found {
    std::string kind, name, cause, text;
  };
  // The run verdict of `analyze` (JSONL's last line) and the table's VERDICT paragraph.
  Found analyze(Wait how, std::string* table = nullptr) {
    const std::string trace = path("sched.txt").string();
    std::ofstream(trace) << waiting_threads(how);
    const std::string jsonl = path("out.jsonl").string();
    const auto r = run_binary("analyze " + trace + " --what-if --format jsonl -o " + jsonl);
    EXPECT_EQ(r.code, 0) << r.out;
    const std::string text = slurp(jsonl);
    const size_t last = text.rfind("{\"run\"");
    EXPECT_NE(last, std::string::npos) << text;
    Found f;
    if (last == std::string::npos) return f;
    simdjson::dom::parser parser;
    const simdjson::padded_string line(text.substr(last));
    const simdjson::dom::element v = parser.parse(line)["verdict"];
    f.kind = std::string(v["kind"].get_string().value());
    f.name = std::string(v["name"].get_string().value());
    std::string_view cause;
    if (v["cause"].get_string().get(cause) == simdjson::SUCCESS) f.cause = std::string(cause);
    f.text = std::string(v["text"].get_string().value());
    if (table) {
      const auto t = run_binary("analyze " + trace + " --what-if");
      EXPECT_EQ(t.code, 0) << t.out;
      *table = t.out;
    }
    return f;
  }
};

TEST_F(KernelVerdict, TimerSleepsAreSleepsNotStorage) {
  std::string table;
  const Found f = analyze(Wait::timer, &table);
  EXPECT_EQ(f.kind, "wait") << f.text;
  EXPECT_EQ(f.cause, "timer");
  EXPECT_EQ(f.name, "[timer]");
  EXPECT_EQ(f.text.rfind("Waiting on timers (sleeps) limits latency", 0), 0u) << f.text;
  EXPECT_NE(f.text.find("shorten or remove the sleeps"), std::string::npos) << f.text;
  EXPECT_EQ(f.text.find("storage"), std::string::npos) << f.text;
  EXPECT_EQ(f.text.find("straggler"), std::string::npos) << f.text;
  // The what-if sentence is the [timer] row of WHAT IF (waking the threads sooner).
  EXPECT_NE(f.text.find("Woken twice as fast, they would shorten the critical path by"),
            std::string::npos)
      << f.text;
  EXPECT_NE(table.find("VERDICT: Waiting on timers (sleeps)"), std::string::npos) << table;
  EXPECT_NE(table.find("2x faster             [timer]"), std::string::npos) << table;
}

TEST_F(KernelVerdict, BlockIoWaitsAskForFasterStorage) {
  const Found f = analyze(Wait::disk);
  EXPECT_EQ(f.kind, "wait") << f.text;
  EXPECT_EQ(f.cause, "block_device");
  EXPECT_EQ(f.name, "[block_device: irq 33 (nvme0q33)]");
  EXPECT_EQ(f.text.rfind("Block I/O limits latency", 0), 0u) << f.text;
  EXPECT_NE(f.text.find("faster storage or fewer synchronous reads"), std::string::npos) << f.text;
}

TEST_F(KernelVerdict, PacketWaitsPointAtTheNetworkOrTheSender) {
  const Found f = analyze(Wait::network);
  EXPECT_EQ(f.kind, "wait") << f.text;
  EXPECT_EQ(f.cause, "network");
  EXPECT_EQ(f.name, "[network: softirq NET_RX]");
  EXPECT_EQ(f.text.rfind("Waiting on the network limits latency", 0), 0u) << f.text;
  EXPECT_NE(f.text.find("the network or the sender"), std::string::npos) << f.text;
  EXPECT_EQ(f.text.find("storage"), std::string::npos) << f.text;
}

TEST_F(KernelVerdict, InterruptWaitsNameTheIrq) {
  const Found f = analyze(Wait::interrupt);
  EXPECT_EQ(f.kind, "wait") << f.text;
  EXPECT_EQ(f.cause, "interrupt");
  EXPECT_EQ(f.name, "[interrupt: irq 16 (nvme0q16)]");
  EXPECT_EQ(f.text.rfind("Waiting on device interrupts limits latency", 0), 0u) << f.text;
  EXPECT_NE(f.text.find("most on [interrupt: irq 16 (nvme0q16)]"), std::string::npos) << f.text;
}

// The naming convention both sides rely on (kernel writes, the verdict reads).
TEST(WaitCause, PseudoWorkerNamesReadBack) {
  EXPECT_EQ(wait_cause_of("[timer]"), WaitCause::timer);
  EXPECT_EQ(wait_cause_of("[timer: softirq TIMER]"), WaitCause::timer);
  EXPECT_EQ(wait_cause_of("[block_device: irq 33 (nvme0q33)]"), WaitCause::block_device);
  EXPECT_EQ(wait_cause_of("[network: softirq NET_RX]"), WaitCause::network);
  EXPECT_EQ(wait_cause_of("[interrupt]"), WaitCause::interrupt);
  // Threads ("comm:tid") and anything else are no pseudo-worker.
  for (const char* name : {"timer", "[timer", "[timers]", "[timer:x]", "[]", "worker 2:200",
                           "[timer]:12", "[thread]", "[none]"})
    EXPECT_EQ(wait_cause_of(name), WaitCause::none) << name;
}

// A pseudo-worker is never the straggler, nor the worker that "limits latency"; when
// nothing stands out, the most critical thread is named, not a wait.
TEST(WaitCause, PseudoWorkerIsNoStraggler) {
  Trace trace;
  trace.worker_names[0] = "app:100";
  trace.worker_names[1] = "app:101";
  trace.worker_names[2] = "[timer]";
  trace.worker_names[3] = "[network: softirq NET_RX]";
  Pag pag;
  pag.worker_ids = {0, 1, 2, 3};
  const Names names(trace, pag);
  const std::vector<WaitCause> causes = output_detail::wait_causes(names);
  ASSERT_EQ(causes.size(), 4u);
  EXPECT_EQ(causes[2], WaitCause::timer);
  Groups cp, conv;
  cp.worker = {0.1, 0.05, 0.6, 0.25};
  conv.worker = {0.3, 0.3, 0.2, 0.2};
  const std::vector<WhatIf> what_if = {{WhatIfKind::worker, 2, false, 2, 3e6, 0, 0, 0, 0, 0}};
  for (VerdictKind k : {VerdictKind::straggler, VerdictKind::worker}) {
    const Verdict v =
        name_the_wait(verdict_about(k, 2, cp, conv, what_if), causes, cp, conv, what_if);
    EXPECT_EQ(v.kind, VerdictKind::wait) << name_of(k);
    EXPECT_EQ(v.id, 2u);
    EXPECT_EQ(v.cause, WaitCause::timer);
    EXPECT_DOUBLE_EQ(v.cp, 0.6);
    ASSERT_NE(v.what_if, nullptr);
    EXPECT_EQ(verdict_text(v, names),
              "Waiting on timers (sleeps) limits latency: threads sleeping until a timer fires "
              "are 60.0% of the critical paths, most on [timer] (60.0%). Woken twice as fast, "
              "they would shorten the critical path by 3ms. Next: the threads sleep on "
              "purpose: shorten or remove the sleeps and poll intervals, or wake the threads "
              "by an event instead of a timer.");
  }
  // An io verdict: the pseudo-worker with the most CP.
  const Verdict io = name_the_wait(
      verdict_about(VerdictKind::activity, static_cast<uint32_t>(ActivityType::io), cp, conv, {}),
      causes, cp, conv, {});
  EXPECT_EQ(io.kind, VerdictKind::wait);
  EXPECT_EQ(io.id, 2u);
  // Nothing stands out: the most critical thread.
  const Verdict b =
      name_the_wait(verdict_about(VerdictKind::balanced, 2, cp, conv, {}), causes, cp, conv, {});
  EXPECT_EQ(b.kind, VerdictKind::balanced);
  EXPECT_EQ(b.id, 0u);
  EXPECT_DOUBLE_EQ(b.cp, 0.1);
  // Without pseudo-workers, verdicts stay as they are.
  const Verdict s = name_the_wait(verdict_about(VerdictKind::straggler, 2, cp, conv, what_if), {},
                                  cp, conv, what_if);
  EXPECT_EQ(s.kind, VerdictKind::straggler);
}

}  // namespace
}  // namespace snailtrail::test_verdict_kernel
