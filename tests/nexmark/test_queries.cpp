// NEXMark queries on the runtime (src/nexmark/queries.hpp): every query against its
// plain reference (reference.cpp) on 1-3 workers and several seeds, the same output
// for any worker count, and hand-computed Q4-Q7 cases run through both the dataflow
// and the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "flow/runtime.hpp"
#include "nexmark/built_queries.hpp"
#include "nexmark/jobs.hpp"

namespace snailtrail::nexmark {
namespace {

using Rows = std::vector<std::pair<flow::Time, Row>>;

flow::RunConfig small_run(int q, uint32_t workers, uint64_t seed) {
  nexmark::register_jobs();
  flow::RunConfig cfg;
  cfg.job = "nexmark-q" + std::to_string(q);
  cfg.workers = workers;
  cfg.records = 30000;
  cfg.seed = seed;
  cfg.duration_ns = 60'000'000'000;
  // 30000 events at 1e5 events/s of event time: 300 ms, windows of 20 ms sliding by 5.
  cfg.params = {{"event_rate", 1e5}, {"window_ns", 20e6}, {"window_slide_ns", 5e6}};
  return cfg;
}

TEST(NexmarkQueries, EveryQueryEqualsItsReferenceOnOneToThreeWorkers) {
  for (int q = 0; q < kQueries; ++q) {
    std::string digest;
    for (uint64_t seed : {1, 2, 3})
      for (uint32_t w : {1u, 2u, 3u}) {
        if (seed != 1 && w == 2) continue;
        flow::RunConfig cfg = small_run(q, w, seed);
        const flow::RunResult r = flow::run_job(cfg);
        ASSERT_EQ(r.records, cfg.records);
        EXPECT_EQ(r.counters.early_records, 0u);
        EXPECT_EQ(r.counters.frontier_regressions, 0u);
        const flow::KeyCounts want = flow::reference_output(cfg, r.generated);
        EXPECT_EQ(flow::first_difference(r.output, want), "")
            << cfg.job << " seed " << seed << " workers " << w;
        // Not vacuous: outputs at several times, many rows.
        uint64_t rows = 0;
        for (size_t i = 1; i < want.size(); i += 2) rows += want[i].second;
        EXPECT_GE(want.size() / 2, q >= 7 ? 10u : 14u) << cfg.job;  // 15 windows
        EXPECT_GE(rows, q == 7 ? 10u : 20u) << cfg.job;
        // The events do not depend on the worker count, so neither does the output.
        if (seed == 1) {
          if (digest.empty()) digest = flow::output_digest(r.output);
          EXPECT_EQ(flow::output_digest(r.output), digest) << cfg.job << " workers " << w;
        }
      }
  }
}

TEST(NexmarkQueries, OpenLoopWithDilationEqualsTheReference) {
  for (int q : {3, 5, 8}) {
    flow::RunConfig cfg = small_run(q, 2, 5);
    cfg.records = 0;
    cfg.rate = 100000;
    cfg.duration_ns = 200'000'000;
    cfg.params = {{"dilation", 50}, {"window_ns", 1e9}, {"window_slide_ns", 250e6}};
    const flow::RunResult r = flow::run_job(cfg);
    EXPECT_GT(r.records, 15000u);
    EXPECT_EQ(flow::first_difference(r.output, flow::reference_output(cfg, r.generated)), "")
        << cfg.job;
  }
}

// ---- hand-computed cases ----

constexpr uint64_t ms = 1'000'000;

struct Hand {
  std::vector<Event> events;
  Event& add(Kind k, uint64_t t) {
    Event e;
    std::memset(static_cast<void*>(&e), 0, sizeof e);
    e.number = events.size();
    e.kind = k;
    events.push_back(e);
    Event& r = events.back();
    if (k == Kind::person) r.person.date_time = t;
    if (k == Kind::auction) r.auction.date_time = t;
    if (k == Kind::bid) r.bid.date_time = t;
    return r;
  }
  void auction(uint64_t id, uint64_t seller, uint64_t category, uint64_t reserve, uint64_t t,
               uint64_t expires) {
    Auction& a = add(Kind::auction, t).auction;
    a.id = id;
    a.seller = seller;
    a.category = category;
    a.reserve = reserve;
    a.expires = expires;
  }
  void bid(uint64_t auction, uint64_t bidder, uint64_t price, uint64_t t) {
    Bid& b = add(Kind::bid, t).bid;
    b.auction = auction;
    b.bidder = bidder;
    b.price = price;
  }
};

QueryConfig hand_config() {
  QueryConfig qc;
  qc.gen.epoch_ns = 1 * ms;  // dilation 1: logical time = event time rounded down to 1 ms
  qc.window_ns = 10 * ms;
  qc.slide_ns = 5 * ms;
  return qc;
}

// Runs query q natively on `workers` threads over hand-made events (worker w gives
// events w, w + W, ... at the logical time of their event time).
template <class Build>
Rows run_hand(const QueryConfig& qc, const std::vector<Event>& events, uint32_t workers,
              Build build) {
  Rows out;
  std::mutex mu;
  flow::run_dataflow(workers, [&](flow::Worker& w) {
    const uint32_t me = w.index(), W = w.peers();
    auto src = flow::source<Event>(
        w, "hand",
        [&, me, W, i = size_t{me}](flow::Capability& cap, flow::Output<Event>& o) mutable {
          if (i >= events.size()) {
            cap.drop();
            return;
          }
          const Event& e = events[i];
          const flow::Time t = Generator(qc.gen).logical_of_event_time(e.date_time());
          cap.downgrade(std::max(cap.time(), t));
          o.give(cap, e);
          i += W;
        });
    flow::sink(build(src), "collect", [&](flow::Time t, const Row& r) {
      std::lock_guard<std::mutex> lock(mu);
      out.emplace_back(t, r);
    });
  });
  std::sort(out.begin(), out.end());
  return out;
}
Rows run_native(int q, const QueryConfig& qc, const std::vector<Event>& events, uint32_t workers) {
  return run_hand(qc, events, workers,
                  [&](const flow::Stream<Event>& src) { return build_native_query(q, src, qc); });
}

Rows sorted(Rows r) {
  std::sort(r.begin(), r.end());
  return r;
}

void expect_both(int q, const Hand& h, const Rows& want) {
  const QueryConfig qc = hand_config();
  EXPECT_EQ(sorted(reference_query(q, qc, h.events)), sorted(want)) << "reference of q" << q;
  for (uint32_t w : {1u, 2u, 3u})
    EXPECT_EQ(run_native(q, qc, h.events, w), sorted(want)) << "q" << q << " on " << w;
}

// Auctions and bids for the closing-price queries (events in time order).
Hand closing_case() {
  Hand h;
  h.auction(1000, 1, 10, 100, 0, 10 * ms);      // closes at 9 ms
  h.bid(1003, 5, 999, 1 * ms);                  // before auction 1003 exists: invalid
  h.auction(1001, 1, 10, 50, 1 * ms, 5 * ms);   // closes at 4 ms
  h.bid(1001, 5, 60, 1 * ms);                   // valid (at creation): 60 wins
  h.auction(1002, 3, 11, 10, 2 * ms, 20 * ms);  // no valid bid: nothing
  h.auction(1003, 2, 10, 1, 2 * ms, 4 * ms);    // closes at 3 ms
  h.bid(1000, 5, 90, 2 * ms);                   // below the reserve
  h.bid(1000, 6, 150, 3 * ms);                  // 150 wins
  h.bid(1002, 6, 5, 3 * ms);                    // below the reserve
  h.bid(1003, 6, 40, 3 * ms);                   // 40 wins
  h.bid(1001, 6, 70, 6 * ms);                   // after 1001's expiry
  h.bid(1000, 7, 120, 9 * ms + 500'000);        // valid, lower than 150
  h.bid(1000, 7, 500, 10 * ms);                 // at the expiry: too late
  return h;
}

TEST(NexmarkHand, Q4AveragesClosingPricesPerCategory) {
  // Closes: 1003 at 3 ms (40), 1001 at 4 ms (60), 1000 at 9 ms (150); all category 10.
  expect_both(4, closing_case(),
              {{3 * ms, Row{{10, 40, 1, 0, 0}}},
               {4 * ms, Row{{10, 50, 2, 0, 0}}},
               {9 * ms, Row{{10, 83, 3, 0, 0}}}});
}

TEST(NexmarkHand, Q6AveragesTheLastTenPricesPerSeller) {
  expect_both(6, closing_case(),
              {{3 * ms, Row{{2, 40, 1, 0, 0}}},
               {4 * ms, Row{{1, 60, 1, 0, 0}}},
               {9 * ms, Row{{1, 105, 2, 0, 0}}}});
  // Twelve auctions of seller 9 closing one per ms at prices 10, 20, ..., 120: from the
  // eleventh on, only the last ten count.
  Hand h;
  for (uint64_t i = 0; i < 12; ++i) {  // in time order: bid i - 1, auction i at i ms
    if (i > 0) h.bid(2000 + i - 1, 5, 10 * i, i * ms);
    h.auction(2000 + i, 9, 10, 1, i * ms, (i + 2) * ms);
  }
  h.bid(2011, 5, 120, 12 * ms);
  Rows want;
  uint64_t sum = 0;
  for (uint64_t i = 0; i < 12; ++i) {
    sum += 10 * (i + 1);
    if (i >= 10) sum -= 10 * (i - 9);
    const uint64_t n = std::min<uint64_t>(i + 1, 10);
    want.push_back({(i + 1) * ms, Row{{9, sum / n, n, 0, 0}}});  // expires (i+2) ms: closes at i+1
  }
  EXPECT_EQ(want.back().second.f[1], (30 + 120) * 10 / 2 / 10);
  expect_both(6, h, want);
}

TEST(NexmarkHand, Q5GivesTheAuctionsWithTheMostBidsPerSlidingWindow) {
  Hand h;  // windows of 10 ms every 5 ms
  h.bid(1, 0, 1, 1 * ms);
  h.bid(1, 0, 1, 2 * ms);
  h.bid(2, 0, 1, 3 * ms);
  h.bid(2, 0, 1, 4 * ms);
  h.bid(2, 0, 1, 6 * ms);
  h.bid(2, 0, 1, 7 * ms);
  h.bid(3, 0, 1, 12 * ms);
  h.bid(4, 0, 1, 13 * ms);
  // [0, 10): auction 2 has 4 bids; [5, 15): 2 has 2; [10, 20): 3 and 4 tie with 1 each.
  expect_both(5, h,
              {{9 * ms, Row{{0, 2, 4, 0, 0}}},
               {14 * ms, Row{{5 * ms, 2, 2, 0, 0}}},
               {19 * ms, Row{{10 * ms, 3, 1, 0, 0}}},
               {19 * ms, Row{{10 * ms, 4, 1, 0, 0}}}});
}

// Q5's first stage alone (the per-auction counts, one timer per auction) against brute
// force: for every auction and every window k containing one of its bids, (k * slide,
// auction, bids in the window) at the window's close — with 1 to 12 slides per window,
// random bids over 40 auctions, in runs of equal event times, on 1-3 workers.
TEST(NexmarkHand, Q5CountsEveryWindowOfEveryAuctionLikeBruteForce) {
  uint64_t state = 7;
  auto rnd = [&](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (uint64_t per : {1, 3, 12}) {
    QueryConfig qc = hand_config();
    qc.slide_ns = 2 * ms;
    qc.window_ns = per * qc.slide_ns;
    Hand h;
    uint64_t t = 0;
    for (int i = 0; i < 600; ++i) {
      if (rnd(4) == 0) t += rnd(3) * ms + rnd(2) * 500'000;  // gaps longer than a window too
      if (rnd(50) == 0) t += 30 * ms;
      h.bid(rnd(40), rnd(5), 1 + rnd(9), t);
    }
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> count;  // (window, auction) -> bids
    for (const Event& e : h.events) {
      const uint64_t bt = e.bid.date_time, s = bt / qc.slide_ns;
      for (uint64_t k = s + 1 >= per ? s + 1 - per : 0; k <= s; ++k) ++count[{k, e.bid.auction}];
    }
    Rows want;
    for (const auto& [ka, n] : count)
      want.push_back({qc.close_time(ka.first * qc.slide_ns + qc.window_ns),
                      Row{{ka.first * qc.slide_ns, ka.second, n, 0, 0}}});
    ASSERT_GT(want.size(), 500u);
    for (uint32_t w : {1u, 2u, 3u})
      EXPECT_EQ(run_hand(qc, h.events, w,
                         [&](const flow::Stream<Event>& src) {
                           return NativeKeyed{}.unary<SlideCounts, Row>(bids(src), "q5-count",
                                                                        Q5CountLogic{qc});
                         }),
                sorted(want))
          << per << " slides per window, " << w << " workers";
  }
}

TEST(NexmarkHand, Q7GivesEveryBidWithTheHighestPricePerWindow) {
  Hand h;
  h.bid(1, 7, 100, 1 * ms);
  h.bid(2, 8, 300, 4 * ms);
  h.bid(3, 9, 300, 8 * ms);
  h.bid(1, 7, 50, 12 * ms);
  expect_both(7, h,
              {{9 * ms, Row{{0, 2, 8, 300, 4 * ms}}},
               {9 * ms, Row{{0, 3, 9, 300, 8 * ms}}},
               {19 * ms, Row{{10 * ms, 1, 7, 50, 12 * ms}}}});
}

}  // namespace
}  // namespace snailtrail::nexmark
