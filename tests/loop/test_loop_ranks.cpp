// The closed loop across ranks (src/loop/rank_link.hpp, docs/CLOSED-LOOP.md "Across
// ranks"): the rank reports' wire format (round trip, every truncation and corruption is
// an error, never a crash), and the oracle: the trace of a real run of 4 workers replayed
// into one Autoscaler and into two linked as ranks (workers 0-1 and 2-3, messages over an
// in-memory queue) gives the same decisions, reasons and intervals.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <random>

#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "loop/rank_link.hpp"
#include "megaphone/jobs.hpp"
#include "recorded_run.hpp"

namespace flow = snailtrail::flow;
namespace mp = snailtrail::megaphone;
namespace lp = snailtrail::loop;
namespace sc = snailtrail::scale;
using snailtrail::Event;

namespace {

lp::RankReport sample_report() {
  lp::RankReport r;
  r.rank = 3;
  r.watermark_ns = 2'345'678'901;
  for (int k = 0; k < 3; ++k) {
    sc::IntervalMetrics m;
    m.start_ns = k * 500'000'000LL;
    m.end_ns = (k + 1) * 500'000'000LL;
    for (uint32_t w = 6; w < 8 && k != 1; ++w) {  // interval 1: no instance
      sc::InstanceMetrics x;
      x.op = w % 2 ? 4 : 1;
      x.worker = std::to_string(w);
      x.instance = w;
      x.window_s = 0.5;
      x.useful_s = 0.125 * (k + 1);
      x.records_in = 1000.25 * w;
      x.records_out = 999.5 + k;
      m.instances.push_back(x);
    }
    r.intervals.push_back(m);
  }
  return r;
}

TEST(LoopRanks, ReportRoundTripsAndHasTheDocumentedSize) {
  const lp::RankReport r = sample_report();
  const std::string bytes = lp::encode_report(r);
  EXPECT_EQ(bytes.size(),
            lp::kReportHeaderBytes + 3 * lp::kReportIntervalBytes + 4 * lp::kReportInstanceBytes);
  EXPECT_EQ(lp::kReportInstanceBytes, 40u);
  const lp::RankReport d = lp::decode_report(bytes);
  EXPECT_EQ(d.rank, r.rank);
  EXPECT_EQ(d.watermark_ns, r.watermark_ns);
  ASSERT_EQ(d.intervals.size(), r.intervals.size());
  for (size_t k = 0; k < r.intervals.size(); ++k) {
    EXPECT_EQ(d.intervals[k].start_ns, r.intervals[k].start_ns);
    EXPECT_EQ(d.intervals[k].end_ns, r.intervals[k].end_ns);
    ASSERT_EQ(d.intervals[k].instances.size(), r.intervals[k].instances.size());
    for (size_t i = 0; i < r.intervals[k].instances.size(); ++i) {
      const auto& a = d.intervals[k].instances[i];
      const auto& b = r.intervals[k].instances[i];
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(a.worker, b.worker);
      EXPECT_EQ(a.window_s, b.window_s);
      EXPECT_EQ(a.useful_s, b.useful_s);
      EXPECT_EQ(a.records_in, b.records_in);
      EXPECT_EQ(a.records_out, b.records_out);
    }
  }
}

TEST(LoopRanks, EveryTruncationAndCorruptionIsAnError) {
  const std::string bytes = lp::encode_report(sample_report());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(lp::decode_report(std::string_view(bytes).substr(0, n)), std::runtime_error) << n;
  EXPECT_THROW(lp::decode_report(bytes + "x"), std::runtime_error);
  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_THROW(lp::decode_report(bad), std::runtime_error);
  // Random bytes after a valid magic: an error or a report, never a crash or a huge
  // allocation (counts are checked against the bytes left).
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s = bytes;
    for (int k = 0; k < 4; ++k) s[4 + rng() % (s.size() - 4)] = static_cast<char>(rng());
    try {
      (void)lp::decode_report(s);
    } catch (const std::runtime_error&) {
    }
  }
}

TEST(LoopRanks, LinkMustCoverEveryWorker) {
  lp::LoopOptions lo;
  lo.max_workers = 4;
  lo.rate_profile = {{0, 1000}};
  lp::Autoscaler a(lo);
  lp::RankLink l;
  l.procs = 2;
  l.rank = 1;
  l.workers = 2;
  l.first_worker = 2;
  l.send = [](std::string&&) {};
  EXPECT_NO_THROW(a.link_ranks(l));
  l.workers = 3;  // 2 x 3 != 4
  EXPECT_THROW(a.link_ranks(l), std::invalid_argument);
  l.workers = 2;
  l.first_worker = 0;  // rank 1 starts at worker 2
  EXPECT_THROW(a.link_ranks(l), std::invalid_argument);
  l.first_worker = 2;
  l.send = nullptr;
  EXPECT_THROW(a.link_ranks(l), std::invalid_argument);
}

TEST(LoopRanks, TwoLinkedRanksDecideAsOneProcess) {
  const snailtrail::testing::RecordedRun recorded = snailtrail::testing::record_closed_loop_run();
  const std::vector<std::vector<Event>>& batches = recorded.buffers;
  const std::vector<std::string>& ops = recorded.operators;
  ASSERT_FALSE(batches.empty());

  const lp::LoopOptions lo = snailtrail::testing::replay_options();
  lp::Autoscaler one(lo);
  lp::Autoscaler r0(lo), r1(lo);
  std::deque<std::string> wire;  // rank 1 -> rank 0
  lp::RankLink l0, l1;
  l0.procs = l1.procs = 2;
  l0.workers = l1.workers = 2;
  l1.rank = 1;
  l1.first_worker = 2;
  l1.send = [&wire](std::string&& m) { wire.push_back(std::move(m)); };
  l0.receive = [&wire] {
    std::vector<std::string> out(wire.begin(), wire.end());
    wire.clear();
    return out;
  };
  r0.link_ranks(l0);
  r1.link_ranks(l1);

  std::vector<uint32_t> c1 = one.initial_config(), c2 = r0.initial_config();
  int64_t now = 0;
  uint64_t plans = 0;
  for (const std::vector<Event>& b : batches) {
    if (b.empty()) continue;
    for (const Event& e : b) now = std::max(now, e.ts);
    one.on_events(std::vector<Event>(b), ops);
    // Each batch is one worker's: it goes to the rank that runs the worker.
    (b.front().worker < 2 ? r0 : r1).on_events(std::vector<Event>(b), ops);
    auto a = one.plan(now, c1);
    auto z = r0.plan(now, c2);
    ++plans;
    ASSERT_EQ(a.has_value(), z.has_value()) << "at " << now;
    if (a) {
      EXPECT_EQ(*a, *z);
      c1 = *a;
      c2 = *z;
    }
  }
  const auto d1 = one.decisions(), d2 = r0.decisions();
  ASSERT_FALSE(d1.empty()) << "no decision: the comparison proves nothing";
  ASSERT_EQ(d1.size(), d2.size());
  for (size_t i = 0; i < d1.size(); ++i) {
    EXPECT_EQ(d1[i].time_s, d2[i].time_s);
    EXPECT_EQ(d1[i].active_workers, d2[i].active_workers);
    EXPECT_EQ(d1[i].reason, d2[i].reason);
  }
  EXPECT_GE(d1.back().active_workers, 2u);
  EXPECT_EQ(one.intervals_observed(), r0.intervals_observed());
  EXPECT_GT(r0.intervals_observed(), 4u);
  // Rank 1 sent a report whenever its watermark entered a new interval; rank 0 got them all.
  const auto [sent, sent_bytes] = r1.reports();
  const auto [got, got_bytes] = r0.reports();
  EXPECT_GE(sent, 8u);   // 3 s of 250 ms intervals
  EXPECT_EQ(got, sent);  // reports() on rank 0 also takes what arrived after its last plan
  EXPECT_EQ(got_bytes, sent_bytes);
  // Each interval once, with rank 1's two workers of the source and the stateful operator.
  EXPECT_LE(sent_bytes, sent * lp::kReportHeaderBytes +
                            13 * (lp::kReportIntervalBytes + 4 * lp::kReportInstanceBytes));
  (void)plans;
}

}  // namespace
