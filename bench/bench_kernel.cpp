// Kernel traces (issue #22: >= 2 M events/s on one core for the perf script reader and the
// critical path): a generated `perf script` text of a busy 16-CPU machine (400 threads
// waking each other, timers, device and network interrupts; ~2 M events), read, turned
// into the thread-state model, and the critical path of the threads most woken computed
// over the whole trace. items_per_second = perf script events per second.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernel/critical_path.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"

namespace {

using namespace snailtrail;

struct Generated {
  std::string text;
  uint64_t events = 0;
};

const Generated& generated() {
  static const Generated g = [] {
    Generated out;
    constexpr int kCpus = 16, kThreads = 400;
    constexpr uint64_t kEvents = 2'000'000;
    std::mt19937_64 rng(42);
    std::vector<int> cur(kCpus, 0);
    std::vector<int> runnable, blocked;
    for (int t = 1; t <= kThreads; ++t) runnable.push_back(1000 + t);
    auto comm = [](int tid) {
      return tid == 0 ? std::string("swapper") : fmt::format("worker {}", tid % 37);
    };
    fmt::memory_buffer buf;
    auto it = std::back_inserter(buf);
    int64_t ns = 12345'000'000'000;
    auto header = [&](int cpu, int tid, const char* event) {
      fmt::format_to(it, "{:>16} {:>6} [{:03d}] {}.{:06d}: {:>26}: ", comm(tid), tid, cpu,
                     ns / 1'000'000'000, (ns % 1'000'000'000) / 1000, event);
      ++out.events;
    };
    auto take = [&](std::vector<int>& v) {
      const size_t k = rng() % v.size();
      const int x = v[k];
      v[k] = v.back();
      v.pop_back();
      return x;
    };
    auto sw = [&](int cpu, const char* state) {
      const int prev = cur[cpu];
      const int next = runnable.empty() ? 0 : take(runnable);
      header(cpu, prev, "sched:sched_switch");
      fmt::format_to(it,
                     "prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} "
                     "next_pid={} next_prio=120\n",
                     comm(prev), prev, state, comm(next), next);
      if (prev) (state[0] == 'R' ? runnable : blocked).push_back(prev);
      cur[cpu] = next;
    };
    auto wake = [&](int cpu, int waker) {
      if (blocked.empty()) return;
      const int w = take(blocked);
      header(cpu, waker, "sched:sched_waking");
      fmt::format_to(it, "comm={} pid={} prio=120 target_cpu={:03d}\n", comm(w), w, cpu);
      header(cpu, waker, "sched:sched_wakeup");
      fmt::format_to(it, "comm={} pid={} prio=120 target_cpu={:03d}\n", comm(w), w, cpu);
      runnable.push_back(w);
    };
    while (out.events < kEvents) {
      ns += 1000 + static_cast<int64_t>(rng() % 20'000);
      const int cpu = static_cast<int>(rng() % kCpus);
      const int r = cur[cpu];
      const unsigned u = static_cast<unsigned>(rng() % 100);
      if (r == 0) {
        if (!runnable.empty()) sw(cpu, "R");
      } else if (u < 35) {
        sw(cpu, u < 25 ? "S" : "D");
      } else if (u < 70) {
        wake(cpu, r);
      } else if (u < 80) {
        sw(cpu, "R+");
      } else if (u < 90) {
        header(cpu, r, "irq:irq_handler_entry");
        fmt::format_to(it, "irq=33 name=nvme0q3\n");
        header(cpu, r, "block:block_rq_complete");
        fmt::format_to(it, "259,0 R () 1052672 + 8 [0]\n");
        wake(cpu, r);
        header(cpu, r, "irq:irq_handler_exit");
        fmt::format_to(it, "irq=33 ret=handled\n");
      } else {
        header(cpu, r, "timer:hrtimer_expire_entry");
        fmt::format_to(it, "hrtimer=0xffff9a3c7fc1e8e0 function=hrtimer_wakeup now={}\n", ns);
        wake(cpu, r);
        header(cpu, r, "timer:hrtimer_expire_exit");
        fmt::format_to(it, "hrtimer=0xffff9a3c7fc1e8e0\n");
      }
    }
    out.text.assign(buf.data(), buf.size());
    return out;
  }();
  return g;
}

void BM_PerfScriptRead(benchmark::State& state) {
  const Generated& g = generated();
  for (auto _ : state) {
    kernel::KernelEvents ev = kernel::parse_perf_script(g.text, "bench.perf");
    benchmark::DoNotOptimize(ev.events.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * g.events));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g.text.size()));
}
BENCHMARK(BM_PerfScriptRead)->Unit(benchmark::kMillisecond);

// Read + model + the critical path of the 8 longest-lived threads over the whole trace.
void BM_PerfScriptCriticalPath(benchmark::State& state) {
  const Generated& g = generated();
  uint64_t segments = 0, hops = 0;
  for (auto _ : state) {
    kernel::KernelModel m = kernel::build_model(kernel::parse_perf_script(g.text, "bench.perf"));
    for (int32_t t = 0; t < 8 && t < static_cast<int32_t>(m.threads.size()); ++t) {
      const auto r = kernel::critical_path(m, t, m.begin, m.end);
      segments += r.path.size();
      hops += r.waker_hops;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * g.events));
  state.counters["segments_per_path"] =
      static_cast<double>(segments) / static_cast<double>(state.iterations() * 8);
  state.counters["waker_hops_per_path"] =
      static_cast<double>(hops) / static_cast<double>(state.iterations() * 8);
}
BENCHMARK(BM_PerfScriptCriticalPath)->Unit(benchmark::kMillisecond);

}  // namespace
