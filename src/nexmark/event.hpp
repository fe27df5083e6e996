// NEXMark's three event kinds (docs/NEXMARK.md), as the generator (generator.hpp) makes
// them. Records are plain, trivially copyable structs so that they cross processes
// (the MPI transport copies bytes): names are indices into small tables, and the
// variable-size text fields of the specification (email, credit card, item name and
// description, the `extra` padding) are accounted in `bytes` — the size the event would
// have serialized as Beam's generator writes it — rather than materialized.
#pragma once

#include <cstdint>
#include <type_traits>

namespace snailtrail::nexmark {

// Event ids start at these values, as in Beam's GeneratorConfig.
inline constexpr uint64_t kFirstPersonId = 1000;
inline constexpr uint64_t kFirstAuctionId = 1000;
inline constexpr uint64_t kFirstCategoryId = 10;
inline constexpr uint64_t kCategories = 5;

// Proportions person : auction : bid = 1 : 3 : 46 out of every 50 event ids.
inline constexpr uint64_t kPersonProportion = 1;
inline constexpr uint64_t kAuctionProportion = 3;
inline constexpr uint64_t kBidProportion = 46;
inline constexpr uint64_t kProportionDenominator =
    kPersonProportion + kAuctionProportion + kBidProportion;

// Tables of Beam's PersonGenerator.
inline constexpr const char* kFirstNames[] = {"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                              "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
inline constexpr const char* kLastNames[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                             "Walton", "Smith",  "Jones",   "Noris"};
inline constexpr const char* kCities[] = {"Phoenix",  "Los Angeles", "San Francisco", "Boise",
                                          "Portland", "Bend",        "Redmond",       "Seattle",
                                          "Kent",     "Cheyenne"};
inline constexpr const char* kStates[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};

struct Person {
  uint64_t id;
  uint64_t date_time;                          // event time, ns
  uint8_t first_name, last_name, city, state;  // indices into the tables above
  uint32_t bytes;
};

struct Auction {
  uint64_t id;
  uint64_t seller;  // a person id
  uint64_t category;
  uint64_t initial_bid, reserve;  // cents
  uint64_t date_time, expires;    // event time, ns; expires > date_time
  uint32_t bytes;
};

struct Bid {
  uint64_t auction;  // an auction id
  uint64_t bidder;   // a person id
  uint64_t price;    // cents
  uint64_t date_time;
  uint32_t bytes;
};

enum class Kind : uint8_t { person, auction, bid };

struct Event {
  uint64_t number;  // position in the event sequence (the id Beam seeds its Random with)
  Kind kind;
  union {
    Person person;
    Auction auction;
    Bid bid;
  };
  uint64_t date_time() const {
    return kind == Kind::person    ? person.date_time
           : kind == Kind::auction ? auction.date_time
                                   : bid.date_time;
  }
  uint32_t bytes() const {
    return kind == Kind::person ? person.bytes : kind == Kind::auction ? auction.bytes : bid.bytes;
  }
};
static_assert(std::is_trivially_copyable_v<Event>);

}  // namespace snailtrail::nexmark
