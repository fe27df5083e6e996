// The NEXMark generator (src/nexmark/generator.hpp): the 1:3:46 mix, determinism,
// id ranges, expiry after creation, average sizes, timing with rate and dilation, the
// hot ratios.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "nexmark/generator.hpp"

namespace snailtrail::nexmark {
namespace {

bool same(const Event& a, const Event& b) {
  if (a.number != b.number || a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::person:
      return a.person.id == b.person.id && a.person.date_time == b.person.date_time &&
             a.person.first_name == b.person.first_name && a.person.city == b.person.city &&
             a.person.state == b.person.state && a.person.bytes == b.person.bytes;
    case Kind::auction:
      return a.auction.id == b.auction.id && a.auction.seller == b.auction.seller &&
             a.auction.category == b.auction.category && a.auction.reserve == b.auction.reserve &&
             a.auction.expires == b.auction.expires && a.auction.bytes == b.auction.bytes;
    case Kind::bid:
      return a.bid.auction == b.bid.auction && a.bid.bidder == b.bid.bidder &&
             a.bid.price == b.bid.price && a.bid.date_time == b.bid.date_time;
  }
  return false;
}

TEST(NexmarkGenerator, MixIsOnePersonThreeAuctionsFortySixBidsInEveryFifty) {
  Generator g(GeneratorConfig{});
  for (uint64_t block = 0; block < 400; ++block) {
    std::map<Kind, int> n;
    for (uint64_t i = 0; i < 50; ++i) ++n[g.event(block * 50 + i).kind];
    ASSERT_EQ(n[Kind::person], 1);
    ASSERT_EQ(n[Kind::auction], 3);
    ASSERT_EQ(n[Kind::bid], 46);
  }
}

TEST(NexmarkGenerator, DeterministicFromTheSeed) {
  GeneratorConfig c;
  c.seed = 7;
  Generator a(c), b(c);
  c.seed = 8;
  Generator other(c);
  int differ = 0;
  for (uint64_t n = 0; n < 5000; ++n) {
    ASSERT_TRUE(same(a.event(n), b.event(n))) << n;
    // Generated out of order, the same event.
    ASSERT_TRUE(same(a.event(4999 - n), b.event(4999 - n)));
    differ += !same(a.event(n), other.event(n));
  }
  EXPECT_GT(differ, 4000);  // another seed, other events (ids and times agree)
}

TEST(NexmarkGenerator, IdsCountUpAndReferencesStayWithinTheActiveRange) {
  GeneratorConfig c;
  Generator g(c);
  uint64_t people = 0, auctions = 0;  // created so far
  uint64_t bids = 0, existing_auction = 0, existing_bidder = 0;
  for (uint64_t n = 0; n < 200000; ++n) {
    const Event e = g.event(n);
    if (e.kind == Kind::person) {
      ASSERT_EQ(e.person.id, kFirstPersonId + people) << n;
      ++people;
    } else if (e.kind == Kind::auction) {
      ASSERT_EQ(e.auction.id, kFirstAuctionId + auctions) << n;
      ++auctions;
      // The seller: an active person or one of the next id_lead ones.
      ASSERT_GE(e.auction.seller + c.active_people + 1, kFirstPersonId + people) << n;
      ASSERT_LT(e.auction.seller, kFirstPersonId + people + c.id_lead) << n;
      ASSERT_GE(e.auction.category, kFirstCategoryId);
      ASSERT_LT(e.auction.category, kFirstCategoryId + kCategories);
      ASSERT_GT(e.auction.reserve, e.auction.initial_bid);
    } else {
      ++bids;
      // An auction among the last in_flight_auctions created, or up to id_lead ahead.
      ASSERT_GE(e.bid.auction + c.in_flight_auctions + 100, kFirstAuctionId + auctions) << n;
      ASSERT_LT(e.bid.auction, kFirstAuctionId + auctions + c.id_lead) << n;
      ASSERT_LE(e.bid.bidder, kFirstPersonId + people + c.id_lead) << n;
      ASSERT_GE(e.bid.bidder + c.active_people + 100, kFirstPersonId + people) << n;
      existing_auction += e.bid.auction < kFirstAuctionId + auctions;
      existing_bidder += e.bid.bidder < kFirstPersonId + people;
    }
  }
  EXPECT_EQ(people, 200000 / 50);
  EXPECT_EQ(auctions, 3 * 200000 / 50);
  // Only the lead (ids not yet created) refers ahead: a small share.
  EXPECT_GT(static_cast<double>(existing_auction) / bids, 0.95);
  EXPECT_GT(static_cast<double>(existing_bidder) / bids, 0.95);
  // Without a lead (and a hot bidder that is not the newest person) all exist.
  c.id_lead = 0;
  Generator strict(c);
  people = auctions = 0;
  for (uint64_t n = 0; n < 50000; ++n) {
    const Event e = strict.event(n);
    people += e.kind == Kind::person;
    auctions += e.kind == Kind::auction;
    if (e.kind == Kind::bid) {
      ASSERT_LT(e.bid.auction, kFirstAuctionId + auctions) << n;
    }
    if (e.kind == Kind::auction) {
      ASSERT_LT(e.auction.seller, kFirstPersonId + people) << n;
    }
  }
}

TEST(NexmarkGenerator, AuctionsExpireAfterCreationAndAboutInFlightAreOpen) {
  GeneratorConfig c;
  c.rate = 1e5;
  Generator g(c);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (uint64_t n = 0; n < 300000; ++n) {
    const Event e = g.event(n);
    if (e.kind != Kind::auction) continue;
    ASSERT_GT(e.auction.expires, e.auction.date_time) << n;
    spans.emplace_back(e.auction.date_time, e.auction.expires);
  }
  // Open auctions at the middle of the run: about in_flight_auctions (the mean length is
  // the time in which that many auctions are created).
  const uint64_t mid = g.event_time_ns(150000);
  const auto open = std::count_if(spans.begin(), spans.end(),
                                  [&](auto s) { return s.first <= mid && mid < s.second; });
  EXPECT_GT(open, 60);
  EXPECT_LT(open, 160);
}

TEST(NexmarkGenerator, AverageSizesAre200And500And100Bytes) {
  Generator g(GeneratorConfig{});
  std::map<Kind, std::pair<double, double>> size;  // sum, count
  for (uint64_t n = 0; n < 100000; ++n) {
    const Event e = g.event(n);
    size[e.kind].first += e.bytes();
    size[e.kind].second += 1;
  }
  EXPECT_NEAR(size[Kind::person].first / size[Kind::person].second, 200, 4);
  EXPECT_NEAR(size[Kind::auction].first / size[Kind::auction].second, 500, 10);
  EXPECT_NEAR(size[Kind::bid].first / size[Kind::bid].second, 100, 2);
}

TEST(NexmarkGenerator, PayloadsAreMaterializedAtNexmarkSizes) {
  GeneratorConfig c;
  c.seed = 9;
  const Generator g(c);
  std::map<Kind, std::pair<double, double>> total;  // kind -> (payload bytes, events)
  for (uint64_t n = 0; n < 50000; ++n) {
    const Event e = g.event(n);
    std::string p;
    size_t fixed = 0;
    if (e.kind == Kind::person) {
      p = g.payload(e.person);
      fixed = 8;
      // The person's own name, city and state are in it.
      EXPECT_EQ(p.rfind(std::string(kFirstNames[e.person.first_name]) + " " +
                            kLastNames[e.person.last_name],
                        0),
                0u);
      EXPECT_NE(p.find(kCities[e.person.city]), std::string::npos);
    } else if (e.kind == Kind::auction) {
      p = g.payload(e.auction);
      fixed = 48;
      EXPECT_EQ(p, g.payload(e.auction));  // deterministic
    } else {
      p = g.payload(e.bid);
      fixed = 32;
    }
    ASSERT_EQ(p.size() + fixed, e.bytes()) << "event " << n;
    total[e.kind].first += static_cast<double>(p.size() + fixed);
    total[e.kind].second += 1;
  }
  EXPECT_NEAR(total[Kind::person].first / total[Kind::person].second, 200, 4);
  EXPECT_NEAR(total[Kind::auction].first / total[Kind::auction].second, 500, 10);
  EXPECT_NEAR(total[Kind::bid].first / total[Kind::bid].second, 100, 2);
  // Another seed, other text.
  GeneratorConfig c2 = c;
  c2.seed = 10;
  const Event a = g.event(1);
  ASSERT_EQ(a.kind, Kind::auction);
  EXPECT_NE(Generator(c2).payload(a.auction), g.payload(a.auction));
  // The knob.
  GeneratorConfig k;
  k.apply({{"payloads", 1}});
  EXPECT_TRUE(k.payloads);
  EXPECT_THROW(k.apply({{"payloads", 2}}), std::invalid_argument);
}

TEST(NexmarkGenerator, EventTimeAdvancesWithTheRateAndTheDilation) {
  GeneratorConfig c;
  c.rate = 1000;  // one event per ms
  c.dilation = 10;
  Generator g(c);
  EXPECT_EQ(g.intended_ns(0), 0u);
  EXPECT_EQ(g.intended_ns(1500), 1'500'000'000u);
  EXPECT_EQ(g.event_time_ns(1500), 15'000'000'000u);
  EXPECT_EQ(g.event(1500).date_time(), 15'000'000'000u);
  EXPECT_EQ(g.logical_time(1500), 1'500'000'000u);
  c.epoch_ns = 1'000'000'000;
  Generator coarse(c);
  EXPECT_EQ(coarse.logical_time(1500), 1'000'000'000u);
  EXPECT_EQ(coarse.logical_of_event_time(19'999'999'999), 1'000'000'000u);
  EXPECT_EQ(coarse.logical_of_event_time(20'000'000'000), 2'000'000'000u);
  for (uint64_t n = 1; n < 10000; ++n) ASSERT_LE(g.event_time_ns(n - 1), g.event_time_ns(n));
}

TEST(NexmarkGenerator, HotRatiosAreKnobs) {
  auto hot_share = [](uint64_t ratio) {
    GeneratorConfig c;
    c.hot_auction_ratio = ratio;
    Generator g(c);
    uint64_t bids = 0, hot = 0;
    for (uint64_t n = 0; n < 100000; ++n) {
      const Event e = g.event(n);
      if (e.kind != Kind::bid) continue;
      ++bids;
      hot += e.bid.auction == kFirstAuctionId + Generator::last_auction(n) / 100 * 100;
    }
    return static_cast<double>(hot) / static_cast<double>(bids);
  };
  // P(hot) = 1 - 1/ratio, plus the rare uniform pick of the hot auction itself.
  EXPECT_NEAR(hot_share(2), 0.5, 0.02);
  EXPECT_NEAR(hot_share(10), 0.9, 0.02);
  EXPECT_LT(hot_share(1), 0.02);
  GeneratorConfig c;
  EXPECT_THROW(c.apply({{"hot_bidder_ratio", 0}}), std::invalid_argument);
  EXPECT_THROW(c.apply({{"no_such_knob", 1}}), std::invalid_argument);
  EXPECT_THROW(c.apply({{"dilation", 1.5}}), std::invalid_argument);
  c.apply({{"hot_seller_ratio", 8}, {"dilation", 4}});
  EXPECT_EQ(c.hot_seller_ratio, 8u);
  EXPECT_EQ(c.dilation, 4u);
}

}  // namespace
}  // namespace snailtrail::nexmark
