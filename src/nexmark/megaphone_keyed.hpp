// The Megaphone builder of the keyed seam (keyed.hpp, docs/NEXMARK.md "Megaphone"): the
// same queries with their keyed state in Megaphone's bins, migratable at run time.
//
//   MegaphoneKeyed k{control, opts};  // control: Stream<megaphone::ControlUpdate>
//   build_megaphone_query(q, events, qc, k);  // built_queries.hpp
//
// Every keyed operator is a megaphone::stateful_binary (a unary one gets an empty second
// input) whose bin State is a KeyedBin: the States of the bin's keys and the bin's timers
// (time -> keys). The bin of a key is the high log_bins bits of mix64(key). The fold of
// (time t, bin) keeps the seam's order per key — input a's records of t in (key, rank)
// order, then input b's, then the timers due at t (and those set for t while they run) —
// and asks Megaphone to wake the bin at the time of each new timer; state, timers,
// buffered records and wake-ups move together when the bin migrates. `local` stays the
// native per-worker combiner (its state is not keyed by a record key). All operators of
// one query share the control stream: a configuration update moves the bin in each.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "megaphone/megaphone.hpp"
#include "nexmark/keyed.hpp"
#include "nexmark/queries.hpp"

namespace snailtrail::nexmark {

// The keyed state of one bin.
template <class State>
struct KeyedBin {
  std::unordered_map<uint64_t, State> keys;
  std::map<Time, std::vector<uint64_t>> timers;  // time -> keys (with repeats)
};

// The empty second input of a unary keyed operator.
struct NoRecord {
  char unused;
};

// The fold of one (time, bin): the seam's order per key.
template <class State, class Out, class A, class B, class Logic>
struct BinnedFold {
  Logic logic;
  std::vector<std::pair<Time, uint64_t>> new_timers;
  std::vector<std::pair<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>, uint32_t>> order;

  void operator()(Time t, uint32_t, std::vector<A>& as, std::vector<B>& bs, KeyedBin<State>& bin,
                  megaphone::Wake& wake, Session<Out>& out) {
    KeyedCtx<Out> ctx;
    ctx.out_ = &out;
    ctx.timers_ = &new_timers;
    ctx.time_ = t;
    apply(
        as, bin, ctx, [&](const A& r) { return logic.key_a(r); },
        [&](const A& r) { return logic.rank_a(r); },
        [&](const A& r, State& st) { logic.on_a(r, st, ctx); });
    if constexpr (!std::is_same_v<B, NoRecord>)
      apply(
          bs, bin, ctx, [&](const B& r) { return logic.key_b(r); },
          [&](const B& r) { return logic.rank_b(r); },
          [&](const B& r, State& st) { logic.on_b(r, st, ctx); });
    schedule(t, bin, wake);
    // Timers due at t (new ones at t may be set while they run: loop until none is left).
    while (!bin.timers.empty() && bin.timers.begin()->first <= t) {
      if (bin.timers.begin()->first < t)
        throw std::logic_error("nexmark: a timer of a Megaphone bin was not woken");
      std::vector<uint64_t> keys = std::move(bin.timers.begin()->second);
      bin.timers.erase(bin.timers.begin());
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (uint64_t k : keys) {
        auto st = bin.keys.find(k);
        if (st == bin.keys.end()) continue;
        ctx.key_ = k;
        logic.on_timer(st->second, ctx);
        if (logic.empty(st->second)) bin.keys.erase(st);
      }
      schedule(t, bin, wake);
    }
  }

 private:
  template <class R, class KeyFn, class RankFn, class Fn>
  void apply(std::vector<R>& recs, KeyedBin<State>& bin, KeyedCtx<Out>& ctx, KeyFn key, RankFn rank,
             Fn fn) {
    if (recs.empty()) return;
    order.clear();
    for (uint32_t i = 0; i < recs.size(); ++i) order.push_back({{key(recs[i]), rank(recs[i])}, i});
    std::sort(order.begin(), order.end());
    for (const auto& [k, i] : order) {
      const uint64_t kk = k.first;
      ctx.key_ = kk;
      State& st = bin.keys[kk];
      fn(recs[i], st);
      if (logic.empty(st)) bin.keys.erase(kk);
    }
  }
  void schedule(Time now, KeyedBin<State>& bin, megaphone::Wake& wake) {
    for (const auto& [t2, k] : new_timers) {
      auto& keys = bin.timers[t2];
      if (keys.empty() && t2 > now) wake.at(t2);
      keys.push_back(k);
    }
    new_timers.clear();
  }
};

struct MegaphoneKeyed {
  flow::Stream<megaphone::ControlUpdate> control;
  megaphone::Options opts;

  template <class State, class Out, class A, class Logic>
  Stream<Out> unary(const Stream<A>& in, std::string name, Logic logic) const {
    auto none = flow::frontier_stream<NoRecord>(in, name + "-none");
    auto ka = [logic](const A& r) { return flow::mix64(logic.key_a(r)); };
    auto kb = [](const NoRecord&) { return uint64_t{0}; };
    return megaphone::stateful_binary<KeyedBin<State>, Out>(
        in, none, control, name, opts, ka, kb,
        BinnedFold<State, Out, A, NoRecord, Logic>{std::move(logic), {}, {}},
        [](uint32_t, KeyedBin<State>&) {});
  }
  template <class State, class Out, class A, class Logic>
  Stream<Out> local(const Stream<A>& in, std::string name, Logic logic) const {
    return NativeKeyed::local<State, Out>(in, std::move(name), std::move(logic));
  }
  template <class State, class Out, class A, class B, class Logic>
  Stream<Out> binary(const Stream<A>& a, const Stream<B>& b, std::string name, Logic logic) const {
    auto ka = [logic](const A& r) { return flow::mix64(logic.key_a(r)); };
    auto kb = [logic](const B& r) { return flow::mix64(logic.key_b(r)); };
    return megaphone::stateful_binary<KeyedBin<State>, Out>(
        a, b, control, name, opts, ka, kb,
        BinnedFold<State, Out, A, B, Logic>{std::move(logic), {}, {}},
        [](uint32_t, KeyedBin<State>&) {});
  }
};

}  // namespace snailtrail::nexmark

// ---- codecs of the queries' states (what a migration serializes) ----
namespace snailtrail::megaphone {

template <class State>
struct Codec<nexmark::KeyedBin<State>> {
  static void encode(const nexmark::KeyedBin<State>& s, std::vector<char>& out) {
    detail::put_u64(out, s.keys.size());
    for (const auto& [k, st] : s.keys) {
      detail::put_u64(out, k);
      Codec<State>::encode(st, out);
    }
    Codec<std::map<Time, std::vector<uint64_t>>>::encode(s.timers, out);
  }
  static void decode(const char*& p, const char* end, nexmark::KeyedBin<State>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / 8 < n)
      throw std::runtime_error("megaphone: truncated state");
    s.keys.clear();
    s.keys.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = detail::get_u64(p, end);
      Codec<State>::decode(p, end, s.keys[k]);
    }
    Codec<std::map<Time, std::vector<uint64_t>>>::decode(p, end, s.timers);
  }
};

template <>
struct Codec<nexmark::Q3State> {
  static void encode(const nexmark::Q3State& s, std::vector<char>& out) {
    Codec<bool>::encode(s.has_person, out);
    Codec<nexmark::Person>::encode(s.person, out);
    Codec<std::vector<uint64_t>>::encode(s.waiting, out);
    Codec<std::string>::encode(s.payload, out);
  }
  static void decode(const char*& p, const char* end, nexmark::Q3State& s) {
    Codec<bool>::decode(p, end, s.has_person);
    Codec<nexmark::Person>::decode(p, end, s.person);
    Codec<std::vector<uint64_t>>::decode(p, end, s.waiting);
    Codec<std::string>::decode(p, end, s.payload);
  }
};

template <>
struct Codec<nexmark::OpenAuction> {
  static void encode(const nexmark::OpenAuction& s, std::vector<char>& out) {
    Codec<bool>::encode(s.open, out);
    Codec<nexmark::Auction>::encode(s.a, out);
    Codec<uint64_t>::encode(s.best, out);
    Codec<std::string>::encode(s.payload, out);
  }
  static void decode(const char*& p, const char* end, nexmark::OpenAuction& s) {
    Codec<bool>::decode(p, end, s.open);
    Codec<nexmark::Auction>::decode(p, end, s.a);
    Codec<uint64_t>::decode(p, end, s.best);
    Codec<std::string>::decode(p, end, s.payload);
  }
};

template <>
struct Codec<nexmark::LastTen> {
  static void encode(const nexmark::LastTen& s, std::vector<char>& out) {
    Codec<std::deque<uint64_t>>::encode(s.prices, out);
    Codec<bool>::encode(s.due, out);
  }
  static void decode(const char*& p, const char* end, nexmark::LastTen& s) {
    Codec<std::deque<uint64_t>>::decode(p, end, s.prices);
    Codec<bool>::decode(p, end, s.due);
  }
};

template <>
struct Codec<nexmark::SlideCounts> {
  static void encode(const nexmark::SlideCounts& s, std::vector<char>& out) {
    Codec<std::map<uint64_t, uint64_t>>::encode(s.slides, out);
    Codec<uint64_t>::encode(s.next, out);
    Codec<Time>::encode(s.due, out);
  }
  static void decode(const char*& p, const char* end, nexmark::SlideCounts& s) {
    Codec<std::map<uint64_t, uint64_t>>::decode(p, end, s.slides);
    Codec<uint64_t>::decode(p, end, s.next);
    Codec<Time>::decode(p, end, s.due);
  }
};

namespace detail {
template <class S>  // MaxRows<k>::State
struct MaxRowsCodec {
  static void encode(const S& s, std::vector<char>& out) {
    Codec<std::vector<nexmark::Row>>::encode(s.best, out);
    Codec<bool>::encode(s.due, out);
  }
  static void decode(const char*& p, const char* end, S& s) {
    Codec<std::vector<nexmark::Row>>::decode(p, end, s.best);
    Codec<bool>::decode(p, end, s.due);
  }
};
}  // namespace detail
template <>
struct Codec<nexmark::MaxRows<2>::State> : detail::MaxRowsCodec<nexmark::MaxRows<2>::State> {};
template <>
struct Codec<nexmark::MaxRows<3>::State> : detail::MaxRowsCodec<nexmark::MaxRows<3>::State> {};

template <>
struct Codec<nexmark::Q8State::Window> {
  static void encode(const nexmark::Q8State::Window& s, std::vector<char>& out) {
    Codec<bool>::encode(s.person, out);
    Codec<uint64_t>::encode(s.name, out);
    Codec<std::vector<std::pair<uint64_t, uint64_t>>>::encode(s.auctions, out);
    Codec<std::string>::encode(s.payload, out);
  }
  static void decode(const char*& p, const char* end, nexmark::Q8State::Window& s) {
    Codec<bool>::decode(p, end, s.person);
    Codec<uint64_t>::decode(p, end, s.name);
    Codec<std::vector<std::pair<uint64_t, uint64_t>>>::decode(p, end, s.auctions);
    Codec<std::string>::decode(p, end, s.payload);
  }
};

template <>
struct Codec<nexmark::Q8State> {
  static void encode(const nexmark::Q8State& s, std::vector<char>& out) {
    Codec<std::map<uint64_t, nexmark::Q8State::Window>>::encode(s.windows, out);
  }
  static void decode(const char*& p, const char* end, nexmark::Q8State& s) {
    Codec<std::map<uint64_t, nexmark::Q8State::Window>>::decode(p, end, s.windows);
  }
};

}  // namespace snailtrail::megaphone
