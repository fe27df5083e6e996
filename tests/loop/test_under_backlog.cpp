// A planner's migration under a backlog (issue 35, docs/CLOSED-LOOP.md, "Under
// overload"): merge_under_backlog against hand-computed cases, and runs of
// keycount-megaphone whose planner moves half the bins off worker 0 at a fixed time:
// with worker 0 overloaded (its output frontier half a second behind) the migration's
// time is near the output frontier, not the clock (ahead of the backlog), and its steps
// go as one; with --under-backlog keep it is at the clock in the planned rounds; at a low
// rate the planned rounds stay. Every run's output equals the reference (the same
// records counted without Megaphone), and the bytes moved equal the bins' serialized size.
#include <gtest/gtest.h>

#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "megaphone/jobs.hpp"

namespace flow = snailtrail::flow;
namespace mp = snailtrail::megaphone;
namespace lp = snailtrail::loop;

namespace {

TEST(LoopUnderBacklog, MergeWhenTheBacklogExceedsWhatBatchingSaves) {
  // 8 steps of a 100 ms move save 100 - 12.5 = 87.5 ms of pause (integer ns: 87.5 ms).
  const int64_t ms = 1'000'000;
  EXPECT_FALSE(mp::merge_under_backlog(8, 87 * ms, 100 * ms));
  EXPECT_FALSE(mp::merge_under_backlog(8, 87'500'000, 100 * ms));
  EXPECT_TRUE(mp::merge_under_backlog(8, 87'500'001, 100 * ms));
  EXPECT_TRUE(mp::merge_under_backlog(8, 2000 * ms, 100 * ms));
  // 2 steps save half of it.
  EXPECT_FALSE(mp::merge_under_backlog(2, 50 * ms, 100 * ms));
  EXPECT_TRUE(mp::merge_under_backlog(2, 51 * ms, 100 * ms));
  // One step left, or no backlog: nothing to merge.
  EXPECT_FALSE(mp::merge_under_backlog(1, 2000 * ms, 100 * ms));
  EXPECT_FALSE(mp::merge_under_backlog(8, 0, 0));
  // Free state (nothing to serialize): any backlog merges.
  EXPECT_TRUE(mp::merge_under_backlog(8, 1, 0));
  // 32 MB at 250 MB/s: 128 ms.
  EXPECT_EQ(mp::move_ns_estimate(32'000'000, 250e6), 128 * ms);
  // keycount: a vector of ceil(keys / bins) counters and its length; hashcount: 16 bytes
  // per key.
  EXPECT_EQ(mp::bin_bytes_estimate(8'000'000, 10, true), 8 + 7813 * 8u);
  EXPECT_EQ(mp::bin_bytes_estimate(1000, 2, false), 8 + 250 * 16u);
}

struct Run {
  flow::RunConfig cfg;
  flow::RunResult r;
  std::vector<mp::MigrationRecord> migrations;
  uint32_t planned_steps = 0;
};

constexpr uint64_t kKeys = 200'000;
constexpr uint32_t kLogBins = 6;  // 64 bins, 32 of them move

// keycount-megaphone on 2 workers, every bin on worker 0 at first; at `decide_ns` the
// planner moves half of them to worker 1 as a batched migration of about 8 rounds.
Run run(const std::vector<std::pair<int64_t, double>>& profile, int64_t decide_ns,
        int64_t duration_ns, double move_bytes_per_s, bool ahead_and_merge) {
  const uint32_t B = 1u << kLogBins;
  mp::JobOptions o;
  o.base = "keycount";
  o.log_bins = kLogBins;
  o.strategy = mp::Strategy::batched;
  o.cost_us = 50;  // one worker: at most 20 k records/s
  o.initial.assign(B, 0);
  o.merge_under_backlog = ahead_and_merge;
  if (!ahead_and_merge) o.ahead_ns = 0;
  o.move_bytes_per_s = move_bytes_per_s;
  const auto to = lp::spread(o.initial, 2);
  Run out;
  out.planned_steps = static_cast<uint32_t>(mp::plan_steps(o.initial, to, mp::Strategy::batched, 2,
                                                           mp::per_round_for(o.initial, to, 2, 8))
                                                .size());
  o.planner = [to, decide_ns](
                  int64_t now,
                  const std::vector<uint32_t>& c) -> std::optional<std::vector<uint32_t>> {
    if (now < decide_ns || c == to) return std::nullopt;
    return to;
  };
  auto log = std::make_shared<mp::MigrationLog>();
  out.cfg.job = mp::register_job(o, log);
  out.cfg.workers = 2;
  out.cfg.rate_profile = profile;
  out.cfg.duration_ns = duration_ns;
  out.cfg.keys = kKeys;
  out.r = flow::run_job(out.cfg);
  out.migrations = log->records();
  return out;
}

// Every record counted once against its bin's state, wherever it was: the reference.
void expect_correct(const Run& x) {
  EXPECT_EQ(x.r.counters.early_records, 0u);
  EXPECT_EQ(flow::first_difference(x.r.output, flow::reference_output(x.cfg, x.r.generated)), "");
  ASSERT_EQ(x.migrations.size(), 1u);
  const auto& m = x.migrations[0];
  EXPECT_TRUE(m.completed);
  EXPECT_EQ(m.strategy, "batched");
  EXPECT_EQ(m.bins_moved, 32u);
  // Each bin: its counters (the estimate is exact for keycount) and an empty pending list.
  EXPECT_EQ(m.bytes_moved, 32 * (mp::bin_bytes_estimate(kKeys, kLogBins, true) + 8));
}

// 40 k records/s for 0.8 s on worker 0 alone (twice what it can do): at the decision the
// output frontier is about 0.4 s behind the clock. The migration's time is within
// ahead_ns (50 ms) of the output frontier, so it is far behind the decision's clock; the
// bins' 0.8 MB take ~3 ms at 250 MB/s, so 8 rounds would save ~3 ms of pause while each
// waits up to 50 ms for the output frontier: one step.
constexpr int64_t kDecide = 800'000'000;
const std::vector<std::pair<int64_t, double>> kOverload = {{0, 40000}, {kDecide, 10000}};

TEST(LoopUnderBacklog, AnOverloadedWorkerGivesUpItsBinsAheadOfTheBacklog) {
  const auto x = run(kOverload, kDecide, 1'600'000'000, 250e6, /*ahead_and_merge=*/true);
  ASSERT_GT(x.planned_steps, 4u);
  expect_correct(x);
  ASSERT_EQ(x.migrations.size(), 1u);
  const auto& m = x.migrations[0];
  EXPECT_LT(m.first_step_s, m.start_s - 0.2) << "the step waits behind the backlog";
  EXPECT_EQ(m.merged_at_step, 1u);
  EXPECT_EQ(m.steps, 1u);
  EXPECT_LE(m.merged_backlog_ms, 50.0 + 1.0);  // ahead_ns and an epoch
}

// The same backlog with --under-backlog keep: the planned rounds, at the clock's time.
TEST(LoopUnderBacklog, KeepGivesThePlannedRoundsBehindTheBacklog) {
  const auto x = run(kOverload, kDecide, 1'600'000'000, 250e6, /*ahead_and_merge=*/false);
  expect_correct(x);
  ASSERT_EQ(x.migrations.size(), 1u);
  const auto& m = x.migrations[0];
  EXPECT_GE(m.first_step_s, m.start_s - 0.01);
  EXPECT_EQ(m.merged_at_step, 0u);
  EXPECT_EQ(m.steps, x.planned_steps);
}

// 2 k records/s (a tenth of one worker): no backlog beyond the pipeline's own latency.
// The state is made expensive to move (100 kB/s: 0.8 MB take 8 s) so that batching saves
// seconds, far above any lag of an idle job, also under a sanitizer on a loaded machine:
// the planned rounds stay.
TEST(LoopUnderBacklog, WithoutABacklogTheRoundsStay) {
  const auto x = run({{0, 2000}}, kDecide, 1'600'000'000, 100e3, /*ahead_and_merge=*/true);
  expect_correct(x);
  ASSERT_EQ(x.migrations.size(), 1u);
  EXPECT_EQ(x.migrations[0].merged_at_step, 0u);
  EXPECT_EQ(x.migrations[0].steps, x.planned_steps);
}

}  // namespace
