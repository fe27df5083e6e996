// The NEXMark event generator (docs/NEXMARK.md), after Apache Beam's NEXMark suite
// (Generator, GeneratorConfig, Person/Auction/BidGenerator), written anew:
//
// - Event n (n = 0, 1, ...) is a pure function of (seed, n): its kind is fixed by
//   n mod 50 (1 person, 3 auctions, 46 bids), its fields come from a random stream seeded
//   by (seed, n). Any worker can generate any event; the sequence does not depend on how
//   many workers share it.
// - Timing: event n is due at wall time intended_ns(n) = n * 1e9 / rate after the start
//   ("event time advancing with the rate"); its event time (date_time) is
//   dilation * intended_ns(n), so a dilation D > 1 makes event-time windows pass D times
//   faster (Megaphone's time dilation for Q5 and Q8). Its logical time on the runtime is
//   intended_ns(n) rounded down to the epoch.
// - Ids: person and auction ids count up from 1000 as persons and auctions are created.
//   A reference to a person picks one of the last `active_people` persons (plus
//   `id_lead` not yet created ids, as Beam's PERSON_ID_LEAD = 10); a reference to an
//   auction one of the last `in_flight_auctions` auctions (plus the lead). With
//   probability 1 - 1/ratio a bid goes to the hot auction (the first of the latest 100
//   auctions), a bid comes from the hot bidder, an auction from the hot seller.
// - Auctions expire after 1 + U[0, 2h) ns of event time, h the event time until
//   `in_flight_auctions` more auctions will have been created: on average
//   `in_flight_auctions` auctions are open.
// - Sizes: Beam's field lengths plus its `extra` padding (uniform in +-20 % of the rest)
//   make persons, auctions and bids average `avg_*_bytes` (200 / 500 / 100).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "nexmark/event.hpp"

namespace snailtrail::nexmark {

struct GeneratorConfig {
  uint64_t seed = 1;
  double rate = 1e6;      // events/s of wall time (all workers together)
  uint64_t dilation = 1;  // event time runs this many times faster than wall time
  int64_t epoch_ns = 1'000'000;
  uint64_t active_people = 1000;
  uint64_t in_flight_auctions = 100;
  uint64_t hot_auction_ratio = 2;
  uint64_t hot_bidder_ratio = 4;
  uint64_t hot_seller_ratio = 4;
  uint64_t id_lead = 10;
  uint32_t avg_person_bytes = 200, avg_auction_bytes = 500, avg_bid_bytes = 100;
  // --payloads: the queries keep each stored person's and auction's text fields and
  // padding (payload() below) in their state, so state sizes are NEXMark's.
  bool payloads = false;

  // Overrides from named knobs (RunConfig::params); throws std::invalid_argument for an
  // unknown name or a value out of range.
  void apply(const std::map<std::string, double>& params);
  void validate() const;
};

class Generator {
 public:
  explicit Generator(const GeneratorConfig& cfg)
      : cfg_(cfg),
        ns_per_event_(static_cast<uint64_t>(std::llround(1e9 / cfg.rate * 4294967296.0))) {}
  const GeneratorConfig& config() const { return cfg_; }

  Event event(uint64_t n) const;

  // The text fields and padding of a record, materialized: `bytes` minus its numeric
  // fields (8 for a person, 48 for an auction, 32 for a bid) characters — a person's
  // name, email, credit card, city, state and extra; an auction's item name, description
  // and extra; a bid's channel, url and extra — deterministic from (seed, the record).
  std::string payload(const Person& p) const;
  std::string payload(const Auction& a) const;
  std::string payload(const Bid& b) const;

  // Wall time (ns after the start) at which event n is due: n * 1e9 / rate, in 32.32
  // fixed point (exact for rates dividing 1e9; otherwise within 1 ns per 2^32 events).
  uint64_t intended_ns(uint64_t n) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * ns_per_event_) >> 32);
  }
  uint64_t event_time_ns(uint64_t n) const { return cfg_.dilation * intended_ns(n); }
  // The logical time of event n: its intended time rounded down to the epoch.
  uint64_t logical_time(uint64_t n) const { return floor_epoch(intended_ns(n)); }
  // The logical time at which every event with event time <= t has been generated:
  // (t / dilation) rounded down to the epoch. Monotone in t.
  uint64_t logical_of_event_time(uint64_t t) const { return floor_epoch(t / cfg_.dilation); }
  uint64_t floor_epoch(uint64_t ns) const {
    const auto e = static_cast<uint64_t>(cfg_.epoch_ns);
    return ns / e * e;
  }

  // Beam's id bookkeeping (base 0, without kFirst*Id): the latest person / auction
  // created at or before event n.
  static uint64_t last_person(uint64_t n);
  static uint64_t last_auction(uint64_t n);
  static Kind kind_of(uint64_t n);

 private:
  GeneratorConfig cfg_;
  uint64_t ns_per_event_;  // 1e9 / rate, times 2^32
};

}  // namespace snailtrail::nexmark
