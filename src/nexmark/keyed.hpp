// The seam between a NEXMark query and the operators that hold its keyed state
// (docs/NEXMARK.md "The seam"). A query is written against a builder `K` with
//
//   K::template unary<State, Out>(in, name, logic)           keyed by logic.key_a
//   K::template binary<State, Out>(a, b, name, logic)        keyed by key_a / key_b
//   K::template local<State, Out>(in, name, logic)           worker-local (a combiner)
//
// and the logic only ever sees one key's State at a time. `NativeKeyed` (here) keeps
// the states in a hash map per worker and exchanges records by key; a Megaphone
// builder hashes the same keys to bins, routes by the configuration in force at each
// time, and moves bins' States (and their pending timers) between workers.
//
// Semantics (both builders must give the same output): once the frontier of the inputs
// passes time t, the operator processes time t — first the records of input a of time
// t, then those of input b, each in the order of (key, logic.rank(record)), then the
// timers set for time t, by key — and times are processed in increasing order. The
// logic's callbacks get a KeyedCtx: `give(out)` emits at the time being processed,
// `at(t2)` sets a timer for the current key at t2 >= that time. After each callback a
// State for which logic.empty(state) holds is dropped.
//
// Logic interface:
//   uint64_t key_a(const A&); std::pair<uint64_t, uint64_t> rank_a(const A&);
//   void on_a(const A&, State&, KeyedCtx<Out>&);   (the same with _b for binary)
//   void on_timer(State&, KeyedCtx<Out>&);  bool empty(const State&);
#pragma once

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flow/operators.hpp"

namespace snailtrail::nexmark {

using flow::Capability;
using flow::Input;
using flow::InputCapability;
using flow::Output;
using flow::Session;
using flow::Stream;
using flow::Time;

template <class Out>
class KeyedCtx {
 public:
  Time time() const { return time_; }
  uint64_t key() const { return key_; }
  void give(Out o) { out_->give(std::move(o)); }
  void at(Time t) { timers_->emplace_back(std::max(t, time_), key_); }

 private:
  template <class, class, class, class, class>
  friend class KeyedCore;
  template <class, class, class, class, class>
  friend struct BinnedFold;      // megaphone_keyed.hpp
  Session<Out>* out_ = nullptr;  // at time_
  std::vector<std::pair<Time, uint64_t>>* timers_ = nullptr;
  Time time_ = 0;
  uint64_t key_ = 0;
};

struct NoInput {};

// The state machine shared by the native unary, binary and local operators.
template <class State, class Out, class A, class B, class Logic>
class KeyedCore {
 public:
  explicit KeyedCore(Logic logic) : logic_(std::move(logic)) {}

  template <class T>
  void take(Input<T>& in) {
    in.for_each([&](const InputCapability& cap, std::vector<T>& data) {
      Slot& s = slot(cap.time(), [&] { return cap.retain(); });
      auto& v = bucket<T>(s);
      v.insert(v.end(), std::make_move_iterator(data.begin()), std::make_move_iterator(data.end()));
    });
  }

  // Processes every time below `frontier`, in order.
  void run(Time frontier, Output<Out>& out) {
    while (!slots_.empty() && slots_.begin()->first < frontier) {
      auto it = slots_.begin();
      const Time t = it->first;
      Slot& s = it->second;
      Session<Out> session = out.session(s.cap);
      KeyedCtx<Out> ctx;
      ctx.out_ = &session;
      ctx.timers_ = &new_timers_;
      ctx.time_ = t;
      apply(
          s.a, ctx, [&](const A& r) { return logic_.key_a(r); },
          [&](const A& r) { return logic_.rank_a(r); },
          [&](const A& r, State& st) { logic_.on_a(r, st, ctx); });
      if constexpr (!std::is_same_v<B, NoInput>)
        apply(
            s.b, ctx, [&](const B& r) { return logic_.key_b(r); },
            [&](const B& r) { return logic_.rank_b(r); },
            [&](const B& r, State& st) { logic_.on_b(r, st, ctx); });
      schedule(s.cap);  // timers set so far, some possibly at t itself
      // Timers at t (new ones at t may be set while they run: loop until none is left).
      while (!s.timers.empty()) {
        std::vector<uint64_t> keys;
        keys.swap(s.timers);
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        for (uint64_t k : keys) {
          auto st = states_.find(k);
          if (st == states_.end()) continue;
          ctx.key_ = k;
          logic_.on_timer(st->second, ctx);
          if (logic_.empty(st->second)) states_.erase(st);
        }
        schedule(s.cap);
      }
      slots_.erase(it);
    }
  }
  size_t keys() const { return states_.size(); }

 private:
  struct Slot {
    Capability cap;
    std::vector<A> a;
    std::vector<std::conditional_t<std::is_same_v<B, NoInput>, char, B>> b;
    std::vector<uint64_t> timers;
  };
  template <class T>
  auto& bucket(Slot& s) {
    if constexpr (std::is_same_v<T, A>)
      return s.a;
    else
      return s.b;
  }
  template <class MakeCap>
  Slot& slot(Time t, MakeCap make) {
    auto [it, inserted] = slots_.try_emplace(t);
    if (inserted) it->second.cap = make();
    return it->second;
  }
  template <class R, class KeyFn, class RankFn, class Fn>
  void apply(std::vector<R>& recs, KeyedCtx<Out>& ctx, KeyFn key, RankFn rank, Fn fn) {
    if (recs.empty()) return;
    std::vector<std::pair<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>, uint32_t>> order;
    order.reserve(recs.size());
    for (uint32_t i = 0; i < recs.size(); ++i) order.push_back({{key(recs[i]), rank(recs[i])}, i});
    std::sort(order.begin(), order.end());
    for (const auto& [k, i] : order) {
      const uint64_t kk = k.first;
      ctx.key_ = kk;
      State& st = states_[kk];
      fn(recs[i], st);
      if (logic_.empty(st)) states_.erase(kk);
    }
    recs.clear();
  }
  // Moves the timers set by callbacks into their slots (a capability each).
  void schedule(const Capability& current) {
    for (const auto& [t, k] : new_timers_) {
      Slot& s = slot(t, [&] { return current.delayed(t); });
      s.timers.push_back(k);
    }
    new_timers_.clear();
  }

  Logic logic_;
  std::map<Time, Slot> slots_;
  std::unordered_map<uint64_t, State> states_;
  std::vector<std::pair<Time, uint64_t>> new_timers_;
};

// Keyed state in a hash map per worker, records exchanged by key.
struct NativeKeyed {
  template <class State, class Out, class A, class Logic>
  static Stream<Out> unary(const Stream<A>& in, std::string name, Logic logic) {
    auto key = [logic](const A& r) { return logic.key_a(r); };
    return op<State, Out, A>(in, flow::exchange(key), std::move(name), std::move(logic));
  }
  // Worker-local state (no exchange): a pre-aggregation that stays where its input is.
  template <class State, class Out, class A, class Logic>
  static Stream<Out> local(const Stream<A>& in, std::string name, Logic logic) {
    return op<State, Out, A>(in, flow::Pipeline{}, std::move(name), std::move(logic));
  }
  template <class State, class Out, class A, class B, class Logic>
  static Stream<Out> binary(const Stream<A>& a, const Stream<B>& b, std::string name, Logic logic) {
    auto ka = [logic](const A& r) { return logic.key_a(r); };
    auto kb = [logic](const B& r) { return logic.key_b(r); };
    using Core = KeyedCore<State, Out, A, B, Logic>;
    return flow::binary<Out>(
        a, flow::exchange(ka), b, flow::exchange(kb), std::move(name),
        [core = Core(std::move(logic))](Input<A>& ia, Input<B>& ib, Output<Out>& out) mutable {
          core.take(ia);
          core.take(ib);
          core.run(std::min(ia.frontier(), ib.frontier()), out);
        });
  }

 private:
  template <class State, class Out, class A, class Pact, class Logic>
  static Stream<Out> op(const Stream<A>& in, Pact pact, std::string name, Logic logic) {
    using Core = KeyedCore<State, Out, A, NoInput, Logic>;
    return in.template unary<Out>(
        std::move(pact), std::move(name),
        [core = Core(std::move(logic))](Input<A>& ia, Output<Out>& out) mutable {
          core.take(ia);
          core.run(ia.frontier(), out);
        });
  }
};

}  // namespace snailtrail::nexmark
