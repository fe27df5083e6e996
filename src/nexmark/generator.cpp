#include "nexmark/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace snailtrail::nexmark {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The random stream of one event: splitmix64 from a seed mixed of (seed, n).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t n) : s_(mix(mix(seed * 0x2545f4914f6cdd1dull) ^ n)) {}
  uint64_t next() {
    s_ += 0x9e3779b97f4a7c15ull;
    return mix(s_);
  }
  uint64_t below(uint64_t bound) {  // uniform in [0, bound), bound >= 1
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

uint64_t next_price(Rng& r) {  // round(10^(6u) * 100), u uniform in [0, 1)
  return static_cast<uint64_t>(std::exp(r.unit() * (6.0 * 2.302585092994046)) * 100.0 + 0.5);
}

// Beam's StringsGenerator.nextExtra: padding so that current + extra averages `avg`.
uint32_t extra_bytes(Rng& r, uint32_t current, uint32_t avg) {
  if (current > avg) return 0;
  const uint32_t desired = avg - current;
  const auto delta = static_cast<uint32_t>(std::lround(desired * 0.2));
  return desired - delta + (delta == 0 ? 0 : static_cast<uint32_t>(r.below(2 * delta)));
}

uint32_t string_bytes(Rng& r, uint32_t max_len) {  // nextString: 3 + U[0, max - 3)
  return 3 + static_cast<uint32_t>(r.below(max_len - 3));
}

}  // namespace

void GeneratorConfig::apply(const std::map<std::string, double>& params) {
  for (const auto& [name, v] : params) {
    auto whole = [&](uint64_t lo, uint64_t hi) {
      if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v))
        throw std::invalid_argument(
            fmt::format("nexmark: {} must be a whole number in [{}, {}], not {}", name, lo, hi, v));
      return static_cast<uint64_t>(v);
    };
    if (name == "dilation")
      dilation = whole(1, 1'000'000);
    else if (name == "active_people")
      active_people = whole(1, uint64_t{1} << 40);
    else if (name == "in_flight_auctions")
      in_flight_auctions = whole(1, uint64_t{1} << 40);
    else if (name == "hot_auction_ratio")
      hot_auction_ratio = whole(1, 1'000'000);
    else if (name == "hot_bidder_ratio")
      hot_bidder_ratio = whole(1, 1'000'000);
    else if (name == "hot_seller_ratio")
      hot_seller_ratio = whole(1, 1'000'000);
    else if (name == "id_lead")
      id_lead = whole(0, 1'000'000);
    else if (name == "payloads")
      payloads = whole(0, 1) == 1;
    else if (name == "event_rate" || name == "window_ns" || name == "window_slide_ns")
      continue;  // read by the queries (queries.hpp)
    else
      throw std::invalid_argument("nexmark: unknown knob '" + name + "'");
  }
  validate();
}

void GeneratorConfig::validate() const {
  if (!(rate >= 1 && rate <= 1e10))
    throw std::invalid_argument(fmt::format("nexmark: rate {} out of [1, 1e10]", rate));
  if (epoch_ns <= 0) throw std::invalid_argument("nexmark: epoch must be positive");
}

uint64_t Generator::last_person(uint64_t n) {
  const uint64_t epoch = n / kProportionDenominator, offset = n % kProportionDenominator;
  return epoch * kPersonProportion + std::min(offset, kPersonProportion - 1);
}

uint64_t Generator::last_auction(uint64_t n) {
  const uint64_t epoch = n / kProportionDenominator, offset = n % kProportionDenominator;
  if (offset < kPersonProportion)  // a person: the last auction of the previous epoch
    return epoch == 0 ? 0 : epoch * kAuctionProportion - 1;
  if (offset >= kPersonProportion + kAuctionProportion)  // a bid: this epoch's last auction
    return epoch * kAuctionProportion + kAuctionProportion - 1;
  return epoch * kAuctionProportion + offset - kPersonProportion;
}

Kind Generator::kind_of(uint64_t n) {
  const uint64_t r = n % kProportionDenominator;
  return r < kPersonProportion                        ? Kind::person
         : r < kPersonProportion + kAuctionProportion ? Kind::auction
                                                      : Kind::bid;
}

Event Generator::event(uint64_t n) const {
  Rng r(cfg_.seed, n);
  Event e;
  std::memset(static_cast<void*>(&e), 0, sizeof e);  // padding too: digests hash bytes
  e.number = n;
  e.kind = kind_of(n);
  const uint64_t t = event_time_ns(n);
  // A person among the active ones, or up to id_lead not yet created (base 0).
  auto next_person = [&] {
    const uint64_t people = last_person(n) + 1;
    const uint64_t active = std::min(people, cfg_.active_people);
    return people - active + r.below(active + cfg_.id_lead);
  };
  auto next_auction = [&] {
    const uint64_t last = last_auction(n);
    const uint64_t lo = last > cfg_.in_flight_auctions ? last - cfg_.in_flight_auctions : 0;
    return lo + r.below(last - lo + 1 + cfg_.id_lead);
  };
  switch (e.kind) {
    case Kind::person: {
      Person& p = e.person;
      p.id = last_person(n) + kFirstPersonId;
      p.date_time = t;
      p.first_name = static_cast<uint8_t>(r.below(std::size(kFirstNames)));
      p.last_name = static_cast<uint8_t>(r.below(std::size(kLastNames)));
      const uint32_t email = string_bytes(r, 7) + 1 + string_bytes(r, 5) + 4;
      p.city = static_cast<uint8_t>(r.below(std::size(kCities)));
      p.state = static_cast<uint8_t>(r.below(std::size(kStates)));
      const auto name = static_cast<uint32_t>(std::strlen(kFirstNames[p.first_name]) + 1 +
                                              std::strlen(kLastNames[p.last_name]));
      const uint32_t current = 8 + name + email + 19 /* credit card */ +
                               static_cast<uint32_t>(std::strlen(kCities[p.city])) + 2;
      p.bytes = current + extra_bytes(r, current, cfg_.avg_person_bytes);
      break;
    }
    case Kind::auction: {
      Auction& a = e.auction;
      a.id = last_auction(n) + kFirstAuctionId;
      const uint64_t seller = r.below(cfg_.hot_seller_ratio) > 0
                                  ? last_person(n) / 100 * 100  // the hot seller
                                  : next_person();
      a.seller = seller + kFirstPersonId;
      a.category = kFirstCategoryId + r.below(kCategories);
      a.initial_bid = next_price(r);
      a.date_time = t;
      // Event time until in_flight_auctions more auctions exist: the mean length.
      const uint64_t ahead = cfg_.in_flight_auctions * kProportionDenominator / kAuctionProportion;
      const uint64_t horizon = event_time_ns(n + ahead) - t;
      a.expires = t + 1 + r.below(std::max<uint64_t>(2 * horizon, 1));
      const uint32_t name = string_bytes(r, 20), desc = string_bytes(r, 100);
      a.reserve = a.initial_bid + next_price(r);
      const uint32_t current = 8 + name + desc + 8 * 5;
      a.bytes = current + extra_bytes(r, current, cfg_.avg_auction_bytes);
      break;
    }
    case Kind::bid: {
      Bid& b = e.bid;
      const uint64_t auction = r.below(cfg_.hot_auction_ratio) > 0
                                   ? last_auction(n) / 100 * 100  // the hot auction
                                   : next_auction();
      b.auction = auction + kFirstAuctionId;
      const uint64_t bidder = r.below(cfg_.hot_bidder_ratio) > 0
                                  ? last_person(n) / 100 * 100 + 1  // the hot bidder
                                  : next_person();
      b.bidder = bidder + kFirstPersonId;
      b.price = next_price(r);
      b.date_time = t;
      b.bytes = 32 + extra_bytes(r, 32, cfg_.avg_bid_bytes);
      break;
    }
  }
  return e;
}

namespace {
// Appends `len` random lowercase letters (Beam's nextString / nextExtra content): eight
// letters per random word, written in place.
void letters(Rng& r, std::string& out, size_t len) {
  const size_t at = out.size();
  out.resize(at + len);
  char* p = out.data() + at;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t x = r.next();
    for (size_t k = 0; k < 8 && i + k < len; ++k, x >>= 8)
      p[i + k] = static_cast<char>('a' + ((x & 255) * 26 >> 8));
  }
}
void pad_to(Rng& r, std::string& out, size_t len) {
  if (out.size() > len) out.resize(len);
  letters(r, out, len - out.size());
}
}  // namespace

std::string Generator::payload(const Person& p) const {
  Rng r(cfg_.seed ^ 0x7065727301ull, p.id);
  std::string out;
  const size_t len = p.bytes > 8 ? p.bytes - 8 : 0;  // all but the id
  out.reserve(len);
  out += kFirstNames[p.first_name];
  out += ' ';
  out += kLastNames[p.last_name];
  out += ' ';
  letters(r, out, 7);  // email
  out += '@';
  letters(r, out, 5);
  out += ".com ";
  for (int g = 0; g < 4; ++g) {  // credit card
    for (int d = 0; d < 4; ++d) out.push_back(static_cast<char>('0' + r.below(10)));
    out += ' ';
  }
  out += kCities[p.city];
  out += ' ';
  out += kStates[p.state];
  out += ' ';
  pad_to(r, out, len);  // the extra
  return out;
}

std::string Generator::payload(const Auction& a) const {
  Rng r(cfg_.seed ^ 0x6175637401ull, a.id);
  std::string out;
  const size_t len = a.bytes > 48 ? a.bytes - 48 : 0;  // all but id, seller, ... expires
  out.reserve(len);
  pad_to(r, out, len);  // item name, description, extra
  return out;
}

std::string Generator::payload(const Bid& b) const {
  Rng r(cfg_.seed ^ 0x62696401ull, mix(b.auction ^ mix(b.bidder)) ^ b.date_time);
  std::string out;
  const size_t len = b.bytes > 32 ? b.bytes - 32 : 0;
  out.reserve(len);
  pad_to(r, out, len);  // channel, url, extra
  return out;
}

}  // namespace snailtrail::nexmark
