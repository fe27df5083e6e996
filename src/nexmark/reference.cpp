// The plain single-threaded NEXMark queries (the --verify oracle): each works on the
// whole event list at once, by brute force or a plain index, written apart from the
// dataflow versions in queries.hpp (no keyed operators, no timers, no time order).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "nexmark/queries.hpp"

namespace snailtrail::nexmark {

uint64_t row_hash(const Row& r) {
  uint64_t h = 0x6a09e667f3bcc908ull;
  for (uint64_t x : r.f) h = flow::mix64(h ^ x) + 0x9e3779b97f4a7c15ull;
  return h;
}

Row event_row(const Event& e) {
  const uint64_t id = e.kind == Kind::person    ? e.person.id
                      : e.kind == Kind::auction ? e.auction.id
                                                : e.bid.auction;
  return Row{{e.number, static_cast<uint64_t>(e.kind), e.date_time(), e.bytes(), id}};
}

const char* const kQueryDescriptions[kQueries] = {
    "NEXMark Q0: pass-through of every event",
    "NEXMark Q1: bid prices converted to euros",
    "NEXMark Q2: bids on every 123rd auction",
    "NEXMark Q3: persons in OR/ID/CA selling in category 10 (incremental join)",
    "NEXMark Q4: average closing price per category",
    "NEXMark Q5: hot auctions per sliding window",
    "NEXMark Q6: average selling price per seller, last 10 auctions",
    "NEXMark Q7: highest bid per tumbling window",
    "NEXMark Q8: new users selling in the window they joined (windowed join)"};

namespace {

using Out = std::vector<std::pair<Time, Row>>;

struct Ref {
  const QueryConfig& qc;
  Generator gen;
  const std::vector<Event>& ev;
  Out out;

  Time logical(const Event& e) const { return gen.logical_time(e.number); }
  Time close(uint64_t end) const {  // the logical time of the last instant before `end`
    const uint64_t last_intended = (end - 1) / qc.gen.dilation;
    const auto epoch = static_cast<uint64_t>(qc.gen.epoch_ns);
    return last_intended / epoch * epoch;
  }

  void stateless(int q) {
    for (const Event& e : ev) {
      if (q == 0) out.push_back({logical(e), event_row(e)});
      if (e.kind != Kind::bid) continue;
      const Bid& b = e.bid;
      if (q == 1)
        out.push_back({logical(e), Row{{b.auction, b.bidder, b.price * 89 / 100, b.date_time, 0}}});
      if (q == 2 && b.auction % qc.auction_skip == 0)
        out.push_back({logical(e), Row{{b.auction, b.price, 0, 0, 0}}});
    }
  }

  // Q3: every (person, auction) pair, emitted when the later of the two arrives.
  void q3() {
    std::unordered_map<uint64_t, const Event*> people;
    for (const Event& e : ev)
      if (e.kind == Kind::person) {
        const Person& p = e.person;
        if (p.state == kStateOR || p.state == kStateID || p.state == kStateCA) people[p.id] = &e;
      }
    for (const Event& e : ev) {
      if (e.kind != Kind::auction || e.auction.category != 10) continue;
      auto it = people.find(e.auction.seller);
      if (it == people.end()) continue;
      const Person& p = it->second->person;
      const uint64_t name = pack_name(p.first_name, p.last_name, p.city, p.state);
      out.push_back(
          {std::max(logical(e), logical(*it->second)), Row{{p.id, name, e.auction.id, 0, 0}}});
    }
  }

  struct Close {
    Time at;
    uint64_t expires, auction, seller, category, price;
  };
  // Every auction with a valid bid, with its winning price, in order of expiry.
  std::vector<Close> closes() {
    std::unordered_map<uint64_t, std::vector<const Bid*>> bids_of;
    for (const Event& e : ev)
      if (e.kind == Kind::bid) bids_of[e.bid.auction].push_back(&e.bid);
    std::vector<Close> c;
    for (const Event& e : ev) {
      if (e.kind != Kind::auction) continue;
      const Auction& a = e.auction;
      uint64_t best = 0;
      for (const Bid* b : bids_of[a.id])
        if (b->date_time >= a.date_time && b->date_time < a.expires && b->price >= a.reserve)
          best = std::max(best, b->price);
      if (best > 0) c.push_back({close(a.expires), a.expires, a.id, a.seller, a.category, best});
    }
    std::sort(c.begin(), c.end(), [](const Close& x, const Close& y) {
      return std::tie(x.expires, x.auction) < std::tie(y.expires, y.auction);
    });
    return c;
  }

  // Q4 / Q6: after all closes at a time, the running average of every group that changed.
  void averages(bool per_category) {
    const std::vector<Close> c = closes();
    std::map<uint64_t, std::vector<uint64_t>> prices;  // group -> all prices, in order
    for (size_t i = 0; i < c.size();) {
      size_t j = i;
      std::map<uint64_t, bool> changed;
      for (; j < c.size() && c[j].at == c[i].at; ++j) {
        const uint64_t g = per_category ? c[j].category : c[j].seller;
        prices[g].push_back(c[j].price);
        changed[g] = true;
      }
      for (const auto& [g, _] : changed) {
        const auto& p = prices[g];
        const size_t from = per_category ? 0 : (p.size() > 10 ? p.size() - 10 : 0);
        uint64_t sum = 0;
        for (size_t k = from; k < p.size(); ++k) sum += p[k];
        const uint64_t n = p.size() - from;
        out.push_back({c[i].at, Row{{g, sum / n, n, 0, 0}}});
      }
      i = j;
    }
  }

  // Q5: count bids per (window, auction) by brute force over all windows of each bid.
  void q5() {
    const uint64_t P = qc.slide_ns, S = qc.window_ns;
    std::map<uint64_t, std::map<uint64_t, uint64_t>> counts;  // window start -> auction -> n
    for (const Event& e : ev) {
      if (e.kind != Kind::bid) continue;
      const uint64_t t = e.bid.date_time;
      for (uint64_t start = (t >= S ? t - S : 0) / P * P; start <= t; start += P)
        if (t < start + S) ++counts[start][e.bid.auction];
    }
    for (const auto& [start, per] : counts) {
      uint64_t best = 0;
      for (const auto& [a, n] : per) best = std::max(best, n);
      for (const auto& [a, n] : per)
        if (n == best) out.push_back({close(start + S), Row{{start, a, n, 0, 0}}});
    }
  }

  // Q7: the highest price of each tumbling window, then every bid with it.
  void q7() {
    const uint64_t S = qc.window_ns;
    std::map<uint64_t, uint64_t> best;
    for (const Event& e : ev)
      if (e.kind == Kind::bid) {
        uint64_t& m = best[e.bid.date_time / S];
        m = std::max(m, e.bid.price);
      }
    for (const Event& e : ev)
      if (e.kind == Kind::bid) {
        const Bid& b = e.bid;
        const uint64_t k = b.date_time / S;
        if (b.price == best[k])
          out.push_back(
              {close((k + 1) * S), Row{{k * S, b.auction, b.bidder, b.price, b.date_time}}});
      }
  }

  // Q8: per window, the persons who joined and the auctions by seller.
  void q8() {
    const uint64_t S = qc.window_ns;
    std::map<uint64_t, std::unordered_map<uint64_t, std::vector<const Auction*>>> sales;
    for (const Event& e : ev)
      if (e.kind == Kind::auction)
        sales[e.auction.date_time / S][e.auction.seller].push_back(&e.auction);
    for (const Event& e : ev) {
      if (e.kind != Kind::person) continue;
      const Person& p = e.person;
      const uint64_t k = p.date_time / S;
      for (const Auction* a : sales[k][p.id])
        out.push_back({close((k + 1) * S), Row{{k * S, p.id, pack_name(p.first_name, p.last_name),
                                                a->reserve, a->id}}});
    }
  }
};

}  // namespace

std::vector<std::pair<Time, Row>> reference_query(int q, const QueryConfig& qc,
                                                  const std::vector<Event>& events) {
  Ref r{qc, Generator(qc.gen), events, {}};
  switch (q) {
    case 0:
    case 1:
    case 2:
      r.stateless(q);
      break;
    case 3:
      r.q3();
      break;
    case 4:
      r.averages(true);
      break;
    case 5:
      r.q5();
      break;
    case 6:
      r.averages(false);
      break;
    case 7:
      r.q7();
      break;
    default:
      r.q8();
      break;
  }
  return std::move(r.out);
}

}  // namespace snailtrail::nexmark
