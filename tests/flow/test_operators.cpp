// Operators with state (src/flow/operators.hpp) and the built-in jobs against their
// plain single-threaded loops, on several worker counts.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>

#include "flow/histogram.hpp"
#include "flow/jobs/jobs.hpp"
#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

using Rec = std::pair<Time, uint64_t>;

std::vector<Rec> input_of(uint32_t w) {
  std::mt19937_64 rng(77 + w);
  std::vector<Rec> out;
  Time t = 0;
  for (int i = 0; i < 300; ++i) {
    t += rng() % 3;
    out.emplace_back(t, rng() % 17);
  }
  return out;
}

Stream<uint64_t> replay(Worker& w) {
  auto recs = std::make_shared<std::vector<Rec>>(input_of(w.index()));
  size_t pos = 0;
  return source<uint64_t>(w, "replay", [recs, pos](Capability& cap, Output<uint64_t>& out) mutable {
    for (int i = 0; i < 7 && pos < recs->size(); ++i, ++pos) {
      cap.downgrade((*recs)[pos].first);
      out.give(cap, (*recs)[pos].second);
    }
    if (pos == recs->size()) cap.drop();
  });
}

TEST(FlowOperators, StatefulUnaryAppliesEachKeyInTimestampOrder) {
  for (uint32_t workers : {1u, 2u, 3u}) {
    std::mutex mu;
    std::map<uint64_t, uint64_t> counts;
    std::vector<uint64_t> out_of_order(workers, 0);
    std::vector<std::vector<Rec>> outputs(workers);
    run_dataflow(workers, [&](Worker& w) {
      struct St {
        Time last = 0;
        uint64_t n = 0;
      };
      auto s = replay(w);
      auto o = stateful_unary<uint64_t, St>(
          s, "count", [](uint64_t k) { return k; },
          [&, i = w.index()](Time t, uint64_t k, uint64_t&, St& st, Session<uint64_t>& out) {
            if (t < st.last) ++out_of_order[i];
            st.last = t;
            ++st.n;
            out.give(k);
          },
          [&](FlatMap<St>& states) {
            std::lock_guard<std::mutex> lock(mu);
            for (auto& [k, st] : states) counts[k] += st.n;
          });
      sink(o, "sink", [&, i = w.index()](Time t, uint64_t k) { outputs[i].emplace_back(t, k); });
    });
    std::map<uint64_t, uint64_t> want;
    std::vector<Rec> all;
    for (uint32_t w = 0; w < workers; ++w)
      for (auto [t, k] : input_of(w)) ++want[k], all.emplace_back(t, k);
    EXPECT_EQ(counts, want) << workers;
    for (auto n : out_of_order) EXPECT_EQ(n, 0u);
    std::vector<Rec> got;
    for (auto& o : outputs) got.insert(got.end(), o.begin(), o.end());
    std::sort(got.begin(), got.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(got, all);
  }
}

// Exchange: a batch whose records all go to one worker moves without a copy; batches
// that go to one worker but for their last record, or to many, are split. Every record
// reaches worker_of(key) exactly once.
TEST(FlowOperators, ExchangeDeliversSingleAndMixedDestinationBatchesOnce) {
  for (uint32_t workers : {1u, 2u, 3u}) {
    std::vector<std::vector<uint64_t>> keys_of(workers);  // keys routed to each worker
    for (uint64_t k = 0; keys_of[workers - 1].size() < 2000 || keys_of[0].size() < 2000; ++k)
      keys_of[worker_of(k, workers)].push_back(k);
    auto batches = [&](uint32_t w) {  // (time, keys) given at once by worker w
      const uint32_t d = (w + 1) % workers, e = (w + 2) % workers;
      std::vector<std::pair<Time, std::vector<uint64_t>>> b;
      b.emplace_back(1, std::vector<uint64_t>(keys_of[d].begin(), keys_of[d].begin() + 1500));
      std::vector<uint64_t> last_differs(keys_of[d].begin(), keys_of[d].begin() + 1023);
      last_differs.push_back(keys_of[e][7]);
      b.emplace_back(2, last_differs);
      std::vector<uint64_t> mixed;
      for (uint32_t i = 0; i < 900; ++i) mixed.push_back(keys_of[i % workers][i]);
      b.emplace_back(3, mixed);
      return b;
    };
    std::mutex mu;
    std::map<std::pair<Time, uint64_t>, uint64_t> got, want;
    uint64_t misrouted = 0;
    run_dataflow(workers, [&](Worker& w) {
      auto todo =
          std::make_shared<std::vector<std::pair<Time, std::vector<uint64_t>>>>(batches(w.index()));
      size_t pos = 0;
      auto s = source<uint64_t>(w, "batches",
                                [todo, pos](Capability& cap, Output<uint64_t>& out) mutable {
                                  if (pos == todo->size()) return cap.drop();
                                  cap.downgrade((*todo)[pos].first);
                                  for (uint64_t k : (*todo)[pos].second) out.give(cap, k);
                                  ++pos;
                                });
      auto x = exchange_by(s, "exchange", [](uint64_t k) { return k; });
      sink(x, "sink", [&, me = w.index()](Time t, uint64_t k) {
        std::lock_guard<std::mutex> lock(mu);
        misrouted += worker_of(k, workers) != me;
        ++got[{t, k}];
      });
    });
    for (uint32_t w = 0; w < workers; ++w)
      for (const auto& [t, ks] : batches(w))
        for (uint64_t k : ks) ++want[{t, k}];
    EXPECT_EQ(misrouted, 0u) << workers;
    EXPECT_EQ(got, want) << workers;
  }
}

TEST(FlowOperators, TumblingWindowCountsMatchTheOracle) {
  for (uint32_t workers : {1u, 2u, 4u}) {
    const Time width = 10;
    std::vector<std::vector<std::tuple<Time, uint64_t, uint64_t>>> got(workers);
    run_dataflow(workers, [&](Worker& w) {
      auto s = replay(w);
      auto win = tumbling_window<uint64_t>(
          s, "window", width, [](uint64_t k) { return k; }, [](uint64_t& acc, uint64_t) { ++acc; });
      sink(win, "sink", [&, i = w.index()](Time t, const std::pair<uint64_t, uint64_t>& kv) {
        got[i].emplace_back(t, kv.first, kv.second);
      });
    });
    std::map<std::pair<Time, uint64_t>, uint64_t> want;
    for (uint32_t w = 0; w < workers; ++w)
      for (auto [t, k] : input_of(w)) ++want[{(t / width + 1) * width - 1, k}];
    std::map<std::pair<Time, uint64_t>, uint64_t> have;
    for (auto& g : got)
      for (auto [t, k, n] : g) {
        EXPECT_EQ(have.count({t, k}), 0u) << "window emitted twice";
        have[{t, k}] = n;
      }
    EXPECT_EQ(have, want) << workers;
  }
}

// Sliding windows against a brute-force oracle: for every window j (start j * slide,
// size `size`) count each key's records whose time lies in it, straight from the input.
TEST(FlowOperators, SlidingWindowCountsMatchTheBruteForceOracle) {
  const std::vector<std::pair<Time, Time>> shapes = {{10, 5}, {10, 3}, {7, 7},
                                                     {4, 10}, {1, 1},  {25, 1}};
  for (auto [size, slide] : shapes)
    for (uint32_t workers : {1u, 2u, 3u}) {
      std::vector<std::vector<std::tuple<Time, uint64_t, uint64_t>>> got(workers);
      run_dataflow(workers, [&, size = size, slide = slide](Worker& w) {
        auto s = replay(w);
        auto win = sliding_window<uint64_t>(
            s, "window", size, slide, [](uint64_t k) { return k; },
            [](uint64_t& acc, uint64_t) { ++acc; });
        sink(win, "sink", [&, i = w.index()](Time t, const std::pair<uint64_t, uint64_t>& kv) {
          got[i].emplace_back(t, kv.first, kv.second);
        });
      });
      std::vector<Rec> all;
      Time last = 0;
      for (uint32_t w = 0; w < workers; ++w)
        for (auto r : input_of(w)) all.push_back(r), last = std::max(last, r.first);
      std::map<std::pair<Time, uint64_t>, uint64_t> want;
      for (Time j = 0; j * slide <= last; ++j)
        for (auto [t, k] : all)
          if (t >= j * slide && t < j * slide + size) ++want[{j * slide + size - 1, k}];
      std::map<std::pair<Time, uint64_t>, uint64_t> have;
      for (auto& g : got)
        for (auto [t, k, n] : g) {
          EXPECT_EQ(have.count({t, k}), 0u) << "window emitted twice";
          have[{t, k}] = n;
        }
      EXPECT_EQ(have, want) << "size " << size << " slide " << slide << " workers " << workers;
      EXPECT_FALSE(want.empty());
    }
  run_dataflow(1, [](Worker& w) {
    auto s = replay(w);
    EXPECT_THROW(sliding_window<uint64_t>(
                     s, "bad", 5, 0, [](uint64_t k) { return k; }, [](uint64_t&, uint64_t) {}),
                 std::invalid_argument);
    sink(s, "sink", [](Time, uint64_t) {});
  });
}

TEST(FlowHistogram, BucketsBoundValuesWithinThreePercent) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const int b = Histogram::bucket_of(v);
    ASSERT_GE(Histogram::upper_of(b), v);
    ASSERT_LE(static_cast<double>(Histogram::upper_of(b) - v), 0.032 * static_cast<double>(v) + 1);
    if (b > 0) {
      ASSERT_LT(Histogram::upper_of(b - 1), v);
    }
  }
  std::vector<uint64_t> counts(Histogram::kBuckets, 0);
  for (uint64_t v = 1; v <= 1000; ++v) ++counts[Histogram::bucket_of(v * 1000)];
  EXPECT_NEAR(static_cast<double>(percentile(counts, 0.5)), 500000, 500000 * 0.032);
  EXPECT_NEAR(static_cast<double>(percentile(counts, 0.99)), 990000, 990000 * 0.032);
  auto c = ccdf(counts);
  ASSERT_FALSE(c.empty());
  EXPECT_DOUBLE_EQ(c.front().second, 1.0);
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LT(c[i].second, c[i - 1].second);
}

// A latency of 4.25 s falls into the bucket [4.228 s, 2^32 ns), whose upper bound printed
// as "4294.967 ms" (read as a 32-bit wrap): the exact maximum is kept and caps every
// reported percentile.
TEST(FlowHistogram, ExactMaximumCapsTheBucketBound) {
  Histogram h;
  h.record(1'000'000);
  h.record(4'250'000'000);
  const std::vector<uint64_t> counts = h.snapshot();
  EXPECT_EQ(percentile(counts, 1.0), (uint64_t{1} << 32) - 1);  // the bucket's bound
  EXPECT_EQ(h.max(), 4'250'000'000u);
  EXPECT_EQ(percentile(counts, 1.0, h.max()), 4'250'000'000u);
  EXPECT_EQ(percentile(counts, 0.0, h.max()), Histogram::upper_of(Histogram::bucket_of(1'000'000)));
}

// Every job, several worker counts, against its plain loop over the same input.
TEST(FlowJobs, EveryJobMatchesItsReferenceOnAnyWorkerCount) {
  for (const std::string& name : job_names())
    for (uint32_t workers : {1u, 2u, 3u, 4u}) {
      RunConfig cfg;
      cfg.job = name;
      cfg.workers = workers;
      cfg.records = 20000 + workers;
      cfg.keys = 500;
      cfg.skew = 0.3;
      cfg.seed = 5 + workers;
      cfg.epoch_ns = 100'000;
      RunResult r = run_job(cfg);
      EXPECT_EQ(r.records, cfg.records) << name;
      const KeyCounts want = reference_output(cfg, r.generated);
      EXPECT_EQ(first_difference(r.output, want), "") << name << " workers " << workers;
      EXPECT_EQ(output_digest(r.output), output_digest(want));
      EXPECT_EQ(r.counters.early_records, 0u);
      EXPECT_EQ(r.counters.frontier_regressions, 0u);
    }
}

TEST(FlowJobs, OpenLoopRateIsHeldAndLatencyIsMeasured) {
  RunConfig cfg;
  cfg.job = "keycount";
  cfg.workers = 2;
  cfg.rate = 200000;
  cfg.duration_ns = 600'000'000;
  cfg.keys = 1000;
  RunResult r = run_job(cfg);
  // 0.6 s at 200 K/s: every record due before the end is given, however late.
  EXPECT_NEAR(static_cast<double>(r.records), 120000, 2);
  uint64_t samples = 0;
  for (uint64_t c : r.latency) samples += c;
  EXPECT_GT(samples, 300u);  // ~one per 1 ms epoch
  EXPECT_GE(r.intervals.size(), 2u);
  EXPECT_EQ(first_difference(r.output, reference_output(cfg, r.generated)), "");
}

// A key space far beyond memory (`--keys` goes up to 2^62) with no record limit runs: the
// count's tables and the COST loop's reserve room for at most kMaxReservedKeys up front
// and grow with the keys that arrive (reserving for every key threw std::bad_alloc).
TEST(FlowJobs, AHugeKeySpaceWithoutARecordLimitRuns) {
  for (const std::string name : {"keycount", "wordcount"}) {
    RunConfig cfg;
    cfg.job = name;
    cfg.workers = 2;
    cfg.rate = 50000;
    cfg.duration_ns = 200'000'000;
    cfg.keys = uint64_t{1} << 62;
    const RunResult r = run_job(cfg);
    EXPECT_GT(r.records, 0u) << name;  // every record due before the end is given
    EXPECT_EQ(first_difference(r.output, reference_output(cfg, r.generated)), "") << name;
    // The COST loop counts for --duration from its reservation on (how many records
    // depends on the machine's speed: none under TSan): its output adds up to them.
    cfg.duration_ns = 50'000'000;
    KeyCounts cost;
    uint64_t looped = 0;
    EXPECT_NO_THROW(looped = reference_throughput(cfg, &cost).first) << name;
    uint64_t counted = 0;
    for (const auto& [key, count] : cost) counted += count;
    if (name == "keycount") {
      EXPECT_EQ(counted, looped);
    }
    EXPECT_EQ(cost.empty(), looped == 0) << name;
  }
}

TEST(FlowJobs, DigestIsOrderIndependentAndSeesEveryCount) {
  KeyCounts a = {{1, 2}, {3, 4}}, b = {{3, 4}, {1, 2}}, c = {{1, 2}, {3, 5}};
  EXPECT_EQ(output_digest(a), output_digest(b));
  EXPECT_NE(output_digest(a), output_digest(c));
  EXPECT_EQ(first_difference(a, c), "key 3: run has 4, reference has 5");
  EXPECT_EQ(first_difference(a, {{1, 2}}), "key 3: run has 4, reference has none");
}

// The trace sink (--trace-to): every worker hands over its events in time order, several
// times during a run and nothing stays in RunResult::events; every start has its end in
// the same worker's stream, and the data message sends and receives pair up.
// Busy (150 K/s) and mostly idle (3 K/s: long waits, flushed while they last).
class TraceSink : public ::testing::TestWithParam<double> {};
TEST_P(TraceSink, GetsEveryWorkersEventsInOrderDuringTheRun) {
  RunConfig cfg;
  cfg.job = "wordcount";
  cfg.workers = 3;
  cfg.rate = GetParam();
  cfg.duration_ns = 400'000'000;
  cfg.keys = 200;
  cfg.trace = true;
  cfg.trace_flush_ns = 20'000'000;
  std::mutex mu;
  std::map<uint32_t, std::vector<Event>> per_worker;
  std::map<uint32_t, int> calls;
  std::vector<std::string> ops;
  cfg.on_trace_events = [&](flow::TraceBuffer buf, const std::vector<std::string>& names) {
    const std::vector<Event>& ev = *buf;
    ASSERT_FALSE(ev.empty());
    std::lock_guard<std::mutex> lock(mu);
    const uint32_t w = ev.front().worker;
    for (const Event& e : ev) ASSERT_EQ(e.worker, w);
    for (size_t i = 1; i < ev.size(); ++i) ASSERT_LE(ev[i - 1].ts, ev[i].ts);
    // Chunks of one worker follow each other in time.
    if (!per_worker[w].empty()) {
      ASSERT_LE(per_worker[w].back().ts, ev.front().ts);
    }
    per_worker[w].insert(per_worker[w].end(), ev.begin(), ev.end());
    ++calls[w];
    ops = names;
  };
  RunResult r = run_job(cfg);
  EXPECT_TRUE(r.events.empty());
  ASSERT_EQ(per_worker.size(), 3u);
  EXPECT_EQ(ops, (std::vector<std::string>{"source", "split", "count", "probe"}));
  std::map<int64_t, int> messages;  // correlator -> sends - receives
  for (auto& [w, ev] : per_worker) {
    EXPECT_GE(calls[w], 5) << "worker " << w;     // 400 ms in 20 ms flushes
    std::map<std::pair<int, int64_t>, int> open;  // (activity, operator) -> depth
    for (const Event& e : ev) {
      if (e.kind == EventKind::start || e.kind == EventKind::end) {
        const auto key =
            std::make_pair(static_cast<int>(e.activity), e.has(kHasOperator) ? int64_t{e.op} : -1);
        if (e.kind == EventKind::start) {
          ++open[key];
        } else {
          ASSERT_GT(open[key]--, 0) << "worker " << w << ": an end without its start";
        }
      }
      if (e.activity == ActivityType::data_message)
        messages[e.correlator] += e.kind == EventKind::send ? 1 : -1;
    }
    for (auto& [key, depth] : open) EXPECT_EQ(depth, 0) << "worker " << w;
  }
  for (auto& [c, n] : messages) ASSERT_EQ(n, 0) << "correlator " << c;
}
INSTANTIATE_TEST_SUITE_P(Rates, TraceSink, ::testing::Values(150000.0, 3000.0));

}  // namespace
}  // namespace snailtrail::flow
