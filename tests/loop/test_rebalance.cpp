// --skew-profile and --rebalance (src/megaphone/skew.hpp, src/loop/rebalancer.hpp,
// docs/CLOSED-LOOP.md): the skew schedule against a brute-force walk over the records'
// intended times, the hot share of generated keys against the profile, the bin moves
// against their invariants on random loads, the CP per worker of a hand-built trace, and
// runs of keycount-megaphone: a skewed load gets a rebalance decision naming worker 0
// that moves its hottest bins, with the output of a run without rebalance; a balanced
// load gets none.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "cli/setting_flags.hpp"
#include "flow/jobs/jobs.hpp"
#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "loop/rebalancer.hpp"
#include "megaphone/jobs.hpp"
#include "megaphone/skew.hpp"
#include "pag/timeline.hpp"
#include "sanitized.hpp"  // tests/
#include "summary/analysis.hpp"
#include "summary/summary.hpp"

namespace flow = snailtrail::flow;
namespace mp = snailtrail::megaphone;
namespace lp = snailtrail::loop;
using snailtrail::Event;

namespace {

int64_t secs(const std::string& t) {  // "2s", "1.5s" (the tests' own small parser)
  if (t.empty() || t.back() != 's') throw std::invalid_argument("not seconds: " + t);
  size_t used = 0;
  const double v = std::stod(t.substr(0, t.size() - 1), &used);
  if (used != t.size() - 1) throw std::invalid_argument("not seconds: " + t);
  return static_cast<int64_t>(v * 1e9);
}

std::string balance_error_of(const std::string& text) {
  try {
    mp::parse_skew_profile(text, secs);
  } catch (const snailtrail::UsageError& e) {
    return snailtrail::cli::error_message(e);  // as the CLI prints it
  }
  return "";
}

TEST(LoopSkewProfile, ParsesAndNamesTheBadToken) {
  const auto p = mp::parse_skew_profile("0s:0,30s:0.5,60s:1", secs);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].first, 30'000'000'000);
  EXPECT_DOUBLE_EQ(p[1].second, 0.5);
  EXPECT_DOUBLE_EQ(p[2].second, 1.0);
  struct Bad {
    std::string text, token;
  };
  for (const Bad& b : {Bad{"0s:0,30s:1.5", "'30s:1.5'"}, Bad{"0s:0,30s:-0.1", "'30s:-0.1'"},
                       Bad{"1s:0.2", "'1s:0.2'"}, Bad{"0s:0,2s:0.1,1s:0.3", "'1s:0.3'"},
                       Bad{"0s:0,x:0.1", "'x:0.1'"}, Bad{"0s:0,5s", "'5s'"},
                       Bad{"0s:0,5s:abc", "'5s:abc'"}, Bad{"0s:0,", "''"}}) {
    const std::string e = balance_error_of(b.text);
    EXPECT_NE(e.find("--skew-profile"), std::string::npos) << b.text << ": " << e;
    EXPECT_NE(e.find(b.token), std::string::npos) << b.text << ": " << e;
  }
  try {  // the library names the setting, not the flag (trace/setting_error.hpp)
    mp::parse_skew_profile("1s:0.2", secs);
    ADD_FAILURE() << "no error";
  } catch (const snailtrail::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "skew_profile: '1s:0.2': the first time must be 0s");
  }
}

// The share of record i is the profile's value at its intended time (brute force: walk
// the records' times from the rate schedule).
TEST(LoopSkewProfile, ShareByRecordFollowsTheIntendedTimes) {
  const std::vector<std::pair<int64_t, double>> rates = {{0, 4000}, {1'500'000'000, 10000}};
  const std::vector<std::pair<int64_t, double>> skew = {
      {0, 0}, {1'000'000'000, 0.5}, {2'000'000'000, 0.25}};
  const uint32_t streams = 4;
  const mp::Skew s = mp::make_skew(rates, streams, skew, 8);
  const flow::RateSchedule sched(rates, 1.0 / streams);
  uint32_t mismatches = 0;
  for (uint64_t i = 0; i < 8000; ++i) {
    const int64_t t = sched.time_of(i);
    double want = 0;
    for (const auto& [from, x] : skew)
      if (from <= t) want = x;
    if (s.share(i) != want) ++mismatches;  // only at a boundary's rounding
  }
  EXPECT_LE(mismatches, 2u);
  EXPECT_THROW(mp::make_skew({}, 4, skew, 8), std::invalid_argument);
}

// Generated keys: in the key domain, and the hot bins get share + (1 - share) x H / B of
// the records (the uniform keys fall into them too).
TEST(LoopSkewProfile, HotBinsGetTheProfilesShare) {
  for (const bool dense : {true, false}) {
    SCOPED_TRACE(dense ? "keycount" : "hashcount");
    flow::RunConfig cfg;
    cfg.keys = 1'000'003;
    cfg.seed = 5;
    const uint32_t log_bins = 6, B = 64, H = 8;
    const mp::Skew s = mp::make_skew({{0, 10000}}, 2, {{0, 0}, {1'000'000'000, 0.5}}, H);
    // Per stream 5000 records/s: records [0, 5000) at share 0, from 5000 at 0.5.
    for (const auto& [from, to, share] :
         {std::tuple<uint64_t, uint64_t, double>{0, 5000, 0.0}, {5000, 45000, 0.5}}) {
      uint64_t hot = 0;
      for (uint32_t w = 0; w < 2; ++w)
        for (uint64_t i = from; i < to; ++i) {
          const uint64_t k = mp::skewed_key(cfg, dense, log_bins, s, w, i);
          ASSERT_LT(k, cfg.keys);
          hot += mp::key_bin(dense, log_bins, k) < H;
          if (share == 0) {
            ASSERT_EQ(k, flow::jobs::keycount_key(cfg, w, i));
          }
        }
      const double got = static_cast<double>(hot) / (2.0 * static_cast<double>(to - from));
      const double want = share + (1 - share) * H / B;
      EXPECT_NEAR(got, want, 0.015) << "records " << from << ".." << to;
    }
  }
}

TEST(LoopRebalance, ContiguousConfig) {
  EXPECT_EQ(lp::contiguous_config(8, 2), (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(lp::contiguous_config(5, 3), (std::vector<uint32_t>{0, 0, 1, 1, 2}));
}

// move_hot_bins against its contract on random configurations and loads.
TEST(LoopRebalance, MovesHottestBinsOfTheStragglerOnly) {
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 500; ++iter) {
    const uint32_t B = 4 + static_cast<uint32_t>(rng() % 60);
    const uint32_t A = 2 + static_cast<uint32_t>(rng() % 4);
    std::vector<uint32_t> c(B);
    std::vector<uint64_t> load(B);
    for (uint32_t b = 0; b < B; ++b) {
      c[b] = static_cast<uint32_t>(rng() % A);
      load[b] = rng() % 4 == 0 ? 1000 + rng() % 5000 : rng() % 300;
    }
    const uint32_t s = static_cast<uint32_t>(rng() % A);
    const double tol = 0.1;
    std::vector<uint32_t> moved;
    const auto out = lp::move_hot_bins(c, load, s, A, tol, &moved);
    auto per = [&](const std::vector<uint32_t>& cfg) {
      std::vector<double> p(A, 0);
      for (uint32_t b = 0; b < B; ++b) p[cfg[b]] += static_cast<double>(load[b]);
      return p;
    };
    const auto before = per(c), after = per(out);
    double total = 0;
    for (double x : before) total += x;
    const double bound = total / A * (1 + tol);
    // Only the straggler's bins move, to other active workers; `moved` lists them,
    // hottest first.
    std::vector<uint32_t> diff;
    for (uint32_t b = 0; b < B; ++b)
      if (out[b] != c[b]) {
        EXPECT_EQ(c[b], s);
        EXPECT_LT(out[b], A);
        diff.push_back(b);
      }
    std::vector<uint32_t> sorted = moved;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, diff);
    for (size_t i = 1; i < moved.size(); ++i) EXPECT_GE(load[moved[i - 1]], load[moved[i]]);
    // Never worse: no worker that got bins ends above the straggler's load before.
    for (uint32_t b : diff) EXPECT_LT(after[out[b]], before[s] + 1e-9);
    EXPECT_LE(after[s], before[s]);
    if (before[s] <= bound) {
      EXPECT_TRUE(moved.empty());
    }
    // It stops only at the bound or when no bin left on the straggler fits anywhere.
    if (after[s] > bound) {
      const double least = *std::min_element(after.begin(), after.end());
      for (uint32_t b = 0; b < B; ++b)
        if (out[b] == s && load[b] > 0) {
          EXPECT_GE(least + static_cast<double>(load[b]), after[s]) << "bin " << b;
        }
    }
  }
  // A balanced load moves nothing.
  std::vector<uint64_t> even(16, 100);
  std::vector<uint32_t> moved;
  lp::move_hot_bins(lp::contiguous_config(16, 4), even, 0, 4, 0.1, &moved);
  EXPECT_TRUE(moved.empty());
}

// A hand-built trace: three workers processing through the whole window, no messages:
// every worker's timeline is a critical path of its own, a third of the CP each.
TEST(LoopRebalance, CpPerWorkerOfAHandBuiltTrace) {
  std::vector<Event> ev;
  for (uint32_t w = 0; w < 3; ++w)
    for (int k = 0; k < 10; ++k) {
      Event s{};
      s.ts = k * 100'000'000;
      s.worker = w;
      s.activity = snailtrail::ActivityType::processing;
      s.kind = snailtrail::EventKind::start;
      Event e = s;
      e.ts = (k + 1) * 100'000'000;
      e.kind = snailtrail::EventKind::end;
      ev.push_back(s);
      ev.push_back(e);
    }
  const auto cp = lp::cp_per_worker(ev, {}, 4, 0, 1'000'000'000);
  ASSERT_EQ(cp.size(), 4u);
  for (uint32_t w = 0; w < 3; ++w) EXPECT_NEAR(cp[w], 1.0 / 3, 1e-9);
  EXPECT_EQ(cp[3], 0.0);
}

// Rebalancer::plan on a synthetic feed (no runtime, deterministic): worker 0 processes
// without a break, worker 1 idles on its input (`waiting` of its source, as the runtime
// records it) 9 of every 10 ms. The CP analysis names worker 0; with the records of bins 0..3
// (worker 0's) ten times those of the others it moves the hottest of them; with an even load
// nothing (the load guard), although the CP still names worker 0.
std::vector<Event> synthetic_second(int64_t from_ns) {
  std::vector<Event> ev;
  auto act = [&ev](int64_t t0, int64_t t1, uint32_t w, snailtrail::ActivityType a, uint32_t op) {
    Event s{};
    s.ts = t0;
    s.worker = w;
    s.activity = a;
    s.kind = snailtrail::EventKind::start;
    s.flags = snailtrail::kHasOperator;
    s.op = op;
    Event e = s;
    e.ts = t1;
    e.kind = snailtrail::EventKind::end;
    ev.push_back(s);
    ev.push_back(e);
  };
  for (int64_t t = from_ns; t < from_ns + 1'000'000'000; t += 10'000'000) {
    act(t, t + 10'000'000, 0, snailtrail::ActivityType::processing, 1);
    act(t, t + 9'000'000, 1, snailtrail::ActivityType::waiting, 0);
    act(t + 9'000'000, t + 10'000'000, 1, snailtrail::ActivityType::processing, 1);
  }
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
  });
  return ev;
}

TEST(LoopRebalance, PlanOnASyntheticFeed) {
  for (const bool skewed : {true, false}) {
    SCOPED_TRACE(skewed ? "skewed" : "even");
    const uint32_t B = 8;
    std::vector<uint64_t> counts(B, 0);
    lp::RebalanceOptions ro;
    ro.workers = 2;
    ro.bins = B;
    ro.policy_interval_ns = 1'000'000'000;
    ro.bin_counts = [&counts] { return counts; };
    lp::Rebalancer rb(ro);
    const auto config = lp::contiguous_config(B, 2);  // worker 0: bins 0..3
    const std::vector<std::string> ops = {"source", "count"};
    rb.on_events(synthetic_second(0), ops);
    rb.on_events(synthetic_second(1'000'000'000), ops);
    // The events to 2 s close [0 s, 1 s): the start-up interval, skipped (the counts'
    // baseline); nothing else is complete, whatever the time of the call.
    EXPECT_FALSE(rb.plan(500'000'000, config));
    EXPECT_FALSE(rb.plan(2'000'000'000, config));
    for (uint32_t b = 0; b < B; ++b)
      counts[b] += skewed ? (b == 0 ? 4000 : b < 4 ? 1000 + 100 * b : 100) : 1000;
    rb.on_events(synthetic_second(2'000'000'000), ops);
    // [1 s, 2 s) is complete: the analysis starts on its own thread; a later call decides.
    auto to = rb.plan(3'000'000'000, config);
    EXPECT_FALSE(to);
    for (int k = 1; k < 20'000 && !to && rb.analyses().empty(); ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      to = rb.plan(3'000'000'000 + k, config);
    }
    const auto as = rb.analyses();
    ASSERT_EQ(as.size(), 1u);
    EXPECT_EQ(as[0].top, 0);
    EXPECT_GT(as[0].top_cp, 0.9);  // worker 1's wait for input is off the paths
    EXPECT_TRUE(as[0].straggler);
    if (!skewed) {
      EXPECT_FALSE(to);
      EXPECT_TRUE(rb.decisions().empty());
      continue;
    }
    ASSERT_TRUE(to);
    const auto ds = rb.decisions();
    ASSERT_EQ(ds.size(), 1u);
    EXPECT_EQ(ds[0].kind, "rebalance");
    EXPECT_EQ(ds[0].straggler, 0);
    // By hand: worker 0 has 4000 + 1100 + 1200 + 1300 = 7600 records, worker 1 400; mean
    // 4000, bound 4400. Bin 0 (4000) moves: 3600 / 4400, within the bound: done.
    std::vector<uint32_t> moved;
    const auto want = lp::move_hot_bins(
        config,
        [&] {
          std::vector<uint64_t> l(B);
          for (uint32_t b = 0; b < B; ++b) l[b] = b == 0 ? 4000 : b < 4 ? 1000 + 100 * b : 100;
          return l;
        }(),
        0, 2, 0.1, &moved);
    EXPECT_EQ(*to, want);
    EXPECT_EQ(ds[0].bins, moved);
    EXPECT_EQ(moved, std::vector<uint32_t>{0});
    // A call during the migration: nothing (the planner is asked again only once it is
    // complete; that call starts the settling).
    EXPECT_FALSE(rb.plan(3'500'000'000, *to));
  }
}

// As soon as an interval's evidence is complete, not at the next policy tick (as DS2 since
// loop47): the skewed synthetic feed handed over as the runtime does (every 50 ms each
// worker's events before then), a plan call after each buffer at the newest event time.
// Oracle, by brute force over the feed: the analysis of [1 s, 2 s) starts at the first call
// at which every worker has an event at or after its end plus the margin (100 ms); the
// decision comes at the first call after the analysis is done (here: the same time, as the
// test waits for it). With ticks every 1 s it started at 3 s.
TEST(LoopDecisionLatency, RebalanceAnalyzesAsSoonAsTheIntervalsEvidenceIsComplete) {
  const uint32_t B = 8;
  const int64_t ms = 1'000'000, flush = 50 * ms;
  std::vector<uint64_t> counts(B, 0);
  lp::RebalanceOptions ro;
  ro.workers = 2;
  ro.bins = B;
  ro.policy_interval_ns = 1000 * ms;
  ro.bin_counts = [&counts] { return counts; };
  lp::Rebalancer rb(ro);
  auto config = lp::contiguous_config(B, 2);
  const std::vector<std::string> ops = {"source", "count"};
  std::vector<std::vector<Event>> per(2);
  for (int64_t s = 0; s < 4; ++s)
    for (const Event& e : synthetic_second(s * 1000 * ms)) per[e.worker].push_back(e);
  std::vector<size_t> next(2, 0);
  std::vector<int64_t> newest(2, -1);
  std::vector<int64_t> calls;
  std::vector<int64_t> watermarks;  // per call: the oldest newest event over the workers
  int64_t now = 0;
  for (int64_t f = flush; f <= 4000 * ms && rb.decisions().empty(); f += flush) {
    for (uint32_t b = 0; b < B; ++b) counts[b] += b == 0 ? 200 : b < 4 ? 50 + 5 * b : 5;
    for (uint32_t w = 0; w < 2; ++w) {
      std::vector<Event> buf;
      for (; next[w] < per[w].size() && per[w][next[w]].ts < f; ++next[w])
        buf.push_back(per[w][next[w]]);
      if (buf.empty()) continue;
      for (const Event& e : buf) {
        newest[e.worker] = std::max(newest[e.worker], e.ts);
        now = std::max(now, e.ts);
      }
      rb.on_events(buf, ops);
      calls.push_back(now);
      watermarks.push_back(std::min(newest[0], newest[1]));
      auto to = rb.plan(now, config);
      for (int k = 0; k < 60'000 && !to && rb.analyzing(); ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        to = rb.plan(now, config);
      }
      if (to) {
        config = *to;
        break;
      }
    }
  }
  const auto as = rb.analyses();
  ASSERT_FALSE(as.empty());
  EXPECT_DOUBLE_EQ(as[0].from_s, 1.0);
  EXPECT_DOUBLE_EQ(as[0].to_s, 2.0);
  size_t first = calls.size();
  for (size_t i = 0; i < calls.size() && first == calls.size(); ++i)
    if (watermarks[i] >= 2100 * ms) first = i;
  ASSERT_LT(first, calls.size());
  const auto started = static_cast<int64_t>(std::llround(as[0].time_s * 1e9));
  EXPECT_EQ(started, calls[first]) << "the evidence was complete at " << calls[first] * 1e-9
                                   << " s, the analysis started at " << as[0].time_s << " s";
  const auto ds = rb.decisions();
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].straggler, 0);
  EXPECT_EQ(std::llround(ds[0].time_s * 1e9), calls[first]);
  EXPECT_LT(ds[0].time_s, 2.5);  // a tick: 3 s
}

// In-process equals offline across the interval's borders, on a feed delivered as the
// runtime delivers it (an activity when it ends, a receipt when the receiver takes it),
// every 10 ms: a receiver 1.15 s behind its input (a message sent at 1.2 s, received at
// 2.35 s, beyond the 100 ms the analysis waits), a message sent before the events kept
// for the next interval and received in it (0.7 s -> 1.3 s), and a wait across both the
// kept events' start and the interval's (0.85 s -> 1.05 s), and a message inside the
// sender's last activity before the kept events' start but before the receiver's (0.392 s
// -> 0.3925 s; the receiver then waits until 0.6 s), as a Megaphone control message under
// load: kept with the sender's activity,
// it must keep its receipt, or it would look unreceived and be cut at each later interval's
// end). Each interval's CP per worker equals cp_per_worker over the whole feed, as `analyze`
// of the written trace gives it.
TEST(LoopRebalance, InProcessAnalysisSeesWhatCrossesItsBorders) {
  using snailtrail::ActivityType;
  using snailtrail::EventKind;
  const int64_t ms = 1'000'000;
  struct Fed {
    int64_t at;  // when the runtime hands it to the sink
    Event e;
  };
  std::vector<Fed> feed;
  auto act = [&](uint32_t w, int64_t t0, int64_t t1, ActivityType a) {
    Event s{};
    s.ts = t0;
    s.worker = w;
    s.activity = a;
    s.kind = EventKind::start;
    s.flags = snailtrail::kHasOperator;
    s.op = 1;
    Event e = s;
    e.ts = t1;
    e.kind = EventKind::end;
    feed.push_back({t1, s});
    feed.push_back({t1, e});
  };
  auto msg = [&](uint32_t from, uint32_t to, int64_t sent, int64_t received, int64_t c) {
    feed.push_back({sent, snailtrail::message_event(from, sent, ActivityType::data_message,
                                                    EventKind::send, to, c)});
    feed.push_back({received, snailtrail::message_event(to, received, ActivityType::data_message,
                                                        EventKind::recv, from, c)});
  };
  for (int64_t t = 0; t < 3000 * ms; t += 10 * ms) act(0, t, t + 10 * ms, ActivityType::processing);
  for (int64_t t = 0; t < 3000 * ms; t += 10 * ms) {
    if (t == 850 * ms) {
      act(1, t, 1050 * ms, ActivityType::waiting);
      t = 1040 * ms;
      continue;
    }
    if (t == 390 * ms) {  // worker 1's last start before 0.4 s at 0.395 s, a wait
      act(1, t, 395 * ms, ActivityType::processing);
      act(1, 395 * ms, 600 * ms, ActivityType::waiting);
      t = 590 * ms;
      continue;
    }
    act(1, t, t + 10 * ms, ActivityType::processing);
  }
  msg(0, 1, 1200 * ms, 2350 * ms, 7);
  msg(1, 0, 700 * ms, 1300 * ms, 8);
  // Handed over with the activities around them (a flush of each worker, in time order).
  feed.push_back({400 * ms, snailtrail::message_event(0, 392 * ms, ActivityType::control_message,
                                                      EventKind::send, 1, 9)});
  feed.push_back(
      {395 * ms, snailtrail::message_event(1, 392 * ms + 500'000, ActivityType::control_message,
                                           EventKind::recv, 0, 9)});
  std::stable_sort(feed.begin(), feed.end(), [](const Fed& a, const Fed& b) {
    return a.at != b.at ? a.at < b.at : a.e.ts < b.e.ts;
  });
  lp::RebalanceOptions ro;
  ro.workers = 2;
  ro.bins = 4;
  ro.policy_interval_ns = 500 * ms;
  ro.over_next = 1e9;  // never a straggler: no decision, no migration
  ro.bin_counts = [] { return std::vector<uint64_t>(4, 1); };
  lp::Rebalancer rb(ro);
  const auto config = lp::contiguous_config(4, 2);
  const std::vector<std::string> ops = {"source", "count"};
  size_t next = 0;
  for (int64_t now = 10 * ms; now <= 3000 * ms; now += 10 * ms) {
    std::vector<Event> batch;
    for (; next < feed.size() && feed[next].at <= now; ++next) batch.push_back(feed[next].e);
    rb.on_events(std::move(batch), ops);
    EXPECT_FALSE(rb.plan(now + 1, config));
    // An interval's analysis starts once the feed has passed its end by 100 ms, from
    // [0.5 s, 1 s) on: 150 ms after each end, wait for it, so that none is skipped.
    const int64_t due = (now - 250 * ms) / (500 * ms) - 1;
    if (now >= 1250 * ms && now % (500 * ms) == 250 * ms)
      for (int k = 0; k < 60'000 && static_cast<int64_t>(rb.analyses().size()) < due; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        EXPECT_FALSE(rb.plan(now + 2, config));
      }
  }
  std::vector<Event> all;
  for (const Fed& f : feed) all.push_back(f.e);
  std::stable_sort(all.begin(), all.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  const auto as = rb.analyses();
  std::vector<double> froms;
  for (const auto& a : as) {
    froms.push_back(a.from_s);
    const auto from = static_cast<int64_t>(std::llround(a.from_s * 1e9));
    const auto want = lp::cp_per_worker(all, ops, 2, from, from + 500 * ms);
    for (uint32_t w = 0; w < 2; ++w)
      EXPECT_NEAR(a.cp[w], want[w], 1e-12) << "worker " << w << " at " << a.from_s << " s";
  }
  EXPECT_EQ(froms, (std::vector<double>{0.5, 1.0, 1.5, 2.0}));
}

struct SkewRun {
  flow::RunResult r;
  flow::RunConfig cfg;
  std::vector<lp::DecisionRecord> decisions;
  std::vector<lp::CpAnalysis> analyses;
  std::vector<mp::MigrationRecord> migrations;
};

std::string describe(const SkewRun& run) {
  std::string s;
  for (const auto& a : run.analyses) {
    s += std::to_string(a.from_s) + "-" + std::to_string(a.to_s) + " s: cp";
    for (double x : a.cp) s += " " + std::to_string(x);
    s += a.moved ? " (moved)\n" : "\n";
  }
  for (const auto& d : run.decisions) s += d.reason + "\n";
  return s;
}

// keycount-megaphone on 2 workers, 64 bins in two contiguous ranges (hot bins [0, 8) on
// worker 0), `records` records at `rate` with the hot share `share` from the start.
// With `all`, every trace event of the run is appended to it too.
SkewRun run_skewed(double share, bool rebalance, uint64_t records, double rate, double cost_us,
                   std::vector<Event>* all = nullptr) {
  const uint32_t W = 2, log_bins = 6, B = 64;
  mp::JobOptions o;
  o.base = "keycount";
  o.log_bins = log_bins;
  o.strategy = mp::Strategy::batched;
  o.cost_us = cost_us;
  o.initial = lp::contiguous_config(B, W);
  o.skew = mp::make_skew({{0, rate}}, W, {{0, share}}, B / 8);
  auto counter = std::make_shared<mp::BinCounter>(W, B);
  o.bin_counter = counter;
  std::unique_ptr<lp::Rebalancer> rb;
  if (rebalance) {
    lp::RebalanceOptions ro;
    ro.workers = W;
    ro.bins = B;
    ro.policy_interval_ns = 500'000'000;
    ro.bin_counts = [counter] { return counter->totals(); };
    rb = std::make_unique<lp::Rebalancer>(ro);
    o.planner = [r = rb.get()](int64_t now, const std::vector<uint32_t>& c) {
      return r->plan(now, c);
    };
  }
  auto log = std::make_shared<mp::MigrationLog>();
  SkewRun out;
  out.cfg.job = mp::register_job(o, log);
  out.cfg.workers = W;
  out.cfg.rate = rate;
  out.cfg.records = records;
  out.cfg.duration_ns = 60'000'000'000;
  out.cfg.keys = 50'000;
  if (rb) {
    out.cfg.trace = true;
    auto mu = std::make_shared<std::mutex>();
    out.cfg.on_trace_events = [r = rb.get(), all, mu](flow::TraceBuffer ev,
                                                      const std::vector<std::string>& ops) {
      if (all) {
        std::lock_guard<std::mutex> lock(*mu);
        all->insert(all->end(), ev->begin(), ev->end());
      }
      r->on_events(*ev, ops);
    };
  }
  out.r = flow::run_job(out.cfg);
  if (rb) {
    out.decisions = rb->decisions();
    out.analyses = rb->analyses();
  }
  out.migrations = log->records();
  return out;
}

// 50 us per record, 16 k records/s, 70% of them to the hot bins: worker 0 gets 0.7 + 0.3
// x 0.5 = 85% (13.6 k/s, 0.68 s of work per second), worker 1 15%. The rebalancer must
// name worker 0 and move hot bins; the output equals the same input without rebalance.
TEST(LoopRebalance, SkewedLoadMovesTheHottestBinsOffTheStraggler) {
  const uint64_t records = 64'000;  // 4 s
  const auto run = run_skewed(0.7, true, records, 16'000, 50);
  SCOPED_TRACE(describe(run));
  EXPECT_EQ(run.r.records, records);
  ASSERT_FALSE(run.decisions.empty());
  const auto& d = run.decisions.front();
  EXPECT_EQ(d.kind, "rebalance");
  EXPECT_EQ(d.straggler, 0);
  EXPECT_GE(d.cp_share, 2 * d.next_cp);
  ASSERT_FALSE(d.bins.empty());
  // The hottest bins: the hot range [0, 8), all on worker 0.
  for (uint32_t b : d.bins) EXPECT_LT(b, 8u) << "bin " << b;
  // Applied as a completed batched migration.
  ASSERT_GE(run.migrations.size(), 1u);
  EXPECT_TRUE(run.migrations.front().completed);
  EXPECT_EQ(run.migrations.front().bins_moved, d.bins.size());
  // The same output as the same input without rebalance, and as the plain loop.
  const auto plain = run_skewed(0.7, false, records, 16'000, 0);
  EXPECT_EQ(plain.r.records, records);
  EXPECT_TRUE(plain.migrations.empty());
  EXPECT_EQ(flow::output_digest(run.r.output), flow::output_digest(plain.r.output));
  EXPECT_EQ(flow::first_difference(run.r.output, flow::reference_output(run.cfg, run.r.generated)),
            "");
}

// No oscillation: without skew (every bin the same expected load) no rebalance decision,
// whatever the CP of the intervals says (the load guard).
TEST(LoopRebalance, BalancedLoadGetsNoDecision) {
  const auto run = run_skewed(0.0, true, 40'000, 10'000, 50);  // 4 s
  SCOPED_TRACE(describe(run));
  EXPECT_GE(run.analyses.size(), 3u);  // it did look
  EXPECT_TRUE(run.decisions.empty());
  EXPECT_TRUE(run.migrations.empty());
}

// One code path: each interval the run analyzed in process has the CP per worker that
// `analyze --window 500ms` of the run's trace gives for the same window (the same
// borders, the same events; the in-process analysis sees 100 ms of events before the
// interval instead of the whole trace before it, which leaves the window's PAG the same).
TEST(LoopRebalance, InProcessAnalysesEqualAnalyzeOfTheWrittenTrace) {
  std::vector<Event> all;
  // 4 s (6 s under a sanitizer: the batched migration after the first decision settles
  // later there, and an interval is analyzed only once it has settled).
  const uint64_t records = snailtrail::testing::kSanitized ? 96'000 : 64'000;
  const auto run = run_skewed(0.7, true, records, 16'000, 50, &all);
  SCOPED_TRACE(describe(run));
  ASSERT_GE(run.analyses.size(), 2u);
  snailtrail::Trace t;
  std::stable_sort(all.begin(), all.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  t.events.resize(all.size());
  std::copy(all.begin(), all.end(), t.events.begin());
  for (uint32_t w = 0; w < 2; ++w) t.worker_names[w] = "worker-" + std::to_string(w);
  const snailtrail::Pag pag = snailtrail::build_pag(t);
  snailtrail::AnalysisOptions ao;
  ao.windows.width_ns = 500'000'000;
  ao.sample_single_path = false;
  std::map<int64_t, std::vector<double>> offline;  // window start -> CP per worker
  snailtrail::analyze_pag(pag, ao, [&](const snailtrail::WindowView& v) {
    std::vector<double> cp(2, 0.0);
    for (size_t k = 0; k < pag.worker_count() && k < v.summary.cp.worker.size(); ++k)
      if (pag.worker_ids[k] < 2) cp[pag.worker_ids[k]] = v.summary.cp.worker[k];
    offline[v.summary.window.start] = cp;
  });
  for (const auto& a : run.analyses) {
    const auto from = static_cast<int64_t>(std::llround(a.from_s * 1e9));
    EXPECT_EQ(from % 500'000'000, 0) << "interval not on the grid: " << a.from_s;
    auto it = offline.find(from);
    ASSERT_NE(it, offline.end()) << "no offline window at " << a.from_s;
    {
      std::FILE* f = std::fopen(("/tmp/all_" + std::to_string(from) + ".txt").c_str(), "w");
      for (const Event& e : all)
        if (e.ts >= from - 300'000'000 && e.ts < from + 800'000'000)
          std::fprintf(f, "%ld %u %d %d %u %ld %u\n", e.ts, e.worker, int(e.kind), int(e.activity),
                       e.remote, e.correlator, e.flags);
      std::fclose(f);
    }
    ASSERT_EQ(a.cp.size(), 2u);
    for (uint32_t w = 0; w < 2; ++w)
      EXPECT_NEAR(a.cp[w], it->second[w], 1e-9) << "worker " << w << " at " << a.from_s << " s";
  }
}

}  // namespace
