// The runtime's stack sampler (src/flow/profile, docs/FLAME.md): a known hot function
// on top of the on-CPU samples, a known waiting call on top of the off-CPU ones, and a
// profiled 2-worker job. Runs under ThreadSanitizer with the other runtime tests.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "flow/profile/sampler.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

using profile::Profile;
using profile::Profiler;

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

__attribute__((noinline)) uint64_t flame_test_hot_loop(double cpu_s) {
  volatile uint64_t x = 1;
  const double until = thread_cpu_s() + cpu_s;
  while (thread_cpu_s() < until)
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) void flame_test_sleepy_wait(int64_t ts, int ms) {
  profile::wait_begins(ts, 9);  // ActivityType::waiting
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  profile::wait_ends(ts + int64_t{ms} * 1'000'000);
}

std::string leaf(const Profile& p, const Profile::Sample& s) {
  return s.depth ? p.frames[p.stack[s.first + s.depth - 1]] : "";
}

TEST(FlowProfile, HotFunctionOnTopAndWaitingCallOffCpu) {
  Profiler prof(1000);
  const auto origin = std::chrono::steady_clock::now();
  std::thread t([&] {
    auto guard = prof.attach(7, origin);
    flame_test_hot_loop(0.15);
    flame_test_sleepy_wait(1000, 20);
  });
  t.join();
  Profile p = prof.finish();
  EXPECT_EQ(p.period_ns, 1'000'000);
  EXPECT_EQ(p.dropped, 0u);
  std::map<std::string, int> on_leaf;
  int on = 0;
  const Profile::Sample* off = nullptr;
  for (const Profile::Sample& s : p.samples) {
    EXPECT_EQ(s.worker, 7u);
    if (s.off_cpu) {
      off = &s;
      continue;
    }
    on += static_cast<int>(s.count);
    on_leaf[leaf(p, s)] += static_cast<int>(s.count);
    EXPECT_GE(s.ts, 0);
  }
  // 150 ms of CPU at 1000 Hz: about 150 periods (a loaded machine changes nothing: the
  // clock is the thread's own CPU time; the kernel fires CPU timers once a tick and the
  // overruns count the periods in between).
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer defers signals to its next interceptor and merges pending ones, so
  // periods get lost there; the stacks are still right.
  EXPECT_GE(on, 30) << on;
#else
  // Seen: >= 120 in three runs alone, 117 beside a parallel test run at load 18 (periods lost
  // when the thread is descheduled with a signal pending).
  EXPECT_GE(on, 90) << on;
#endif
  EXPECT_LE(on, 200) << on;
  std::string top;
  int top_n = 0;
  for (auto& [name, n] : on_leaf)
    if (n > top_n) top = name, top_n = n;
  std::string stacks;  // for the failure message
  for (const Profile::Sample& s : p.samples) {
    for (uint32_t k = 0; k < s.depth; ++k) stacks += p.frames[p.stack[s.first + k]] + ";";
    stacks += "\n";
  }
  EXPECT_NE(top.find("flame_test_hot_loop"), std::string::npos) << top << "\n" << stacks;
  for (const Profile::Sample& s : p.samples)  // the handler's frames are cut
    for (uint32_t k = 0; k < s.depth; ++k) {
      EXPECT_EQ(p.frames[p.stack[s.first + k]].find("on_sigprof"), std::string::npos);
      EXPECT_NE(p.frames[p.stack[s.first + k]], "__restore_rt");
    }
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(off->count, 20'000'000u);
  EXPECT_EQ(off->ts, 1000);
  EXPECT_EQ(off->activity, 9);
  EXPECT_NE(leaf(p, *off).find("flame_test_sleepy_wait"), std::string::npos) << leaf(p, *off);
}

TEST(FlowProfile, ProfiledJobsOffCpuSamplesAreItsWaits) {
  Profiler prof(2000);
  RunConfig cfg;
  cfg.job = "wordcount";
  cfg.workers = 2;
  cfg.records = 200000;  // fixed work (1.6 M words): CPU for both workers however loaded
  cfg.keys = 1000;
  cfg.skew = 0.3;
  cfg.trace = true;
  cfg.profiler = &prof;
  RunResult r = run_job(cfg);
  Profile p = prof.finish();
  int64_t last = 0;
  for (const Event& e : r.events) last = std::max(last, e.ts);
  uint64_t per_worker[2] = {0, 0};
  std::multiset<std::tuple<uint32_t, int64_t, uint64_t, int>> off_cpu, waits;
  for (const Profile::Sample& s : p.samples) {
    ASSERT_LT(s.worker, 2u);
    EXPECT_GE(s.ts, 0);
    EXPECT_LE(s.ts, last + 50'000'000);
    if (s.off_cpu) {
      EXPECT_GE(s.count, 1000u);
      EXPECT_TRUE(s.activity == 6 || s.activity == 9) << int(s.activity);  // input, waiting
      off_cpu.insert({s.worker, s.ts, s.count, s.activity});
    } else {
      per_worker[s.worker] += s.count;
    }
  }
  // The oracle for off-CPU samples is the trace itself: the runtime records one waiting
  // (or input) span per wait of 1 us or more, and the sampler must take one off-CPU
  // sample for exactly those waits, same start, same length, same type. (Which worker
  // waits depends on scheduling: a worker that is never starved may have none.)
  std::map<uint32_t, const Event*> open;
  for (const Event& e : r.events) {
    if (e.activity != ActivityType::input && e.activity != ActivityType::waiting) continue;
    if (e.kind == EventKind::start) {
      open[e.worker] = &e;
    } else if (e.kind == EventKind::end && open.count(e.worker)) {
      const Event& s = *open[e.worker];
      waits.insert(
          {e.worker, s.ts, static_cast<uint64_t>(e.ts - s.ts), static_cast<int>(s.activity)});
      open.erase(e.worker);
    }
  }
  // (Input spans also come from the sources' own reads, which are not waits: for those
  // only one direction holds.)
  EXPECT_FALSE(off_cpu.empty());
  for (const auto& o : off_cpu) EXPECT_EQ(waits.count(o), off_cpu.count(o));
  for (const auto& w : waits) {
    if (std::get<3>(w) == static_cast<int>(ActivityType::waiting)) {
      EXPECT_EQ(off_cpu.count(w), waits.count(w));
    }
  }
  // On-CPU samples as the kernel's tick catches the workers running (under the load of a
  // parallel test run one of them may get none).
  EXPECT_GT(per_worker[0] + per_worker[1], 0u);
  bool runtime_frames = false;
  for (const std::string& f : p.frames) runtime_frames |= f.find("snailtrail::flow::") == 0;
  EXPECT_TRUE(runtime_frames);
}

}  // namespace
}  // namespace snailtrail::flow
