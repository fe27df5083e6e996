// NEXMark queries Q0-Q8 on the runtime (docs/NEXMARK.md). Each query is a function
// template over the keyed-state builder K (keyed.hpp): `NativeKeyed` today, a Megaphone
// builder later, with the same output. Every query emits `Row`s; what the fields mean
// is listed per query. reference.cpp has the plain single-threaded versions (--verify).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "flow/operators.hpp"
#include "nexmark/generator.hpp"
#include "nexmark/keyed.hpp"

namespace snailtrail::nexmark {

// One output record of any query (unused fields 0).
struct Row {
  std::array<uint64_t, 5> f;
  bool operator==(const Row&) const = default;
  auto operator<=>(const Row&) const = default;
};
uint64_t row_hash(const Row& r);
Row event_row(const Event& e);  // Q0's output: number, kind, date_time, bytes, main id
inline uint64_t pack_name(uint8_t first, uint8_t last, uint8_t city = 0, uint8_t state = 0) {
  return first | uint64_t{last} << 8 | uint64_t{city} << 16 | uint64_t{state} << 24;
}

struct QueryConfig {
  GeneratorConfig gen;
  uint64_t window_ns = 10'000'000'000;  // Q5 window, Q7 and Q8 tumbling windows (event time)
  uint64_t slide_ns = 5'000'000'000;    // Q5's period; window_ns is a multiple of it
  uint64_t auction_skip = 123;          // Q2 keeps auctions whose id is a multiple
  // The logical time at which a window ending (exclusive) at event time `end` closes.
  Time close_time(uint64_t end) const { return Generator(gen).logical_of_event_time(end - 1); }
};

inline constexpr uint8_t kStateCA = 1, kStateID = 2, kStateOR = 3;  // indices in kStates
inline constexpr int kQueries = 9;
extern const char* const kQueryDescriptions[kQueries];

// ---- typed views of the event stream ----
inline flow::Stream<Person> persons(const flow::Stream<Event>& ev) {
  return flow::flat_map<Person>(ev, "persons", [](const Event& e, auto&& emit) {
    if (e.kind == Kind::person) emit(e.person);
  });
}
inline flow::Stream<Auction> auctions(const flow::Stream<Event>& ev) {
  return flow::flat_map<Auction>(ev, "auctions", [](const Event& e, auto&& emit) {
    if (e.kind == Kind::auction) emit(e.auction);
  });
}
inline flow::Stream<Bid> bids(const flow::Stream<Event>& ev) {
  return flow::flat_map<Bid>(ev, "bids", [](const Event& e, auto&& emit) {
    if (e.kind == Kind::bid) emit(e.bid);
  });
}

// ---- Q0-Q2: stateless ----
// Q0 pass-through: event_row(e) for every event.
inline flow::Stream<Row> q0(const flow::Stream<Event>& ev) {
  return flow::map<Row>(ev, "q0", [](const Event& e) { return event_row(e); });
}
// Q1 currency conversion: (auction, bidder, price * 89 / 100, date_time) per bid.
inline flow::Stream<Row> q1(const flow::Stream<Event>& ev) {
  return flow::flat_map<Row>(ev, "q1", [](const Event& e, auto&& emit) {
    if (e.kind == Kind::bid)
      emit(Row{{e.bid.auction, e.bid.bidder, e.bid.price * 89 / 100, e.bid.date_time, 0}});
  });
}
// Q2 selection: (auction, price) of the bids on auctions whose id is a multiple of 123.
inline flow::Stream<Row> q2(const flow::Stream<Event>& ev, const QueryConfig& qc) {
  const uint64_t skip = qc.auction_skip;
  return flow::flat_map<Row>(ev, "q2", [skip](const Event& e, auto&& emit) {
    if (e.kind == Kind::bid && e.bid.auction % skip == 0)
      emit(Row{{e.bid.auction, e.bid.price, 0, 0, 0}});
  });
}

// ---- Q3 local item suggestion: persons in OR, ID or CA who sell in category 10 ----
// (person id, pack_name(first, last, city, state), auction id), at the later of the
// person's and the auction's time. State per person id: the person, the auctions seen
// before it.
struct Q3State {
  bool has_person = false;
  Person person{};
  std::vector<uint64_t> waiting;
  std::string payload;  // the person's text fields (--payloads)
};
struct Q3Logic {
  QueryConfig qc;
  uint64_t key_a(const Person& p) const { return p.id; }
  uint64_t key_b(const Auction& a) const { return a.seller; }
  std::pair<uint64_t, uint64_t> rank_a(const Person& p) const { return {p.date_time, p.id}; }
  std::pair<uint64_t, uint64_t> rank_b(const Auction& a) const { return {a.date_time, a.id}; }
  static Row row(const Person& p, uint64_t auction) {
    return Row{{p.id, pack_name(p.first_name, p.last_name, p.city, p.state), auction, 0, 0}};
  }
  void on_a(const Person& p, Q3State& s, KeyedCtx<Row>& ctx) const {
    s.has_person = true;
    s.person = p;
    if (qc.gen.payloads) s.payload = Generator(qc.gen).payload(p);
    for (uint64_t a : s.waiting) ctx.give(row(p, a));
    s.waiting.clear();
    s.waiting.shrink_to_fit();
  }
  void on_b(const Auction& a, Q3State& s, KeyedCtx<Row>& ctx) const {
    if (s.has_person)
      ctx.give(row(s.person, a.id));
    else
      s.waiting.push_back(a.id);
  }
  void on_timer(Q3State&, KeyedCtx<Row>&) const {}
  bool empty(const Q3State& s) const { return !s.has_person && s.waiting.empty(); }
};
template <class K>
flow::Stream<Row> q3(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  auto p = flow::filter(persons(ev), "q3-persons", [](const Person& x) {
    return x.state == kStateOR || x.state == kStateID || x.state == kStateCA;
  });
  auto a = flow::filter(auctions(ev), "q3-auctions",
                        [](const Auction& x) { return x.category == kFirstCategoryId; });
  return keyed.template binary<Q3State, Row>(p, a, "q3-join", Q3Logic{qc});
}

// ---- closed auctions (Q4, Q6): the winning price of every auction at its expiry ----
// A bid counts if it is for the auction, at or after its creation, before its expiry,
// and at least its reserve; the winning price is the highest. Closed at the logical time
// of expires - 1; auctions without a valid bid give nothing.
struct Closed {
  uint64_t auction, seller, category, price, expires;
};
struct OpenAuction {
  bool open = false;
  Auction a{};
  uint64_t best = 0;
  std::string payload;  // the auction's text fields (--payloads)
};
struct ClosedLogic {
  QueryConfig qc;
  uint64_t key_a(const Auction& a) const { return a.id; }
  uint64_t key_b(const Bid& b) const { return b.auction; }
  std::pair<uint64_t, uint64_t> rank_a(const Auction& a) const { return {a.date_time, a.id}; }
  std::pair<uint64_t, uint64_t> rank_b(const Bid& b) const { return {b.date_time, b.price}; }
  void on_a(const Auction& a, OpenAuction& s, KeyedCtx<Closed>& ctx) const {
    s.open = true;
    s.a = a;
    if (qc.gen.payloads) s.payload = Generator(qc.gen).payload(a);
    ctx.at(qc.close_time(a.expires));
  }
  void on_b(const Bid& b, OpenAuction& s, KeyedCtx<Closed>&) const {
    if (s.open && b.date_time >= s.a.date_time && b.date_time < s.a.expires &&
        b.price >= s.a.reserve)
      s.best = std::max(s.best, b.price);
  }
  void on_timer(OpenAuction& s, KeyedCtx<Closed>& ctx) const {
    if (!s.open) return;
    if (s.best > 0) ctx.give(Closed{s.a.id, s.a.seller, s.a.category, s.best, s.a.expires});
    s.open = false;
    s.payload = std::string();
  }
  bool empty(const OpenAuction& s) const { return !s.open; }
};
template <class K>
flow::Stream<Closed> closed_auctions(const flow::Stream<Event>& ev, const QueryConfig& qc,
                                     K keyed) {
  return keyed.template binary<OpenAuction, Closed>(auctions(ev), bids(ev), "closed-auctions",
                                                    ClosedLogic{qc});
}

// ---- Q4 average closing price per category ----
// (category, sum / count, count) over every auction of the category closed so far, once
// per time at which one closed.
struct SumCount {
  uint64_t sum = 0, count = 0;
  bool due = false;
};
struct Q4Logic {
  uint64_t key_a(const Closed& c) const { return c.category; }
  std::pair<uint64_t, uint64_t> rank_a(const Closed& c) const { return {c.expires, c.auction}; }
  void on_a(const Closed& c, SumCount& s, KeyedCtx<Row>& ctx) const {
    s.sum += c.price;
    ++s.count;
    if (!s.due) ctx.at(ctx.time());
    s.due = true;
  }
  void on_timer(SumCount& s, KeyedCtx<Row>& ctx) const {
    ctx.give(Row{{ctx.key(), s.sum / s.count, s.count, 0, 0}});
    s.due = false;
  }
  bool empty(const SumCount&) const { return false; }
};
template <class K>
flow::Stream<Row> q4(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  return keyed.template unary<SumCount, Row>(closed_auctions(ev, qc, keyed), "q4-average",
                                             Q4Logic{});
}

// ---- Q6 average selling price per seller over its last 10 closed auctions ----
// (seller, sum / n, n) with n <= 10 the seller's latest closed auctions (by expiry, then
// id), once per time at which one of the seller's auctions closed.
struct LastTen {
  std::deque<uint64_t> prices;
  bool due = false;
};
struct Q6Logic {
  uint64_t key_a(const Closed& c) const { return c.seller; }
  std::pair<uint64_t, uint64_t> rank_a(const Closed& c) const { return {c.expires, c.auction}; }
  void on_a(const Closed& c, LastTen& s, KeyedCtx<Row>& ctx) const {
    s.prices.push_back(c.price);
    if (s.prices.size() > 10) s.prices.pop_front();
    if (!s.due) ctx.at(ctx.time());
    s.due = true;
  }
  void on_timer(LastTen& s, KeyedCtx<Row>& ctx) const {
    uint64_t sum = 0;
    for (uint64_t p : s.prices) sum += p;
    ctx.give(Row{{ctx.key(), sum / s.prices.size(), s.prices.size(), 0, 0}});
    s.due = false;
  }
  bool empty(const LastTen&) const { return false; }
};
template <class K>
flow::Stream<Row> q6(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  return keyed.template unary<LastTen, Row>(closed_auctions(ev, qc, keyed), "q6-average",
                                            Q6Logic{});
}

// ---- Q5 hot items: the auctions with the most bids in each sliding window ----
// Window k covers event times [k * slide, k * slide + window). (window start, auction,
// bids) for every auction with the window's maximum count, at the window's close.
// Stage 1 per auction: bids per slide; stage 2 per window: the maximum. An auction's
// windows with bids are those containing one of its slides; they are reported in
// increasing order, so the state is the slide counts, the first window not yet reported
// and one timer (at the close of the earliest window with bids not yet reported):
// O(log) per bid however many slides a window has (the thesis' Q5 keeps sixty).
struct SlideCounts {
  std::map<uint64_t, uint64_t> slides;  // slide index -> bids
  uint64_t next = 0;                    // windows before it are reported
  Time due = 0;                         // the earliest timer set (0: none)
};
struct Q5CountLogic {
  QueryConfig qc;
  uint64_t key_a(const Bid& b) const { return b.auction; }
  std::pair<uint64_t, uint64_t> rank_a(const Bid& b) const { return {b.date_time, b.bidder}; }
  uint64_t per() const { return qc.window_ns / qc.slide_ns; }
  Time close_of(uint64_t k) const { return qc.close_time(k * qc.slide_ns + qc.window_ns); }
  // The earliest window not yet reported that contains slide `first` (the first slide).
  uint64_t first_window(const SlideCounts& s, uint64_t first) const {
    return std::max(s.next, first + 1 >= per() ? first + 1 - per() : 0);
  }
  void wake(SlideCounts& s, Time close, KeyedCtx<Row>& ctx) const {
    if (s.due != 0 && s.due <= close) return;
    s.due = close;
    ctx.at(close);
  }
  void on_a(const Bid& b, SlideCounts& s, KeyedCtx<Row>& ctx) const {
    const uint64_t slide = b.date_time / qc.slide_ns;
    if (++s.slides[slide] == 1) wake(s, close_of(first_window(s, slide)), ctx);
  }
  void on_timer(SlideCounts& s, KeyedCtx<Row>& ctx) const {
    if (s.due <= ctx.time()) s.due = 0;
    while (!s.slides.empty()) {
      const uint64_t k = first_window(s, s.slides.begin()->first);
      if (close_of(k) > ctx.time()) {
        wake(s, close_of(k), ctx);
        return;
      }
      uint64_t n = 0;
      for (auto it = s.slides.begin(); it != s.slides.end() && it->first < k + per(); ++it)
        n += it->second;
      ctx.give(Row{{k * qc.slide_ns, ctx.key(), n, 0, 0}});
      s.next = k + 1;
      s.slides.erase(s.slides.begin(), s.slides.lower_bound(s.next));
    }
  }
  bool empty(const SlideCounts& s) const { return s.slides.empty(); }
};
// The rows of one window (stage 2 of Q5 and Q7): keeps those with the largest value of
// field `kField`, gives them when the window's time is complete.
template <int kField>
struct MaxRows {
  struct State {
    std::vector<Row> best;
    bool due = false;
  };
  uint64_t key_a(const Row& r) const { return r.f[0]; }
  std::pair<uint64_t, uint64_t> rank_a(const Row& r) const { return {r.f[kField], r.f[1]}; }
  void on_a(const Row& r, State& s, KeyedCtx<Row>& ctx) const {
    if (s.best.empty() || r.f[kField] > s.best[0].f[kField]) s.best.clear();
    if (s.best.empty() || r.f[kField] == s.best[0].f[kField]) s.best.push_back(r);
    if (!s.due) ctx.at(ctx.time());
    s.due = true;
  }
  void on_timer(State& s, KeyedCtx<Row>& ctx) const {
    for (const Row& r : s.best) ctx.give(r);
    s.best.clear();
    s.due = false;
  }
  bool empty(const State& s) const { return s.best.empty() && !s.due; }
};
template <class K>
flow::Stream<Row> q5(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  auto counts = keyed.template unary<SlideCounts, Row>(bids(ev), "q5-count", Q5CountLogic{qc});
  return keyed.template unary<MaxRows<2>::State, Row>(counts, "q5-max", MaxRows<2>{});
}

// ---- Q7 highest bid per tumbling window ----
// (window start, auction, bidder, price, date_time) of every bid with the window's
// highest price, at the window's close. Stage 1 per worker (a local combiner, keyed by
// window), stage 2 per window.
struct Q7LocalLogic {
  QueryConfig qc;
  uint64_t key_a(const Bid& b) const { return b.date_time / qc.window_ns; }
  std::pair<uint64_t, uint64_t> rank_a(const Bid& b) const { return {b.price, b.date_time}; }
  void on_a(const Bid& b, MaxRows<3>::State& s, KeyedCtx<Row>& ctx) const {
    const uint64_t k = b.date_time / qc.window_ns;
    const Row r{{k * qc.window_ns, b.auction, b.bidder, b.price, b.date_time}};
    if (s.best.empty() || r.f[3] > s.best[0].f[3]) s.best.clear();
    if (s.best.empty() || r.f[3] == s.best[0].f[3]) s.best.push_back(r);
    if (!s.due) ctx.at(qc.close_time((k + 1) * qc.window_ns));
    s.due = true;
  }
  void on_timer(MaxRows<3>::State& s, KeyedCtx<Row>& ctx) const {
    for (const Row& r : s.best) ctx.give(r);
    s.best.clear();
    s.due = false;
  }
  bool empty(const MaxRows<3>::State& s) const { return s.best.empty() && !s.due; }
};
template <class K>
flow::Stream<Row> q7(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  auto local = keyed.template local<MaxRows<3>::State, Row>(bids(ev), "q7-local", Q7LocalLogic{qc});
  return keyed.template unary<MaxRows<3>::State, Row>(local, "q7-max", MaxRows<3>{});
}

// ---- Q8 new users: persons who opened an auction in the tumbling window they joined ----
// (window start, person id, pack_name(first, last), auction reserve, auction id) per
// (person, auction) pair of one window, at the window's close.
struct Q8State {
  struct Window {
    bool person = false;
    uint64_t name = 0;
    std::string payload;                                  // the person's text fields (--payloads)
    std::vector<std::pair<uint64_t, uint64_t>> auctions;  // (reserve, id)
  };
  std::map<uint64_t, Window> windows;
};
struct Q8Logic {
  QueryConfig qc;
  uint64_t key_a(const Person& p) const { return p.id; }
  uint64_t key_b(const Auction& a) const { return a.seller; }
  std::pair<uint64_t, uint64_t> rank_a(const Person& p) const { return {p.date_time, p.id}; }
  std::pair<uint64_t, uint64_t> rank_b(const Auction& a) const { return {a.date_time, a.id}; }
  Time close_of(uint64_t k) const { return qc.close_time((k + 1) * qc.window_ns); }
  void on_a(const Person& p, Q8State& s, KeyedCtx<Row>& ctx) const {
    const uint64_t k = p.date_time / qc.window_ns;
    auto& w = s.windows[k];
    w.person = true;
    w.name = pack_name(p.first_name, p.last_name);
    if (qc.gen.payloads) w.payload = Generator(qc.gen).payload(p);
    ctx.at(close_of(k));
  }
  void on_b(const Auction& a, Q8State& s, KeyedCtx<Row>& ctx) const {
    const uint64_t k = a.date_time / qc.window_ns;
    s.windows[k].auctions.emplace_back(a.reserve, a.id);
    ctx.at(close_of(k));
  }
  void on_timer(Q8State& s, KeyedCtx<Row>& ctx) const {
    while (!s.windows.empty() && close_of(s.windows.begin()->first) <= ctx.time()) {
      const auto& [k, w] = *s.windows.begin();
      if (w.person)
        for (const auto& [reserve, id] : w.auctions)
          ctx.give(Row{{k * qc.window_ns, ctx.key(), w.name, reserve, id}});
      s.windows.erase(s.windows.begin());
    }
  }
  bool empty(const Q8State& s) const { return s.windows.empty(); }
};
template <class K>
flow::Stream<Row> q8(const flow::Stream<Event>& ev, const QueryConfig& qc, K keyed) {
  return keyed.template binary<Q8State, Row>(persons(ev), auctions(ev), "q8-join", Q8Logic{qc});
}

// Queries 3-5 and 6-8 (q outside: the last of each), apart so that a builder's
// instantiations can be compiled in parallel (built_queries.hpp).
template <class K>
flow::Stream<Row> build_query_3_to_5(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                                     K keyed) {
  if (q == 3) return q3(ev, qc, keyed);
  if (q == 4) return q4(ev, qc, keyed);
  return q5(ev, qc, keyed);
}
template <class K>
flow::Stream<Row> build_query_6_to_8(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                                     K keyed) {
  if (q == 6) return q6(ev, qc, keyed);
  if (q == 7) return q7(ev, qc, keyed);
  return q8(ev, qc, keyed);
}

// Builds query q (0-8) on `ev` with the keyed-state builder K.
template <class K>
flow::Stream<Row> build_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                              K keyed) {
  if (q == 0) return q0(ev);
  if (q == 1) return q1(ev);
  if (q == 2) return q2(ev, qc);
  return q <= 5 ? build_query_3_to_5(q, ev, qc, keyed) : build_query_6_to_8(q, ev, qc, keyed);
}

// The plain single-threaded version of query q over events (in event-number order):
// every output row with its logical time (reference.cpp).
std::vector<std::pair<Time, Row>> reference_query(int q, const QueryConfig& qc,
                                                  const std::vector<Event>& events);

}  // namespace snailtrail::nexmark
