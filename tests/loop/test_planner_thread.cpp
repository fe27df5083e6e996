// The closed loop's planner thread (src/loop/planner_thread.hpp, issue 35): planning runs
// off the workers' threads. Oracles: a planner that sleeps 200 ms leaves worker 0's trace
// empty over the sleep when called on worker 0 (the old structure) and full of processing
// through the planner thread; the events the planners got equal, per worker, the written
// trace's (.snail, read back) at every plan call and over the run; and the same recorded
// feed gives the same decisions through the thread as with the planner called in line.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <tuple>

#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "loop/planner_thread.hpp"
#include "megaphone/jobs.hpp"
#include "recorded_run.hpp"
#include "trace/trace_io.hpp"

namespace test_planner_thread {
namespace {

namespace flow = snailtrail::flow;
namespace mp = snailtrail::megaphone;
namespace lp = snailtrail::loop;
using snailtrail::Event;
using snailtrail::EventKind;

using Config = std::vector<uint32_t>;

auto fields(const Event& e) {
  return std::make_tuple(e.ts, e.correlator, e.worker, e.remote, e.op, e.records, e.activity,
                         e.kind, e.flags, e.reserved);
}
bool same(const Event& x, const Event& y) {
  return fields(x) == fields(y);
}

// keycount-megaphone on 2 workers at `rate` records/s for `duration_ns`, traced; each
// worker's buffers go to `sink` (the run's own trace sinks).
flow::RunConfig keycount(const mp::JobOptions& o, double rate, int64_t duration_ns) {
  auto log = std::make_shared<mp::MigrationLog>();
  flow::RunConfig cfg;
  cfg.job = mp::register_job(o, log);
  cfg.workers = 2;
  cfg.rate = rate;
  cfg.duration_ns = duration_ns;
  cfg.keys = 20'000;
  cfg.trace = true;
  cfg.trace_flush_ns = 20'000'000;
  return cfg;
}

// The sleep of the planner (steady-clock ns) and the events the runtime wrote.
struct SleepRun {
  int64_t t0 = 0, t1 = 0;
  std::vector<Event> events;
  flow::RunResult r;
  flow::RunConfig cfg;
};

// A planner that sleeps 200 ms once, at the first call after 400 ms; in line on worker 0
// (the old structure) or through the planner thread.
SleepRun run_with_sleeping_planner(bool through_thread) {
  SleepRun out;
  std::atomic<bool> slept{false};
  auto sleeper = [&](int64_t now, const Config&) -> std::optional<Config> {
    if (now >= 400'000'000 && !slept.exchange(true)) {
      out.t0 = std::chrono::steady_clock::now().time_since_epoch().count();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      out.t1 = std::chrono::steady_clock::now().time_since_epoch().count();
    }
    return std::nullopt;
  };
  lp::PlannerThread pt([](const std::vector<Event>&, const std::vector<std::string>&) {}, sleeper);
  mp::JobOptions o;
  o.base = "keycount";
  o.log_bins = 4;
  if (through_thread)
    o.planner = [&pt](int64_t now, const Config& c) { return pt.ask(now, c); };
  else
    o.planner = sleeper;
  out.cfg = keycount(o, 20'000, 1'000'000'000);
  std::mutex mu;
  out.cfg.on_trace_events = [&](flow::TraceBuffer ev, const std::vector<std::string>& ops) {
    {
      std::lock_guard<std::mutex> lock(mu);
      out.events.insert(out.events.end(), ev->begin(), ev->end());
    }
    pt.hand_over(std::move(ev), ops);
  };
  out.r = flow::run_job(out.cfg);
  pt.finish();
  return out;
}

// Per worker: activity events (not messages: a receipt is stamped at the message's
// arrival, by its sender) inside the sleep, 1 ms off both ends, and the records the
// operators' activations that ended inside it processed.
struct InSleep {
  uint64_t activity[2] = {0, 0};
  uint64_t records[2] = {0, 0};
};
InSleep in_sleep(const SleepRun& s) {
  InSleep n;
  const int64_t from = s.t0 - s.r.clock_origin_ns + 1'000'000;
  const int64_t to = s.t1 - s.r.clock_origin_ns - 1'000'000;
  for (const Event& e : s.events) {
    if (e.is_message() || e.worker > 1 || e.ts <= from || e.ts >= to) continue;
    ++n.activity[e.worker];
    if (e.kind == EventKind::end && e.has(snailtrail::kHasRecords))
      n.records[e.worker] += e.records;
  }
  return n;
}

TEST(LoopPlannerThread, WorkersKeepRoutingWhileThePlannerSleeps) {
  // The old structure: worker 0 runs the planner; over its sleep worker 0 records nothing.
  const SleepRun inline_run = run_with_sleeping_planner(false);
  ASSERT_GT(inline_run.t1, inline_run.t0);
  const InSleep a = in_sleep(inline_run);
  EXPECT_EQ(a.activity[0], 0u);
  EXPECT_EQ(a.records[0], 0u);
  // Through the planner thread: both workers go on processing and routing records.
  const SleepRun threaded = run_with_sleeping_planner(true);
  ASSERT_GT(threaded.t1, threaded.t0);
  const InSleep b = in_sleep(threaded);
  EXPECT_GT(b.activity[0], 0u);
  EXPECT_GT(b.activity[1], 0u);
  EXPECT_GT(b.records[0], 0u);  // 20 k records/s: about 4 k records over the sleep
  EXPECT_GT(b.records[1], 0u);
  EXPECT_EQ(threaded.r.counters.early_records, 0u);
  EXPECT_EQ(flow::first_difference(threaded.r.output,
                                   flow::reference_output(threaded.cfg, threaded.r.generated)),
            "");
}

TEST(LoopPlannerThread, ThePlannerGetsTheWrittenTracesEvents) {
  // What the planners were given, in the order given (the planner thread only), and how
  // much of it at each plan call.
  std::vector<Event> given;
  std::vector<size_t> at_plan;
  lp::PlannerThread pt(
      [&](const std::vector<Event>& ev, const std::vector<std::string>&) {
        given.insert(given.end(), ev.begin(), ev.end());
      },
      [&](int64_t, const Config&) -> std::optional<Config> {
        at_plan.push_back(given.size());
        return std::nullopt;
      });
  mp::JobOptions o;
  o.base = "keycount";
  o.log_bins = 4;
  o.planner = [&pt](int64_t now, const Config& c) { return pt.ask(now, c); };
  flow::RunConfig cfg = keycount(o, 20'000, 600'000'000);
  std::mutex mu;
  std::vector<Event> written;
  std::vector<std::string> names;
  cfg.on_trace_events = [&](flow::TraceBuffer ev, const std::vector<std::string>& ops) {
    {
      std::lock_guard<std::mutex> lock(mu);
      written.insert(written.end(), ev->begin(), ev->end());
      if (names.size() < ops.size()) names = ops;
    }
    pt.hand_over(std::move(ev), ops);
  };
  const flow::RunResult r = flow::run_job(cfg);
  pt.finish();
  // The oracle: the trace as `run --trace` writes it, read back from the file.
  snailtrail::Trace t;
  t.source = "test";
  std::stable_sort(written.begin(), written.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  t.events.resize(written.size());
  std::copy(written.begin(), written.end(), t.events.begin());
  for (uint32_t i = 0; i < names.size(); ++i) t.operator_names[i] = names[i];
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("planner_thread_" + std::to_string(::getpid()) + ".snail"))
                               .string();
  snailtrail::write_trace(t, path);
  const snailtrail::Trace file = snailtrail::read_trace(path);
  std::filesystem::remove(path);
  std::vector<std::vector<Event>> per_worker(2);
  for (size_t i = 0; i < file.events.size(); ++i) {
    ASSERT_LT(file.events[i].worker, 2u);
    per_worker[file.events[i].worker].push_back(file.events[i]);
  }
  ASSERT_GT(per_worker[0].size(), 1000u);
  ASSERT_GT(per_worker[1].size(), 1000u);
  ASSERT_GT(at_plan.size(), 10u);   // the controller asked all along (every 1 ms at most)
  at_plan.push_back(given.size());  // and the whole run
  // At every plan call, each worker's events given so far are the start of its events in
  // the file: none lost, repeated or reordered in the hand-over; at the end, all of them.
  std::vector<size_t> seen(2, 0);
  size_t k = 0;
  for (size_t cut : at_plan) {
    for (; k < cut; ++k) {
      const Event& e = given[k];
      ASSERT_LT(e.worker, 2u);
      ASSERT_LT(seen[e.worker], per_worker[e.worker].size()) << "event " << k;
      ASSERT_TRUE(same(e, per_worker[e.worker][seen[e.worker]]))
          << "worker " << e.worker << " event " << seen[e.worker] << " at ts " << e.ts;
      ++seen[e.worker];
    }
  }
  EXPECT_EQ(seen[0], per_worker[0].size());
  EXPECT_EQ(seen[1], per_worker[1].size());
  const auto st = pt.stats();
  EXPECT_EQ(st.events, given.size());
  EXPECT_EQ(st.requests + 1, at_plan.size());
  EXPECT_EQ(r.counters.early_records, 0u);
}

TEST(LoopPlannerThread, SameFeedGivesTheSameDecisionsAsInLine) {
  const snailtrail::testing::RecordedRun recorded = snailtrail::testing::record_closed_loop_run();
  const std::vector<std::vector<Event>>& feed = recorded.buffers;
  const std::vector<std::string>& ops = recorded.operators;
  ASSERT_FALSE(feed.empty());
  // In line: the sink and the planner called on the caller's thread (worker 0's before).
  lp::Autoscaler direct(snailtrail::testing::replay_options());
  // Through the thread: the buffers moved to it, the planner asked without waiting.
  lp::Autoscaler threaded(snailtrail::testing::replay_options());
  lp::PlannerThread pt(
      [&threaded](const std::vector<Event>& ev, const std::vector<std::string>& names) {
        threaded.on_events(ev, names);
      },
      [&threaded](int64_t now, const Config& c) { return threaded.plan(now, c); }, 0);
  Config c1 = direct.initial_config(), c2 = threaded.initial_config();
  int64_t now = 0;
  for (const std::vector<Event>& b : feed) {
    if (b.empty()) continue;
    for (const Event& e : b) now = std::max(now, e.ts);
    direct.on_events(b, ops);
    auto a = direct.plan(now, c1);
    pt.hand_over(std::make_shared<const std::vector<Event>>(b), ops);
    // The request this call posts sees the buffer; its answer comes at the next call.
    auto z = pt.ask(now, c2);
    ASSERT_FALSE(z) << "at " << now;
    pt.wait_idle();
    z = pt.ask(now, c2);
    ASSERT_EQ(a.has_value(), z.has_value()) << "at " << now;
    if (a) {
      EXPECT_EQ(*a, *z);
      c1 = *a;
      c2 = *z;
    } else {
      pt.wait_idle();  // the request this call posted (a plan call at the same time: no tick)
    }
  }
  pt.finish();
  const auto d1 = direct.decisions(), d2 = threaded.decisions();
  ASSERT_EQ(d1.size(), d2.size());
  EXPECT_GE(d1.size(), 1u);  // the step to 24 k records/s needs 2 workers
  for (size_t i = 0; i < d1.size(); ++i) {
    EXPECT_EQ(d1[i].time_s, d2[i].time_s);
    EXPECT_EQ(d1[i].active_workers, d2[i].active_workers);
    EXPECT_EQ(d1[i].reason, d2[i].reason);
  }
  EXPECT_EQ(direct.intervals_observed(), threaded.intervals_observed());
}

// An error of a planner reaches worker 0's next ask and finish(), not lost on the thread.
TEST(LoopPlannerThread, APlannersErrorReachesTheCaller) {
  lp::PlannerThread pt([](const std::vector<Event>&, const std::vector<std::string>&) {},
                       [](int64_t, const Config&) -> std::optional<Config> {
                         throw std::runtime_error("planner failed");
                       });
  EXPECT_FALSE(pt.ask(0, {0, 0}));
  pt.wait_idle();
  EXPECT_THROW(pt.ask(2'000'000, {0, 0}), std::runtime_error);
  EXPECT_THROW(pt.finish(), std::runtime_error);
}

}  // namespace
}  // namespace test_planner_thread
