// stateful_binary's bins (megaphone.hpp, core.hpp): two record inputs merged into one
// stream of Either<A, B>; a bin's pending work is, per time, its records and its wake-ups
// (Wake: timers), folded together once per (time, bin).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "megaphone/core.hpp"

namespace snailtrail::megaphone {

// One record of either input (trivially copyable, so it crosses processes as bytes).
template <class A, class B>
struct Either {
  static constexpr size_t kSize = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
  static constexpr size_t kAlign = alignof(A) > alignof(B) ? alignof(A) : alignof(B);
  alignas(kAlign) unsigned char raw[kSize];
  uint8_t which;  // 0: an A, 1: a B
  static Either of_a(const A& a) {
    Either e{};
    std::memcpy(static_cast<void*>(e.raw), &a, sizeof(A));
    e.which = 0;
    return e;
  }
  static Either of_b(const B& b) {
    Either e{};
    std::memcpy(static_cast<void*>(e.raw), &b, sizeof(B));
    e.which = 1;
    return e;
  }
  A a() const {
    A x;
    std::memcpy(static_cast<void*>(&x), raw, sizeof(A));
    return x;
  }
  B b() const {
    B x;
    std::memcpy(static_cast<void*>(&x), raw, sizeof(B));
    return x;
  }
};

// Wake-ups of the bin being folded (the fold's notificator).
class Wake {
 public:
  // Calls the fold of the current bin at t2 > the current time (once per (t2, bin),
  // however often it is asked for).
  void at(Time t2) {
    if (t2 <= now_) throw std::logic_error("megaphone: Wake::at needs a later time");
    items_.push_back(t2);
  }
  Time now() const { return now_; }
  uint32_t bin() const { return bin_; }

  // Runtime side.
  void reset(Time now, uint32_t bin) {
    now_ = now;
    bin_ = bin;
  }
  std::vector<Time>& items() { return items_; }

 private:
  Time now_ = 0;
  uint32_t bin_ = 0;
  std::vector<Time> items_;
};

namespace detail {

// The bins of one worker: per time, the records not yet folded and the bins to wake.
template <class State, class T>
struct BatchBins : BinsBase<State> {
  using Rec = T;
  struct Batch {
    std::vector<Routed<T>> recs;
    std::vector<uint32_t> wakes;
  };
  std::map<Time, Batch> pending;
  // Indexes of `pending` for sending a bin in time proportional to what it takes (not to
  // every pending wake-up of the worker): the times whose batch has records, and per bin
  // the times with a wake-up of it.
  std::set<Time> rec_times;
  std::vector<std::set<Time>> wake_times;

  void resize(uint32_t bins) {
    BinsBase<State>::resize(bins);
    wake_times.resize(bins);
  }
  bool idle() const { return pending.empty(); }
  // The batch of time t, asking for a notification at t if it is new.
  template <class Retain>
  Batch& at(Time t, Retain retain) {
    auto [it, fresh] = pending.try_emplace(t);
    if (fresh) this->notes.notify_at(retain());
    return it->second;
  }
  template <class Retain>
  void add(Time t, std::vector<Routed<T>>& recs, Retain retain) {
    auto& batch = at(t, retain);
    rec_times.insert(t);
    if (batch.recs.empty())
      batch.recs.swap(recs);
    else
      batch.recs.insert(batch.recs.end(), recs.begin(), recs.end());
  }
  void add_wake(Time t, uint32_t bin, Capability& cap) {
    at(t, [&] { return cap.delayed(t); }).wakes.push_back(bin);
    wake_times[bin].insert(t);
  }
  // Moves the bin's pending records and wake-ups (all at times >= t: the times before t
  // are folded), found through the indexes, to buf.
  void extract(Time t, uint32_t bin, std::vector<char>& buf) {
    std::vector<std::pair<Time, T>> items;
    std::vector<Time> wakes;
    for (auto rt = rec_times.lower_bound(t); rt != rec_times.end(); ++rt) {
      auto it = pending.find(*rt);
      if (it == pending.end()) continue;
      auto& v = it->second.recs;
      auto keep =
          std::partition(v.begin(), v.end(), [bin](const Routed<T>& r) { return r.bin != bin; });
      for (auto i = keep; i != v.end(); ++i) items.emplace_back(it->first, i->rec);
      v.erase(keep, v.end());
    }
    for (Time tw : wake_times[bin]) {
      auto it = pending.find(tw);
      if (it == pending.end() || tw < t) continue;
      auto& wk = it->second.wakes;
      wk.erase(std::remove(wk.begin(), wk.end(), bin), wk.end());
      wakes.push_back(tw);
    }
    wake_times[bin].clear();
    encode_pending(items, buf);
    Codec<std::vector<Time>>::encode(wakes, buf);
  }
  void install(const InputCapability& cap, uint32_t bin, const char*& p, const char* end) {
    const Time t = cap.time();
    decode_pending<T>(t, p, end, [&](Time ti, const T& r) {
      at(ti, [&] { return cap.delayed(ti); }).recs.push_back(Routed<T>{r, bin, 0});
      rec_times.insert(ti);
    });
    std::vector<Time> wakes;
    Codec<std::vector<Time>>::decode(p, end, wakes);
    for (Time t2 : wakes) {
      if (t2 < t) throw std::logic_error("megaphone: a migrated wake-up is late");
      at(t2, [&] { return cap.delayed(t2); }).wakes.push_back(bin);
      wake_times[bin].insert(t2);
    }
  }
};

// Folds one time: once per bin with records or a wake-up at it, in bin order, with the
// bin's records of either input (in arrival order) at once.
template <class A, class B, class Fold>
struct FoldBatches {
  using E = Either<A, B>;
  Fold fold;
  Wake wake;
  std::vector<A> as;
  std::vector<B> bs;
  template <class State, class Out>
  void operator()(BatchBins<State, E>& s, Capability& cap, Output<Out>& out) {
    const Time t = cap.time();
    auto it = s.pending.find(t);
    if (it == s.pending.end()) return;
    typename BatchBins<State, E>::Batch batch = std::move(it->second);
    s.pending.erase(it);
    s.rec_times.erase(t);
    std::stable_sort(batch.recs.begin(), batch.recs.end(),
                     [](const Routed<E>& x, const Routed<E>& y) { return x.bin < y.bin; });
    std::sort(batch.wakes.begin(), batch.wakes.end());
    batch.wakes.erase(std::unique(batch.wakes.begin(), batch.wakes.end()), batch.wakes.end());
    for (uint32_t bin : batch.wakes) s.wake_times[bin].erase(t);
    Session<Out> session = out.session(cap);
    size_t i = 0, j = 0;
    while (i < batch.recs.size() || j < batch.wakes.size()) {
      uint32_t bin = ~0u;
      if (i < batch.recs.size()) bin = batch.recs[i].bin;
      if (j < batch.wakes.size()) bin = std::min(bin, batch.wakes[j]);
      as.clear();
      bs.clear();
      for (; i < batch.recs.size() && batch.recs[i].bin == bin; ++i) {
        const E& e = batch.recs[i].rec;
        if (e.which == 0)
          as.push_back(e.a());
        else
          bs.push_back(e.b());
      }
      if (j < batch.wakes.size() && batch.wakes[j] == bin) ++j;
      if (!s.owned[bin])
        throw std::logic_error("megaphone: bin " + std::to_string(bin) +
                               " folded on a worker without the bin");
      wake.reset(t, bin);
      fold(t, bin, as, bs, s.states[bin], wake, session);
      for (Time t2 : wake.items()) s.add_wake(t2, bin, cap);
      wake.items().clear();
    }
  }
};

}  // namespace detail
}  // namespace snailtrail::megaphone
