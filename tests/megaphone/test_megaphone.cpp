// Megaphone (src/megaphone): random migration plans at random times against the plain
// single-threaded loop; exactly-once application; timestamp order per bin across
// migrations; pending (scheduled) records travel with their bin; the strategies' plans;
// the jobs through the runtime with wall-clock migrations, against the plain loop.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "flow/runtime.hpp"
#include "megaphone/jobs.hpp"
#include "megaphone/megaphone.hpp"
#include "random_plans.hpp"
#include "sanitized.hpp"  // tests/

namespace mp = snailtrail::megaphone;
namespace flow = snailtrail::flow;
using flow::Time;

namespace {

using snailtrail::random_plans::oracle;
using snailtrail::random_plans::Outcome;
using snailtrail::random_plans::plan_moves_something;
using snailtrail::random_plans::random_scenario;
using snailtrail::random_plans::run;
using snailtrail::random_plans::Scenario;

}  // namespace

TEST(Megaphone, RandomPlansAtRandomTimesMatchThePlainLoopExactlyOnce) {
  std::mt19937_64 rng(16);
  int moved = 0;
  const int iters = snailtrail::testing::random_inputs(120, 60);
  for (int iter = 0; iter < iters; ++iter) {
    const Scenario s = random_scenario(rng, true);
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << iter << ": " << s.workers << " workers, 2^" << s.log_bins
                 << " bins, " << s.plan.size() << " updates, echo " << s.echo_delay);
    const auto want = oracle(s);
    uint64_t records = 0;
    for (const auto& in : s.input) records += in.size();
    const Outcome got = run(s);
    EXPECT_EQ(got.counts, want);
    EXPECT_EQ(got.applied, records * (s.echo_delay ? 2 : 1));  // exactly once
    EXPECT_EQ(got.order_violations, 0u);
    EXPECT_EQ(got.misplaced, 0u);
    EXPECT_EQ(got.early_records, 0u);
    EXPECT_EQ(got.frontier_regressions, 0u);
    if (plan_moves_something(s)) {
      EXPECT_GT(got.bins_sent, 0u);
      ++moved;
    }
    // The same run without migrations gives the same output.
    Scenario still = s;
    still.plan.clear();
    const Outcome base = run(still);
    EXPECT_EQ(base.counts, got.counts);
    EXPECT_EQ(base.bins_sent, 0u);
  }
  EXPECT_GT(moved, iters * 5 / 12);  // the plans did move state
}

TEST(Megaphone, PendingRecordsTravelWithTheirBin) {
  // Two workers, one bin moved back and forth while every record schedules an echo far
  // in the future: the echoes are pending at the migrations and must arrive with the bin.
  Scenario s;
  s.workers = 2;
  s.log_bins = 0;
  s.echo_delay = 100;
  s.input.resize(2);
  for (Time t = 0; t < 60; ++t) s.input[t % 2].emplace_back(t, t % 7);
  s.plan = {{10, 0, 1}, {30, 0, 0}, {50, 0, 1}};
  const Outcome got = run(s);
  EXPECT_EQ(got.counts, oracle(s));
  EXPECT_EQ(got.applied, 120u);
  EXPECT_EQ(got.bins_sent, 3u);
  EXPECT_EQ(got.order_violations, 0u);
  EXPECT_EQ(got.misplaced, 0u);
}

TEST(Megaphone, CodecsRoundTrip) {
  std::vector<char> buf;
  std::unordered_map<uint64_t, uint64_t> m = {{1, 2}, {3, 4}, {~uint64_t{0}, 5}};
  std::vector<uint64_t> v = {7, 8, 9};
  mp::Codec<std::unordered_map<uint64_t, uint64_t>>::encode(m, buf);
  mp::Codec<std::vector<uint64_t>>::encode(v, buf);
  const char* p = buf.data();
  std::unordered_map<uint64_t, uint64_t> m2;
  std::vector<uint64_t> v2;
  mp::Codec<std::unordered_map<uint64_t, uint64_t>>::decode(p, buf.data() + buf.size(), m2);
  mp::Codec<std::vector<uint64_t>>::decode(p, buf.data() + buf.size(), v2);
  EXPECT_EQ(m2, m);
  EXPECT_EQ(v2, v);
  EXPECT_EQ(p, buf.data() + buf.size());
  const char* q = buf.data();
  using MapCodec = mp::Codec<std::unordered_map<uint64_t, uint64_t>>;
  EXPECT_THROW(MapCodec::decode(q, buf.data() + 20, m2), std::runtime_error);
}

// The flat count table's codec (what keycount/hashcount bins migrate as): keys 0 and
// UINT64_MAX, a table that grew, the bytes an unordered_map of the same pairs makes, and
// a truncated buffer.
TEST(Megaphone, FlatMapCodecRoundTrips) {
  using Flat = flow::FlatMap<uint64_t>;
  Flat m;
  for (uint64_t k : {uint64_t{0}, ~uint64_t{0}, uint64_t{7}}) m[k] = k ^ 0x55;
  for (uint64_t k = 1; k < 1000; ++k) m[k * 0x9e3779b97f4a7c15ull] += k;
  std::vector<char> buf;
  mp::Codec<Flat>::encode(m, buf);
  mp::Codec<uint64_t>::encode(42, buf);
  const char* p = buf.data();
  Flat m2;
  m2[123] = 4;  // decode replaces what was there
  uint64_t after = 0;
  mp::Codec<Flat>::decode(p, buf.data() + buf.size(), m2);
  mp::Codec<uint64_t>::decode(p, buf.data() + buf.size(), after);
  EXPECT_EQ(p, buf.data() + buf.size());
  EXPECT_EQ(after, 42u);
  const std::map<uint64_t, uint64_t> want(m.begin(), m.end()), got(m2.begin(), m2.end());
  EXPECT_EQ(got.size(), m.size());
  EXPECT_EQ(m2.size(), m.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.at(0), 0x55u);
  EXPECT_EQ(got.at(~uint64_t{0}), ~uint64_t{0} ^ 0x55);
  std::unordered_map<uint64_t, uint64_t> same;  // the same bytes read as an unordered_map
  const char* r = buf.data();
  mp::Codec<std::unordered_map<uint64_t, uint64_t>>::decode(r, buf.data() + buf.size(), same);
  EXPECT_EQ((std::map<uint64_t, uint64_t>(same.begin(), same.end())), want);
  const char* q = buf.data();
  EXPECT_THROW(mp::Codec<Flat>::decode(q, buf.data() + 20, m2), std::runtime_error);
}

TEST(Megaphone, RouteKeysReachEveryWorker) {
  for (uint32_t W = 1; W <= 64; ++W) {
    const auto keys = mp::route_keys(W);
    for (uint32_t d = 0; d < W; ++d) EXPECT_EQ(flow::worker_of(keys[d], W), d);
  }
}

TEST(Megaphone, StrategiesPlanEveryMoveOnce) {
  for (uint32_t W : {2u, 3u, 5u}) {
    const uint32_t B = 64;
    const auto from = mp::round_robin_config(B, W), to = mp::half_config(B, W);
    std::set<uint32_t> changed;
    for (uint32_t b = 0; b < B; ++b)
      if (from[b] != to[b]) changed.insert(b);
    EXPECT_GE(changed.size() * 4, B);  // at least 25 % of the bins move
    for (auto s : {mp::Strategy::all_at_once, mp::Strategy::fluid, mp::Strategy::batched}) {
      const auto steps = mp::plan_steps(from, to, s, W);
      std::set<uint32_t> seen;
      for (const auto& step : steps) {
        std::vector<int> sends(W, 0), receives(W, 0);
        for (const auto& [bin, worker] : step) {
          EXPECT_TRUE(seen.insert(bin).second);
          EXPECT_EQ(worker, to[bin]);
          ++sends[from[bin]];
          ++receives[worker];
        }
        if (s == mp::Strategy::batched) {
          for (uint32_t w = 0; w < W; ++w) {
            EXPECT_LE(sends[w], 1);
            EXPECT_LE(receives[w], 1);
          }
        }
        if (s == mp::Strategy::fluid) {
          EXPECT_EQ(step.size(), 1u);
        }
      }
      EXPECT_EQ(seen, changed);
      if (s == mp::Strategy::all_at_once) {
        EXPECT_EQ(steps.size(), 1u);
      }
      if (s == mp::Strategy::fluid) {
        EXPECT_EQ(steps.size(), changed.size());
      }
      if (s == mp::Strategy::batched) {
        EXPECT_LT(steps.size(), changed.size());
        EXPECT_GT(steps.size(), 1u);
      }
    }
  }
}

// Bytes sent on any worker or process count for the migration one of whose steps had
// their configuration time; gathered words of other processes count the same way.
TEST(Megaphone, MigrationLogAttributesBytesByStepTime) {
  mp::MigrationLog log;
  log.start(0, mp::Strategy::fluid, 3, 3);
  log.step(10);
  log.add_bytes_at(10, 100);
  log.step(20);
  log.add_bytes_at(20, 7);
  log.add_bytes_at(15, 1000);  // no step at 15: not this migration's
  log.end(50);
  log.start(60, mp::Strategy::fluid, 1, 1);
  log.step(30);
  log.add_bytes_at(30, 40);
  // Another process sent a bin at 20 and one at 30.
  mp::MigrationLog other;
  other.add_bytes_at(20, 5);
  other.add_bytes_at(30, 2);
  EXPECT_EQ(other.sent_words(), (std::vector<uint64_t>{20, 5, 30, 2}));
  log.add_sent_words(other.sent_words());
  auto ms = log.records();
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].bytes_moved, 100u + 7 + 5);
  EXPECT_TRUE(ms[0].completed);
  EXPECT_EQ(ms[1].bytes_moved, 40u + 2);  // in flight: counted so far
  EXPECT_FALSE(ms[1].completed);
  log.add_bytes(3);  // the plain counter (no time) adds to the migration in progress
  log.end(70);
  ms = log.records();
  EXPECT_EQ(ms[1].bytes_moved, 40u + 2 + 3);
  EXPECT_EQ(ms[0].bytes_moved, 100u + 7 + 5);
}

// The jobs through the runtime: wall-clock migrations with every strategy, key-count and
// hash-count, against the plain loop; the migration log records what moved.
class MegaphoneJob
    : public ::testing::TestWithParam<std::tuple<std::string, mp::Strategy, uint32_t>> {};

TEST_P(MegaphoneJob, MigratesAndMatchesThePlainLoop) {
  const auto& [base, strategy, workers] = GetParam();
  mp::JobOptions o;
  o.base = base;
  o.log_bins = 6;
  o.strategy = strategy;
  o.migrate_at_ns = {100'000'000, 300'000'000};
  auto log = std::make_shared<mp::MigrationLog>();
  flow::RunConfig cfg;
  cfg.job = mp::register_job(o, log);
  cfg.workers = workers;
  cfg.rate = 200'000;
  cfg.duration_ns = 600'000'000;
  cfg.keys = 5000;
  const auto r = flow::run_job(cfg);
  EXPECT_EQ(r.counters.early_records, 0u);
  EXPECT_EQ(r.counters.frontier_regressions, 0u);
  EXPECT_EQ(flow::first_difference(r.output, flow::reference_output(cfg, r.generated)), "");
  const auto ms = log->records();
  // The second migration starts only once the first is complete and the sources still
  // run: on a slow machine (or under a sanitizer) fluid may leave no time for it.
  ASSERT_GE(ms.size(), 1u);
  ASSERT_LE(ms.size(), 2u);
  for (const auto& m : ms) {
    EXPECT_TRUE(m.completed);
    EXPECT_EQ(m.strategy, mp::strategy_name(strategy));
    EXPECT_EQ(m.bins_moved, 32u);  // half of 64 bins, both ways, on 2 workers
    EXPECT_GT(m.bytes_moved, 32u * 8);
    // Key-count: a bin is its dense array (8-byte length + ceil(5000 / 64) = 79 counts)
    // plus the 8-byte count of its pending records (none: nothing is scheduled, and F
    // sends records at or after a step's time to the new owner).
    if (base == "keycount") {
      EXPECT_EQ(m.bytes_moved, 32u * (8 + 79 * 8 + 8));
    }
    EXPECT_GE(m.end_s, m.start_s);
    EXPECT_GT(m.max_latency_ms, 0);
  }
  // The same run on the plain operator gives the same counts.
  o.native = true;
  cfg.job = mp::register_job(o, nullptr);
  const auto n = flow::run_job(cfg);
  EXPECT_EQ(flow::first_difference(n.output, flow::reference_output(cfg, n.generated)), "");
}

INSTANTIATE_TEST_SUITE_P(Strategies, MegaphoneJob,
                         ::testing::Combine(::testing::Values("keycount", "hashcount"),
                                            ::testing::Values(mp::Strategy::all_at_once,
                                                              mp::Strategy::fluid,
                                                              mp::Strategy::batched),
                                            ::testing::Values(2u)));
